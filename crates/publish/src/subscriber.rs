//! The subscriber: receives every record type of a feed (all securities or some), counts
//! them, hands each to the caller, and echoes it back unless told not to. It ends when the
//! publisher's Done token has arrived and every record up to it was seen, or when idle.

use std::time::{Duration, Instant};

use fastfeed_bus::{
    Bus, BusError, Control, ControlPublisher, ControlSubscriber, Echo, EchoPublisher, Securities,
    WaitMode,
};
use fastfeed_records::Record;

use crate::RecordSubscribers;

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
    /// Done seen and every record announced by it accounted for.
    pub complete: bool,
}

/// One record type's part of a [`SubscriberReport`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeReport {
    pub type_name: &'static str,
    pub received: u64,
    pub filtered_out: u64,
    /// Lost to a full queue, those before the first record read included.
    pub missed: u64,
    /// Records of this type published, as the publisher's Done token announced, if it
    /// came. When the report is complete, received + filtered out + missed = published.
    pub published: Option<u64>,
}

pub struct RecordSubscriber {
    subs: RecordSubscribers,
    control_tx: ControlPublisher,
    control_rx: ControlSubscriber,
    echo_tx: Option<EchoPublisher>,
    id: u32,
    wait: WaitMode,
}

impl RecordSubscriber {
    pub fn new(bus: &Bus, securities: &Securities, echo: bool) -> Result<Self, BusError> {
        Ok(RecordSubscriber {
            subs: RecordSubscribers::new(bus, securities)?,
            control_tx: bus.control_publisher()?,
            control_rx: bus.control_subscriber()?,
            echo_tx: if echo {
                Some(bus.echo_publisher()?)
            } else {
                None
            },
            id: std::process::id(),
            wait: bus.config().wait_mode,
        })
    }

    /// Runs until Done (and the records it announces) or `idle` without any traffic.
    pub fn run(
        &mut self,
        idle: Duration,
        mut on_record: impl FnMut(&Record),
    ) -> Result<SubscriberReport, BusError> {
        let mut report = SubscriberReport::default();
        let mut done: Vec<(u32, u64)> = Vec::new();
        let mut last_activity = Instant::now();
        let mut last_hello: Option<Instant> = None;
        loop {
            let echo_tx = &self.echo_tx;
            let id = self.id;
            let mut send_err = None;
            let n = self.subs.drain(|r, type_tag, seq, sent_ns| {
                on_record(&r);
                if let Some(tx) = echo_tx {
                    match tx.send(Echo {
                        seq,
                        sent_ns,
                        type_tag,
                        subscriber: id,
                    }) {
                        Ok(_) => report.echoed += 1,
                        Err(e) => send_err = Some(e),
                    }
                }
            })?;
            if let Some(e) = send_err {
                return Err(e);
            }
            if n > 0 {
                last_activity = Instant::now();
            }
            while let Some(c) = self.control_rx.try_recv()? {
                if c.kind == Control::DONE {
                    // The per-type DONEs come first, each on its own; the closing one (type
                    // 0) says they all came. Finishing before it could miss a type's count.
                    if c.type_tag == 0 {
                        report.done_seen = true;
                    } else {
                        done.retain(|(t, _)| *t != c.type_tag);
                        done.push((c.type_tag, c.count));
                    }
                    last_activity = Instant::now();
                }
            }
            // Until the publisher is heard from, say hello now and then: it waits for us.
            if !report.done_seen
                && self.subs.totals().0 == 0
                && last_hello.is_none_or(|t| t.elapsed() >= Duration::from_millis(50))
            {
                self.control_tx.send(Control {
                    kind: Control::HELLO,
                    sender: self.id,
                    type_tag: 0,
                    count: 0,
                })?;
                last_hello = Some(Instant::now());
            }
            // iceoryx2 does not order services against each other: the Done may overtake
            // the last records, so finish only once every announced record was seen.
            if report.done_seen
                && done
                    .iter()
                    .all(|&(tag, last)| self.subs.seen_up_to(tag) >= last)
            {
                report.complete = true;
                break;
            }
            if last_activity.elapsed() >= idle {
                break;
            }
            match self.wait {
                WaitMode::Spin => std::thread::yield_now(),
                WaitMode::Sleep(d) => std::thread::sleep(d),
            }
        }
        self.control_tx.send(Control {
            kind: Control::BYE,
            sender: self.id,
            type_tag: 0,
            count: report.echoed,
        })?;
        let (received, filtered, missed) = self.subs.totals();
        report.received = received;
        report.filtered_out = filtered;
        report.missed = missed;
        report.per_type = self.per_type(&done);
        Ok(report)
    }

    /// Each type's counters, with what the Done token (`(type tag, last seq)`) announced.
    fn per_type(&self, done: &[(u32, u64)]) -> Vec<TypeReport> {
        let mut v: Vec<TypeReport> = self
            .subs
            .per_type()
            .into_iter()
            .map(|(type_name, tag, c)| TypeReport {
                type_name,
                received: c.received,
                filtered_out: c.filtered_out,
                missed: c.missed + c.missed_at_start,
                published: done.iter().find(|(t, _)| *t == tag).map(|&(_, n)| n),
            })
            .collect();
        v.sort_by_key(|t| t.type_name);
        v
    }
}
