//! Ports: typed data publisher/subscriber and the small echo/control sender/receiver.

use crate::bus::{Svc, WaitMode};
use crate::{now_ns, BusError, Control, Echo, Envelope, Record, Securities, ZeroCopySend};
use iceoryx2::identifiers::UniquePublisherId;
use iceoryx2::port::publisher::Publisher as IcePublisher;
use iceoryx2::port::subscriber::Subscriber as IceSubscriber;
use iceoryx2::service::port_factory::publish_subscribe::PortFactory;
use std::fmt::Debug;
use std::time::{Duration, Instant};

/// Publishes records of one type; numbers them 1, 2, 3, ...
pub struct Publisher<R: Record> {
    pub(crate) port: IcePublisher<Svc, Envelope<R>, ()>,
    pub(crate) _service: PortFactory<Svc, Envelope<R>, ()>,
    pub(crate) seq: u64,
}

impl<R: Record> Publisher<R> {
    /// Loans a sample, writes the envelope in place and sends it to all subscribers
    /// (never blocks: full subscriber queues drop their oldest sample). Returns the seq.
    pub fn publish(&mut self, record: &R) -> Result<u64, BusError> {
        let sample = self
            .port
            .loan_uninit()
            .map_err(BusError::ice("loan sample"))?;
        self.seq += 1;
        let sample = sample.write_payload(Envelope {
            seq: self.seq,
            sent_ns: now_ns(),
            record: *record,
        });
        sample.send().map_err(BusError::ice("send sample"))?;
        Ok(self.seq)
    }

    /// Seq of the last published record (0 before the first).
    pub fn last_seq(&self) -> u64 {
        self.seq
    }
}

/// Subscriber statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Samples returned by `try_recv`.
    pub received: u64,
    /// Samples dropped by the security filter.
    pub filtered_out: u64,
    /// Seq gaps between consecutive samples of the same publisher: samples overwritten
    /// in our full queue (iceoryx2 itself does not report overflow losses).
    pub missed: u64,
    /// `first seq - 1` per publisher: samples published before the first one we saw,
    /// either before we connected or overwritten before our first read.
    pub missed_at_start: u64,
}

/// Receives records of one type, filtered by security.
pub struct Subscriber<R: Record> {
    pub(crate) port: IceSubscriber<Svc, Envelope<R>, ()>,
    pub(crate) _service: PortFactory<Svc, Envelope<R>, ()>,
    pub(crate) filter: Securities,
    pub(crate) counters: Counters,
    /// Last seq seen per publisher; publishers are few, so a Vec beats a map.
    pub(crate) last_seq: Vec<(UniquePublisherId, u64)>,
    pub(crate) wait_mode: WaitMode,
}

impl<R: Record> Subscriber<R> {
    /// Next envelope of a matching security, or `None` if the queue is empty.
    pub fn try_recv(&mut self) -> Result<Option<Envelope<R>>, BusError> {
        loop {
            let Some(sample) = self.port.receive().map_err(BusError::ice("receive"))? else {
                return Ok(None);
            };
            let env = *sample.payload();
            let origin = sample.origin();
            drop(sample); // return the slot to the publisher right away
            self.track(origin, env.seq);
            if self.filter.matches_sorted(env.record.security_id()) {
                self.counters.received += 1;
                return Ok(Some(env));
            }
            self.counters.filtered_out += 1;
        }
    }

    fn track(&mut self, origin: UniquePublisherId, seq: u64) {
        match self.last_seq.iter_mut().find(|(id, _)| *id == origin) {
            Some((_, last)) => {
                if seq > *last {
                    self.counters.missed += seq - *last - 1;
                    *last = seq;
                }
            }
            None => {
                self.counters.missed_at_start += seq.saturating_sub(1);
                self.last_seq.push((origin, seq));
            }
        }
    }

    /// Like `try_recv`, but waits up to `timeout` (see [`WaitMode`]).
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<Option<Envelope<R>>, BusError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(env) = self.try_recv()? {
                return Ok(Some(env));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            pause(self.wait_mode);
        }
    }

    /// Highest seq seen from any publisher, including filtered-out samples (0 if none).
    pub fn seen_up_to(&self) -> u64 {
        self.last_seq.iter().map(|&(_, s)| s).max().unwrap_or(0)
    }

    /// Handles a `Control::DONE` carrying `last_seq`: iceoryx2 gives no ordering across
    /// services, so the Done may overtake the last data. Receives (calling `on_record`)
    /// until a sample with seq >= `last_seq` was seen or `timeout` expires; returns
    /// whether it was reached.
    pub fn drain_until(
        &mut self,
        last_seq: u64,
        timeout: Duration,
        mut on_record: impl FnMut(Envelope<R>),
    ) -> Result<bool, BusError> {
        let deadline = Instant::now() + timeout;
        loop {
            while let Some(env) = self.try_recv()? {
                on_record(env);
            }
            if self.seen_up_to() >= last_seq {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            pause(self.wait_mode);
        }
    }

    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The (normalized) security filter.
    pub fn securities(&self) -> &Securities {
        &self.filter
    }
}

pub(crate) fn pause(mode: WaitMode) {
    match mode {
        // Yield rather than pure spin: on a machine with fewer cores than busy processes
        // a pure spin would starve the very process it waits for.
        WaitMode::Spin => std::thread::yield_now(),
        WaitMode::Sleep(d) => std::thread::sleep(d),
    }
}

/// Sender of small auxiliary messages ([`Echo`], [`Control`]).
pub struct Sender<T: Copy + Debug + ZeroCopySend + 'static> {
    pub(crate) port: IcePublisher<Svc, T, ()>,
    pub(crate) _service: PortFactory<Svc, T, ()>,
}

impl<T: Copy + Debug + ZeroCopySend + 'static> Sender<T> {
    /// Sends a copy of `value`; returns how many subscribers it was delivered to.
    pub fn send(&self, value: T) -> Result<usize, BusError> {
        self.port
            .send_copy(value)
            .map_err(BusError::ice("send aux message"))
    }
}

/// Receiver of small auxiliary messages ([`Echo`], [`Control`]).
pub struct Receiver<T: Copy + Debug + ZeroCopySend + 'static> {
    pub(crate) port: IceSubscriber<Svc, T, ()>,
    pub(crate) _service: PortFactory<Svc, T, ()>,
    pub(crate) wait_mode: WaitMode,
}

impl<T: Copy + Debug + ZeroCopySend + 'static> Receiver<T> {
    pub fn try_recv(&self) -> Result<Option<T>, BusError> {
        Ok(self
            .port
            .receive()
            .map_err(BusError::ice("receive aux message"))?
            .map(|s| *s.payload()))
    }

    /// Waits up to `timeout` (see [`WaitMode`]).
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Option<T>, BusError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(v) = self.try_recv()? {
                return Ok(Some(v));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            pause(self.wait_mode);
        }
    }
}

pub type EchoPublisher = Sender<Echo>;
pub type EchoSubscriber = Receiver<Echo>;
pub type ControlPublisher = Sender<Control>;
pub type ControlSubscriber = Receiver<Control>;
