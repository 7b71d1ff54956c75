//! Decoding every message of a packet, with the packet's place in errors.

use fastfeed_codec::{CodecError, Decoder, ErrorKind, Handler};

use crate::{Packet, SyncMarkers};

/// How packets are laid out beyond their framing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacketOptions {
    /// Bytes of header at the start of each packet (a packet sequence number, say).
    pub skip_header: usize,
    /// Reset the dictionaries at each packet start: the encoder did, so a lost packet does
    /// not spoil the ones after it.
    pub reset_each_packet: bool,
}

/// A decoding error located in the input: which packet, and which byte of the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("packet {packet} (file byte {file_offset}): {error}")]
pub struct PacketError {
    pub packet: usize,
    /// Offset in the whole input of the byte where decoding failed.
    pub file_offset: usize,
    pub error: CodecError,
}

/// An error met by [`PacketDecoder::decode_resync`] and how decoding got past it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    pub error: PacketError,
    /// File offset where decoding resumed (a sync marker), or `None`: the rest of the
    /// packet was lost.
    pub resumed_at: Option<usize>,
    /// Bytes given up: from the start of the failing message to where decoding resumed (or
    /// to the end of the packet).
    pub skipped: usize,
}

/// What [`PacketDecoder::decode_resync`] made of one packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacketSummary {
    pub messages: usize,
    pub errors: usize,
    /// Errors after which decoding resumed at a sync marker.
    pub resyncs: usize,
    /// Bytes given up after errors.
    pub skipped: usize,
}

impl std::ops::AddAssign for PacketSummary {
    fn add_assign(&mut self, o: Self) {
        self.messages += o.messages;
        self.errors += o.errors;
        self.resyncs += o.resyncs;
        self.skipped += o.skipped;
    }
}

/// Decodes the messages of packets, one packet at a time.
pub struct PacketDecoder {
    pub decoder: Decoder,
    pub opts: PacketOptions,
    /// Where [`decode_resync`](Self::decode_resync) may resume after an error.
    pub markers: SyncMarkers,
}

impl PacketDecoder {
    /// A packet decoder whose sync markers come from the decoder's templates.
    pub fn new(decoder: Decoder, opts: PacketOptions) -> Self {
        let markers = SyncMarkers::from_templates(decoder.templates());
        PacketDecoder {
            decoder,
            opts,
            markers,
        }
    }

    /// Resets the dictionaries if the packets are independent; the offset of the first
    /// message, past the header.
    fn start(&mut self, packet: &Packet) -> Result<usize, PacketError> {
        if self.opts.reset_each_packet {
            self.decoder.reset();
        }
        let len = packet.bytes.len();
        if len < self.opts.skip_header {
            return Err(locate(
                packet,
                CodecError::new(ErrorKind::Truncated, len),
                0,
            ));
        }
        Ok(self.opts.skip_header)
    }

    /// Decodes every message in `packet`, calling `on_message` after each with the handler
    /// and the message's offset within the packet. Stops at the first error: the rest of the
    /// packet cannot be located. Returns the number of messages decoded.
    pub fn decode_packet<H: Handler>(
        &mut self,
        packet: &Packet,
        handler: &mut H,
        mut on_message: impl FnMut(&mut H, usize),
    ) -> Result<usize, PacketError> {
        let bytes = packet.bytes;
        let mut pos = self.start(packet)?;
        let mut count = 0;
        while pos < bytes.len() {
            let n = self
                .decoder
                .decode(&bytes[pos..], handler)
                .map_err(|e| locate(packet, e, pos))?;
            on_message(handler, pos);
            pos += n;
            count += 1;
        }
        Ok(count)
    }

    /// Decodes every message in `packet`, going on after an error where the packet allows:
    /// at the next sync marker from which decoding is clean (see [`SyncMarkers`]), else the
    /// rest of the packet is given up. `on_message` gets the handler, the message's offset
    /// in the packet and its length; `on_error` each error and what was skipped.
    pub fn decode_resync<H: Handler>(
        &mut self,
        packet: &Packet,
        handler: &mut H,
        mut on_message: impl FnMut(&mut H, usize, usize),
        mut on_error: impl FnMut(&Recovery),
    ) -> PacketSummary {
        let mut sum = PacketSummary::default();
        let bytes = packet.bytes;
        let mut pos = match self.start(packet) {
            Ok(pos) => pos,
            Err(error) => {
                sum.errors += 1;
                sum.skipped += bytes.len();
                on_error(&Recovery {
                    error,
                    resumed_at: None,
                    skipped: bytes.len(),
                });
                return sum;
            }
        };
        while pos < bytes.len() {
            match self.decoder.decode(&bytes[pos..], handler) {
                Ok(n) => {
                    on_message(handler, pos, n);
                    pos += n;
                    sum.messages += 1;
                }
                Err(e) => {
                    let error = locate(packet, e, pos);
                    // The failing message may have run over the marker that follows it.
                    let resume = self.markers.resume_point(&mut self.decoder, bytes, pos + 1);
                    let next = resume.unwrap_or(bytes.len());
                    sum.errors += 1;
                    sum.skipped += next - pos;
                    sum.resyncs += resume.is_some() as usize;
                    on_error(&Recovery {
                        error,
                        resumed_at: resume.map(|r| packet.offset + r),
                        skipped: next - pos,
                    });
                    self.decoder.reset();
                    pos = next;
                }
            }
        }
        sum
    }
}

/// `error`, found decoding from `base` in `packet`, placed in the file.
fn locate(packet: &Packet, error: CodecError, base: usize) -> PacketError {
    PacketError {
        packet: packet.index,
        file_offset: packet.offset + base + error.offset,
        error,
    }
}
