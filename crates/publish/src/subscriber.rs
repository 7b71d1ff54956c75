//! The subscriber: receives every record type of a feed (all securities or some), counts
//! them, echoes each back unless told not to, then hands it to the caller. It ends when the
//! publisher's Done token has arrived and every record up to it was seen, or when idle.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fastfeed_bus::{
    now_ns, Bus, BusError, Control, Echo, Receiver, Securities, Sender, SubscriberQos,
};
use fastfeed_records::Record;
use fastfeed_stats::Stage;

use crate::{RecordSubscribers, HEARTBEAT};

/// How long a subscriber waits, hearing no publisher, before it says what it waits for.
pub const WAITING_NOTICE: Duration = Duration::from_secs(1);

/// After the Done, how long without a record before the records it announced and never
/// seen are counted missed.
pub const TAIL_WAIT: Duration = Duration::from_secs(2);

/// Each record's way from its publisher to this subscriber's application thread (its
/// `sent_ns` to when the subscriber took it), in nanoseconds: timed only for publishers on
/// this subscriber's clock ([`Control::CLOCK`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OneWay {
    pub count: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl OneWay {
    fn of(s: &Stage) -> Option<OneWay> {
        (s.count() > 0).then(|| OneWay {
            count: s.count(),
            p50_ns: s.percentile_ns(50.0),
            p90_ns: s.percentile_ns(90.0),
            p99_ns: s.percentile_ns(99.0),
            p999_ns: s.percentile_ns(99.9),
            max_ns: s.max_ns(),
        })
    }
}

#[derive(Debug, Clone, Default)]
pub struct SubscriberReport {
    /// Per record type, by type name.
    pub per_type: Vec<TypeReport>,
    pub received: u64,
    pub filtered_out: u64,
    /// Samples lost to a full queue (the publisher never waits for a slow subscriber).
    pub missed: u64,
    /// Samples refused as malformed (each also counted missed).
    pub rejected: u64,
    /// Of `received`, the current state a late joiner took first (last record per security).
    pub snapshot: u64,
    pub echoed: u64,
    pub done_seen: bool,
    /// Done seen (from every member of a publisher group) and every record announced by it
    /// accounted for, from one publisher or one group.
    pub complete: bool,
    /// Publishers heard on the feed (records, announcements, Done).
    pub publishers: Vec<u32>,
    /// Publishers of more than one group heard (or several alone): two feeds' records
    /// mixed, which cannot be accounted for. The members of one group (a multi-channel
    /// publisher's threads) are not mixed.
    pub mixed: bool,
    /// Stopped by the caller's flag (Ctrl-C) before the end: a partial report.
    pub interrupted: bool,
    /// The records' way from a publisher on this subscriber's clock; `None` where no such
    /// publisher was heard (another host's clock: only the publisher's round trip tells).
    pub one_way: Option<OneWay>,
}

/// One record type's part of a [`SubscriberReport`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeReport {
    pub type_name: &'static str,
    pub received: u64,
    pub filtered_out: u64,
    /// Lost to a full queue or on the way, those before the first record read and after
    /// the last one (`missed_at_end`) included (for a late joiner, also those its current
    /// state superseded).
    pub missed: u64,
    /// Announced by the publisher's Done but never seen: the last records, dropped on the
    /// way (a congested Zenoh link drops for that subscriber alone).
    pub missed_at_end: u64,
    /// Of `missed`, the gaps between records read (for a late joiner, after its state).
    pub gaps: u64,
    /// Samples refused as malformed (another layout, a wrong size), each also missed.
    pub rejected: u64,
    /// Of `received`, a late joiner's current state.
    pub snapshot: u64,
    /// Live copies of records already received (a late joiner's, of its current state):
    /// dropped.
    pub duplicates: u64,
    /// Records of this type published, as the publishers' Done tokens announced (summed over
    /// publishers), if one came. When the report is complete, received + filtered out +
    /// missed = published.
    pub published: Option<u64>,
}

/// A publisher's DONE for one record type: (publisher id, type tag, last seq).
type Done = (u32, u32, u64);

/// The publishers' groups, as their control messages tell, and whose Done closed.
#[derive(Debug, Default)]
struct Groups {
    /// (publisher, group).
    members: Vec<(u32, u32)>,
    /// (group, members it announced).
    sizes: Vec<(u32, u32)>,
    closed: Vec<u32>,
}

impl Groups {
    fn heard(&mut self, c: &Control) {
        if !self.members.iter().any(|&(p, _)| p == c.sender) {
            self.members.push((c.sender, c.group));
        }
        if c.group != 0 && matches!(c.kind, Control::PUBLISHER | Control::PUBLISHER_ECHO) {
            match self.sizes.iter_mut().find(|(g, _)| *g == c.group) {
                Some((_, n)) => *n = (*n).max(c.type_tag),
                None => self.sizes.push((c.group, c.type_tag)),
            }
        }
    }

    /// A closing DONE from `c.sender`: whether the Done is complete, i.e. it came from a
    /// publisher alone or from every member its group announced.
    fn close(&mut self, c: &Control) -> bool {
        if !self.closed.contains(&c.sender) {
            self.closed.push(c.sender);
        }
        if c.group == 0 {
            return true;
        }
        let size = self
            .sizes
            .iter()
            .find(|(g, _)| *g == c.group)
            .map_or(1, |&(_, n)| n.max(1));
        let closed = self
            .members
            .iter()
            .filter(|&&(p, g)| g == c.group && self.closed.contains(&p))
            .count();
        closed >= size as usize
    }

    /// Whether `publishers` are more than one publisher alone, or of several groups.
    fn mixed(&self, publishers: &[u32]) -> bool {
        let group = |p: &u32| {
            self.members
                .iter()
                .find(|(m, _)| m == p)
                .map_or(0, |&(_, g)| g)
        };
        match publishers.first().map(group) {
            None => false,
            Some(0) => publishers.len() > 1,
            Some(g) => publishers.iter().any(|p| group(p) != g),
        }
    }
}

pub struct RecordSubscriber<B: Bus> {
    subs: RecordSubscribers<B>,
    control_tx: B::Sender<Control>,
    control_rx: B::Receiver<Control>,
    echo_tx: Option<B::Sender<Echo>>,
    id: u32,
    feed: String,
    stop: Option<&'static AtomicBool>,
}

impl<B: Bus> RecordSubscriber<B> {
    pub fn new(
        bus: &B,
        securities: &Securities,
        qos: &SubscriberQos,
        echo: bool,
    ) -> Result<Self, BusError> {
        Ok(RecordSubscriber {
            subs: RecordSubscribers::new(bus, securities, qos)?,
            control_tx: bus.control_sender()?,
            control_rx: bus.control_receiver()?,
            echo_tx: if echo { Some(bus.echo_sender()?) } else { None },
            id: std::process::id(),
            feed: bus.feed().to_string(),
            stop: None,
        })
    }

    /// A late joiner still taking the current state of some record type.
    pub fn joining(&self) -> bool {
        self.subs.joining()
    }

    /// Makes [`Self::run`] end, with the report so far, once `flag` is set (a signal
    /// handler's flag).
    pub fn stop_on(&mut self, flag: &'static AtomicBool) {
        self.stop = Some(flag);
    }

    /// Runs until Done (and the records it announces) or `idle` without any traffic.
    pub fn run(
        &mut self,
        idle: Duration,
        mut on_record: impl FnMut(&Record),
    ) -> Result<SubscriberReport, BusError> {
        let mut report = SubscriberReport::default();
        let mut done: Vec<Done> = Vec::new();
        let mut groups = Groups::default();
        let mut last_activity = Instant::now();
        let mut last_record = Instant::now();
        let mut last_hello: Option<Instant> = None;
        let started = Instant::now();
        let mut told_waiting = false;
        // Publishers that asked for echoes: a publisher run with --no-echo gets none.
        let mut echo_to: Vec<u32> = Vec::new();
        // Publishers whose clock is ours, and the records' way from them.
        let mut same_clock: Vec<u32> = Vec::new();
        let mut one_way = Stage::new("one way /record");
        let clock = fastfeed_bus::clock_id();
        loop {
            if self
                .stop
                .as_ref()
                .is_some_and(|f| f.load(Ordering::Relaxed))
            {
                report.interrupted = true;
                break;
            }
            // Control first: a publisher's announcement arrives before its first records.
            while let Some(c) = self.control_rx.try_recv()? {
                if matches!(
                    c.kind,
                    Control::PUBLISHER | Control::PUBLISHER_ECHO | Control::DONE
                ) && !report.publishers.contains(&c.sender)
                {
                    report.publishers.push(c.sender);
                }
                if matches!(
                    c.kind,
                    Control::PUBLISHER | Control::PUBLISHER_ECHO | Control::DONE
                ) {
                    groups.heard(&c);
                }
                if c.kind == Control::PUBLISHER_ECHO && !echo_to.contains(&c.sender) {
                    echo_to.push(c.sender);
                }
                if c.kind == Control::CLOCK
                    && clock != 0
                    && c.count == clock
                    && !same_clock.contains(&c.sender)
                {
                    same_clock.push(c.sender);
                }
                if c.kind == Control::DONE {
                    // The per-type DONEs come first, each on its own; the closing one (type
                    // 0) says they all came. Finishing before it could miss a type's count.
                    if c.type_tag == 0 {
                        report.done_seen |= groups.close(&c);
                    } else {
                        done.retain(|&(p, t, _)| (p, t) != (c.sender, c.type_tag));
                        done.push((c.sender, c.type_tag, c.count));
                    }
                    last_activity = Instant::now();
                }
            }
            let echo_tx = &self.echo_tx;
            let id = self.id;
            let publishers = &mut report.publishers;
            let mut echoed = 0;
            let mut send_err = None;
            let n = self.subs.drain(|r, d| {
                let from = d.header.publisher;
                if same_clock.contains(&from) {
                    one_way.record(now_ns().saturating_sub(d.header.sent_ns));
                }
                // The echo says the record arrived: it goes before the application's own
                // handling, which the round trip is not meant to time (a dump's hand-off to
                // its writer thread cost several us one way on namespace hosts).
                if let Some(tx) = echo_tx.as_ref().filter(|_| echo_to.contains(&from)) {
                    match tx.send(Echo::answer(&d.header, d.type_tag, id)) {
                        Ok(_) => echoed += 1,
                        Err(e) => send_err = Some(e),
                    }
                }
                on_record(&r);
                if !publishers.contains(&from) {
                    publishers.push(from);
                }
            })?;
            report.echoed += echoed;
            if let Some(e) = send_err {
                return Err(e);
            }
            if n > 0 {
                last_activity = Instant::now();
                last_record = last_activity;
            }
            // Say hello often until a publisher is heard from (it may wait for us), then
            // now and then: the publisher sees that this subscriber is still there.
            let hello_every = if report.publishers.is_empty() {
                Duration::from_millis(50)
            } else {
                HEARTBEAT
            };
            if !report.done_seen && last_hello.is_none_or(|t| t.elapsed() >= hello_every) {
                self.control_tx
                    .send(Control::new(Control::HELLO, self.id, 0, 0))?;
                last_hello = Some(Instant::now());
            }
            if report.publishers.is_empty() && !told_waiting && started.elapsed() >= WAITING_NOTICE
            {
                told_waiting = true;
                eprintln!(
                    "waiting for a publisher on feed {:?} (none heard yet; giving up after {} s \
                     without one): start one with `fastfeed publish --feed {}`",
                    self.feed,
                    idle.as_secs(),
                    self.feed
                );
            }
            // No bus orders the control channel against the data: the Done may overtake the
            // last records, so finish once every announced record was seen, or once none came
            // for TAIL_WAIT after the Done: a link that dropped the last ones (Zenoh drops
            // for a congested link) never delivers them, and they are counted missed.
            if report.done_seen
                && (last_record.elapsed() >= TAIL_WAIT
                    || done
                        .iter()
                        .all(|&(p, tag, last)| self.subs.seen_from(p, tag) >= last))
            {
                report.complete = !groups.mixed(&report.publishers);
                break;
            }
            if last_activity.elapsed() >= idle {
                break;
            }
            self.control_rx.pause();
        }
        // Three times: a control message is dropped for a link whose queue is full (this
        // subscriber's own echoes may fill it), and a publisher on Zenoh waits for the bye.
        for i in 0..3 {
            if i > 0 {
                std::thread::sleep(Duration::from_millis(50));
            }
            self.control_tx
                .send(Control::new(Control::BYE, self.id, 0, report.echoed))?;
        }
        report.one_way = OneWay::of(&one_way);
        report.mixed = groups.mixed(&report.publishers);
        let (received, filtered, missed) = self.subs.totals();
        report.received = received;
        report.filtered_out = filtered;
        report.per_type = self.per_type(&done);
        report.missed = missed + report.per_type.iter().map(|t| t.missed_at_end).sum::<u64>();
        report.snapshot = report.per_type.iter().map(|t| t.snapshot).sum();
        report.rejected = report.per_type.iter().map(|t| t.rejected).sum();
        Ok(report)
    }

    /// Each type's counters, with what the Done tokens announced.
    fn per_type(&self, done: &[Done]) -> Vec<TypeReport> {
        let mut v: Vec<TypeReport> = self
            .subs
            .per_type()
            .into_iter()
            .map(|(type_name, tag, c, rejected)| TypeReport {
                type_name,
                received: c.received,
                filtered_out: c.filtered_out,
                missed: c.missed + c.missed_at_start,
                missed_at_end: 0,
                gaps: c.missed,
                rejected,
                snapshot: c.snapshot,
                duplicates: c.duplicates,
                published: done
                    .iter()
                    .filter(|&&(_, t, _)| t == tag)
                    .map(|&(_, _, n)| n)
                    .reduce(|a, b| a + b),
            })
            .map(|mut t| {
                // Announced by a Done and never seen: the tail a link dropped.
                let tag = fastfeed_bus::type_tag(t.type_name);
                t.missed_at_end = done
                    .iter()
                    .filter(|&&(_, dt, _)| dt == tag)
                    .map(|&(p, _, last)| last.saturating_sub(self.subs.seen_from(p, tag)))
                    .sum();
                t.missed += t.missed_at_end;
                t
            })
            .collect();
        v.sort_by_key(|t| t.type_name);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn announce(sender: u32, group: u32, size: u32) -> Control {
        Control::new(Control::PUBLISHER, sender, size, 0).in_group(group)
    }

    fn close(sender: u32, group: u32) -> Control {
        Control::new(Control::DONE, sender, 0, 0).in_group(group)
    }

    #[test]
    fn a_group_is_done_when_every_member_closed() {
        let mut g = Groups::default();
        for id in [10, 11, 12] {
            g.heard(&announce(id, 7, 3));
        }
        assert!(!g.close(&close(10, 7)));
        assert!(!g.close(&close(10, 7)), "the same member twice counts once");
        assert!(!g.close(&close(12, 7)));
        assert!(g.close(&close(11, 7)));
        assert!(!g.mixed(&[10, 11, 12]));
    }

    #[test]
    fn a_publisher_alone_is_done_at_its_own_done() {
        let mut g = Groups::default();
        g.heard(&announce(1, 0, 0));
        assert!(g.close(&close(1, 0)));
        assert!(!g.mixed(&[1]));
        g.heard(&announce(2, 0, 0));
        assert!(g.mixed(&[1, 2]), "two publishers alone mix their records");
        g.heard(&announce(3, 9, 2));
        assert!(g.mixed(&[3, 1]), "a group member and a publisher alone");
    }
}
