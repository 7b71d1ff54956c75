//! Captures written with pcap-file (an independent writer) read back: datagrams, timestamps,
//! and every kind of frame that is not a whole IPv4 UDP datagram counted, never a panic.

use std::borrow::Cow;
use std::net::SocketAddrV4;
use std::time::Duration;

use etherparse::PacketBuilder;
use fastfeed_capture::{
    is_capture, udp_frame, Capture, CaptureRuns, CaptureStats, Format, Len32Payloads, PayloadStats,
};
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::{DataLink, TsResolution};

fn addr(s: &str) -> SocketAddrV4 {
    s.parse().unwrap()
}

/// Frames of every kind, with what the reader must make of each.
fn frames() -> Vec<(Vec<u8>, u32)> {
    let src = addr("10.1.2.3:4000");
    let a = udp_frame(src, addr("239.195.1.1:16001"), b"first").unwrap();
    let b = udp_frame(src, addr("239.195.1.2:16002"), b"second").unwrap();
    let c = udp_frame(src, addr("239.195.1.1:16001"), b"third").unwrap();
    let mut tcp = Vec::new();
    PacketBuilder::ethernet2([2; 6], [3; 6])
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .tcp(1, 2, 3, 4)
        .write(&mut tcp, b"tcp")
        .unwrap();
    let mut v6 = Vec::new();
    PacketBuilder::ethernet2([2; 6], [3; 6])
        .ipv6([1; 16], [2; 16], 64)
        .udp(1, 2)
        .write(&mut v6, b"v6")
        .unwrap();
    // A fragment whose others never come: the more-fragments flag set on a whole datagram.
    let mut frag = udp_frame(src, addr("239.195.1.1:16001"), b"frag").unwrap();
    frag[14 + 6] |= 0x20;
    let garbage = vec![0xff; 9];
    let orig = |f: &Vec<u8>| f.len() as u32;
    vec![
        (a.clone(), orig(&a)),
        (tcp.clone(), orig(&tcp)),
        (b.clone(), orig(&b)),
        (v6.clone(), orig(&v6)),
        (a[..30].to_vec(), orig(&a)), // cut by the snap length
        (frag.clone(), orig(&frag)),
        (garbage.clone(), orig(&garbage)),
        (c.clone(), orig(&c)),
    ]
}

fn expected_stats() -> CaptureStats {
    CaptureStats {
        frames: 8,
        datagrams: 3,
        truncated: 1,
        fragments: 1,
        fragments_lost: 1,
        not_udp: 2,
        bad_frames: 1,
        ..CaptureStats::default()
    }
}

fn pcap(resolution: TsResolution) -> Vec<u8> {
    let header = PcapHeader {
        ts_resolution: resolution,
        ..PcapHeader::default()
    };
    let mut w = PcapWriter::with_header(Vec::new(), header).unwrap();
    for (i, (f, orig)) in frames().iter().enumerate() {
        let ts = Duration::new(1_375_366_677 + i as u64, 123_456_789);
        w.write_packet(&PcapPacket::new(ts, *orig, f)).unwrap();
    }
    w.into_writer()
}

fn pcapng() -> Vec<u8> {
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    w.write_pcapng_block(InterfaceDescriptionBlock {
        linktype: DataLink::ETHERNET,
        snaplen: 0,
        options: vec![InterfaceDescriptionOption::IfTsResol(9)],
    })
    .unwrap();
    for (i, (f, orig)) in frames().iter().enumerate() {
        w.write_pcapng_block(EnhancedPacketBlock {
            interface_id: 0,
            timestamp: Duration::new(1_375_366_677 + i as u64, 123_456_789),
            original_len: *orig,
            data: Cow::Borrowed(f),
            options: vec![],
        })
        .unwrap();
    }
    w.into_inner()
}

/// A block that says it is shorter than a block's 12 bytes ends the capture as damage, where
/// pcap-parser would subtract past zero for some block types (a Process Information Block,
/// type 0x80000001, here of length 8: found by fuzzing).
#[test]
fn a_pcapng_block_shorter_than_a_block_is_damage() {
    let mut data = pcapng();
    let whole = data.len();
    let (want, _) = read(&data);
    data.extend([0x01, 0, 0, 0x80, 8, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0]);
    let (got, stats) = read(&data);
    assert_eq!(got, want);
    assert_eq!(stats.damaged_at, Some(whole));
}

fn read(data: &[u8]) -> (Vec<(u64, SocketAddrV4, Vec<u8>)>, CaptureStats) {
    let cap = Capture::open(data).unwrap();
    let mut it = cap.datagrams();
    let got = it
        .by_ref()
        .map(|d| (d.ts_ns, d.dst, d.payload.to_vec()))
        .collect();
    (got, it.stats())
}

fn ts(i: u64, sub_ns: u64) -> u64 {
    (1_375_366_677 + i) * 1_000_000_000 + sub_ns
}

#[test]
fn pcap_in_microseconds_and_nanoseconds_and_pcapng() {
    for (data, format, sub) in [
        (pcap(TsResolution::MicroSecond), Format::Pcap, 123_456_000),
        (pcap(TsResolution::NanoSecond), Format::Pcap, 123_456_789),
        (pcapng(), Format::PcapNg, 123_456_789),
    ] {
        assert!(is_capture(&data));
        assert_eq!(Capture::open(&data).unwrap().format(), format);
        let (got, stats) = read(&data);
        assert_eq!(
            got,
            vec![
                (ts(0, sub), addr("239.195.1.1:16001"), b"first".to_vec()),
                (ts(2, sub), addr("239.195.1.2:16002"), b"second".to_vec()),
                (ts(7, sub), addr("239.195.1.1:16001"), b"third".to_vec()),
            ],
            "{format:?}"
        );
        assert_eq!(stats, expected_stats(), "{format:?}");
    }
}

/// Captures are taken on whatever link the recording host had: a VLAN trunk, `tcpdump -i any`
/// (Linux cooked headers, SLL or, from libpcap 1.10, SLL2), a tunnel (raw IP), BSD loopback.
/// The same datagram is read from each.
#[test]
fn every_common_link_type_gives_the_datagram() {
    let (src, dst) = ([10, 1, 2, 3], [239, 195, 1, 1]);
    let mut ip = Vec::new();
    PacketBuilder::ipv4(src, dst, 1)
        .udp(4000, 16001)
        .write(&mut ip, b"payload")
        .unwrap();
    let mac = [0x01, 0x00, 0x5e, 0x43, 0x01, 0x01];
    let eth = |tags: &[[u8; 4]]| {
        let mut f = [mac, [2; 6]].concat();
        for t in tags {
            f.extend_from_slice(t);
        }
        f.extend_from_slice(&[0x08, 0x00]);
        f.extend_from_slice(&ip);
        f
    };
    // SLL: packet type, ARPHRD_ETHER, address length and 8 bytes of address, protocol.
    let sll = [
        &[0, 0, 0, 1, 0, 6][..],
        &[2; 6],
        &[0, 0],
        &[0x08, 0x00],
        &ip,
    ]
    .concat();
    // SLL2: protocol, reserved, interface index, ARPHRD_ETHER, packet type, address.
    let sll2 = [
        &[0x08, 0x00, 0, 0, 0, 0, 0, 2, 0, 1, 0, 6][..],
        &[2; 6],
        &[0, 0],
        &ip,
    ]
    .concat();
    let null = [&2u32.to_le_bytes()[..], &ip].concat();
    for (link, frame) in [
        (DataLink::ETHERNET, eth(&[])),
        (DataLink::ETHERNET, eth(&[[0x81, 0x00, 0x00, 0x64]])),
        (
            DataLink::ETHERNET,
            eth(&[[0x88, 0xa8, 0x00, 0x0a], [0x81, 0x00, 0x00, 0x64]]),
        ),
        (DataLink::LINUX_SLL, sll),
        (DataLink::LINUX_SLL2, sll2),
        (DataLink::RAW, ip.clone()),
        (DataLink::IPV4, ip.clone()),
        (DataLink::NULL, null),
    ] {
        let header = PcapHeader {
            datalink: link,
            ..PcapHeader::default()
        };
        let mut w = PcapWriter::with_header(Vec::new(), header).unwrap();
        let len = frame.len() as u32;
        w.write_packet(&PcapPacket::new(Duration::new(1, 0), len, &frame))
            .unwrap();
        let (got, stats) = read(&w.into_writer());
        assert_eq!(
            got,
            [(
                1_000_000_000,
                addr("239.195.1.1:16001"),
                b"payload".to_vec()
            )],
            "{link:?}: {stats:?}"
        );
        assert_eq!((stats.frames, stats.datagrams), (1, 1), "{link:?}");
    }
}

#[test]
fn not_a_capture_is_an_error() {
    assert!(!is_capture(b"\xc0\xf8\x01"));
    assert!(Capture::open(b"\xc0\xf8\x01\x02\x03").is_err());
    assert!(Capture::open(&pcap(TsResolution::MicroSecond)[..10]).is_err());
}

#[test]
fn a_damaged_file_stops_where_the_damage_is() {
    let data = pcap(TsResolution::MicroSecond);
    // Cut inside the third record: two frames read, then the damage is located.
    let first = 24 + 16 + frames()[0].0.len();
    let second = first + 16 + frames()[1].0.len();
    let cut = &data[..second + 20];
    let (got, stats) = read(cut);
    assert_eq!(got.len(), 1);
    assert_eq!(stats.frames, 2);
    assert_eq!(stats.damaged_at, Some(second));
}

#[test]
fn every_cut_and_every_flipped_byte_reads_without_panic() {
    for data in [pcap(TsResolution::NanoSecond), pcapng()] {
        for cut in 0..data.len() {
            if let Ok(c) = Capture::open(&data[..cut]) {
                let mut it = c.datagrams();
                let n = it.by_ref().count() as u64;
                let s = it.stats();
                assert!(n <= 3);
                assert_eq!(
                    s.frames,
                    s.datagrams
                        + s.truncated
                        + s.fragments
                        + s.not_udp
                        + s.bad_frames
                        + s.unsupported_link
                );
            }
        }
        for i in 0..data.len() {
            let mut d = data.clone();
            d[i] ^= 0x5a;
            if let Ok(c) = Capture::open(&d) {
                let _ = c.datagrams().count();
            }
        }
    }
}

/// The in-memory reader's payloads of `data` as `len32le` packets (to `udp` only, when
/// given), and its counts.
fn in_memory(data: &[u8], udp: Option<SocketAddrV4>) -> (Vec<u8>, PayloadStats) {
    let mut out = Vec::new();
    let mut stats = PayloadStats::default();
    let Ok(c) = Capture::open(data) else {
        return (out, stats);
    };
    let mut it = c.datagrams();
    for d in it.by_ref().filter(|d| udp.is_none_or(|u| d.dst == u)) {
        out.extend((d.payload.len() as u32).to_le_bytes());
        out.extend_from_slice(&d.payload);
        stats.selected += 1;
    }
    stats.capture = it.stats();
    stats.bytes = data.len() as u64;
    (out, stats)
}

/// The streaming reader's output and counts, in runs of `run_bytes`; None if it refuses
/// the header.
fn streamed(
    data: &[u8],
    udp: Option<SocketAddrV4>,
    run_bytes: usize,
) -> Option<(Vec<u8>, PayloadStats)> {
    let p = Len32Payloads::new(data, udp).ok()?.run_bytes(run_bytes);
    let stats = p.stats();
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut { p }, &mut out).unwrap();
    let s = *stats.lock().unwrap();
    Some((out, s))
}

fn pcap_big_endian() -> Vec<u8> {
    let header = PcapHeader {
        endianness: pcap_file::Endianness::Big,
        ..PcapHeader::default()
    };
    let mut w = PcapWriter::with_header(Vec::new(), header).unwrap();
    for (i, (f, orig)) in frames().iter().enumerate() {
        let ts = Duration::new(1_375_366_677 + i as u64, 123_456_000);
        w.write_packet(&PcapPacket::new(ts, *orig, f)).unwrap();
    }
    w.into_writer()
}

/// Two pcapng sections, the second big-endian with an interface of its own.
fn pcapng_two_sections() -> Vec<u8> {
    let mut data = pcapng();
    let mut w = PcapNgWriter::with_endianness(Vec::new(), pcap_file::Endianness::Big).unwrap();
    w.write_pcapng_block(InterfaceDescriptionBlock {
        linktype: DataLink::ETHERNET,
        snaplen: 0,
        options: vec![],
    })
    .unwrap();
    for (f, orig) in frames().iter().rev() {
        w.write_pcapng_block(EnhancedPacketBlock {
            interface_id: 0,
            timestamp: Duration::new(1_375_366_700, 0),
            original_len: *orig,
            data: Cow::Borrowed(f),
            options: vec![],
        })
        .unwrap();
    }
    data.extend(w.into_inner());
    data
}

#[test]
fn streamed_in_runs_of_any_size_reads_what_the_whole_file_reads() {
    let group = Some(addr("239.195.1.1:16001"));
    for data in [
        pcap(TsResolution::MicroSecond),
        pcap(TsResolution::NanoSecond),
        pcap_big_endian(),
        pcapng(),
        pcapng_two_sections(),
    ] {
        for udp in [None, group] {
            let want = in_memory(&data, udp);
            assert!(want.1.selected > 0);
            for run in [1, 7, 100, 1 << 20] {
                assert_eq!(streamed(&data, udp, run), Some(want.clone()), "run {run}");
            }
        }
    }
    assert_eq!(in_memory(&pcapng_two_sections(), None).1.selected, 6);
}

#[test]
fn runs_name_each_payload_where_it_lies_in_the_file() {
    for data in [pcap(TsResolution::NanoSecond), pcapng_two_sections()] {
        let c = Capture::open(&data).unwrap();
        let want: Vec<(usize, Vec<u8>)> = c
            .datagrams()
            .map(|d| (d.offset_in(&data), d.payload.to_vec()))
            .collect();
        for run in [1, 100, 1 << 20] {
            let mut runs = CaptureRuns::new(&data[..], None).unwrap().run_bytes(run);
            let mut got = Vec::new();
            while runs
                .next_run(|d, at| got.push((at, d.payload.to_vec())))
                .unwrap()
            {}
            assert_eq!(got, want, "run {run}");
            for (at, payload) in &got {
                assert_eq!(&data[*at..at + payload.len()], &payload[..]);
            }
        }
    }
}

#[test]
fn streamed_damage_is_found_where_the_whole_file_finds_it() {
    for data in [pcap(TsResolution::NanoSecond), pcapng_two_sections()] {
        for cut in 0..data.len() {
            let d = &data[..cut];
            match streamed(d, None, 64) {
                Some(got) => assert_eq!(got, in_memory(d, None), "cut at {cut}"),
                None => assert!(Capture::open(d).is_err(), "cut at {cut}"),
            }
        }
        for i in 0..data.len() {
            let mut d = data.clone();
            d[i] ^= 0x5a;
            // Any bytes: no panic, every frame counted in one place, and never more
            // datagrams than the file has.
            if let Some((_, s)) = streamed(&d, None, 64) {
                let c = s.capture;
                assert!(s.selected <= 6);
                assert_eq!(
                    c.frames,
                    c.datagrams
                        + c.truncated
                        + c.fragments
                        + c.not_udp
                        + c.bad_frames
                        + c.unsupported_link
                );
            }
        }
    }
}

#[test]
fn an_upper_pdu_frame_is_an_unknown_link_not_a_panic() {
    // Link type 252 (Wireshark's exported PDUs): TLVs naming the dissector table "ip.proto"
    // with a 5-byte protocol number, which pcap-parser 0.16 reads with a panic.
    let mut frame = Vec::new();
    for (t, v) in [(14u16, b"ip.proto".as_slice()), (32, &[0, 0, 0, 17, 0])] {
        frame.extend(t.to_be_bytes());
        frame.extend((v.len() as u16).to_be_bytes());
        frame.extend(v);
    }
    frame.extend([0; 4]);
    frame.extend(b"payload");
    let mut data = Vec::new();
    for word in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 252] {
        data.extend(word.to_le_bytes());
    }
    for word in [0u32, 0, frame.len() as u32, frame.len() as u32] {
        data.extend(word.to_le_bytes());
    }
    data.extend(&frame);
    let (got, stats) = read(&data);
    assert!(got.is_empty());
    assert_eq!((stats.frames, stats.unsupported_link), (1, 1));
    assert_eq!(streamed(&data, None, 64).unwrap().1.capture, stats);
}

/// A frame shorter than Ethernet's 60-byte minimum is padded on the wire (a heartbeat of a
/// few bytes, say), and some capture cards keep the 4-byte frame check sequence: neither is
/// part of the payload, which ends where the IP and UDP lengths say.
#[test]
fn padding_and_the_frame_check_sequence_are_not_payload() {
    let src = addr("10.1.2.3:4000");
    let dst = addr("239.195.1.1:16001");
    let tiny = udp_frame(src, dst, b"hb").unwrap();
    assert!(tiny.len() < 60);
    let mut padded = tiny.clone();
    padded.resize(60, 0);
    let mut with_fcs = udp_frame(src, dst, b"a longer payload").unwrap();
    with_fcs.extend([0xde, 0xad, 0xbe, 0xef]);
    let mut both = padded.clone();
    both.extend([0xde, 0xad, 0xbe, 0xef]);
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    for f in [&padded, &with_fcs, &both] {
        let p = PcapPacket::new(Duration::ZERO, f.len() as u32, f);
        w.write_packet(&p).unwrap();
    }
    let (got, stats) = read(&w.into_writer());
    let payloads: Vec<Vec<u8>> = got.into_iter().map(|g| g.2).collect();
    assert_eq!(
        payloads,
        [b"hb".to_vec(), b"a longer payload".to_vec(), b"hb".to_vec()]
    );
    assert_eq!((stats.frames, stats.datagrams), (3, 3));
}
