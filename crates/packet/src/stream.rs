//! Decoding a file or any other `io::Read` in bounded memory: a `len32le` packet at a time,
//! or, for a `raw` stream, a window of messages at a time. What [`PacketDecoder`] does for a
//! buffer held whole, for inputs larger than memory.

use std::io::{self, Read};

use fastfeed_codec::{CodecError, Decoder, ErrorKind, Handler};

use crate::{Framing, FramingError, Packet, PacketDecoder, PacketError, PacketOptions};

/// Longest `len32le` packet accepted by default: far above any datagram, and a bound on
/// what a corrupt length prefix can make the reader allocate.
pub const DEFAULT_MAX_PACKET: usize = 16 << 20;

/// Bytes of a `raw` stream kept ahead of the decoder: a message longer than this cannot be
/// decoded from a stream (FAST messages carry no length, so its end is known only by
/// decoding it).
pub const RAW_WINDOW: usize = 4 << 20;

/// Bytes of a `len32le` stream read at a time: packets are decoded where they lie in this
/// buffer, not read one by one (two reads and a copy per packet cost a few percent of
/// decoding small packets). A longer packet gets a buffer of its own size.
const LEN32_CHUNK: usize = 1 << 20;

/// What went wrong reading or decoding a stream.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error("reading the input: {0}")]
    Io(#[from] io::Error),
    #[error(transparent)]
    Framing(#[from] FramingError),
    #[error("packet {index} at byte {offset}: length {len} is over the limit of {max} bytes")]
    PacketTooLong {
        index: usize,
        offset: usize,
        len: usize,
        max: usize,
    },
    #[error(transparent)]
    Decode(#[from] PacketError),
}

impl StreamError {
    /// Whether decoding of a `len32le` stream goes on after this error: a bad packet is
    /// skipped, but a broken frame or a read error leave the rest unlocated. In a `raw`
    /// stream every error is the last.
    pub fn is_recoverable(&self) -> bool {
        matches!(self, StreamError::Decode(_))
    }
}

/// Decodes the messages of a framed stream read from `R`, one step at a time, with the
/// errors located in the input. Memory is 1 MiB or one packet if longer (`len32le`), or
/// twice the raw window (`raw`, [`RAW_WINDOW`] by default), whatever the input's size.
pub struct StreamDecoder<R> {
    input: R,
    framing: Framing,
    pd: PacketDecoder,
    max_packet: usize,
    window: usize,
    buf: Vec<u8>,
    /// The undecoded bytes are `buf[pos..end]`; `base` is the input offset of `buf[0]`.
    pos: usize,
    end: usize,
    base: usize,
    eof: bool,
    started: bool,
    finished: bool,
    packets: usize,
}

impl<R: Read> StreamDecoder<R> {
    pub fn new(input: R, framing: Framing, decoder: Decoder, opts: PacketOptions) -> Self {
        StreamDecoder {
            input,
            framing,
            pd: PacketDecoder::new(decoder, opts),
            max_packet: DEFAULT_MAX_PACKET,
            window: RAW_WINDOW,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            started: false,
            finished: false,
            packets: 0,
        }
    }

    /// Sets the longest `len32le` packet accepted.
    pub fn max_packet(mut self, bytes: usize) -> Self {
        self.max_packet = bytes;
        self
    }

    /// Sets the bytes of a `raw` stream kept ahead of the decoder (the longest message).
    pub fn raw_window(mut self, bytes: usize) -> Self {
        self.window = bytes.max(1);
        self
    }

    /// Counts positions and packets from `offset` and `packets` on, for a piece of a larger
    /// input decoded on its own: its errors and positions then say where they lie in the
    /// whole input.
    pub fn starting_at(mut self, offset: usize, packets: usize) -> Self {
        self.base = offset;
        self.packets = packets;
        self
    }

    /// Packets read so far (a `raw` stream counts as one).
    pub fn packets(&self) -> usize {
        self.packets
    }

    /// Input bytes consumed so far.
    pub fn position(&self) -> usize {
        self.base + self.pos
    }

    pub fn decoder(&mut self) -> &mut Decoder {
        &mut self.pd.decoder
    }

    /// Decodes the next packet (`len32le`) or window of messages (`raw`), calling `handler`
    /// for each field and `on_message` after each message; a `raw` step ends early when
    /// `on_message` returns false (a `len32le` packet is always decoded whole). Returns how
    /// many messages it decoded, `None` at the end of the input, or the error that stopped the step; the
    /// messages before the error were delivered. After an error that is not
    /// [recoverable](StreamError::is_recoverable) the stream ends.
    pub fn next_step<H: Handler>(
        &mut self,
        handler: &mut H,
        on_message: impl FnMut(&mut H) -> bool,
    ) -> Option<Result<usize, StreamError>> {
        if self.finished {
            return None;
        }
        let r = match self.framing {
            Framing::Len32Le => self.next_packet(handler, on_message),
            Framing::Raw => self.next_window(handler, on_message),
        };
        match r {
            Ok(None) => {
                self.finished = true;
                None
            }
            Ok(Some(n)) => Some(Ok(n)),
            Err(e) => {
                // A raw stream has no packet boundary to start again from.
                self.finished |= self.framing == Framing::Raw || !e.is_recoverable();
                Some(Err(e))
            }
        }
    }

    fn next_packet<H: Handler>(
        &mut self,
        handler: &mut H,
        mut on_message: impl FnMut(&mut H) -> bool,
    ) -> Result<Option<usize>, StreamError> {
        let index = self.packets;
        self.hold(4)?;
        let offset = self.position();
        let held = self.end - self.pos;
        match held {
            0 => return Ok(None),
            1..=3 => return Err(FramingError::TruncatedLength { index, offset }.into()),
            _ => {}
        }
        let prefix = &self.buf[self.pos..self.pos + 4];
        let len = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize;
        if len > self.max_packet {
            return Err(StreamError::PacketTooLong {
                index,
                offset,
                len,
                max: self.max_packet,
            });
        }
        self.hold(4 + len)?;
        let available = self.end - self.pos - 4;
        if available < len {
            // The stream ends here: nothing after a cut packet.
            self.pos = self.end;
            return Err(FramingError::TruncatedPacket {
                index,
                offset,
                len,
                available,
            }
            .into());
        }
        let start = self.pos + 4;
        self.pos = start + len;
        self.packets += 1;
        let packet = Packet {
            index,
            offset: offset + 4,
            bytes: &self.buf[start..start + len],
        };
        let n = self.pd.decode_packet(&packet, handler, |h, _| {
            on_message(h);
        })?;
        Ok(Some(n))
    }

    /// Reads until `buf[pos..end]` holds `need` bytes or the input ends, a chunk at a time:
    /// each read takes what the input has (a pipe is not waited on for a whole chunk).
    fn hold(&mut self, need: usize) -> io::Result<()> {
        if self.end - self.pos >= need || self.eof {
            return Ok(());
        }
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos;
        self.end -= self.pos;
        self.pos = 0;
        let size = need.max(LEN32_CHUNK);
        if self.buf.len() < size {
            self.buf.resize(size, 0);
        }
        while self.end < need {
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// A raw stream is one packet: the header is skipped and the dictionaries reset once, at
    /// its start. Each step decodes the messages that start in the first half of the window.
    fn next_window<H: Handler>(
        &mut self,
        handler: &mut H,
        mut on_message: impl FnMut(&mut H) -> bool,
    ) -> Result<Option<usize>, StreamError> {
        self.fill()?;
        if !self.started {
            self.started = true;
            self.packets = 1;
            if self.pd.opts.reset_each_packet {
                self.pd.decoder.reset();
            }
            let header = self.pd.opts.skip_header;
            if self.end < header {
                return Err(self.located(CodecError::new(ErrorKind::Truncated, self.end), 0));
            }
            self.pos = header;
        }
        if self.pos == self.end {
            return Ok(None);
        }
        let mut count = 0;
        while self.pos < self.end && (self.eof || self.end - self.pos >= self.window) {
            match self
                .pd
                .decoder
                .decode(&self.buf[self.pos..self.end], handler)
            {
                Ok(n) => {
                    self.pos += n;
                    count += 1;
                    if !on_message(handler) {
                        break;
                    }
                }
                Err(mut e) => {
                    if !self.eof && e.kind == ErrorKind::Truncated {
                        e.kind = ErrorKind::MessageTooLong(self.window);
                    }
                    return Err(self.located(e, self.pos));
                }
            }
        }
        Ok(Some(count))
    }

    /// A raw stream's error in the message that starts at `buf[at]`.
    fn located(&self, error: CodecError, at: usize) -> StreamError {
        StreamError::Decode(PacketError {
            packet: 0,
            file_offset: self.base + at + error.offset,
            error,
        })
    }

    /// Moves the undecoded bytes to the front and reads until the buffer holds twice the
    /// window or the input ends.
    fn fill(&mut self) -> io::Result<()> {
        if self.eof || self.end - self.pos >= self.window {
            return Ok(());
        }
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos;
        self.end -= self.pos;
        self.pos = 0;
        // Grown as the bytes arrive, not zero-filled to twice the window up front: that cost
        // a small file megabytes of page faults and memset per stream.
        self.buf.truncate(self.end);
        let want = (2 * self.window - self.end) as u64;
        let got = (&mut self.input).take(want).read_to_end(&mut self.buf)?;
        self.eof = (got as u64) < want;
        self.end = self.buf.len();
        Ok(())
    }
}
