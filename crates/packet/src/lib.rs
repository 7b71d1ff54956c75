//! From wire bytes to packets to messages: how FAST messages are framed in files and
//! datagrams, and the decode loop over one packet.
//!
//! Framings: `raw` is one continuous stream of messages (a capture of UDP payloads laid end
//! to end); `len32le` is records of a 4-byte little-endian length and a payload, each payload
//! one packet; `block` is the spec's blocks (§10), each a stop-bit size and its messages, each
//! block one packet. A packet may start with a header of N bytes (a packet sequence number, say)
//! before its messages.

mod framing;
mod guess;
mod held;
mod packet_decoder;
mod reader;
mod resync;
mod split;
mod stream;

pub use framing::{
    block_packets, block_size_prefix, len32le_packets, write_blocks, write_len32le, Framing,
    FramingError, Packet, BLOCK_SIZE_BYTES,
};
pub use guess::{guess_header, HeaderGuess, MAX_HEADER};
pub use packet_decoder::{PacketDecoder, PacketError, PacketOptions, PacketSummary, Recovery};
pub use reader::PacketReader;
pub use resync::SyncMarkers;
pub use split::split_at_resets;
pub use stream::{StreamDecoder, StreamError, DEFAULT_MAX_PACKET, RAW_WINDOW};
