//! The offline tools (decode, encode, bench, generate, templates) as a new user meets them:
//! figures that can be believed, nothing dropped silently, errors that say what to do.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use common::{fastfeed, scratch};

fn corpus(p: &str) -> String {
    format!("{}/../../../shared/corpus/{p}", env!("CARGO_MANIFEST_DIR"))
}

fn run(args: &[&str]) -> Output {
    fastfeed().args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// How `decode` reads the files of `generate`.
const GENERATED: [&str; 5] = [
    "--framing",
    "len32le",
    "--skip-header",
    "4",
    "--reset-each-packet",
];

const SIMPLE_XML: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../sim/templates/simple.xml");

#[test]
fn decode_resynchronises_a_damaged_raw_capture() {
    let dir = scratch("resync");
    let mut data = std::fs::read(corpus("moex-forts-2013/increment_a.dat")).unwrap();
    data[1000..1010].fill(0);
    let file = dir.join("damaged.dat");
    std::fs::write(&file, &data).unwrap();
    let tpl = corpus("moex-forts-2013/templates.xml");
    let out = run(&["decode", "-t", &tpl, p(&file)]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // One packet (a Reset and an update) lost of 8,101, not the rest of the file.
    assert!(stdout(&out).lines().count() >= 16_202 - 4, "{err}");
    assert!(err.contains("resumed at byte"), "{err}");
    assert!(
        err.contains("skipped") && err.contains("resuming 1 times at a Reset message"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn wrong_templates_give_a_capped_list_a_count_and_a_hint() {
    let out = run(&[
        "decode",
        "-t",
        &corpus("moex-forts-2013/templates.xml"),
        "--framing",
        "len32le",
        &corpus("mfast-complex/complex30000.dat"),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(err.lines().filter(|l| l.starts_with("error:")).count(), 10);
    assert!(err.contains("... and 29991 more errors"), "{err}");
    assert!(err.contains("decoded 0 messages in 30001 packets, 30001 errors"));
    assert!(
        err.contains("no message decoded")
            && err.contains("template ids the file does not define: 1, 2, 99"),
        "{err}"
    );
    assert!(err.lines().count() < 25, "{err}");
}

#[test]
fn wrong_framing_and_missing_header_skip_are_named() {
    let tpl = corpus("mfast-complex/example.xml");
    let out = run(&[
        "decode",
        "-t",
        &tpl,
        &corpus("mfast-complex/complex30000.dat"),
    ]);
    assert!(
        stderr(&out).contains("try --framing len32le"),
        "{}",
        stderr(&out)
    );

    let dir = scratch("hint");
    let file = common::generate(&dir, 200, 256);
    let out = run(&["decode", "-t", SIMPLE_XML, "--framing", "len32le", p(&file)]);
    assert!(
        stderr(&out).contains("try --skip-header 4 --reset-each-packet"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Exchange packets with a header in front of the messages, read without `--skip-header`:
/// MOEX's sequence number (4 bytes, little-endian), CME's (4 bytes big-endian, then a
/// sub-channel byte), and a venue's 10 bytes (a sequence number and a 6-byte sending time),
/// found by decoding the first packets behind each header length. The hint names the header
/// and the option, and with it the packets decode to what the corpus holds.
#[test]
fn a_sequence_header_in_front_of_the_messages_is_named() {
    let tpl = corpus("moex-forts-2013/templates.xml");
    let raw = std::fs::read(corpus("moex-forts-2013/increment_a.dat")).unwrap();
    let ts = fastfeed_codec::parse_templates(&std::fs::read_to_string(&tpl).unwrap()).unwrap();
    let mut dec = fastfeed_codec::Decoder::new(ts);
    let packets = fastfeed_packet::split_at_resets(&mut dec, &raw).unwrap();
    let dir = scratch("seq-header");
    let seq_hint = "sequence number (482727, 482728, ...)";
    let found_hint = "the first packets decode with --skip-header 10 --reset-each-packet (32 of 32";
    for (name, skip, hint) in [
        ("le", "4", seq_hint),
        ("be", "5", seq_hint),
        ("sent", "10", found_hint),
    ] {
        let file = dir.join(format!("{name}.dat"));
        let mut out = Vec::new();
        for (i, pk) in packets.iter().take(500).enumerate() {
            let seq = 482_727 + i as u32;
            let sent = 1_700_000_000_000u64 + 7 * i as u64;
            let mut rec = match name {
                "be" => [seq.to_be_bytes().as_slice(), &[7]].concat(),
                "le" => seq.to_le_bytes().to_vec(),
                _ => [seq.to_le_bytes().as_slice(), &sent.to_le_bytes()[..6]].concat(),
            };
            rec.extend_from_slice(pk.bytes);
            out.extend((rec.len() as u32).to_le_bytes());
            out.extend(rec);
        }
        std::fs::write(&file, out).unwrap();
        let base = ["decode", "-t", &tpl, "--framing", "len32le", "--count"];
        let got = run(&[&base[..], &[p(&file)]].concat());
        let err = stderr(&got);
        assert!(
            err.contains(hint)
                && err.contains(&format!("--skip-header {skip} --reset-each-packet")),
            "{err}"
        );
        // A table conversion names the header too (it reads the input's start again).
        let table = dir.join(format!("{name}.arrow"));
        let conv = [
            &tpl,
            "--framing",
            "len32le",
            "--format",
            "arrow",
            "-q",
            "-o",
            p(&table),
        ];
        let got = run(&[&["decode", "-t"][..], &conv, &[p(&file)]].concat());
        assert!(stderr(&got).contains(&format!("--skip-header {skip} --reset-each-packet")));
        let opts = ["--skip-header", skip, "--reset-each-packet", p(&file)];
        let got = run(&[&base[..], &opts].concat());
        assert!(got.status.success(), "{}", stderr(&got));
        assert!(stderr(&got).contains("decoded 1000 messages in 500 packets, 0 errors"));
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn decode_reads_stdin_writes_a_file_filters_and_counts() {
    let dir = scratch("decode-io");
    let file = common::generate(&dir, 1000, 512);
    let jsonl = dir.join("quotes.jsonl");
    let mut child = fastfeed()
        .args(["decode", "-t", SIMPLE_XML])
        .args(GENERATED)
        .args(["--only", "Quote,99", "-o", p(&jsonl), "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&std::fs::read(&file).unwrap())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "-o takes the messages");
    let text = std::fs::read_to_string(&jsonl).unwrap();
    let ids: Vec<u64> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["templateId"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(ids.iter().filter(|&&i| i == 1).count(), 250);
    assert_eq!(ids.iter().filter(|&&i| i == 99).count(), 1);
    assert_eq!(ids.len(), 251);
    // The statistics count every template, written or not.
    let err = stderr(&out);
    let row = |name: &str| {
        err.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no {name} row in {err}"))
            .split_whitespace()
            .nth(2)
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        (row("Quote"), row("New"), row("Done")),
        ("250".into(), "250".into(), "1".into())
    );
    assert!(err.contains("decoded 1001 messages"), "{err}");

    let out = fastfeed()
        .args(["decode", "-t", SIMPLE_XML])
        .args(GENERATED)
        .args(["--count", p(&file)])
        .output()
        .unwrap();
    assert!(out.status.success() && out.stdout.is_empty());
    assert!(stderr(&out).contains("decoded 1001 messages"));

    let out = run(&["decode", "-t", SIMPLE_XML, "--only", "Trade", p(&file)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--only Trade: no template named \"Trade\" in"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn encode_refuses_unknown_fields_unless_allowed() {
    let dir = scratch("encode-unknown");
    let file = common::generate(&dir, 2, 256);
    let out = fastfeed()
        .args(["decode", "-t", SIMPLE_XML])
        .args(GENERATED)
        .arg(&file)
        .output()
        .unwrap();
    let lines = stdout(&out);
    let lines: Vec<&str> = lines.lines().collect();
    assert_eq!(lines.len(), 3, "{}", stderr(&out));
    // A misspelt Price: without the check, the message would be encoded without it.
    let typo = dir.join("typo.jsonl");
    let with_typo = lines[1].replacen("\"Price\"", "\"MDEntryPrice\"", 1);
    assert_ne!(with_typo, lines[1]);
    std::fs::write(&typo, format!("{}\n{with_typo}\n", lines[0])).unwrap();
    let out = run(&[
        "encode",
        "-t",
        SIMPLE_XML,
        "-o",
        p(&dir.join("t.fast")),
        p(&typo),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{} line 2", typo.display()))
            && err.contains("unknown field \"MDEntryPrice\"")
            && err.contains("--allow-unknown-fields"),
        "{err}"
    );
    // Allowed, an extra key is passed over.
    let extra = dir.join("extra.jsonl");
    let with_extra = lines[1].replacen(",", ",\"Comment\":\"x\",", 1);
    std::fs::write(&extra, format!("{}\n{with_extra}\n", lines[0])).unwrap();
    let out = run(&["encode", "-t", SIMPLE_XML, p(&extra)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown field \"Comment\""));
    let out = run(&[
        "encode",
        "-t",
        SIMPLE_XML,
        "--allow-unknown-fields",
        "-o",
        p(&dir.join("t.fast")),
        p(&extra),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("encoded 2 messages"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn file_errors_name_the_file_and_say_the_os_error_once() {
    let dir = scratch("file-errors");
    let bad = dir.join("latin1.jsonl");
    std::fs::write(&bad, b"{\"templateId\":1,\"Side\":\"\xe9\"}\n").unwrap();
    let out = run(&["encode", "-t", SIMPLE_XML, p(&bad)]);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{} line 1: not valid UTF-8", bad.display())),
        "{err}"
    );
    let missing = dir.join("missing.xml");
    for args in [
        vec!["decode", "-t", p(&missing), "x.dat"],
        vec!["templates", "check", p(&missing)],
        vec!["bench", "decode", "-t", p(&missing), "x.dat"],
        vec!["multicast", "-f", p(&missing)],
        vec!["handle", p(&missing)],
    ] {
        let out = run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(p(&missing)), "{args:?}: {err}");
        assert_eq!(err.matches("os error").count(), 1, "{args:?}: {err}");
    }
    // A feed configuration whose capture is missing: the handler's error, once.
    let config = dir.join("feed.toml");
    std::fs::write(
        &config,
        format!(
            "feed = \"moex\"\nprofile = \"moex-forts\"\ntemplates = {:?}\n\
             [[channel]]\nname = \"X\"\npacket = {{ kind = \"none\" }}\n\
             a = {{ group = \"239.195.1.40:16040\", capture = \"nothing.dat\", format = \"raw\" }}\n",
            corpus("moex-forts-2013/templates.xml")
        ),
    )
    .expect("config");
    let out = run(&["handle", p(&config), "--bench"]);
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("channel X: reading"), "{err}");
    assert!(err.contains("nothing.dat"), "{err}");
    assert_eq!(err.matches("os error").count(), 1, "{err}");
    // A socket error (no interface has this documentation address), through the net
    // crate's error and the command's context.
    let file = common::generate(&dir, 10, 256);
    let group = common::unique_group(0);
    let out = run(&["multicast", "-f", p(&file), "-i", "192.0.2.1", "-g", &group]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.matches("os error").count(), 1, "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `--udp` on a file that is not a capture is said to be ignored, not silently dropped.
#[test]
fn udp_on_a_file_that_is_not_a_capture_is_warned_about() {
    let out = run(&[
        "decode",
        "-t",
        &corpus("moex-forts-2013/templates.xml"),
        "--udp",
        "239.1.1.1:1",
        "--count",
        &corpus("moex-forts-2013/increment_a.dat"),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning: --udp 239.1.1.1:1 selects datagrams"),
        "{err}"
    );
    assert!(err.contains("decoded 16202 messages"), "{err}");
}

#[test]
fn templates_check_reports_every_error_of_every_file() {
    let dir = scratch("tpl-all");
    let bad = dir.join("bad.xml");
    std::fs::write(
        &bad,
        r#"<templates>
  <template name="A" id="1"><uInt32 name="X"><constant/></uInt32></template>
  <template name="B" id="x"/>
  <template name="C" id="3"><string name="S" charset="klingon"/></template>
  <template name="D" id="4"><uInt32 name="Z"/></template>
</templates>"#,
    )
    .unwrap();
    let no_id = dir.join("no-id.xml");
    std::fs::write(
        &no_id,
        r#"<templates><template name="B"><uInt32 name="Y"/></template></templates>"#,
    )
    .unwrap();
    let out = run(&["templates", "check", p(&bad), p(&no_id), SIMPLE_XML]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1));
    for at in [":2:", ":3:", ":4:"] {
        assert!(
            err.contains(&format!("{}{at}", bad.display())),
            "{at}: {err}"
        );
    }
    // B's id is a token the schema allows but no message can name: a note, not an error.
    assert!(err.contains("has id \"x\", not a number"), "{err}");
    // A static error discards its own template only (spec §4): D is still listed.
    assert!(
        err.contains("2 errors, which discard 2 templates (spec §4)"),
        "{err}"
    );
    assert!(
        stdout(&out).contains("bad.xml: 1 templates"),
        "{}",
        stdout(&out)
    );
    assert!(
        err.contains("template \"B\" has no id") && err.contains("no template to decode with"),
        "{err}"
    );
    assert!(
        stdout(&out).contains("5 templates"),
        "the good file is still listed"
    );
    // Decoding goes on with what is left, each error said first.
    let data = dir.join("d.dat");
    std::fs::write(&data, [0xc0, 0x84, 0x85]).unwrap();
    let out = run(&["decode", "-t", p(&bad), p(&data)]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("{}:2:", bad.display())), "{err}");
    assert!(
        err.contains("so 2 templates: A (1), C (3); going on with the other 1"),
        "{err}"
    );
    assert_eq!(
        stdout(&out).trim(),
        r#"{"templateId":4,"templateName":"D","Z":5}"#
    );
    // The same reason where the file is used.
    let out = run(&["decode", "-t", p(&no_id), SIMPLE_XML]);
    assert!(stderr(&out).contains("has no id"), "{}", stderr(&out));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn templates_show_prints_the_simulator_templates() {
    for (set, file) in [("simple", "simple.xml"), ("complex", "complex.xml")] {
        let out = run(&["templates", "show", set]);
        assert!(out.status.success());
        let path = format!("{}/../sim/templates/{file}", env!("CARGO_MANIFEST_DIR"));
        assert_eq!(stdout(&out), std::fs::read_to_string(path).unwrap());
    }
}

#[test]
fn generate_refuses_what_it_cannot_make() {
    let dir = scratch("gen-limits");
    let out_file = dir.join("g.dat");
    let out = run(&["generate", "-p", "100000", "-o", p(&out_file)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("at most 65507 bytes"),
        "{}",
        stderr(&out)
    );
    let out = run(&["generate", "complex", "--seq", "1000", "-o", p(&out_file)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("at most 24 entries"),
        "{}",
        stderr(&out)
    );
    assert!(!out_file.exists(), "nothing written for a refused run");
    let out = run(&[
        "generate",
        "complex",
        "-n",
        "100",
        "--seq",
        "10",
        "-o",
        p(&out_file),
    ]);
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("warning: --seq 10 gives 9.2 entries"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `min` ns/msg of a `bench` run.
fn min_ns(out: &Output) -> f64 {
    let text = stdout(out);
    text.lines()
        .find(|l| l.starts_with("min"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or_else(|| panic!("no min line: {text}{}", stderr(out)))
}

#[test]
fn bench_reports_wall_time_and_refuses_meaningless_options() {
    let tpl = corpus("mfast-complex/example.xml");
    let dat = corpus("mfast-complex/complex30000.dat");
    let bench = |extra: &[&str]| {
        let mut args = vec!["bench", "decode", "-t", &tpl, "--framing", "len32le", &dat];
        args.extend_from_slice(extra);
        run(&args)
    };
    for (extra, says) in [
        (&["--passes", "0"][..], "must be at least 1"),
        (&["--threads", "0"][..], "must be at least 1"),
        (
            &["--window", "4"][..],
            "--window applies to `bench encode` only",
        ),
    ] {
        let out = bench(extra);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(stderr(&out).contains(says), "{extra:?}: {}", stderr(&out));
    }
    // Far more threads than cores: the threads take turns, and the pass lasts until the
    // last one ends. The old per-thread timing reported ~threads-fold speed-ups here.
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let one = bench(&["--passes", "3"]);
    assert!(one.status.success(), "{}", stderr(&one));
    let threads = (8 * cores).to_string();
    let many = bench(&["--passes", "3", "--threads", &threads]);
    assert!(
        stderr(&many).contains(&format!("warning: {threads} threads on {cores} cores")),
        "{}",
        stderr(&many)
    );
    let speedup = min_ns(&one) / min_ns(&many);
    assert!(
        speedup < 2.0 * cores as f64,
        "{threads} threads on {cores} cores: {speedup:.1}x faster than one"
    );
    // Per-template statistics follow the figures.
    let text = stdout(&one);
    assert!(
        text.contains("MarketData") && text.contains("29700"),
        "{text}"
    );
}

/// Shanghai's Level-2 templates give two pairs of templates the same name: each decodes by its
/// id, and each gets a table of its own, named `name-id`.
#[test]
fn templates_that_share_a_name_decode_into_tables_of_their_own() {
    let dir = scratch("tpl-shared");
    let xml = dir.join("t.xml");
    std::fs::write(
        &xml,
        r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
  <template name="Trade" id="1"><uInt32 name="Price"/></template>
  <template name="Trade" id="2"><uInt32 name="Qty"/></template>
</templates>"#,
    )
    .unwrap();
    let out = run(&["templates", "check", p(&xml)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("note: template name \"Trade\" is also"));
    // Packets of one message each, a 4-byte length before each: Trade 1 then Trade 2.
    let data = dir.join("d.dat");
    let mut bytes = Vec::new();
    for msg in [[0xc0, 0x81, 0x85], [0xc0, 0x82, 0x86]] {
        bytes.extend_from_slice(&3u32.to_le_bytes());
        bytes.extend_from_slice(&msg);
    }
    std::fs::write(&data, bytes).unwrap();
    let out = run(&["decode", "-t", p(&xml), "--framing", "len32le", p(&data)]);
    assert_eq!(
        stdout(&out),
        "{\"templateId\":1,\"templateName\":\"Trade\",\"Price\":5}\n\
         {\"templateId\":2,\"templateName\":\"Trade\",\"Qty\":6}\n"
    );
    let out = run(&["decode", "-t", p(&xml), "--only", "Trade", p(&data)]);
    assert!(
        stderr(&out).contains("templates [1, 2] are all named \"Trade\": name one by its id"),
        "{}",
        stderr(&out)
    );
    // One thread, then blocks on every core (dictionaries reset at each packet).
    for (name, extra) in [("one", &[][..]), ("blocks", &["--reset-each-packet"][..])] {
        let tables = dir.join(name);
        let out = fastfeed()
            .args(["decode", "-t", p(&xml), "--framing", "len32le", "-q"])
            .args(extra)
            .args(["--format", "arrow", "-o", p(&tables), p(&data)])
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let mut files: Vec<String> = std::fs::read_dir(&tables)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(files, ["Trade-1.arrow", "Trade-2.arrow"], "{name}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
