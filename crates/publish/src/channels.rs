//! The packet header and the channels (lines) a publisher takes: a sequence tracker per
//! channel, and whether each channel's Done came. A single-stream feed is one channel
//! numbered 0 whose packets carry no channel number.

use fastfeed_feed::{SeqCounters, SeqOutcome, SequenceTracker};

/// What starts each packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PacketHeader {
    /// A little-endian u32 packet sequence number (the simple and complex data sets).
    #[default]
    Sequence,
    /// The channel's u32 packet sequence number, then its u16 channel number, both
    /// little-endian (the OPRA-like data set: each channel numbers its packets itself).
    SequenceChannel,
}

impl PacketHeader {
    /// Bytes of header before the FAST messages.
    pub const fn bytes(self) -> usize {
        match self {
            PacketHeader::Sequence => 4,
            PacketHeader::SequenceChannel => 6,
        }
    }
}

/// What to do with a packet, by its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Shorter than its header: counted apart, not in any channel's sequence.
    Short,
    /// Of a channel this publisher does not take (a misrouted or misconfigured group).
    Foreign(u16),
    /// A duplicate or stale packet of one of our channels: counted, not decoded.
    Skip,
    /// New: decode it. `line` indexes this publisher's channels.
    Decode { seq: u64, channel: u16, line: usize },
}

#[derive(Debug, Clone)]
struct Line {
    channel: u16,
    tracker: SequenceTracker,
    done: bool,
}

/// The channels one publisher takes.
#[derive(Debug, Clone)]
pub struct Channels {
    header: PacketHeader,
    lines: Vec<Line>,
    /// Channel number -> index into `lines` (`u16::MAX`: not ours).
    by_channel: Vec<u16>,
}

const NOT_OURS: u16 = u16::MAX;

impl Channels {
    /// One stream of packets with a [`PacketHeader::Sequence`] header.
    pub fn single(first_seq: Option<u64>) -> Self {
        Channels {
            header: PacketHeader::Sequence,
            lines: vec![Line::new(0, first_seq)],
            by_channel: vec![0],
        }
    }

    /// `channels` (distinct numbers), each its own stream with a
    /// [`PacketHeader::SequenceChannel`] header and a sequence starting at `first_seq`.
    pub fn of(channels: &[u16], first_seq: Option<u64>) -> Self {
        let mut c = Channels {
            header: PacketHeader::SequenceChannel,
            lines: Vec::with_capacity(channels.len()),
            by_channel: Vec::new(),
        };
        for &ch in channels {
            let i = ch as usize;
            if c.by_channel.len() <= i {
                c.by_channel.resize(i + 1, NOT_OURS);
            }
            if c.by_channel[i] == NOT_OURS {
                c.by_channel[i] = c.lines.len() as u16;
                c.lines.push(Line::new(ch, first_seq));
            }
        }
        c
    }

    pub fn header(&self) -> PacketHeader {
        self.header
    }

    /// The channel numbers taken, in the order given.
    pub fn numbers(&self) -> Vec<u16> {
        self.lines.iter().map(|l| l.channel).collect()
    }

    /// Reads the packet's header and records its sequence number on its channel.
    pub fn admit(&mut self, packet: &[u8]) -> Admit {
        let Some(header) = packet.get(..self.header.bytes()) else {
            return Admit::Short;
        };
        let seq = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as u64;
        let (channel, line) = match self.header {
            PacketHeader::Sequence => (0, 0),
            PacketHeader::SequenceChannel => {
                let ch = u16::from_le_bytes([header[4], header[5]]);
                match self.by_channel.get(ch as usize) {
                    Some(&i) if i != NOT_OURS => (ch, i as usize),
                    _ => return Admit::Foreign(ch),
                }
            }
        };
        let outcome = self.lines[line].tracker.on_packet(seq);
        if let SeqOutcome::Gap { from, to } = outcome {
            match self.header {
                PacketHeader::Sequence => eprintln!("gap: packets {from}..={to} missing"),
                PacketHeader::SequenceChannel => {
                    eprintln!("gap: channel {channel} packets {from}..={to} missing")
                }
            }
        }
        if outcome.accept() {
            Admit::Decode { seq, channel, line }
        } else {
            Admit::Skip
        }
    }

    /// The Done message of channel `line` was decoded.
    pub fn set_done(&mut self, line: usize) {
        if let Some(l) = self.lines.get_mut(line) {
            l.done = true;
        }
    }

    /// Whether every channel's Done came.
    pub fn all_done(&self) -> bool {
        self.lines.iter().all(|l| l.done)
    }

    /// The channels whose Done has not come.
    pub fn not_done(&self) -> Vec<u16> {
        self.lines
            .iter()
            .filter(|l| !l.done)
            .map(|l| l.channel)
            .collect()
    }

    /// The sequence counters of all channels, summed.
    pub fn counters(&self) -> SeqCounters {
        let mut sum = SeqCounters::default();
        for l in &self.lines {
            sum += &l.tracker.counters();
        }
        sum
    }

    /// The packet ranges still missing, as (channel, first, last), channel by channel.
    pub fn missing_ranges(&self) -> Vec<(u16, u64, u64)> {
        self.lines
            .iter()
            .flat_map(|l| l.tracker.missing_ranges().map(|(a, b)| (l.channel, a, b)))
            .collect()
    }
}

impl Line {
    fn new(channel: u16, first_seq: Option<u64>) -> Self {
        Line {
            channel,
            tracker: match first_seq {
                Some(first) => SequenceTracker::default().starting_at(first),
                None => SequenceTracker::default(),
            },
            done: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(seq: u32, channel: u16) -> Vec<u8> {
        let mut p = seq.to_le_bytes().to_vec();
        p.extend_from_slice(&channel.to_le_bytes());
        p.push(0x80);
        p
    }

    #[test]
    fn each_channel_keeps_its_own_sequence() {
        let mut c = Channels::of(&[3, 7], Some(1));
        assert_eq!(
            c.admit(&packet(1, 3)),
            Admit::Decode {
                seq: 1,
                channel: 3,
                line: 0
            }
        );
        assert_eq!(
            c.admit(&packet(1, 7)),
            Admit::Decode {
                seq: 1,
                channel: 7,
                line: 1
            }
        );
        // Channel 7's packet 1 again: a duplicate there, though channel 3 also had a 1.
        assert_eq!(c.admit(&packet(1, 7)), Admit::Skip);
        // Channel 3 jumps to 4: packets 2..=3 of channel 3 only are missing.
        assert!(matches!(c.admit(&packet(4, 3)), Admit::Decode { .. }));
        assert_eq!(c.missing_ranges(), vec![(3, 2, 3)]);
        assert_eq!(c.admit(&packet(1, 5)), Admit::Foreign(5));
        assert_eq!(c.admit(&[1, 0, 0, 0, 3]), Admit::Short);
        let s = c.counters();
        assert_eq!((s.received, s.accepted, s.duplicates, s.gaps), (4, 3, 1, 1));
        assert_eq!(s.received, s.accepted + s.duplicates + s.stale);
    }

    #[test]
    fn done_only_when_every_channel_said_so() {
        let mut c = Channels::of(&[0, 2, 2], None);
        assert_eq!(c.numbers(), vec![0, 2]);
        c.set_done(1);
        assert!(!c.all_done());
        assert_eq!(c.not_done(), vec![0]);
        c.set_done(0);
        assert!(c.all_done());
    }

    #[test]
    fn a_single_stream_reads_a_four_byte_header() {
        let mut c = Channels::single(None);
        assert_eq!(
            c.admit(&[9, 0, 0, 0, 0x80]),
            Admit::Decode {
                seq: 9,
                channel: 0,
                line: 0
            }
        );
        assert_eq!(c.admit(&[9, 0, 0]), Admit::Short);
    }
}
