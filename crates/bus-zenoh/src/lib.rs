//! The Zenoh backend of [`fastfeed_bus`]: records between processes and hosts over Zenoh
//! (`zenoh` 1.x, peer mode, TCP).
//!
//! # Topics
//! Every record goes out on the key expression `fastfeed/<feed>/<type>/<security>`, so any
//! Zenoh program can subscribe to `fastfeed/moex/book/*` or to one security. Echoes and
//! control messages use `fastfeed/<feed>/echo` and `fastfeed/<feed>/control`.
//!
//! A [`ZenohSubscriber`] subscribes to `fastfeed/<feed>/<type>/*` whatever its
//! [`Securities`](fastfeed_bus::Securities) and filters on its side: the envelope's `seq` runs
//! over all securities of a type, and only a subscriber that sees them all can tell a record
//! lost on the way from one it did not ask for (the bus's conformance checks require both
//! counts).
//!
//! # Wire layout
//! A sample is an 8-byte prefix (`u16` [`WIRE_VERSION`], `u16` the record's
//! `LAYOUT_VERSION`, `u32` its type tag), the 32-byte envelope header, then the record's
//! little-endian bytes up to its last non-zero entry (the rest are zeros a reader puts back):
//! `crates/records/LAYOUT.md`, section "On Zenoh". A sample longer than the record, or of
//! another prefix, is counted ([`ZenohSubscriber::rejected`]) and dropped.
//!
//! # Quality of service
//! - Screen subscribers drop the oldest record of their queue when full (counted as missed);
//!   Zenoh's receiving task never waits for them.
//! - Recorder subscribers block Zenoh's receiving task while their queue is full: TCP pushes
//!   back to the publisher, whose link queue for this session then fills. By default a
//!   publisher drops for that link only (`CongestionControl::Drop`: the other sessions'
//!   links go on, the recorder counts the gap); with [`ZenohConfig::block_when_congested`]
//!   it waits, and the recorder gets every record. A recorder whose reader shares the
//!   publisher's session and thread must not fill its queue (the publisher would wait on
//!   itself).
//! - [`PublisherQos`](fastfeed_bus::PublisherQos) maps onto Zenoh's priority and express
//!   flag. Echo and control messages are express, at `InteractiveHigh`.
//!
//! # Example
//! ```
//! use fastfeed_bus::testing::TestRecord;
//! use fastfeed_bus::{Bus, Publisher, PublisherQos, Securities, Subscriber, SubscriberQos};
//! use fastfeed_bus_zenoh::{ZenohBus, ZenohConfig};
//!
//! // No endpoints, no scouting: a session on its own, delivering to itself.
//! let bus = ZenohBus::new("doc", ZenohConfig::default()).unwrap();
//! let qos = SubscriberQos::default();
//! let mut sub = bus.subscriber::<TestRecord>(Securities::Only(vec![7]), &qos).unwrap();
//! let mut publisher = bus.publisher::<TestRecord>(&PublisherQos::default()).unwrap();
//! publisher.publish(&TestRecord { security_id: 7, ..TestRecord::default() }).unwrap();
//! publisher.publish(&TestRecord { security_id: 8, ..TestRecord::default() }).unwrap();
//! let env = sub.try_recv().unwrap().unwrap();
//! assert_eq!((env.seq, env.record.security_id), (1, 7));
//! assert!(sub.try_recv().unwrap().is_none());
//! assert_eq!(sub.counters().filtered_out, 1);
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod bus;
mod history;
mod join;
mod keys;
mod ports;
mod queue;
mod wire;

pub use bus::{ZenohBus, ZenohConfig};
pub use ports::{
    ZenohPublisher, ZenohReceiver, ZenohSender, ZenohSubscriber, BUCKETS, MAX_DECLARED,
};
pub use wire::{PREFIX_LEN, RECORD_OFFSET, WIRE_VERSION};

use fastfeed_bus::BusError;

/// `map_err` for Zenoh's errors (boxed `dyn Error`). The context becomes a `String` only on
/// error: `put` is on the per-record path.
pub(crate) fn zerr<C: Into<String>>(context: C) -> impl FnOnce(zenoh::Error) -> BusError {
    move |e| BusError::Backend {
        backend: "zenoh",
        context: context.into(),
        source: Box::new(ZenohError(without_location(&e.to_string()).to_owned())),
    }
}

/// A Zenoh error's message. Zenoh's own ends in the Rust source file and line that raised it
/// (" at /root/.cargo/registry/src/.../lib.rs:62."), which tells a user nothing.
#[derive(Debug)]
struct ZenohError(String);

impl std::fmt::Display for ZenohError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ZenohError {}

/// `s` without a trailing " at FILE.rs:LINE." (or without the final dot).
fn without_location(s: &str) -> &str {
    let Some(i) = s.rfind(" at ") else {
        return s;
    };
    let tail = &s[i + 4..];
    let tail = tail.strip_suffix('.').unwrap_or(tail);
    match tail.rsplit_once(':') {
        Some((file, line))
            if file.ends_with(".rs")
                && !line.is_empty()
                && line.bytes().all(|b| b.is_ascii_digit()) =>
        {
            &s[..i]
        }
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::without_location;

    #[test]
    fn zenoh_source_locations_are_cut_and_nothing_else() {
        let z = "failed to lookup address information: Name or service not known at \
                 /root/.cargo/registry/src/index/zenoh-link-commons-1.10.2/src/lib.rs:62.";
        assert_eq!(
            without_location(z),
            "failed to lookup address information: Name or service not known"
        );
        assert_eq!(without_location("denied at src/acl.rs:7"), "denied");
        for kept in [
            "connection refused",
            "listening at tcp/127.0.0.1:7447",
            "no route at x.rs:",
            "at a.rs:12",
        ] {
            assert_eq!(without_location(kept), kept);
        }
    }
}
