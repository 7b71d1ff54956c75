//! The FAST spec's block framing (§10: each block's size as a stop-bit integer, then its
//! messages) on the command line: written by `encode`, read by `decode` and `bench`, a block
//! of size zero reported as ERR D12 and passed over.

mod common;

fn fastfeed(args: &[&str]) -> std::process::Output {
    common::fastfeed().args(args).output().unwrap()
}

fn ok(args: &[&str]) -> std::process::Output {
    let out = fastfeed(args);
    common::stdout_of_success(&out, &format!("{args:?}"));
    out
}

#[test]
fn blocks_are_written_read_and_a_zero_block_is_d12() {
    let dir = common::scratch("blocks");
    let p = |f: &str| dir.join(f).to_str().unwrap().to_owned();
    let corpus = |f: &str| format!("{}/../../../shared/corpus/{f}", env!("CARGO_MANIFEST_DIR"));
    let tpl = corpus("mfast-complex/example.xml");
    let reset = ["--reset-each-packet"];
    let json = ok(&[
        "decode",
        "-t",
        &tpl,
        "--framing",
        "len32le",
        &corpus("mfast-complex/complex30000.dat"),
    ])
    .stdout;
    std::fs::write(p("m.jsonl"), &json).unwrap();
    for framing in ["len32le", "block"] {
        let out = p(&format!("m.{framing}"));
        ok(&[
            "encode",
            "-t",
            &tpl,
            "--framing",
            framing,
            reset[0],
            "-o",
            &out,
            &p("m.jsonl"),
        ]);
    }
    // The same packets, each behind a stop-bit size instead of a 4-byte length.
    let len32 = std::fs::read(p("m.len32le")).unwrap();
    let blocks = std::fs::read(p("m.block")).unwrap();
    let mut want = Vec::new();
    fastfeed_packet::write_blocks(
        fastfeed_packet::len32le_packets(&len32).map(|p| p.unwrap().bytes),
        &mut want,
    )
    .unwrap();
    assert!(blocks == want, "encode --framing block wrote other bytes");
    assert!(blocks.len() < len32.len());
    let decoded = ok(&[
        "decode",
        "-t",
        &tpl,
        "--framing",
        "block",
        reset[0],
        &p("m.block"),
    ])
    .stdout;
    assert_eq!(
        decoded
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
        30_001
    );
    assert!(decoded == json, "blocks decode to other messages");
    let bench = String::from_utf8(
        ok(&[
            "bench",
            "decode",
            "-t",
            &tpl,
            "--framing",
            "block",
            "--passes",
            "1",
            &p("m.block"),
        ])
        .stdout,
    )
    .unwrap();
    assert!(bench.contains("30001"), "{bench}");

    // A block of size zero after the 100th: reported with the spec's code, the rest decoded.
    let cut = fastfeed_packet::block_packets(&blocks)
        .nth(100)
        .map(|b| b.unwrap().offset)
        .unwrap()
        - 1; // the 101st block's one-byte size
    let mut damaged = blocks[..cut].to_vec();
    damaged.push(0x80);
    damaged.extend_from_slice(&blocks[cut..]);
    std::fs::write(p("zero.block"), &damaged).unwrap();
    let out = fastfeed(&["decode", "-t", &tpl, "--framing", "block", &p("zero.block")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("a block of size zero [ERR D12]"), "{err}");
    assert!(out.stdout == json, "the messages around the zero block");

    // Read as one raw stream, the hint names the framing.
    let out = fastfeed(&["decode", "-t", &tpl, &p("m.block")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("try --framing block"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
