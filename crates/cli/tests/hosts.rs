//! `scripts/hosts.sh`: network-namespace hosts (simulator, publisher, two or three
//! subscribers), multicast to the publisher host, Zenoh over veth links to the subscriber
//! hosts. Both subscriber hosts receive every record the file decodes to in process; a
//! subscriber host cut off for seconds, or one that stops reading, counts what it missed
//! (published = received + missed) while the others miss nothing and the publisher goes on.
//!
//! Needs root and `ip netns` (CI runs as root). Where they are missing the tests fail and
//! say so, unless FASTFEED_SKIP_NETNS=1; the `--loopback` one needs neither.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn netns_usable() -> Result<(), String> {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map_err(|e| e.to_string())?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Err("not root".into());
    }
    let ip = Command::new("ip").args(["netns", "list"]).output();
    match ip {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!("ip netns: {}", String::from_utf8_lossy(&o.stderr))),
        Err(e) => Err(format!("no ip command: {e}")),
    }
}

/// Runs hosts.sh with `args`, keeping its files in a scratch folder; `None` when skipped.
fn hosts(name: &str, args: &[&str]) -> Option<(PathBuf, String)> {
    let namespaces = !args.contains(&"--loopback");
    if let Err(why) = if namespaces { netns_usable() } else { Ok(()) } {
        if std::env::var("FASTFEED_SKIP_NETNS").as_deref() == Ok("1") {
            eprintln!("skipped: network namespaces unavailable ({why})");
            return None;
        }
        panic!("this test needs root and `ip netns` ({why}); set FASTFEED_SKIP_NETNS=1 to skip it");
    }
    // One topology at a time: three of them (five processes each) at once on a 2-core
    // machine slowed sessions past what the cut and slow-host checks assume.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = common::scratch(name);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/hosts.sh");
    let out = Command::new("bash")
        .arg(&script)
        .args(args)
        .arg("--keep")
        .arg(&dir)
        .env("FASTFEED_BIN", env!("CARGO_BIN_EXE_fastfeed"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "hosts.sh failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some((dir, stdout))
}

/// What the file decodes to in process, as sorted dump lines.
fn expected(dir: &Path, file: &str) -> Vec<String> {
    let packets = common::packets(&dir.join(file), fastfeed_sim::SIMPLE_TEMPLATES);
    common::dump_lines(packets.iter().flat_map(|p| &p.records))
}

/// Every subscriber's counters reconcile with the publisher's: each record published was
/// received or counted missed, per type and in total.
fn reconciled(pub_report: &Value, host: &str, s: &Value) {
    let published = common::num(pub_report, "records");
    assert_eq!(s["done_seen"], true, "host {host}: {s}");
    assert_eq!(s["complete"], true, "host {host}: {s}");
    assert_eq!(
        common::num(s, "received") + common::num(s, "missed"),
        published,
        "host {host}: published = received + missed: {s}"
    );
    for (t, n) in pub_report["published"].as_object().unwrap() {
        let per = &s["per_type"][t];
        assert_eq!(
            common::num(per, "received") + common::num(per, "missed"),
            n.as_u64().unwrap(),
            "host {host}, type {t}: {s}"
        );
    }
}

/// A host that missed nothing got exactly the file's records.
fn has_every_record(dir: &Path, host: &str, want: &[String]) {
    let got = common::read_dump(&dir.join(format!("sub_{host}.records")));
    assert_eq!(
        got.len(),
        want.len(),
        "subscriber host {host}: record count"
    );
    assert!(got == want, "subscriber host {host}: records differ");
    let s = common::read_json(&dir.join(format!("sub_{host}.json")));
    assert_eq!(common::num(&s, "missed"), 0, "host {host}: {s}");
}

/// A host that missed some got only the file's records, each once, and (if given) some of `last` (the
/// feed's tail, long after the fault): it resumed. Not every one of them: on a starved
/// machine the restored link may still drop some of the tail, and those are counted missed.
fn has_some_records(dir: &Path, host: &str, want: &[String], last: Option<&[String]>) -> usize {
    let got = common::read_dump(&dir.join(format!("sub_{host}.records")));
    let mut left: HashMap<&str, usize> = HashMap::new();
    for w in want {
        *left.entry(w).or_default() += 1;
    }
    for g in &got {
        let n = left.get_mut(g.as_str());
        assert!(
            n.as_ref().is_some_and(|n| **n > 0),
            "host {host}: a record not published, or twice: {g}"
        );
        *n.unwrap() -= 1;
    }
    let got_set: std::collections::HashSet<&str> = got.iter().map(String::as_str).collect();
    let Some(last) = last else { return got.len() };
    assert!(
        last.iter().any(|l| got_set.contains(l.as_str())),
        "host {host}: did not resume: none of the last {} records",
        last.len()
    );
    got.len()
}

/// The publisher's longest single publish call or control message send (announcement,
/// Done), in milliseconds: what a subscriber that cannot keep up would hold it for.
fn longest_publish_ms(p: &Value) -> f64 {
    let publish = p["stages_us"]["publish"]["max"]
        .as_f64()
        .expect("publish max")
        / 1e3;
    let control = p["control_send_max_ms"].as_f64().expect("control send max");
    publish.max(control)
}

/// Hosts a and b both got exactly the file's records, and their counters reconcile.
fn both_hosts_have_every_record(dir: &Path, want: &[String]) {
    let p = common::read_json(&dir.join("pub.json"));
    for host in ["a", "b"] {
        has_every_record(dir, host, want);
        reconciled(
            &p,
            host,
            &common::read_json(&dir.join(format!("sub_{host}.json"))),
        );
    }
}

/// Every record on both hosts: recorders, with a publisher that waits when a link is
/// congested (`--reliable`). Screens, as the other tests show, give up records when their
/// host stalls: a CI run once lost 37 of 10,000 on one screen host while the VM stalled its
/// processes for about 100 ms (round trips of 145 ms).
#[test]
fn two_subscriber_hosts_receive_every_record() {
    let Some((dir, stdout)) = hosts("hosts", &["-n", "10000", "--reliable"]) else {
        return;
    };
    assert!(stdout.contains("round trip /record"), "{stdout}");
    assert!(stdout.contains("one-way latency"), "{stdout}");
    assert!(stdout.contains("shared memory"), "{stdout}");
    // Namespaces of one machine share its clock: each subscriber host timed the way to it,
    // from the clock id its publisher sent across Zenoh.
    for host in ["a", "b"] {
        let line = format!("subscriber host {host}: one way from the publisher");
        assert!(stdout.contains(&line), "{stdout}");
        let s = common::read_json(&dir.join(format!("sub_{host}.json")));
        // Records drained before the subscriber read the clock message go untimed.
        let timed = s["one_way_ns"]["count"].as_u64().unwrap_or(0);
        assert!(timed > 0 && timed <= common::num(&s, "received"), "{s}");
    }

    let want = expected(&dir, "simple10000.dat");
    assert!(want.len() >= 10_000);
    both_hosts_have_every_record(&dir, &want);
    std::fs::remove_dir_all(&dir).ok();
}

/// The same topology without namespaces (`--loopback`: containers without `ip netns`):
/// every process on this host, multicast and Zenoh over loopback.
#[test]
fn loopback_hosts_receive_every_record() {
    let args = ["--loopback", "-n", "5000", "--no-shm", "--reliable"];
    let Some((dir, stdout)) = hosts("hosts-loopback", &args) else {
        return;
    };
    assert!(stdout.contains("one host, loopback"), "{stdout}");
    assert!(stdout.contains("one-way latency"), "{stdout}");
    let want = expected(&dir, "simple5000.dat");
    both_hosts_have_every_record(&dir, &want);
    std::fs::remove_dir_all(&dir).ok();
}

/// Host b's link goes down for 2.5 s in the middle of a paced feed (about 5,000 records/s)
/// and comes back. Hosts a and b queue more records than the run has: host a, starved of CPU
/// on a busy machine, still drops none of its own. Zenoh's TCP session outlives a cut
/// shorter than its lease (10 s): what the publisher's queue for that link and TCP hold
/// arrives late, the rest is dropped for that link alone (congestion control Drop), so host
/// b sees a gap in the sequence numbers and counts it. A longer cut closes the session;
/// `--connect` reconnects after the link returns, and the gap is counted the same way. The
/// publisher waits for host b's bye at the end, so its Done reaches host b.
#[test]
fn a_cut_subscriber_host_counts_what_it_missed() {
    const CUT_S: f64 = 2.5;
    let args = [
        "-n", "30000", "-p", "200", "-s", "2000", "--cut", "2.5", "--cut-at", "1.5", "--queue",
        "65536", "--no-shm",
    ];
    let Some((dir, stdout)) = hosts("hosts-cut", &args) else {
        return;
    };
    assert!(stdout.contains("cut: link to host b down"), "{stdout}");
    assert!(
        !stdout.contains("(state UP)"),
        "the link stayed up: {stdout}"
    );
    let packets = common::packets(&dir.join("simple30000.dat"), fastfeed_sim::SIMPLE_TEMPLATES);
    let want = common::dump_lines(packets.iter().flat_map(|p| &p.records));
    let p = common::read_json(&dir.join("pub.json"));

    // Host a misses nothing.
    has_every_record(&dir, "a", &want);
    reconciled(&p, "a", &common::read_json(&dir.join("sub_a.json")));

    // Host b: what it got, it got once; it resumed; what it did not get, it counted.
    let b = common::read_json(&dir.join("sub_b.json"));
    reconciled(&p, "b", &b);
    // It came back: its report is complete, so the Done sent after the cut reached it. Records
    // after the cut may not: when Zenoh closes the session at the restore (it sometimes does)
    // and the machine is busy, host b reconnects after the feed's end (seen in CI).
    let got = has_some_records(&dir, "b", &want, None);
    assert_eq!(got as u64, common::num(&b, "received"), "{b}");
    // About 12,000 records were sent during the cut. Zenoh's queue for the link and TCP's
    // send buffer (autotuned, up to megabytes) hold some or all of them: host b either
    // counted a gap or got them late, their echoes a good part of the cut after they left.
    let late_ms = p["stages_us"]["round_trip"]["max"].as_f64().unwrap() / 1e3;
    assert!(
        common::num(&b, "missed") > 0 || late_ms > CUT_S * 1e3 / 2.0,
        "host b neither missed records nor got them late ({late_ms} ms): {b}\n{stdout}"
    );

    // The publisher never waited for host b: no publish call took a sizeable part of the cut,
    // and it kept up with the feed (no packet lost before it).
    let longest = longest_publish_ms(&p);
    assert!(
        longest < CUT_S * 1e3 / 2.5,
        "a publish call took {longest} ms"
    );
    assert_eq!(common::num(&p["packets"], "gaps"), 0, "{p}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A third subscriber host, screen class, stops reading for 3 s at its first record while
/// about 7,000 records/s come: its queues (1,024 per type) drop their oldest and it counts
/// them; hosts a and b receive every record and the publisher never waits.
#[test]
fn a_slow_screen_host_never_slows_the_others() {
    let args = [
        "-n", "40000", "-p", "200", "-s", "1500", "--slow", "3000", "--queue", "65536", "--no-shm",
    ];
    let Some((dir, stdout)) = hosts("hosts-slow", &args) else {
        return;
    };
    assert!(stdout.contains("subscriber host c:"), "{stdout}");
    let packets = common::packets(&dir.join("simple40000.dat"), fastfeed_sim::SIMPLE_TEMPLATES);
    let want = common::dump_lines(packets.iter().flat_map(|p| &p.records));
    let last = common::dump_lines(
        packets
            .iter()
            .rev()
            .take(packets.len() / 5)
            .flat_map(|p| &p.records),
    );
    let p = common::read_json(&dir.join("pub.json"));
    for host in ["a", "b"] {
        has_every_record(&dir, host, &want);
        reconciled(
            &p,
            host,
            &common::read_json(&dir.join(format!("sub_{host}.json"))),
        );
    }
    let c = common::read_json(&dir.join("sub_c.json"));
    reconciled(&p, "c", &c);
    let got = has_some_records(&dir, "c", &want, Some(&last));
    assert_eq!(got as u64, common::num(&c, "received"), "{c}");
    assert!(
        common::num(&c, "missed") > 0,
        "the slow host missed nothing: {c}\n{stdout}"
    );
    let longest = longest_publish_ms(&p);
    assert!(longest < 1000.0, "a publish call took {longest} ms");
    assert_eq!(common::num(&p["packets"], "gaps"), 0, "{p}");
    std::fs::remove_dir_all(&dir).ok();
}
