//! `--bus zenoh` end to end: real processes, records over Zenoh on TCP loopback; every record
//! arrives, the same as the file decoded in process, and the counters reconcile.

mod common;

use common::{num, path_arg, read_json, strings, Proc};
use std::time::Duration;

/// A loopback endpoint on a port that was free a moment ago.
fn endpoint() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("tcp/127.0.0.1:{}", l.local_addr().unwrap().port())
}

#[test]
fn publish_to_subscriber_over_zenoh() {
    let dir = common::scratch("zenoh-pubsub");
    let file = common::generate(&dir, 20_000, 1400);
    let ep = endpoint();
    let (sub_json, pub_json, dump) = (
        dir.join("sub.json"),
        dir.join("pub.json"),
        dir.join("received.txt"),
    );
    // The subscriber connects first and keeps retrying until the publisher listens.
    let mut args = strings(&["subscribe", "--bus", "zenoh", "--feed", "zt"]);
    // A recorder, and a publisher that waits on congestion: the file goes out at full speed.
    args.extend(strings(&[
        "--connect",
        &ep,
        "--idle-timeout",
        "20",
        "--recorder",
    ]));
    args.extend(["--report-json".into(), path_arg(&sub_json)]);
    args.extend(["--dump".into(), path_arg(&dump)]);
    let subscriber = Proc::spawn("subscriber", &args);
    let mut args = strings(&["publish", "simple", "--bus", "zenoh", "--feed", "zt"]);
    args.extend(strings(&["--listen", &ep, "--wait-subscribers", "1"]));
    args.push("--block-when-congested".into());
    args.extend(["-f".into(), path_arg(&file)]);
    args.extend(["--report-json".into(), path_arg(&pub_json)]);
    let mut publisher = Proc::spawn("publisher", &args);
    publisher.wait_ready();
    let ended = common::wait_all(&mut [publisher, subscriber], Duration::from_secs(60));
    assert!(ended[0].success, "publisher: {}", ended[0].stdout);
    assert!(ended[1].success, "subscriber: {}", ended[1].stdout);

    let p = read_json(&pub_json);
    let s = read_json(&sub_json);
    let published = num(&p, "records");
    assert!(published >= 20_000, "{p}");
    assert_eq!(
        published,
        num(&s, "received") + num(&s, "filtered_out") + num(&s, "missed"),
        "published = received + filtered out + missed: {s}"
    );
    assert_eq!((num(&s, "missed"), num(&s, "filtered_out")), (0, 0), "{s}");
    assert_eq!(s["complete"], true, "{s}");
    assert_eq!(
        num(&p, "echoes"),
        published,
        "every record echoed back: {p}"
    );

    let packets = common::packets(&file, fastfeed_sim::SIMPLE_TEMPLATES);
    let want = common::dump_lines(packets.iter().flat_map(|p| &p.records));
    let got = common::read_dump(&dump);
    assert_eq!(got.len(), want.len(), "record count");
    assert!(
        got == want,
        "the subscriber's records differ from the file's"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn demo_over_zenoh() {
    let out = common::fastfeed()
        .args([
            "demo", "simple", "-n", "5000", "-s", "100", "--bus", "zenoh",
        ])
        .args(["-g", &common::unique_group(9)])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("missed 0,"), "{stdout}");
    assert!(stdout.contains("all records accounted for"), "{stdout}");
    assert!(stdout.contains("round trip /record"), "{stdout}");
}
