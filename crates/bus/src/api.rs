//! The traits a backend implements. Everything is static dispatch: producers and consumers
//! are generic over `B: Bus`, and a bus names its port types through generic associated types.

use std::time::{Duration, Instant};

use crate::{
    Accounting, BusError, Control, Counters, Echo, Envelope, Message, PublisherQos, Record,
    Securities, SubscriberQos,
};

/// One feed on one distribution backend, as seen by one process (or one participant of it).
pub trait Bus {
    /// Publishes records of type `R`.
    type Publisher<R: Record>: Publisher<R>;
    /// Receives records of type `R`.
    type Subscriber<R: Record>: Subscriber<R>;
    /// Sends auxiliary messages of type `M`.
    type Sender<M: Message>: Sender<M>;
    /// Receives auxiliary messages of type `M`.
    type Receiver<M: Message>: Receiver<M>;

    /// The feed's name: topics are `fastfeed/<feed>/...`.
    fn feed(&self) -> &str;

    /// This bus instance's publisher id, stamped on every envelope its publishers send and
    /// carried back in [`Echo::publisher`]; also the sender of its `DONE`s. Each record type
    /// has at most one publisher per bus instance (their sequences would mix).
    fn id(&self) -> u32;

    /// A publisher of `R` on `fastfeed/<feed>/<R::TYPE_NAME>`.
    fn publisher<R: Record>(&self, qos: &PublisherQos) -> Result<Self::Publisher<R>, BusError>;

    /// A subscriber of `R` receiving only `securities`.
    fn subscriber<R: Record>(
        &self,
        securities: Securities,
        qos: &SubscriberQos,
    ) -> Result<Self::Subscriber<R>, BusError>;

    /// Sender on `fastfeed/<feed>/echo` (used by subscribers).
    fn echo_sender(&self) -> Result<Self::Sender<Echo>, BusError>;
    /// Receiver on `fastfeed/<feed>/echo` (used by publishers).
    fn echo_receiver(&self) -> Result<Self::Receiver<Echo>, BusError>;
    /// Sender on `fastfeed/<feed>/control`.
    fn control_sender(&self) -> Result<Self::Sender<Control>, BusError>;
    /// Receiver on `fastfeed/<feed>/control`; it also receives this process's own messages.
    fn control_receiver(&self) -> Result<Self::Receiver<Control>, BusError>;

    /// Waits a little when there was nothing to do (the backend's idle policy).
    fn pause(&self) {
        std::thread::yield_now();
    }
}

/// Sends records of one type, numbering them.
pub trait Publisher<R: Record> {
    /// Sends `record` to every subscriber; returns its `seq`. Never waits for a subscriber
    /// unless that subscriber's class asks for it and the backend supports it.
    fn publish(&mut self, record: &R) -> Result<u64, BusError>;
    /// Seq of the last record published (0 before the first).
    fn last_seq(&self) -> u64;
}

/// Receives records of one type, filtered by security, counting what it missed.
///
/// A backend implements `try_recv`, running every envelope it takes through its
/// [`Accounting`], and `accounting`; the counters and the rest come from the accounting.
pub trait Subscriber<R: Record> {
    /// The next envelope of a matching security, or `None` if none is queued.
    fn try_recv(&mut self) -> Result<Option<Envelope<R>>, BusError>;
    /// The filter and counters every envelope taken went through.
    fn accounting(&self) -> &Accounting;

    /// A late joiner ([`SubscriberQos::late_join`]) still taking the current state: nothing
    /// is delivered until it has it (or gave up on it), so that the state comes first.
    fn joining(&self) -> bool {
        false
    }

    /// Waits a little when there was nothing to receive.
    fn pause(&self) {
        std::thread::yield_now();
    }

    /// Samples that reached this subscriber and were refused as malformed (another layout,
    /// a wrong size): each also leaves a gap in its publisher's seqs, counted missed. 0 where
    /// the transport cannot deliver such samples (shared memory's typed services).
    fn rejected(&self) -> u64 {
        0
    }

    /// The counters so far.
    fn counters(&self) -> Counters {
        self.accounting().counters()
    }
    /// Highest seq seen from any publisher, filtered-out records included (0 if none).
    fn seen_up_to(&self) -> u64 {
        self.accounting().seen_up_to()
    }
    /// Highest seq seen from `publisher`, filtered-out records included (0 if none).
    fn seen_from(&self, publisher: u32) -> u64 {
        self.accounting().seen_from(publisher)
    }
    /// The (normalized) security filter.
    fn securities(&self) -> &Securities {
        self.accounting().securities()
    }

    /// Like `try_recv`, but waits up to `timeout`.
    fn recv_timeout(&mut self, timeout: Duration) -> Result<Option<Envelope<R>>, BusError> {
        poll(self, timeout, |s| s.try_recv(), |s| s.pause())
    }

    /// Handles a `Control::DONE` from `publisher` carrying `last_seq`: no backend orders the
    /// control channel against the data, so the Done may overtake the last records. Receives
    /// (calling `on_record`) until a record with seq >= `last_seq` was seen from `publisher`,
    /// or `timeout` expires; returns whether it was reached.
    fn drain_until(
        &mut self,
        publisher: u32,
        last_seq: u64,
        timeout: Duration,
        mut on_record: impl FnMut(Envelope<R>),
    ) -> Result<bool, BusError> {
        let deadline = Instant::now() + timeout;
        loop {
            while let Some(env) = self.try_recv()? {
                on_record(env);
            }
            if self.seen_from(publisher) >= last_seq {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            self.pause();
        }
    }
}

/// Sends auxiliary messages of one type.
pub trait Sender<M: Message> {
    /// Sends a copy of `message`; returns to how many receivers, where the backend knows
    /// (0 where it does not).
    fn send(&self, message: M) -> Result<usize, BusError>;
}

/// Receives auxiliary messages of one type.
pub trait Receiver<M: Message> {
    /// The next message, or `None` if none is queued.
    fn try_recv(&self) -> Result<Option<M>, BusError>;

    /// Waits a little when there was nothing to receive.
    fn pause(&self) {
        std::thread::yield_now();
    }

    /// Like `try_recv`, but waits up to `timeout`.
    fn recv_timeout(&self, timeout: Duration) -> Result<Option<M>, BusError> {
        poll(&mut &*self, timeout, |s| s.try_recv(), |s| s.pause())
    }
}

/// Calls `try_once` until it gives something or `timeout` passed, pausing in between.
fn poll<S: ?Sized, T>(
    s: &mut S,
    timeout: Duration,
    mut try_once: impl FnMut(&mut S) -> Result<Option<T>, BusError>,
    pause: impl Fn(&S),
) -> Result<Option<T>, BusError> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = try_once(s)? {
            return Ok(Some(v));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        pause(s);
    }
}
