//! The codec's command-line tools as a user runs them.

use std::process::Command;

mod common;

fn corpus(p: &str) -> String {
    format!("{}/../../../shared/corpus/{p}", env!("CARGO_MANIFEST_DIR"))
}

fn fastfeed(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fastfeed"))
        .args(args)
        .output()
        .unwrap()
}

/// Runs fastfeed, which must succeed (its stderr is the failure's message); returns stdout.
fn fastfeed_ok(args: &[&str]) -> String {
    let out = fastfeed(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn decode_then_encode_gives_back_the_file() {
    let dir = std::env::temp_dir().join(format!("fastfeed-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tpl = corpus("mfast-complex/example.xml");
    let dat = corpus("mfast-complex/complex30000.dat");
    let out = fastfeed(&["decode", "-t", &tpl, "--framing", "len32le", &dat]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let jsonl = dir.join("m.jsonl");
    std::fs::write(&jsonl, &out.stdout).unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 30_001);
    let first: serde_json::Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    assert_eq!(first["templateName"], "MarketData");
    assert_eq!(first["MDEntries"][0]["MDEntryPx"].to_string(), "26");
    // mFAST's encoder sends the template id in every record; so does ours when the
    // dictionaries (the id among them) are reset per record.
    let back = dir.join("m.dat");
    fastfeed_ok(&[
        "encode",
        "-t",
        &tpl,
        "--framing",
        "len32le",
        "--reset-each-packet",
        "-o",
        back.to_str().unwrap(),
        jsonl.to_str().unwrap(),
    ]);
    assert!(
        std::fs::read(&back).unwrap() == std::fs::read(&dat).unwrap(),
        "re-encoded file differs"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_bad_packet_is_reported_and_decoding_goes_on() {
    let dir = std::env::temp_dir().join(format!("fastfeed-cli-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tpl = corpus("mfast-complex/example.xml");
    let mut data = std::fs::read(corpus("mfast-complex/complex30000.dat")).unwrap();
    // Second record: an unknown template id (0x7f 0x7f 0xff) in place of its first bytes.
    let len0 = u32::from_le_bytes(data[..4].try_into().unwrap()) as usize;
    let second = 4 + len0 + 4;
    data[second..second + 4].copy_from_slice(&[0xc0, 0x7f, 0x7f, 0xff]);
    let bad = dir.join("bad.dat");
    std::fs::write(&bad, &data).unwrap();
    let out = fastfeed(&[
        "decode",
        "-t",
        &tpl,
        "--framing",
        "len32le",
        bad.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("packet 1 ")
            && err.contains("[ERR D9]")
            && err.contains(&format!("file byte {}", second + 1)),
        "{err}"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        30_000,
        "every other message decoded"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn templates_check_reports_line_and_column() {
    let dir = std::env::temp_dir().join(format!("fastfeed-cli-tpl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("t.xml");
    std::fs::write(&f, "<templates>\n  <template name=\"A\" id=\"1\">\n    <uInt32 name=\"X\"><constant/></uInt32>\n  </template>\n</templates>\n").unwrap();
    let out = fastfeed(&["templates", "check", f.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains(":3:") && err.contains("[ERR S4]"), "{err}");
    let out = fastfeed(&[
        "templates",
        "check",
        &corpus("moex-forts-2013/templates.xml"),
    ]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("12 templates"));
    std::fs::remove_dir_all(&dir).ok();
}

/// Template files in the encoding their tools wrote: windows-1251 with a Russian comment (as
/// its XML declaration says), UTF-16 with a byte-order mark.
#[test]
fn templates_in_other_encodings_are_read() {
    let dir = std::env::temp_dir().join(format!("fastfeed-cli-enc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let utf8 = std::fs::read_to_string(corpus("moex-forts-2013/templates.xml")).unwrap();
    let cp1251 = [
        &b"<?xml version=\"1.0\" encoding=\"windows-1251\"?>\n<!-- \xf2\xe5\xf1\xf2 -->\n"[..],
        utf8.as_bytes(),
    ]
    .concat();
    let utf16: Vec<u8> = [0xff, 0xfe]
        .into_iter()
        .chain(utf8.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    for (name, bytes) in [("cp1251.xml", cp1251), ("utf16.xml", utf16)] {
        let f = dir.join(name);
        std::fs::write(&f, bytes).unwrap();
        let out = fastfeed(&["templates", "check", f.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {text}");
        assert!(text.contains("12 templates"), "{name}: {text}");
    }
    // Not UTF-8 and no encoding named: a clear error, not a parse of garbage.
    let f = dir.join("undeclared.xml");
    std::fs::write(&f, b"<templates><!-- \xf2\xe5 --></templates>").unwrap();
    let out = fastfeed(&["templates", "check", f.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("not UTF-8"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn decode_to_parquet_and_arrow_files() {
    let dir = std::env::temp_dir().join(format!("fastfeed-cli-tables-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tpl = corpus("mfast-complex/example.xml");
    let dat = corpus("mfast-complex/complex30000.dat");
    // The rows of MarketData's entries as text, converted with these options.
    let rows_of = |options: &[&str], name: &str| {
        let file = dir.join(format!("{name}.parquet"));
        let mut args = vec!["decode", "-t", &tpl, "--framing", "len32le", &dat];
        args.extend(options);
        args.extend(["--format", "parquet", "--template", "MarketData"]);
        args.extend(["--entries", "MDEntries", "-o", file.to_str().unwrap()]);
        let out = fastfeed(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(
            err.contains("89700 rows from 29700 MarketData messages"),
            "{err}"
        );
        common::parquet_rows(&file)
    };
    let rows = rows_of(&[], "md");
    assert_eq!(rows.len(), 89_700);
    // Packets that reset the dictionaries decode in blocks on workers: the same rows as on
    // one thread (complex30000 was encoded with a reset before each message).
    let reset = |threads| rows_of(&["--reset-each-packet", "--threads", threads], threads);
    assert_eq!(reset("1"), rows);
    assert_eq!(reset("3"), rows);

    // A directory of a file per template.
    let all = dir.join("all");
    let out = fastfeed(&[
        "decode",
        "-t",
        &tpl,
        "--framing",
        "len32le",
        &dat,
        "--format",
        "arrow",
        "-o",
        all.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for name in ["MarketData.arrow", "QuoteRequest.arrow", "Done.arrow"] {
        assert!(all.join(name).exists(), "{name}: {err}");
    }
    // The same directory in Parquet, on one thread and in blocks on three workers: the same
    // rows in every template's file.
    let tables = |threads: &str| {
        let out_dir = dir.join(format!("all-{threads}"));
        let mut args = vec!["decode", "-t", &tpl, "--framing", "len32le", &dat];
        args.extend([
            "--reset-each-packet",
            "--threads",
            threads,
            "--format",
            "parquet",
        ]);
        args.extend(["--entries", "MDEntries", "-o", out_dir.to_str().unwrap()]);
        let out = fastfeed(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(!err.contains("note:"), "{err}");
        ["MarketData", "QuoteRequest", "Done"]
            .map(|t| common::parquet_rows(&out_dir.join(format!("{t}.parquet"))))
    };
    let one = tables("1");
    assert_eq!(one[0], rows);
    assert_eq!(tables("3"), one);

    // Tables need -o; --template needs a table format.
    let out = fastfeed(&["decode", "-t", &tpl, &dat, "--format", "parquet"]);
    assert_eq!(out.status.code(), Some(2));
    let out = fastfeed(&["decode", "-t", &tpl, &dat, "--template", "MarketData"]);
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn session_control_messages_without_template_120() {
    // A venue's feed whose template file leaves out SCP's Reset: encode one packet per
    // message with a Reset in front (--scp-reset), decode it, and decode it again without
    // SCP (--no-scp), which cannot.
    let dir = std::env::temp_dir().join(format!("fastfeed-cli-scp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tpl = dir.join("t.xml");
    std::fs::write(
        &tpl,
        r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
             <template name="Data" id="2"><uInt32 name="X"><copy/></uInt32></template>
           </templates>"#,
    )
    .unwrap();
    let jsonl = dir.join("in.jsonl");
    std::fs::write(
        &jsonl,
        "{\"templateId\":2,\"X\":5}\n{\"templateId\":2,\"X\":5}\n",
    )
    .unwrap();
    let dat = dir.join("out.dat");
    let (tpl, jsonl, dat) = (
        tpl.to_str().unwrap(),
        jsonl.to_str().unwrap(),
        dat.to_str().unwrap(),
    );
    fastfeed_ok(&[
        "encode",
        "-t",
        tpl,
        "--framing",
        "len32le",
        "--scp-reset",
        "-o",
        dat,
        jsonl,
    ]);
    // Each packet: Reset (C0 F8), then X=5 sent again, since the Reset emptied the entry.
    let packet = [0xC0, 0xF8, 0xE0, 0x82, 0x85];
    let mut want = Vec::new();
    for _ in 0..2 {
        want.extend(5u32.to_le_bytes());
        want.extend(packet);
    }
    assert_eq!(std::fs::read(dat).unwrap(), want);
    let lines: Vec<serde_json::Value> =
        fastfeed_ok(&["decode", "-t", tpl, "--framing", "len32le", dat])
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(
        lines[0],
        serde_json::json!({"templateId": 120, "templateName": "Reset", "scp": "1.1"})
    );
    assert_eq!(lines[3]["X"], 5);
    let out = fastfeed(&["decode", "-t", tpl, "--framing", "len32le", "--no-scp", dat]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("[ERR D9] unknown template id 120"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn codegen_writes_the_generated_module() {
    let dir = std::env::temp_dir().join(format!("fastfeed-codegen-{}", std::process::id()));
    let root = env!("CARGO_MANIFEST_DIR");
    let tpl = format!("{root}/../generated/templates/mfast/example.xml");
    fastfeed_ok(&["codegen", &tpl, "-o", dir.to_str().unwrap()]);
    let code = std::fs::read_to_string(dir.join("example.rs")).unwrap();
    let golden =
        std::fs::read_to_string(format!("{root}/../codegen/tests/golden/mfast_example.rs"))
            .unwrap();
    assert!(
        code == golden,
        "fastfeed codegen differs from the golden file"
    );
    // Templates that begin alike: the golden file's common prefix, or none when asked.
    let simple = format!("{root}/../sim/templates/simple.xml");
    let d = dir.to_str().unwrap();
    fastfeed_ok(&["codegen", &simple, "-o", d]);
    let code = std::fs::read_to_string(dir.join("simple.rs")).unwrap();
    let golden =
        std::fs::read_to_string(format!("{root}/../codegen/tests/golden/sim_simple.rs")).unwrap();
    assert!(
        code == golden,
        "fastfeed codegen differs from the golden file"
    );
    fastfeed_ok(&[
        "codegen",
        &simple,
        "-o",
        d,
        "--name",
        "plain",
        "--no-common-prefix",
    ]);
    let plain = std::fs::read_to_string(dir.join("plain.rs")).unwrap();
    assert!(code.contains("fn rx_quote(") && !plain.contains("fn rx_"));
    let out = fastfeed(&["codegen", "/nonexistent.xml", "-o", dir.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent.xml"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bench_times_the_generated_decoder() {
    let root = env!("CARGO_MANIFEST_DIR");
    let tpl = format!("{root}/../generated/templates/mfast/example.xml");
    let dat = corpus("mfast-complex/complex30000.dat");
    let args = [
        "bench",
        "decode",
        "--generated",
        "-t",
        &tpl,
        "--framing",
        "len32le",
    ];
    let text = fastfeed_ok(&[&args[..], &[&dat, "--passes", "1"]].concat());
    assert!(text.contains("messages 30001"), "{text}");
    // The figures say whether integers were gathered with pext; FASTFEED_PEXT=0 says no
    // (a build for BMI2 uses pext whatever the environment says).
    let portable = Command::new(env!("CARGO_BIN_EXE_fastfeed"))
        .args([&args[..], &[&dat, "--passes", "1"]].concat())
        .env("FASTFEED_PEXT", "0")
        .output()
        .unwrap();
    let portable = String::from_utf8_lossy(&portable.stdout);
    assert!(portable.contains("messages 30001"), "{portable}");
    let want = if cfg!(target_feature = "bmi2") {
        "  pext yes"
    } else {
        "  pext no"
    };
    assert!(portable.contains(want), "{portable}");
    assert!(
        text.contains("  pext yes") || text.contains("  pext no"),
        "{text}"
    );
    // A template file no decoder was generated from (one comment more) is refused, naming
    // the ones there are.
    let other = std::env::temp_dir().join(format!("fastfeed-other-{}.xml", std::process::id()));
    let xml = std::fs::read_to_string(&tpl).unwrap() + "<!-- changed -->";
    std::fs::write(&other, xml).unwrap();
    let other_s = other.to_str().unwrap();
    let args = [
        "bench",
        "decode",
        "--generated",
        "-t",
        other_s,
        "--framing",
        "len32le",
    ];
    let out = fastfeed(&[&args[..], &[&dat]].concat());
    std::fs::remove_file(&other).ok();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("mfast_complex"));
}

#[test]
fn demo_refuses_data_it_cannot_run_and_says_why() {
    // cme is a pcap for the feed handler: the demo refuses at once instead of failing
    // halfway.
    let out = fastfeed(&["demo", "cme", "-n", "100"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("fastfeed handle configs/cme.toml"), "{err}");
}

#[test]
fn demo_refuses_zenoh_options_on_shared_memory() {
    let out = fastfeed(&["demo", "--express", "-n", "100"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("are for --bus zenoh"), "{err}");
}

#[test]
fn publish_refuses_threads_it_cannot_give_their_own_bus() {
    // One stream has no channels to split.
    let out = fastfeed(&["publish", "simple", "--threads", "2", "-f", "none.dat"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("give --channels too"), "{err}");
}

#[test]
fn bench_encode_windows_a_raw_stream_by_messages() {
    // A raw file is one packet: its encode windows count messages, so encoding is timed on
    // messages fresh in cache as for packet files, not after decoding the whole stream.
    let tpl = corpus("moex-forts-2013/templates.xml");
    let dat = corpus("moex-forts-2013/increment_a.dat");
    let out = fastfeed(&[
        "bench", "encode", "-t", &tpl, &dat, "--window", "64", "--passes", "1",
    ]);
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{err}");
    assert!(text.contains("messages 16202"), "{text}");
    assert!(!err.contains("covers all"), "{err}");
    // A window as long as the stream is one window, and says so.
    let out = fastfeed(&[
        "bench", "encode", "-t", &tpl, &dat, "--window", "20000", "--passes", "1",
    ]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("covers all 16202"));
}

#[test]
fn bench_passes_over_a_chained_raw_stream_each_start_fresh() {
    // The FPL sample's three messages chain through their dictionaries (deltas); a second
    // pass decoded on from the first one's state overflowed SendingTime ([ERR R4]).
    let tpl = corpus("openfast-fpl/FASTTestTemplate.xml");
    let dat = corpus("openfast-fpl/messages.fast");
    for generated in [false, true] {
        let mut args = vec!["bench", "decode", "-t", &tpl, &dat, "--passes", "5"];
        if generated {
            args.push("--generated");
        }
        let out = fastfeed(&args);
        assert!(
            out.status.success(),
            "generated {generated}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("messages 3"));
    }
    // Encoding keeps its encoder and decoder from pass to pass, and decodes the stream
    // again in every pass (windows of one message): every pass runs to the end.
    let text = fastfeed_ok(&[
        "bench", "encode", "-t", &tpl, &dat, "--window", "1", "--passes", "5",
    ]);
    assert!(text.contains("messages 3"));
}

#[test]
fn bench_encode_on_threads() {
    // Each thread keeps its own encoder, decoder and buffer across passes, pinned or not.
    let tpl = corpus("mfast-complex/example.xml");
    let dat = corpus("mfast-complex/complex30000.dat");
    for pin in [true, false] {
        let mut args = vec![
            "bench",
            "encode",
            "-t",
            &tpl,
            "--framing",
            "len32le",
            &dat,
            "--threads",
            "2",
            "--window",
            "64",
            "--passes",
            "2",
        ];
        if !pin {
            args.push("--no-pin");
        }
        let text = fastfeed_ok(&args);
        assert!(
            text.contains("messages 30001") && text.contains("threads 2"),
            "{text}"
        );
    }
}

/// A reader that stops reading (`fastfeed ... | head -1`) ends the output quietly: no panic
/// from a write to the closed pipe, and a zero exit code.
#[test]
fn a_closed_standard_output_ends_quietly() {
    use std::process::Stdio;
    let tpl = corpus("mfast-complex/example.xml");
    let dat = corpus("mfast-complex/complex30000.dat");
    let runs: [&[&str]; 4] = [
        &[
            "bench",
            "decode",
            "-t",
            &tpl,
            "--framing",
            "len32le",
            &dat,
            "--passes",
            "1",
        ],
        &["templates", "show", "simple"],
        &["fix", "report", "-t", &tpl, "--framing", "len32le", &dat],
        &["decode", "-t", &tpl, "--framing", "len32le", &dat],
    ];
    for args in runs {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fastfeed"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // the reader goes before the first line is written
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
    }
}
