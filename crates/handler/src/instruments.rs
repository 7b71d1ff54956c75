//! Per-instrument state: the book, its RptSeq, and recovery. A live instrument applies each
//! update whose RptSeq is the next one; a gap in RptSeq (or an update its book cannot apply)
//! makes it stale; a stale or never synchronized instrument queues its updates until a
//! snapshot comes, takes the snapshot's book, applies the queued updates after the
//! snapshot's RptSeq, and is live again.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use fastfeed_book::Book;
use fastfeed_events::{BookKind, Event, SnapshotHeader};

use crate::output::{BookState, BookView, Output};
use crate::stats::{ChannelStats, StalePeriod};

#[derive(Debug, Clone, Copy)]
struct Queued {
    msg_seq: Option<u64>,
    event: Event,
}

impl Queued {
    fn rpt(&self) -> Option<u64> {
        self.event.instrument().and_then(|(_, r)| r)
    }
}

#[derive(Debug, Clone)]
struct Instrument {
    book: Book,
    state: BookState,
    rpt: Option<u64>,
    msg_seq: Option<u64>,
    queue: Vec<Queued>,
    stale_from_ns: u64,
    stale_from_msgs: u64,
    touched: bool,
}

/// Security ids are integers the exchange assigns: a multiply-xorshift mix spreads them
/// well enough, at a fraction of SipHash's cost (no untrusted keys pick the buckets here:
/// an instrument must come with a valid message to be added).
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }

    #[inline]
    fn write_u64(&mut self, k: u64) {
        let x = (self.0 ^ k).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = x ^ (x >> 32);
    }
}

type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

fn new_instrument(snapshots: bool) -> Instrument {
    Instrument {
        book: Book::default(),
        state: if snapshots {
            BookState::Unknown
        } else {
            BookState::Live
        },
        rpt: None,
        msg_seq: None,
        queue: Vec::new(),
        stale_from_ns: 0,
        stale_from_msgs: 0,
        touched: false,
    }
}

/// Stale periods kept for reports (the counters in [`ChannelStats`] cover all of them).
const PERIODS_KEPT: usize = 4096;

/// The instruments of one channel.
pub(crate) struct Instruments {
    map: IdMap<Instrument>,
    kind: BookKind,
    max_queue: usize,
    /// Whether a snapshot line exists: without one, a new instrument starts live from an
    /// empty book.
    snapshots: bool,
    touched: Vec<u64>,
    replay: Vec<Queued>,
    check: Book,
    pub periods: Vec<StalePeriod>,
}

impl Instruments {
    pub fn new(kind: BookKind, max_queue: usize, snapshots: bool) -> Instruments {
        Instruments {
            map: IdMap::with_capacity_and_hasher(64, Default::default()),
            kind,
            max_queue: max_queue.max(1),
            snapshots,
            touched: Vec::with_capacity(64),
            replay: Vec::new(),
            check: Book::default(),
            periods: Vec::new(),
        }
    }

    /// Instruments known, and of them those not live.
    pub fn counts(&self) -> (usize, usize) {
        let waiting = self
            .map
            .values()
            .filter(|i| i.state != BookState::Live)
            .count();
        (self.map.len(), waiting)
    }

    /// Whether any instrument waits for a snapshot.
    pub fn need_snapshot(&self) -> bool {
        self.map.values().any(|i| i.state != BookState::Live)
    }

    /// The book of an instrument, its state, RptSeq and last MsgSeqNum.
    pub fn view(&self, security: u64) -> Option<BookView<'_>> {
        self.map.get(&security).map(|i| BookView {
            security,
            rpt_seq: i.rpt,
            msg_seq_num: i.msg_seq,
            state: i.state,
            book: &i.book,
            from_snapshot: false,
        })
    }

    /// Every instrument's security id.
    pub fn securities(&self) -> impl Iterator<Item = u64> + '_ {
        self.map.keys().copied()
    }

    fn get(&mut self, security: u64) -> &mut Instrument {
        let snapshots = self.snapshots;
        self.map
            .entry(security)
            .or_insert_with(|| new_instrument(snapshots))
    }

    fn touch(&mut self, security: u64) {
        let i = self.map.get_mut(&security).expect("known instrument");
        if !i.touched {
            i.touched = true;
            self.touched.push(security);
        }
    }

    /// One incremental event of an instrument.
    pub fn on_event<O: Output>(
        &mut self,
        event: &Event,
        msg_seq: Option<u64>,
        now_ns: u64,
        stats: &mut ChannelStats,
        out: &mut O,
    ) {
        let Some((security, rpt)) = event.instrument() else {
            return;
        };
        let kind = self.kind;
        let snapshots = self.snapshots;
        // One lookup on the hot path (a live instrument's next update).
        let inst = self
            .map
            .entry(security)
            .or_insert_with(|| new_instrument(snapshots));
        let live = inst.state == BookState::Live;
        let gap = match (rpt, inst.rpt) {
            (Some(r), Some(last)) if live && r <= last => {
                stats.old_updates += 1;
                return;
            }
            (Some(r), Some(last)) => live && r > last + 1,
            _ => false,
        };
        if !live || gap {
            self.queue_event(security, rpt, event, msg_seq, gap, now_ns, stats, out);
            return;
        }
        if rpt.is_some() {
            inst.rpt = rpt;
        }
        inst.msg_seq = msg_seq.or(inst.msg_seq);
        match event {
            Event::Book(u) => {
                if u.depth.is_some() && u.depth != inst.book.depth() {
                    inst.book.set_depth(u.depth);
                }
                match inst.book.apply(kind, u.action, &u.entry) {
                    Ok(()) => stats.updates += 1,
                    Err(_) => {
                        stats.book_errors += 1;
                        self.go_stale(security, now_ns, stats);
                        return;
                    }
                }
            }
            Event::Trade(t) => {
                stats.trades += 1;
                out.trade(t, msg_seq);
                return;
            }
            Event::EmptyBook { .. } => inst.book.clear(),
            _ => return,
        }
        if !inst.touched {
            inst.touched = true;
            self.touched.push(security);
        }
    }

    /// An update of an instrument that waits for a snapshot (or whose RptSeq just jumped,
    /// `gap`): queued until the snapshot comes.
    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn queue_event<O: Output>(
        &mut self,
        security: u64,
        rpt: Option<u64>,
        event: &Event,
        msg_seq: Option<u64>,
        gap: bool,
        now_ns: u64,
        stats: &mut ChannelStats,
        out: &mut O,
    ) {
        if gap {
            stats.rpt_gaps += 1;
            self.go_stale(security, now_ns, stats);
        }
        // A trade happened whatever the book's state: handed on now, and queued only for
        // its RptSeq.
        let queued = match event {
            Event::Trade(t) => {
                stats.trades += 1;
                out.trade(t, msg_seq);
                Event::Other {
                    security,
                    rpt_seq: rpt,
                }
            }
            e => *e,
        };
        let max_queue = self.max_queue;
        let inst = self.get(security);
        if inst.queue.len() >= max_queue {
            inst.queue.remove(0);
            stats.queue_dropped += 1;
        }
        inst.queue.push(Queued {
            msg_seq,
            event: queued,
        });
        stats.queued += 1;
    }

    /// Sets the depth of an instrument's book (from its definition).
    pub fn set_depth(&mut self, security: u64, depth: Option<u32>) {
        self.get(security).book.set_depth(depth);
    }

    /// Marks an instrument stale, from now.
    pub fn go_stale(&mut self, security: u64, now_ns: u64, stats: &mut ChannelStats) {
        let messages = stats.messages;
        let inst = self.get(security);
        if inst.state == BookState::Stale {
            return;
        }
        if inst.state == BookState::Live {
            stats.went_stale += 1;
        }
        inst.state = BookState::Stale;
        inst.stale_from_ns = now_ns;
        inst.stale_from_msgs = messages;
        self.touch(security);
    }

    /// Marks every live instrument stale (a lost packet in a feed without RptSeq).
    pub fn all_stale(&mut self, now_ns: u64, stats: &mut ChannelStats) {
        let live: Vec<u64> = self
            .map
            .iter()
            .filter(|(_, i)| i.state == BookState::Live)
            .map(|(&s, _)| s)
            .collect();
        for s in live {
            self.go_stale(s, now_ns, stats);
        }
    }

    /// Forgets every instrument's RptSeq (a sequence reset): the next update of each is
    /// taken as it comes.
    pub fn reset_rpt(&mut self) {
        for i in self.map.values_mut() {
            i.rpt = None;
        }
    }

    /// Hands on the books the message changed.
    pub fn end_message<O: Output>(&mut self, out: &mut O) {
        for k in 0..self.touched.len() {
            let sec = self.touched[k];
            let i = self.map.get_mut(&sec).expect("touched instrument");
            i.touched = false;
            out.book(&BookView {
                security: sec,
                rpt_seq: i.rpt,
                msg_seq_num: i.msg_seq,
                state: i.state,
                book: &i.book,
                from_snapshot: false,
            });
        }
        self.touched.clear();
    }

    /// A snapshot of one instrument: its entries are the `SnapshotEntry` events. Takes it
    /// if the instrument waits for one; checks it against the book if the instrument is live
    /// at the same RptSeq (`verify`). Returns whether it was applied.
    pub fn on_snapshot<O: Output>(
        &mut self,
        h: &SnapshotHeader,
        entries: &[Event],
        now_ns: u64,
        stats: &mut ChannelStats,
        out: &mut O,
    ) -> bool {
        let kind = self.kind;
        let inst = self.get(h.security);
        if inst.state == BookState::Live {
            if h.rpt_seq.is_none() || h.rpt_seq != inst.rpt {
                return false;
            }
            stats.snapshot_checks += 1;
            fill(&mut self.check, kind, h, entries, stats);
            let inst = self.map.get_mut(&h.security).expect("known");
            if inst.book.same_levels(&self.check) {
                return false;
            }
            stats.snapshot_mismatches += 1;
            inst.state = BookState::Stale;
            inst.stale_from_ns = now_ns;
            inst.stale_from_msgs = stats.messages;
        }
        let inst = self.map.get_mut(&h.security).expect("known");
        // Queued updates the snapshot already includes go; the rest must follow it directly.
        if let Some(r) = h.rpt_seq {
            inst.queue.sort_unstable_by_key(|q| q.rpt().unwrap_or(0));
            inst.queue.retain(|q| q.rpt().is_none_or(|x| x > r));
            if inst
                .queue
                .first()
                .and_then(Queued::rpt)
                .is_some_and(|x| x > r + 1)
            {
                stats.snapshots_too_old += 1;
                return false;
            }
        } else if let Some(last) = h.last_msg_seq_processed {
            inst.queue.retain(|q| q.msg_seq.is_none_or(|m| m > last));
        }
        let was = inst.state;
        fill(&mut inst.book, kind, h, entries, stats);
        inst.rpt = h.rpt_seq;
        inst.msg_seq = h.last_msg_seq_processed;
        inst.state = BookState::Live;
        stats.snapshots_applied += 1;
        out.book(&BookView {
            security: h.security,
            rpt_seq: inst.rpt,
            msg_seq_num: inst.msg_seq,
            state: BookState::Live,
            book: &inst.book,
            from_snapshot: true,
        });
        // The queued updates, in RptSeq order, as if they came now.
        std::mem::swap(&mut inst.queue, &mut self.replay);
        let mut replay = std::mem::take(&mut self.replay);
        for (k, q) in replay.iter().enumerate() {
            // The book as each queued message leaves it, as if they came now.
            if k > 0 && replay[k - 1].msg_seq != q.msg_seq {
                self.end_message(out);
            }
            self.on_event(&q.event, q.msg_seq, now_ns, stats, out);
        }
        replay.clear();
        self.replay = replay;
        self.end_message(out);
        let inst = self.map.get_mut(&h.security).expect("known");
        if inst.state == BookState::Live && was == BookState::Unknown {
            stats.synced += 1;
        }
        if inst.state == BookState::Live && was == BookState::Stale {
            stats.recoveries += 1;
            let len = now_ns.saturating_sub(inst.stale_from_ns);
            stats.stale_periods += 1;
            stats.stale_ns_total += len;
            stats.stale_ns_max = stats.stale_ns_max.max(len);
            if self.periods.len() < PERIODS_KEPT {
                let period = StalePeriod {
                    security: h.security,
                    from_ns: inst.stale_from_ns,
                    to_ns: now_ns,
                    messages: stats.messages - inst.stale_from_msgs,
                };
                self.periods.push(period);
            }
        }
        true
    }
}

/// A book from a snapshot's entries.
fn fill(
    book: &mut Book,
    kind: BookKind,
    h: &SnapshotHeader,
    entries: &[Event],
    stats: &mut ChannelStats,
) {
    book.clear();
    if h.depth.is_some() {
        book.set_depth(h.depth);
    }
    for e in entries {
        if let Event::SnapshotEntry(e) = e {
            if book.snapshot_entry(kind, e).is_err() {
                stats.book_errors += 1;
            }
        }
    }
    book.finish_snapshot();
}
