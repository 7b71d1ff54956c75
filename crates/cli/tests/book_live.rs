//! `fastfeed book` on live multicast lines (a process of its own, so its groups are its
//! own): one instrument's book as the MOEX capture is replayed, and at the end how long the
//! channel's datagrams took from the kernel to the books.

mod common;

use std::io::Read;

use common::*;

#[test]
fn book_follows_a_live_feed_and_says_its_wire_to_book() {
    if !fastfeed_net::loopback_multicast_works() {
        eprintln!("skipped: {}", fastfeed_net::LOOPBACK_HINT);
        return;
    }
    let dir = scratch("book-live");
    let cfg = moex_live_config(&dir, 1);
    let (book, mut stdout) = spawn_ready(
        fastfeed()
            .args([
                "book",
                "--json",
                "--security",
                "49630790",
                "--idle-exit-ms",
                "1500",
            ])
            .arg(&cfg),
    );
    replay_at(&cfg, 20_000);
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
