//! Sequence numbers on both ends, shared by every backend: the publisher's [`Sequencer`]
//! stamps envelopes, the subscriber's [`Accounting`] filters them and counts what it missed.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::{now_ns, Envelope, Record, Securities};

/// Security ids below this are counted in a flat table (at most 512 KiB per publisher and
/// record type, grown only as far as the highest id seen), the others in a map.
const DENSE_IDS: u32 = 1 << 16;

/// Numbers a publisher's records of one type: `seq` over all of them, `security_seq` per
/// security. One indexed load per record for ids below 65536, a map lookup above; nothing is
/// allocated once every security has been seen.
#[derive(Debug, Clone)]
pub struct Sequencer {
    publisher: u32,
    seq: u64,
    dense: Vec<u64>,
    sparse: HashMap<u32, u64, BuildHasherDefault<IdHasher>>,
}

impl Sequencer {
    /// Numbers for a publisher with this id ([`Bus::id`](crate::Bus::id)).
    pub fn new(publisher: u32) -> Self {
        Sequencer {
            publisher,
            seq: 0,
            dense: Vec::new(),
            sparse: HashMap::default(),
        }
    }

    /// The envelope of the next record, stamped with the time now.
    #[inline]
    pub fn stamp<R: Record>(&mut self, record: &R) -> Envelope<R> {
        self.seq += 1;
        let security_seq = self.next_security_seq(record.security_id());
        Envelope {
            seq: self.seq,
            security_seq,
            sent_ns: now_ns(),
            publisher: self.publisher,
            _pad: 0,
            record: *record,
        }
    }

    #[inline]
    fn next_security_seq(&mut self, id: u32) -> u64 {
        match self.dense.get_mut(id as usize) {
            Some(n) => {
                *n += 1;
                *n
            }
            None => self.next_security_seq_slow(id),
        }
    }

    /// A security id past the table: grow the table to it, or count it in the map.
    #[cold]
    #[inline(never)]
    fn next_security_seq_slow(&mut self, id: u32) -> u64 {
        let n = if id < DENSE_IDS {
            self.dense.resize(id as usize + 1, 0);
            &mut self.dense[id as usize]
        } else {
            self.sparse.entry(id).or_insert(0)
        };
        *n += 1;
        *n
    }

    /// Seq of the last record stamped (0 before the first).
    pub fn last_seq(&self) -> u64 {
        self.seq
    }

    /// The publisher id it stamps.
    pub fn publisher(&self) -> u32 {
        self.publisher
    }
}

/// Security ids are already well spread; one multiply mixes them enough for the map.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0 ^ b as u64);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        let h = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 32);
    }
}

/// A subscriber's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Records returned by `try_recv`.
    pub received: u64,
    /// Records dropped by the security filter.
    pub filtered_out: u64,
    /// Seq gaps between consecutive records of the same publisher: records dropped from our
    /// full queue, or lost on the way.
    pub missed: u64,
    /// `first seq - 1` per publisher: records published before the first one we saw, either
    /// before we connected or dropped before our first read. For a late joiner, the records
    /// published before it joined that its current state does not hold (superseded by a later
    /// record of the same security).
    pub missed_at_start: u64,
    /// Of `received`, the records of a late joiner's current state (the last record of each
    /// security published before it joined).
    pub snapshot: u64,
    /// Records seen again, dropped: a late joiner's live copies of records its current state
    /// already holds or superseded.
    pub duplicates: u64,
}

/// The subscriber's side: the security filter and the counters, from the envelopes it sees
/// (matching or not). Every backend runs each envelope it takes through [`Accounting::accept`].
#[derive(Debug, Clone)]
pub struct Accounting {
    filter: Securities,
    counters: Counters,
    /// Last seq seen per publisher; publishers are few, so a Vec beats a map.
    last_seq: Vec<(u32, u64)>,
}

impl Accounting {
    /// Accounting for a subscriber of `securities`.
    pub fn new(securities: Securities) -> Self {
        Accounting {
            filter: securities.normalized(),
            counters: Counters::default(),
            last_seq: Vec::new(),
        }
    }

    /// Counts `env` and says whether it passes the filter (to be handed to the caller). A seq
    /// at or below the last one seen from its publisher is a duplicate: counted, refused.
    #[inline]
    pub fn accept<R: Record>(&mut self, env: &Envelope<R>) -> bool {
        if !self.track(env.publisher, env.seq, false) {
            self.counters.duplicates += 1;
            return false;
        }
        self.filter(env)
    }

    /// [`Self::accept`] for a record of a late joiner's current state, taken in seq order
    /// before any live record: the seqs it skips were superseded before the subscriber
    /// joined, and count in `missed_at_start`, not `missed`.
    pub fn accept_snapshot<R: Record>(&mut self, env: &Envelope<R>) -> bool {
        if !self.track(env.publisher, env.seq, true) {
            self.counters.duplicates += 1;
            return false;
        }
        let accepted = self.filter(env);
        if accepted {
            self.counters.snapshot += 1;
        }
        accepted
    }

    #[inline]
    fn filter<R: Record>(&mut self, env: &Envelope<R>) -> bool {
        if self.filter.matches_sorted(env.record.security_id()) {
            self.counters.received += 1;
            true
        } else {
            self.counters.filtered_out += 1;
            false
        }
    }

    /// Notes `seq` from `publisher`: a jump over unseen numbers counts them missed (or, in a
    /// snapshot, missed at start). Returns false for a seq at or below the last one seen.
    #[inline]
    fn track(&mut self, publisher: u32, seq: u64, snapshot: bool) -> bool {
        match self.last_seq.iter_mut().find(|(id, _)| *id == publisher) {
            Some((_, last)) => {
                if seq <= *last {
                    return false;
                }
                let gap = seq - *last - 1;
                if snapshot {
                    self.counters.missed_at_start += gap;
                } else {
                    self.counters.missed += gap;
                }
                *last = seq;
            }
            None => {
                self.counters.missed_at_start += seq.saturating_sub(1);
                self.last_seq.push((publisher, seq));
            }
        }
        true
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Highest seq seen from any publisher, filtered-out records included (0 if none).
    pub fn seen_up_to(&self) -> u64 {
        self.last_seq.iter().map(|&(_, s)| s).max().unwrap_or(0)
    }

    /// Highest seq seen from `publisher`, filtered-out records included (0 if none).
    pub fn seen_from(&self, publisher: u32) -> u64 {
        self.last_seq
            .iter()
            .find(|(id, _)| *id == publisher)
            .map_or(0, |&(_, s)| s)
    }

    /// The (normalized) security filter.
    pub fn securities(&self) -> &Securities {
        &self.filter
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestRecord;

    fn env(publisher: u32, seq: u64, security_id: u32) -> Envelope<TestRecord> {
        Envelope {
            seq,
            security_seq: 0,
            sent_ns: 0,
            publisher,
            _pad: 0,
            record: TestRecord {
                security_id,
                ..TestRecord::default()
            },
        }
    }

    #[test]
    fn sequencer_numbers_per_type_and_per_security() {
        let mut s = Sequencer::new(42);
        let seqs: Vec<(u64, u64)> = [5, 6, 5, 5, 1_000_000, 6, 1_000_000, 65_535, 65_536]
            .iter()
            .map(|&id| {
                let e = s.stamp(&TestRecord {
                    security_id: id,
                    ..TestRecord::default()
                });
                assert_eq!((e.publisher, e.record.security_id), (42, id));
                (e.seq, e.security_seq)
            })
            .collect();
        assert_eq!(
            seqs,
            [
                (1, 1),
                (2, 1),
                (3, 2),
                (4, 3),
                (5, 1),
                (6, 2),
                (7, 2),
                (8, 1),
                (9, 1)
            ]
        );
        assert_eq!(s.last_seq(), 9);
    }

    #[test]
    fn gaps_are_counted_per_publisher() {
        let mut a = Accounting::new(Securities::Only(vec![3, 1, 3]));
        assert_eq!(a.securities(), &Securities::Only(vec![1, 3]));
        // Publisher 7 from seq 4 (3 missed at start), a gap of 2; publisher 9 from 1.
        let seen: Vec<bool> = [(7, 4, 1), (9, 1, 2), (7, 5, 2), (7, 8, 3), (9, 2, 3)]
            .iter()
            .map(|&(p, s, id)| a.accept(&env(p, s, id)))
            .collect();
        assert_eq!(seen, [true, false, false, true, true]);
        let c = a.counters();
        assert_eq!(
            (c.received, c.filtered_out, c.missed, c.missed_at_start),
            (3, 2, 2, 3)
        );
        assert_eq!((a.seen_from(7), a.seen_from(9), a.seen_from(1)), (8, 2, 0));
        assert_eq!(a.seen_up_to(), 8);
        // An old seq moves nothing back: a duplicate, refused.
        assert!(!a.accept(&env(7, 6, 1)));
        assert_eq!((a.seen_from(7), a.counters().missed), (8, 2));
        assert_eq!((a.counters().received, a.counters().duplicates), (3, 1));
    }

    #[test]
    fn a_late_joiners_snapshot_then_the_live_stream() {
        // 10 published on securities 1-3; the last of each: seqs 6 (3), 9 (1), 10 (2).
        let mut a = Accounting::new(Securities::Only(vec![1, 2]));
        let snap: Vec<bool> = [(6, 3), (9, 1), (10, 2)]
            .iter()
            .map(|&(s, id)| a.accept_snapshot(&env(7, s, id)))
            .collect();
        assert_eq!(snap, [false, true, true]);
        // Live copies of 9 and 10 arrive too, then 11 and 12.
        let live: Vec<bool> = [(9, 1), (10, 2), (11, 1), (12, 3)]
            .iter()
            .map(|&(s, id)| a.accept(&env(7, s, id)))
            .collect();
        assert_eq!(live, [false, false, true, false]);
        let c = a.counters();
        assert_eq!(
            (c.received, c.filtered_out, c.snapshot, c.duplicates),
            (3, 2, 2, 2)
        );
        assert_eq!((c.missed, c.missed_at_start), (0, 7));
        // published = received + filtered out + missed + missed at start
        assert_eq!(
            12,
            c.received + c.filtered_out + c.missed + c.missed_at_start
        );
    }
}
