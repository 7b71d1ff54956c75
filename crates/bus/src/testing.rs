//! A ready-made record, and the behaviour every backend must show, as functions a backend's
//! tests call with a fresh bus each (they panic on a failure).

use std::time::{Duration, Instant};

use crate::{
    now_ns, Bus, Control, Echo, Publisher, PublisherQos, Receiver, Record, Securities, Sender,
    Subscriber, SubscriberQos,
};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Test record: 32 bytes, one per security update.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, IntoBytes, FromBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct TestRecord {
    /// The security.
    pub security_id: u32,
    /// A quantity.
    pub qty: u32,
    /// A price.
    pub price: i64,
    /// A running number.
    pub id: u64,
    /// Anything.
    pub flags: u64,
}

impl Record for TestRecord {
    const TYPE_NAME: &'static str = "testrecord";
    const LAYOUT_VERSION: u16 = 1;
    fn security_id(&self) -> u32 {
        self.security_id
    }
}

/// The `i`th test record: security `i % 10`, every field derived from `i`.
pub fn record(i: u64) -> TestRecord {
    TestRecord {
        security_id: (i % 10) as u32,
        qty: i as u32 * 3,
        price: -(i as i64) * 7,
        id: i,
        flags: i.rotate_left(17),
    }
}

/// 10,000 records arrive whole and in order, numbered per type and per security, stamped
/// with the publisher's id and a send time.
pub fn roundtrip_in_order<B: Bus>(bus: &B) {
    let mut sub = bus
        .subscriber::<TestRecord>(Securities::All, &SubscriberQos::default())
        .unwrap();
    let mut publisher = bus
        .publisher::<TestRecord>(&PublisherQos::default())
        .unwrap();
    let mut got = Vec::new();
    for i in 0..10_000u64 {
        assert_eq!(publisher.publish(&record(i)).unwrap(), i + 1);
        if i % 1000 == 999 {
            while let Some(env) = sub.try_recv().unwrap() {
                got.push(env);
            }
        }
    }
    assert_eq!(publisher.last_seq(), 10_000);
    assert_eq!(got.len(), 10_000);
    for (i, env) in got.iter().enumerate() {
        let i = i as u64;
        assert_eq!(env.seq, i + 1);
        assert_eq!(env.security_seq, i / 10 + 1, "10 securities in turn");
        assert_eq!(env.publisher, bus.id());
        assert_eq!(env.record, record(i));
        assert!(env.sent_ns > 0 && env.sent_ns <= now_ns());
    }
    let c = sub.counters();
    assert_eq!(
        (c.received, c.filtered_out, c.missed, c.missed_at_start),
        (10_000, 0, 0, 0)
    );
    assert_eq!(sub.seen_from(bus.id()), 10_000);
}

/// A subscriber of two securities gets exactly theirs and counts the rest as filtered out;
/// another subscriber's filter does not change what a subscriber of all gets.
pub fn filter_by_security<B: Bus>(bus: &B) {
    let qos = SubscriberQos::default();
    let mut sub = bus
        .subscriber::<TestRecord>(Securities::Only(vec![7, 3]), &qos)
        .unwrap();
    let mut all = bus.subscriber::<TestRecord>(Securities::All, &qos).unwrap();
    assert_eq!(sub.securities(), &Securities::Only(vec![3, 7]));
    let mut publisher = bus
        .publisher::<TestRecord>(&PublisherQos::default())
        .unwrap();
    for i in 0..1000 {
        publisher.publish(&record(i)).unwrap();
    }
    let mut got = Vec::new();
    while let Some(env) = sub.try_recv().unwrap() {
        got.push(env);
    }
    let expected: Vec<u64> = (0..1000).filter(|i| i % 10 == 3 || i % 10 == 7).collect();
    let ids: Vec<u64> = got.iter().map(|e| e.record.id).collect();
    assert_eq!(ids, expected);
    assert!(got.iter().all(|e| e.seq == e.record.id + 1));
    assert!(got.iter().all(|e| e.security_seq == e.record.id / 10 + 1));
    let c = sub.counters();
    assert_eq!((c.received, c.filtered_out, c.missed), (200, 800, 0));
    assert_eq!(sub.seen_up_to(), 1000);
    let mut n = 0;
    while all.try_recv().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 1000);
}

/// A screen with a queue of 256 that stops reading loses its oldest records, counted as
/// missed, and the publisher goes on at full speed.
pub fn slow_subscriber_loses_oldest<B: Bus>(bus: &B) {
    let qos = SubscriberQos {
        queue: 256,
        ..SubscriberQos::default()
    };
    let mut reads_once = bus.subscriber::<TestRecord>(Securities::All, &qos).unwrap();
    let mut never_reads = bus.subscriber::<TestRecord>(Securities::All, &qos).unwrap();
    let mut publisher = bus
        .publisher::<TestRecord>(&PublisherQos::default())
        .unwrap();
    publisher.publish(&record(0)).unwrap();
    assert_eq!(reads_once.try_recv().unwrap().unwrap().seq, 1);

    let start = Instant::now();
    for i in 1..=10_000 {
        publisher.publish(&record(i)).unwrap();
    }
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "publisher was slowed down"
    );
    for (sub, at_start, missed) in [
        (&mut reads_once, 0, 10_000 - 256),
        (&mut never_reads, 10_001 - 256, 0),
    ] {
        let mut seqs = Vec::new();
        while let Some(env) = sub.try_recv().unwrap() {
            assert_eq!(env.record, record(env.seq - 1));
            seqs.push(env.seq);
        }
        // Only the newest 256 records survive, contiguous and in order.
        assert_eq!(seqs, (10_001 - 255..=10_001).collect::<Vec<_>>());
        let c = sub.counters();
        assert_eq!((c.missed_at_start, c.missed), (at_start, missed));
    }
}

/// Control and echo messages reach a receiver of the same bus, whole.
pub fn aux_channels<B: Bus>(bus: &B) {
    let control_rx = bus.control_receiver().unwrap();
    let control_tx = bus.control_sender().unwrap();
    let echo_rx = bus.echo_receiver().unwrap();
    let echo_tx = bus.echo_sender().unwrap();
    let done = Control::new(Control::DONE, bus.id(), TestRecord::type_tag(), 99);
    control_tx.send(done).unwrap();
    assert_eq!(
        control_rx.recv_timeout(Duration::from_secs(1)).unwrap(),
        Some(done)
    );
    let echo = Echo {
        seq: 5,
        sent_ns: 6,
        type_tag: 7,
        subscriber: 8,
        publisher: bus.id(),
        _pad: 0,
    };
    echo_tx.send(echo).unwrap();
    assert_eq!(
        echo_rx.recv_timeout(Duration::from_secs(1)).unwrap(),
        Some(echo)
    );
    assert_eq!(
        echo_rx.recv_timeout(Duration::from_millis(10)).unwrap(),
        None
    );
}

/// Receives from `sub` until `n` envelopes came or `timeout` passed.
pub fn receive_n<R: Record, S: Subscriber<R>>(
    sub: &mut S,
    n: usize,
    timeout: Duration,
) -> Vec<crate::Envelope<R>> {
    let deadline = Instant::now() + timeout;
    let mut got = Vec::with_capacity(n);
    while got.len() < n && Instant::now() < deadline {
        match sub.try_recv().unwrap() {
            Some(env) => got.push(env),
            None => sub.pause(),
        }
    }
    got
}

/// For the checks across two buses (sessions, processes or hosts): the subscribing side says
/// HELLO on the control channel until the publishing side hears it, so that its subscribers,
/// made before, are known there. Panics after 20 s.
pub fn handshake<P: Bus, S: Bus>(publisher_bus: &P, subscriber_bus: &S) {
    let rx = publisher_bus.control_receiver().unwrap();
    let tx = subscriber_bus.control_sender().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        tx.send(Control::new(Control::HELLO, subscriber_bus.id(), 0, 0))
            .unwrap();
        if let Some(c) = rx.recv_timeout(Duration::from_millis(50)).unwrap() {
            if c.kind == Control::HELLO && c.sender == subscriber_bus.id() {
                return;
            }
        }
        assert!(Instant::now() < deadline, "no HELLO across the buses");
    }
}

/// [`roundtrip_in_order`] with the publisher on one bus and the subscriber on another:
/// 10,000 records arrive whole, in order, none missed. The subscriber is a recorder: a
/// screen drops its oldest records when this thread falls behind the bus's receiving
/// thread, as it may on a busy machine, by design.
pub fn roundtrip_across<P: Bus, S: Bus>(publisher_bus: &P, subscriber_bus: &S) {
    let qos = SubscriberQos {
        class: crate::SubscriberClass::Recorder,
        ..SubscriberQos::default()
    };
    let mut sub = subscriber_bus
        .subscriber::<TestRecord>(Securities::All, &qos)
        .unwrap();
    handshake(publisher_bus, subscriber_bus);
    let mut publisher = publisher_bus
        .publisher::<TestRecord>(&PublisherQos::default())
        .unwrap();
    let mut got = Vec::new();
    for i in 0..10_000u64 {
        assert_eq!(publisher.publish(&record(i)).unwrap(), i + 1);
        while let Some(env) = sub.try_recv().unwrap() {
            got.push(env);
        }
    }
    got.extend(receive_n(
        &mut sub,
        10_000 - got.len(),
        Duration::from_secs(10),
    ));
    assert_eq!(got.len(), 10_000, "counters: {:?}", sub.counters());
    for (i, env) in got.iter().enumerate() {
        let i = i as u64;
        assert_eq!((env.seq, env.security_seq), (i + 1, i / 10 + 1));
        assert_eq!(env.publisher, publisher_bus.id());
        assert_eq!(env.record, record(i));
    }
    let c = sub.counters();
    assert_eq!((c.received, c.missed, c.missed_at_start), (10_000, 0, 0));
}

/// [`filter_by_security`] across two buses.
pub fn filter_across<P: Bus, S: Bus>(publisher_bus: &P, subscriber_bus: &S) {
    let mut sub = subscriber_bus
        .subscriber::<TestRecord>(Securities::Only(vec![7, 3]), &SubscriberQos::default())
        .unwrap();
    handshake(publisher_bus, subscriber_bus);
    let mut publisher = publisher_bus
        .publisher::<TestRecord>(&PublisherQos::default())
        .unwrap();
    for i in 0..1000 {
        publisher.publish(&record(i)).unwrap();
    }
    let got = receive_n(&mut sub, 200, Duration::from_secs(10));
    let ids: Vec<u64> = got.iter().map(|e| e.record.id).collect();
    let expected: Vec<u64> = (0..1000).filter(|i| i % 10 == 3 || i % 10 == 7).collect();
    assert_eq!(ids, expected);
    // The last record (security 9) is filtered out: wait until it was seen.
    let deadline = Instant::now() + Duration::from_secs(10);
    while sub.seen_up_to() < 1000 && Instant::now() < deadline {
        assert!(sub.try_recv().unwrap().is_none());
        sub.pause();
    }
    let c = sub.counters();
    assert_eq!((c.received, c.filtered_out, c.missed), (200, 800, 0));
}

/// [`slow_subscriber_loses_oldest`] across two buses: a screen with a queue of 256 that stops
/// reading keeps the newest 256 records and counts the rest missed; the publisher is not
/// slowed. `settle` is how long delivery may take after the last record.
pub fn slow_across<P: Bus, S: Bus>(publisher_bus: &P, subscriber_bus: &S, settle: Duration) {
    let qos = SubscriberQos {
        queue: 256,
        ..SubscriberQos::default()
    };
    let mut sub = subscriber_bus
        .subscriber::<TestRecord>(Securities::All, &qos)
        .unwrap();
    handshake(publisher_bus, subscriber_bus);
    let mut publisher = publisher_bus
        .publisher::<TestRecord>(&PublisherQos::default())
        .unwrap();
    publisher.publish(&record(0)).unwrap();
    assert_eq!(receive_n(&mut sub, 1, Duration::from_secs(10))[0].seq, 1);
    let start = Instant::now();
    for i in 1..=10_000 {
        publisher.publish(&record(i)).unwrap();
    }
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "publisher was slowed down"
    );
    std::thread::sleep(settle);
    let mut seqs = Vec::new();
    while let Some(env) = sub.try_recv().unwrap() {
        assert_eq!(env.record, record(env.seq - 1));
        seqs.push(env.seq);
    }
    assert_eq!(seqs, (10_001 - 255..=10_001).collect::<Vec<_>>());
    let c = sub.counters();
    assert_eq!((c.missed_at_start, c.missed), (0, 10_000 - 256));
}
