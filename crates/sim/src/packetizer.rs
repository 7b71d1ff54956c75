//! Packing encoded messages into packets that each decode on their own.

use std::sync::Arc;

use fastfeed_codec::{Encoder, Message, Templates};

use crate::SimError;

/// Bytes of the packet sequence number that starts every packet.
pub const PACKET_HEADER_LEN: usize = 4;
/// Bytes of a channel's packet header (see [`Packetizer::for_channel`]): the 4-byte packet
/// sequence number of the channel, then its 2-byte little-endian channel number.
pub const CHANNEL_HEADER_LEN: usize = 6;

/// Packs messages into packets of at most `max_packet` bytes: a 4-byte little-endian packet
/// sequence number (1, 2, ...), then whole FAST messages. The encoder is reset at each packet
/// start, since a receiver that lost the previous packet starts from empty dictionaries.
pub struct Packetizer {
    encoder: Encoder,
    max_packet: usize,
    cur: Vec<u8>,
    /// The last finished packet, lent out by `push` and `finish`.
    done: Vec<u8>,
    scratch: Vec<u8>,
    seq: u32,
    /// Written after the sequence number of every packet, when set.
    channel: Option<u16>,
    messages: usize,
    message_bytes: usize,
}

impl Packetizer {
    pub fn new(templates: Arc<Templates>, max_packet: usize) -> Self {
        Packetizer {
            encoder: Encoder::new(templates),
            max_packet,
            cur: Vec::with_capacity(max_packet),
            done: Vec::with_capacity(max_packet),
            scratch: Vec::with_capacity(max_packet),
            seq: 0,
            channel: None,
            messages: 0,
            message_bytes: 0,
        }
    }

    /// A packetizer for one channel of a multi-channel feed: each packet starts with the
    /// channel's own sequence number (1, 2, ...) and then `channel` as a 2-byte
    /// little-endian number ([`CHANNEL_HEADER_LEN`] bytes in all).
    pub fn for_channel(templates: Arc<Templates>, max_packet: usize, channel: u16) -> Self {
        Packetizer {
            channel: Some(channel),
            ..Packetizer::new(templates, max_packet)
        }
    }

    /// Bytes of the header that starts each packet.
    pub fn header_len(&self) -> usize {
        match self.channel {
            Some(_) => CHANNEL_HEADER_LEN,
            None => PACKET_HEADER_LEN,
        }
    }

    /// Adds a message. Returns the previous packet when this message had to start a new one.
    pub fn push(&mut self, msg: &Message) -> Result<Option<&[u8]>, SimError> {
        let index = self.messages;
        let mut flushed = false;
        if !self.cur.is_empty() {
            self.encode(msg, index)?;
            if self.cur.len() + self.scratch.len() <= self.max_packet {
                self.cur.extend_from_slice(&self.scratch);
                self.count();
                return Ok(None);
            }
            std::mem::swap(&mut self.done, &mut self.cur);
            self.cur.clear();
            flushed = true;
        }
        // Dictionary state changed what the message encodes to: encode it again after the reset.
        self.encoder.reset();
        self.encode(msg, index)?;
        if self.header_len() + self.scratch.len() > self.max_packet {
            return Err(SimError::MessageTooLarge {
                index,
                len: self.scratch.len(),
                max: self.max_packet,
            });
        }
        self.seq += 1;
        self.cur.extend_from_slice(&self.seq.to_le_bytes());
        if let Some(c) = self.channel {
            self.cur.extend_from_slice(&c.to_le_bytes());
        }
        self.cur.extend_from_slice(&self.scratch);
        self.count();
        Ok(flushed.then_some(&self.done[..]))
    }

    /// Closes the open packet, if any, and returns it.
    pub fn finish(&mut self) -> Option<&[u8]> {
        if self.cur.is_empty() {
            return None;
        }
        std::mem::swap(&mut self.done, &mut self.cur);
        self.cur.clear();
        Some(&self.done)
    }

    /// Messages accepted so far.
    pub fn messages(&self) -> usize {
        self.messages
    }

    /// Encoded message bytes so far, packet headers excluded.
    pub fn message_bytes(&self) -> usize {
        self.message_bytes
    }

    /// Packets started so far.
    pub fn packets(&self) -> u32 {
        self.seq
    }

    fn encode(&mut self, msg: &Message, index: usize) -> Result<(), SimError> {
        self.scratch.clear();
        self.encoder
            .encode(msg, &mut self.scratch)
            .map_err(|error| SimError::Encode { index, error })
    }

    fn count(&mut self) {
        self.messages += 1;
        self.message_bytes += self.scratch.len();
    }
}
