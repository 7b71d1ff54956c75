//! Snapshots sent in several messages. A venue with deep books (MOEX ASTS's order books)
//! splits one instrument's snapshot over consecutive messages of the snapshot line: RouteFirst
//! (7944) 1 on the first, LastFragment (893) 1 on the last. Their entries are gathered here
//! and the snapshot is taken whole, with the last message's header.

use fastfeed_events::{Event, SnapshotHeader};

use crate::stats::ChannelStats;

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
        if h.first_fragment && h.last_fragment {
            if self.open.take().is_some() {
                stats.snapshot_fragments_dropped += 1;
            }
            return Some(entries);
        }
        stats.snapshot_fragments += 1;
        if h.first_fragment {
            if self.open.is_some() {
                stats.snapshot_fragments_dropped += 1;
            }
            self.open = Some(h.security);
            self.entries.clear();
        } else if self.open != Some(h.security) {
            // Whatever was open is broken too: this fragment belongs to another snapshot.
            self.open = None;
            stats.snapshot_fragments_dropped += 1;
            return None;
        }
        self.entries.extend_from_slice(entries);
        if h.last_fragment {
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

    fn header(security: u64, first: bool, last: bool) -> SnapshotHeader {
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

    #[test]
    fn fragments_are_gathered_and_strays_counted() {
        let mut f = Fragments::default();
        let mut stats = ChannelStats::default();
        let whole = [entry(1)];
        assert_eq!(
            f.add(&header(1, true, true), &whole, &mut stats),
            Some(&whole[..])
        );
        let (a, b, c) = ([entry(2)], [entry(3), entry(4)], [entry(5)]);
        assert_eq!(f.add(&header(7, true, false), &a, &mut stats), None);
        assert_eq!(f.add(&header(7, false, false), &b, &mut stats), None);
        let got = f
            .add(&header(7, false, true), &c, &mut stats)
            .map(<[_]>::to_vec);
        assert_eq!(got, Some(vec![entry(2), entry(3), entry(4), entry(5)]));
        assert_eq!(
            (stats.snapshot_fragments, stats.snapshot_fragments_dropped),
            (3, 0)
        );
        // A fragment whose first was never seen, then one of another instrument mid-way.
        assert_eq!(f.add(&header(7, false, true), &c, &mut stats), None);
        assert_eq!(f.add(&header(8, true, false), &a, &mut stats), None);
        assert_eq!(f.add(&header(9, false, true), &c, &mut stats), None);
        assert_eq!(f.add(&header(8, false, true), &c, &mut stats), None);
        assert_eq!(stats.snapshot_fragments_dropped, 3);
    }
}
