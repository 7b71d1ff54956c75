//! Decoding a file or any other `io::Read` in bounded memory: a `len32le` packet at a time,
//! or, for a `raw` stream, a window of messages at a time. What [`PacketDecoder`] does for a
//! buffer held whole, for inputs larger than memory.

use std::io::{self, Read};

use fastfeed_codec::{CodecError, Decoder, ErrorKind, Handler};

use crate::reader::PacketReader;
use crate::{Framing, FramingError, PacketDecoder, PacketError, PacketOptions};

/// Longest `len32le` packet accepted by default: far above any datagram, and a bound on
/// what a corrupt length prefix can make the reader allocate.
pub const DEFAULT_MAX_PACKET: usize = 16 << 20;

/// Bytes of a `raw` stream kept ahead of the decoder: a message longer than this cannot be
/// decoded from a stream (FAST messages carry no length, so its end is known only by
/// decoding it).
pub const RAW_WINDOW: usize = 4 << 20;

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
    /// Whether decoding of a `len32le` or block stream goes on after this error: a bad
    /// packet or a block of size zero is skipped, but a broken frame or a read error leave
    /// the rest unlocated. In a `raw` stream every error is the last.
    pub fn is_recoverable(&self) -> bool {
        matches!(
            self,
            StreamError::Decode(_) | StreamError::Framing(FramingError::ZeroBlock { .. })
        )
    }
}

/// Decodes the messages of a framed stream read from `R`, one step at a time, with the
/// errors located in the input. Memory is 1 MiB or one packet if longer (`len32le`), or
/// twice the raw window (`raw`, [`RAW_WINDOW`] by default), whatever the input's size.
pub struct StreamDecoder<R> {
    /// The packets of a `len32le` stream; a `raw` stream's window is its held bytes.
    r: PacketReader<R>,
    framing: Framing,
    pd: PacketDecoder,
    window: usize,
    started: bool,
    finished: bool,
    packets: usize,
}

impl<R: Read> StreamDecoder<R> {
    pub fn new(input: R, framing: Framing, decoder: Decoder, opts: PacketOptions) -> Self {
        let r = match framing {
            Framing::Block => PacketReader::block(input),
            // A raw stream's window is the reader's held bytes.
            Framing::Len32Le | Framing::Raw => PacketReader::len32le(input),
        };
        StreamDecoder {
            r,
            framing,
            pd: PacketDecoder::new(decoder, opts),
            window: RAW_WINDOW,
            started: false,
            finished: false,
            packets: 0,
        }
    }

    /// Sets the longest `len32le` packet accepted.
    pub fn max_packet(mut self, bytes: usize) -> Self {
        self.r = self.r.max_packet(bytes);
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
        self.r = self.r.starting_at(offset, packets);
        self.packets = packets;
        self
    }

    /// Packets read so far (a `raw` stream counts as one).
    pub fn packets(&self) -> usize {
        self.packets
    }

    /// Input bytes consumed so far.
    pub fn position(&self) -> usize {
        self.r.position()
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
            Framing::Len32Le | Framing::Block => self.next_packet(handler, on_message),
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
        let Some(packet) = self.r.next_packet()? else {
            return Ok(None);
        };
        self.packets += 1;
        let n = self.pd.decode_packet(&packet, handler, |h, _| {
            on_message(h);
        })?;
        Ok(Some(n))
    }

    /// A raw stream is one packet: the header is skipped and the dictionaries reset once, at
    /// its start. Each step decodes the messages that start in the first half of the window.
    fn next_window<H: Handler>(
        &mut self,
        handler: &mut H,
        mut on_message: impl FnMut(&mut H) -> bool,
    ) -> Result<Option<usize>, StreamError> {
        self.r.w.fill(self.window)?;
        if !self.started {
            self.started = true;
            self.packets = 1;
            if self.pd.opts.reset_each_packet {
                self.pd.decoder.reset();
            }
            let header = self.pd.opts.skip_header;
            if self.r.w.end < header {
                let end = self.r.w.end;
                return Err(self.located(CodecError::new(ErrorKind::Truncated, end), 0));
            }
            self.r.w.pos = header;
        }
        if self.r.w.held() == 0 {
            return Ok(None);
        }
        let mut count = 0;
        while self.r.w.held() > 0 && (self.r.w.eof || self.r.w.held() >= self.window) {
            let w = &mut self.r.w;
            match self.pd.decoder.decode(&w.buf[w.pos..w.end], handler) {
                Ok(n) => {
                    w.pos += n;
                    count += 1;
                    if !on_message(handler) {
                        break;
                    }
                }
                Err(mut e) => {
                    if !w.eof && e.kind == ErrorKind::Truncated {
                        e.kind = ErrorKind::MessageTooLong(self.window);
                    }
                    let at = w.pos;
                    return Err(self.located(e, at));
                }
            }
        }
        Ok(Some(count))
    }

    /// A raw stream's error in the message that starts at `buf[at]`.
    fn located(&self, error: CodecError, at: usize) -> StreamError {
        StreamError::Decode(PacketError {
            packet: 0,
            file_offset: self.r.w.base + at + error.offset,
            error,
        })
    }
}
