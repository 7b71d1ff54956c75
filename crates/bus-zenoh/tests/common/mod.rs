//! What the Zenoh bus's test files share: loopback endpoints and a connected pair of sessions.

use fastfeed_bus_zenoh::{ZenohBus, ZenohConfig};
use std::net::TcpListener;
use std::time::Duration;

/// A loopback endpoint on a port that was free a moment ago.
pub fn endpoint() -> String {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("tcp/127.0.0.1:{port}")
}

/// Two sessions of `feed`, the second connected to the first over TCP loopback. The first
/// publishes and waits when its link is congested rather than drop (what a recorder's feed
/// is configured to do), so "none missed" holds on a machine too busy to run Zenoh's sending
/// task in time; a subscriber's own queue still drops its oldest when full.
#[allow(dead_code)] // acl.rs makes its own sessions
pub fn pair(feed: &str) -> (ZenohBus, ZenohBus) {
    let ep = endpoint();
    let a = ZenohBus::new(
        feed,
        ZenohConfig {
            listen: vec![ep.clone()],
            block_when_congested: true,
            ..ZenohConfig::default()
        },
    )
    .unwrap();
    let b = ZenohBus::new(
        feed,
        ZenohConfig {
            connect: vec![ep],
            ..ZenohConfig::default()
        },
    )
    .unwrap();
    assert_eq!(b.wait_for_peers(1, Duration::from_secs(10)), 1);
    (a, b)
}

/// Asserts that `bus` finds no peer within half a second: its session was refused.
#[allow(dead_code)] // bus.rs and late.rs refuse nobody
pub fn never_connects(bus: &ZenohBus, what: &str) {
    assert_eq!(
        bus.wait_for_peers(1, Duration::from_millis(500)),
        0,
        "{what}"
    );
}
