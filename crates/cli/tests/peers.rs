//! Who is on a feed: a publisher run with --no-echo gets no echoes, a second publisher on a
//! feed is refused, and the publisher's report does not cut its list of gaps silently.

mod common;

use common::{fastfeed, path_arg, read_json, scratch, strings, Proc};
use fastfeed_packet::len32le_packets;

fn feed(tag: &str) -> String {
    format!("peers{}{tag}", std::process::id())
}

#[test]
fn publish_no_echo_stops_the_subscribers_echoes() {
    let dir = scratch("peers-no-echo");
    let file = common::generate(&dir, 2000, 1024);
    let feed = feed("noecho");
    let sub_json = dir.join("sub.json");
    let mut sub_args = strings(&["subscribe", "--feed", &feed, "--idle-timeout", "20"]);
    sub_args.extend(["--report-json".into(), path_arg(&sub_json)]);
    let sub = Proc::spawn("subscriber", &sub_args);
    let mut pub_args = strings(&["publish", "simple", "--feed", &feed, "--no-echo"]);
    pub_args.extend(strings(&["--wait-subscribers", "1", "-f"]));
    pub_args.push(path_arg(&file));
    let publisher = Proc::spawn("publisher", &pub_args).wait();
    let sub = sub.wait();
    assert!(publisher.success && sub.success, "{}", sub.stdout);
    assert!(
        publisher.stdout.contains("echoes 0,"),
        "{}",
        publisher.stdout
    );
    let r = read_json(&sub_json);
    assert_eq!(common::num(&r, "echoed"), 0, "{r}");
    assert!(common::num(&r, "received") >= 2000, "{r}");
    assert_eq!(r["complete"], true);
    assert_eq!(r["publishers"].as_array().map(Vec::len), Some(1));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_second_publisher_on_a_feed_is_refused() {
    let feed = feed("second");
    let group = common::unique_group(1);
    let args = strings(&[
        "publish",
        "simple",
        "--feed",
        &feed,
        "-g",
        &group,
        "--idle-timeout",
        "20",
    ]);
    let mut first = Proc::spawn("first publisher", &args);
    first.wait_ready();
    let second = fastfeed().args(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("another publisher") && stderr.contains(&feed),
        "{stderr}"
    );
    assert!(first.try_end().is_none(), "the first publisher goes on");
}

#[test]
fn the_report_says_how_many_missing_ranges_it_left_out() {
    let dir = scratch("peers-ranges");
    let file = common::generate(&dir, 3000, 256);
    // Every other packet left out: one missing range per packet kept.
    let data = std::fs::read(&file).unwrap();
    let mut holed = Vec::new();
    let packets: Vec<_> = len32le_packets(&data).map(|p| p.unwrap().bytes).collect();
    let kept: Vec<_> = packets.iter().step_by(2).collect();
    for p in &kept {
        holed.extend((p.len() as u32).to_le_bytes());
        holed.extend_from_slice(p);
    }
    let holed_file = dir.join("holed.dat");
    std::fs::write(&holed_file, holed).unwrap();
    let out = fastfeed()
        .args([
            "publish",
            "simple",
            "--no-echo",
            "--feed",
            &feed("ranges"),
            "-f",
        ])
        .arg(&holed_file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ranges = packets.len() / 2 - usize::from(packets.len() % 2 == 0);
    let listed = stdout.matches("  missing packets ").count();
    assert_eq!(listed, 10, "{stdout}");
    assert!(
        stdout.contains(&format!("and {} more missing ranges", ranges - 10)),
        "{ranges} ranges: {stdout}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Two demos at once, without -g: each picks a group of its own, so neither sees the
/// other's packets.
#[test]
fn two_demos_at_once_do_not_mix() {
    let start = || {
        fastfeed()
            .args(["demo", "-n", "5000"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let (a, b) = (start(), start());
    for demo in [a, b] {
        let out = demo.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains(", rejected 0\n"), "{stdout}");
        assert!(stdout.contains("duplicates 0,"), "{stdout}");
        assert!(out.status.success(), "{stdout}");
    }
}
