//! Subscriber side of the latency loop: receive records, echo each back.

use crate::{Bus, BusError, Control, Counters, Echo, Envelope, Record, Securities};
use std::time::{Duration, Instant};

/// Result of [`serve_echo`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EchoStats {
    pub counters: Counters,
    /// Echoes sent.
    pub echoed: u64,
    /// Last seq announced by the publisher's Done, if one arrived.
    pub done_seq: Option<u64>,
    /// Done arrived and every sample up to its seq was seen (received, filtered or missed).
    pub complete: bool,
}

/// Subscribes to `R`, echoes every matching envelope on the echo channel and returns
/// once the publisher's `Control::DONE` for `R` was handled, or after `idle_timeout`
/// without data.
///
/// Protocol: `HELLO` is sent every 100 ms until the first record arrives (the
/// publisher may start its control subscriber after us, and history is 0). Because
/// iceoryx2 does not order samples across services, a Done may overtake data still
/// queued; it carries the last seq, and we drain until that seq was seen or
/// `idle_timeout` expires. A `BYE` is sent at the end. Idle polling follows the
/// bus's [`WaitMode`](crate::WaitMode): use `Spin` for latency measurements.
pub fn serve_echo<R: Record>(
    bus: &Bus,
    securities: Securities,
    subscriber_id: u32,
    idle_timeout: Duration,
) -> Result<EchoStats, BusError> {
    let tag = R::type_tag();
    let mut sub = bus.subscriber::<R>(securities)?;
    let control_rx = bus.control_subscriber()?;
    let control_tx = bus.control_publisher()?;
    let echo_tx = bus.echo_publisher()?;
    let control = |kind, count| Control {
        kind,
        sender: subscriber_id,
        type_tag: tag,
        count,
    };

    let mut echoed = 0u64;
    let mut send_error = None;
    let mut echo = |env: Envelope<R>| {
        let e = Echo {
            seq: env.seq,
            sent_ns: env.sent_ns,
            type_tag: tag,
            subscriber: subscriber_id,
        };
        match echo_tx.send(e) {
            Ok(_) => echoed += 1,
            Err(err) => send_error = Some(err),
        }
    };

    let mut last_activity = Instant::now();
    let mut last_hello: Option<Instant> = None;
    let mut done_seq = None;
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
            control_tx.send(control(Control::HELLO, 0))?;
            last_hello = Some(Instant::now());
        }
        while let Some(c) = control_rx.try_recv()? {
            if c.kind == Control::DONE && c.type_tag == tag {
                done_seq = Some(c.count);
            }
        }
        if let Some(last) = done_seq {
            complete = sub.drain_until(last, idle_timeout, &mut echo)?;
            break;
        }
        if last_activity.elapsed() >= idle_timeout {
            break;
        }
        crate::ports::pause(bus.config().wait_mode);
    }
    if let Some(err) = send_error {
        return Err(err);
    }
    control_tx.send(control(Control::BYE, echoed))?;
    Ok(EchoStats {
        counters: sub.counters(),
        echoed,
        done_seq,
        complete,
    })
}
