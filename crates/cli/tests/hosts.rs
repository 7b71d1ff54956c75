//! `scripts/hosts.sh`: four network-namespace hosts (simulator, publisher, two subscribers),
//! multicast to the publisher host, Zenoh over veth links to the subscriber hosts. Both
//! subscriber hosts must receive every record the file decodes to in process.
//!
//! Needs root and `ip netns` (CI runs as root). Where they are missing the test fails and
//! says so, unless FASTFEED_SKIP_NETNS=1.

mod common;

use std::path::Path;
use std::process::Command;

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

#[test]
fn two_subscriber_hosts_receive_every_record() {
    if let Err(why) = netns_usable() {
        if std::env::var("FASTFEED_SKIP_NETNS").as_deref() == Ok("1") {
            eprintln!("skipped: network namespaces unavailable ({why})");
            return;
        }
        panic!("this test needs root and `ip netns` ({why}); set FASTFEED_SKIP_NETNS=1 to skip it");
    }
    let dir = common::scratch("hosts");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/hosts.sh");
    let out = Command::new("bash")
        .arg(&script)
        .args(["-n", "10000", "--keep"])
        .arg(&dir)
        .env("FASTFEED_BIN", env!("CARGO_BIN_EXE_fastfeed"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "hosts.sh failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("round trip /record"), "{stdout}");
    assert!(stdout.contains("one-way latency"), "{stdout}");
    assert!(stdout.contains("shared memory"), "{stdout}");

    let packets = common::packets(&dir.join("simple10000.dat"), fastfeed_sim::SIMPLE_TEMPLATES);
    let want = common::dump_lines(packets.iter().flat_map(|p| &p.records));
    assert!(want.len() >= 10_000);
    for host in ["a", "b"] {
        let got = common::read_dump(&dir.join(format!("sub_{host}.records")));
        assert_eq!(
            got.len(),
            want.len(),
            "subscriber host {host}: record count"
        );
        assert!(
            got == want,
            "subscriber host {host}: records differ from the file's"
        );
        let s = common::read_json(&dir.join(format!("sub_{host}.json")));
        assert_eq!(common::num(&s, "missed"), 0, "{s}");
        assert_eq!(s["complete"], true, "{s}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
