//! A stuck subscriber, end to end: one subscriber stops reading after its first record
//! (`--stall-ms`) while another keeps up. The publisher must not wait for it, the other
//! subscriber must get everything, and the stuck one must account for every record it
//! lost: received + missed = published, per record type.

mod common;

use std::time::{Duration, Instant};

use common::{num, path_arg, strings, Proc};
use serde_json::Value;

/// More than a subscriber queue holds (4,096 per record type): about 7,500 per type.
const MESSAGES: usize = 30_000;
const MAX_PACKET: usize = 256;
/// Long beside the run itself (under a second, a few on a busy machine), so that every
/// other process has ended while the stuck one is still stuck.
const STALL: Duration = Duration::from_secs(8);

fn subscriber(feed: &str, json: &std::path::Path, extra: &[String]) -> Proc {
    let mut args = strings(&["subscribe", "--feed", feed, "--idle-timeout", "20"]);
    args.extend(["--report-json".into(), path_arg(json)]);
    args.extend(extra.iter().cloned());
    Proc::spawn("subscriber", &args)
}

#[test]
fn a_stuck_subscriber_stalls_no_one_and_counts_what_it_missed() {
    let dir = common::scratch("slow");
    let file = common::generate(&dir, MESSAGES, MAX_PACKET);
    let packets = common::packets(&file, fastfeed_sim::SIMPLE_TEMPLATES);
    let feed = format!("slow{}", std::process::id());
    let group = common::unique_group(2);
    let json = |name: &str| dir.join(format!("{name}.json"));
    let dump = dir.join("received.txt");
    let normal = subscriber(&feed, &json("normal"), &["--dump".into(), path_arg(&dump)]);
    let stuck = subscriber(
        &feed,
        &json("stuck"),
        &["--stall-ms".into(), STALL.as_millis().to_string()],
    );
    let mut pub_args = strings(&["publish", "simple", "--feed", &feed, "-g", group.as_str()]);
    pub_args.extend(strings(&["--wait-subscribers", "2"]));
    pub_args.extend(["--report-json".into(), path_arg(&json("publisher"))]);
    let mut publisher = Proc::spawn("publisher", &pub_args);
    publisher.wait_ready();
    let start = Instant::now();
    let cast_args = strings(&[
        "multicast",
        "-f",
        &path_arg(&file),
        "-g",
        group.as_str(),
        "-s",
        "100",
    ]);
    let caster = Proc::spawn("multicast", &cast_args);
    let ended = common::wait_all(
        &mut [caster, publisher, normal, stuck],
        Duration::from_secs(50),
    );
    for e in &ended {
        assert!(e.success, "{}", e.stdout);
    }
    let [cast_end, pub_end, normal_end, stuck_end] = [0, 1, 2, 3].map(|i| ended[i].at - start);
    let (publisher, normal, stuck) = (
        common::read_json(&json("publisher")),
        common::read_json(&json("normal")),
        common::read_json(&json("stuck")),
    );

    eprintln!(
        "multicast ended at {cast_end:?}, publisher {pub_end:?}, normal subscriber \
         {normal_end:?}, stuck subscriber {stuck_end:?}; stuck: received {}, missed {}",
        stuck["received"], stuck["missed"]
    );
    // Nobody waited for the stuck subscriber. The publisher took the packets in a fraction
    // of the stall, and ended soon after the multicaster: its linger (100 ms) and its wait
    // for echoes to stop (500 ms), the rest slack for a busy machine. The other subscriber
    // ended too, both while the stuck one was still stuck.
    let took =
        Duration::from_secs_f64(publisher["first_to_last_packet_ms"].as_f64().unwrap() / 1e3);
    // Waiting for the stuck subscriber would take the whole stall; on a busy 2-core machine
    // the multicaster alone can take over 2 s to send, so half the stall is the bound.
    assert!(
        took < STALL / 2,
        "the publisher took {took:?} over the packets"
    );
    assert!(
        pub_end < cast_end + Duration::from_secs(3),
        "the publisher ended {pub_end:?} after the start, the multicaster {cast_end:?}"
    );
    assert!(
        pub_end < STALL && normal_end < STALL,
        "{pub_end:?}, {normal_end:?}"
    );
    assert!(
        stuck_end > STALL,
        "the stuck subscriber ended after {stuck_end:?}"
    );

    let total = packets.iter().map(|p| p.records.len() as u64).sum::<u64>();
    assert_eq!(num(&publisher, "records"), total);
    assert_eq!(publisher["done"], true);
    assert_eq!(num(&normal, "received"), total, "{normal}");
    assert_eq!(num(&normal, "missed"), 0, "{normal}");
    assert_eq!(normal["complete"], true, "{normal}");
    assert!(
        common::read_dump(&dump) == common::dump_lines(packets.iter().flat_map(|p| &p.records)),
        "the normal subscriber's records differ from the file's"
    );

    assert_eq!(stuck["complete"], true, "{stuck}");
    assert!(num(&stuck, "missed") > 0, "{stuck}");
    assert_eq!(
        num(&stuck, "received") + num(&stuck, "missed"),
        total,
        "{stuck}"
    );
    for (t, published) in publisher["published"].as_object().unwrap() {
        let s: &Value = &stuck["per_type"][t];
        let published = published.as_u64().unwrap();
        assert_eq!(num(s, "published"), published, "{t}: {s}");
        assert_eq!(num(s, "received") + num(s, "missed"), published, "{t}: {s}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
