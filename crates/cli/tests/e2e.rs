//! End to end, as a user runs it: `fastfeed demo` starts real processes (subscriber,
//! publisher, multicaster), sends real multicast over loopback and real shared memory; the
//! subscriber's records must be exactly those the generated file decodes to.

mod common;

use std::process::Command;

/// One demo at a time: two at once on a 2-core machine would measure the machine, not us.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run_demo(data: &str, tag: u16, decode: impl Fn(&std::path::Path) -> Vec<common::Packet>) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("fastfeed-e2e-{data}-{}", std::process::id()));
    let dump = dir.join("received.txt");
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fastfeed"))
        .args([
            "demo",
            data,
            "-n",
            "30000",
            "-s",
            "200",
            "-g",
            &common::unique_group(tag),
        ])
        .arg("--dir")
        .arg(&dir)
        .arg("--dump")
        .arg(&dump)
        .arg("--plot")
        .arg(dir.join("latency.png"))
        .arg("--histogram")
        .arg(dir.join("latency.hgrm"))
        .output()
        .unwrap();
    let stdout = common::stdout_of_success(&out, "demo");
    assert!(stdout.contains("Done seen"), "{stdout}");
    assert!(stdout.contains("gaps 0 (0 packets"), "{stdout}");
    assert!(stdout.contains("missed 0,"), "{stdout}");
    // The records a correct pipeline delivers: the file decoded here, in process.
    let packets = decode(&dir.join(format!("{data}30000.dat")));
    let want = common::dump_lines(packets.iter().flat_map(|p| &p.records));
    let got = common::read_dump(&dump);
    // A record per message or more (the OPRA-like set's open interest, status and
    // heartbeats, about 5%, make none).
    assert!(want.len() >= 28_000, "{} records expected", want.len());
    assert_eq!(got.len(), want.len(), "record count");
    assert!(
        got == want,
        "the subscriber's records differ from the file's"
    );
    let png = std::fs::read(dir.join("latency.png")).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 5_000,
        "a drawn PNG"
    );
    let hgrm = std::fs::read_to_string(dir.join("latency.hgrm")).unwrap();
    assert!(
        hgrm.contains("# round trip /record") && hgrm.contains("Total count = "),
        "{hgrm}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn demo_simple_delivers_every_record() {
    run_demo("simple", 3, |f| {
        common::packets(f, fastfeed_sim::SIMPLE_TEMPLATES)
    });
}

#[test]
fn demo_complex_delivers_every_record() {
    run_demo("complex", 4, |f| {
        common::packets(f, fastfeed_sim::COMPLEX_TEMPLATES)
    });
}

/// 24 channels, each on its own group, taken by the publisher's threads; the plot and the
/// histogram merge the threads' distributions.
#[test]
fn demo_opra_delivers_every_record() {
    run_demo("opra", 5, |f| {
        common::packets_with_header(f, fastfeed_sim::opra_templates(), 6)
    });
}

#[test]
fn demo_sends_packets_no_larger_than_asked() {
    // `-p 100`: about 6 messages a packet (67 at the default 1024), for latency without a
    // long queue of records per packet.
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("fastfeed-e2e-p100-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fastfeed"))
        .args(["demo", "simple", "-n", "2000", "-p", "100", "-s", "200"])
        .args(["-g", &common::unique_group(7)])
        .arg("--dir")
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "demo failed:\n{stdout}");
    assert!(stdout.contains("missed 0,"), "{stdout}");
    let packets = common::packets(&dir.join("simple2000.dat"), fastfeed_sim::SIMPLE_TEMPLATES);
    let records: usize = packets.iter().map(|p| p.records.len()).sum();
    assert!(records >= 2000, "{records} records");
    assert!(
        packets.len() >= 2000 / 8,
        "{} packets for 2,000 messages",
        packets.len()
    );
    let file = std::fs::read(dir.join("simple2000.dat")).unwrap();
    let mut rest = &file[..];
    while let [a, b, c, d, tail @ ..] = rest {
        let len = u32::from_le_bytes([*a, *b, *c, *d]) as usize;
        assert!(len <= 100, "a packet of {len} bytes");
        rest = &tail[len..];
    }
    std::fs::remove_dir_all(&dir).ok();
}
