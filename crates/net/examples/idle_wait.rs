//! How long a datagram waits for a receiver that was idle: the receiver either sleeps a
//! fixed time between empty reads (`sleep US`) or blocks in `poll(2)` on the socket
//! (`poll`), or never stops reading (`spin`). A sender on another thread sends one datagram
//! every INTERVAL µs carrying its send time; the receiver prints p50/p90/p99 of receive time
//! less send time. `cargo run --release -p fastfeed-net --example idle_wait -- poll 2000 2000`
use fastfeed_net::{Lines, McastReceiver, McastSender};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("poll");
    let sleep_us: u64 = if mode == "sleep" {
        args.get(1).and_then(|s| s.parse().ok()).unwrap_or(200)
    } else {
        0
    };
    let rest = if mode == "sleep" {
        &args[2..]
    } else {
        &args[1.min(args.len())..]
    };
    let n: usize = rest.first().and_then(|s| s.parse().ok()).unwrap_or(2000);
    let interval_us: u64 = rest.get(1).and_then(|s| s.parse().ok()).unwrap_or(2000);
    let lo = Ipv4Addr::LOCALHOST;
    let group = SocketAddrV4::new(
        Ipv4Addr::new(239, 255, 77, 7),
        40000 + std::process::id() as u16 % 20000,
    );
    let lines = Lines::join(&[group], None, lo).expect("join");
    let origin = Instant::now();
    let sender = std::thread::spawn(move || {
        let tx = McastSender::new(group, lo, 1, true).expect("sender");
        for _ in 0..n {
            std::thread::sleep(Duration::from_micros(interval_us));
            let sent = origin.elapsed().as_nanos() as u64;
            tx.send(&sent.to_le_bytes()).expect("send");
        }
    });
    let rx: &McastReceiver = &lines.receivers()[0];
    let mut waits = Vec::with_capacity(n);
    let mut buf = [0u8; 64];
    while waits.len() < n {
        match rx.recv(&mut buf) {
            Ok(8) => {
                let now = origin.elapsed().as_nanos() as u64;
                let sent = u64::from_le_bytes(buf[..8].try_into().expect("8"));
                waits.push(now.saturating_sub(sent));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => match mode {
                "sleep" => std::thread::sleep(Duration::from_micros(sleep_us)),
                "spin" => std::hint::spin_loop(),
                _ => lines.wait(Duration::from_millis(1)).expect("poll"),
            },
            Err(e) => panic!("{e}"),
        }
    }
    sender.join().expect("sender");
    waits.sort_unstable();
    let q = |p: f64| waits[((waits.len() - 1) as f64 * p) as usize] as f64 / 1e3;
    println!(
        "{mode}{}: {n} datagrams every {interval_us} us, wait p50 {:.1} us, p90 {:.1}, p99 {:.1}",
        if mode == "sleep" {
            format!(" {sleep_us} us")
        } else {
            String::new()
        },
        q(0.5),
        q(0.9),
        q(0.99)
    );
}
