//! Packet sequence tracking. Every packet carries a sequence number; the tracker says whether
//! a packet is the next one, opens a gap, fills a gap late, or is a duplicate, and keeps the
//! missing ranges so a report can name them. Memory is bounded: past `max_ranges` open gaps
//! the oldest are given up (and counted as such).

use std::collections::VecDeque;

/// What one packet was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqOutcome {
    /// The expected next packet (or the first one seen).
    InOrder,
    /// Ahead of the expected one: `from..=to` are missing.
    Gap { from: u64, to: u64 },
    /// A packet that was missing, arriving late: accept it.
    Late,
    /// Already seen (or in a gap given up on): drop it.
    Duplicate,
    /// Older than the first packet (seen, or expected): nothing is known of it, drop it.
    Stale,
}

impl SeqOutcome {
    /// Whether the packet should be processed.
    pub fn accept(self) -> bool {
        !matches!(self, SeqOutcome::Duplicate | SeqOutcome::Stale)
    }
}

/// Running totals. `missing` is what is still missing now; `gap_packets` is every packet
/// ever found missing, `late` those of them that turned up afterwards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeqCounters {
    pub received: u64,
    pub accepted: u64,
    pub gaps: u64,
    pub gap_packets: u64,
    pub late: u64,
    pub duplicates: u64,
    pub stale: u64,
    pub missing: u64,
    /// Gap packets no longer tracked because too many ranges were open.
    pub given_up: u64,
}

/// Totals over several sequences (a channel's lines, a publisher's channels).
impl std::ops::AddAssign<&SeqCounters> for SeqCounters {
    fn add_assign(&mut self, c: &SeqCounters) {
        self.received += c.received;
        self.accepted += c.accepted;
        self.gaps += c.gaps;
        self.gap_packets += c.gap_packets;
        self.late += c.late;
        self.duplicates += c.duplicates;
        self.stale += c.stale;
        self.missing += c.missing;
        self.given_up += c.given_up;
    }
}

#[derive(Debug, Clone)]
pub struct SequenceTracker {
    first: u64,
    next: Option<u64>,
    /// Open gaps, oldest first, as inclusive ranges.
    missing: VecDeque<(u64, u64)>,
    max_ranges: usize,
    counters: SeqCounters,
}

impl Default for SequenceTracker {
    fn default() -> Self {
        Self::new(4096)
    }
}

impl SequenceTracker {
    pub fn new(max_ranges: usize) -> Self {
        SequenceTracker {
            first: 0,
            next: None,
            missing: VecDeque::new(),
            max_ranges: max_ranges.max(1),
            counters: SeqCounters::default(),
        }
    }

    /// Expects `first` as the first packet: a packet before it is stale, and a later first
    /// arrival opens a gap from `first`. Without this the first packet seen starts the
    /// sequence, so losing the very first packets, or having them overtaken, goes unseen.
    pub fn starting_at(mut self, first: u64) -> Self {
        self.first = first;
        self.next = Some(first);
        self
    }

    pub fn counters(&self) -> SeqCounters {
        self.counters
    }

    /// The ranges still missing, oldest first.
    pub fn missing_ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.missing.iter().copied()
    }

    /// The sequence number expected next.
    pub fn expected(&self) -> Option<u64> {
        self.next
    }

    /// Whether `seq` would be accepted (new, or filling a gap), without recording it.
    pub fn is_new(&self, seq: u64) -> bool {
        match self.next {
            None => true,
            Some(next) if seq >= next => true,
            Some(_) if seq < self.first => false,
            Some(_) => self.missing.iter().any(|&(a, b)| a <= seq && seq <= b),
        }
    }

    pub fn on_packet(&mut self, seq: u64) -> SeqOutcome {
        self.counters.received += 1;
        let outcome = self.classify(seq);
        match outcome {
            SeqOutcome::Duplicate => self.counters.duplicates += 1,
            SeqOutcome::Stale => self.counters.stale += 1,
            _ => self.counters.accepted += 1,
        }
        outcome
    }

    /// A packet numbered `first..=last` (several messages, each with its own number): the
    /// packet is classified by its first number and the sequence goes on after its last.
    pub fn on_span(&mut self, first: u64, last: u64) -> SeqOutcome {
        let outcome = self.on_packet(first);
        let last = last.max(first);
        match outcome {
            SeqOutcome::InOrder | SeqOutcome::Gap { .. } => {
                self.next = Some(last.saturating_add(1));
            }
            SeqOutcome::Late => {
                for s in first + 1..=last.min(first + 1024) {
                    // Counted per sequence number, as gaps are.
                    if self.fill(s) {
                        self.counters.missing -= 1;
                        self.counters.late += 1;
                    }
                }
            }
            _ => {}
        }
        outcome
    }

    /// Takes `seq` out of the missing ranges; false if it was not missing.
    fn fill(&mut self, seq: u64) -> bool {
        let Some(i) = self.missing.iter().position(|&(a, b)| a <= seq && seq <= b) else {
            return false;
        };
        let (a, b) = self.missing[i];
        match (seq == a, seq == b) {
            (true, true) => {
                self.missing.remove(i);
            }
            (true, false) => self.missing[i].0 = seq + 1,
            (false, true) => self.missing[i].1 = seq - 1,
            (false, false) => {
                self.missing[i].1 = seq - 1;
                self.missing.insert(i + 1, (seq + 1, b));
            }
        }
        true
    }

    fn classify(&mut self, seq: u64) -> SeqOutcome {
        let Some(next) = self.next else {
            self.first = seq;
            self.next = Some(seq.saturating_add(1));
            return SeqOutcome::InOrder;
        };
        if seq == next {
            self.next = Some(next.saturating_add(1));
            return SeqOutcome::InOrder;
        }
        if seq > next {
            let (from, to) = (next, seq - 1);
            self.counters.gaps += 1;
            self.counters.gap_packets += to - from + 1;
            self.counters.missing += to - from + 1;
            self.missing.push_back((from, to));
            while self.missing.len() > self.max_ranges {
                let (a, b) = self.missing.pop_front().expect("non-empty");
                self.counters.given_up += b - a + 1;
                self.counters.missing -= b - a + 1;
            }
            self.next = Some(seq.saturating_add(1));
            return SeqOutcome::Gap { from, to };
        }
        if seq < self.first {
            return SeqOutcome::Stale;
        }
        // Older than expected: late if it fills a gap, else a duplicate.
        if !self.fill(seq) {
            return SeqOutcome::Duplicate;
        }
        self.counters.late += 1;
        self.counters.missing -= 1;
        SeqOutcome::Late
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_gap_late_duplicate() {
        let mut t = SequenceTracker::default();
        assert_eq!(t.on_packet(1), SeqOutcome::InOrder);
        assert_eq!(t.on_packet(2), SeqOutcome::InOrder);
        assert_eq!(t.on_packet(6), SeqOutcome::Gap { from: 3, to: 5 });
        assert!(t.is_new(4) && t.is_new(7) && !t.is_new(2));
        assert_eq!(t.on_packet(4), SeqOutcome::Late);
        assert!(!t.is_new(4));
        assert_eq!(t.missing_ranges().collect::<Vec<_>>(), [(3, 3), (5, 5)]);
        assert_eq!(t.on_packet(4), SeqOutcome::Duplicate);
        assert_eq!(t.on_packet(6), SeqOutcome::Duplicate);
        assert_eq!(t.on_packet(1), SeqOutcome::Duplicate);
        assert_eq!(t.on_packet(0), SeqOutcome::Stale);
        let c = t.counters();
        assert_eq!(
            (
                c.received,
                c.accepted,
                c.gaps,
                c.gap_packets,
                c.late,
                c.duplicates,
                c.missing
            ),
            (8, 4, 1, 3, 1, 3, 2)
        );
    }

    #[test]
    fn a_known_first_packet_makes_early_losses_gaps() {
        let mut t = SequenceTracker::default().starting_at(1);
        assert_eq!(t.on_packet(3), SeqOutcome::Gap { from: 1, to: 2 });
        assert_eq!(t.on_packet(1), SeqOutcome::Late);
        assert_eq!(t.on_packet(0), SeqOutcome::Stale);
        assert_eq!(t.missing_ranges().collect::<Vec<_>>(), [(2, 2)]);
        let mut u = SequenceTracker::default().starting_at(1);
        assert_eq!(u.on_packet(1), SeqOutcome::InOrder);
        assert_eq!(u.expected(), Some(2));
    }

    #[test]
    fn spans_of_several_messages() {
        let mut t = SequenceTracker::default();
        assert_eq!(t.on_span(10, 12), SeqOutcome::InOrder);
        assert_eq!(t.on_span(13, 13), SeqOutcome::InOrder);
        assert_eq!(t.on_span(17, 18), SeqOutcome::Gap { from: 14, to: 16 });
        assert_eq!(t.on_span(14, 15), SeqOutcome::Late);
        assert_eq!(t.missing_ranges().collect::<Vec<_>>(), [(16, 16)]);
        assert_eq!(t.counters().missing, 1);
        assert_eq!(t.on_span(10, 12), SeqOutcome::Duplicate);
        assert_eq!(t.expected(), Some(19));
    }

    #[test]
    fn open_gaps_are_bounded() {
        let mut t = SequenceTracker::new(2);
        for s in [1, 3, 5, 7] {
            t.on_packet(s);
        }
        assert_eq!(t.missing_ranges().collect::<Vec<_>>(), [(4, 4), (6, 6)]);
        assert_eq!(t.counters().given_up, 1);
        assert_eq!(
            t.on_packet(2),
            SeqOutcome::Duplicate,
            "given up gaps are not tracked"
        );
    }

    proptest::proptest! {
        /// Any arrival order of 1..=n with drops and duplicates: the counters reconcile.
        #[test]
        fn counters_reconcile(order in proptest::collection::vec(1u64..60, 0..200)) {
            let mut t = SequenceTracker::default();
            let mut distinct = std::collections::BTreeSet::new();
            let first = order.first().copied().unwrap_or(0);
            for &s in order.iter().filter(|&&s| s >= first) {
                let o = t.on_packet(s);
                proptest::prop_assert_eq!(o.accept(), distinct.insert(s));
            }
            let c = t.counters();
            proptest::prop_assert_eq!(c.received, c.accepted + c.duplicates + c.stale);
            proptest::prop_assert_eq!(c.accepted, distinct.len() as u64);
            proptest::prop_assert_eq!(c.gap_packets, c.late + c.missing + c.given_up);
        }
    }
}
