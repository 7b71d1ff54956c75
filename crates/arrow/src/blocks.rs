//! Cutting a `len32le` input into blocks of whole packets, each decodable on its own where
//! every packet resets the dictionaries.

use std::io::{self, Cursor, Read};

use fastfeed_codec::Decoder;
use fastfeed_packet::{Framing, PacketOptions, StreamDecoder};

/// A run of whole `len32le` packets and where it lies in the input.
pub(crate) struct Block {
    pub seq: usize,
    /// Input offset of its first byte, and the index of its first packet.
    pub base: usize,
    pub first_packet: usize,
    pub bytes: Vec<u8>,
}

impl Block {
    /// Its packets to decode, with a fresh decoder, errors located in the whole input.
    pub fn stream(
        &self,
        new_decoder: &(dyn Fn() -> Decoder + Sync),
        packet: PacketOptions,
        max_packet: usize,
    ) -> StreamDecoder<Cursor<&[u8]>> {
        StreamDecoder::new(
            Cursor::new(&self.bytes[..]),
            Framing::Len32Le,
            new_decoder(),
            packet,
        )
        .max_packet(max_packet)
        .starting_at(self.base, self.first_packet)
    }
}

/// Cuts a `len32le` input into blocks of about `block_bytes`, at packet boundaries. A
/// broken frame (a length over the limit, a cut packet at the end) closes the last block
/// right after it, where its decoder reports it as a whole-file decode would: nothing after
/// a broken frame can be located.
pub(crate) struct Blocks<R> {
    input: R,
    carry: Vec<u8>,
    /// Input bytes cut into blocks so far.
    pub base: usize,
    packets: usize,
    /// Blocks cut so far.
    pub seq: usize,
    max_packet: usize,
    block_bytes: usize,
    eof: bool,
    done: bool,
}

impl<R: Read> Blocks<R> {
    pub fn new(input: R, max_packet: usize, block_bytes: usize) -> Self {
        Blocks {
            block_bytes: block_bytes.max(1),
            input,
            carry: Vec::new(),
            base: 0,
            packets: 0,
            seq: 0,
            max_packet,
            eof: false,
            done: false,
        }
    }

    /// Reads until `buf` holds `want` bytes or the input ends.
    fn fill(&mut self, buf: &mut Vec<u8>, want: usize) -> io::Result<()> {
        while !self.eof && buf.len() < want {
            let need = (want - buf.len()) as u64;
            let got = (&mut self.input).take(need).read_to_end(buf)? as u64;
            self.eof = got < need;
        }
        Ok(())
    }

    pub fn next_block(&mut self) -> io::Result<Option<Block>> {
        if self.done {
            return Ok(None);
        }
        let mut buf = std::mem::take(&mut self.carry);
        self.fill(&mut buf, self.block_bytes)?;
        let (mut pos, mut packets) = (0, 0);
        let cut = loop {
            let Some(prefix) = buf.get(pos..pos + 4) else {
                // Under four bytes left: the next block's start, or a cut length at the end.
                if self.eof {
                    break buf.len();
                }
                if pos > 0 {
                    break pos;
                }
                self.fill(&mut buf, 4)?; // Blocks of under four bytes.
                continue;
            };
            let len = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize;
            if len > self.max_packet {
                self.done = true;
                break pos + 4;
            }
            let end = pos + 4 + len;
            if end > buf.len() {
                if self.eof {
                    break buf.len(); // A packet cut by the end of the input.
                }
                if pos > 0 {
                    break pos;
                }
                self.fill(&mut buf, end)?; // One packet longer than a block.
                continue;
            }
            pos = end;
            packets += 1;
        };
        self.carry = buf.split_off(cut);
        self.done |= self.eof && self.carry.is_empty();
        if buf.is_empty() {
            self.done = true;
            return Ok(None);
        }
        let block = Block {
            seq: self.seq,
            base: self.base,
            first_packet: self.packets,
            bytes: buf,
        };
        self.seq += 1;
        self.base += cut;
        self.packets += packets;
        Ok(Some(block))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Any bytes at all: the blocks lay the input end to end from its start, each within
    /// its size unless one packet is longer, each whole packets but the last, and the input
    /// is read to its end unless a length over the limit broke the frame.
    fn check(input: &[u8], max_packet: usize, block_bytes: usize) {
        let mut blocks = Blocks::new(input, max_packet, block_bytes);
        let (mut at, mut packets) = (0, 0);
        let mut seen = Vec::new();
        while let Some(b) = blocks.next_block().unwrap() {
            assert_eq!((b.seq, b.base, b.first_packet), (seen.len(), at, packets));
            assert_eq!(&input[at..at + b.bytes.len()], &b.bytes[..]);
            let whole: Vec<_> = Framing::Len32Le.packets(&b.bytes).collect();
            let complete = whole.iter().take_while(|p| p.is_ok()).count();
            let longest = whole.iter().flatten().map(|p| p.bytes.len() + 4).max();
            assert!(b.bytes.len() <= block_bytes.max(longest.unwrap_or(0)) + 4);
            at += b.bytes.len();
            packets += complete;
            seen.push(complete == whole.len());
        }
        // Only the last block may hold a broken frame.
        if let Some((_, before)) = seen.split_last() {
            assert!(before.iter().all(|&whole| whole), "{seen:?}");
        }
        // A length over the limit, reached by walking the lengths from the start.
        let mut pos = 0;
        let broken = loop {
            let Some(prefix) = input.get(pos..pos + 4) else {
                break false;
            };
            let len = u32::from_le_bytes(prefix.try_into().unwrap()) as usize;
            if len > max_packet {
                break true;
            }
            pos += 4 + len;
        };
        if !broken {
            assert_eq!(at, input.len());
        }
    }

    proptest! {
        #[test]
        fn blocks_cut_any_input_at_packet_boundaries(
            input in proptest::collection::vec(any::<u8>(), 0..600),
            max_packet in 1usize..300,
            block_bytes in 1usize..100,
        ) {
            check(&input, max_packet, block_bytes);
        }

        #[test]
        fn blocks_cut_well_formed_input_at_packet_boundaries(
            packets in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..50), 0..40),
            block_bytes in 1usize..200,
        ) {
            let mut input = Vec::new();
            fastfeed_packet::write_len32le(packets.iter().map(|p| p.as_slice()), &mut input).unwrap();
            check(&input, 1000, block_bytes);
            let mut blocks = Blocks::new(&input[..], 1000, block_bytes);
            let mut n = 0;
            while let Some(b) = blocks.next_block().unwrap() {
                n += Framing::Len32Le.packets(&b.bytes).filter(|p| p.is_ok()).count();
            }
            prop_assert_eq!(n, packets.len());
        }
    }
}
