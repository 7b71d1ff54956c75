//! In-process and cross-process tests of the shared-memory bus. Every test uses its own feed
//! name (process id + test name) so tests can run in parallel.

use fastfeed_bus::testing::{self, record, TestRecord};
use fastfeed_bus::{
    now_ns, serve_echo, Bus, BusError, Control, Publisher, PublisherQos, Receiver, Record,
    Securities, Sender, SubscriberQos,
};
use fastfeed_bus_shm::{ShmBus, ShmConfig};
use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn feed(test: &str) -> String {
    format!("t{}-{test}", std::process::id())
}

fn bus(test: &str) -> ShmBus {
    ShmBus::new(&feed(test)).unwrap()
}

#[test]
fn roundtrip_10000_in_order() {
    testing::roundtrip_in_order(&bus("rt"));
}

#[test]
fn filter_by_security() {
    testing::filter_by_security(&bus("filter"));
}

#[test]
fn slow_subscriber_does_not_block_publisher() {
    testing::slow_subscriber_loses_oldest(&bus("slow"));
}

#[test]
fn control_and_echo_channels_in_process() {
    testing::aux_channels(&bus("aux"));
}

#[test]
fn a_queue_longer_than_the_service_allows_is_refused() {
    let config = ShmConfig {
        buffer_size: 64,
        ..ShmConfig::default()
    };
    let bus = ShmBus::with_config(&feed("qos"), config).unwrap();
    let qos = |queue| SubscriberQos {
        queue,
        ..SubscriberQos::default()
    };
    let too_long = bus.subscriber::<TestRecord>(Securities::All, &qos(65));
    assert!(matches!(too_long, Err(BusError::Unsupported(_))));
    assert!(bus
        .subscriber::<TestRecord>(Securities::All, &qos(64))
        .is_ok());
}

const CHILD_ENV: &str = "FASTFEED_BUS_ECHO_CHILD";

/// Child side of `cross_process_echo` (a no-op unless started by it).
#[test]
fn echo_child() {
    let Ok(feed) = std::env::var(CHILD_ENV) else {
        return;
    };
    let bus = ShmBus::new(&feed).unwrap();
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

#[test]
fn cross_process_echo() {
    let feed = feed("xproc");
    let bus = ShmBus::new(&feed).unwrap();
    let control_rx = bus.control_receiver().unwrap();
    let control_tx = bus.control_sender().unwrap();
    let echo_rx = bus.echo_receiver().unwrap();
    let mut publisher = bus
        .publisher::<TestRecord>(&PublisherQos::default())
        .unwrap();

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
            assert_eq!(e.publisher, bus.id());
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
        .send(Control::new(
            Control::DONE,
            bus.id(),
            TestRecord::type_tag(),
            publisher.last_seq(),
        ))
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

fn one_subscriber_config() -> ShmConfig {
    ShmConfig {
        max_subscribers: 1,
        ..ShmConfig::default()
    }
}

/// Child side of `dead_process_resources_are_reclaimed`: takes the only subscriber
/// slot, then exits without running destructors, like a crashed process.
#[test]
fn stale_child() {
    let Ok(feed) = std::env::var(STALE_CHILD_ENV) else {
        return;
    };
    let bus = ShmBus::with_config(&feed, one_subscriber_config()).unwrap();
    let sub = bus
        .subscriber::<TestRecord>(Securities::All, &SubscriberQos::default())
        .unwrap();
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
    let bus = ShmBus::with_config(&feed, one_subscriber_config()).unwrap();
    let _only = bus
        .subscriber::<TestRecord>(Securities::All, &SubscriberQos::default())
        .unwrap();
    assert!(bus
        .subscriber::<TestRecord>(Securities::All, &SubscriberQos::default())
        .is_err());
}
