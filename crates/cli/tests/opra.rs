//! The OPRA-like data set from the command line: generate, decode, bench.

use std::path::PathBuf;
use std::process::{Command, Output};

fn fastfeed(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fastfeed"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn templates() -> String {
    format!("{}/../sim/templates/opra.xml", env!("CARGO_MANIFEST_DIR"))
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("fastfeed-opra-{}-{name}", std::process::id()))
}

#[test]
fn generate_opra_then_decode_and_bench_it() {
    let file = temp("5ch.dat");
    let f = file.to_str().unwrap();
    let out = fastfeed(&["generate", "opra", "-n", "3000", "--channels", "5", "-o", f]);
    ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("3005 messages"), "{err}");
    assert!(err.contains("on 5 channels"), "{err}");

    let tpl = templates();
    let framing = [
        "-t",
        &tpl,
        "--framing",
        "len32le",
        "--skip-header",
        "6",
        "--reset-each-packet",
    ];
    let text = ok(&fastfeed(&[&["decode"], &framing[..], &[f]].concat()));
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3005);
    let quotes = lines
        .iter()
        .filter(|m| m["templateName"] == "OptionQuote")
        .count();
    assert!(quotes > 2500, "{quotes} quotes of 3000");
    let done = lines.iter().filter(|m| m["templateId"] == 99).count();
    assert_eq!(done, 5, "a Done per channel");
    let q = lines
        .iter()
        .find(|m| m["templateName"] == "OptionQuote")
        .unwrap();
    assert!(q["BidPrice"].as_f64().unwrap() <= q["AskPrice"].as_f64().unwrap());

    // The whole file on two threads, split by packets or by channel, taken as the threads
    // finish or fixed before: every message counted.
    for extra in [
        &[][..],
        &["--by-channel"],
        &["--static"],
        &["--by-channel", "--static"],
    ] {
        let args = [
            &["bench", "decode"],
            &framing[..],
            &["--threads", "2", "--passes", "2", f],
            extra,
        ]
        .concat();
        let out = fastfeed(&args);
        let text = ok(&out);
        assert!(text.contains("messages 3005 "), "{text}");
        assert!(text.contains("threads 2"), "{text}");
        assert!(text.contains("OptionQuote"), "{text}");
        let fixed = extra.contains(&"--static");
        // With fixed shares each thread decodes one; taken as they finish, more.
        let jobs = text
            .lines()
            .find(|l| l.starts_with("jobs per pass"))
            .unwrap();
        assert_eq!(
            jobs.contains("fewest 1.0") && jobs.contains("most 1.0"),
            fixed,
            "{extra:?}: {text}"
        );
    }
    // Read with the 4-byte header of the other data sets, the channel number is taken
    // for FAST: decoding fails instead of making up messages.
    let wrong = [
        "decode",
        "-t",
        &tpl,
        "--framing",
        "len32le",
        "--skip-header",
        "4",
        "--reset-each-packet",
        "--count",
        f,
    ];
    assert!(!fastfeed(&wrong).status.success());
    std::fs::remove_file(&file).ok();
}

#[test]
fn by_channel_refuses_packets_without_a_channel_number() {
    let file = temp("short.dat");
    let mut data = Vec::new();
    // One packet of one Heartbeat (presence map, template 5, MsgSeqNum 1, Time delta 0)
    // and no header: it decodes, but is too short for a sequence number and a channel.
    data.extend_from_slice(&4u32.to_le_bytes());
    data.extend_from_slice(&[0xE0, 0x85, 0x81, 0x80]);
    std::fs::write(&file, &data).unwrap();
    let tpl = templates();
    let out = fastfeed(&[
        "bench",
        "decode",
        "-t",
        &tpl,
        "--framing",
        "len32le",
        "--by-channel",
        file.to_str().unwrap(),
    ]);
    std::fs::remove_file(&file).ok();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("too short for a channel number"), "{err}");
}
