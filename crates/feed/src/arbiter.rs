//! A/B line arbitration: exchanges send each packet on two lines; the first copy of each
//! packet sequence number wins, from either line, and the second is dropped and counted.
//! Each line also keeps its own sequence, so the report says what each line lost, and how
//! far behind the other each one runs (in time and in packets) when it delivers a copy
//! second.

use crate::sequence::{SeqCounters, SeqOutcome, SequenceTracker};

/// One of the two incremental lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Line {
    /// Line A.
    A,
    /// Line B.
    B,
}

impl Line {
    fn index(self) -> usize {
        self as usize
    }

    /// The other line.
    pub fn other(self) -> Line {
        match self {
            Line::A => Line::B,
            Line::B => Line::A,
        }
    }
}

/// What arbitration made of one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arbitration {
    /// The first copy: process it. In order, opening a gap, or filling one late.
    Accept(SeqOutcome),
    /// The other line (or this one) delivered it already.
    Duplicate,
    /// Older than the start of the sequence.
    Stale,
    /// From before a sequence reset that the other line has already delivered.
    OldEpoch,
}

impl Arbitration {
    /// Whether the packet should be processed.
    pub fn accept(self) -> bool {
        matches!(self, Arbitration::Accept(_))
    }
}

/// Per-line counters. `packets = first + duplicates + stale + old_epoch`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineStats {
    /// Packets the line delivered.
    pub packets: u64,
    /// Packets this line delivered first (the copy that was used).
    pub first: u64,
    /// Packets this line delivered after the other line (or twice).
    pub duplicates: u64,
    /// Packets older than the start of the sequence.
    pub stale: u64,
    /// Packets from before a reset the other line had already delivered.
    pub old_epoch: u64,
    /// Sequence numbers this line never delivered (gaps in its own sequence, not filled).
    pub lost: u64,
    /// Copies delivered second after the other line's first copy, with the delay measured.
    pub behind: u64,
    /// Sum of those delays, ns.
    pub behind_ns_sum: u64,
    /// The longest delay, ns.
    pub behind_ns_max: u64,
    /// The most packets the other line was ahead when this line delivered a copy.
    pub behind_packets_max: u64,
}

impl LineStats {
    /// Mean delay behind the other line, ns (0 if never behind).
    pub fn behind_ns_mean(&self) -> u64 {
        self.behind_ns_sum.checked_div(self.behind).unwrap_or(0)
    }
}

/// Arbitration counters: the channel's merged sequence and each line's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArbiterStats {
    /// The merged sequence: its gaps are what neither line delivered (yet).
    pub channel: SeqCounters,
    /// Sequence resets honoured.
    pub resets: u64,
    /// Line A.
    pub a: LineStats,
    /// Line B.
    pub b: LineStats,
}

#[derive(Debug, Clone)]
struct LineState {
    tracker: SequenceTracker,
    stats: LineStats,
    /// Lost before the tracker was last replaced (at a reset).
    lost_before: u64,
    epoch: u32,
    last: u64,
}

impl LineState {
    fn new(first: Option<u64>) -> LineState {
        LineState {
            tracker: tracker(first),
            stats: LineStats::default(),
            lost_before: 0,
            epoch: 0,
            last: 0,
        }
    }

    fn restart(&mut self, first: u64, epoch: u32) {
        self.lost_before += self.tracker.counters().missing;
        self.tracker = tracker(Some(first));
        self.epoch = epoch;
        self.last = 0;
    }
}

fn tracker(first: Option<u64>) -> SequenceTracker {
    let t = SequenceTracker::default();
    match first {
        Some(f) => t.starting_at(f),
        None => t,
    }
}

/// Recent first copies, to measure how far behind a second copy comes.
const RECENT: usize = 4096;
/// A line still before a reset is taken to have passed it when its numbers drop this far.
const REORDER_MARGIN: u64 = 64;

#[derive(Debug, Clone, Copy)]
struct Recent {
    seq: u64,
    at_ns: u64,
    line: Line,
}

/// Arbitrates lines A and B of one channel.
#[derive(Debug, Clone)]
pub struct Arbiter {
    channel: SequenceTracker,
    channel_before: SeqCounters,
    resets: u64,
    epoch: u32,
    lines: [LineState; 2],
    recent: Vec<Recent>,
}

impl Arbiter {
    /// `first`: the first sequence number expected (else the first packet starts it).
    pub fn new(first: Option<u64>) -> Arbiter {
        Arbiter {
            channel: tracker(first),
            channel_before: SeqCounters::default(),
            resets: 0,
            epoch: 0,
            lines: [LineState::new(first), LineState::new(first)],
            recent: vec![
                Recent {
                    seq: u64::MAX,
                    at_ns: 0,
                    line: Line::A
                };
                RECENT
            ],
        }
    }

    /// Arbitrates a packet numbered `first..=last` that arrived on `line` at `now_ns`.
    pub fn on_packet(&mut self, line: Line, first: u64, last: u64, now_ns: u64) -> Arbitration {
        let epoch = self.epoch;
        let other_last = self.lines[line.other().index()].last;
        let ls = &mut self.lines[line.index()];
        ls.stats.packets += 1;
        if ls.epoch < epoch {
            if first.saturating_add(REORDER_MARGIN) < ls.last {
                // Numbers dropped back: this line is past the reset it did not show us.
                ls.restart(first, epoch);
            } else {
                ls.stats.old_epoch += 1;
                return Arbitration::OldEpoch;
            }
        }
        ls.tracker.on_span(first, last);
        ls.last = ls.last.max(last);
        let outcome = self.channel.on_span(first, last);
        let ls = &mut self.lines[line.index()];
        match outcome {
            SeqOutcome::Duplicate => {
                ls.stats.duplicates += 1;
                let r = self.recent[(first as usize) % RECENT];
                if r.seq == first && r.line != line {
                    let lag = now_ns.saturating_sub(r.at_ns);
                    ls.stats.behind += 1;
                    ls.stats.behind_ns_sum += lag;
                    ls.stats.behind_ns_max = ls.stats.behind_ns_max.max(lag);
                    ls.stats.behind_packets_max = ls
                        .stats
                        .behind_packets_max
                        .max(other_last.saturating_sub(first));
                }
                Arbitration::Duplicate
            }
            SeqOutcome::Stale => {
                ls.stats.stale += 1;
                Arbitration::Stale
            }
            o => {
                ls.stats.first += 1;
                self.recent[(first as usize) % RECENT] = Recent {
                    seq: first,
                    at_ns: now_ns,
                    line,
                };
                Arbitration::Accept(o)
            }
        }
    }

    /// Whether a packet numbered `first` from `line` would be accepted, without recording
    /// it: a copy known to be a duplicate need not be decoded. (A line still before a reset
    /// is decoded: its packet may show it has passed the reset.)
    pub fn is_new(&self, line: Line, first: u64) -> bool {
        self.lines[line.index()].epoch < self.epoch || self.channel.is_new(first)
    }

    /// A sequence reset delivered on `line`: the next packet is numbered `new_seq`. The
    /// first line to deliver it resets the channel; the other line's packets are old until
    /// it delivers the reset too (or its numbers drop back).
    pub fn reset(&mut self, line: Line, new_seq: u64) {
        let ls = &self.lines[line.index()];
        if ls.epoch == self.epoch {
            self.epoch += 1;
            self.resets += 1;
            self.channel_before += &self.channel.counters();
            self.channel = tracker(Some(new_seq));
            for r in &mut self.recent {
                r.seq = u64::MAX;
            }
        }
        let epoch = self.epoch;
        self.lines[line.index()].restart(new_seq, epoch);
    }

    /// The sequence number expected next on the channel.
    pub fn expected(&self) -> Option<u64> {
        self.channel.expected()
    }

    /// The channel's missing ranges (what neither line delivered), oldest first.
    pub fn missing(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.channel.missing_ranges()
    }

    /// All counters.
    pub fn stats(&self) -> ArbiterStats {
        let line = |l: &LineState| LineStats {
            lost: l.lost_before + l.tracker.counters().missing,
            ..l.stats
        };
        let mut channel = self.channel_before;
        channel += &self.channel.counters();
        ArbiterStats {
            channel,
            resets: self.resets,
            a: line(&self.lines[0]),
            b: line(&self.lines[1]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_copy_wins_from_either_line() {
        let mut arb = Arbiter::new(Some(1));
        let acc = Arbitration::Accept(SeqOutcome::InOrder);
        assert_eq!(arb.on_packet(Line::A, 1, 1, 100), acc);
        assert_eq!(arb.on_packet(Line::B, 1, 1, 130), Arbitration::Duplicate);
        assert_eq!(arb.on_packet(Line::B, 2, 2, 200), acc);
        assert_eq!(arb.on_packet(Line::A, 2, 2, 210), Arbitration::Duplicate);
        // A loses 3, B delivers it later: A's 4 opens a gap that B fills late.
        assert_eq!(
            arb.on_packet(Line::A, 4, 4, 300),
            Arbitration::Accept(SeqOutcome::Gap { from: 3, to: 3 })
        );
        assert_eq!(
            arb.on_packet(Line::B, 3, 3, 320),
            Arbitration::Accept(SeqOutcome::Late)
        );
        assert_eq!(arb.on_packet(Line::B, 4, 4, 350), Arbitration::Duplicate);
        let s = arb.stats();
        assert_eq!(
            (s.a.packets, s.a.first, s.a.duplicates, s.a.lost),
            (3, 2, 1, 1)
        );
        assert_eq!(
            (s.b.packets, s.b.first, s.b.duplicates, s.b.lost),
            (4, 2, 2, 0)
        );
        assert_eq!(
            (s.b.behind, s.b.behind_ns_sum, s.b.behind_ns_max),
            (2, 80, 50)
        );
        assert_eq!((s.a.behind, s.a.behind_ns_max), (1, 10));
        assert_eq!(s.b.behind_ns_mean(), 40);
        assert_eq!(s.channel.missing, 0);
        assert_eq!(s.channel.gap_packets, 1);
        assert_eq!(s.channel.late, 1);
    }

    #[test]
    fn a_reset_starts_a_new_epoch_on_both_lines() {
        let mut arb = Arbiter::new(None);
        for s in 100..110 {
            assert!(arb.on_packet(Line::A, s, s, 0).accept());
        }
        assert!(!arb.on_packet(Line::B, 105, 105, 0).accept());
        // A delivers the reset: the next packet is 1.
        arb.reset(Line::A, 1);
        assert!(arb.on_packet(Line::A, 1, 1, 0).accept());
        // B is still before the reset: its old packets are not gaps ahead.
        assert_eq!(arb.on_packet(Line::B, 106, 106, 0), Arbitration::OldEpoch);
        arb.reset(Line::B, 1);
        assert_eq!(arb.on_packet(Line::B, 1, 1, 0), Arbitration::Duplicate);
        assert!(arb.on_packet(Line::B, 2, 2, 0).accept());
        let s = arb.stats();
        assert_eq!(s.resets, 1);
        assert_eq!(s.b.old_epoch, 1);
        assert_eq!(s.channel.accepted, 12);
        assert_eq!(s.channel.gaps, 0);
    }

    #[test]
    fn a_line_that_missed_the_reset_joins_when_its_numbers_drop() {
        let mut arb = Arbiter::new(None);
        for s in 1000..1010 {
            arb.on_packet(Line::A, s, s, 0);
            arb.on_packet(Line::B, s, s, 0);
        }
        arb.reset(Line::A, 1);
        assert!(arb.on_packet(Line::A, 1, 1, 0).accept());
        assert_eq!(arb.on_packet(Line::B, 1, 1, 0), Arbitration::Duplicate);
        assert!(arb.on_packet(Line::B, 2, 2, 0).accept());
    }

    proptest::proptest! {
        /// Any interleaving of two lossy copies of 1..=n: every number some line delivered
        /// is accepted exactly once, and each line's counters reconcile.
        #[test]
        fn counters_reconcile(
            a in proptest::collection::vec(proptest::bool::ANY, 1..200),
            b in proptest::collection::vec(proptest::bool::ANY, 1..200),
            shift in 0usize..5,
        ) {
            let mut arb = Arbiter::new(Some(1));
            let n = a.len().min(b.len());
            let mut delivered = std::collections::BTreeSet::new();
            let mut accepted = 0u64;
            for i in 0..n + shift {
                if i < n && a[i] {
                    delivered.insert(i);
                    accepted += arb.on_packet(Line::A, i as u64 + 1, i as u64 + 1, 0).accept() as u64;
                }
                if i >= shift && b[i - shift] && i - shift < n {
                    let j = i - shift;
                    delivered.insert(j);
                    accepted += arb.on_packet(Line::B, j as u64 + 1, j as u64 + 1, 0).accept() as u64;
                }
            }
            proptest::prop_assert_eq!(accepted, delivered.len() as u64);
            let s = arb.stats();
            for l in [s.a, s.b] {
                proptest::prop_assert_eq!(l.packets, l.first + l.duplicates + l.stale + l.old_epoch);
            }
            proptest::prop_assert_eq!(s.a.first + s.b.first, accepted);
        }
    }
}
