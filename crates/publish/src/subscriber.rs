//! The subscriber: receives every record type of a feed (all securities or some), counts
//! them, hands each to the caller, and echoes it back unless told not to. It ends when the
//! publisher's Done token has arrived and every record up to it was seen, or when idle.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fastfeed_bus::{Bus, BusError, Control, Echo, Receiver, Securities, Sender, SubscriberQos};
use fastfeed_records::Record;

use crate::{RecordSubscribers, HEARTBEAT};

/// How long a subscriber waits, hearing no publisher, before it says what it waits for.
pub const WAITING_NOTICE: Duration = Duration::from_secs(1);

/// After the Done, how long without a record before the records it announced and never
/// seen are counted missed.
pub const TAIL_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Default)]
pub struct SubscriberReport {
    /// Per record type, by type name.
    pub per_type: Vec<TypeReport>,
    pub received: u64,
    pub filtered_out: u64,
    /// Samples lost to a full queue (the publisher never waits for a slow subscriber).
    pub missed: u64,
    pub echoed: u64,
    pub done_seen: bool,
    /// Done seen and every record announced by it accounted for, from one publisher.
    pub complete: bool,
    /// Publishers heard on the feed (records, announcements, Done): more than one mixes
    /// two feeds' records, which then cannot be accounted for.
    pub publishers: Vec<u32>,
    /// Stopped by the caller's flag (Ctrl-C) before the end: a partial report.
    pub interrupted: bool,
}

/// One record type's part of a [`SubscriberReport`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeReport {
    pub type_name: &'static str,
    pub received: u64,
    pub filtered_out: u64,
    /// Lost to a full queue or on the way, those before the first record read and after
    /// the last one (`missed_at_end`) included.
    pub missed: u64,
    /// Announced by the publisher's Done but never seen: the last records, dropped on the
    /// way (a congested Zenoh link drops for that subscriber alone).
    pub missed_at_end: u64,
    /// Records of this type published, as the publishers' Done tokens announced (summed over
    /// publishers), if one came. When the report is complete, received + filtered out +
    /// missed = published.
    pub published: Option<u64>,
}

/// A publisher's DONE for one record type: (publisher id, type tag, last seq).
type Done = (u32, u32, u64);

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
        let mut last_activity = Instant::now();
        let mut last_record = Instant::now();
        let mut last_hello: Option<Instant> = None;
        let started = Instant::now();
        let mut told_waiting = false;
        // Publishers that asked for echoes: a publisher run with --no-echo gets none.
        let mut echo_to: Vec<u32> = Vec::new();
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
                if c.kind == Control::PUBLISHER_ECHO && !echo_to.contains(&c.sender) {
                    echo_to.push(c.sender);
                }
                if c.kind == Control::DONE {
                    // The per-type DONEs come first, each on its own; the closing one (type
                    // 0) says they all came. Finishing before it could miss a type's count.
                    if c.type_tag == 0 {
                        report.done_seen = true;
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
                on_record(&r);
                let from = d.header.publisher;
                if !publishers.contains(&from) {
                    publishers.push(from);
                }
                if let Some(tx) = echo_tx.as_ref().filter(|_| echo_to.contains(&from)) {
                    match tx.send(Echo::answer(&d.header, d.type_tag, id)) {
                        Ok(_) => echoed += 1,
                        Err(e) => send_err = Some(e),
                    }
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
                report.complete = report.publishers.len() <= 1;
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
        let (received, filtered, missed) = self.subs.totals();
        report.received = received;
        report.filtered_out = filtered;
        report.per_type = self.per_type(&done);
        report.missed = missed + report.per_type.iter().map(|t| t.missed_at_end).sum::<u64>();
        Ok(report)
    }

    /// Each type's counters, with what the Done tokens announced.
    fn per_type(&self, done: &[Done]) -> Vec<TypeReport> {
        let mut v: Vec<TypeReport> = self
            .subs
            .per_type()
            .into_iter()
            .map(|(type_name, tag, c)| TypeReport {
                type_name,
                received: c.received,
                filtered_out: c.filtered_out,
                missed: c.missed + c.missed_at_start,
                missed_at_end: 0,
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
