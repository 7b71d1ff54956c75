//! Snapshots sent in several messages. A venue with deep books (MOEX ASTS's order books)
//! splits one instrument's snapshot over consecutive messages of the snapshot line, flagged
//! by RouteFirst (7944) and LastFragment (893). Their entries are gathered here and the
//! snapshot is taken whole, with the last message's header.
//!
//! Venues send the flags as 0 and 1 on every message, or only where they are 1, or only
//! LastFragment; a flag left out is read from what is open: a message with neither flag
//! continues the instrument's open snapshot if there is one and is whole otherwise, and
//! LastFragment left out where RouteFirst came means more are to come.

use fastfeed_events::{Event, SnapshotHeader};

use crate::stats::ChannelStats;

/// The most entries a snapshot gathered from fragments may hold: deep order books have tens
/// of thousands; past this the fragments are dropped (and counted), so a feed that never
/// sends the last fragment cannot grow memory without bound.
pub(crate) const MAX_ENTRIES: usize = 1 << 18;

/// The snapshot being gathered: what its fragments must share, and where the last one was.
struct Open {
    security: u64,
    rpt_seq: Option<u64>,
    last_processed: Option<u64>,
    msg_seq: Option<u64>,
    depth: Option<u32>,
}

/// The fragments of the snapshot being gathered.
#[derive(Default)]
pub(crate) struct Fragments {
    open: Option<Open>,
    entries: Vec<Event>,
}

impl Fragments {
    /// Takes one snapshot message's header, MsgSeqNum and entries. Returns the whole
    /// snapshot's header and entries when this message completes one (at once for a message
    /// that is a whole snapshot); `None` while more are to come, or for a fragment that does
    /// not follow the open one (a lost or undecodable packet between them, another cycle's
    /// fragment, none open), which is dropped with the open snapshot, and counted.
    pub fn add<'a>(
        &'a mut self,
        h: &SnapshotHeader,
        msg_seq: Option<u64>,
        entries: &'a [Event],
        stats: &mut ChannelStats,
    ) -> Option<(SnapshotHeader, &'a [Event])> {
        // A fragment continues the open snapshot only as its next message: the same
        // instrument, RptSeq and LastMsgSeqNumProcessed, the next MsgSeqNum where both have one.
        let open_here = self.open.as_ref().is_some_and(|o| {
            o.security == h.security
                && o.rpt_seq == h.rpt_seq
                && o.last_processed == h.last_msg_seq_processed
                && match (o.msg_seq, msg_seq) {
                    (Some(p), Some(q)) => p.checked_add(1) == Some(q),
                    _ => true,
                }
        });
        if !open_here {
            self.give_up(stats);
        }
        let first = h.first_fragment.unwrap_or(!open_here);
        let last = h
            .last_fragment
            .unwrap_or(h.first_fragment.is_none() && !open_here);
        if first && last {
            self.give_up(stats);
            return Some((*h, entries));
        }
        stats.snapshot_fragments += 1;
        if first {
            self.give_up(stats);
            self.entries.clear();
            self.open = Some(Open {
                security: h.security,
                rpt_seq: h.rpt_seq,
                last_processed: h.last_msg_seq_processed,
                msg_seq,
                depth: h.depth,
            });
        } else if !open_here {
            // A fragment with no first one before it.
            stats.snapshot_fragments_dropped += 1;
            return None;
        }
        if self.entries.len() + entries.len() > MAX_ENTRIES {
            self.give_up(stats);
            self.entries = Vec::new();
            return None;
        }
        self.entries.extend_from_slice(entries);
        let o = self.open.as_mut().expect("a snapshot is open");
        o.msg_seq = msg_seq;
        o.depth = o.depth.max(h.depth);
        if !last {
            return None;
        }
        let depth = o.depth;
        self.open = None;
        Some((SnapshotHeader { depth, ..*h }, &self.entries))
    }

    /// Drops the open snapshot, if any (the line left or joined, a packet that did not
    /// decode, a sequence reset): its fragments cannot be completed.
    pub fn give_up(&mut self, stats: &mut ChannelStats) {
        if self.open.take().is_some() {
            stats.snapshot_fragments_dropped += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fastfeed_events::{BookEntry, Side};

    const Y: Option<bool> = Some(true);
    const N: Option<bool> = Some(false);

    fn header(security: u64, first: Option<bool>, last: Option<bool>) -> SnapshotHeader {
        SnapshotHeader {
            security,
            rpt_seq: Some(9),
            first_fragment: first,
            last_fragment: last,
            ..SnapshotHeader::default()
        }
    }

    fn entry(size: i64) -> Event {
        Event::SnapshotEntry(BookEntry {
            side: Side::Bid,
            price: None,
            size,
            orders: None,
            level: None,
            order_id: Some(size as u64),
        })
    }

    /// One snapshot message: security, RouteFirst, LastFragment, MsgSeqNum, entries.
    type Msg<'a> = (u64, Option<bool>, Option<bool>, u64, &'a [Event]);

    /// Feeds the messages in turn; the entries of each snapshot
    /// completed.
    fn run(f: &mut Fragments, stats: &mut ChannelStats, msgs: &[Msg<'_>]) -> Vec<Vec<Event>> {
        let mut done = Vec::new();
        for &(sec, first, last, seq, entries) in msgs {
            if let Some((h, e)) = f.add(&header(sec, first, last), Some(seq), entries, stats) {
                assert_eq!(h.security, sec);
                done.push(e.to_vec());
            }
        }
        done
    }

    #[test]
    fn fragments_are_gathered_in_every_flag_convention() {
        let (mut f, mut stats) = (Fragments::default(), ChannelStats::default());
        let (a, b, c) = (&[entry(2)][..], &[entry(3), entry(4)][..], &[entry(5)][..]);
        let whole = vec![entry(2), entry(3), entry(4), entry(5)];
        // Flags as 0 and 1 on every message; only where 1; only LastFragment.
        for (one, two, three) in [
            ((Y, N), (N, N), (N, Y)),
            ((Y, None), (None, None), (None, Y)),
            ((None, N), (None, N), (None, Y)),
        ] {
            let got = run(
                &mut f,
                &mut stats,
                &[
                    (7, one.0, one.1, 10, a),
                    (7, two.0, two.1, 11, b),
                    (7, three.0, three.1, 12, c),
                ],
            );
            assert_eq!(
                got,
                std::slice::from_ref(&whole),
                "{one:?} {two:?} {three:?}"
            );
        }
        // Whole snapshots, flagged or not.
        let got = run(
            &mut f,
            &mut stats,
            &[(1, Y, Y, 20, a), (1, None, None, 21, b)],
        );
        assert_eq!(got, [a.to_vec(), b.to_vec()]);
        assert_eq!(
            (stats.snapshot_fragments, stats.snapshot_fragments_dropped),
            (9, 0)
        );
    }

    #[test]
    fn a_fragment_that_does_not_follow_is_dropped_with_the_open_snapshot() {
        let (mut f, mut stats) = (Fragments::default(), ChannelStats::default());
        let (a, c) = (&[entry(2)][..], &[entry(5)][..]);
        // A lost middle (MsgSeqNum 11 missing), a last with no first, another instrument
        // mid-way, another cycle's fragment (other RptSeq).
        let got = run(
            &mut f,
            &mut stats,
            &[
                (7, Y, N, 10, a),
                (7, N, Y, 12, c),
                (7, N, Y, 13, c),
                (8, Y, N, 14, a),
                (9, N, Y, 15, c),
            ],
        );
        assert!(got.is_empty(), "{got:?}");
        // Each open snapshot given up, and each fragment that found none open.
        assert_eq!(stats.snapshot_fragments_dropped, 5);
        let mut other_cycle = header(8, None, N);
        f.add(&header(8, Y, N), Some(20), a, &mut stats);
        other_cycle.rpt_seq = Some(10);
        // Only LastFragment sent, the last one lost: the next cycle's first starts afresh.
        assert!(f.add(&other_cycle, Some(21), a, &mut stats).is_none());
        assert_eq!(stats.snapshot_fragments_dropped, 6);
        let mut last = header(8, None, Y);
        last.rpt_seq = Some(10);
        let (_, e) = f.add(&last, Some(22), c, &mut stats).expect("completed");
        assert_eq!(e, [entry(2), entry(5)]);
        // Given up from outside (the line left, say): the next fragment finds none open.
        f.add(&header(7, Y, N), Some(30), a, &mut stats);
        f.give_up(&mut stats);
        assert!(f.add(&header(7, N, Y), Some(31), c, &mut stats).is_none());
        assert_eq!(stats.snapshot_fragments_dropped, 8);
    }

    #[test]
    fn a_snapshot_that_never_ends_is_dropped_at_the_cap() {
        let (mut f, mut stats) = (Fragments::default(), ChannelStats::default());
        let many = vec![entry(1); 1 << 12];
        assert!(f.add(&header(7, Y, N), None, &many, &mut stats).is_none());
        for _ in 1..MAX_ENTRIES / many.len() {
            assert!(f.add(&header(7, N, N), None, &many, &mut stats).is_none());
        }
        assert_eq!(f.entries.len(), MAX_ENTRIES);
        assert_eq!(stats.snapshot_fragments_dropped, 0);
        assert!(f.add(&header(7, N, Y), None, &many, &mut stats).is_none());
        assert_eq!(
            (stats.snapshot_fragments_dropped, f.entries.capacity()),
            (1, 0)
        );
        // The next snapshot is gathered as usual, with the deepest MarketDepth of its parts.
        let one = [entry(2)];
        let mut first = header(7, Y, N);
        first.depth = Some(10);
        assert!(f.add(&first, None, &one, &mut stats).is_none());
        let (h, e) = f
            .add(&header(7, N, Y), None, &one, &mut stats)
            .expect("completed");
        assert_eq!((e.len(), h.depth), (2, Some(10)));
    }
}
