//! `handle --record` on a disk that cannot keep up (a process of its own, so its groups are
//! its own): the recording's file is a pipe nobody reads until the feed has ended, so the
//! disk takes the pipe's 64 KiB and no more. What falls past the recording's buffer is
//! handled and counted, never waited for: the feed loses nothing. A disk that fails stops
//! the recording, never the handler.

mod common;

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::Child;

use common::*;

/// The pcap's records (after its 24-byte header), each a 16-byte header then its bytes.
fn pcap_records(pcap: &[u8]) -> u64 {
    let (mut at, mut n) = (24, 0);
    while at + 16 <= pcap.len() {
        let len = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + len;
        n += 1;
    }
    assert_eq!(at, pcap.len(), "a record cut short");
    n
}

/// `handle CFG --record REC --record-buffer 1 --report-json REPORT ARGS` started, and the
/// feed replayed to it; the handler ends 1.5 s after the feed.
fn handle_recorded(cfg: &Path, rec: &Path, report: &Path, args: &[&str]) -> Child {
    let (handle, _) = spawn_ready(
        fastfeed()
            .args(["handle", "--idle-exit-ms", "1500", "--record-buffer", "1"])
            .args(args)
            .arg("--record")
            .arg(rec)
            .arg("--report-json")
            .arg(report)
            .arg(cfg),
    );
    replay_at(cfg, 20_000);
    handle
}

/// A `--report-json` file.
fn read_report(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The handler's report of the channel says the whole feed was read and handled: every
/// packet of both lines, nothing dropped by the kernel, the books sound and all live.
fn handled_whole(live: &serde_json::Value) {
    let packets = (num(live, "packets_a"), num(live, "packets_b"));
    assert_eq!(packets, (8_101, 8_088), "{live}");
    for k in [
        "kernel_drops_a",
        "kernel_drops_b",
        "book_errors",
        "not_live",
    ] {
        assert_eq!(num(live, k), 0, "{k}: {live}");
    }
}

/// `handle REC/feed.toml --captures` (its report in `report`) reads what the live run
/// `live` read on every line, and its books are sound.
fn handled_back_alike(rec: &Path, report: &Path, live: &serde_json::Value) {
    let offline = fastfeed()
        .args(["handle", "-q", "--captures", "--report-json"])
        .arg(report)
        .arg(rec.join("feed.toml"))
        .output()
        .unwrap();
    stdout_of_success(&offline, "handle --captures");
    let doc = read_report(report);
    let r = &doc["FUT-BOOK-5"];
    for k in ["packets_a", "packets_b", "snapshot_packets"] {
        assert_eq!(num(r, k), num(live, k), "{k}: {r}");
    }
    assert_eq!((num(r, "book_errors"), num(r, "not_live")), (0, 0), "{r}");
}

/// The nice value and allowed CPUs of process `pid`'s thread named "spool".
fn spool_thread(pid: u32) -> (i64, String) {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    for task in tasks.map(|t| t.unwrap().path()) {
        let comm = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
        if comm.trim() == "spool" {
            let stat = std::fs::read_to_string(task.join("stat")).unwrap();
            // After the name: state, then fields 4 on; nice is field 19.
            let after = stat.rsplit_once(") ").unwrap().1;
            let nice = after.split(' ').nth(19 - 3).unwrap().parse().unwrap();
            return (
                nice,
                allowed_cpus(&task.join("status").display().to_string()),
            );
        }
    }
    panic!("no spool thread in process {pid}");
}

/// `Cpus_allowed_list` of a `/proc/.../status` file.
fn allowed_cpus(status: &str) -> String {
    let text = std::fs::read_to_string(status).unwrap();
    let line = text.lines().find(|l| l.starts_with("Cpus_allowed_list:"));
    line.unwrap().split_whitespace().nth(1).unwrap().to_string()
}

#[test]
fn a_recording_behind_its_disk_costs_the_recording_not_the_feed() {
    if !fastfeed_net::loopback_multicast_works() {
        eprintln!("skipped: {}", fastfeed_net::LOOPBACK_HINT);
        return;
    }
    let dir = scratch("record-behind");
    let cfg = moex_live_config(&dir, 1);
    let rec = dir.join("rec");
    std::fs::create_dir(&rec).unwrap();
    let fifo = rec.join("FUT-BOOK-5.pcap");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", fifo.display());
    // The reading end is open (so the handler's open does not wait) but read only later.
    let mut disk = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let report = dir.join("h.json");
    // The channel's thread pinned: the writer is let back onto every core.
    let handle = handle_recorded(&cfg, &rec, &report, &["--threads", "1"]);
    // Its writer, blocked on the pipe now, runs in the background of the pinned channel.
    let (nice, cpus) = spool_thread(handle.id());
    assert_eq!(nice, 19);
    assert_eq!(cpus, allowed_cpus(&format!("/proc/{}/status", handle.id())));
    // The feed is over: the disk catches up, and the handler finishes its recording.
    let drain = std::thread::spawn(move || {
        let mut pcap = Vec::new();
        loop {
            match disk.read_to_end(&mut pcap) {
                Ok(_) => break pcap,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(std::time::Duration::from_millis(5))
                }
                Err(e) => panic!("{e}"),
            }
        }
    });
    let out = handle.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let pcap = drain.join().unwrap();
    let doc = read_report(&report);
    let live = &doc["FUT-BOOK-5"];
    let read: u64 = ["packets_a", "packets_b", "snapshot_packets"]
        .map(|k| num(live, k))
        .iter()
        .sum();
    let (recorded, refused) = (
        num(live, "recorded_datagrams"),
        num(live, "recorded_refused"),
    );
    // The whole feed was read and handled; the recording kept what its buffer held.
    handled_whole(live);
    assert!(refused > 0, "the disk never fell behind: {live}");
    assert_eq!(recorded + refused, read, "{live}");
    assert!(live.get("record_error").is_none(), "{live}");
    assert_eq!(pcap_records(&pcap), recorded);
    assert!(
        stderr.contains(&format!("{refused} datagrams handled but not recorded")),
        "{stderr}"
    );
    // Said while it ran too: the status line of a second after the feed ended has it all.
    let status = format!("FUT-BOOK-5: recorded {recorded} datagrams, {refused} handled but not");
    assert!(stderr.contains(&status), "{status}: {stderr}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_full_disk_stops_the_recording_not_the_handler() {
    if !fastfeed_net::loopback_multicast_works() || !Path::new("/dev/full").exists() {
        eprintln!("skipped: no loopback multicast or no /dev/full");
        return;
    }
    let dir = scratch("record-full");
    let cfg = moex_live_config(&dir, 4);
    let rec = dir.join("rec");
    std::fs::create_dir(&rec).unwrap();
    // The recording's file is the device that is always full.
    std::os::unix::fs::symlink("/dev/full", rec.join("FUT-BOOK-5.pcap")).unwrap();
    let report = dir.join("h.json");
    let handle = handle_recorded(&cfg, &rec, &report, &["-q"]);
    let out = handle.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc = read_report(&report);
    let live = &doc["FUT-BOOK-5"];
    handled_whole(live);
    let error = live["record_error"].as_str().unwrap_or_default();
    assert!(error.contains("No space left on device"), "{live}");
    assert!(stderr.contains("stopped after"), "{stderr}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_split_recording_is_taken_back_whole() {
    if !fastfeed_net::loopback_multicast_works() {
        eprintln!("skipped: {}", fastfeed_net::LOOPBACK_HINT);
        return;
    }
    let dir = scratch("record-split");
    let cfg = moex_live_config(&dir, 7);
    let rec = dir.join("rec");
    let report = dir.join("h.json");
    // About 2.3 MB recorded, a new part every MiB.
    let handle = handle_recorded(&cfg, &rec, &report, &["-q", "--record-split", "1"]);
    let out = handle.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = read_report(&report);
    let live = &doc["FUT-BOOK-5"];
    handled_whole(live);
    let parts = ["FUT-BOOK-5.pcap", "FUT-BOOK-5.2.pcap", "FUT-BOOK-5.3.pcap"].map(|p| rec.join(p));
    for p in &parts {
        let pcap = std::fs::read(p).unwrap();
        assert!(pcap.len() <= (1 << 20) + (1 << 16) + 24, "{}", p.display());
    }
    assert!(!rec.join("FUT-BOOK-5.4.pcap").exists());
    let recorded: u64 = parts
        .iter()
        .map(|p| pcap_records(&std::fs::read(p).unwrap()))
        .sum();
    assert_eq!(recorded, num(live, "recorded_datagrams"));
    // feed.toml names the parts in order, and the handler takes them back as one capture.
    handled_back_alike(&rec, &dir.join("again.json"), live);
    std::fs::remove_dir_all(&dir).ok();
}

/// Each record's receive time, in whole seconds since the epoch.
fn pcap_seconds(pcap: &[u8]) -> Vec<u32> {
    let (mut at, mut secs) = (24, Vec::new());
    while at + 16 <= pcap.len() {
        secs.push(u32::from_le_bytes(pcap[at..at + 4].try_into().unwrap()));
        let len = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + len;
    }
    secs
}

#[test]
fn a_recording_every_second_goes_on_in_a_file_a_second() {
    if !fastfeed_net::loopback_multicast_works() {
        eprintln!("skipped: {}", fastfeed_net::LOOPBACK_HINT);
        return;
    }
    let dir = scratch("record-every");
    let cfg = moex_live_config(&dir, 10);
    let rec = dir.join("rec");
    let report = dir.join("h.json");
    let (handle, _) = spawn_ready(
        fastfeed()
            .args([
                "handle",
                "-q",
                "--idle-exit-ms",
                "1500",
                "--record-every",
                "1s",
            ])
            .arg("--record")
            .arg(&rec)
            .arg("--report-json")
            .arg(&report)
            .arg(&cfg),
    );
    // About three seconds of the feed.
    replay_at(&cfg, 6_000);
    let out = handle.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = read_report(&report);
    let live = &doc["FUT-BOOK-5"];
    handled_whole(live);
    let mut parts = vec![rec.join("FUT-BOOK-5.pcap")];
    for n in 2.. {
        let p = rec.join(format!("FUT-BOOK-5.{n}.pcap"));
        if !p.exists() {
            break;
        }
        parts.push(p);
    }
    assert!(parts.len() >= 3, "{} parts", parts.len());
    // Each part holds one second of receive time, and the seconds follow one another.
    let mut seconds = Vec::new();
    let mut recorded = 0;
    for p in &parts {
        let secs = pcap_seconds(&std::fs::read(p).unwrap());
        assert!(!secs.is_empty(), "{} is empty", p.display());
        assert!(
            secs.iter().all(|&s| s == secs[0]),
            "{}: {secs:?}",
            p.display()
        );
        seconds.push(secs[0]);
        recorded += secs.len() as u64;
    }
    assert!(seconds.windows(2).all(|w| w[0] < w[1]), "{seconds:?}");
    assert_eq!(recorded, num(live, "recorded_datagrams"));
    assert_eq!(num(live, "recorded_refused"), 0);
    // feed.toml lists every part; the recording is handled back as it was live.
    handled_back_alike(&rec, &dir.join("again.json"), live);
    std::fs::remove_dir_all(&dir).ok();
}
