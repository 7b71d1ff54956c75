//! `fastfeed book` on live multicast lines (a process of its own, so its groups are its
//! own): one instrument's book as the MOEX capture is replayed, and at the end how long the
//! channel's datagrams took from the kernel to the books.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;

use common::*;

fn corpus(file: &str) -> String {
    format!(
        "{}/../../../shared/corpus/moex-forts-2013/{file}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn book_follows_a_live_feed_and_says_its_wire_to_book() {
    if !fastfeed_net::loopback_multicast_works() {
        eprintln!("skipped: {}", fastfeed_net::LOOPBACK_HINT);
        return;
    }
    let dir = scratch("book-live");
    let line = |tag: u16, file: &str| {
        format!(
            "{{ group = \"{}\", capture = \"{}\", format = \"raw\" }}",
            unique_group(tag),
            corpus(file)
        )
    };
    let cfg = dir.join("moex.toml");
    std::fs::write(
        &cfg,
        format!(
            "feed = \"moex\"\nprofile = \"moex-forts\"\ntemplates = \"{}\"\n\n[[channel]]\nname = \"FUT-BOOK-5\"\na = {}\nb = {}\nsnapshot = {}\n",
            corpus("templates.xml"),
            line(1, "increment_a.dat"),
            line(2, "increment_b.dat"),
            line(3, "snapshot.dat"),
        ),
    )
    .unwrap();
    let mut book = fastfeed()
        .args([
            "book",
            "--json",
            "--security",
            "49630790",
            "--idle-exit-ms",
            "1500",
        ])
        .arg(&cfg)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(book.stdout.take().unwrap());
    let mut ready = String::new();
    stdout.read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), "ready");
    let replay = fastfeed()
        .args(["replay", "--rate", "20000", "-q"])
        .arg(&cfg)
        .output()
        .unwrap();
    stdout_of_success(&replay, "replay");
    let mut changes = String::new();
    stdout.read_to_string(&mut changes).unwrap();
    let out = book.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let changes: Vec<serde_json::Value> = changes
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(changes.len() > 100, "{stderr}");
    let last = changes.last().unwrap();
    assert_eq!(
        (num(last, "security"), &last["state"]),
        (49630790, &"live".into())
    );
    let wire = stderr
        .lines()
        .find(|l| l.starts_with("FUT-BOOK-5: wire to book p50 "))
        .unwrap_or_else(|| panic!("no wire to book line: {stderr}"));
    assert!(wire.contains(" max "), "{wire}");
    std::fs::remove_dir_all(&dir).ok();
}
