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
