//! In-process and cross-process tests of the bus. Every test uses its own feed
//! name (process id + test name) so tests can run in parallel.

use fastfeed_bus::testing::TestRecord;
use fastfeed_bus::{now_ns, serve_echo, Bus, BusConfig, Control, Record, Securities};
use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn feed(test: &str) -> String {
    format!("t{}-{test}", std::process::id())
}

fn record(i: u64) -> TestRecord {
    TestRecord {
        security_id: (i % 10) as u32,
        qty: i as u32 * 3,
        price: -(i as i64) * 7,
        id: i,
        flags: i.rotate_left(17),
    }
}

#[test]
fn roundtrip_10000_in_order() {
    let bus = Bus::new(&feed("rt")).unwrap();
    let mut sub = bus.subscriber::<TestRecord>(Securities::All).unwrap();
    let mut publisher = bus.publisher::<TestRecord>().unwrap();
    let mut got = Vec::new();
    for i in 0..10_000u64 {
        assert_eq!(publisher.publish(&record(i)).unwrap(), i + 1);
        if i % 1000 == 999 {
            while let Some(env) = sub.try_recv().unwrap() {
                got.push(env);
            }
        }
    }
    assert_eq!(got.len(), 10_000);
    for (i, env) in got.iter().enumerate() {
        assert_eq!(env.seq, i as u64 + 1);
        assert_eq!(env.record, record(i as u64));
        assert!(env.sent_ns > 0 && env.sent_ns <= now_ns());
    }
    let c = sub.counters();
    assert_eq!(
        (c.received, c.filtered_out, c.missed, c.missed_at_start),
        (10_000, 0, 0, 0)
    );
}

#[test]
fn filter_by_security() {
    let bus = Bus::new(&feed("filter")).unwrap();
    let mut sub = bus
        .subscriber::<TestRecord>(Securities::Only(vec![7, 3]))
        .unwrap();
    let mut all = bus.subscriber::<TestRecord>(Securities::All).unwrap();
    let mut publisher = bus.publisher::<TestRecord>().unwrap();
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
    let c = sub.counters();
    assert_eq!((c.received, c.filtered_out, c.missed), (200, 800, 0));
    assert_eq!(sub.seen_up_to(), 1000);
    // The other subscriber is unaffected by this one's filter.
    let mut n = 0;
    while all.try_recv().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 1000);
}

#[test]
fn slow_subscriber_does_not_block_publisher() {
    let config = BusConfig {
        buffer_size: 256,
        ..BusConfig::default()
    };
    let bus = Bus::with_config(&feed("slow"), config).unwrap();
    let mut reads_once = bus.subscriber::<TestRecord>(Securities::All).unwrap();
    let mut never_reads = bus.subscriber::<TestRecord>(Securities::All).unwrap();
    let mut publisher = bus.publisher::<TestRecord>().unwrap();
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
        // Only the newest 256 samples survive, contiguous and in order.
        assert_eq!(seqs, (10_001 - 255..=10_001).collect::<Vec<_>>());
        let c = sub.counters();
        assert_eq!((c.missed_at_start, c.missed), (at_start, missed));
    }
}

#[test]
fn control_and_echo_channels_in_process() {
    let bus = Bus::new(&feed("aux")).unwrap();
    let control_rx = bus.control_subscriber().unwrap();
    let control_tx = bus.control_publisher().unwrap();
    let echo_rx = bus.echo_subscriber().unwrap();
    let echo_tx = bus.echo_publisher().unwrap();
    let done = Control {
        kind: Control::DONE,
        sender: 1,
        type_tag: TestRecord::type_tag(),
        count: 99,
    };
    assert_eq!(control_tx.send(done).unwrap(), 1);
    assert_eq!(
        control_rx.recv_timeout(Duration::from_secs(1)).unwrap(),
        Some(done)
    );
    let echo = fastfeed_bus::Echo {
        seq: 5,
        sent_ns: 6,
        type_tag: 7,
        subscriber: 8,
    };
    echo_tx.send(echo).unwrap();
    assert_eq!(echo_rx.try_recv().unwrap(), Some(echo));
    assert_eq!(
        echo_rx.recv_timeout(Duration::from_millis(10)).unwrap(),
        None
    );
}

const CHILD_ENV: &str = "FASTFEED_BUS_ECHO_CHILD";

/// Child side of `cross_process_echo` (a no-op unless started by it).
#[test]
fn echo_child() {
    let Ok(feed) = std::env::var(CHILD_ENV) else {
        return;
    };
    let bus = Bus::new(&feed).unwrap();
    let stats = serve_echo::<TestRecord>(
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

#[test]
fn cross_process_echo() {
    let feed = feed("xproc");
    let bus = Bus::new(&feed).unwrap();
    let control_rx = bus.control_subscriber().unwrap();
    let control_tx = bus.control_publisher().unwrap();
    let echo_rx = bus.echo_subscriber().unwrap();
    let mut publisher = bus.publisher::<TestRecord>().unwrap();

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "echo_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &feed)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let kill_child = |child: &mut std::process::Child| {
        let _ = child.kill();
        let _ = child.wait();
    };

    // The child says HELLO once its data subscriber exists.
    let deadline = Instant::now() + Duration::from_secs(20);
    let hello = loop {
        match control_rx.recv_timeout(Duration::from_millis(50)).unwrap() {
            Some(c) if c.kind == Control::HELLO => break c,
            _ if Instant::now() > deadline => {
                kill_child(&mut child);
                panic!("no HELLO from child");
            }
            _ => {}
        }
    };

    let mut echoed = BTreeSet::new();
    let mut latencies = Vec::new();
    let mut take_echoes = |echoed: &mut BTreeSet<u64>| {
        while let Some(e) = echo_rx.try_recv().unwrap() {
            assert_eq!(e.subscriber, hello.sender);
            assert_eq!(e.type_tag, TestRecord::type_tag());
            latencies.push(now_ns() - e.sent_ns);
            echoed.insert(e.seq);
        }
    };
    for i in 0..1000 {
        publisher.publish(&record(i)).unwrap();
        take_echoes(&mut echoed);
    }
    control_tx
        .send(Control {
            kind: Control::DONE,
            sender: std::process::id(),
            type_tag: TestRecord::type_tag(),
            count: publisher.last_seq(),
        })
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while echoed.len() < 1000 && Instant::now() < deadline {
        take_echoes(&mut echoed);
        std::thread::sleep(Duration::from_micros(100));
    }
    assert_eq!(echoed.len(), 1000, "echoes missing");
    assert_eq!(echoed.first(), Some(&1));
    assert_eq!(echoed.last(), Some(&1000));
    latencies.sort_unstable();
    eprintln!(
        "round trip: min {} ns, median {} ns, max {} ns",
        latencies[0],
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1]
    );

    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "child failed: {status}");
            break;
        }
        if Instant::now() > deadline {
            kill_child(&mut child);
            panic!("child did not exit");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

const STALE_CHILD_ENV: &str = "FASTFEED_BUS_STALE_CHILD";

fn one_subscriber_config() -> BusConfig {
    BusConfig {
        max_subscribers: 1,
        ..BusConfig::default()
    }
}

/// Child side of `dead_process_resources_are_reclaimed`: takes the only subscriber
/// slot, then exits without running destructors, like a crashed process.
#[test]
fn stale_child() {
    let Ok(feed) = std::env::var(STALE_CHILD_ENV) else {
        return;
    };
    let bus = Bus::with_config(&feed, one_subscriber_config()).unwrap();
    let sub = bus.subscriber::<TestRecord>(Securities::All).unwrap();
    std::mem::forget(sub);
    std::mem::forget(bus);
    std::process::exit(0);
}

#[test]
fn dead_process_resources_are_reclaimed() {
    let feed = feed("stale");
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "stale_child", "--test-threads=1"])
        .env(STALE_CHILD_ENV, &feed)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    // The dead child's subscriber held the only slot; creating the bus cleans it up.
    let bus = Bus::with_config(&feed, one_subscriber_config()).unwrap();
    let _only = bus.subscriber::<TestRecord>(Securities::All).unwrap();
    assert!(bus.subscriber::<TestRecord>(Securities::All).is_err());
}
