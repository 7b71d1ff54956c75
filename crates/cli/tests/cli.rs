//! The codec's command-line tools as a user runs them.

use std::process::Command;

fn corpus(p: &str) -> String {
    format!("{}/../../../shared/corpus/{p}", env!("CARGO_MANIFEST_DIR"))
}

fn fastfeed(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fastfeed"))
        .args(args)
        .output()
        .unwrap()
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
    let out = fastfeed(&[
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
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
