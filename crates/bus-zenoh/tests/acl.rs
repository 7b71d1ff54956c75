//! Who may connect: the publisher host's Zenoh configuration (`configs/zenoh/`) asks every
//! session for a user and password and allows each user some key expressions only. A session
//! without credentials, or with a wrong password, is refused at the handshake; a user outside
//! the record type's key expressions receives nothing of it, and all of the type it is
//! granted; an authorised one receives everything.

mod common;

use fastfeed_bus::testing::{self, record, TestRecord};
use fastfeed_bus::{Bus, Publisher, PublisherQos, Record, Securities, Subscriber, SubscriberQos};
use fastfeed_bus_zenoh::{ZenohBus, ZenohConfig};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A record on the `quote` topics, the only ones the example configuration grants bob.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    zerocopy::IntoBytes,
    zerocopy::FromBytes,
    zerocopy::Immutable,
    zerocopy::KnownLayout,
)]
#[repr(C)]
struct Quote {
    security_id: u32,
    bid: u32,
}

impl Record for Quote {
    const TYPE_NAME: &'static str = "quote";
    const LAYOUT_VERSION: u16 = 1;
    fn security_id(&self) -> u32 {
        self.security_id
    }
}

/// The feed the example configuration grants.
const FEED: &str = "moex";

fn configs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/zenoh")
}

/// A scratch directory of this test process.
fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fastfeed-acl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The example publisher configuration, its dictionary path made absolute (it is relative
/// to the repository root, where `fastfeed` is run from in the README).
fn publisher_config(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(configs().join("publisher-acl.json5")).unwrap();
    let dictionary = configs().join("credentials.txt");
    let text = text.replace(
        "\"configs/zenoh/credentials.txt\"",
        &format!("{:?}", dictionary.display().to_string()),
    );
    let path = dir.join("publisher.json5");
    std::fs::write(&path, text).unwrap();
    path
}

fn user_config(dir: &Path, user: &str, password: &str) -> PathBuf {
    let path = dir.join(format!("{user}-{password}.json5"));
    let text = format!(
        "{{ transport: {{ auth: {{ usrpwd: {{ user: {user:?}, password: {password:?} }} }} }} }}"
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn connect(ep: &str, file: Option<PathBuf>) -> ZenohBus {
    ZenohBus::new(
        FEED,
        ZenohConfig {
            file,
            connect: vec![ep.to_string()],
            ..ZenohConfig::default()
        },
    )
    .unwrap()
}

#[test]
fn only_authorised_users_receive_and_only_what_they_are_allowed() {
    let dir = scratch();
    let ep = common::endpoint();
    let publisher = ZenohBus::new(
        FEED,
        ZenohConfig {
            file: Some(publisher_config(&dir)),
            listen: vec![ep.clone()],
            block_when_congested: true,
            ..ZenohConfig::default()
        },
    )
    .unwrap();
    // alice: the example subscriber configuration; bob: a user granted quotes only.
    let alice = connect(&ep, Some(configs().join("subscriber-alice.json5")));
    let bob = connect(&ep, Some(user_config(&dir, "bob", "bob-secret")));
    let nobody = connect(&ep, None);
    let impostor = connect(&ep, Some(user_config(&dir, "alice", "guessed")));
    assert_eq!(alice.wait_for_peers(1, Duration::from_secs(10)), 1);
    assert_eq!(bob.wait_for_peers(1, Duration::from_secs(10)), 1);
    common::never_connects(&nobody, "no credentials: refused");
    common::never_connects(&impostor, "a wrong password: refused");

    let qos = SubscriberQos::default();
    let mut subs: Vec<_> = [&alice, &bob, &nobody, &impostor]
        .iter()
        .map(|b| b.subscriber::<TestRecord>(Securities::All, &qos).unwrap())
        .collect();
    let mut quote_subs: Vec<_> = [&alice, &bob]
        .iter()
        .map(|b| b.subscriber::<Quote>(Securities::All, &qos).unwrap())
        .collect();
    // Both connected users reach the publisher on the control channel: bob's link works,
    // only the records are not his.
    testing::handshake(&publisher, &alice);
    testing::handshake(&publisher, &bob);

    let mut p = publisher
        .publisher::<TestRecord>(&PublisherQos::default())
        .unwrap();
    let mut q = publisher
        .publisher::<Quote>(&PublisherQos::default())
        .unwrap();
    let n = 1_000;
    for i in 0..n {
        p.publish(&record(i)).unwrap();
        q.publish(&Quote {
            security_id: (i % 10) as u32,
            bid: i as u32,
        })
        .unwrap();
    }
    let got = testing::receive_n(&mut subs[0], n as usize, Duration::from_secs(20));
    assert_eq!(got.len(), n as usize, "alice receives everything");
    assert_eq!(subs[0].counters().missed, 0);
    // Quotes: both users are granted them, and get every one, in order.
    for (name, sub) in ["alice", "bob"].iter().zip(&mut quote_subs) {
        let got = testing::receive_n(sub, n as usize, Duration::from_secs(20));
        assert_eq!(got.len(), n as usize, "{name}: quotes");
        for (i, env) in got.iter().enumerate() {
            assert_eq!(env.record.bid, i as u32, "{name}: quote {i}");
        }
        assert_eq!(sub.counters().missed, 0, "{name}");
    }
    // Records to the others would have come on the same kind of link by now; a little more
    // time for a loaded machine.
    std::thread::sleep(Duration::from_millis(300));
    for (name, sub) in ["bob", "nobody", "impostor"].iter().zip(&mut subs[1..]) {
        assert!(
            sub.try_recv().unwrap().is_none(),
            "{name} received a test record"
        );
        assert_eq!(sub.counters().received, 0, "{name}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
