//! What to try when an input does not decode: another framing, a packet header to skip
//! (found by decoding the first packets behind each length), other templates.

use std::sync::Arc;

use fastfeed_codec::{DecodeOptions, Templates};
use fastfeed_packet::{guess_header, HeaderGuess, PacketOptions};

use crate::tally::Tally;
use crate::{FramingArgs, InputFraming};

/// Packets the hint looks at: the first ones of at most [`HEAD_BYTES`].
const HEADS: usize = 32;
const HEAD_BYTES: usize = 16 << 10;

/// The first packets of an input, kept for the hint, and how many packets there were.
#[derive(Default)]
pub struct Heads {
    kept: Vec<Vec<u8>>,
    seen: usize,
}

impl Heads {
    /// Counts a packet, and keeps it while fewer than [`HEADS`] short ones are kept.
    pub fn add(&mut self, packet: &[u8]) {
        self.seen += 1;
        if self.kept.len() < HEADS && packet.len() <= HEAD_BYTES {
            self.kept.push(packet.to_vec());
        }
    }

    /// Whether a run with `errors` errors and `messages` messages wants a hint: nothing
    /// decoded, or most packets failed (a header left in front of the messages can let a
    /// few decode by chance).
    pub fn wants_hint(&self, errors: usize, messages: usize) -> bool {
        errors > 0 && (messages == 0 || 2 * errors >= self.seen)
    }
}

/// What to try when nothing decoded, or most packets failed: the framing (`data`: the
/// input, where it was read whole), a packet header, other templates.
pub fn hint(
    f: &FramingArgs,
    data: &[u8],
    heads: &Heads,
    tally: &Tally,
    templates: &Arc<Templates>,
    opts: &DecodeOptions,
) -> String {
    let mut h = String::new();
    if f.framing == InputFraming::Raw && looks_len32le(data) {
        h += "the input looks length-prefixed: try --framing len32le";
    } else if f.framing == InputFraming::Raw && looks_blocks(data) {
        h += "the input looks like the spec's blocks (a stop-bit size before each): try --framing block";
    } else if f.framing == InputFraming::Len32le && !looks_len32le(data) {
        h += "the input is not length-prefixed records: try --framing raw";
    } else if f.framing == InputFraming::Block && block_chain(data).is_none() {
        h += "the input is not blocks whose sizes lead to its end: try --framing raw or len32le";
    } else if let Some(found) = header_hint(f, &heads.kept, templates, opts) {
        h += &found;
    } else {
        h += "wrong templates for this data?";
        let ids = tally.unknown_ids();
        if !ids.is_empty() {
            let list: Vec<String> = ids.iter().take(5).map(u32::to_string).collect();
            h += &format!(
                " The data uses template ids the file does not define: {}",
                list.join(", ")
            );
        }
    }
    h
}

/// A packet header to skip: the one with which the first packets decode whole, named as a
/// venue's sequence number where it is one (MOEX's four bytes little-endian, CME's four
/// big-endian then a sub-channel byte).
fn header_hint(
    f: &FramingArgs,
    heads: &[Vec<u8>],
    templates: &Arc<Templates>,
    opts: &DecodeOptions,
) -> Option<String> {
    let found = header_that_decodes(f, heads, templates, opts);
    let seq = sequence_header(heads).filter(|_| f.skip_header == 0);
    let skip = found.map(|g| g.options.skip_header);
    match (skip, seq) {
        (Some(4), Some((first, false))) | (None, Some((first, false))) => Some(format!(
            "packets start with a 4-byte little-endian sequence number ({first}, {}, ...), \
                 as MOEX's and `fastfeed generate`'s do: try --skip-header 4 --reset-each-packet",
            first + 1
        )),
        (Some(4 | 5), Some((first, true))) | (None, Some((first, true))) => Some(format!(
            "packets start with a 4-byte big-endian sequence number ({first}, {}, ...), as \
                 CME's do (then a sub-channel byte): try --skip-header 5 --reset-each-packet \
                 (or --skip-header 4)",
            first + 1
        )),
        (Some(_), _) => found.map(|g| format!("the first packets decode with {g}: try those")),
        (None, None) => None,
    }
}

/// [`guess_header`] over the kept packets, where the input has packets.
fn header_that_decodes(
    f: &FramingArgs,
    heads: &[Vec<u8>],
    templates: &Arc<Templates>,
    opts: &DecodeOptions,
) -> Option<HeaderGuess> {
    if f.framing == InputFraming::Raw {
        return None;
    }
    let packets: Vec<&[u8]> = heads.iter().map(Vec::as_slice).collect();
    let given = PacketOptions {
        skip_header: f.skip_header,
        reset_each_packet: f.reset_each_packet,
    };
    guess_header(templates, &packets, given, opts)
}

/// A packet header to skip, for a command that reads its input as it goes (no framing check
/// on the whole input): [`header_hint`] over the kept packets.
pub fn packet_header(
    f: &FramingArgs,
    heads: &Heads,
    templates: &Arc<Templates>,
    opts: &DecodeOptions,
) -> Option<String> {
    header_hint(f, &heads.kept, templates, opts)
}

/// Whether the first packets start with a 4-byte sequence number: one that never falls
/// and rises by at most one a packet (two lines' packets may alternate), read
/// little-endian or big-endian; its first value and whether it is big-endian.
fn sequence_header(heads: &[Vec<u8>]) -> Option<(u32, bool)> {
    let words: Vec<[u8; 4]> = heads
        .iter()
        .filter_map(|h| h.get(..4)?.try_into().ok())
        .collect();
    if words.len() < 3 || words.len() < heads.len() {
        return None;
    }
    [false, true].into_iter().find_map(|be| {
        let n: Vec<u32> = words
            .iter()
            .map(|w| match be {
                true => u32::from_be_bytes(*w),
                false => u32::from_le_bytes(*w),
            })
            .collect();
        let steady = n.windows(2).all(|w| w[1] >= w[0] && w[1] - w[0] <= 1);
        (steady && n[n.len() - 1] > n[0]).then_some((n[0], be))
    })
}

/// Blocks whose stop-bit sizes lead from the first to exactly the end of the input, two
/// non-empty ones at least: a raw stream's bytes chain so only by chance.
fn looks_blocks(data: &[u8]) -> bool {
    block_chain(data).is_some_and(|n| n >= 2)
}

/// The non-empty blocks of `data`, if their sizes lead exactly to its end (an empty block is
/// an error, but the sizes still chain).
fn block_chain(data: &[u8]) -> Option<usize> {
    let mut n = 0;
    for b in fastfeed_packet::block_packets(data) {
        match b {
            Ok(_) => n += 1,
            Err(fastfeed_packet::FramingError::ZeroBlock { .. }) => {}
            Err(_) => return None,
        }
    }
    Some(n)
}

/// Whether `data` reads as at least two `len32le` records (or one that fills it).
fn looks_len32le(data: &[u8]) -> bool {
    let records = fastfeed_packet::len32le_packets(data)
        .take(2)
        .take_while(Result::is_ok)
        .count();
    records == 2 || (records == 1 && data.len() > 4)
}
