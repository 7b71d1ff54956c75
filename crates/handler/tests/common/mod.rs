//! The MOEX FORTS capture as lines, an independent reference of its snapshots, and an output
//! that checks the handler's books against them at every snapshot point.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use fastfeed_codec::{Decimal, Decoder, Templates};
use fastfeed_events::{Event, Normalizer, Profile, Side};
use fastfeed_feed::config::{CaptureFormat, LineConfig, PacketHeader};
use fastfeed_handler::source::{load_line, merge, CapturedLine};
use fastfeed_handler::{BookState, BookView, Channel, ChannelSettings, LineId, Output};

pub fn corpus(file: &str) -> PathBuf {
    PathBuf::from(format!(
        "{}/../../../shared/corpus/moex-forts-2013/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

pub fn templates() -> Arc<Templates> {
    let xml = std::fs::read_to_string(corpus("templates.xml")).unwrap();
    fastfeed_codec::parse_templates(&xml).unwrap()
}

pub fn line(id: LineId, file: &str) -> CapturedLine {
    let cfg = LineConfig {
        group: None,
        interface: std::net::Ipv4Addr::LOCALHOST,
        source: None,
        capture: Some(corpus(file)),
        continued: Vec::new(),
        format: Some(CaptureFormat::Raw),
        udp: None,
    };
    load_line(id, &cfg, &templates(), PacketHeader::None).unwrap()
}

pub fn settings() -> ChannelSettings {
    ChannelSettings {
        header: PacketHeader::None,
        reset_each_packet: false,
        gap_timeout_ns: 20_000_000,
        max_held: 10_000,
        max_queue: 100_000,
        snapshot_line: true,
        line_b: true,
        max_jump: 1_000_000,
        verify: false,
        line_silence_ns: 1_000_000_000,
    }
}

pub fn channel() -> Channel {
    Channel::new(templates(), Profile::moex_forts(), settings())
}

/// One side of a book: (price, size), best first.
pub type Side2 = Vec<(Decimal, i64)>;

/// The snapshot channel decoded on its own: (security, RptSeq) -> bids and offers, levels
/// ordered by their MDPriceLevel. No book code involved.
pub fn reference() -> HashMap<(u64, u64), (Side2, Side2, u64)> {
    let ts = templates();
    let mut n = Normalizer::new(&ts, Profile::moex_forts());
    let mut dec = Decoder::new(ts);
    let data = std::fs::read(corpus("snapshot.dat")).unwrap();
    let mut out = HashMap::new();
    let mut pos = 0;
    while pos < data.len() {
        n.clear();
        pos += dec.decode(&data[pos..], &mut n).unwrap();
        let evs = &n.batch().events;
        let Some(Event::SnapshotBegin(h)) = evs.first() else {
            continue;
        };
        let mut sides: [BTreeMap<u32, (Decimal, i64)>; 2] = Default::default();
        for e in evs {
            if let Event::SnapshotEntry(e) = e {
                let s = (e.side == Side::Offer) as usize;
                sides[s].insert(e.level.unwrap(), (e.price.unwrap(), e.size));
            }
        }
        let [b, o] = sides.map(|s| s.into_values().collect::<Vec<_>>());
        // The same book is sent again each cycle until the instrument changes.
        out.entry((h.security, h.rpt_seq.unwrap()))
            .and_modify(|e: &mut (Side2, Side2, u64)| e.2 += 1)
            .or_insert((b, o, 1));
    }
    out
}

fn levels(v: &BookView<'_>, side: Side) -> Side2 {
    v.book
        .side(side)
        .iter()
        .map(|l| (l.price, l.size))
        .collect()
}

fn same(a: &Side2, b: &Side2) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| fastfeed_book::same_price(x.0, y.0) && x.1 == y.1)
}

/// Checks every live book change built from increments against the snapshot of the same
/// instrument at the same RptSeq.
#[derive(Default)]
pub struct Checker {
    pub reference: HashMap<(u64, u64), (Side2, Side2, u64)>,
    /// Distinct (security, RptSeq) points matched.
    pub matched: u64,
    /// Snapshot messages of those points (a point is sent again each cycle).
    pub matched_messages: u64,
    pub mismatched: Vec<(u64, u64)>,
    /// The books at each matched point, in order, to compare runs.
    pub points: Vec<(u64, u64, Side2, Side2)>,
    pub stale_views: u64,
    pub trades: u64,
}

impl Checker {
    pub fn new() -> Checker {
        Checker {
            reference: reference(),
            ..Checker::default()
        }
    }
}

impl Output for Checker {
    fn book(&mut self, v: &BookView<'_>) {
        if v.state != BookState::Live {
            self.stale_views += 1;
            return;
        }
        if v.from_snapshot {
            return;
        }
        let Some(r) = v.rpt_seq else { return };
        let Some((b, o, n)) = self.reference.get(&(v.security, r)) else {
            return;
        };
        let (bids, offers) = (levels(v, Side::Bid), levels(v, Side::Offer));
        if same(b, &bids) && same(o, &offers) {
            self.matched += 1;
            self.matched_messages += n;
            self.points.push((v.security, r, bids, offers));
        } else {
            self.mismatched.push((v.security, r));
        }
    }

    fn trade(&mut self, _: &fastfeed_events::Trade, _: Option<u64>) {
        self.trades += 1;
    }
}

/// Runs lines through a channel in arrival order; time is each packet's.
pub fn run<O: Output>(ch: &mut Channel, lines: &[CapturedLine], out: &mut O) {
    let mut now = 0;
    for (l, i) in merge(lines) {
        let line = &lines[l];
        now = line.packets[i].ts_ns;
        ch.on_packet(line.line, line.packet(i), now, out);
    }
    ch.finish(now + 1_000_000_000, out);
}

/// The MsgSeqNum of each packet of a line (None for packets without one).
pub fn seqs(line: &CapturedLine) -> Vec<Option<u64>> {
    let ts = templates();
    let mut n = Normalizer::new(&ts, Profile::moex_forts());
    let mut dec = Decoder::new(ts);
    line.iter()
        .map(|p| {
            n.clear();
            let mut pos = 0;
            while pos < p.len() {
                pos += dec.decode(&p[pos..], &mut n).unwrap();
            }
            n.batch().seq_span().map(|s| s.0)
        })
        .collect()
}

/// The securities of each packet of a line.
pub fn securities(line: &CapturedLine) -> Vec<Vec<u64>> {
    let ts = templates();
    let mut n = Normalizer::new(&ts, Profile::moex_forts());
    let mut dec = Decoder::new(ts);
    line.iter()
        .map(|p| {
            n.clear();
            let mut pos = 0;
            while pos < p.len() {
                pos += dec.decode(&p[pos..], &mut n).unwrap();
            }
            n.batch()
                .events
                .iter()
                .filter_map(|e| e.instrument().map(|i| i.0))
                .collect()
        })
        .collect()
}

/// A copy of a line with some packets changed or left out.
pub fn edited(
    line: &CapturedLine,
    mut f: impl FnMut(usize, &[u8]) -> Option<Vec<u8>>,
) -> CapturedLine {
    CapturedLine::from_packets(
        line.line,
        line.packets
            .iter()
            .enumerate()
            .filter_map(|(i, p)| f(i, line.packet(i)).map(|b| (p.ts_ns, b)))
            .collect::<Vec<_>>(),
    )
}

/// A deterministic hash of a number, for choosing packets.
pub fn pick(seq: u64, salt: u64) -> u64 {
    let mut x = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt.wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    x ^= x >> 31;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^ (x >> 29)
}

/// A copy of a line running `ns` later.
pub fn delayed(line: &CapturedLine, ns: u64) -> CapturedLine {
    CapturedLine::from_packets(
        line.line,
        line.packets
            .iter()
            .enumerate()
            .map(|(i, p)| (p.ts_ns + ns, line.packet(i).to_vec()))
            .collect::<Vec<_>>(),
    )
}
