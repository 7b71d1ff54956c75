//! Who may connect, over TLS: the publisher listens on a `tls/` endpoint with the example
//! configuration `configs/zenoh/publisher-tls.json5` (mutual TLS: a subscriber must present a
//! certificate signed by the test CA). A subscriber with `subscriber-tls.json5` (the CA and a
//! client certificate) receives every record in order; one that trusts another CA, one
//! without a client certificate, one whose certificate another CA signed, and a plain TCP
//! connection to the TLS port never connect and receive nothing. Certificates: the test
//! fixtures in `tests/tls` (`make.sh` there).

mod common;

use fastfeed_bus::testing::{self, record, TestRecord};
use fastfeed_bus::{Bus, Publisher, PublisherQos, Securities, Subscriber, SubscriberQos};
use fastfeed_bus_zenoh::{ZenohBus, ZenohConfig};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn feed() -> String {
    format!("t{}-tls", std::process::id())
}

fn configs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/zenoh")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls")
}

/// A scratch directory of this test process.
fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fastfeed-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An example configuration of `configs/zenoh`, its fixture paths (relative to the
/// repository root, where `fastfeed` is run from in the README) made absolute.
fn example(dir: &Path, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(configs().join(name)).unwrap();
    let relative = "\"crates/bus-zenoh/tests/tls/";
    assert!(text.contains(relative), "{name} names no test fixture");
    let text = text.replace(relative, &format!("\"{}/", fixtures().display()));
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A subscriber host's TLS configuration: the CA it trusts, and the certificate it presents
/// (none: no mutual TLS on its side).
fn subscriber_config(dir: &Path, name: &str, ca: &str, cert: Option<&str>) -> PathBuf {
    let f = |file: &str| format!("{:?}", fixtures().join(file).display().to_string());
    let client = match cert {
        Some(c) => format!(
            "enable_mtls: true, connect_certificate: {}, connect_private_key: {},",
            f(&format!("{c}.pem")),
            f(&format!("{c}.key"))
        ),
        None => "enable_mtls: false,".into(),
    };
    let text = format!(
        "{{ transport: {{ link: {{ tls: {{ root_ca_certificate: {}, {client} }} }} }} }}",
        f(&format!("{ca}.pem"))
    );
    let path = dir.join(format!("{name}.json5"));
    std::fs::write(&path, text).unwrap();
    path
}

fn connect(ep: &str, file: Option<PathBuf>) -> ZenohBus {
    ZenohBus::new(
        &feed(),
        ZenohConfig {
            file,
            connect: vec![ep.to_string()],
            ..ZenohConfig::default()
        },
    )
    .unwrap()
}

#[test]
fn only_subscribers_with_a_certificate_of_the_ca_connect_over_tls() {
    let dir = scratch();
    let tcp = common::endpoint();
    let tls = tcp.replacen("tcp/", "tls/", 1);
    let publisher = ZenohBus::new(
        &feed(),
        ZenohConfig {
            file: Some(example(&dir, "publisher-tls.json5")),
            listen: vec![tls.clone()],
            block_when_congested: true,
            ..ZenohConfig::default()
        },
    )
    .unwrap();
    let authorised = connect(&tls, Some(example(&dir, "subscriber-tls.json5")));
    // By name too: the publisher's certificate names localhost as well as 127.0.0.1.
    let by_name = connect(
        &tls.replacen("127.0.0.1", "localhost", 1),
        Some(example(&dir, "subscriber-tls.json5")),
    );
    let refused = [
        (
            "trusting another CA",
            connect(
                &tls,
                Some(subscriber_config(
                    &dir,
                    "other-ca",
                    "other-ca",
                    Some("other-client"),
                )),
            ),
        ),
        (
            "without a client certificate",
            connect(&tls, Some(subscriber_config(&dir, "no-cert", "ca", None))),
        ),
        (
            "with a certificate of another CA",
            connect(
                &tls,
                Some(subscriber_config(
                    &dir,
                    "other-cert",
                    "ca",
                    Some("other-client"),
                )),
            ),
        ),
        ("plain TCP to the TLS port", connect(&tcp, None)),
    ];
    assert_eq!(authorised.wait_for_peers(1, Duration::from_secs(10)), 1);
    assert_eq!(by_name.wait_for_peers(1, Duration::from_secs(10)), 1);
    for (name, bus) in &refused {
        common::never_connects(bus, &format!("{name}: connected"));
    }
    // The publisher's side: the two authorised sessions, no other.
    assert_eq!(
        publisher.wait_for_peers(3, Duration::from_millis(200)),
        2,
        "the publisher's peers"
    );

    let qos = SubscriberQos::default();
    let mut sub = authorised
        .subscriber::<TestRecord>(Securities::All, &qos)
        .unwrap();
    let mut others: Vec<_> = refused
        .iter()
        .map(|(name, b)| {
            (
                *name,
                b.subscriber::<TestRecord>(Securities::All, &qos).unwrap(),
            )
        })
        .collect();
    testing::handshake(&publisher, &authorised);

    let mut p = publisher
        .publisher::<TestRecord>(&PublisherQos::default())
        .unwrap();
    let n = 2_000;
    for i in 0..n {
        p.publish(&record(i)).unwrap();
    }
    let got = testing::receive_n(&mut sub, n as usize, Duration::from_secs(20));
    assert_eq!(got.len(), n as usize, "the authorised subscriber: records");
    for (i, env) in got.iter().enumerate() {
        assert_eq!(env.record, record(i as u64), "record {i}");
    }
    assert_eq!(sub.counters().missed, 0);
    // Records to the others would have come on the same kind of link by now; a little more
    // time for a loaded machine.
    std::thread::sleep(Duration::from_millis(300));
    for (name, sub) in &mut others {
        assert!(
            sub.try_recv().unwrap().is_none(),
            "{name}: received a record"
        );
        assert_eq!(sub.counters().received, 0, "{name}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
