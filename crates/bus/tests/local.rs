//! The in-process bus shows the behaviour every backend must (`fastfeed_bus::testing`), and
//! the generic echo loop runs over it between threads.

use fastfeed_bus::testing::{self, record, TestRecord};
use fastfeed_bus::{
    now_ns, serve_echo, Bus, Control, LocalBus, Publisher, PublisherQos, Receiver, Record,
    Securities, Sender, Subscriber, SubscriberQos,
};
use std::time::{Duration, Instant};

fn bus() -> LocalBus {
    LocalBus::new("local").unwrap()
}

#[test]
fn roundtrip_in_order() {
    testing::roundtrip_in_order(&bus());
}

#[test]
fn filter_by_security() {
    testing::filter_by_security(&bus());
}

#[test]
fn slow_subscriber_loses_oldest() {
    testing::slow_subscriber_loses_oldest(&bus());
}

#[test]
fn aux_channels() {
    testing::aux_channels(&bus());
}

#[test]
fn reserved_and_bad_names_are_refused() {
    assert!(LocalBus::new("a/b").is_err());
    #[derive(
        Debug,
        Clone,
        Copy,
        zerocopy::IntoBytes,
        zerocopy::FromBytes,
        zerocopy::Immutable,
        zerocopy::KnownLayout,
    )]
    #[repr(C)]
    struct Echoish(u32);
    impl Record for Echoish {
        const TYPE_NAME: &'static str = "echo";
        const LAYOUT_VERSION: u16 = 1;
        fn security_id(&self) -> u32 {
            self.0
        }
    }
    assert!(bus()
        .publisher::<Echoish>(&PublisherQos::default())
        .is_err());
}

/// Two publishers on one feed: each subscriber accounts for each publisher on its own, and
/// the envelopes say whose they are.
#[test]
fn two_publishers_are_told_apart() {
    let a = bus();
    let b = a.join();
    assert_ne!(a.id(), b.id());
    let mut sub = a
        .subscriber::<TestRecord>(Securities::All, &SubscriberQos::default())
        .unwrap();
    let mut pa = a.publisher::<TestRecord>(&PublisherQos::default()).unwrap();
    let mut pb = b.publisher::<TestRecord>(&PublisherQos::default()).unwrap();
    for i in 0..10 {
        pa.publish(&record(i)).unwrap();
        if i % 2 == 0 {
            pb.publish(&record(i)).unwrap();
        }
    }
    let mut from = (0, 0);
    while let Some(env) = sub.try_recv().unwrap() {
        if env.publisher == a.id() {
            from.0 += 1;
        } else {
            assert_eq!(env.publisher, b.id());
            from.1 += 1;
        }
    }
    assert_eq!(from, (10, 5));
    assert_eq!((sub.seen_from(a.id()), sub.seen_from(b.id())), (10, 5));
    assert_eq!(sub.counters().missed, 0);
}

/// `serve_echo` in a thread answers every record of the publisher's thread, then stops at
/// its Done.
#[test]
fn serve_echo_between_threads() {
    let publisher_bus = bus();
    let subscriber_bus = publisher_bus.join();
    let control_rx = publisher_bus.control_receiver().unwrap();
    let echo_rx = publisher_bus.echo_receiver().unwrap();
    let child = std::thread::spawn(move || {
        serve_echo::<_, TestRecord>(
            &subscriber_bus,
            Securities::All,
            77,
            Duration::from_secs(10),
        )
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match control_rx.recv_timeout(Duration::from_millis(50)).unwrap() {
            Some(c) if c.kind == Control::HELLO => break,
            _ => assert!(Instant::now() < deadline, "no HELLO"),
        }
    }
    let mut p = publisher_bus
        .publisher::<TestRecord>(&PublisherQos::default())
        .unwrap();
    for i in 0..1000 {
        p.publish(&record(i)).unwrap();
    }
    let control_tx = publisher_bus.control_sender().unwrap();
    let done = Control::new(
        Control::DONE,
        publisher_bus.id(),
        TestRecord::type_tag(),
        p.last_seq(),
    );
    control_tx.send(done).unwrap();
    let stats = child.join().unwrap().unwrap();
    assert!(stats.complete);
    assert_eq!((stats.echoed, stats.done_seq), (1000, Some(1000)));
    let mut seqs = Vec::new();
    while let Some(e) = echo_rx.try_recv().unwrap() {
        assert_eq!((e.subscriber, e.publisher), (77, publisher_bus.id()));
        assert!(e.sent_ns <= now_ns());
        seqs.push(e.seq);
    }
    assert_eq!(seqs, (1..=1000).collect::<Vec<_>>());
}
