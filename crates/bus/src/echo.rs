//! Subscriber side of the latency loop: receive records, echo each back.

use crate::{
    Bus, BusError, Control, Counters, Echo, Envelope, Receiver, Record, Securities, Sender,
    Subscriber, SubscriberQos,
};
use std::time::{Duration, Instant};

/// Result of [`serve_echo`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EchoStats {
    /// The subscriber's counters.
    pub counters: Counters,
    /// Echoes sent.
    pub echoed: u64,
    /// Last seq announced by the publisher's Done, if one arrived.
    pub done_seq: Option<u64>,
    /// Done arrived and every record up to its seq was seen (received, filtered or missed).
    pub complete: bool,
}

/// Subscribes to `R`, echoes every matching envelope on the echo channel and returns
/// once a publisher's `Control::DONE` for `R` was handled, or after `idle_timeout`
/// without data.
///
/// Protocol: `HELLO` is sent every 100 ms until the first record arrives (the
/// publisher may start its control receiver after us, and nothing is replayed). Because
/// no backend orders the control channel against the data, a Done may overtake data still
/// queued; it carries the last seq, and we drain until that seq was seen from its sender or
/// `idle_timeout` expires. A `BYE` is sent at the end. Idle polling follows the bus's
/// [`Bus::pause`].
pub fn serve_echo<B: Bus, R: Record>(
    bus: &B,
    securities: Securities,
    subscriber_id: u32,
    idle_timeout: Duration,
) -> Result<EchoStats, BusError> {
    let tag = R::type_tag();
    let mut sub = bus.subscriber::<R>(securities, &SubscriberQos::default())?;
    let control_rx = bus.control_receiver()?;
    let control_tx = bus.control_sender()?;
    let echo_tx = bus.echo_sender()?;

    let mut echoed = 0u64;
    let mut send_error = None;
    let mut echo = |env: Envelope<R>| match echo_tx.send(Echo::of(&env, subscriber_id)) {
        Ok(_) => echoed += 1,
        Err(err) => send_error = Some(err),
    };

    let mut last_activity = Instant::now();
    let mut last_hello: Option<Instant> = None;
    let mut done = None;
    let mut complete = false;
    loop {
        let mut got_data = false;
        while let Some(env) = sub.try_recv()? {
            echo(env);
            got_data = true;
        }
        if got_data {
            last_activity = Instant::now();
        }
        let seen_any = sub.seen_up_to() > 0;
        if !seen_any && last_hello.is_none_or(|t| t.elapsed() >= Duration::from_millis(100)) {
            control_tx.send(Control::new(Control::HELLO, subscriber_id, tag, 0))?;
            last_hello = Some(Instant::now());
        }
        while let Some(c) = control_rx.try_recv()? {
            if c.kind == Control::DONE && c.type_tag == tag {
                done = Some((c.sender, c.count));
            }
        }
        if let Some((publisher, last)) = done {
            complete = sub.drain_until(publisher, last, idle_timeout, &mut echo)?;
            break;
        }
        if last_activity.elapsed() >= idle_timeout {
            break;
        }
        bus.pause();
    }
    if let Some(err) = send_error {
        return Err(err);
    }
    control_tx.send(Control::new(Control::BYE, subscriber_id, tag, echoed))?;
    Ok(EchoStats {
        counters: sub.counters(),
        echoed,
        done_seq: done.map(|(_, n)| n),
        complete,
    })
}
