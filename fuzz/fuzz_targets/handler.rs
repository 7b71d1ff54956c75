//! The feed handler's channel on a CME-style feed the input damages. The simulator's feed
//! (lines A and B carrying the same increments, a snapshot line) is built once; each input
//! byte then says what befalls the next packet (the input repeated to the feed's end): delivered on A, on B or on both, dropped,
//! sent twice, held back and sent later, a byte flipped, cut short, or replaced by bytes of
//! the input; the snapshot packets come in between. The channel never panics, keeps its
//! queues within their bounds, and counts every packet it was given.
#![no_main]

use std::sync::{Arc, OnceLock};

use fastfeed_codec::Templates;
use fastfeed_events::Profile;
use fastfeed_feed::config::{Endian, PacketHeader};
use fastfeed_handler::{Channel, ChannelSettings, LineId};
use fastfeed_sim::{book_feed, BookFeed, BookFeedConfig, CME_TEMPLATES};
use libfuzzer_sys::fuzz_target;

fn feed() -> &'static (Arc<Templates>, BookFeed) {
    static FEED: OnceLock<(Arc<Templates>, BookFeed)> = OnceLock::new();
    FEED.get_or_init(|| {
        let templates = fastfeed_codec::parse_templates(CME_TEMPLATES).expect("CME templates");
        let feed = book_feed(&BookFeedConfig {
            messages: 240,
            securities: 3,
            depth: 5,
            snapshot_every: 60,
            ..BookFeedConfig::default()
        })
        .expect("a feed");
        (templates, feed)
    })
}

const MAX_HELD: usize = 64;
const MAX_QUEUE: usize = 256;

fn settings() -> ChannelSettings {
    ChannelSettings {
        header: PacketHeader::Seq {
            bytes: 4,
            endian: Endian::Be,
            len: Some(5),
        },
        reset_each_packet: true,
        gap_timeout_ns: 1_000_000,
        max_held: MAX_HELD,
        max_queue: MAX_QUEUE,
        snapshot_line: true,
        line_b: true,
        max_jump: 10_000,
        verify: true,
        line_silence_ns: 2_000_000,
    }
}

fuzz_target!(|input: &[u8]| {
    let (templates, feed) = feed();
    let mut ch = Channel::new(templates.clone(), Profile::cme(), settings());
    let mut given = [0u64; 3];
    let mut give = |ch: &mut Channel, line: LineId, bytes: &[u8], now: u64| {
        given[line as usize] += 1;
        ch.on_packet(line, bytes, now, &mut ());
    };
    // The input's ops over and over: a short input damages the whole feed in its pattern.
    let mut ops = input.iter().copied().cycle();
    let mut later: Vec<(LineId, Vec<u8>)> = Vec::new();
    let mut snapshots = feed.snapshots.iter().peekable();
    let mut now = 0;
    for (t, packet) in &feed.increments {
        now = *t;
        while let Some((_, s)) = snapshots.next_if(|(ts, _)| ts <= t) {
            give(&mut ch, LineId::Snapshot, s, now);
        }
        let op = ops.next().unwrap_or(0);
        let line = if op & 0x80 != 0 { LineId::B } else { LineId::A };
        let mut p = packet.clone();
        match op & 0x0f {
            0 | 1 => {
                give(&mut ch, LineId::A, &p, now);
                give(&mut ch, LineId::B, &p, now + 1_000);
            }
            2 => give(&mut ch, line, &p, now),
            3 => {} // lost on both lines
            4 => {
                give(&mut ch, line, &p, now);
                give(&mut ch, line, &p, now);
            }
            5 => later.push((line, p)),
            6 => {
                let at = ops.next().unwrap_or(0) as usize % p.len().max(1);
                if let Some(b) = p.get_mut(at) {
                    *b ^= ops.next().unwrap_or(1) | 1;
                }
                give(&mut ch, line, &p, now);
            }
            7 => {
                p.truncate(ops.next().unwrap_or(0) as usize % p.len().max(1));
                give(&mut ch, line, &p, now);
            }
            8 => {
                // The packet's sequence number kept, its body from the input.
                let n = ops.next().unwrap_or(0) as usize;
                p.truncate(4.min(p.len()));
                p.extend(ops.by_ref().take(n));
                give(&mut ch, line, &p, now);
            }
            9 => {
                if let Some((l, q)) = later.pop() {
                    give(&mut ch, l, &q, now);
                }
                give(&mut ch, line, &p, now);
            }
            10 => {
                // Time jumps past the gap timeout before this packet.
                now += 2_000_000;
                ch.on_tick(now, &mut ());
                give(&mut ch, line, &p, now);
            }
            _ => give(&mut ch, line, &p, now),
        }
        assert!(ch.held() <= MAX_HELD + 1, "held {}", ch.held());
    }
    for (l, q) in later {
        give(&mut ch, l, &q, now);
    }
    ch.finish(now + 1_000_000_000, &mut ());
    let s = ch.stats();
    assert_eq!(s.packets[0], given[LineId::A as usize], "{s:?}");
    assert_eq!(s.packets[1], given[LineId::B as usize], "{s:?}");
    assert_eq!(
        s.snapshot_packets + s.snapshot_ignored,
        given[LineId::Snapshot as usize],
        "{s:?}"
    );
    assert_eq!(ch.held(), 0);
});
