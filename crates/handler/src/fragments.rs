//! Snapshots sent in several messages. A venue with deep books (MOEX ASTS's order books)
//! splits one instrument's snapshot over consecutive messages of the snapshot line, flagged
//! by RouteFirst (7944) and LastFragment (893). Their entries are gathered here and the
//! snapshot is taken whole, with the last message's header.
//!
//! Venues send the flags as 0 and 1 on every message, or only where they are 1, or only
//! LastFragment; a flag left out is read from what is open: a message with neither flag
//! continues the instrument's open snapshot if there is one and is whole otherwise, and
//! LastFragment left out where RouteFirst came means more are to come. Where RouteFirst is
//! left out but the line does send flags (its template declares them, or a message carried
//! one), a message that continues nothing begins a snapshot
//! only right after one ended: otherwise it may be a later fragment of a snapshot whose
//! start was lost (a gap, the line joined mid-way, the entry cap), and is dropped.

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
    /// The last message taken ended a snapshot: its MsgSeqNum (`Some(None)`: unnumbered, or
    /// a sequence reset, after which any number follows). `None`: unknown, or mid-snapshot.
    ended: Option<Option<u64>>,
    /// A template declared RouteFirst or LastFragment, or a message carried one: the venue
    /// flags its fragments.
    flagged: bool,
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
            self.drop_open(stats);
        }
        // Right after the end of a snapshot, a message begins the next one.
        let after_end = match self.ended {
            Some(Some(p)) => msg_seq.is_none_or(|q| p.checked_add(1) == Some(q)),
            Some(None) => true,
            None => false,
        };
        self.flagged |= h.flags_declared || h.first_fragment.is_some() || h.last_fragment.is_some();
        let first = h
            .first_fragment
            .unwrap_or(!open_here && (after_end || !self.flagged));
        let last = h
            .last_fragment
            .unwrap_or(first && h.first_fragment.is_none() && !open_here);
        self.ended = last.then_some(msg_seq);
        if first && last {
            self.drop_open(stats);
            return Some((*h, entries));
        }
        stats.snapshot_fragments += 1;
        if first {
            self.drop_open(stats);
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
            self.drop_open(stats);
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
        self.drop_open(stats);
        // What was missed is unknown: the next message may be mid-snapshot.
        self.ended = None;
    }

    /// A sequence reset on the snapshot line: between snapshots, so the next message
    /// begins one, whatever its number.
    pub fn sequence_reset(&mut self, stats: &mut ChannelStats) {
        self.drop_open(stats);
        self.ended = Some(None);
    }

    fn drop_open(&mut self, stats: &mut ChannelStats) {
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
        // Flags as 0 and 1 on every message; only where 1; only LastFragment. Each
        // snapshot right after the one before it (MsgSeqNum 10.., 13.., 16..).
        for (k, (one, two, three)) in [
            ((Y, N), (N, N), (N, Y)),
            ((Y, None), (None, None), (None, Y)),
            ((None, N), (None, N), (None, Y)),
        ]
        .into_iter()
        .enumerate()
        {
            let seq = 10 + 3 * k as u64;
            let got = run(
                &mut f,
                &mut stats,
                &[
                    (7, one.0, one.1, seq, a),
                    (7, two.0, two.1, seq + 1, b),
                    (7, three.0, three.1, seq + 2, c),
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
        let next_cycle = |first, last| SnapshotHeader {
            rpt_seq: Some(10),
            ..header(8, first, last)
        };
        f.add(&header(8, Y, N), Some(20), a, &mut stats);
        // Only LastFragment sent, the last one lost: what follows may be any fragment of
        // the next snapshot, so it is dropped until a last fragment marks where the one
        // after it begins.
        assert!(f
            .add(&next_cycle(None, N), Some(22), a, &mut stats)
            .is_none());
        assert!(f
            .add(&next_cycle(None, Y), Some(23), c, &mut stats)
            .is_none());
        assert_eq!(stats.snapshot_fragments_dropped, 8);
        assert!(f
            .add(&next_cycle(None, N), Some(24), a, &mut stats)
            .is_none());
        let (_, e) = f
            .add(&next_cycle(None, Y), Some(25), c, &mut stats)
            .expect("completed");
        assert_eq!(e, [entry(2), entry(5)]);
        // Given up from outside (the line left, say): the next fragment finds none open.
        f.add(&header(7, Y, N), Some(30), a, &mut stats);
        f.give_up(&mut stats);
        assert!(f.add(&header(7, N, Y), Some(31), c, &mut stats).is_none());
        assert_eq!(stats.snapshot_fragments_dropped, 10);
    }

    /// A line whose template declares the flags, joined mid-snapshot: its first message, a
    /// middle fragment sent without flags, is not taken for a whole snapshot, although no
    /// flag has been seen yet.
    #[test]
    fn declared_flags_count_before_any_flag_is_seen() {
        let (a, b, c) = (&[entry(2)][..], &[entry(3)][..], &[entry(5)][..]);
        let declared = |security, first, last| SnapshotHeader {
            flags_declared: true,
            ..header(security, first, last)
        };
        let (mut f, mut stats) = (Fragments::default(), ChannelStats::default());
        assert!(f
            .add(&declared(7, None, None), Some(12), b, &mut stats)
            .is_none());
        assert!(f
            .add(&declared(7, None, Y), Some(13), c, &mut stats)
            .is_none());
        assert_eq!(stats.snapshot_fragments_dropped, 2);
        // The next snapshot, flagged where 1, is gathered whole.
        assert!(f
            .add(&declared(8, Y, None), Some(14), a, &mut stats)
            .is_none());
        let (_, e) = f
            .add(&declared(8, None, Y), Some(15), c, &mut stats)
            .expect("completed");
        assert_eq!(e, [entry(2), entry(5)]);
        // Undeclared, the same first message is a whole snapshot (a venue that never splits).
        let (mut f, mut stats) = (Fragments::default(), ChannelStats::default());
        assert!(f
            .add(&header(7, None, None), Some(12), b, &mut stats)
            .is_some());
    }

    /// Where the venue leaves RouteFirst out, a fragment whose start was lost (a gap, the
    /// line joined mid-way, the entry cap) is not taken as a new or whole snapshot: its book
    /// would lack the lost fragments' entries.
    #[test]
    fn a_fragment_whose_start_was_lost_is_not_taken_for_a_snapshot() {
        let (a, b, c) = (&[entry(2)][..], &[entry(3)][..], &[entry(5)][..]);
        // Flags only where 1, a middle lost; only LastFragment, a middle lost; only
        // LastFragment, the first ones lost (a gap, or the line joined mid-snapshot).
        for msgs in [
            &[
                (7, Y, None, 10, a),
                (7, None, None, 12, b),
                (7, None, Y, 13, c),
            ][..],
            &[
                (7, None, N, 9, a),
                (7, None, N, 10, a),
                (7, None, N, 12, b),
                (7, None, Y, 13, c),
            ],
            &[(7, None, N, 12, b), (7, None, Y, 13, c)],
        ] {
            let (mut f, mut stats) = (Fragments::default(), ChannelStats::default());
            // A whole snapshot ends at 8 (the line's start, for the ones joined at 9, 10).
            let seen = run(&mut f, &mut stats, &[(1, Y, Y, 8, a)]);
            assert_eq!(seen.len(), 1);
            let got = run(&mut f, &mut stats, msgs);
            assert!(got.is_empty(), "{msgs:?}: {got:?}");
            assert!(stats.snapshot_fragments_dropped >= 2, "{msgs:?}");
            // The snapshot after the last fragment is taken.
            let got = run(&mut f, &mut stats, &[(9, None, Y, 14, c)]);
            assert_eq!(got, [c.to_vec()], "{msgs:?}");
        }
        // Flags only where 1, the snapshot cut at the cap: its later fragments are dropped.
        let (mut f, mut stats) = (Fragments::default(), ChannelStats::default());
        let many = vec![entry(1); MAX_ENTRIES];
        let got = run(
            &mut f,
            &mut stats,
            &[
                (7, Y, None, 1, a),
                (7, None, None, 2, &many),
                (7, None, None, 3, b),
                (7, None, Y, 4, c),
            ],
        );
        assert!(got.is_empty(), "{}", got.len());
        assert_eq!(stats.snapshot_fragments_dropped, 3);
        // A venue that never flags: every message is whole, lost ones or not.
        let (mut f, mut stats) = (Fragments::default(), ChannelStats::default());
        let got = run(
            &mut f,
            &mut stats,
            &[
                (7, None, None, 1, a),
                (8, None, None, 3, b),
                (8, None, None, 4, c),
            ],
        );
        assert_eq!(got, [a.to_vec(), b.to_vec(), c.to_vec()]);
        // A sequence reset comes between snapshots: the next message begins one.
        let (mut f, mut stats) = (Fragments::default(), ChannelStats::default());
        run(&mut f, &mut stats, &[(7, None, N, 5, a)]);
        f.sequence_reset(&mut stats);
        let got = run(
            &mut f,
            &mut stats,
            &[(8, None, N, 1, a), (8, None, Y, 2, c)],
        );
        assert_eq!(got, [vec![entry(2), entry(5)]]);
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
