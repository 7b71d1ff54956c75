//! Zenoh alone, without fastfeed's bus: samples per second from one session to another over
//! loopback TCP, round-robin over KEYS keys `t/<i>`, the subscriber on `t/*`. With `--declare`
//! the subscribing session declares each key too, as `ZenohSubscriber` does (see keys.rs):
//!
//! ```text
//! cargo run --release -p fastfeed-bus-zenoh --example zrate -- 1000 2000000
//! cargo run --release -p fastfeed-bus-zenoh --example zrate -- 1000 2000000 --declare
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zenoh::Wait;

mod common;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let declare = args.iter().any(|a| a == "--declare");
    let mut numbers = args.iter().filter_map(|a| a.parse::<u64>().ok());
    let keys = numbers.next().unwrap_or(1).max(1) as usize;
    let n = numbers.next().unwrap_or(1_000_000);
    let endpoint = "tcp/127.0.0.1:7499";
    let (publishing, subscribing) = common::pair(endpoint);
    let got = Arc::new(AtomicU64::new(0));
    let counter = got.clone();
    let _subscriber = subscribing
        .declare_subscriber("t/*")
        .callback(move |_| {
            counter.fetch_add(1, Ordering::Relaxed);
        })
        .wait()
        .expect("subscriber");
    let _declared: Vec<_> = (0..keys)
        .filter(|_| declare)
        .map(|i| {
            subscribing
                .declare_keyexpr(format!("t/{i}"))
                .wait()
                .expect("declare")
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let publishers: Vec<_> = (0..keys)
        .map(|i| {
            publishing
                .declare_publisher(format!("t/{i}"))
                .congestion_control(zenoh::qos::CongestionControl::Block)
                .wait()
                .expect("publisher")
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let payload = [7u8; 64];
    let start = Instant::now();
    for i in 0..n {
        publishers[i as usize % keys]
            .put(&payload[..])
            .wait()
            .expect("put");
    }
    while got.load(Ordering::Relaxed) < n && start.elapsed() < Duration::from_secs(30) {
        std::thread::yield_now();
    }
    let elapsed = start.elapsed();
    let got = got.load(Ordering::Relaxed);
    println!(
        "{keys} keys{}: {got} of {n} samples in {elapsed:.2?}: {:.0} k samples/s",
        if declare {
            ", declared by the subscriber"
        } else {
            ""
        },
        got as f64 / elapsed.as_secs_f64() / 1e3
    );
}
