//! `len32le`, block and raw lines read as they are handled ([`LineStream`]): the same packets at
//! the same times as the lines loaded whole, and the same merged order.

mod common;

use common::*;
use fastfeed_feed::config::{CaptureFormat, LineConfig, PacketHeader};
use fastfeed_handler::source::{load_line, merge, CapturedLine};
use fastfeed_handler::stream::{LineStream, MergedLines};
use fastfeed_handler::LineId;

const LINES: [(LineId, &str); 3] = [
    (LineId::A, "increment_a.dat"),
    (LineId::B, "increment_b.dat"),
    (LineId::Snapshot, "snapshot.dat"),
];

fn config(path: std::path::PathBuf, format: Option<CaptureFormat>) -> LineConfig {
    LineConfig {
        group: None,
        interface: std::net::Ipv4Addr::LOCALHOST,
        source: None,
        capture: Some(path),
        continued: Vec::new(),
        format,
        udp: None,
    }
}

/// Each line's (time, bytes) read through a stream, and the loaded lines' merged order
/// against the streams'.
fn stream_equals_load(configs: &[(LineId, LineConfig)]) {
    let ts = templates();
    let header = PacketHeader::None;
    let loaded: Vec<CapturedLine> = configs
        .iter()
        .map(|(id, cfg)| load_line(*id, cfg, &ts, header).unwrap())
        .collect();
    let open = || -> Vec<LineStream> {
        configs
            .iter()
            .map(|(id, cfg)| LineStream::open(*id, cfg, &ts, header).unwrap())
            .collect()
    };
    for (mut s, l) in open().into_iter().zip(&loaded) {
        let mut got = Vec::new();
        let mut buf = Vec::new();
        while let Some(t) = s.next_into(&mut buf).unwrap() {
            got.push((t, buf.clone()));
        }
        let want: Vec<_> = (0..l.packets.len())
            .map(|i| (l.packets[i].ts_ns, l.packet(i).to_vec()))
            .collect();
        assert_eq!(got.len(), want.len(), "{:?}", l.line);
        assert!(got == want, "line {:?}: streamed packets differ", l.line);
        let read = s.read_so_far();
        assert_eq!(read.done, read.total, "the whole file read");
        assert_eq!(s.damage(), None);
    }
    let mut merged = MergedLines::new(open()).unwrap();
    let mut order = Vec::new();
    while let Some(p) = merged.next().unwrap() {
        order.push((p.line, p.ts_ns, p.bytes.len()));
    }
    let want: Vec<_> = merge(&loaded)
        .into_iter()
        .map(|(l, i)| {
            (
                loaded[l].line,
                loaded[l].packets[i].ts_ns,
                loaded[l].packet(i).len(),
            )
        })
        .collect();
    assert!(order == want, "merged order differs");
}

#[test]
fn raw_lines_stream_as_they_load() {
    // MOEX's raw files, by their first bytes and named: cut at each Reset as they are read.
    for format in [None, Some(CaptureFormat::Raw)] {
        let configs: Vec<_> = LINES
            .iter()
            .map(|&(id, f)| (id, config(corpus(f), format)))
            .collect();
        stream_equals_load(&configs);
    }
}

/// The MOEX lines written into `dir` in `format` (len32le or block), and their configs.
fn reframed(dir: &std::path::Path, format: CaptureFormat) -> Vec<(LineId, LineConfig)> {
    std::fs::create_dir_all(dir).unwrap();
    LINES
        .iter()
        .map(|&(id, f)| {
            let raw = line(id, f);
            let path = dir.join(f);
            let file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
            match format {
                CaptureFormat::Block => fastfeed_packet::write_blocks(raw.iter(), file),
                _ => fastfeed_packet::write_len32le(raw.iter(), file),
            }
            .unwrap();
            (id, config(path, Some(format)))
        })
        .collect()
}

#[test]
fn block_lines_stream_as_they_load() {
    // The spec's blocks: each packet's size as a stop-bit integer before it.
    let dir = std::env::temp_dir().join(format!("fastfeed-blocks-{}", std::process::id()));
    let configs = reframed(&dir, CaptureFormat::Block);
    stream_equals_load(&configs);
    // The same packets at the same times as the raw files.
    for (id, cfg) in &configs {
        let f = LINES.iter().find(|l| l.0 == *id).unwrap().1;
        let (raw, blocks) = (
            line(*id, f),
            load_line(*id, cfg, &templates(), PacketHeader::None).unwrap(),
        );
        assert_eq!(blocks.packets.len(), raw.packets.len());
        assert!(blocks.iter().eq(raw.iter()), "{id:?}");
        let times = |l: &CapturedLine| l.packets.iter().map(|p| p.ts_ns).collect::<Vec<_>>();
        assert_eq!(times(&blocks), times(&raw));
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn len32le_lines_stream_as_they_load() {
    let dir = std::env::temp_dir().join(format!("fastfeed-framed-{}", std::process::id()));
    let configs = reframed(&dir, CaptureFormat::Len32le);
    stream_equals_load(&configs);

    // A cut last record: the packets before it, then the line ends, its damage named (the
    // file, the record and the byte) rather than failing the run.
    let (id, cfg) = &configs[0];
    let path = cfg.capture.clone().unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 1)
        .unwrap();
    let mut s = LineStream::open(*id, cfg, &templates(), PacketHeader::None).unwrap();
    let mut buf = Vec::new();
    let mut packets = 0;
    while s.next_into(&mut buf).unwrap().is_some() {
        packets += 1;
    }
    assert_eq!(
        packets,
        line(LineId::A, "increment_a.dat").packets.len() - 1
    );
    let damage = s.damage().expect("the damage named");
    assert!(
        damage.contains("increment_a.dat") && damage.contains("runs past the end"),
        "{damage}"
    );
    assert!(
        s.next_into(&mut buf).unwrap().is_none(),
        "the line stays ended"
    );
    std::fs::remove_dir_all(&dir).ok();
}
