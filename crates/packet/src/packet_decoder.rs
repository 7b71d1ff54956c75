//! Decoding every message of a packet, with the packet's place in errors.

use fastfeed_codec::{CodecError, Decoder, ErrorKind, Handler};

use crate::Packet;

/// How packets are laid out beyond their framing.
#[derive(Debug, Clone, Copy, Default)]
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

/// Decodes the messages of packets, one packet at a time.
pub struct PacketDecoder {
    pub decoder: Decoder,
    pub opts: PacketOptions,
}

impl PacketDecoder {
    pub fn new(decoder: Decoder, opts: PacketOptions) -> Self {
        PacketDecoder { decoder, opts }
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
        let locate = |error: CodecError, base: usize| PacketError {
            packet: packet.index,
            file_offset: packet.offset + base + error.offset,
            error,
        };
        if self.opts.reset_each_packet {
            self.decoder.reset();
        }
        let bytes = packet.bytes;
        if bytes.len() < self.opts.skip_header {
            return Err(locate(
                CodecError::new(ErrorKind::Truncated, bytes.len()),
                0,
            ));
        }
        let mut pos = self.opts.skip_header;
        let mut count = 0;
        while pos < bytes.len() {
            let n = self
                .decoder
                .decode(&bytes[pos..], handler)
                .map_err(|e| locate(e, pos))?;
            on_message(handler, pos);
            pos += n;
            count += 1;
        }
        Ok(count)
    }
}
