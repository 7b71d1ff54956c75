//! Clean shutdown: Ctrl-C to the demo stops its children, prints their partial reports and
//! removes its temporary folder; a child that fails ends the demo at once.

mod common;

use std::time::{Duration, Instant};

use common::fastfeed;

/// Processes whose command line holds `needle` (the demo's feed name is on its children's).
fn processes_with(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmd).contains(needle) {
                found.push(pid);
            }
        }
    }
    found
}

#[test]
fn ctrl_c_stops_the_demo_its_children_and_cleans_up() {
    let demo = fastfeed()
        // 2,982 packets 2 ms apart at least: about 6 s, so the signal at 1.5 s falls in the
        // middle of the run however fast the machine (at -s 300 a fast VM ends it in 1.2 s).
        .args(["demo", "-n", "200000", "-s", "2000", "-g"])
        .arg(common::unique_group(2))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = demo.id();
    let feed = format!("demo{pid}");
    let dir = std::env::temp_dir().join(format!("fastfeed-demo-{pid}"));
    // Running: subscriber and publisher started (and, soon after, the multicaster).
    let deadline = Instant::now() + Duration::from_secs(30);
    while processes_with(&feed).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the demo's children did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    // Only the demo's own process is signalled, as `kill PID` does.
    let kill = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = demo.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{stdout}");
    assert!(stdout.contains("messages decoded"), "{stdout}");
    assert!(stdout.contains("subscriber: received"), "{stdout}");
    assert!(stdout.contains("interrupted"), "{stdout}");
    assert!(processes_with(&feed).is_empty(), "children left running");
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[test]
fn a_failing_child_ends_the_demo_at_once() {
    let t = Instant::now();
    // Port 0: the multicaster cannot send there.
    let out = fastfeed()
        .args(["demo", "-n", "1000", "-g", "239.255.9.9:0"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("multicaster failed"), "{stderr}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

#[test]
fn ctrl_c_gives_subscribe_and_publish_a_partial_report() {
    let feed = format!("shutdown{}", std::process::id());
    let group = common::unique_group(3);
    for args in [
        vec!["subscribe", "--feed", &feed],
        vec!["publish", "simple", "--feed", &feed, "-g", &group],
    ] {
        let child = fastfeed()
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(130), "{args:?}: {stdout}");
        assert!(stdout.contains("interrupted: a partial report"), "{stdout}");
        assert!(
            stdout.contains("subscriber: received") || stdout.contains("packets: received"),
            "{stdout}"
        );
    }
}
