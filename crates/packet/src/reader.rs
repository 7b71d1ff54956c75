//! Packets read from a file or any other `io::Read` in bounded memory, one at a time: a
//! `len32le` record, a block (the spec's block framing), or the messages of a `raw` stream from one resetting message to the
//! next ([`split_at_resets`](crate::split_at_resets) as it reads).

use std::io::Read;

use fastfeed_codec::{Decoder, ErrorKind};

use crate::framing::{block_size, BlockSize, BLOCK_SIZE_BYTES};
use crate::held::Held;
use crate::split::ResetSeen;
use crate::{FramingError, Packet, PacketError, StreamError, DEFAULT_MAX_PACKET, RAW_WINDOW};

/// Bytes of a `len32le` stream read at a time: packets are handed out where they lie in
/// this buffer, not read one by one (two reads and a copy per packet cost a few percent of
/// decoding small packets). A longer packet gets a buffer of its own size.
const LEN32_CHUNK: usize = 1 << 20;

/// The packets of a framed input, read as they are asked for. Memory is 1 MiB or one packet
/// if longer (`len32le`), or a packet and the raw window after it (`raw`), whatever the
/// input's size; a packet longer than [`PacketReader::max_packet`] is an error.
pub struct PacketReader<R> {
    pub(crate) w: Held<R>,
    cut: Cut,
    max_packet: usize,
    window: usize,
    index: usize,
    finished: bool,
}

enum Cut {
    Len32Le,
    Block,
    /// `decoder` walks the messages to find where each starts; `scan` bytes of the current
    /// packet (from `w.pos`) are walked.
    Raw {
        decoder: Box<Decoder>,
        scan: usize,
    },
}

impl<R: Read> PacketReader<R> {
    /// `len32le` records: a 4-byte little-endian length, then the packet.
    pub fn len32le(input: R) -> Self {
        Self::with(input, Cut::Len32Le)
    }

    /// The spec's blocks: a stop-bit block size, then the block (see [`crate::Framing::Block`]).
    pub fn block(input: R) -> Self {
        Self::with(input, Cut::Block)
    }

    /// A `raw` stream cut into packets at each message of a template with `reset`, as
    /// [`split_at_resets`](crate::split_at_resets) cuts one held whole; `decoder` (its
    /// dictionaries reset here) knows the templates.
    pub fn raw(input: R, mut decoder: Decoder) -> Self {
        decoder.reset();
        Self::with(
            input,
            Cut::Raw {
                decoder: Box::new(decoder),
                scan: 0,
            },
        )
    }

    fn with(input: R, cut: Cut) -> Self {
        PacketReader {
            w: Held::new(input),
            cut,
            max_packet: DEFAULT_MAX_PACKET,
            window: RAW_WINDOW,
            index: 0,
            finished: false,
        }
    }

    /// Sets the longest packet accepted ([`DEFAULT_MAX_PACKET`] unless set): a bound on what
    /// a corrupt length prefix, or a raw stream without resetting messages, makes the reader
    /// hold.
    pub fn max_packet(mut self, bytes: usize) -> Self {
        self.max_packet = bytes;
        self
    }

    /// Sets the bytes of a `raw` stream read ahead of the message being walked (the longest
    /// message).
    pub fn raw_window(mut self, bytes: usize) -> Self {
        self.window = bytes.max(1);
        self
    }

    /// Counts positions and packets from `offset` and `packets` on, for a piece of a larger
    /// input read on its own: its errors and packets then say where they lie in the whole.
    pub fn starting_at(mut self, offset: usize, packets: usize) -> Self {
        self.w.base = offset;
        self.index = packets;
        self
    }

    /// Packets handed out so far.
    pub fn packets(&self) -> usize {
        self.index
    }

    /// Input bytes handed out in packets (and their length prefixes) so far.
    pub fn position(&self) -> usize {
        self.w.position()
    }

    /// The next packet, `None` at the end of the input. After an error the reader ends (the
    /// next packet's start is not known), except after a block of size zero.
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, StreamError> {
        if self.finished {
            return Ok(None);
        }
        let step = match self.cut {
            Cut::Len32Le => self.len32le_step(),
            Cut::Block => self.block_step(),
            Cut::Raw { .. } => self.raw_step(),
        };
        match step {
            Ok(Some((offset, start, len))) => {
                self.index += 1;
                Ok(Some(Packet {
                    index: self.index - 1,
                    offset,
                    bytes: &self.w.buf[start..start + len],
                }))
            }
            Ok(None) => {
                self.finished = true;
                Ok(None)
            }
            Err(e) => {
                // A block of size zero ends where its prefix does: the next one follows.
                self.finished = !matches!(e, StreamError::Framing(FramingError::ZeroBlock { .. }));
                Err(e)
            }
        }
    }

    /// The next record's (input offset, buffer start, length), consumed.
    fn len32le_step(&mut self) -> Result<Option<(usize, usize, usize)>, StreamError> {
        let (index, w) = (self.index, &mut self.w);
        w.hold(4, LEN32_CHUNK)?;
        let offset = w.position();
        match w.held() {
            0 => return Ok(None),
            1..=3 => return Err(FramingError::TruncatedLength { index, offset }.into()),
            _ => {}
        }
        let prefix = &w.buf[w.pos..w.pos + 4];
        let len = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize;
        self.take_record(offset, 4, len)
    }

    /// The next block's (input offset, buffer start, length), consumed. The size prefix is
    /// read a byte more at a time as needed, so a live pipe's last small block is not held
    /// back waiting for bytes that have not come.
    fn block_step(&mut self) -> Result<Option<(usize, usize, usize)>, StreamError> {
        let index = self.index;
        loop {
            let w = &mut self.w;
            let offset = w.position();
            let need = w.held() + 1;
            match block_size(&w.buf[w.pos..w.end]) {
                BlockSize::Size { len: 0, prefix } => {
                    w.pos += prefix;
                    self.index += 1;
                    return Err(FramingError::ZeroBlock {
                        index,
                        offset,
                        prefix,
                    }
                    .into());
                }
                BlockSize::Size { len, prefix } => return self.take_record(offset, prefix, len),
                BlockSize::Bad => return Err(FramingError::BadBlockSize { index, offset }.into()),
                BlockSize::Short if w.eof => {
                    return match w.held() {
                        0 => Ok(None),
                        _ => Err(FramingError::TruncatedLength { index, offset }.into()),
                    };
                }
                BlockSize::Short => w.hold(need.min(BLOCK_SIZE_BYTES), LEN32_CHUNK)?,
            }
        }
    }

    /// A record of `len` bytes after a `prefix`-byte length at `offset` (the held position):
    /// held and consumed, or the error that stops the reader.
    fn take_record(
        &mut self,
        offset: usize,
        prefix: usize,
        len: usize,
    ) -> Result<Option<(usize, usize, usize)>, StreamError> {
        let (index, w) = (self.index, &mut self.w);
        if len > self.max_packet {
            return Err(StreamError::PacketTooLong {
                index,
                offset,
                len,
                max: self.max_packet,
            });
        }
        w.hold(prefix + len, LEN32_CHUNK)?;
        let available = w.held() - prefix;
        if available < len {
            // The input ends here: nothing after a cut packet, all of it read.
            w.pos = w.end;
            return Err(FramingError::TruncatedPacket {
                index,
                offset,
                len,
                available,
            }
            .into());
        }
        let start = w.pos + prefix;
        w.pos = start + len;
        Ok(Some((offset + prefix, start, len)))
    }

    /// Walks messages from the end of the current packet's walked part until one that resets
    /// (the next packet's first) or the end of the input; the packet before it is consumed.
    fn raw_step(&mut self) -> Result<Option<(usize, usize, usize)>, StreamError> {
        let (index, window, w) = (self.index, self.window, &mut self.w);
        let Cut::Raw { decoder, scan } = &mut self.cut else {
            unreachable!("a raw step of a raw reader")
        };
        loop {
            // Refilled to twice the read-ahead once under it, not topped up per message:
            // that moved the whole buffer for each message.
            w.fill(*scan + window)?;
            if *scan == w.held() {
                // The input ends: the packet so far is the last.
                if *scan == 0 {
                    return Ok(None);
                }
                return Ok(Some(take(w, scan, 0)));
            }
            if *scan > self.max_packet {
                return Err(StreamError::PacketTooLong {
                    index,
                    offset: w.position(),
                    len: *scan,
                    max: self.max_packet,
                });
            }
            let at = w.pos + *scan;
            let mut seen = ResetSeen(false);
            match decoder.decode(&w.buf[at..w.end], &mut seen) {
                Ok(n) if seen.0 && *scan > 0 => return Ok(Some(take(w, scan, n))),
                Ok(n) => *scan += n,
                Err(mut error) => {
                    if !w.eof && error.kind == ErrorKind::Truncated {
                        error.kind = ErrorKind::MessageTooLong(window);
                    }
                    return Err(StreamError::Decode(PacketError {
                        packet: index,
                        file_offset: w.base + at + error.offset,
                        error,
                    }));
                }
            }
        }
    }
}

/// Consumes the `scan` bytes walked as a packet; the next packet starts with the `next`
/// bytes walked after them (its first message).
fn take<R>(w: &mut Held<R>, scan: &mut usize, next: usize) -> (usize, usize, usize) {
    let (start, len) = (w.pos, *scan);
    w.pos += len;
    *scan = next;
    (w.base + start, start, len)
}
