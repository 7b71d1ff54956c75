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
}

impl FromStr for Framing {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "raw" => Ok(Framing::Raw),
            "len32le" => Ok(Framing::Len32Le),
            _ => Err(format!("unknown framing {s:?} (raw or len32le)")),
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
            FramingError::TruncatedLength { offset, .. }
            | FramingError::TruncatedPacket { offset, .. } => input_len - offset,
        }
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
        }
    }
}

/// Iterates over `len32le` records. A length that runs past the end is a damaged prefix or
/// a cut file: the records resume at the first later offset from which the length prefixes
/// lead exactly to the end of the input, if there is one (see [`chain_start`]).
pub fn len32le_packets(data: &[u8]) -> impl Iterator<Item = Result<Packet<'_>, FramingError>> {
    let mut pos = 0usize;
    let mut index = 0usize;
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || pos == data.len() {
            return None;
        }
        let offset = pos;
        let Some(prefix) = data.get(pos..pos + 4) else {
            failed = true;
            return Some(Err(FramingError::TruncatedLength { index, offset }));
        };
        let len = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize;
        let available = data.len() - pos - 4;
        if len > available {
            index += 1;
            let Some(resumed_at) = chain_start(data, pos + 1) else {
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
        let bytes = &data[pos + 4..pos + 4 + len];
        pos += 4 + len;
        index += 1;
        Some(Ok(Packet {
            index: index - 1,
            offset: offset + 4,
            bytes,
        }))
    })
}

/// The first offset at or after `from` from which `len32le` records follow one another to
/// exactly the end of `data`. A chance length inside damaged bytes would have to land on
/// a true record boundary to pass, and what it frames is then decoded and checked like any
/// packet, so a false start shows as a decode error, not as silent data.
fn chain_start(data: &[u8], from: usize) -> Option<usize> {
    // ends[p]: records starting at p reach the end exactly. Filled from the back.
    let n = data.len();
    let mut ends = vec![false; n + 1];
    ends[n] = true;
    for p in (from..n).rev() {
        if let Some(prefix) = data.get(p..p + 4) {
            let len = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize;
            ends[p] = (p + 4).checked_add(len).is_some_and(|e| e <= n && ends[e]);
        }
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

    proptest::proptest! {
        #[test]
        fn any_bytes_frame_without_panic(data in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let total: usize = len32le_packets(&data).filter_map(|p| p.ok()).map(|p| p.bytes.len() + 4).sum();
            proptest::prop_assert!(total <= data.len());
        }
    }
}
