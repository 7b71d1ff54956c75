//! Injected faults, end to end: `multicast` drops, duplicates, reorders and tears packets
//! with a seed; the same `FaultInjector` replayed here on the same packets says which
//! packets met which fate, and the publisher's and subscriber's reports must account for
//! every one of them exactly.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{num, path_arg, strings, Packet, Proc};
use fastfeed_net::{Corruption, Fate, FaultConfig, FaultInjector};
use serde_json::Value;

const MESSAGES: usize = 20_000;
/// Small packets: more of them (about 1,240), so more faults of each kind.
const MAX_PACKET: usize = 256;
const RATE: f64 = 0.02;
/// Chosen for the edges of the stream (checked below): the first packet is overtaken, and
/// the Done packet overtakes the packet before it.
const SEED: u64 = 3485;

/// What the multicaster does with `--drop/--duplicate/--reorder/--corrupt RATE --seed SEED`
/// and the default corruption, a tear past the 4-byte sequence header.
fn injected(packets: &[Packet]) -> Vec<Fate> {
    let config = FaultConfig {
        drop: RATE,
        duplicate: RATE,
        reorder: RATE,
        corrupt: RATE,
        corruption: Corruption::Tear { keep: 4 },
    };
    let mut injector = FaultInjector::new(config, SEED).unwrap();
    injector.apply(packets.iter().map(|p| p.bytes.as_slice()));
    injector.fates().to_vec()
}

/// Runs subscriber, publisher and multicaster; returns the two JSON reports and the dump.
fn run_pipeline(dir: &std::path::Path, file: &std::path::Path) -> (Value, Value, Vec<String>) {
    let feed = format!("faults{}", std::process::id());
    let group = common::unique_group(1);
    let (subscriber, out) = common::spawn_subscriber(dir, &feed);
    let (pub_json, sub_json, dump) = (out.pub_json, out.sub_json, out.dump);
    let mut pub_args = strings(&["publish", "simple", "--feed", &feed, "-g", group.as_str()]);
    pub_args.extend(strings(&[
        "--wait-subscribers",
        "1",
        "--idle-timeout",
        "20",
        // Joined for the multicaster's address only (source-specific).
        "--source",
        "127.0.0.1",
    ]));
    pub_args.extend(["--report-json".into(), path_arg(&pub_json)]);
    let mut publisher = Proc::spawn("publisher", &pub_args);
    publisher.wait_ready();
    let rate = RATE.to_string();
    let mut cast_args = strings(&["multicast", "-f", &path_arg(file), "-g", group.as_str()]);
    cast_args.extend(strings(&["-s", "100", "-q", "--seed", &SEED.to_string()]));
    for fault in ["--drop", "--duplicate", "--reorder", "--corrupt"] {
        cast_args.extend([fault.to_string(), rate.clone()]);
    }
    let caster = Proc::spawn("multicast", &cast_args);
    let ended = common::wait_all(
        &mut [caster, publisher, subscriber],
        Duration::from_secs(50),
    );
    for (e, name) in ended.iter().zip(["multicast", "publisher", "subscriber"]) {
        assert!(e.success, "{name} failed:\n{}", e.stdout);
    }
    (
        common::read_json(&pub_json),
        common::read_json(&sub_json),
        common::read_dump(&dump),
    )
}

/// Consecutive sequence numbers as inclusive [first, last] ranges.
fn ranges(seqs: impl IntoIterator<Item = u64>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for s in seqs {
        match out.last_mut() {
            Some((_, last)) if *last + 1 == s => *last = s,
            _ => out.push((s, s)),
        }
    }
    out
}

fn count(fates: &[Fate], f: impl Fn(&Fate) -> bool) -> u64 {
    fates.iter().filter(|x| f(x)).count() as u64
}

#[test]
fn injected_faults_are_counted_exactly() {
    let dir = common::scratch("faults");
    let file = common::generate(&dir, MESSAGES, MAX_PACKET);
    let packets = common::packets(&file, fastfeed_sim::SIMPLE_TEMPLATES);
    let fates = injected(&packets);
    let n = packets.len() as u64;
    let (first, last) = (fates[0], fates[n as usize - 1]);
    assert!(
        !last.dropped && !last.corrupted,
        "the seed must deliver the Done packet, or the run ends by idle timeout"
    );
    // The first packet arriving late is late only if the publisher knows where the
    // sequence starts; the packet overtaken by Done counts only if the publisher lingers.
    assert!(
        first.reordered && fates[n as usize - 2].reordered,
        "the seed covers the edges"
    );
    let dropped = count(&fates, |f| f.dropped);
    let duplicated = count(&fates, |f| f.duplicated);
    let reordered = count(&fates, |f| f.reordered);
    let corrupted = count(&fates, |f| f.corrupted);
    assert!(dropped > 10 && duplicated > 10 && reordered > 10 && corrupted > 10);
    eprintln!(
        "{n} packets, seed {SEED}, rates {RATE}: dropped {dropped}, duplicated {duplicated}, \
         reordered {reordered}, torn {corrupted}"
    );

    let (publisher, subscriber, dump) = run_pipeline(&dir, &file);

    // Every loss is the injector's: none in the kernel's socket buffer, which the report
    // would show apart from the network's gaps.
    let socket = &publisher["socket"];
    assert!(num(socket, "recv_buffer_granted") > 0, "{socket}");
    assert_eq!(num(socket, "kernel_drops"), 0, "{socket}");
    let p = &publisher["packets"];
    assert_eq!(num(p, "received"), n - dropped + duplicated, "{p}");
    assert_eq!(num(p, "accepted"), n - dropped, "{p}");
    assert_eq!(num(p, "duplicates"), duplicated, "{p}");
    assert_eq!(num(p, "late"), reordered, "{p}");
    assert_eq!(num(p, "stale"), 0, "{p}");
    assert_eq!(num(p, "short"), 0, "{p}");
    assert_eq!(num(p, "decoded"), n - dropped - corrupted, "{p}");
    assert_eq!(num(p, "rejected"), corrupted, "{p}");
    assert_eq!(num(p, "gap_packets"), dropped + reordered, "{p}");
    assert_eq!(num(p, "missing"), dropped, "{p}");
    // Every packet read was timed from the kernel's timestamp, torn or not.
    let in_socket = &publisher["stages_us"]["in_socket"];
    assert_eq!(num(in_socket, "count"), num(p, "received"), "{in_socket}");
    assert!(in_socket["p50"].as_f64().unwrap() > 0.0, "{in_socket}");

    let fated = || packets.iter().zip(&fates);
    let lost = ranges(fated().filter(|(_, f)| f.dropped).map(|(p, _)| p.seq));
    let reported: Vec<(u64, u64)> = publisher["missing_ranges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r[0].as_u64().unwrap(), r[1].as_u64().unwrap()))
        .collect();
    assert_eq!(reported, lost, "the gaps are exactly the dropped packets");

    // Each torn packet is rejected as truncated at its very end.
    let torn: BTreeMap<u64, usize> = fated()
        .filter(|(_, f)| f.corrupted)
        .map(|(p, _)| (p.seq, p.bytes.len()))
        .collect();
    let rejected: BTreeMap<u64, usize> = publisher["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["kind"], "Truncated", "{r}");
            let (seq, byte) = (num(r, "packet"), num(r, "byte") as usize);
            let message = r["message"].as_str().unwrap();
            assert!(
                message.starts_with(&format!("packet {seq} byte {byte}: ")),
                "{r}"
            );
            (seq, byte)
        })
        .collect();
    assert_eq!(rejected, torn);
    assert_eq!(num(&publisher, "rejected_not_listed"), 0);

    // Published: the records of the packets that arrived whole, each once.
    let whole: Vec<&Packet> = fated()
        .filter(|(_, f)| !f.dropped && !f.corrupted)
        .map(|(p, _)| p)
        .collect();
    let records = || whole.iter().flat_map(|p| &p.records);
    let mut per_type = BTreeMap::<&str, u64>::new();
    for r in records() {
        *per_type.entry(r.type_name()).or_default() += 1;
    }
    let total = records().count() as u64;
    assert_eq!(
        num(&publisher, "messages"),
        whole.iter().map(|p| p.messages).sum::<u64>()
    );
    assert_eq!(num(&publisher, "records"), total);
    assert_eq!(publisher["done"], true);
    for (t, published) in publisher["published"].as_object().unwrap() {
        let want = per_type.get(t.as_str()).copied().unwrap_or(0);
        assert_eq!(published.as_u64(), Some(want), "published {t}");
        let s = &subscriber["per_type"][t];
        assert_eq!(num(s, "received"), want, "received {t}: {s}");
        assert_eq!(num(s, "published"), want, "announced {t}: {s}");
        assert_eq!(num(s, "missed"), 0, "missed {t}: {s}");
    }

    assert_eq!(num(&subscriber, "received"), total, "{subscriber}");
    assert_eq!(num(&subscriber, "missed"), 0, "{subscriber}");
    assert_eq!(num(&subscriber, "filtered_out"), 0, "{subscriber}");
    assert_eq!(subscriber["complete"], true, "{subscriber}");
    assert_eq!(dump.len() as u64, total);
    assert!(
        dump == common::dump_lines(records()),
        "the subscriber's records are not those of the whole packets"
    );
    std::fs::remove_dir_all(&dir).ok();
}
