//! The MOEX FORTS capture end to end in process: books built from line A, line B and both
//! equal the snapshot channel's books at every snapshot point of every instrument; losses
//! on one line cost nothing, losses on both are recovered from snapshots; garbage is
//! rejected and counted.

mod common;

use std::collections::{BTreeSet, HashMap};

use common::*;
use fastfeed_handler::source::CapturedLine;
use fastfeed_handler::stream::{LineStream, MergedLines};
use fastfeed_handler::{ChannelStats, LineId};

fn lines(a: bool, b: bool) -> Vec<CapturedLine> {
    let mut v = Vec::new();
    if a {
        v.push(line(LineId::A, "increment_a.dat"));
    }
    if b {
        v.push(line(LineId::B, "increment_b.dat"));
    }
    v.push(line(LineId::Snapshot, "snapshot.dat"));
    v
}

fn run_lines(lines: &[CapturedLine]) -> (Checker, ChannelStats, fastfeed_handler::Channel) {
    let mut ch = channel();
    let mut check = Checker::new();
    run(&mut ch, lines, &mut check);
    let s = ch.stats();
    assert!(
        check.mismatched.is_empty(),
        "books differ from snapshots at {:?}",
        &check.mismatched[..check.mismatched.len().min(10)]
    );
    (check, s, ch)
}

fn clean(s: &ChannelStats) {
    assert_eq!(s.rejected, [0, 0, 0]);
    assert_eq!((s.book_errors, s.rpt_gaps, s.went_stale), (0, 0, 0));
    assert_eq!((s.gaps_timed_out, s.recoveries, s.stale_periods), (0, 0, 0));
    assert_eq!(s.snapshot_mismatches, 0);
    // Every instrument of the snapshot channel was synchronized once, at start-up.
    assert_eq!(s.synced, 11);
    assert_eq!((s.snapshot_joins, s.snapshot_leaves), (1, 1));
}

type Points = HashMap<(u64, u64), (Side2, Side2)>;

fn points(c: &Checker) -> Points {
    c.points
        .iter()
        .map(|(s, r, b, o)| ((*s, *r), (b.clone(), o.clone())))
        .collect()
}

#[test]
fn line_a_line_b_and_both_build_the_snapshot_books() {
    // Line A alone: 2,839 distinct (instrument, RptSeq) points, sent as 6,335 snapshot
    // messages (a book unchanged over a cycle is sent again); the first snapshot of each
    // instrument is where its book starts, so the points before it are not counted.
    let (a, sa, _) = run_lines(&lines(true, false));
    clean(&sa);
    assert_eq!((a.matched, a.matched_messages), (2_839, 6_335));
    let (b, sb, _) = run_lines(&lines(false, true));
    clean(&sb);
    assert_eq!((b.matched, b.matched_messages), (2_842, 6_338));
    let (ab, sab, _) = run_lines(&lines(true, true));
    clean(&sab);
    // A+B sees every point either line sees, with the same books.
    let (pa, pb, pab) = (points(&a), points(&b), points(&ab));
    for (k, v) in pa.iter().chain(&pb) {
        assert_eq!(pab.get(k), Some(v), "{k:?}");
    }
    assert_eq!(pab.len(), pa.len().max(pb.len()));

    // Arbitration, against the two lines' MsgSeqNums counted here.
    let [la, lb, _] = &lines(true, true)[..] else {
        unreachable!()
    };
    let sa_: BTreeSet<u64> = seqs(la).into_iter().flatten().collect();
    let sb_: BTreeSet<u64> = seqs(lb).into_iter().flatten().collect();
    let union = sa_.union(&sb_).count() as u64;
    let both = sa_.intersection(&sb_).count() as u64;
    let arb = sab.arbiter;
    assert_eq!(arb.a.packets, 8_101);
    assert_eq!(arb.b.packets, 8_088);
    assert_eq!(arb.a.first + arb.b.first, union);
    assert_eq!(arb.a.duplicates + arb.b.duplicates, both);
    assert_eq!(arb.channel.accepted, union);
    // Ties in time go to A; B alone has 11 packets A lacks (where A starts later).
    assert_eq!((arb.a.first, arb.b.first), (8_101, 11));
    assert_eq!((arb.a.lost, arb.b.lost), (0, 0));
    assert_eq!(arb.channel.gaps, 0);
}

/// Lines A and B with packets dropped where `drop(line, seq)` says, among those both lines
/// carry (a packet only one line has is not a loss to recover from the other).
fn lossy(drop: impl Fn(LineId, u64) -> bool) -> Vec<CapturedLine> {
    let all = lines(true, true);
    let [a, b]: [BTreeSet<u64>; 2] =
        [&all[0], &all[1]].map(|l| seqs(l).into_iter().flatten().collect());
    let mut out = Vec::new();
    for l in &all[..2] {
        let s = seqs(l);
        out.push(edited(l, |i, p| {
            let dropped = s[i].is_some_and(|q| a.contains(&q) && b.contains(&q) && drop(l.line, q));
            (!dropped).then(|| p.to_vec())
        }));
    }
    out.push(all[2].clone());
    out
}

#[test]
fn each_line_losing_a_different_five_percent_needs_no_recovery() {
    let (ab, _, _) = run_lines(&lines(true, true));
    // Disjoint 5% shares: a packet lost on A is never lost on B. B runs 5 ms behind A, so
    // A's losses open gaps that B fills.
    let mut lines = lossy(|l, seq| pick(seq, 7) % 20 == if l == LineId::A { 0 } else { 1 });
    lines[1] = delayed(&lines[1], 5_000_000);
    let (c, s, _) = run_lines(&lines);
    assert!(s.arbiter.b.behind_ns_max >= 5_000_000, "{:?}", s.arbiter.b);
    assert!(
        s.arbiter.a.lost > 350 && s.arbiter.b.lost > 350,
        "{:?}",
        s.arbiter
    );
    clean(&s);
    assert!(s.gaps_opened > 0);
    assert_eq!(s.gaps_filled, s.gaps_opened);
    assert_eq!(s.arbiter.channel.missing, 0);
    assert_eq!(points(&c), points(&ab));
}

#[test]
fn both_lines_losing_the_same_packets_recover_from_snapshots() {
    let (ab, _, _) = run_lines(&lines(true, true));
    let all = lines(true, true);
    // 1 packet in 400 lost on both lines.
    let lost: BTreeSet<u64> = seqs(&all[0])
        .into_iter()
        .flatten()
        .filter(|&q| pick(q, 11).is_multiple_of(400))
        .collect();
    assert!(lost.len() > 10);
    let lines = lossy(|_, seq| lost.contains(&seq));
    let (c, s, ch) = run_lines(&lines);
    // Which instruments had an update in a lost packet and a later one that shows the gap.
    let secs = securities(&all[0]);
    let a_seqs = seqs(&all[0]);
    let mut hit: BTreeSet<u64> = BTreeSet::new();
    for (i, q) in a_seqs.iter().enumerate() {
        if q.is_some_and(|q| lost.contains(&q)) {
            for sec in &secs[i] {
                if secs[i + 1..].iter().any(|later| later.contains(sec)) {
                    hit.insert(*sec);
                }
            }
        }
    }
    assert_eq!(
        s.gaps_timed_out,
        lost.len() as u64,
        "one gap per lost packet"
    );
    assert_eq!(s.book_errors, 0);
    assert!(s.rpt_gaps > 0);
    // Every stale period ended in a recovery from a snapshot, and was counted.
    assert_eq!(s.went_stale, s.rpt_gaps);
    assert_eq!(s.recoveries, s.went_stale);
    assert_eq!(s.stale_periods, s.recoveries);
    let periods = ch.stale_periods();
    assert_eq!(periods.len() as u64, s.stale_periods);
    let stale_secs: BTreeSet<u64> = periods.iter().map(|p| p.security).collect();
    assert_eq!(stale_secs, hit);
    let total: u64 = periods.iter().map(|p| p.to_ns - p.from_ns).sum();
    assert_eq!(total, s.stale_ns_total);
    for p in periods {
        // Stale from the gap's timeout to the instrument's next snapshot: within a few
        // snapshot cycles (the channel cycles in well under a second).
        assert!(
            p.to_ns >= p.from_ns && p.to_ns - p.from_ns < 3_000_000_000,
            "{p:?}"
        );
    }
    assert!(s.snapshot_joins > 1 && s.snapshot_joins == s.snapshot_leaves);
    // The books are the snapshots' again: every point seen is the no-loss run's.
    let (pc, pab) = (points(&c), points(&ab));
    for (k, v) in &pc {
        assert_eq!(pab.get(k), Some(v));
    }
    // Points inside stale periods are not seen; the rest are.
    assert!(pc.len() + 100 > pab.len(), "{} of {}", pc.len(), pab.len());
    eprintln!(
        "lost {} packets on both lines: {} stale periods, {} ms stale in all, longest {} ms; {} of {} points",
        lost.len(),
        s.stale_periods,
        s.stale_ns_total / 1_000_000,
        s.stale_ns_max / 1_000_000,
        pc.len(),
        pab.len()
    );
}

#[test]
fn garbage_on_a_line_is_rejected_and_counted_and_books_stay_right() {
    let (ab, _, _) = run_lines(&lines(true, true));
    let all = lines(true, true);
    let ts = templates();
    // Another channel's packet: an increment of line A renumbered far ahead.
    let foreign = {
        let mut dec = fastfeed_codec::Decoder::new(ts.clone());
        let p = all[0].packet(100);
        let (reset, n) = dec.decode_message(p).unwrap();
        let (mut m, _) = dec.decode_message(&p[n..]).unwrap();
        m.fields[3] = Some(fastfeed_codec::Value::UInt(50_000_000));
        let mut enc = fastfeed_codec::Encoder::new(ts.clone());
        let mut out = Vec::new();
        enc.encode(&reset, &mut out).unwrap();
        enc.encode(&m, &mut out).unwrap();
        out
    };
    // Packets of another template file: the mFAST sample's CME-style messages.
    let other = std::fs::read(format!(
        "{}/../../../shared/corpus/mfast-complex/complex30000.dat",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let other: Vec<Vec<u8>> = fastfeed_packet::len32le_packets(&other)
        .take(40)
        .map(|p| p.unwrap().bytes.to_vec())
        .collect();
    let snapshot_packets: Vec<Vec<u8>> = all[2].iter().take(30).map(<[u8]>::to_vec).collect();
    let mut torn = 0;
    let a = edited(&all[0], |i, p| {
        let mut p = p.to_vec();
        if i > 50 && pick(i as u64, 3).is_multiple_of(50) {
            // Torn: zeroed from a point past the Reset message to the end.
            let from = 3 + (pick(i as u64, 4) as usize) % (p.len() - 3);
            p[from..].fill(0);
            torn += 1;
        }
        Some(p)
    });
    // Garbage interleaved into line A: every 200th packet is followed by one foreign
    // packet, one of another template file, and one of the snapshot channel.
    let mut injected = (0, 0, 0);
    let mut packets = Vec::new();
    for (i, p) in a.packets.iter().enumerate() {
        packets.push((p.ts_ns, a.packet(i).to_vec()));
        if i > 0 && i.is_multiple_of(200) {
            packets.push((p.ts_ns, foreign.clone()));
            packets.push((p.ts_ns, other[(i / 200) % other.len()].clone()));
            packets.push((p.ts_ns, snapshot_packets[(i / 200) % 30].clone()));
            injected.0 += 1;
            injected.1 += 1;
            injected.2 += 1;
        }
    }
    let a = CapturedLine::from_packets(LineId::A, packets);
    let mut b = all[1].clone();
    b = delayed(&b, 2_000_000);
    let (c, s, _) = run_lines(&[a, b, all[2].clone()]);
    assert!(torn > 100, "{torn}");
    // Torn packets and other templates fail to decode; the foreign packet decodes but is
    // numbered beyond any gap; snapshot packets decode and are older than the sequence.
    assert_eq!(s.foreign, injected.0);
    assert_eq!(s.rejected[0], torn + injected.0 + injected.1);
    assert_eq!(s.arbiter.a.stale + s.arbiter.a.duplicates, injected.2);
    assert_eq!(s.rejected[1], 0);
    assert_eq!((s.book_errors, s.went_stale, s.gaps_timed_out), (0, 0, 0));
    assert_eq!(points(&c), points(&ab));
}

#[test]
fn a_pcap_of_the_three_lines_replays_to_the_same_books() {
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    use std::time::Duration;
    let (ab, _, _) = run_lines(&lines(true, true));
    let all = lines(true, true);
    let groups = [
        "239.195.1.40:16040",
        "239.195.1.168:16168",
        "239.195.1.41:16041",
    ];
    let src = "10.50.129.90:20000".parse().unwrap();
    let mut w = PcapWriter::with_header(
        Vec::new(),
        PcapHeader {
            ts_resolution: pcap_file::TsResolution::NanoSecond,
            ..PcapHeader::default()
        },
    )
    .unwrap();
    // As sent on a link of a small MTU: the larger packets (snapshots, mostly) are in the
    // capture as IPv4 fragments, to be put back together.
    for (id, (l, i)) in fastfeed_handler::source::merge(&all)
        .into_iter()
        .enumerate()
    {
        let dst = groups[l].parse().unwrap();
        let frames =
            fastfeed_capture::udp_frames(src, dst, all[l].packet(i), 128, id as u16).unwrap();
        let ts = Duration::from_nanos(all[l].packets[i].ts_ns);
        for frame in frames {
            w.write_packet(&PcapPacket::new(ts, frame.len() as u32, &frame))
                .unwrap();
        }
    }
    let dir = std::env::temp_dir().join(format!("fastfeed-handler-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("moex.pcap");
    std::fs::write(&path, w.into_writer()).unwrap();
    let ts = templates();
    let header = fastfeed_feed::config::PacketHeader::None;
    let lines = || {
        [LineId::A, LineId::B, LineId::Snapshot]
            .into_iter()
            .zip(groups)
            .map(|(id, g)| {
                let cfg = fastfeed_feed::LineConfig {
                    group: Some(g.parse().unwrap()),
                    interface: std::net::Ipv4Addr::LOCALHOST,
                    source: None,
                    capture: Some(path.clone()),
                    continued: Vec::new(),
                    format: None,
                    udp: None,
                };
                (id, cfg)
            })
    };
    let from_pcap: Vec<CapturedLine> = lines()
        .map(|(id, cfg)| fastfeed_handler::source::load_line(id, &cfg, &ts, header).unwrap())
        .collect();
    // The same lines read as they are handled, a run of records at a time (the capture is
    // several runs long): the same packets at the same times in the same merged order.
    let streams = lines()
        .map(|(id, cfg)| LineStream::open(id, &cfg, &ts, header).unwrap())
        .collect();
    assert!(std::fs::metadata(&path).unwrap().len() > 3 * fastfeed_capture::RUN_BYTES as u64);
    let mut merged = MergedLines::new(streams).unwrap();
    let mut streamed = Vec::new();
    while let Some(p) = merged.next().unwrap() {
        streamed.push((p.line, p.ts_ns, p.bytes.to_vec()));
    }
    let expected: Vec<_> = fastfeed_handler::source::merge(&from_pcap)
        .into_iter()
        .map(|(l, i)| {
            let line = &from_pcap[l];
            (line.line, line.packets[i].ts_ns, line.packet(i).to_vec())
        })
        .collect();
    assert_eq!(streamed.len(), expected.len());
    assert!(
        streamed == expected,
        "the streamed lines differ from the loaded ones"
    );
    for (l, p) in merged.lines().iter().zip(&from_pcap) {
        let stats = l.capture_stats().unwrap();
        assert_eq!(stats.capture, p.capture_stats.unwrap());
        assert_eq!(stats.selected, p.packets.len() as u64);
    }
    std::fs::remove_dir_all(&dir).ok();
    for (p, r) in from_pcap.iter().zip(&all) {
        assert_eq!(p.packets.len(), r.packets.len());
        let stats = p.capture_stats.unwrap();
        assert_eq!(stats.datagrams, 8_101 + 8_088 + 9_314);
        assert!(stats.reassembled > 8_000, "{stats:?}");
        assert_eq!(stats.fragments_lost, 0);
    }
    let (c, s, _) = run_lines(&from_pcap);
    clean(&s);
    assert_eq!(points(&c), points(&ab));
}

#[test]
fn a_line_that_goes_quiet_is_reported_silent_while_the_other_carries_the_channel() {
    let all = lines(true, true);
    // The capture of line B starts 1.007 s after line A's: B is silent until its first
    // packet.
    let (t0, b0) = (all[0].packets[0].ts_ns, all[1].packets[0].ts_ns);
    assert!(b0 - t0 > 1_000_000_000);
    let (whole, s, _) = run_lines(&all);
    assert_eq!((s.silences, s.silent_ns), ([0, 1], [0, b0 - t0]));
    // Line B delivers nothing for 30 s of capture time, from a minute in.
    const S: u64 = 1_000_000_000;
    let quiet = t0 + 60 * S..t0 + 90 * S;
    let b = edited(&all[1], |i, p| {
        (!quiet.contains(&all[1].packets[i].ts_ns)).then(|| p.to_vec())
    });
    let times: Vec<u64> = b.packets.iter().map(|p| p.ts_ns).collect();
    let after = times.partition_point(|&t| t < quiet.end);
    let (last, next) = (times[after - 1], times[after]);
    assert!(last < quiet.start && next >= quiet.end);
    let (c, s, ch) = run_lines(&[all[0].clone(), b, all[2].clone()]);
    assert_eq!(s.silences, [0, 2]);
    assert_eq!(s.silent_ns, [0, b0 - t0 + next - last]);
    assert_eq!(ch.silent_lines(), [false, false]);
    // Line A carried the channel: nothing lost, the same books.
    clean(&s);
    assert_eq!(points(&c), points(&whole));
    // A line that delivers nothing at all is silent to the end.
    let (_, s, ch) = run_lines(&lines(true, false));
    let span = all[0].packets.last().unwrap().ts_ns - t0;
    assert_eq!(s.silences, [0, 1]);
    assert!(s.silent_ns[1] >= span, "{:?} {span}", s.silent_ns);
    assert_eq!(ch.silent_lines(), [false, true]);
}

#[test]
fn a_pcap_line_with_a_source_takes_that_senders_datagrams_only() {
    use pcap_file::pcap::{PcapPacket, PcapWriter};
    use std::time::Duration;
    let a = line(LineId::A, "increment_a.dat");
    let group = "239.195.1.40:16040";
    let (ours, theirs) = ("10.50.129.90:20000", "10.9.9.9:20000");
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    // Line A from its sender, and after every tenth packet a stray datagram to the same
    // group from another host.
    for i in 0..a.packets.len() {
        let ts = Duration::from_nanos(a.packets[i].ts_ns);
        let mut frames = vec![fastfeed_capture::udp_frame(
            ours.parse().unwrap(),
            group.parse().unwrap(),
            a.packet(i),
        )
        .unwrap()];
        if i % 10 == 0 {
            frames.push(
                fastfeed_capture::udp_frame(
                    theirs.parse().unwrap(),
                    group.parse().unwrap(),
                    b"stray",
                )
                .unwrap(),
            );
        }
        for f in frames {
            w.write_packet(&PcapPacket::new(ts, f.len() as u32, &f))
                .unwrap();
        }
    }
    let dir = std::env::temp_dir().join(format!("fastfeed-handler-src-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("a.pcap");
    std::fs::write(&path, w.into_writer()).unwrap();
    let header = fastfeed_feed::config::PacketHeader::None;
    let cfg = |source: Option<&str>| fastfeed_feed::LineConfig {
        group: Some(group.parse().unwrap()),
        interface: std::net::Ipv4Addr::LOCALHOST,
        source: source.map(|s| s.parse().unwrap()),
        capture: Some(path.clone()),
        continued: Vec::new(),
        format: None,
        udp: None,
    };
    let strays = a.packets.len().div_ceil(10);
    for (source, want) in [
        (None, a.packets.len() + strays),
        (Some("10.50.129.90"), a.packets.len()),
    ] {
        let loaded =
            fastfeed_handler::source::load_line(LineId::A, &cfg(source), &templates(), header)
                .unwrap();
        assert_eq!(loaded.packets.len(), want, "{source:?}");
        let mut s = LineStream::open(LineId::A, &cfg(source), &templates(), header).unwrap();
        let (mut buf, mut n, mut strays_read) = (Vec::new(), 0, 0);
        while s.next_into(&mut buf).unwrap().is_some() {
            n += 1;
            strays_read += (buf == b"stray") as usize;
        }
        assert_eq!(n, want, "{source:?}");
        assert_eq!(strays_read, want - a.packets.len());
        if source.is_some() {
            assert!(loaded.iter().eq(a.iter()), "line A's packets, in order");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
