//! The packet header in front of the messages, guessed from the first packets: a feed's
//! packets often start with a sequence number, a sending time or a channel, of a length
//! the reader must be told. Each header length is tried, with and without the dictionaries
//! reset at each packet, and the one with which the most packets decode whole wins.

use std::sync::Arc;

use fastfeed_codec::{DecodeOptions, Decoder, Templates};

use crate::{Packet, PacketDecoder, PacketOptions};

/// Header lengths tried in front of the messages: 0 to this many bytes.
pub const MAX_HEADER: usize = 16;

/// What [`guess_header`] found: options, and how many of the packets decode whole with them
/// and with the options given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderGuess {
    pub options: PacketOptions,
    /// Packets that decode whole, to the end, with `options`.
    pub whole: usize,
    /// Packets that decode whole with the options given.
    pub whole_as_given: usize,
    /// Packets tried.
    pub tried: usize,
}

/// The header length (0 to [`MAX_HEADER`] bytes) and reset with which the most of
/// `packets` decode whole, where `given` does worse and at least half of them do. Packets
/// that decode whole under the spec's strict (reportable) rules count first: a header cut
/// short can pass for the start of a message (MOEX's sequence number less its first byte and
/// a Reset message read as one message with too long a presence map), and the strict rules
/// see through that. Ties go to the shorter header, then to the reset: where packets decode
/// whole both ways, a feed that resets each packet is read right only with it (a copy field
/// left out for its initial value), and one that does not reset loses nothing to it in
/// these packets.
pub fn guess_header(
    templates: &Arc<Templates>,
    packets: &[&[u8]],
    given: PacketOptions,
    opts: &DecodeOptions,
) -> Option<HeaderGuess> {
    if packets.len() < 2 {
        return None;
    }
    // Packets decoded whole with these options, under the strict rules and as asked.
    let whole = |options: PacketOptions| {
        let count = |strict: bool| {
            let opts = DecodeOptions {
                strict,
                ..opts.clone()
            };
            let mut pd =
                PacketDecoder::new(Decoder::with_options(templates.clone(), opts), options);
            let packets = packets.iter().enumerate().map(|(index, &bytes)| Packet {
                index,
                offset: 0,
                bytes,
            });
            packets
                .filter(|p| pd.decode_packet(p, &mut (), |_, _| {}).is_ok_and(|n| n > 0))
                .count()
        };
        (count(true), count(opts.strict))
    };
    let as_given = whole(given);
    let (n, options) = (0..=MAX_HEADER)
        .flat_map(|skip_header| {
            [false, true].map(|reset_each_packet| PacketOptions {
                skip_header,
                reset_each_packet,
            })
        })
        .map(|o| (whole(o), o))
        .max_by_key(|&(n, o)| (n, std::cmp::Reverse(o.skip_header), o.reset_each_packet))?;
    (n > as_given && 2 * n.1 >= packets.len()).then_some(HeaderGuess {
        options,
        whole: n.1,
        whole_as_given: as_given.1,
        tried: packets.len(),
    })
}

impl std::fmt::Display for HeaderGuess {
    /// "--skip-header N [--reset-each-packet] (W of T whole, against G as given)".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--skip-header {}", self.options.skip_header)?;
        if self.options.reset_each_packet {
            write!(f, " --reset-each-packet")?;
        }
        write!(
            f,
            " ({} of {} whole, against {} as given)",
            self.whole, self.tried, self.whole_as_given
        )
    }
}
