//! What the kernel's receive timestamps cost a reader: two sockets joined to one group take
//! the same datagrams, one plain (`recv`), one stamped (`SO_TIMESTAMPNS`, `recvmsg` and its
//! control message); each round sends BURST datagrams, then drains both sockets in turn
//! (their order alternating) and times each drain; a third socket, without timestamps, is
//! read through `recvmsg` too, to tell the call's cost from the timestamp's, and a fourth,
//! stamped, `recvmmsg` a batch at a time (`StampedRecv::recv_batch`, as the live handler
//! reads), and a fifth the same with each datagram's sender (`keep_senders`, as a recording
//! reads). Prints ns per datagram, median of the rounds. `cargo run --release -p fastfeed-net --example stamped_recv -- 200 100`
use fastfeed_net::{McastReceiver, McastSender, StampedRecv};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

fn drain(mut read: impl FnMut() -> bool) -> (usize, Duration) {
    let t = Instant::now();
    let mut n = 0;
    while read() {
        n += 1;
    }
    (n, t.elapsed())
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let burst = args.first().copied().unwrap_or(200);
    let rounds = args.get(1).copied().unwrap_or(100);
    let lo = Ipv4Addr::LOCALHOST;
    let group = SocketAddrV4::new(
        Ipv4Addr::new(239, 255, 77, 8),
        40000 + std::process::id() as u16 % 20000,
    );
    let plain = McastReceiver::new(group, lo).expect("join");
    let stamped = McastReceiver::new(group, lo).expect("join");
    let unstamped_rx = McastReceiver::new(group, lo).expect("join");
    let batched = McastReceiver::new(group, lo).expect("join");
    let with_senders = McastReceiver::new(group, lo).expect("join");
    stamped.stamp_arrivals().expect("SO_TIMESTAMPNS");
    batched.stamp_arrivals().expect("SO_TIMESTAMPNS");
    with_senders.stamp_arrivals().expect("SO_TIMESTAMPNS");
    for rx in [&plain, &stamped, &unstamped_rx, &batched, &with_senders] {
        rx.set_nonblocking(true).expect("non-blocking");
    }
    std::thread::sleep(Duration::from_millis(100));
    let tx = McastSender::new(group, lo, 1, true).expect("sender");
    let payload = [7u8; 200];
    let mut recv = StampedRecv::new();
    let mut buf = vec![0u8; 65_536];
    let (mut p, mut s, mut m, mut batched_ns) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut batch = StampedRecv::new();
    let mut senders = StampedRecv::new();
    senders.keep_senders();
    let (mut senders_ns, mut missing) = (Vec::new(), 0);
    let (mut unstamped, mut none) = (0, 0);
    for round in 0..rounds {
        for _ in 0..burst {
            tx.send(&payload).expect("send");
        }
        std::thread::sleep(Duration::from_millis(2));
        let mut plain_drain = || drain(|| plain.recv(&mut buf).is_ok());
        let (a, b) = if round % 2 == 0 {
            let a = plain_drain();
            (a, drain(|| recv_one(&mut recv, &stamped, &mut unstamped)))
        } else {
            let b = drain(|| recv_one(&mut recv, &stamped, &mut unstamped));
            (plain_drain(), b)
        };
        let c = drain(|| recv_one(&mut recv, &unstamped_rx, &mut none));
        let t = Instant::now();
        let mut d = 0;
        while let Ok(got) = batch.recv_batch(&batched, usize::MAX) {
            unstamped += (0..got).filter(|&i| batch.datagram(i).1.is_none()).count();
            d += got;
        }
        let d = (d, t.elapsed());
        let t = Instant::now();
        let mut e = 0;
        while let Ok(got) = senders.recv_batch(&with_senders, usize::MAX) {
            missing += (0..got).filter(|&i| senders.sender(i).is_none()).count();
            e += got;
        }
        let e = (e, t.elapsed());
        if [a.0, b.0, c.0, d.0, e.0] == [burst; 5] {
            senders_ns.push(e.1.as_nanos() as f64 / burst as f64);
            p.push(a.1.as_nanos() as f64 / burst as f64);
            s.push(b.1.as_nanos() as f64 / burst as f64);
            m.push(c.1.as_nanos() as f64 / burst as f64);
            batched_ns.push(d.1.as_nanos() as f64 / burst as f64);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let senders_ns = median(&mut senders_ns);
    let (mp, ms, mm, mb) = (
        median(&mut p),
        median(&mut s),
        median(&mut m),
        median(&mut batched_ns),
    );
    println!(
        "{} rounds of {burst} datagrams, ns a datagram: recv {mp:.0}, recvmsg {mm:.0}, recvmsg stamped {ms:.0} (+{:.0} over recv), recvmmsg stamped {mb:.0}, and with senders {senders_ns:.0}; {unstamped} of the stamped unstamped, {missing} senders missing",
        p.len(),
        ms - mp
    );
}

fn recv_one(recv: &mut StampedRecv, rx: &McastReceiver, unstamped: &mut usize) -> bool {
    let mut buf = [0u8; 2048];
    match recv.recv(rx, &mut buf) {
        Ok((_, stamp)) => {
            *unstamped += stamp.is_none() as usize;
            true
        }
        Err(_) => false,
    }
}
