//! The feed handler as processes, on the real MOEX capture: `replay` sends the three lines
//! to multicast groups with faults, `handle` receives them, recovers, and reports; `book
//! --json` writes books that are checked here against the snapshot channel as `decode`
//! prints it (an independent path: no handler code on that side).

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;

fn corpus(file: &str) -> PathBuf {
    PathBuf::from(format!(
        "{}/../../../shared/corpus/moex-forts-2013/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

/// A MOEX configuration on this process's own groups.
fn config(dir: &Path) -> PathBuf {
    config_from(dir, 0, [None; 3])
}

/// [`config`] on groups `base` + 1..3 (tests that run at once each take their own), with
/// the lines A, B and snapshot joined for these sources only.
fn config_from(dir: &Path, base: u16, sources: [Option<&str>; 3]) -> PathBuf {
    config_of(dir, &[("FUT-BOOK-5", base, sources)])
}

/// A MOEX configuration of these channels (name, base of its groups, sources), each on the
/// whole capture.
fn config_of(dir: &Path, channels: &[(&str, u16, [Option<&str>; 3])]) -> PathBuf {
    let mut text = format!(
        "feed = \"moex{pid}\"\nprofile = \"moex-forts\"\ntemplates = \"{t}\"\n",
        pid = std::process::id(),
        t = corpus("templates.xml").display(),
    );
    for (name, base, sources) in channels {
        let line = |tag: u16, file: &str| {
            let source = sources[tag as usize - 1]
                .map(|s| format!(", source = \"{s}\""))
                .unwrap_or_default();
            format!(
                "{{ group = \"{}\"{source}, capture = \"{}\", format = \"raw\" }}",
                unique_group(base + tag),
                corpus(file).display()
            )
        };
        text.push_str(&format!(
            "\n[[channel]]\nname = \"{name}\"\ngap_timeout_ms = 20\na = {a}\nb = {b}\nsnapshot = {s}\n",
            a = line(1, "increment_a.dat"),
            b = line(2, "increment_b.dat"),
            s = line(3, "snapshot.dat"),
        ));
    }
    let path = dir.join("moex.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The snapshot channel through `fastfeed decode`: (security, RptSeq) -> [bids, offers] as
/// [price, size] by level.
/// Bids and offers as (price digits, size), best first.
type Sides = [Vec<(String, i64)>; 2];

fn snapshots() -> HashMap<(u64, u64), Sides> {
    let out = fastfeed()
        .args(["decode", "-t"])
        .arg(corpus("templates.xml"))
        .arg(corpus("snapshot.dat"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut m = HashMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["templateId"] != 75 {
            continue;
        }
        let mut sides: [Vec<(u64, String, i64)>; 2] = Default::default();
        for e in v["MDEntries"].as_array().unwrap() {
            let side = match e["MDEntryType"].as_str().unwrap() {
                "0" => 0,
                "1" => 1,
                _ => continue,
            };
            sides[side].push((
                e["MDPriceLevel"].as_u64().unwrap(),
                norm(&e["MDEntryPx"].to_string()),
                e["MDEntrySize"].as_i64().unwrap(),
            ));
        }
        let sides = sides.map(|mut s| {
            s.sort();
            s.into_iter().map(|(_, p, z)| (p, z)).collect()
        });
        m.insert((num(&v, "SecurityID"), num(&v, "RptSeq")), sides);
    }
    m
}

/// A JSON number's value as plain digits: 13331e+1 and 133310 are one price.
fn norm(s: &str) -> String {
    let d = s.replace("e+", "e");
    match d.split_once('e') {
        Some((m, e)) => {
            let e: usize = e.parse().unwrap();
            format!("{m}{}", "0".repeat(e))
        }
        None => d,
    }
}

/// `book --captures --security ID` on `cfg`: its standard error, after checking it succeeded.
fn book_stderr(cfg: &std::path::Path, security: &str) -> String {
    let out = fastfeed()
        .args(["book", "--captures", "--security", security])
        .arg(cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    err
}

/// A security the feed never touched gets the busiest ones named, not just "0 changes".
#[test]
fn book_of_an_unknown_security_names_the_busiest() {
    let dir = scratch("feed-book-unknown");
    let cfg = config(&dir);
    let err = book_stderr(&cfg, "1");
    assert!(err.contains("0 changes of security 1"), "{err}");
    assert!(
        err.contains("no book change of that security in the feed; it changed "),
        "{err}"
    );
    // The busiest named first exists: asking for it gives changes.
    let first = err
        .split("the busiest: ")
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .expect("a security named")
        .to_string();
    let err = book_stderr(&cfg, &first);
    let changes: u64 = err
        .lines()
        .find(|l| l.ends_with(&format!("changes of security {first}")))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count: {err}"));
    assert!(changes > 0, "{err}");
    assert!(!err.contains("no book change"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn book_json_equals_the_snapshots_decode_prints() {
    let dir = scratch("feed-book");
    let cfg = config(&dir);
    let reference = snapshots();
    let mut matched = 0;
    for security in ["49630790", "49634118", "49664582", "49613382"] {
        let out = fastfeed()
            .args(["book", "--captures", "--json", "--security", security])
            .arg(&cfg)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if v["fromSnapshot"] == true || v["state"] != "live" {
                continue;
            }
            let key = (num(&v, "security"), num(&v, "rptSeq"));
            let Some(want) = reference.get(&key) else {
                continue;
            };
            for (side, name) in [(0, "bids"), (1, "offers")] {
                let got: Vec<(String, i64)> = v[name]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| (norm(&l[0].to_string()), l[1].as_i64().unwrap()))
                    .collect();
                assert_eq!(got, want[side], "{name} of {key:?}");
            }
            matched += 1;
        }
    }
    // The config.xml instruments' share of the 2,839 points of the whole channel.
    assert!(matched > 2_000, "{matched}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `handle` on `cfg`'s groups (with `handle_args`) while `replay` sends them (`replay_args`
/// before the config); the channel's report and replay's standard error.
fn handle_replayed(
    dir: &Path,
    cfg: &Path,
    handle_args: &[&str],
    replay_args: &[&str],
) -> (serde_json::Value, String) {
    let (r, stderr) = handle_replayed_all(dir, cfg, handle_args, replay_args, || {});
    (r["FUT-BOOK-5"].clone(), stderr)
}

/// [`handle_replayed`], the report of every channel; `then` runs once the replay has ended,
/// while the handler waits out its idle time.
fn handle_replayed_all(
    dir: &Path,
    cfg: &Path,
    handle_args: &[&str],
    replay_args: &[&str],
    then: impl FnOnce(),
) -> (serde_json::Value, String) {
    let report = dir.join("handle.json");
    let mut args = strings(&["handle", &path_arg(cfg), "--idle-exit-ms", "1500", "-q"]);
    args.extend(strings(&["--report-json", &path_arg(&report)]));
    args.extend(strings(handle_args));
    let mut handle = Proc::spawn("handle", &args);
    handle.wait_ready();
    let replay = fastfeed()
        .arg("replay")
        .args(replay_args)
        .arg(cfg)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&replay.stderr).into_owned();
    assert!(replay.status.success(), "{stderr}");
    then();
    let ended = wait_all(std::slice::from_mut(&mut handle), Duration::from_secs(60));
    assert!(ended[0].success);
    (read_json(&report), stderr)
}

/// `handle --captures -q` on `cfg` with `args`, its report written to `json`: the report.
fn handle_captures(cfg: &Path, json: &Path, args: &[&str]) -> serde_json::Value {
    let out = fastfeed()
        .args([
            "handle",
            "--captures",
            "-q",
            "--report-json",
            &path_arg(json),
        ])
        .args(args)
        .arg(cfg)
        .output()
        .unwrap();
    stdout_of_success(&out, "handle --captures");
    read_json(json)
}

/// Every datagram the live handler read was timed from the kernel's receive timestamp to
/// the books, and the figures are in order.
fn check_wire_latency(r: &serde_json::Value) {
    let read = num(r, "packets_a") + num(r, "packets_b") + num(r, "snapshot_packets");
    assert!(num(r, "wire_timed") >= read, "{r}");
    assert_eq!(num(r, "wire_unstamped"), 0, "{r}");
    let p = ["p50", "p90", "p99", "p99_9", "max"].map(|p| num(r, &format!("wire_to_book_{p}_ns")));
    assert!(p[0] > 0 && p.windows(2).all(|w| w[0] <= w[1]), "{p:?}");
    // Loopback, a few thousand packets a second: well under a second each.
    assert!(p[4] < 1_000_000_000, "{p:?}");
    assert!(num(r, "in_socket_p50_ns") <= p[0], "{r}");
}

#[test]
fn replay_and_handle_recover_losses_on_both_lines() {
    if !fastfeed_net::loopback_multicast_works() {
        eprintln!("skipped: {}", fastfeed_net::LOOPBACK_HINT);
        return;
    }
    let dir = scratch("feed-live");
    let cfg = config(&dir);
    // The same 1% lost on both lines: those packets are gone, and their instruments must
    // recover from the snapshot line. Every datagram read is recorded as it comes.
    let args = ["--rate", "20000", "--drop", "0.01", "--same-faults", "-q"];
    let rec = dir.join("rec");
    let (r, stderr) = handle_replayed(&dir, &cfg, &["--record", &path_arg(&rec)], &args);
    let r = &r;
    let dropped: u64 = stderr
        .lines()
        .filter(|l| l.contains(" line a ") || l.contains(" line b "))
        .map(|l| {
            l.split("dropped ")
                .nth(1)
                .unwrap()
                .split(',')
                .next()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert!(dropped > 100, "{stderr}");
    assert_eq!(
        num(r, "packets_a") + num(r, "packets_b") + dropped,
        8_101 + 8_088
    );
    assert_eq!(num(r, "rejected_a") + num(r, "rejected_b"), 0);
    assert_eq!(
        (num(r, "book_errors"), num(r, "snapshot_mismatches")),
        (0, 0)
    );
    assert!(num(r, "gaps_timed_out") > 0);
    assert!(num(r, "went_stale") > 0, "{r}");
    assert!(num(r, "recoveries") > 0, "{r}");
    assert_eq!(num(r, "stale_periods"), num(r, "recoveries"));
    assert_eq!((num(r, "silences_a"), num(r, "silences_b")), (0, 0), "{r}");
    let kernel = ["a", "b", "snapshot"].map(|l| num(r, &format!("kernel_drops_{l}")));
    assert_eq!(kernel, [0; 3], "{r}");
    check_wire_latency(r);
    handle_the_recording(&rec, r);
    std::fs::remove_dir_all(&dir).ok();
}

/// The live run's recording (`rec`/FUT-BOOK-5.pcap, every datagram it read) through the
/// configuration the handler wrote beside it (`rec/feed.toml`, every line's capture that
/// pcap): handled offline, each line takes back its datagrams, and the books come out as
/// sound as live.
fn handle_the_recording(rec: &Path, live: &serde_json::Value) {
    let read = ["packets_a", "packets_b", "snapshot_packets"].map(|k| num(live, k));
    assert_eq!(
        num(live, "recorded_datagrams"),
        read.iter().sum::<u64>(),
        "{live}"
    );
    assert_eq!(num(live, "recorded_refused"), 0, "{live}");
    let offline = rec.join("feed.toml");
    let text = std::fs::read_to_string(&offline).unwrap();
    let pcap = rec.join("FUT-BOOK-5.pcap");
    assert_eq!(
        text.matches(&format!("capture = \"{}\"", pcap.display()))
            .count(),
        3,
        "{text}"
    );
    let r = &handle_captures(&offline, &rec.join("offline.json"), &[])["FUT-BOOK-5"];
    for k in ["packets_a", "packets_b"] {
        assert_eq!(num(r, k), num(live, k), "{k}: {r}");
    }
    assert!(num(r, "snapshot_packets") > 0, "{r}");
    let sound = [
        "rejected_a",
        "rejected_b",
        "rejected_snapshot",
        "book_errors",
    ];
    assert_eq!(sound.map(|k| num(r, k)), [0; 4], "{r}");
    assert_eq!(num(r, "not_live"), 0, "{r}");
}

#[test]
fn a_line_joined_for_another_source_receives_nothing() {
    if !fastfeed_net::loopback_multicast_works() {
        eprintln!("skipped: {}", fastfeed_net::LOOPBACK_HINT);
        return;
    }
    // `replay` sends from 127.0.0.1; line B asks for 127.0.0.2's datagrams only (as a
    // source-specific join to another sender would), so line A carries the channel alone,
    // and line B is reported silent once line A has taken packets for a second (the
    // default `line_silence_ms`; the replay takes 1.6 s).
    let dir = scratch("feed-source");
    let cfg = config_from(&dir, 3, [Some("127.0.0.1"), Some("127.0.0.2"), None]);
    // This one reads its sockets without blocking (`--spin`); the other waits in poll(2).
    let (r, _) = handle_replayed(&dir, &cfg, &["--spin"], &["--rate", "5000", "-q"]);
    let r = &r;
    assert_eq!(
        (num(r, "packets_a"), num(r, "packets_b")),
        (8_101, 0),
        "{r}"
    );
    assert_eq!(num(r, "book_errors"), 0);
    assert_eq!((num(r, "silences_a"), num(r, "silences_b")), (0, 1), "{r}");
    assert!(num(r, "silent_ns_b") > 1_000_000_000, "{r}");
    check_wire_latency(r);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn decode_reads_a_pcap() {
    let dir = scratch("feed-pcap");
    let pcap = dir.join("cme.pcap");
    let out = fastfeed()
        .args(["generate", "cme", "-n", "300", "-o"])
        .arg(&pcap)
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = fastfeed()
        .args(["decode", "-t"])
        .arg(format!(
            "{}/../sim/templates/cme.xml",
            env!("CARGO_MANIFEST_DIR")
        ))
        .args([
            "--framing",
            "pcap",
            "--udp",
            "239.255.90.1:14310",
            "--skip-header",
            "5",
            "--reset-each-packet",
        ])
        .arg(&pcap)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 300);
    assert!(lines
        .iter()
        .enumerate()
        .all(|(i, m)| m["MsgSeqNum"] == i as u64 + 1));

    // Without --udp every line's datagrams are read, and stderr says which destinations the
    // capture held, the busiest first.
    let out = fastfeed()
        .args(["decode", "--count", "-t"])
        .arg(format!(
            "{}/../sim/templates/cme.xml",
            env!("CARGO_MANIFEST_DIR")
        ))
        .args(["--skip-header", "5", "--reset-each-packet"])
        .arg(&pcap)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "capture: datagrams by destination (--udp GROUP:PORT reads one): \
             239.255.90.1:14310 300, 239.255.90.2:14311 300"
        ),
        "{err}"
    );

    // The same feed sent on a link of a 96-byte MTU: most datagrams are in the capture as
    // IPv4 fragments. Read as it goes (a file) or whole (standard input), the same messages.
    let frag = dir.join("cme-frag.pcap");
    let out = fastfeed()
        .args(["generate", "cme", "-n", "300", "--mtu", "96", "-o"])
        .arg(&frag)
        .output()
        .unwrap();
    assert!(out.status.success());
    let decode = |stdin: bool| {
        let mut cmd = fastfeed();
        cmd.args(["decode", "-t"])
            .arg(format!(
                "{}/../sim/templates/cme.xml",
                env!("CARGO_MANIFEST_DIR")
            ))
            .args(["--udp", "239.255.90.1:14310", "--skip-header", "5"])
            .arg("--reset-each-packet");
        if stdin {
            cmd.arg("-").stdin(std::fs::File::open(&frag).unwrap());
        } else {
            cmd.arg(&frag);
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        let got: Vec<serde_json::Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (got, err)
    };
    for stdin in [false, true] {
        let (got, err) = decode(stdin);
        assert!(
            got == lines,
            "stdin {stdin}: not the unfragmented capture's messages"
        );
        let counts = err.lines().find(|l| l.starts_with("capture: ")).unwrap();
        let put_together: u64 = counts
            .split(" (")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{counts}"));
        assert!(put_together > 100, "{counts}");
        assert!(counts.contains(" 0 fragments lost"), "{counts}");
    }

    // To a table, read a run of the capture at a time: a row per entry of each MDIncRefresh,
    // on one thread and on blocks of packets, the same rows.
    let entries: usize = lines
        .iter()
        .filter(|m| m["templateName"] == "MDIncRefresh")
        .map(|m| m["MDEntries"].as_array().unwrap().len())
        .sum();
    let table = |threads: &str| {
        let file = dir.join(format!("inc{threads}.parquet"));
        let out = fastfeed()
            .args(["decode", "-t"])
            .arg(format!(
                "{}/../sim/templates/cme.xml",
                env!("CARGO_MANIFEST_DIR")
            ))
            .args(["--udp", "239.255.90.1:14310", "--skip-header", "5"])
            .args(["--reset-each-packet", "--format", "parquet"])
            .args(["--template", "MDIncRefresh", "--entries", "MDEntries"])
            .args(["--threads", threads, "-o"])
            .arg(&file)
            .arg(&pcap)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(
            err.contains("600 frames, 600 UDP datagrams, 300 selected"),
            "{err}"
        );
        common::parquet_rows(&file)
    };
    let one = table("1");
    assert_eq!(one.len(), entries);
    assert!(entries > 300);
    assert_eq!(table("2"), one);
    std::fs::remove_dir_all(&dir).ok();
}

/// A capture piped in as it is taken (`tcpdump -w - | fastfeed decode ... -`): messages come
/// out while the capture is still being written, and once it ends they are the file's.
#[test]
fn a_capture_on_standard_input_is_decoded_as_it_comes() {
    use std::io::{BufRead, Write};
    let dir = scratch("feed-pipe");
    let pcap = dir.join("cme.pcap");
    let out = fastfeed()
        .args(["generate", "cme", "-n", "3000", "--mtu", "96", "-o"])
        .arg(&pcap)
        .output()
        .unwrap();
    assert!(out.status.success());
    let data = std::fs::read(&pcap).unwrap();
    let tpl = format!("{}/../sim/templates/cme.xml", env!("CARGO_MANIFEST_DIR"));
    let args = [
        "decode",
        "-t",
        &tpl,
        "--udp",
        "239.255.90.1:14310",
        "--skip-header",
        "5",
        "--reset-each-packet",
    ];
    let whole = fastfeed().args(args).arg(&pcap).output().unwrap();
    assert!(whole.status.success());
    let mut child = fastfeed()
        .args(args)
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut lines = std::io::BufReader::new(stdout).lines();
        let first = lines.next().unwrap().unwrap();
        tx.send(()).unwrap();
        let mut all = vec![first];
        all.extend(lines.map(Result::unwrap));
        all
    });
    // A quarter of the capture, more than one run: its messages come out before the rest.
    stdin.write_all(&data[..data.len() / 4]).unwrap();
    stdin.flush().unwrap();
    let early = rx.recv_timeout(Duration::from_secs(30));
    stdin.write_all(&data[data.len() / 4..]).unwrap();
    drop(stdin);
    let lines = reader.join().unwrap();
    assert!(child.wait().unwrap().success());
    assert!(early.is_ok(), "no message before the capture ended");
    assert_eq!(
        lines.join("\n") + "\n",
        String::from_utf8(whole.stdout).unwrap()
    );
    assert_eq!(lines.len(), 3000);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn handle_reads_a_pcap_and_reports_what_it_held() {
    let dir = scratch("feed-handle-pcap");
    let pcap = dir.join("cme.pcap");
    let out = fastfeed()
        .args(["generate", "cme", "-n", "2000", "-o"])
        .arg(&pcap)
        .output()
        .unwrap();
    assert!(out.status.success());
    let cfg = dir.join("cme.toml");
    let line = |group: &str| format!("{{ group = \"{group}\", capture = \"cme.pcap\" }}");
    std::fs::write(
        &cfg,
        format!(
            "feed = \"cme\"\nprofile = \"cme\"\ntemplates = \"{}/../sim/templates/cme.xml\"\n\
             [[channel]]\nname = \"ES\"\npacket = {{ kind = \"seq\", bytes = 4, endian = \"be\", len = 5 }}\n\
             reset_each_packet = true\na = {}\nb = {}\nsnapshot = {}\n",
            env!("CARGO_MANIFEST_DIR"),
            line("239.255.90.1:14310"),
            line("239.255.90.2:14311"),
            line("239.255.90.3:14312"),
        ),
    )
    .unwrap();
    let out = fastfeed()
        .args(["handle", "--captures"])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // Each line's datagrams, picked from the one capture; everything else in it counted.
    let frames = err
        .lines()
        .find(|l| l.starts_with("ES line a: capture: "))
        .and_then(|l| l["ES line a: capture: ".len()..].split(' ').next())
        .unwrap_or_else(|| panic!("no capture line for line a: {err}"));
    for (name, selected) in [("a", "2000"), ("b", "2000")] {
        assert!(
            err.contains(&format!(
                "ES line {name}: capture: {frames} frames, {frames} UDP datagrams, {selected} selected; skipped 0 truncated"
            )),
            "{err}"
        );
    }
    assert!(err.contains("packets_a=2000 packets_b=2000"), "{err}");
    assert!(err.contains("rejected_a=0 rejected_b=0"), "{err}");
    // Replayed from the same capture, read as it is sent: every line's datagrams sent.
    let out = fastfeed()
        .args(["replay", "-q"])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for line in ["a -> 239.255.90.1:14310", "b -> 239.255.90.2:14311"] {
        assert!(
            err.contains(&format!("line {line}: 2000 packets, 2000 sent")),
            "{err}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn handle_ends_a_damaged_line_and_names_the_damage() {
    // Line A's raw file cut in the middle of a message: the handler takes its packets up to
    // there, says where and why the line stopped, and finishes the run on the other lines.
    let dir = scratch("feed-damaged");
    let cfg = config(&dir);
    let cut = dir.join("increment_a_cut.dat");
    let a = std::fs::read(corpus("increment_a.dat")).unwrap();
    std::fs::write(&cut, &a[..400_001]).unwrap();
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        &corpus("increment_a.dat").display().to_string(),
        &cut.display().to_string(),
    );
    std::fs::write(&cfg, text).unwrap();
    let out = fastfeed()
        .args(["handle", "--captures", "-q"])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let stopped = err
        .lines()
        .find(|l| l.starts_with("FUT-BOOK-5 line a: stopped early"))
        .unwrap_or_else(|| panic!("no line for the damage: {err}"));
    assert!(stopped.contains("increment_a_cut.dat"), "{stopped}");
    assert!(stopped.contains("in the middle of a message"), "{stopped}");
    // Line A's packets before the cut (8,101 in the whole file), line B's all; B fills in
    // what A lost, so nothing is missing.
    assert!(err.contains("packets_a=4639 packets_b=8088"), "{err}");
    assert!(err.contains("channel.missing=0"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A venue that names instruments by Symbol and TradingSessionID (MOEX ASTS's shape, in
/// templates written here): messages written as JSON, encoded by `fastfeed encode`, handled
/// from the capture, and one instrument's book asked for with `book --symbol`.
#[test]
fn books_of_instruments_named_by_symbol() {
    let dir = scratch("feed-symbols");
    let templates = dir.join("t.xml");
    std::fs::write(
        &templates,
        r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
  <template name="X-OBR" id="10">
    <string name="MessageType" id="35"><constant value="X"/></string>
    <uInt32 name="MsgSeqNum" id="34"/>
    <sequence name="GroupMDEntries"><length name="NoMDEntries" id="268"/>
      <uInt32 name="MDUpdateAction" id="279"/>
      <string name="MDEntryType" id="269"/>
      <string name="Symbol" id="55" presence="optional"><copy/></string>
      <int32 name="RptSeq" id="83" presence="optional"/>
      <decimal name="MDEntryPx" id="270" presence="optional"/>
      <decimal name="MDEntrySize" id="271" presence="optional"/>
      <string name="TradingSessionID" id="336" presence="optional"><copy/></string>
    </sequence>
  </template>
  <template name="W-OBS" id="11">
    <string name="MessageType" id="35"><constant value="W"/></string>
    <uInt32 name="MsgSeqNum" id="34"/>
    <uInt32 name="LastMsgSeqNumProcessed" id="369"/>
    <int32 name="RptSeq" id="83"/>
    <uInt32 name="LastFragment" id="893" presence="optional"/>
    <uInt32 name="RouteFirst" id="7944" presence="optional"/>
    <string name="TradingSessionID" id="336" presence="optional"/>
    <string name="Symbol" id="55"/>
    <sequence name="GroupMDEntries"><length name="NoMDEntries" id="268"/>
      <string name="MDEntryType" id="269"/>
      <decimal name="MDEntryPx" id="270" presence="optional"/>
      <decimal name="MDEntrySize" id="271" presence="optional"/>
    </sequence>
  </template>
</templates>"#,
    )
    .unwrap();
    let entry = |action: u32, side: &str, sym: &str, rpt: u32, px: &str, size: u32| {
        format!(
            r#"{{"MDUpdateAction":{action},"MDEntryType":"{side}","Symbol":"{sym}","RptSeq":{rpt},"MDEntryPx":"{px}","MDEntrySize":"{size}","TradingSessionID":"CETS"}}"#
        )
    };
    let msgs = [
        (1, entry(0, "0", "USD000UTSTOM", 1, "90.5", 1000)),
        (2, entry(0, "1", "EUR_RUB__TOM", 1, "98.25", 500)),
        (3, entry(0, "1", "USD000UTSTOM", 2, "90.75", 2000)),
        (4, entry(1, "0", "USD000UTSTOM", 3, "90.5", 3000)),
    ];
    let jsonl: String = msgs
        .iter()
        .map(|(seq, e)| {
            format!(r#"{{"templateId":10,"MsgSeqNum":{seq},"GroupMDEntries":[{e}]}}"#) + "\n"
        })
        .collect();
    // The snapshot line: USD000UTSTOM's book as of RptSeq 2 in two fragments.
    let fragment = |seq: u32, last: u32, first: u32, side: &str, px: &str, size: u32| {
        format!(
            r#"{{"templateId":11,"MsgSeqNum":{seq},"LastMsgSeqNumProcessed":3,"RptSeq":2,"LastFragment":{last},"RouteFirst":{first},"TradingSessionID":"CETS","Symbol":"USD000UTSTOM","GroupMDEntries":[{{"MDEntryType":"{side}","MDEntryPx":"{px}","MDEntrySize":"{size}"}}]}}"#
        ) + "\n"
    };
    let snapshots = fragment(1, 0, 1, "0", "90.5", 1000) + &fragment(2, 1, 0, "1", "90.75", 2000);
    let encode = |jsonl: &str, name: &str| {
        std::fs::write(dir.join(format!("{name}.jsonl")), jsonl).unwrap();
        let capture = dir.join(format!("{name}.dat"));
        let out = fastfeed()
            .args(["encode", "-t"])
            .arg(&templates)
            .arg(dir.join(format!("{name}.jsonl")))
            .arg("-o")
            .arg(&capture)
            .output()
            .unwrap();
        stdout_of_success(&out, "encode");
        capture
    };
    let capture = encode(&jsonl, "a");
    let snapshot = encode(&snapshots, "s");
    let cfg = dir.join("asts.toml");
    std::fs::write(
        &cfg,
        format!(
            "feed = \"asts\"\nprofile = \"fix\"\ntemplates = \"{}\"\n\n[[channel]]\nname = \"OBR\"\npacket = {{ kind = \"none\" }}\na = {{ group = \"{}\", capture = \"{}\", format = \"raw\" }}\nsnapshot = {{ group = \"{}\", capture = \"{}\", format = \"raw\" }}\n",
            templates.display(),
            unique_group(9),
            capture.display(),
            unique_group(10),
            snapshot.display()
        ),
    )
    .unwrap();
    let out = fastfeed()
        .args([
            "book",
            "--captures",
            "--json",
            "--symbol",
            "USD000UTSTOM:CETS",
        ])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let changes: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let security = fastfeed_events::symbol_security("USD000UTSTOM", Some("CETS"));
    // The book from both fragments at RptSeq 2, then the queued change at RptSeq 3.
    let snap = changes
        .iter()
        .find(|c| c["fromSnapshot"] == true)
        .unwrap_or_else(|| panic!("no snapshot taken: {err}"));
    assert_eq!((num(snap, "security"), num(snap, "rptSeq")), (security, 2));
    assert_eq!(snap["bids"][0][1], 1000, "{snap}");
    assert_eq!(snap["offers"][0][1], 2000, "{snap}");
    let last = changes.last().unwrap();
    assert_eq!(num(last, "security"), security);
    assert_eq!(num(last, "rptSeq"), 3);
    assert_eq!(last["state"], "live", "{last}");
    assert_eq!(last["bids"][0][1], 3000, "{last}");
    assert_eq!(last["offers"][0][1], 2000, "{last}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn ctrl_c_ends_the_live_handler_with_its_report() {
    if !fastfeed_net::loopback_multicast_works() {
        eprintln!("skipped: {}", fastfeed_net::LOOPBACK_HINT);
        return;
    }
    let dir = scratch("feed-ctrl-c");
    let cfg = config_from(&dir, 6, [None; 3]);
    let report = dir.join("handle.json");
    let mut handle = fastfeed()
        .args([
            "handle",
            &path_arg(&cfg),
            "-q",
            "--report-json",
            &path_arg(&report),
        ])
        // Spinning a while after each datagram, then waiting in poll(2).
        .args(["--spin-us", "300"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(handle.stdout.as_mut().unwrap()),
        &mut ready,
    )
    .unwrap();
    assert_eq!(ready.trim(), "ready");
    // 8,101 packets at 2,000 a second: about 4 s; the handler is stopped after one.
    let mut replay = fastfeed()
        .args(["replay", "--rate", "2000", "-q", &path_arg(&cfg)])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let kill = std::process::Command::new("kill")
        .args(["-INT", &handle.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = handle.wait_with_output().unwrap();
    replay.kill().ok();
    replay.wait().ok();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("wire to book p50"), "{stderr}");
    let r = &read_json(&report)["FUT-BOOK-5"];
    let a = num(r, "packets_a");
    assert!(a > 100 && a < 8_101, "{r}");
    check_wire_latency(r);
    std::fs::remove_dir_all(&dir).ok();
}

/// A channel's report without where it ran.
fn counters(r: &serde_json::Value) -> serde_json::Value {
    let mut r = r.clone();
    let o = r.as_object_mut().unwrap();
    o.remove("thread");
    o.remove("cpu");
    r
}

#[test]
fn channels_on_threads_are_handled_as_on_one() {
    // Three channels (each the whole MOEX capture) on two threads: channels 0 and 2 on
    // thread 0, channel 1 on thread 1, each thread pinned and publishing on the
    // shared-memory bus from a node of its own. Every counter of every channel, and the
    // records published, are what one thread gives, and the report names where each ran.
    let dir = scratch("feed-threads-captures");
    let names = ["FUT-BOOK-5", "SECOND", "THIRD"];
    // Never joined (captures): the three may name the same groups.
    let cfg = config_of(
        &dir,
        &[
            (names[0], 10, [None; 3]),
            (names[1], 10, [None; 3]),
            (names[2], 10, [None; 3]),
        ],
    );
    let feed = format!("threads{}", std::process::id());
    let bus = ["--bus", "shm", "--feed", &feed];
    let one = handle_captures(&cfg, &dir.join("one.json"), &bus);
    let two = handle_captures(
        &cfg,
        &dir.join("two.json"),
        &[&bus[..], &["--threads", "2"]].concat(),
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    for (c, name) in names.iter().enumerate() {
        let (a, b) = (&one[name], &two[name]);
        assert_eq!(num(a, "packets_a"), 8_101, "{a}");
        assert!(a.get("thread").is_none(), "{a}");
        assert_eq!(counters(a), counters(b), "{name}");
        assert_eq!(num(b, "thread"), c as u64 % 2, "{b}");
    }
    assert!(num(&one, "bus_published") > 3 * 20_000, "{one}");
    assert_eq!(num(&one, "bus_published"), num(&two, "bus_published"));
    assert_eq!((num(&one, "bus_errors"), num(&two, "bus_errors")), (0, 0));
    let cpu = |c: &str| num(&two[c], "cpu");
    assert_eq!(cpu(names[0]), cpu(names[2]));
    if cpus >= 2 {
        assert_ne!(cpu(names[0]), cpu(names[1]));
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn live_channels_on_threads_each_take_their_own_lines() {
    if !fastfeed_net::loopback_multicast_works() {
        eprintln!("skipped: {}", fastfeed_net::LOOPBACK_HINT);
        return;
    }
    // Two channels replayed live, each on a thread of its own, and a third that hears
    // nothing (its line joined for another sender): its thread ends with the others once
    // the whole feed has been quiet for --idle-exit-ms. Meanwhile a monitoring system reads
    // every channel's counters over HTTP (`--metrics`).
    let dir = scratch("feed-threads-live");
    // Groups 11 to 16 (16 wraps to 0): none of the other tests' 1 to 10.
    let cfg = config_of(
        &dir,
        &[("FUT-BOOK-5", 10, [None; 3]), ("SECOND", 13, [None; 3])],
    );
    let empty = dir.join("empty.dat");
    std::fs::write(&empty, b"").unwrap();
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str(&format!(
        "\n[[channel]]\nname = \"QUIET\"\na = {{ group = \"{}\", source = \"127.0.0.2\", capture = \"{}\", format = \"raw\" }}\n",
        unique_group(12),
        empty.display()
    ));
    std::fs::write(&cfg, text).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let feed = format!("moex{}", std::process::id());
    let metric =
        |channel: &str, name: &str| format!("{name}{{feed=\"{feed}\",channel=\"{channel}\"}}");
    let mut scraped = String::new();
    let args = ["--rate", "20000", "-q"];
    let handle_args = ["--threads", "3", "--metrics", &addr];
    let (r, _) = handle_replayed_all(&dir, &cfg, &handle_args, &args, || {
        // The threads give their counters once a second: within the 1.5 s the handler
        // waits before it ends, the scrape has every packet.
        let done = |text: &str| {
            ["FUT-BOOK-5", "SECOND"]
                .iter()
                .all(|c| text.contains(&format!("{} 8101\n", metric(c, "fastfeed_packets_a"))))
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !done(&scraped) && std::time::Instant::now() < deadline {
            let text = http_get(&addr, "/metrics");
            // Once the handler has ended, the last scrape it answered is the one to check.
            if text.starts_with("connecting") && !scraped.is_empty() {
                break;
            }
            scraped = text;
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let status = scraped.lines().next().unwrap_or_default();
    assert!(status.ends_with(" 200 OK"), "{scraped}");
    for c in ["FUT-BOOK-5", "SECOND"] {
        for (name, v) in [
            ("fastfeed_packets_a", 8_101),
            ("fastfeed_packets_b", 8_088),
            ("fastfeed_book_errors", 0),
        ] {
            assert!(
                scraped.contains(&format!("{} {v}\n", metric(c, name))),
                "{name} of {c}: {scraped}"
            );
        }
        for line in ["a", "b"] {
            let drops = format!("fastfeed_socket_kernel_drops{{feed=\"{feed}\",channel=\"{c}\",line=\"{line}\"}} 0\n");
            assert!(scraped.contains(&drops), "{drops}: {scraped}");
        }
    }
    assert!(
        scraped.contains(&format!("{} 0\n", metric("QUIET", "fastfeed_packets_a"))),
        "{scraped}"
    );
    for (t, name) in ["FUT-BOOK-5", "SECOND"].into_iter().enumerate() {
        let c = &r[name];
        assert_eq!(
            (num(c, "packets_a"), num(c, "packets_b")),
            (8_101, 8_088),
            "{c}"
        );
        assert_eq!((num(c, "rejected_a"), num(c, "rejected_b")), (0, 0), "{c}");
        assert_eq!(num(c, "book_errors"), 0, "{c}");
        assert_eq!(num(c, "thread"), t as u64, "{c}");
        check_wire_latency(c);
    }
    let quiet = &r["QUIET"];
    assert_eq!(
        (num(quiet, "packets_a"), num(quiet, "thread")),
        (0, 2),
        "{quiet}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The response to `GET path` from the HTTP server at `addr`, head and body ("" if it
/// cannot be had).
fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = match std::net::TcpStream::connect(addr) {
        Ok(s) => s,
        Err(e) => return format!("connecting: {e}"),
    };
    let mut text = Vec::new();
    let _ = write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    if let Err(e) = s.read_to_end(&mut text) {
        return format!("reading: {e}");
    }
    String::from_utf8_lossy(&text).into_owned()
}
