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

/// The fragments of the snapshot being gathered.
#[derive(Default)]
pub(crate) struct Fragments {
    /// The instrument whose first fragment came, until its last.
    open: Option<u64>,
    entries: Vec<Event>,
}

impl Fragments {
    /// Takes one snapshot message's header and entries. Returns the whole snapshot's entries
    /// when this message completes one (at once for a message that is a whole snapshot);
    /// `None` while more are to come, or for a fragment with no first one before it (lost,
    /// or the line joined in the middle), which is counted and dropped.
    pub fn add<'a>(
        &'a mut self,
        h: &SnapshotHeader,
        entries: &'a [Event],
        stats: &mut ChannelStats,
    ) -> Option<&'a [Event]> {
        let open_here = self.open == Some(h.security);
        let first = h.first_fragment.unwrap_or(!open_here);
        let last = h
            .last_fragment
            .unwrap_or(h.first_fragment.is_none() && !open_here);
        if first && last {
            if self.open.take().is_some() {
                stats.snapshot_fragments_dropped += 1;
            }
            return Some(entries);
        }
        stats.snapshot_fragments += 1;
        if first {
            if self.open.is_some() {
                stats.snapshot_fragments_dropped += 1;
            }
            self.open = Some(h.security);
            self.entries.clear();
        } else if !open_here {
            // Whatever was open is broken too: this fragment belongs to another snapshot.
            self.open = None;
            stats.snapshot_fragments_dropped += 1;
            return None;
        }
        if self.entries.len() + entries.len() > MAX_ENTRIES {
            self.open = None;
            self.entries = Vec::new();
            stats.snapshot_fragments_dropped += 1;
            return None;
        }
        self.entries.extend_from_slice(entries);
        if last {
            self.open = None;
            return Some(&self.entries);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fastfeed_events::{BookEntry, Side};

    fn header(security: u64, first: Option<bool>, last: Option<bool>) -> SnapshotHeader {
        SnapshotHeader {
            security,
            rpt_seq: Some(9),
            last_msg_seq_processed: None,
            tot_num_reports: None,
            depth: None,
            first_fragment: first,
            last_fragment: last,
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

    const Y: Option<bool> = Some(true);
    const N: Option<bool> = Some(false);

    #[test]
    fn fragments_are_gathered_and_strays_counted() {
        let mut f = Fragments::default();
        let mut stats = ChannelStats::default();
        let whole = [entry(1)];
        assert_eq!(
            f.add(&header(1, Y, Y), &whole, &mut stats),
            Some(&whole[..])
        );
        assert_eq!(
            f.add(&header(1, None, None), &whole, &mut stats),
            Some(&whole[..])
        );
        let (a, b, c) = ([entry(2)], [entry(3), entry(4)], [entry(5)]);
        let gathered = Some(vec![entry(2), entry(3), entry(4), entry(5)]);
        // Flags as 0 and 1 on every message; only where 1; only LastFragment.
        for (one, two, three) in [
            ((Y, N), (N, N), (N, Y)),
            ((Y, None), (None, None), (None, Y)),
            ((None, N), (None, N), (None, Y)),
        ] {
            assert_eq!(f.add(&header(7, one.0, one.1), &a, &mut stats), None);
            assert_eq!(f.add(&header(7, two.0, two.1), &b, &mut stats), None);
            let got = f.add(&header(7, three.0, three.1), &c, &mut stats);
            assert_eq!(
                got.map(<[_]>::to_vec),
                gathered,
                "{one:?} {two:?} {three:?}"
            );
        }
        assert_eq!(
            (stats.snapshot_fragments, stats.snapshot_fragments_dropped),
            (9, 0)
        );
        // A fragment whose first was never seen, then one of another instrument mid-way.
        assert_eq!(f.add(&header(7, N, Y), &c, &mut stats), None);
        assert_eq!(f.add(&header(8, Y, N), &a, &mut stats), None);
        assert_eq!(f.add(&header(9, N, Y), &c, &mut stats), None);
        assert_eq!(f.add(&header(8, N, Y), &c, &mut stats), None);
        assert_eq!(stats.snapshot_fragments_dropped, 3);
    }

    #[test]
    fn a_snapshot_that_never_ends_is_dropped_at_the_cap() {
        let mut f = Fragments::default();
        let mut stats = ChannelStats::default();
        let many = vec![entry(1); 1 << 12];
        assert_eq!(f.add(&header(7, Y, N), &many, &mut stats), None);
        for _ in 1..MAX_ENTRIES / many.len() {
            assert_eq!(f.add(&header(7, N, N), &many, &mut stats), None);
        }
        assert_eq!(f.entries.len(), MAX_ENTRIES);
        assert_eq!(stats.snapshot_fragments_dropped, 0);
        assert_eq!(f.add(&header(7, N, Y), &many, &mut stats), None);
        assert_eq!(
            (stats.snapshot_fragments_dropped, f.entries.capacity()),
            (1, 0)
        );
        // The next snapshot is gathered as usual.
        let one = [entry(2)];
        assert_eq!(f.add(&header(7, Y, N), &one, &mut stats), None);
        assert_eq!(
            f.add(&header(7, N, Y), &one, &mut stats).map(<[_]>::len),
            Some(2)
        );
    }
}
