//! End to end, as a user runs it: `fastfeed demo` starts real processes (subscriber,
//! publisher, multicaster), sends real multicast over loopback and real shared memory; the
//! subscriber's records must be exactly those the generated file decodes to.

use std::path::Path;
use std::process::Command;

use fastfeed_codec::Decoder;
use fastfeed_packet::len32le_packets;
use fastfeed_records::{Converter, Record};

/// The records a correct pipeline delivers: the file decoded here, in process.
fn expected(file: &Path, templates_xml: &str) -> Vec<String> {
    let ts = fastfeed_codec::parse_templates(templates_xml).unwrap();
    let mut dec = Decoder::new(ts.clone());
    let mut conv = Converter::new(&ts);
    let mut out = Vec::new();
    let mut records = Vec::new();
    let data = std::fs::read(file).unwrap();
    for p in len32le_packets(&data) {
        let p = p.unwrap().bytes;
        dec.reset();
        let mut pos = 4;
        while pos < p.len() {
            pos += conv.decode(&mut dec, &p[pos..], &mut records).unwrap();
            out.extend(
                records
                    .iter()
                    .filter(|r| !matches!(r, Record::Done))
                    .map(|r| format!("{r:?}")),
            );
        }
    }
    out
}

/// One demo at a time: two at once on a 2-core machine would measure the machine, not us.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run_demo(data: &str, port: u16, templates_xml: &str) {
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
            &format!("239.255.42.{}:{port}", port % 200 + 1),
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
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Done seen"), "{stdout}");
    assert!(stdout.contains("gaps 0 (0 packets"), "{stdout}");
    assert!(stdout.contains("missed 0,"), "{stdout}");
    let mut want = expected(&dir.join(format!("{data}30000.dat")), templates_xml);
    let mut got: Vec<String> = std::fs::read_to_string(&dump)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert!(want.len() >= 30_000, "{} records expected", want.len());
    assert_eq!(got.len(), want.len(), "record count");
    // The subscriber drains one record type after another, so compare as multisets.
    want.sort();
    got.sort();
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
    run_demo("simple", 23_401, fastfeed_sim::SIMPLE_TEMPLATES);
}

#[test]
fn demo_complex_delivers_every_record() {
    run_demo("complex", 23_402, fastfeed_sim::COMPLEX_TEMPLATES);
}
