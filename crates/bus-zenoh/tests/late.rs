//! Late joiners on the Zenoh bus: a subscriber that joins mid-session gets the last record of
//! each security first, then every later record: no gap, no duplicate, counters reconciled.

mod common;

use fastfeed_bus::testing::TestRecord;
use fastfeed_bus::{
    Bus, BusError, Envelope, Publisher, PublisherQos, Securities, Subscriber, SubscriberQos,
};
use fastfeed_bus_zenoh::{ZenohBus, ZenohConfig};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Securities the records cycle over.
const K: u64 = 37;

fn rec(i: u64) -> TestRecord {
    TestRecord {
        security_id: (i * 7 % K) as u32,
        id: i,
        ..TestRecord::default()
    }
}

fn feed(test: &str) -> String {
    format!("late{}-{test}", std::process::id())
}

/// A publishing session and a subscribing one over TCP loopback ([`common::pair`]).
fn pair(test: &str) -> (ZenohBus, ZenohBus) {
    common::pair(&feed(test))
}

fn late() -> SubscriberQos {
    SubscriberQos {
        late_join: true,
        queue: 1 << 16,
        ..SubscriberQos::default()
    }
}

fn wait_joined<S: Subscriber<TestRecord>>(sub: &S) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while sub.joining() {
        assert!(Instant::now() < deadline, "the join never ended");
        sub.pause();
    }
}

/// Receives until `last` (a seq) was seen, or panics after 20 s.
fn receive_until<S: Subscriber<TestRecord>>(sub: &mut S, last: u64) -> Vec<Envelope<TestRecord>> {
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while sub.seen_up_to() < last || sub.joining() {
        assert!(
            Instant::now() < deadline,
            "stuck at seq {} of {last}",
            sub.seen_up_to()
        );
        match sub.try_recv().unwrap() {
            Some(env) => got.push(env),
            None => sub.pause(),
        }
    }
    while let Some(env) = sub.try_recv().unwrap() {
        got.push(env);
    }
    got
}

/// Checks what a late joiner received against records `0..published` (seq `i + 1` is
/// `rec(i)`), filtered by `wanted`: first the last record of each wanted security up to the
/// seq S the state was taken at, in seq order, then every wanted record after S, in order.
/// Returns S.
fn check<S: Subscriber<TestRecord>>(
    sub: &S,
    got: &[Envelope<TestRecord>],
    published: u64,
    wanted: impl Fn(u32) -> bool,
) -> u64 {
    let c = sub.counters();
    let (snapshot, live) = got.split_at((c.snapshot as usize).min(got.len()));
    // S: the last seq of the state. The state's unwanted records (filtered out) lie between
    // its last wanted one and the first live one, and change neither part below.
    let s = snapshot.last().map_or(0, |e| e.seq);
    let mut last_of: HashMap<u32, u64> = HashMap::new();
    for seq in 1..=s {
        last_of.insert(rec(seq - 1).security_id, seq);
    }
    let mut want: Vec<u64> = last_of
        .iter()
        .filter(|(&id, _)| wanted(id))
        .map(|(_, &seq)| seq)
        .collect();
    want.sort_unstable();
    let snap: Vec<u64> = snapshot.iter().map(|e| e.seq).collect();
    assert!(
        snap == want,
        "the current state: the last of each security up to {s}: {} records, {} wanted",
        snap.len(),
        want.len()
    );
    let live_seqs: Vec<u64> = live.iter().map(|e| e.seq).collect();
    let want_live: Vec<u64> = (s + 1..=published)
        .filter(|&q| wanted(rec(q - 1).security_id))
        .collect();
    assert!(
        live_seqs == want_live,
        "every record after {s}, once, in order: {} received from {:?}, {} wanted from {:?}",
        live_seqs.len(),
        live_seqs.first(),
        want_live.len(),
        want_live.first()
    );
    for e in got {
        assert_eq!(e.record, rec(e.seq - 1), "the record of seq {}", e.seq);
    }
    s
}

#[test]
fn a_late_joiner_across_sessions_gets_the_current_state_then_the_stream() {
    let (a, b) = pair("across");
    let mut p = a.publisher::<TestRecord>(&PublisherQos::default()).unwrap();
    let before = 2_000;
    for i in 0..before {
        p.publish(&rec(i)).unwrap();
    }
    let mut sub = b
        .subscriber::<TestRecord>(Securities::All, &late())
        .unwrap();
    wait_joined(&sub);
    let after = 3_000;
    for i in before..before + after {
        p.publish(&rec(i)).unwrap();
    }
    let got = receive_until(&mut sub, before + after);
    let s = check(&sub, &got, before + after, |_| true);
    assert_eq!(s, before, "joined after every earlier record");
    let c = sub.counters();
    assert_eq!((c.snapshot, c.missed, c.filtered_out), (K, 0, 0), "{c:?}");
    assert_eq!(c.received, K + after);
    assert_eq!(
        before + after,
        c.received + c.filtered_out + c.missed + c.missed_at_start,
        "published = received + filtered out + missed + superseded before joining: {c:?}"
    );
    assert_eq!(p.history_queries(), 1);
    assert_eq!(sub.join_errors(), 0);
}

/// The subscriber joins while the publisher is publishing as fast as it can: whatever S the
/// state was taken at, nothing after it is missed or delivered twice.
#[test]
fn a_late_joiner_during_publishing_misses_nothing() {
    let (a, b) = pair("during");
    let stop = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicBool::new(false));
    let publisher = {
        let (stop, started) = (stop.clone(), started.clone());
        std::thread::spawn(move || {
            let mut p = a.publisher::<TestRecord>(&PublisherQos::default()).unwrap();
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) || i < 5_000 {
                p.publish(&rec(i)).unwrap();
                i += 1;
                if i == 500 {
                    started.store(true, Ordering::Relaxed);
                }
            }
            (i, a)
        })
    };
    while !started.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let wanted = |id: u32| !id.is_multiple_of(3);
    let ids: Vec<u32> = (0..K as u32).filter(|&id| wanted(id)).collect();
    let mut sub = b
        .subscriber::<TestRecord>(Securities::Only(ids), &late())
        .unwrap();
    wait_joined(&sub);
    std::thread::sleep(Duration::from_millis(50));
    stop.store(true, Ordering::Relaxed);
    let (published, _a) = publisher.join().unwrap();
    let got = receive_until(&mut sub, published);
    let s = check(&sub, &got, published, wanted);
    assert!(s >= 500, "joined mid-session: {s}");
    let c = sub.counters();
    assert_eq!(c.missed, 0, "{c:?}");
    assert_eq!(
        published,
        c.received + c.filtered_out + c.missed + c.missed_at_start,
        "{c:?}"
    );
}

/// A late joiner that comes before the publisher gets every record as any subscriber does.
#[test]
fn a_late_joiner_before_the_publisher_gets_everything() {
    let (a, b) = pair("first");
    let mut sub = b
        .subscriber::<TestRecord>(Securities::All, &late())
        .unwrap();
    let mut p = a.publisher::<TestRecord>(&PublisherQos::default()).unwrap();
    wait_joined(&sub);
    for i in 0..1_000 {
        p.publish(&rec(i)).unwrap();
    }
    let got = receive_until(&mut sub, 1_000);
    assert_eq!(check(&sub, &got, 1_000, |_| true), 0);
    let c = sub.counters();
    assert_eq!((c.snapshot, c.received, c.missed_at_start), (0, 1_000, 0));
}

#[test]
fn a_late_joiner_in_one_session() {
    let bus = ZenohBus::new(&feed("alone"), ZenohConfig::default()).unwrap();
    let mut p = bus
        .publisher::<TestRecord>(&PublisherQos::default())
        .unwrap();
    for i in 0..500 {
        p.publish(&rec(i)).unwrap();
    }
    let mut sub = bus
        .subscriber::<TestRecord>(Securities::All, &late())
        .unwrap();
    wait_joined(&sub);
    for i in 500..600 {
        p.publish(&rec(i)).unwrap();
    }
    let got = receive_until(&mut sub, 600);
    assert_eq!(check(&sub, &got, 600, |_| true), 500);
    assert_eq!(sub.counters().snapshot, K);
}

#[test]
fn other_backends_refuse_late_joiners() {
    let bus = fastfeed_bus::LocalBus::new("late").unwrap();
    let refused = bus.subscriber::<TestRecord>(Securities::All, &late());
    assert!(matches!(refused, Err(BusError::Unsupported(_))));
}
