//! Datagrams larger than the link's MTU are in a capture as IPv4 fragments: they are put back
//! together (in any order, across the runs of a streamed capture), and every fragment that
//! cannot be is counted lost, with what is held at once bounded.

use std::net::SocketAddrV4;
use std::time::Duration;

use fastfeed_capture::{
    udp_frame, udp_frames, Capture, CaptureRuns, CaptureStats, Len32Payloads, MAX_AGE_NS,
    MAX_PENDING,
};
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::TsResolution;

fn addr(s: &str) -> SocketAddrV4 {
    s.parse().unwrap()
}

const SRC: &str = "10.1.2.3:4000";
const GROUP: &str = "239.195.1.1:16001";

/// A payload of `len` bytes that tells where each byte was.
fn payload(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// A nanosecond pcap of `frames`, the i-th at `times[i]` ns.
fn pcap(frames: &[Vec<u8>], times: &[u64]) -> Vec<u8> {
    let header = PcapHeader {
        ts_resolution: TsResolution::NanoSecond,
        ..PcapHeader::default()
    };
    let mut w = PcapWriter::with_header(Vec::new(), header).unwrap();
    for (f, ts) in frames.iter().zip(times) {
        let p = PcapPacket::new(Duration::from_nanos(*ts), f.len() as u32, f);
        w.write_packet(&p).unwrap();
    }
    w.into_writer()
}

fn read(data: &[u8]) -> (Vec<(u64, SocketAddrV4, Vec<u8>)>, CaptureStats) {
    let c = Capture::open(data).unwrap();
    let mut it = c.datagrams();
    let got = it
        .by_ref()
        .map(|d| (d.ts_ns, d.dst, d.payload.into_owned()))
        .collect();
    (got, it.stats())
}

/// What the streaming reader makes of `data` in runs of `run` bytes: its `len32le` output and
/// its counts.
fn streamed(data: &[u8], run: usize) -> (Vec<u8>, CaptureStats) {
    let p = Len32Payloads::new(data, None).unwrap().run_bytes(run);
    let stats = p.stats();
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut { p }, &mut out).unwrap();
    let s = stats.lock().unwrap().capture;
    (out, s)
}

fn len32(payloads: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in payloads {
        out.extend((p.len() as u32).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

#[test]
fn a_datagram_over_the_mtu_is_sent_as_fragments() {
    let big = payload(4000, 1);
    let frames = udp_frames(addr(SRC), addr(GROUP), &big, 1500, 7).unwrap();
    // 8 bytes of UDP header and 4,000 of payload in 1,480-byte pieces.
    assert_eq!(frames.len(), 3);
    let small = udp_frames(addr(SRC), addr(GROUP), b"small", 1500, 8).unwrap();
    assert_eq!(
        small,
        vec![udp_frame(addr(SRC), addr(GROUP), b"small").unwrap()]
    );
    assert!(udp_frames(addr(SRC), addr(GROUP), &big, 27, 9).is_none());
}

/// Fragments in order, reversed, and interleaved with other datagrams (and with another
/// fragmented one) all give back each datagram whole, at its last fragment's time and place.
#[test]
fn fragments_in_any_order_give_the_datagram_back() {
    let big = payload(4000, 1);
    let other = payload(2000, 2);
    let f = udp_frames(addr(SRC), addr(GROUP), &big, 1500, 7).unwrap();
    let g = udp_frames(addr(SRC), addr("239.195.1.2:16002"), &other, 1500, 8).unwrap();
    let before = udp_frame(addr(SRC), addr(GROUP), b"before").unwrap();
    let after = udp_frame(addr(SRC), addr(GROUP), b"after").unwrap();
    let orders: [Vec<Vec<u8>>; 3] = [
        vec![
            before.clone(),
            f[0].clone(),
            f[1].clone(),
            f[2].clone(),
            after.clone(),
        ],
        vec![
            before.clone(),
            f[2].clone(),
            f[1].clone(),
            f[0].clone(),
            after.clone(),
        ],
        vec![
            before.clone(),
            f[1].clone(),
            g[0].clone(),
            f[0].clone(),
            g[1].clone(),
            f[2].clone(),
            after.clone(),
        ],
    ];
    for frames in orders {
        let n = frames.len();
        let times: Vec<u64> = (0..n as u64).map(|i| 1_000 + i).collect();
        let data = pcap(&frames, &times);
        let (got, stats) = read(&data);
        let mut want = vec![(1_000, addr(GROUP), b"before".to_vec())];
        let last_of_f = frames.iter().rposition(|x| f.contains(x)).unwrap() as u64;
        want.push((1_000 + last_of_f, addr(GROUP), big.clone()));
        if n == 7 {
            want.push((1_004, addr("239.195.1.2:16002"), other.clone()));
        }
        want.push((1_000 + n as u64 - 1, addr(GROUP), b"after".to_vec()));
        want.sort_by_key(|w| w.0);
        assert_eq!(got, want);
        let fragments = n as u64 - 2;
        let reassembled = if n == 7 { 2 } else { 1 };
        assert_eq!(
            stats,
            CaptureStats {
                frames: n as u64,
                datagrams: 2 + reassembled,
                fragments,
                reassembled,
                ..CaptureStats::default()
            }
        );
        // The streamed reader, whose runs may cut between a datagram's fragments.
        let payloads: Vec<&[u8]> = got.iter().map(|g| g.2.as_slice()).collect();
        for run in [1, 100, 2000, 1 << 20] {
            assert_eq!(streamed(&data, run), (len32(&payloads), stats), "run {run}");
        }
        // A reassembled datagram is placed at its last fragment's frame.
        let c = Capture::open(&data).unwrap();
        for d in c.datagrams() {
            let at = d.offset_in(&data);
            if d.is_reassembled() {
                assert!(f.iter().chain(&g).any(|x| data[at..].starts_with(x)));
            } else {
                assert_eq!(&data[at..at + d.payload.len()], &d.payload[..]);
            }
        }
        let mut runs = CaptureRuns::new(&data[..], None).unwrap().run_bytes(100);
        let mut places = Vec::new();
        while runs.next_run(|_, at| places.push(at)).unwrap() {}
        let whole: Vec<usize> = c.datagrams().map(|d| d.offset_in(&data)).collect();
        assert_eq!(places, whole);
    }
}

/// A fragment that never comes, a cut one, a conflicting one: the datagram is lost and every
/// fragment of it counted; the datagrams around it are read.
#[test]
fn fragments_of_a_datagram_never_completed_are_counted_lost() {
    let big = payload(4000, 3);
    let f = udp_frames(addr(SRC), addr(GROUP), &big, 1500, 7).unwrap();
    let ok = udp_frame(addr(SRC), addr(GROUP), b"ok").unwrap();
    // The last fragment again, ending the datagram 8 bytes later: two ends.
    let mut conflicting = f[2].clone();
    conflicting.extend([0; 8]);
    let total = u16::from_be_bytes([conflicting[16], conflicting[17]]) + 8;
    conflicting[16..18].copy_from_slice(&total.to_be_bytes());
    let mut h = etherparse::Ipv4HeaderSlice::from_slice(&conflicting[14..])
        .unwrap()
        .to_header();
    h.header_checksum = h.calc_header_checksum();
    conflicting[24..26].copy_from_slice(&h.header_checksum.to_be_bytes());
    for (frames, lost) in [
        (vec![f[0].clone(), ok.clone(), f[2].clone()], 2),
        (
            vec![f[0].clone(), f[1].clone(), f[2][..100].to_vec(), ok.clone()],
            2,
        ),
        (
            vec![
                f[2].clone(),
                f[0].clone(),
                conflicting,
                f[1].clone(),
                ok.clone(),
            ],
            4,
        ),
    ] {
        let times: Vec<u64> = (0..frames.len() as u64).collect();
        let data = pcap(&frames, &times);
        let (got, stats) = read(&data);
        assert_eq!(got.len(), 1, "{stats:?}");
        assert_eq!(got[0].2, b"ok");
        assert_eq!(stats.reassembled, 0);
        assert_eq!(stats.fragments_lost, lost, "{stats:?}");
        for run in [1, 1 << 20] {
            assert_eq!(streamed(&data, run).1, stats, "run {run}");
        }
    }
}

/// At most MAX_PENDING datagrams are gathered at once, each for at most MAX_AGE_NS: past
/// either the oldest is given up, so a capture of stray fragments holds bounded memory.
#[test]
fn what_is_held_for_fragments_is_bounded() {
    let big = payload(2000, 4);
    let firsts: Vec<Vec<u8>> = (0..=MAX_PENDING as u16)
        .map(|id| udp_frames(addr(SRC), addr(GROUP), &big, 1500, id).unwrap()[0].clone())
        .collect();
    let second = |id| udp_frames(addr(SRC), addr(GROUP), &big, 1500, id).unwrap()[1].clone();
    let (second_of_0, newest) = (second(0), second(MAX_PENDING as u16));

    // One more first fragment than can be held: datagram 0 is given up, the newest is still
    // completed.
    let mut frames = firsts.clone();
    frames.push(newest);
    frames.push(second_of_0.clone());
    let times: Vec<u64> = (0..frames.len() as u64).collect();
    let (got, stats) = read(&pcap(&frames, &times));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].2, big);
    assert_eq!(stats.reassembled, 1);
    // Datagram 0's first fragment, then its second (gathered again, never whole), and the
    // 63 others still incomplete at the end.
    assert_eq!(stats.fragments_lost, 1 + 1 + (MAX_PENDING as u64 - 1));
    assert_eq!(stats.fragments, frames.len() as u64);

    // A second fragment that comes too late.
    let frames = vec![firsts[0].clone(), second_of_0.clone()];
    for (gap, whole) in [(MAX_AGE_NS - 1, 1), (MAX_AGE_NS, 0)] {
        let (got, stats) = read(&pcap(&frames, &[5, 5 + gap]));
        assert_eq!(got.len(), whole, "gap {gap}");
        assert_eq!(stats.fragments_lost, 2 - 2 * whole as u64);
    }
}
