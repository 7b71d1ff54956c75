//! Zenoh alone: two threads that declare a publisher on the same key at once lose samples.
//! THREADS publishing threads share one listening session, each putting N samples round-robin
//! over the same KEYS keys `t/<i>` (a publisher declared on a key's first sample, congestion
//! control Block), each thread numbering its samples per key. The subscribing session takes
//! `t/*`; with `--declare` it also declares every key it sees, from another thread, as a
//! recorder may (keys.rs). `--lock` makes the publishing threads declare one at a time, as
//! fastfeed does (`Declarations` in bus.rs). It prints the samples received, lost (gaps in a
//! thread's numbers on a key) and out of order, and the publishing session logs "Route data
//! with unknown scope" for each lost one when `RUST_LOG=error`.
//!
//! ```text
//! cargo run --release -p fastfeed-bus-zenoh --example zrace -- 2 2000 20000
//! cargo run --release -p fastfeed-bus-zenoh --example zrace -- 2 2000 20000 --lock
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use zenoh::Wait;

mod common;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let declare = args.iter().any(|a| a == "--declare");
    let lock = args.iter().any(|a| a == "--lock");
    zenoh::try_init_log_from_env();
    let mut numbers = args.iter().filter_map(|a| a.parse::<u64>().ok());
    let threads = numbers.next().unwrap_or(2).max(1) as usize;
    let keys = numbers.next().unwrap_or(500).max(1) as usize;
    let n = numbers.next().unwrap_or(200_000);
    let endpoint = "tcp/127.0.0.1:7498";
    let (publishing, subscribing) = common::pair(endpoint);

    // Next number expected per key; counts of samples, gaps and repeats.
    let next = Arc::new(Mutex::new(vec![0u64; threads * keys]));
    let (got, lost, behind) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let (seen_tx, seen_rx) = mpsc::channel::<usize>();
    let (g, l, b, nx) = (got.clone(), lost.clone(), behind.clone(), next.clone());
    let _subscriber = subscribing
        .declare_subscriber("t/*")
        .callback(move |sample| {
            let p = sample.payload().to_bytes();
            let key = u64::from_le_bytes(p[..8].try_into().unwrap()) as usize;
            let num = u64::from_le_bytes(p[8..16].try_into().unwrap());
            let mut next = nx.lock().unwrap();
            let want = next[key];
            if num == 0 {
                let _ = seen_tx.send(key);
            }
            if num >= want {
                l.fetch_add(num - want, Ordering::Relaxed);
                next[key] = num + 1;
            } else {
                b.fetch_add(1, Ordering::Relaxed);
            }
            g.fetch_add(1, Ordering::Relaxed);
        })
        .wait()
        .expect("subscriber");
    let declarer = {
        let session = subscribing.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for key in seen_rx {
                if declare && key < keys {
                    held.push(session.declare_keyexpr(format!("t/{key}")).wait());
                }
            }
            held.len()
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let start = Instant::now();
    let declaring = Arc::new(Mutex::new(()));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let session = publishing.clone();
            let declaring = declaring.clone();
            std::thread::spawn(move || {
                let mut publishers: Vec<Option<zenoh::pubsub::Publisher>> =
                    (0..keys).map(|_| None).collect();
                let mut numbers = vec![0u64; keys];
                for j in 0..n {
                    let i = j as usize % keys;
                    let p = publishers[i].get_or_insert_with(|| {
                        let _declaring = lock.then(|| declaring.lock().unwrap());
                        session
                            .declare_publisher(format!("t/{i}"))
                            .congestion_control(zenoh::qos::CongestionControl::Block)
                            .wait()
                            .expect("publisher")
                    });
                    let mut payload = [0u8; 64];
                    payload[..8].copy_from_slice(&((t * keys + i) as u64).to_le_bytes());
                    payload[8..16].copy_from_slice(&numbers[i].to_le_bytes());
                    numbers[i] += 1;
                    p.put(&payload[..]).wait().expect("put");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let total = n * threads as u64;
    while got.load(Ordering::Relaxed) < total && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let elapsed = start.elapsed();
    // Samples never followed by a later one on their key are lost too.
    let tail: u64 = next
        .lock()
        .unwrap()
        .iter()
        .map(|&k| (n / keys as u64).saturating_sub(k).min(n))
        .sum();
    drop(_subscriber);
    drop(subscribing);
    let declared = declarer.join().unwrap();
    println!(
        "{threads} threads x {keys} keys{}{}: {} of {total} samples in {elapsed:.2?}, lost {} (+{tail} at the end), out of order {}, {declared} keys declared by the subscriber",
        if lock { ", one declaration at a time" } else { "" },
        if declare { ", subscriber declaring" } else { "" },
        got.load(Ordering::Relaxed),
        lost.load(Ordering::Relaxed),
        behind.load(Ordering::Relaxed),
    );
}
