//! The CME profile on a CME-style book feed the simulator builds (packets with CME's 5-byte
//! preamble, decimals with separate exponent and mantissa operators, all six
//! MDUpdateActions, definitions giving the depth): the handler's books equal the
//! generator's, checked against every snapshot on the way, with and without losses.

use fastfeed_codec::Decimal;
use fastfeed_events::Profile;
use fastfeed_feed::config::{Endian, PacketHeader};
use fastfeed_handler::source::{merge, CapturedLine};
use fastfeed_handler::{BookState, Channel, ChannelSettings, ChannelStats, LineId};
use fastfeed_sim::{book_feed, BookFeed, BookFeedConfig, RefLevel, CME_TEMPLATES};

fn settings() -> ChannelSettings {
    ChannelSettings {
        header: PacketHeader::Seq {
            bytes: 4,
            endian: Endian::Be,
            len: Some(5),
        },
        reset_each_packet: true,
        gap_timeout_ns: 5_000_000,
        max_held: 10_000,
        max_queue: 100_000,
        snapshot_line: true,
        line_b: true,
        max_jump: 1_000_000,
        verify: true,
        line_silence_ns: 1_000_000_000,
    }
}

fn run(feed: &BookFeed, drop: impl Fn(u64) -> bool) -> (Channel, ChannelStats) {
    let keep = |p: &[(u64, Vec<u8>)]| -> Vec<(u64, Vec<u8>)> {
        p.iter()
            .filter(|(_, b)| !drop(u32::from_be_bytes(b[..4].try_into().unwrap()) as u64))
            .cloned()
            .collect()
    };
    let a = CapturedLine::from_packets(LineId::A, keep(&feed.increments));
    // Line B runs 1 ms behind.
    let b = CapturedLine::from_packets(
        LineId::B,
        keep(&feed.increments)
            .into_iter()
            .map(|(t, p)| (t + 1_000_000, p)),
    );
    let s = CapturedLine::from_packets(LineId::Snapshot, feed.snapshots.clone());
    let lines = [a, b, s];
    let templates = fastfeed_codec::parse_templates(CME_TEMPLATES).unwrap();
    let mut ch = Channel::new(templates, Profile::cme(), settings());
    let mut now = 0;
    for (l, i) in merge(&lines) {
        now = lines[l].packets[i].ts_ns;
        ch.on_packet(lines[l].line, lines[l].packet(i), now, &mut ());
    }
    ch.finish(now + 1_000_000_000, &mut ());
    let s = ch.stats();
    (ch, s)
}

fn same_books(ch: &Channel, feed: &BookFeed) {
    for r in &feed.books {
        let v = ch
            .book(r.security as u64)
            .expect("every instrument has a book");
        assert_eq!(v.state, BookState::Live);
        assert_eq!(v.rpt_seq, Some(r.rpt_seq as u64));
        let side = |levels: &[fastfeed_book::Level]| -> Vec<RefLevel> {
            levels
                .iter()
                .map(|l| {
                    assert_eq!(l.price.exponent, -2);
                    (l.price.mantissa, l.size, l.orders.unwrap())
                })
                .collect()
        };
        assert_eq!(side(v.book.bids()), r.bids, "bids of {}", r.security);
        assert_eq!(side(v.book.offers()), r.offers, "offers of {}", r.security);
        assert_eq!(v.book.depth(), Some(10));
        let _ = Decimal::new(-2, 0);
    }
}

#[test]
fn cme_books_equal_the_generators_and_every_snapshot() {
    let feed = book_feed(&BookFeedConfig::default()).unwrap();
    assert!(feed.actions.iter().all(|&n| n > 100), "{:?}", feed.actions);
    let (ch, s) = run(&feed, |_| false);
    same_books(&ch, &feed);
    assert_eq!(s.rejected, [0, 0, 0]);
    assert_eq!((s.book_errors, s.went_stale, s.gaps_timed_out), (0, 0, 0));
    assert_eq!(s.definitions, 4);
    assert_eq!(s.trades, feed.trades);
    // Every snapshot after start-up found its instrument live at the same RptSeq.
    assert_eq!(s.snapshot_mismatches, 0);
    assert_eq!(s.snapshot_checks, feed.snapshots.len() as u64 - 4);
    assert_eq!(s.arbiter.a.first, feed.increments.len() as u64);
    assert_eq!(s.arbiter.b.duplicates, feed.increments.len() as u64);
}

#[test]
fn cme_losses_on_both_lines_recover_from_snapshots() {
    let feed = book_feed(&BookFeedConfig::default()).unwrap();
    // Packets lost on both lines, after the definitions.
    let lost = |seq: u64| seq > 10 && seq.is_multiple_of(397);
    let (ch, s) = run(&feed, lost);
    same_books(&ch, &feed);
    let n = (11..=feed.increments.len() as u64)
        .filter(|&q| lost(q))
        .count() as u64;
    assert_eq!(s.gaps_timed_out, n);
    assert!(s.went_stale > 0 && s.recoveries == s.went_stale, "{s:?}");
    assert_eq!(s.stale_periods, s.recoveries);
    assert_eq!((s.book_errors, s.snapshot_mismatches), (0, 0));
}
