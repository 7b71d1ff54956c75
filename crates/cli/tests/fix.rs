//! `fastfeed fix` as a user runs it: FAST -> FIX -> FAST gives the files back, the report
//! verifies, bad FIX is refused with the place and the reason.

use std::path::PathBuf;
use std::process::{Command, Output};

fn corpus(p: &str) -> String {
    format!("{}/../../../shared/corpus/{p}", env!("CARGO_MANIFEST_DIR"))
}

fn fastfeed(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fastfeed"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(o: &Output) {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fastfeed-fix-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn moex_through_fix_and_back_is_the_same_file() {
    let d = dir("moex");
    let tpl = corpus("moex-forts-2013/templates.xml");
    let dat = corpus("moex-forts-2013/increment_a.dat");
    let fix = d.join("a.fix");
    let o = fastfeed(&[
        "fix",
        "decode",
        "-t",
        &tpl,
        &dat,
        "-o",
        fix.to_str().unwrap(),
    ]);
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("wrote 8101 FIX messages; 8101 FAST session control"),
        "{err}"
    );
    let text = std::fs::read(&fix).unwrap();
    assert!(text.starts_with(b"8=FIXT.1.1\x019="));
    let back = d.join("a.dat");
    ok(&fastfeed(&[
        "fix",
        "encode",
        "-t",
        &tpl,
        "--scp-reset",
        "each",
        fix.to_str().unwrap(),
        "-o",
        back.to_str().unwrap(),
    ]));
    assert!(std::fs::read(&back).unwrap() == std::fs::read(&dat).unwrap());
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn complex30000_through_piped_fix_and_back_is_the_same_file() {
    let d = dir("mfast");
    let tpl = corpus("mfast-complex/example.xml");
    let dat = corpus("mfast-complex/complex30000.dat");
    let fix = d.join("m.fix");
    ok(&fastfeed(&[
        "fix",
        "decode",
        "-t",
        &tpl,
        "--framing",
        "len32le",
        "--sep",
        "pipe",
        &dat,
        "-o",
        fix.to_str().unwrap(),
    ]));
    let text = std::fs::read_to_string(&fix).unwrap();
    assert_eq!(text.lines().count(), 30_001);
    assert!(text
        .lines()
        .nth(1)
        .unwrap()
        .contains("|35=X|1128=1.0|49=Test Exchange|"));
    let back = d.join("m.dat");
    ok(&fastfeed(&[
        "fix",
        "encode",
        "-t",
        &tpl,
        "--framing",
        "len32le",
        "--reset-each-packet",
        fix.to_str().unwrap(),
        "-o",
        back.to_str().unwrap(),
    ]));
    assert!(std::fs::read(&back).unwrap() == std::fs::read(&dat).unwrap());

    // A damaged checksum is refused, naming the message and what is wrong.
    let bad = d.join("bad.fix");
    let first = text.lines().next().unwrap();
    let damaged = format!("{}000|\n", &first[..first.len() - 4]);
    std::fs::write(&bad, damaged).unwrap();
    let o = fastfeed(&[
        "fix",
        "encode",
        "-t",
        &tpl,
        bad.to_str().unwrap(),
        "-o",
        d.join("x.dat").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("message 1") && err.contains("CheckSum (10) says 000"),
        "{err}"
    );
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn report_gives_the_table_and_verifies() {
    let o = fastfeed(&[
        "fix",
        "report",
        "-t",
        &corpus("mfast-complex/example.xml"),
        "--framing",
        "len32le",
        "--reset-each-packet",
        "--verify",
        &corpus("mfast-complex/complex30000.dat"),
    ]);
    ok(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("MarketData (1)") && out.contains("QuoteRequest (2)"),
        "{out}"
    );
    let all = out.lines().find(|l| l.starts_with("all ")).unwrap();
    assert!(all.split_whitespace().nth(1) == Some("30001"), "{all}");
    assert!(
        out.contains("round trip FAST -> FIX -> FAST: 30001 of 30001 messages byte-identical"),
        "{out}"
    );
}

#[test]
fn a_capture_read_as_it_goes_gives_the_fix_of_one_read_whole() {
    // From a file, a pcap is read a run of records at a time; from standard input, whole:
    // the same FIX either way, and the capture's counts on standard error.
    let d = dir("pcap");
    let pcap = d.join("cme.pcap");
    ok(&fastfeed(&[
        "generate",
        "cme",
        "-n",
        "3000",
        "-o",
        pcap.to_str().unwrap(),
    ]));
    let tpl = format!("{}/../sim/templates/cme.xml", env!("CARGO_MANIFEST_DIR"));
    let args = [
        "fix",
        "decode",
        "-t",
        &tpl,
        "--udp",
        "239.255.90.1:14310",
        "--skip-header",
        "5",
        "--reset-each-packet",
    ];
    let streamed = fastfeed(&[&args[..], &[pcap.to_str().unwrap()]].concat());
    ok(&streamed);
    let whole = Command::new(env!("CARGO_BIN_EXE_fastfeed"))
        .args(args)
        .arg("-")
        .stdin(std::fs::File::open(&pcap).unwrap())
        .output()
        .unwrap();
    ok(&whole);
    assert!(streamed.stdout.starts_with(b"8=FIXT.1.1\x019="));
    assert!(streamed.stdout == whole.stdout, "the FIX differs");
    let err = String::from_utf8_lossy(&streamed.stderr);
    assert!(
        err.contains("capture: ") && err.contains("3000 selected"),
        "{err}"
    );
    std::fs::remove_dir_all(&d).ok();
}

/// Packets behind a header the options do not skip: `fix decode` and `fix report` name the
/// header that makes them decode, as `decode` does.
#[test]
fn an_unskipped_packet_header_is_named() {
    let d = dir("header");
    let tpl = corpus("mfast-complex/example.xml");
    let framed = std::fs::read(corpus("mfast-complex/complex30000.dat")).unwrap();
    // Each packet behind a 7-byte header (a sequence number and 3 bytes of flags).
    let mut data = Vec::new();
    for (i, p) in fastfeed_packet::len32le_packets(&framed)
        .take(100)
        .enumerate()
    {
        let rec = [
            &(i as u32 + 1).to_le_bytes()[..],
            &[0xfe, 0x01, 0x7f],
            p.unwrap().bytes,
        ]
        .concat();
        data.extend((rec.len() as u32).to_le_bytes());
        data.extend(rec);
    }
    let file = d.join("h7.dat");
    std::fs::write(&file, data).unwrap();
    let f = file.to_str().unwrap();
    let want = "--skip-header 7 --reset-each-packet (32 of 32 whole";
    for cmd in ["decode", "report"] {
        let o = fastfeed(&["fix", cmd, "-t", &tpl, "--framing", "len32le", f]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains(want),
            "fix {cmd}: {err}"
        );
    }
    let o = fastfeed(&[
        "fix",
        "decode",
        "-t",
        &tpl,
        "--framing",
        "len32le",
        "--skip-header",
        "7",
        "--reset-each-packet",
        f,
    ]);
    ok(&o);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 100);
    std::fs::remove_dir_all(&d).ok();
}
