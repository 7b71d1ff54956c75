//! A many-channel feed end to end: `multicast --by-channel` sends each channel of the
//! OPRA-like set to its own group, dropping some packets; `publish opra --threads 2` takes
//! the channels on two pinned threads; the subscriber gets every record of the packets that
//! arrived, once, from one publisher group. Every loss is accounted for on its channel.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{num, path_arg, strings, Packet, Proc};
use fastfeed_net::{Corruption, FaultConfig, FaultInjector};
use fastfeed_records::Record;

const CHANNELS: u16 = 6;
const DROP: f64 = 0.03;

fn packets(file: &std::path::Path) -> Vec<Packet> {
    common::packets_with_header(file, fastfeed_sim::opra_templates(), 6)
}

/// Which packets `multicast --drop DROP --seed SEED --by-channel` drops.
fn dropped(packets: &[Packet], seed: u64) -> Vec<bool> {
    let config = FaultConfig {
        drop: DROP,
        corruption: Corruption::Tear { keep: 6 },
        ..FaultConfig::default()
    };
    let mut injector = FaultInjector::new(config, seed).unwrap();
    injector.apply(packets.iter().map(|p| p.bytes.as_slice()));
    injector.fates().iter().map(|f| f.dropped).collect()
}

#[test]
fn two_threads_take_the_channels_and_account_for_every_loss() {
    let dir = common::scratch("channels");
    let file = dir.join("opra.dat");
    let out = common::fastfeed()
        .args(["generate", "opra", "-n", "20000", "--channels"])
        .arg(CHANNELS.to_string())
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    let packets = packets(&file);
    // A seed that delivers every channel's last packet (its Done): otherwise the run ends
    // by idle timeout.
    let last: Vec<usize> = (0..CHANNELS)
        .map(|c| packets.iter().rposition(|p| p.channel == c).unwrap())
        .collect();
    let (seed, lost) = (1..100)
        .map(|s| (s, dropped(&packets, s)))
        .find(|(_, d)| last.iter().all(|&i| !d[i]) && d.iter().filter(|&&x| x).count() > 3)
        .unwrap();

    let feed = format!("channels{}", std::process::id());
    let group = common::unique_group(3);
    let (subscriber, out) = common::spawn_subscriber(&dir, &feed);
    let (pub_json, sub_json, dump) = (out.pub_json, out.sub_json, out.dump);
    let mut pub_args = strings(&["publish", "opra", "--feed", &feed, "-g", &group]);
    pub_args.extend(strings(&[
        "--channels",
        &CHANNELS.to_string(),
        "--threads",
        "2",
        // Each channel's group joined for the multicaster's address only (source-specific).
        "--source",
        "127.0.0.1",
    ]));
    pub_args.extend(strings(&[
        "--wait-subscribers",
        "1",
        "--idle-timeout",
        "20",
    ]));
    pub_args.extend(["--report-json".into(), path_arg(&pub_json)]);
    let mut publisher = Proc::spawn("publisher", &pub_args);
    publisher.wait_ready();
    let mut cast_args = strings(&["multicast", "-f", &path_arg(&file), "-g", &group]);
    // Paced for a debug-build subscriber: its queue must not overflow (that loss is
    // counted too, but this test is about the network's).
    cast_args.extend(strings(&["--by-channel", "-s", "2000", "-q"]));
    cast_args.extend(strings(&[
        "--drop",
        &DROP.to_string(),
        "--seed",
        &seed.to_string(),
    ]));
    let caster = Proc::spawn("multicast", &cast_args);
    let ended = common::wait_all(
        &mut [caster, publisher, subscriber],
        Duration::from_secs(50),
    );
    for (e, name) in ended.iter().zip(["multicast", "publisher", "subscriber"]) {
        assert!(e.success, "{name} failed:\n{}", e.stdout);
    }
    let publisher = common::read_json(&pub_json);
    let subscriber = common::read_json(&sub_json);

    let threads = publisher["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2);
    assert_eq!(threads[0]["channels"], serde_json::json!([0, 2, 4]));
    assert_eq!(threads[1]["channels"], serde_json::json!([1, 3, 5]));
    assert_eq!(publisher["done"], true, "{publisher}");
    assert_eq!(num(&publisher, "kernel_drops"), 0);
    let arrived = || {
        packets
            .iter()
            .zip(&lost)
            .filter(|(_, &d)| !d)
            .map(|(p, _)| p)
    };
    assert_eq!(
        num(&publisher, "messages"),
        arrived().map(|p| p.messages).sum::<u64>()
    );
    // Per channel, the missing ranges are exactly the dropped packets of that channel.
    let mut want: BTreeMap<u16, Vec<u64>> = BTreeMap::new();
    for (p, _) in packets.iter().zip(&lost).filter(|(_, &d)| d) {
        want.entry(p.channel).or_default().push(p.seq);
    }
    let mut got: BTreeMap<u16, Vec<u64>> = BTreeMap::new();
    for t in threads {
        assert_eq!(num(&t["packets"], "foreign"), 0, "{t}");
        // Each thread timed every packet it read from the kernel's timestamp.
        let in_socket = &t["stages_us"]["in_socket"];
        assert_eq!(
            num(in_socket, "count"),
            num(&t["packets"], "received"),
            "{t}"
        );
        assert_eq!(num(&t["packets"], "rejected"), 0, "{t}");
        for r in t["missing_ranges"].as_array().unwrap() {
            let (c, a, b) = (
                r[0].as_u64().unwrap(),
                r[1].as_u64().unwrap(),
                r[2].as_u64().unwrap(),
            );
            got.entry(c as u16).or_default().extend(a..=b);
        }
    }
    assert_eq!(got, want);

    let records: Vec<&Record> = arrived().flat_map(|p| &p.records).collect();
    assert_eq!(num(&publisher, "records"), records.len() as u64);
    assert_eq!(subscriber["complete"], true, "{subscriber}");
    assert_eq!(subscriber["mixed"], false);
    assert_eq!(subscriber["publishers"].as_array().unwrap().len(), 2);
    assert_eq!(num(&subscriber, "received"), records.len() as u64);
    assert_eq!(num(&subscriber, "missed"), 0);
    assert_eq!(common::read_dump(&dump), common::dump_lines(records));
    std::fs::remove_dir_all(&dir).ok();
}
