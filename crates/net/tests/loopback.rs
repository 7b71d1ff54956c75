//! Multicast over the loopback interface. Skipped (with a message) when loopback
//! multicast is unavailable on the machine.

use fastfeed_net::{
    loopback_multicast_works, realtime_ns, FaultConfig, FaultInjector, McastReceiver, McastSender,
    StampedRecv, BATCH, LOOPBACK_HINT,
};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

const LO: Ipv4Addr = Ipv4Addr::LOCALHOST;

/// Random group 239.x.y.z and port, so parallel tests do not see each other.
fn random_group() -> SocketAddrV4 {
    let mut rng = fastrand::Rng::new();
    SocketAddrV4::new(
        Ipv4Addr::new(239, rng.u8(1..255), rng.u8(..), rng.u8(1..255)),
        rng.u16(20000..60000),
    )
}

/// Multicast on loopback is a requirement of these tests, not an excuse to skip them: a
/// machine without it fails here with the fix in the message.
fn available() -> bool {
    assert!(
        loopback_multicast_works(),
        "multicast on loopback does not work: {LOOPBACK_HINT}"
    );
    true
}

/// Sends `datagrams`, pacing a few µs so the loopback path does not drop, and
/// receives until the expected count or a 2 s deadline.
fn send_and_receive(datagrams: &[Vec<u8>], expected: usize) -> Vec<Vec<u8>> {
    let group = random_group();
    let rx = McastReceiver::new(group, LO).unwrap();
    assert!(rx.recv_buffer_size() > 0);
    eprintln!("SO_RCVBUF granted: {} bytes", rx.recv_buffer_size());
    let tx = McastSender::new(group, LO, 1, true).unwrap();
    for d in datagrams {
        assert_eq!(tx.send(d).unwrap(), d.len());
        let t = Instant::now();
        while t.elapsed() < Duration::from_micros(5) {
            std::hint::spin_loop();
        }
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut got = Vec::new();
    let mut buf = [0u8; 2048];
    while got.len() < expected {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        rx.set_read_timeout(Some(left)).unwrap();
        match rx.recv(&mut buf) {
            Ok(n) => got.push(buf[..n].to_vec()),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                break
            }
            Err(e) => panic!("recv: {e}"),
        }
    }
    got
}

fn numbered(n: u32) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let mut d = i.to_be_bytes().to_vec();
            d.resize(64 + (i as usize % 1000), i as u8); // varying sizes up to ~1 KB
            d
        })
        .collect()
}

#[test]
fn thousand_datagrams_in_order() {
    if !available() {
        return;
    }
    let sent = numbered(1000);
    let got = send_and_receive(&sent, 1000);
    assert_eq!(got.len(), 1000, "lost datagrams on loopback");
    assert_eq!(got, sent);
}

#[test]
fn faults_reach_the_receiver() {
    if !available() {
        return;
    }
    let input = numbered(1000);
    let config = FaultConfig {
        drop: 0.02,
        duplicate: 0.02,
        reorder: 0.02,
        ..FaultConfig::default()
    };
    let mut inj = FaultInjector::new(config, 5).unwrap();
    let planned = inj.apply(input.iter().map(|d| d.as_slice()));
    let c = inj.counts();
    assert_eq!(planned.len() as u64, 1000 - c.dropped + c.duplicated);
    let got = send_and_receive(&planned, planned.len());
    assert_eq!(got, planned);
}

#[test]
fn rejects_non_multicast_group() {
    let unicast = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 5000);
    assert!(McastSender::new(unicast, LO, 1, true).is_err());
    assert!(McastReceiver::new(unicast, LO).is_err());
}

/// An overflowing receive buffer is visible: every datagram sent is either received or
/// counted in the kernel's drop counter for the socket.
#[test]
fn receive_buffer_overflow_is_counted() {
    assert!(available());
    let group = random_group();
    // The smallest buffer the kernel grants (a few KiB): a burst overflows it.
    let rx = McastReceiver::with_buffer(group, LO, 1).unwrap();
    assert!(
        rx.recv_buffer_size() < 64 << 10,
        "{}",
        rx.recv_buffer_size()
    );
    assert_eq!(rx.kernel_drops(), Some(0));
    let tx = McastSender::new(group, LO, 1, true).unwrap();
    let sent = 200;
    for i in 0..sent {
        tx.send(&[i as u8; 1000]).unwrap();
    }
    rx.set_nonblocking(true).unwrap();
    let mut received = 0;
    let mut buf = [0u8; 2048];
    while rx.recv(&mut buf).is_ok() {
        received += 1;
    }
    let drops = rx.kernel_drops().unwrap();
    assert!(drops > 0, "received {received}, no drops");
    assert_eq!(
        received + drops,
        sent,
        "received {received}, dropped {drops}"
    );
    let hint = fastfeed_net::overflow_hint(drops, rx.recv_buffer_size());
    assert!(hint.contains(&format!("dropped {drops} datagrams")) && hint.contains("-s"));
}

/// A sender whose datagrams leave from `from` (an address of the loopback interface), as
/// two hosts sending to one group would.
fn sender_from(from: Ipv4Addr) -> std::net::UdpSocket {
    use socket2::{Domain, Protocol, SockAddr, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
    s.set_multicast_if_v4(&LO).unwrap();
    s.set_multicast_loop_v4(true).unwrap();
    s.bind(&SockAddr::from(SocketAddrV4::new(from, 0))).unwrap();
    s.into()
}

/// Everything `rx` has queued within 300 ms.
fn drain(rx: &McastReceiver) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = [0u8; 64];
    rx.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    while let Ok(n) = rx.recv(&mut buf) {
        got.push(buf[..n].to_vec());
    }
    got
}

#[test]
fn a_source_specific_join_takes_only_that_senders_datagrams() {
    assert!(available());
    let group = random_group();
    let (one, two) = (Ipv4Addr::new(127, 0, 0, 1), Ipv4Addr::new(127, 0, 0, 2));
    let from_one = McastReceiver::join(group, Some(one), LO).unwrap();
    let from_two = McastReceiver::join(group, Some(two), LO).unwrap();
    let any = McastReceiver::join(group, None, LO).unwrap();
    assert_eq!((from_one.source(), any.source()), (Some(one), None));
    for i in 0..3u8 {
        sender_from(one).send_to(&[1, i], group).unwrap();
        sender_from(two).send_to(&[2, i], group).unwrap();
    }
    let (a, b, c) = (drain(&from_one), drain(&from_two), drain(&any));
    assert_eq!(a, [[1, 0], [1, 1], [1, 2]]);
    assert_eq!(b, [[2, 0], [2, 1], [2, 2]]);
    assert_eq!(c.len(), 6, "{c:?}");
    for bad in [Ipv4Addr::UNSPECIFIED, Ipv4Addr::BROADCAST, *group.ip()] {
        let err = McastReceiver::join(group, Some(bad), LO).unwrap_err();
        assert!(
            err.to_string().contains("cannot be a multicast source"),
            "{err}"
        );
    }
}

#[test]
fn the_kernel_stamps_each_arrival() {
    if !available() {
        return;
    }
    let group = random_group();
    let (stamped, plain) = (
        McastReceiver::new(group, LO).unwrap(),
        McastReceiver::new(group, LO).unwrap(),
    );
    stamped.stamp_arrivals().unwrap();
    // The kernel turns timestamping on for its receive path a moment later (deferred work);
    // a datagram that comes before is stamped when read.
    std::thread::sleep(Duration::from_millis(100));
    for rx in [&stamped, &plain] {
        rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    }
    let tx = McastSender::new(group, LO, 1, true).unwrap();
    let mut recv = StampedRecv::new();
    let mut buf = [0u8; 64];
    let mut last = 0;
    for i in 0..20u32 {
        let before = realtime_ns();
        tx.send(&i.to_be_bytes()).unwrap();
        // Taken a while after it came in, so the stamp is the arrival, not the read.
        std::thread::sleep(Duration::from_millis(2));
        let (n, at) = recv.recv(&stamped, &mut buf).unwrap();
        let after = realtime_ns();
        assert_eq!(&buf[..n], i.to_be_bytes());
        let at = at.expect("a stamped socket's datagram carries the kernel's time");
        assert!(
            before <= at && at + 1_000_000 <= after,
            "{before} {at} {after}"
        );
        assert!(at > last);
        last = at;
        // A socket without timestamps says so.
        let (n, at) = recv.recv(&plain, &mut buf).unwrap();
        assert_eq!((&buf[..n], at), (&i.to_be_bytes()[..], None));
    }
    // Non-blocking and empty: WouldBlock, as recv says it.
    stamped.set_nonblocking(true).unwrap();
    let e = recv.recv(&stamped, &mut buf).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
    // In batches: a burst of 40 comes in calls of BATCH, each datagram with its stamp (and,
    // after the first batch, its sender), in order; `most` caps a call; an empty socket says WouldBlock without waiting.
    let before = realtime_ns();
    for i in 100..140u32 {
        tx.send(&i.to_be_bytes()).unwrap();
    }
    std::thread::sleep(Duration::from_millis(20));
    let (mut got, mut sizes, mut last) = (Vec::new(), Vec::new(), before);
    loop {
        let most = if sizes.is_empty() { 5 } else { usize::MAX };
        match recv.recv_batch(&stamped, most) {
            Ok(n) => {
                sizes.push(n);
                let first = sizes.len() == 1;
                for k in 0..n {
                    let (d, at) = recv.datagram(k);
                    let at = at.expect("stamped");
                    // And who sent it, once asked for: the sender's socket on the loopback
                    // interface.
                    if first {
                        assert_eq!(recv.sender(k), None);
                    } else {
                        let from = recv.sender(k).expect("the sender's address");
                        assert_eq!((*from.ip(), from.port() > 0), (LO, true), "{from}");
                    }
                    assert!(at >= last && at <= realtime_ns());
                    last = at;
                    got.push(u32::from_be_bytes(d.try_into().unwrap()));
                }
                recv.keep_senders();
            }
            Err(e) => {
                assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
                break;
            }
        }
    }
    assert_eq!(sizes, [5, BATCH, BATCH, 35 - 2 * BATCH]);
    assert_eq!(got, (100..140).collect::<Vec<_>>());
    // The plain socket, never set non-blocking, is not waited on either.
    plain.set_read_timeout(None).unwrap();
    assert_eq!(recv.recv_batch(&plain, 64).unwrap(), BATCH);
}
