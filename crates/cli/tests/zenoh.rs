//! `--bus zenoh` end to end: real processes, records over Zenoh on TCP loopback; every record
//! arrives, the same as the file decoded in process, and the counters reconcile.

mod common;

use common::{num, path_arg, read_json, strings, Proc};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// A loopback endpoint on a port that was free a moment ago.
fn endpoint() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("tcp/127.0.0.1:{}", l.local_addr().unwrap().port())
}

/// A recorder subscriber connected to a fresh endpoint and a publisher listening there
/// (`publish` ARGS, waiting on congestion: the file goes out at full speed) over `file`;
/// both must succeed. Returns their reports (publisher, subscriber).
fn over_one_endpoint(
    dir: &Path,
    feed: &str,
    publish: &[&str],
    file: &Path,
    dump: Option<&Path>,
) -> (Value, Value) {
    let ep = endpoint();
    let (sub_json, pub_json) = (dir.join("sub.json"), dir.join("pub.json"));
    // The subscriber connects first and keeps retrying until the publisher listens.
    let mut args = strings(&["subscribe", "--bus", "zenoh", "--feed", feed]);
    args.extend(strings(&["--connect", &ep, "--idle-timeout", "20"]));
    args.extend(strings(&["--recorder", "--report-json"]));
    args.push(path_arg(&sub_json));
    if let Some(d) = dump {
        args.extend(["--dump".into(), path_arg(d)]);
    }
    let subscriber = Proc::spawn("subscriber", &args);
    let mut args = strings(&[&["publish"], publish].concat());
    args.extend(strings(&[
        "--bus", "zenoh", "--feed", feed, "--listen", &ep,
    ]));
    args.extend(strings(&[
        "--wait-subscribers",
        "1",
        "--block-when-congested",
    ]));
    args.extend(["-f".into(), path_arg(file)]);
    args.extend(["--report-json".into(), path_arg(&pub_json)]);
    let mut publisher = Proc::spawn("publisher", &args);
    publisher.wait_ready();
    let ended = common::wait_all(&mut [publisher, subscriber], Duration::from_secs(60));
    assert!(ended[0].success, "publisher: {}", ended[0].stdout);
    assert!(ended[1].success, "subscriber: {}", ended[1].stdout);
    (read_json(&pub_json), read_json(&sub_json))
}

#[test]
fn publish_to_subscriber_over_zenoh() {
    let dir = common::scratch("zenoh-pubsub");
    let file = common::generate(&dir, 20_000, 1400);
    let dump = dir.join("received.txt");
    let (p, s) = over_one_endpoint(&dir, "zt", &["simple"], &file, Some(&dump));
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
fn channel_threads_share_one_listening_session() {
    // A many-channel publisher on two threads, listening on one endpoint: the threads share
    // the session, and a subscriber connected to it gets every record and both threads' Done.
    let dir = common::scratch("zenoh-channels");
    let file = dir.join("opra.dat");
    let out = common::fastfeed()
        .args(["generate", "opra", "-n", "20000", "--channels", "4", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    let publish = ["opra", "--channels", "4", "--threads", "2"];
    let (p, s) = over_one_endpoint(&dir, "zc", &publish, &file, None);
    assert_eq!(p["threads"].as_array().map(Vec::len), Some(2), "{p}");
    let published = num(&p, "records");
    assert!(published > 15_000, "{p}");
    assert_eq!(num(&s, "received"), published, "{s}");
    assert_eq!(num(&s, "missed"), 0, "{s}");
    assert_eq!(s["complete"], true, "both threads' Done: {s}");
    let threads = p["threads"].as_array().unwrap();
    let echoes: u64 = threads.iter().map(|t| num(t, "echoes")).sum();
    assert_eq!(echoes, published, "every record echoed to its thread: {p}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn demo_over_zenoh() {
    // Zenoh's default transport, then its low-latency one (the configuration the README
    // offers): every record either way.
    let low_latency = format!(
        "{}/../../configs/zenoh/low-latency.json5",
        env!("CARGO_MANIFEST_DIR")
    );
    for (i, extra) in [vec![], vec!["--zenoh-config", &low_latency]]
        .into_iter()
        .enumerate()
    {
        let out = common::fastfeed()
            .args([
                "demo", "simple", "-n", "5000", "-s", "100", "--bus", "zenoh",
            ])
            .args(extra)
            .args(["-g", &common::unique_group(9 + 2 * i as u16)])
            .output()
            .unwrap();
        let stdout = common::stdout_of_success(&out, "demo");
        assert!(stdout.contains("missed 0,"), "{stdout}");
        assert!(stdout.contains("all records accounted for"), "{stdout}");
        assert!(stdout.contains("round trip /record"), "{stdout}");
    }
}

/// Writes `packets` as a len32le file.
fn write_packets(path: &std::path::Path, packets: &[common::Packet]) {
    let mut out = Vec::new();
    for p in packets {
        out.extend_from_slice(&(p.bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(&p.bytes);
    }
    std::fs::write(path, out).unwrap();
}

/// `subscribe --history` joins mid-session: it gets the last record of each security and
/// type published before it joined, then every later record, no gap and no duplicate.
#[test]
fn late_joiner_over_zenoh() {
    use std::collections::HashMap;
    let dir = common::scratch("zenoh-late");
    let file = common::generate(&dir, 4_000, 1400);
    let packets = common::packets(&file, fastfeed_sim::SIMPLE_TEMPLATES);
    let half = packets.len() / 2;
    let (before, after) = (dir.join("before.dat"), dir.join("after.dat"));
    write_packets(&before, &packets[..half]);
    write_packets(&after, &packets[half..]);
    let ep = endpoint();
    let group = common::unique_group(10);
    let (sub_json, pub_json, dump) = (
        dir.join("sub.json"),
        dir.join("pub.json"),
        dir.join("received.txt"),
    );
    let mut args = strings(&["publish", "simple", "--bus", "zenoh", "--feed", "late"]);
    args.extend(strings(&["--listen", &ep, "-g", &group, "--no-echo"]));
    args.extend(strings(&["--idle-timeout", "30"]));
    args.extend(["--report-json".into(), path_arg(&pub_json)]);
    let mut publisher = Proc::spawn("publisher", &args);
    publisher.wait_ready();
    let send = |part: &std::path::Path| {
        let out = common::fastfeed()
            .args([
                "multicast",
                "-q",
                "-g",
                &group,
                "-s",
                "200",
                "--pacing",
                "sleep",
            ])
            .arg("-f")
            .arg(part)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    send(&before);
    // The publisher decodes a packet in microseconds: it has published the first half.
    std::thread::sleep(Duration::from_millis(500));

    let mut args = strings(&["subscribe", "--bus", "zenoh", "--feed", "late", "--history"]);
    args.extend(strings(&[
        "--connect",
        &ep,
        "--idle-timeout",
        "20",
        "--recorder",
    ]));
    args.extend(["--report-json".into(), path_arg(&sub_json)]);
    args.extend(["--dump".into(), path_arg(&dump)]);
    let mut subscriber = Proc::spawn("subscriber", &args);
    subscriber.wait_ready(); // it has the current state and is subscribed
    send(&after);
    let ended = common::wait_all(&mut [publisher, subscriber], Duration::from_secs(60));
    assert!(ended[0].success, "publisher: {}", ended[0].stdout);
    assert!(ended[1].success, "subscriber: {}", ended[1].stdout);

    // The current state: the last record of each (type, security) of the first half.
    let mut last: HashMap<(&str, u32), &fastfeed_records::Record> = HashMap::new();
    for r in packets[..half].iter().flat_map(|p| &p.records) {
        last.insert((r.type_name(), r.security_id()), r);
    }
    let live: Vec<_> = packets[half..].iter().flat_map(|p| &p.records).collect();
    let want = common::dump_lines(last.values().copied().chain(live.iter().copied()));
    let got = common::read_dump(&dump);
    assert_eq!(got.len(), want.len(), "current state + live records");
    assert!(got == want, "the late joiner's records differ");

    let p = read_json(&pub_json);
    let s = read_json(&sub_json);
    let published = num(&p, "records");
    assert_eq!(
        published,
        packets.iter().map(|p| p.records.len() as u64).sum::<u64>(),
        "{p}"
    );
    assert_eq!(num(&s, "snapshot"), last.len() as u64, "{s}");
    assert_eq!(num(&s, "received"), (last.len() + live.len()) as u64, "{s}");
    assert_eq!(
        published,
        num(&s, "received") + num(&s, "filtered_out") + num(&s, "missed"),
        "published = received + filtered out + missed (superseded before joining): {s}"
    );
    for (t, c) in s["per_type"].as_object().unwrap() {
        assert_eq!(num(c, "gaps"), 0, "{t}: {c}");
    }
    assert_eq!(s["complete"], true, "{s}");
    std::fs::remove_dir_all(&dir).ok();
}
