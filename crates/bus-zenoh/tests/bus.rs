//! The Zenoh bus passes the bus's conformance checks: in one session (local delivery), between
//! two sessions over TCP loopback in one process, and between two processes.

mod common;

use fastfeed_bus::testing::{self, record, TestRecord};
use fastfeed_bus::{
    serve_echo, Bus, Control, Publisher, PublisherQos, Receiver, Record, Securities, Sender,
};
use fastfeed_bus_zenoh::{ZenohBus, ZenohConfig};
use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn feed(test: &str) -> String {
    format!("t{}-{test}", std::process::id())
}

/// A session on its own: no endpoints, no scouting.
fn alone(test: &str) -> ZenohBus {
    ZenohBus::new(&feed(test), ZenohConfig::default()).unwrap()
}

/// Two sessions of the test's feed over TCP loopback ([`common::pair`]).
fn pair(test: &str) -> (ZenohBus, ZenohBus) {
    common::pair(&feed(test))
}

#[test]
fn roundtrip_in_order_in_one_session() {
    testing::roundtrip_in_order(&alone("rt"));
}

#[test]
fn filter_by_security_in_one_session() {
    testing::filter_by_security(&alone("filter"));
}

#[test]
fn slow_subscriber_in_one_session() {
    testing::slow_subscriber_loses_oldest(&alone("slow"));
}

#[test]
fn aux_channels_in_one_session() {
    testing::aux_channels(&alone("aux"));
}

#[test]
fn roundtrip_across_sessions() {
    let (a, b) = pair("xrt");
    testing::roundtrip_across(&a, &b);
}

#[test]
fn filter_across_sessions() {
    let (a, b) = pair("xfilter");
    testing::filter_across(&a, &b);
}

#[test]
fn slow_subscriber_across_sessions() {
    let (a, b) = pair("xslow");
    testing::slow_across(&a, &b, Duration::from_millis(500));
}

#[test]
fn aux_channels_across_sessions() {
    let (a, b) = pair("xaux");
    testing::handshake(&a, &b);
    let done = Control::new(Control::DONE, a.id(), TestRecord::type_tag(), 9);
    let rx = b.control_receiver().unwrap();
    testing::handshake(&b, &a);
    a.control_sender().unwrap().send(done).unwrap();
    // The handshake's HELLOs came first.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match rx.recv_timeout(Duration::from_millis(100)).unwrap() {
            Some(c) if c.kind == Control::HELLO => {}
            Some(c) => break assert_eq!(c, done),
            None => assert!(Instant::now() < deadline, "no DONE"),
        }
    }
}

#[test]
fn foreign_samples_are_counted_not_delivered() {
    let bus = alone("foreign");
    let sub = bus
        .subscriber::<TestRecord>(Securities::All, &Default::default())
        .unwrap();
    use zenoh::Wait;
    let key = format!("fastfeed/{}/testrecord/1", feed("foreign"));
    bus.session().put(&key, "not a record").wait().unwrap();
    bus.session().put(&key, vec![0u8; 72]).wait().unwrap();
    let mut sub = sub;
    use fastfeed_bus::Subscriber;
    assert!(sub.try_recv().unwrap().is_none());
    assert_eq!(sub.rejected(), 2);
    // Through the bus interface too, as the CLI subscriber's report takes it.
    assert_eq!(Subscriber::rejected(&sub), 2);
    assert_eq!(sub.counters().received, 0);
}

const CHILD_ENV: &str = "FASTFEED_ZENOH_ECHO_CHILD";

/// Child side of `cross_process_echo` (a no-op unless started by it).
#[test]
fn echo_child() {
    let Ok(ep) = std::env::var(CHILD_ENV) else {
        return;
    };
    let config = ZenohConfig {
        connect: vec![ep],
        ..ZenohConfig::default()
    };
    let bus = ZenohBus::new("xproc", config).unwrap();
    let stats = serve_echo::<_, TestRecord>(
        &bus,
        Securities::All,
        std::process::id(),
        Duration::from_secs(10),
    )
    .unwrap();
    eprintln!("child stats: {stats:?}");
    assert!(stats.complete);
    assert_eq!(stats.echoed, 1000);
}

/// A subscriber in another process echoes every record back over TCP loopback.
#[test]
fn cross_process_echo() {
    let ep = common::endpoint();
    let config = ZenohConfig {
        listen: vec![ep.clone()],
        ..ZenohConfig::default()
    };
    let bus = ZenohBus::new("xproc", config).unwrap();
    let control_rx = bus.control_receiver().unwrap();
    let control_tx = bus.control_sender().unwrap();
    let echo_rx = bus.echo_receiver().unwrap();
    let mut publisher = bus
        .publisher::<TestRecord>(&PublisherQos::default())
        .unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "echo_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &ep)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let hello = loop {
        match control_rx.recv_timeout(Duration::from_millis(50)).unwrap() {
            Some(c) if c.kind == Control::HELLO => break c,
            _ if Instant::now() > deadline => {
                let _ = child.kill();
                panic!("no HELLO from child");
            }
            _ => {}
        }
    };
    let mut echoed = BTreeSet::new();
    let take = |echoed: &mut BTreeSet<u64>| {
        while let Some(e) = echo_rx.try_recv().unwrap() {
            assert_eq!((e.subscriber, e.publisher), (hello.sender, bus.id()));
            echoed.insert(e.seq);
        }
    };
    for i in 0..1000 {
        publisher.publish(&record(i)).unwrap();
        take(&mut echoed);
    }
    let done = Control::new(
        Control::DONE,
        bus.id(),
        TestRecord::type_tag(),
        publisher.last_seq(),
    );
    control_tx.send(done).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while echoed.len() < 1000 && Instant::now() < deadline {
        take(&mut echoed);
        echo_rx.pause();
    }
    assert_eq!(echoed, (1..=1000).collect::<BTreeSet<u64>>());
    let status = child.wait().unwrap();
    assert!(status.success(), "child failed: {status}");
}

#[test]
fn security_ids_past_the_table_are_published_too() {
    use fastfeed_bus::SubscriberQos;
    let bus = alone("sparse");
    let mut sub = bus
        .subscriber::<TestRecord>(Securities::All, &SubscriberQos::default())
        .unwrap();
    let mut p = bus
        .publisher::<TestRecord>(&PublisherQos::default())
        .unwrap();
    for id in [5, 70_000, 5, 4_000_000_000] {
        let r = TestRecord {
            security_id: id,
            ..TestRecord::default()
        };
        p.publish(&r).unwrap();
    }
    assert_eq!(p.securities_declared(), 3);
    let got: Vec<(u32, u64)> = testing::receive_n(&mut sub, 4, Duration::from_secs(5))
        .iter()
        .map(|e| (e.record.security_id, e.security_seq))
        .collect();
    assert_eq!(got, [(5, 1), (70_000, 1), (5, 2), (4_000_000_000, 1)]);
}

/// Past `MAX_DECLARED` securities of a type, records go on bucket keys: a Zenoh subscriber
/// of one bucket's key gets those of its securities, and fastfeed's subscriber (on
/// `<type>/*`) all of them, each counted per security.
#[test]
fn securities_past_the_declared_ones_go_on_bucket_keys() {
    use fastfeed_bus::SubscriberQos;
    use fastfeed_bus_zenoh::{BUCKETS, MAX_DECLARED};
    use zenoh::Wait;
    let bus = alone("buckets");
    let mut sub = bus
        .subscriber::<TestRecord>(
            Securities::All,
            &SubscriberQos {
                queue: 1 << 14,
                ..SubscriberQos::default()
            },
        )
        .unwrap();
    let mut p = bus
        .publisher::<TestRecord>(&PublisherQos::default())
        .unwrap();
    let first_past = MAX_DECLARED as u32;
    let bucket_key = format!(
        "fastfeed/{}/{}/b{}",
        feed("buckets"),
        TestRecord::TYPE_NAME,
        (first_past + 7) % BUCKETS
    );
    let raw = bus
        .session()
        .declare_subscriber(bucket_key.as_str())
        .wait()
        .unwrap();
    let n = MAX_DECLARED as u32 + 10;
    for id in 0..n {
        p.publish(&TestRecord {
            security_id: id,
            ..TestRecord::default()
        })
        .unwrap();
    }
    assert_eq!(p.securities_declared(), MAX_DECLARED);
    let got = testing::receive_n(&mut sub, n as usize, Duration::from_secs(20));
    let ids: BTreeSet<u32> = got.iter().map(|e| e.record.security_id).collect();
    assert_eq!(ids.len(), n as usize);
    assert!(got.iter().all(|e| e.security_seq == 1));
    let sample = raw.recv_timeout(Duration::from_secs(5)).unwrap().unwrap();
    assert_eq!(sample.key_expr().as_str(), bucket_key);

    // A late joiner gets the last record of every security, the bucketed ones included.
    let mut late = bus
        .subscriber::<TestRecord>(
            Securities::All,
            &SubscriberQos {
                queue: 1 << 14,
                late_join: true,
                ..SubscriberQos::default()
            },
        )
        .unwrap();
    let state = testing::receive_n(&mut late, n as usize, Duration::from_secs(20));
    let ids: BTreeSet<u32> = state.iter().map(|e| e.record.security_id).collect();
    assert_eq!(ids.len(), n as usize);
    assert_eq!(p.history_queries(), 1);
    // The history answers a bucketed security on its bucket's key, as it was published.
    let replies = bus.session().get(bucket_key.as_str()).wait().unwrap();
    let keys: Vec<String> =
        std::iter::from_fn(|| replies.recv_timeout(Duration::from_secs(5)).ok().flatten())
            .map(|r| r.result().unwrap().key_expr().to_string())
            .collect();
    assert!(
        !keys.is_empty() && keys.iter().all(|k| *k == bucket_key),
        "{keys:?}"
    );
}

/// A recorder with a queue of 16 that reads slowly, in another session whose publisher waits
/// on congestion, gets every record.
#[test]
fn slow_recorder_gets_every_record_when_the_publisher_blocks() {
    use fastfeed_bus::{Subscriber, SubscriberClass, SubscriberQos};
    let ep = common::endpoint();
    let a = ZenohBus::new(
        &feed("recorder"),
        ZenohConfig {
            listen: vec![ep.clone()],
            block_when_congested: true,
            ..ZenohConfig::default()
        },
    )
    .unwrap();
    let b = ZenohBus::new(
        &feed("recorder"),
        ZenohConfig {
            connect: vec![ep],
            ..ZenohConfig::default()
        },
    )
    .unwrap();
    let qos = SubscriberQos {
        class: SubscriberClass::Recorder,
        queue: 16,
        ..SubscriberQos::default()
    };
    let mut sub = b.subscriber::<TestRecord>(Securities::All, &qos).unwrap();
    testing::handshake(&a, &b);
    let n = 20_000u64;
    let publisher = std::thread::spawn(move || {
        let mut p = a.publisher::<TestRecord>(&PublisherQos::default()).unwrap();
        for i in 0..n {
            p.publish(&record(i)).unwrap();
        }
        a // kept open until the reader is done
    });
    let mut seqs = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while (seqs.len() as u64) < n && Instant::now() < deadline {
        match sub.try_recv().unwrap() {
            Some(env) => {
                seqs.push(env.seq);
                if env.seq % 2000 == 0 {
                    std::thread::sleep(Duration::from_millis(20)); // a slow disk
                }
            }
            None => sub.pause(),
        }
    }
    let _a = publisher.join().unwrap();
    assert_eq!(seqs, (1..=n).collect::<Vec<_>>());
    assert_eq!(sub.counters().missed, 0);
    assert_eq!(sub.dropped(), 0);
}

/// Two threads of one session (partners, as a many-channel publisher's threads are) that
/// declare the same keys at the same moment lose nothing: without the session's declaration
/// lock Zenoh gave the second thread the key's id before the first had registered it, and
/// dropped what was sent on it (20-60 of 40,000 samples in `examples/zrace.rs`).
#[test]
fn partner_threads_declaring_the_same_keys_lose_nothing() {
    use fastfeed_bus::{Subscriber, SubscriberClass, SubscriberQos};
    use std::sync::{Arc, Barrier};
    let (a, b) = pair("partners");
    let qos = SubscriberQos {
        class: SubscriberClass::Recorder,
        queue: 1 << 14,
        ..SubscriberQos::default()
    };
    let mut sub = b.subscriber::<TestRecord>(Securities::All, &qos).unwrap();
    testing::handshake(&a, &b);
    let securities = 2_000u32;
    let start = Arc::new(Barrier::new(2));
    let threads: Vec<_> = [a.partner(), a.partner()]
        .into_iter()
        .map(|bus| {
            let start = start.clone();
            std::thread::spawn(move || {
                let mut p = bus
                    .publisher::<TestRecord>(&PublisherQos::default())
                    .unwrap();
                start.wait();
                for id in 0..securities {
                    p.publish(&TestRecord {
                        security_id: id,
                        ..TestRecord::default()
                    })
                    .unwrap();
                }
                bus
            })
        })
        .collect();
    let buses: Vec<ZenohBus> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let got = testing::receive_n(&mut sub, 2 * securities as usize, Duration::from_secs(20));
    let pairs: BTreeSet<(u32, u32)> = got
        .iter()
        .map(|e| (e.publisher, e.record.security_id))
        .collect();
    assert_eq!(pairs.len(), 2 * securities as usize, "{:?}", sub.counters());
    drop(buses);
}
