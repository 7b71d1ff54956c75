//! Splitting a byte buffer into packets.

use std::io::{self, Write};
use std::str::FromStr;

/// How packets are laid out in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One stream of messages, no packet boundaries.
    Raw,
    /// A 4-byte little-endian length before each packet.
    Len32Le,
    /// The spec's blocks (§10: `stream ::= message* | block*`): each block's size in bytes
    /// as a stop-bit unsigned integer (which may be overlong), then its messages. A block is
    /// a packet here: its messages decode as one (dictionaries reset at its start with
    /// `--reset-each-packet`). A block of size zero is an error (ERR D12).
    Block,
}

/// The longest block size prefix read: a 64-bit size takes ten bytes, and an overlong one
/// (which the spec allows) a few leading zero groups more.
pub const BLOCK_SIZE_BYTES: usize = 16;

/// A block size prefix at the start of some bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockSize {
    /// The block's size and the bytes its prefix took.
    Size { len: usize, prefix: usize },
    /// No stop bit in the bytes given (fewer than [`BLOCK_SIZE_BYTES`]): the input ends
    /// inside the prefix, or more must be read.
    Short,
    /// No stop bit within [`BLOCK_SIZE_BYTES`], or a size past 64 bits.
    Bad,
}

/// Reads a block size prefix (a stop-bit unsigned integer, overlong allowed) from `b`.
pub(crate) fn block_size(b: &[u8]) -> BlockSize {
    let mut v: u64 = 0;
    for (i, &byte) in b.iter().take(BLOCK_SIZE_BYTES).enumerate() {
        if v >> 57 != 0 {
            return BlockSize::Bad;
        }
        v = v << 7 | u64::from(byte & 0x7f);
        if byte & 0x80 != 0 {
            return match usize::try_from(v) {
                Ok(len) => BlockSize::Size { len, prefix: i + 1 },
                Err(_) => BlockSize::Bad,
            };
        }
    }
    if b.len() >= BLOCK_SIZE_BYTES {
        BlockSize::Bad
    } else {
        BlockSize::Short
    }
}

impl FromStr for Framing {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "raw" => Ok(Framing::Raw),
            "len32le" => Ok(Framing::Len32Le),
            "block" => Ok(Framing::Block),
            _ => Err(format!("unknown framing {s:?} (raw, len32le or block)")),
        }
    }
}

/// One packet: its number (0-based), the input offset of its first byte, and its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    pub index: usize,
    pub offset: usize,
    pub bytes: &'a [u8],
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FramingError {
    #[error("packet {index} at byte {offset}: length prefix cut off")]
    TruncatedLength { index: usize, offset: usize },
    /// A block's size is zero (spec ERR D12): it holds nothing, and the next block starts
    /// after its `prefix` bytes.
    #[error("packet {index} at byte {offset}: a block of size zero [ERR D12]")]
    ZeroBlock {
        index: usize,
        offset: usize,
        prefix: usize,
    },
    /// A block size prefix without a stop bit in its first bytes, or too large for 64 bits.
    #[error("packet {index} at byte {offset}: the block size is not a stop-bit integer of at most {BLOCK_SIZE_BYTES} bytes within 64 bits")]
    BadBlockSize { index: usize, offset: usize },
    #[error("packet {index} at byte {offset}: length {len} runs past the end of the input ({available} bytes left)")]
    TruncatedPacket {
        index: usize,
        offset: usize,
        len: usize,
        available: usize,
    },
    /// A length prefix that runs past the end, with a later place from which the lengths
    /// chain exactly to the end of the input: the packets resume there.
    #[error("packet {index} at byte {offset}: length {len} runs past the end of the input; skipped {skipped} bytes to byte {resumed_at}, from where the length prefixes lead exactly to the end")]
    Resynchronised {
        index: usize,
        offset: usize,
        len: usize,
        resumed_at: usize,
        skipped: usize,
    },
}

impl FramingError {
    /// Bytes of input this error made unreadable.
    pub fn skipped(&self, input_len: usize) -> usize {
        match *self {
            FramingError::Resynchronised { skipped, .. } => skipped,
            FramingError::ZeroBlock { prefix, .. } => prefix,
            FramingError::TruncatedLength { offset, .. }
            | FramingError::BadBlockSize { offset, .. }
            | FramingError::TruncatedPacket { offset, .. } => input_len - offset,
        }
    }

    /// Where in the input the broken frame starts.
    pub fn offset(&self) -> usize {
        match *self {
            FramingError::TruncatedLength { offset, .. }
            | FramingError::ZeroBlock { offset, .. }
            | FramingError::BadBlockSize { offset, .. }
            | FramingError::TruncatedPacket { offset, .. }
            | FramingError::Resynchronised { offset, .. } => offset,
        }
    }

    /// The spec's error code, where it names one: D12 for a block of size zero.
    pub fn spec_code(&self) -> Option<fastfeed_codec::SpecCode> {
        matches!(self, FramingError::ZeroBlock { .. }).then_some(fastfeed_codec::SpecCode::D12)
    }
}

impl Framing {
    /// The packets of `data`. A framing error ends the iteration after it is reported: the
    /// rest of the file cannot be located.
    pub fn packets(
        self,
        data: &[u8],
    ) -> Box<dyn Iterator<Item = Result<Packet<'_>, FramingError>> + '_> {
        match self {
            Framing::Raw => Box::new(std::iter::once(Ok(Packet {
                index: 0,
                offset: 0,
                bytes: data,
            }))),
            Framing::Len32Le => Box::new(len32le_packets(data)),
            Framing::Block => Box::new(block_packets(data)),
        }
    }

    /// Whether the input is cut into packets by a length before each (`len32le`, `block`),
    /// rather than one `raw` stream.
    pub fn is_framed(self) -> bool {
        self != Framing::Raw
    }

    /// Appends `packet` to `out` in this framing: after its length prefix (`len32le`, its
    /// stop-bit size for `block`), or as it is (`raw`, where packets run together).
    pub fn append_packet(self, packet: &[u8], out: &mut Vec<u8>) {
        match self {
            Framing::Len32Le => out.extend_from_slice(&(packet.len() as u32).to_le_bytes()),
            Framing::Block => out.extend_from_slice(&block_size_prefix(packet.len())),
            Framing::Raw => {}
        }
        out.extend_from_slice(packet);
    }
}

/// Iterates over `len32le` records. A length that runs past the end is a damaged prefix or
/// a cut file: the records resume at the first later offset from which the length prefixes
/// lead exactly to the end of the input, if there is one (see [`chain_start`]).
pub fn len32le_packets(data: &[u8]) -> impl Iterator<Item = Result<Packet<'_>, FramingError>> {
    records(data, len32le_record)
}

/// Iterates over the spec's blocks (see [`Framing::Block`]), resuming after a damaged size
/// as [`len32le_packets`] does.
pub fn block_packets(data: &[u8]) -> impl Iterator<Item = Result<Packet<'_>, FramingError>> {
    records(data, block_record)
}

/// A record's prefix at the start of `b`: its length and the prefix's.
enum Record {
    At {
        len: usize,
        prefix: usize,
    },
    /// A block of size zero: an error, and the next record starts after the prefix.
    Zero {
        prefix: usize,
    },
    /// The prefix itself is cut off by the end of the input.
    Cut,
    /// A block size that is no stop-bit integer: nothing after it can be located.
    Bad,
}

fn len32le_record(b: &[u8]) -> Record {
    match b.get(..4) {
        Some(p) => Record::At {
            len: u32::from_le_bytes(p.try_into().expect("4 bytes")) as usize,
            prefix: 4,
        },
        None => Record::Cut,
    }
}

fn block_record(b: &[u8]) -> Record {
    match block_size(b) {
        BlockSize::Size { len: 0, prefix } => Record::Zero { prefix },
        BlockSize::Size { len, prefix } => Record::At { len, prefix },
        BlockSize::Short => Record::Cut,
        BlockSize::Bad => Record::Bad,
    }
}

fn records(
    data: &[u8],
    record: fn(&[u8]) -> Record,
) -> impl Iterator<Item = Result<Packet<'_>, FramingError>> {
    let mut pos = 0usize;
    let mut index = 0usize;
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || pos == data.len() {
            return None;
        }
        let offset = pos;
        let (len, prefix) = match record(&data[pos..]) {
            Record::At { len, prefix } => (len, prefix),
            Record::Cut => {
                failed = true;
                return Some(Err(FramingError::TruncatedLength { index, offset }));
            }
            Record::Zero { prefix } => {
                pos += prefix;
                index += 1;
                return Some(Err(FramingError::ZeroBlock {
                    index: index - 1,
                    offset,
                    prefix,
                }));
            }
            Record::Bad => {
                failed = true;
                return Some(Err(FramingError::BadBlockSize { index, offset }));
            }
        };
        let available = data.len() - pos - prefix;
        if len > available {
            index += 1;
            let Some(resumed_at) = chain_start(data, pos + 1, record) else {
                failed = true;
                return Some(Err(FramingError::TruncatedPacket {
                    index: index - 1,
                    offset,
                    len,
                    available,
                }));
            };
            pos = resumed_at;
            return Some(Err(FramingError::Resynchronised {
                index: index - 1,
                offset,
                len,
                resumed_at,
                skipped: resumed_at - offset,
            }));
        }
        let bytes = &data[pos + prefix..pos + prefix + len];
        pos += prefix + len;
        index += 1;
        Some(Ok(Packet {
            index: index - 1,
            offset: offset + prefix,
            bytes,
        }))
    })
}

/// The first offset at or after `from` from which records follow one another to exactly
/// the end of `data`. A chance length inside damaged bytes would have to land on a true
/// record boundary to pass, and what it frames is then decoded and checked like any packet,
/// so a false start shows as a decode error, not as silent data.
fn chain_start(data: &[u8], from: usize, record: fn(&[u8]) -> Record) -> Option<usize> {
    // ends[p]: records starting at p reach the end exactly. Filled from the back.
    let n = data.len();
    let mut ends = vec![false; n + 1];
    ends[n] = true;
    for p in (from..n).rev() {
        ends[p] = match record(&data[p..]) {
            Record::At { len, prefix } => (p + prefix)
                .checked_add(len)
                .is_some_and(|e| e <= n && ends[e]),
            Record::Zero { prefix } => ends[p + prefix],
            Record::Cut | Record::Bad => false,
        };
    }
    (from..n).find(|&p| ends[p])
}

/// Writes packets in the `len32le` framing.
pub fn write_len32le<'a>(
    packets: impl IntoIterator<Item = &'a [u8]>,
    mut out: impl Write,
) -> io::Result<()> {
    for p in packets {
        let len = u32::try_from(p.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "packet over 4 GiB"))?;
        out.write_all(&len.to_le_bytes())?;
        out.write_all(p)?;
    }
    Ok(())
}

/// Writes packets as the spec's blocks: each one's size as a stop-bit unsigned integer (the
/// shortest form), then its bytes. An empty packet is refused: a block of size zero is an
/// error (ERR D12).
pub fn write_blocks<'a>(
    packets: impl IntoIterator<Item = &'a [u8]>,
    mut out: impl Write,
) -> io::Result<()> {
    for p in packets {
        if p.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "an empty packet: a block of size zero is an error (ERR D12)",
            ));
        }
        out.write_all(&block_size_prefix(p.len()))?;
        out.write_all(p)?;
    }
    Ok(())
}

/// `len` as a stop-bit unsigned integer, the shortest form.
pub fn block_size_prefix(len: usize) -> Vec<u8> {
    let mut b = Vec::with_capacity(3);
    fastfeed_codec::primitives::put::put_u64(&mut b, len as u64);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn len32le_round_trip_and_truncation() {
        let packets: Vec<&[u8]> = vec![b"abc", b"", b"defgh"];
        let mut buf = Vec::new();
        write_len32le(packets.iter().copied(), &mut buf).unwrap();
        let back: Vec<&[u8]> = len32le_packets(&buf).map(|p| p.unwrap().bytes).collect();
        assert_eq!(back, packets);
        for cut in 1..buf.len() {
            let r: Vec<_> = len32le_packets(&buf[..cut]).collect();
            if cut == 7 || cut == 11 {
                assert!(r.iter().all(|p| p.is_ok()));
            } else {
                assert!(r.last().unwrap().is_err(), "cut {cut}");
            }
        }
    }

    #[test]
    fn a_damaged_length_skips_to_where_the_lengths_chain_to_the_end() {
        let packets: Vec<&[u8]> = vec![b"abcdef", b"ghijkl", b"mn", b"opqrstu"];
        let mut buf = Vec::new();
        write_len32le(packets.iter().copied(), &mut buf).unwrap();
        buf[10] = 0xff; // the second record's length, now far past the end
        let got: Vec<_> = len32le_packets(&buf).collect();
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[0].as_ref().unwrap().bytes, b"abcdef");
        assert_eq!(
            got[1],
            Err(FramingError::Resynchronised {
                index: 1,
                offset: 10,
                len: 0xff,
                resumed_at: 20,
                skipped: 10
            })
        );
        assert_eq!(got[2].as_ref().unwrap().bytes, b"mn");
        assert_eq!(got[2].as_ref().unwrap().index, 2);
        assert_eq!(got[3].as_ref().unwrap().bytes, b"opqrstu");
        // A cut file has no such place: the error ends the packets.
        let cut: Vec<_> = len32le_packets(&buf[..buf.len() - 1]).collect();
        assert!(matches!(
            cut.last(),
            Some(Err(FramingError::TruncatedPacket { .. }))
        ));
    }

    #[test]
    fn blocks_round_trip_with_prefixes_of_one_to_three_bytes() {
        let sizes = [1usize, 127, 128, 300, 16_383, 16_384, 20_000];
        let packets: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![n as u8 | 1; n]).collect();
        let mut buf = Vec::new();
        write_blocks(packets.iter().map(|p| &p[..]), &mut buf).unwrap();
        let prefixes: usize = sizes.iter().map(|&n| block_size_prefix(n).len()).sum();
        assert_eq!(buf.len(), prefixes + sizes.iter().sum::<usize>());
        assert_eq!(block_size_prefix(127), [0xff]);
        assert_eq!(block_size_prefix(128), [0x01, 0x80]);
        assert_eq!(block_size_prefix(16_384), [0x01, 0x00, 0x80]);
        let back: Vec<Packet> = block_packets(&buf).map(|p| p.unwrap()).collect();
        assert_eq!(back.len(), sizes.len());
        for (i, (p, want)) in back.iter().zip(&packets).enumerate() {
            assert_eq!((p.index, p.bytes), (i, &want[..]));
            assert_eq!(&buf[p.offset..p.offset + p.bytes.len()], p.bytes);
        }
        // Every cut inside a block or its prefix is an error; at a boundary it is not.
        let ends: Vec<usize> = back.iter().map(|p| p.offset + p.bytes.len()).collect();
        for cut in (1..buf.len()).step_by(97).chain(ends.iter().copied()) {
            let r: Vec<_> = block_packets(&buf[..cut]).collect();
            assert_eq!(
                r.iter().all(|p| p.is_ok()),
                ends.contains(&cut),
                "cut {cut}"
            );
        }
        assert!(write_blocks([&b""[..]], &mut Vec::new()).is_err());
    }

    #[test]
    fn an_overlong_block_size_is_read_and_a_zero_size_is_d12() {
        // 3 as an overlong stop-bit integer (the spec allows it for block sizes), a block of
        // size zero, then a block of 2.
        let buf = [0x00, 0x00, 0x83, b'a', b'b', b'c', 0x80, 0x82, b'd', b'e'];
        let got: Vec<_> = block_packets(&buf).collect();
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0].as_ref().unwrap().bytes, b"abc");
        assert_eq!(got[0].as_ref().unwrap().offset, 3);
        let zero = got[1].as_ref().unwrap_err();
        assert_eq!(
            zero,
            &FramingError::ZeroBlock {
                index: 1,
                offset: 6,
                prefix: 1
            }
        );
        assert_eq!(zero.spec_code(), Some(fastfeed_codec::SpecCode::D12));
        assert_eq!(zero.skipped(buf.len()), 1);
        assert!(zero.to_string().contains("D12"), "{zero}");
        let last = got[2].as_ref().unwrap();
        assert_eq!((last.index, last.bytes), (2, &b"de"[..]));
    }

    #[test]
    fn a_block_size_without_a_stop_bit_ends_the_blocks() {
        let mut buf = vec![0x81, b'x'];
        buf.extend([0x01; BLOCK_SIZE_BYTES]);
        buf.push(0x81);
        let got: Vec<_> = block_packets(&buf).collect();
        assert_eq!(got.len(), 2);
        assert!(got[0].is_ok());
        assert_eq!(
            got[1],
            Err(FramingError::BadBlockSize {
                index: 1,
                offset: 2
            })
        );
        // Past 64 bits.
        let huge = [
            0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0xff,
        ];
        assert!(matches!(
            block_packets(&huge).next(),
            Some(Err(FramingError::BadBlockSize { .. }))
        ));
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_frame_without_panic(data in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let total: usize = len32le_packets(&data).filter_map(|p| p.ok()).map(|p| p.bytes.len() + 4).sum();
            proptest::prop_assert!(total <= data.len());
            let total: usize = block_packets(&data).filter_map(|p| p.ok()).map(|p| p.bytes.len() + 1).sum();
            proptest::prop_assert!(total <= data.len());
        }
    }
}
