//! Zenoh alone: round trips between two sessions over loopback TCP, the floor under
//! fastfeed's own figures. One session puts on `ping` (express), the other answers each
//! sample on `pong` from its callback; N pings, one at a time, every PAUSE_US.
//!
//! ```text
//! cargo run --release -p fastfeed-bus-zenoh --example zping -- 10000 200
//! ```
//!
//! `ZPING_TL0=1`: Zenoh's batching time limit at 0 (sending tasks never wait for more);
//! `ZPING_LOWLATENCY=1`: Zenoh's low-latency transport (QoS off).

use std::sync::mpsc;
use std::time::{Duration, Instant};

use zenoh::Wait;

mod common;

/// The shared configuration, with the variant the environment asks for.
fn config(kind: &str, endpoint: &str) -> zenoh::Config {
    let mut c = common::config(kind, endpoint);
    if std::env::var_os("ZPING_TL0").is_some() {
        c.insert_json5("transport/link/tx/queue/batching/time_limit", "0")
            .expect("time limit");
    }
    if std::env::var_os("ZPING_LOWLATENCY").is_some() {
        c.insert_json5("transport/unicast/lowlatency", "true")
            .expect("lowlatency");
        c.insert_json5("transport/unicast/qos/enabled", "false")
            .expect("qos");
    }
    c
}

fn main() {
    let mut numbers = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse::<u64>().ok());
    let n = numbers.next().unwrap_or(10_000);
    let pause = Duration::from_micros(numbers.next().unwrap_or(200));
    let endpoint = "tcp/127.0.0.1:7498";
    let (a, b) = common::pair_with(endpoint, config);
    let pong = b
        .declare_publisher("pong")
        .express(true)
        .wait()
        .expect("pong publisher");
    let _answer = b
        .declare_subscriber("ping")
        .callback(move |s| {
            let _ = pong.put(s.payload().clone()).wait();
        })
        .wait()
        .expect("ping subscriber");
    let (tx, rx) = mpsc::channel::<Instant>();
    let _back = a
        .declare_subscriber("pong")
        .callback(move |_| {
            let _ = tx.send(Instant::now());
        })
        .wait()
        .expect("pong subscriber");
    let ping = a
        .declare_publisher("ping")
        .express(true)
        .wait()
        .expect("ping publisher");
    std::thread::sleep(Duration::from_millis(500));
    let mut rtt = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let sent = Instant::now();
        ping.put(&[1u8; 64][..]).wait().expect("put");
        if let Ok(back) = rx.recv_timeout(Duration::from_secs(1)) {
            rtt.push(back.duration_since(sent).as_nanos() as u64);
        }
        std::thread::sleep(pause);
    }
    rtt.sort_unstable();
    let q = |p: f64| rtt[((rtt.len() - 1) as f64 * p) as usize] as f64 / 1e3;
    println!(
        "{} of {n} round trips, us: p50 {:.1} p90 {:.1} p99 {:.1}",
        rtt.len(),
        q(0.5),
        q(0.9),
        q(0.99)
    );
}
