//! A CME-style book feed: consistent price-level books (MDPriceLevel, depth 10) moved by
//! new, change, delete, overlay, delete-thru and delete-from updates and trades, with RptSeq
//! per instrument; definitions first; a snapshot channel that loops over every instrument's
//! full book. Packets carry CME's preamble (4-byte big-endian sequence number, one
//! sub-channel byte) and one message each, dictionaries reset per packet. The generator keeps
//! the books it describes, so a handler's books can be checked against them.

use fastfeed_codec::{Decimal, Encoder, Fields, Message, Value};

use crate::layout::Layout;
use crate::SimError;

/// The CME-style templates: MDIncRefresh 81, MDSnapshotFullRefresh 83, MDSecurityDefinition
/// 90, MDSecurityStatus 91, MDHeartbeat 92.
pub const CME_TEMPLATES: &str = include_str!("../templates/cme.xml");

/// Bytes of CME's packet preamble: sequence number (4, big-endian) and sub-channel (1).
pub const CME_PREAMBLE: usize = 5;

const TICK: i64 = 25;
const EXPONENT: i32 = -2;

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct BookFeedConfig {
    /// Incremental messages (definitions included).
    pub messages: usize,
    /// Instruments, SecurityID 1001, 1002, ...
    pub securities: u32,
    /// Levels per side.
    pub depth: usize,
    /// Incremental messages between snapshot cycles.
    pub snapshot_every: usize,
    pub seed: u64,
    /// Time of the first packet and between packets, ns.
    pub start_ns: u64,
    pub interval_ns: u64,
}

impl Default for BookFeedConfig {
    fn default() -> Self {
        BookFeedConfig {
            messages: 20_000,
            securities: 4,
            depth: 10,
            snapshot_every: 500,
            seed: 1,
            start_ns: 1_700_000_000_000_000_000,
            interval_ns: 100_000,
        }
    }
}

/// One side's level: price mantissa (exponent -2), size, orders.
pub type RefLevel = (i64, i64, u32);

/// An instrument's book as the generator left it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RefBook {
    pub security: u32,
    pub rpt_seq: u32,
    pub bids: Vec<RefLevel>,
    pub offers: Vec<RefLevel>,
}

/// The generated feed.
#[derive(Debug, Clone, Default)]
pub struct BookFeed {
    /// Incremental packets with their times.
    pub increments: Vec<(u64, Vec<u8>)>,
    /// Snapshot-line packets with their times.
    pub snapshots: Vec<(u64, Vec<u8>)>,
    /// Every book at the end.
    pub books: Vec<RefBook>,
    /// Updates by MDUpdateAction 0..=5, and trades.
    pub actions: [u64; 6],
    pub trades: u64,
}

struct Gen {
    rng: fastrand::Rng,
    inc: (Layout, Layout),
    snap: (Layout, Layout),
    def: (Layout, Layout),
    status: Layout,
    heartbeat: Layout,
    enc: Encoder,
    books: Vec<RefBook>,
    mids: Vec<i64>,
    depth: usize,
}

fn uint(v: u64) -> Option<Value> {
    Some(Value::UInt(v))
}

fn ascii(s: &str) -> Option<Value> {
    Some(Value::Ascii(s.into()))
}

fn px(m: i64) -> Option<Value> {
    Some(Value::Decimal(Decimal::new(EXPONENT, m)))
}

impl Gen {
    fn set(&self, l: &Layout, f: &mut Fields, name: &'static str, v: Option<Value>) {
        f[l.idx(name).expect("template field")] = v;
    }

    fn packet(&mut self, seq: u32, m: &Message) -> Result<Vec<u8>, SimError> {
        let mut out = seq.to_be_bytes().to_vec();
        out.push(0);
        self.enc.reset();
        self.enc
            .encode(m, &mut out)
            .map_err(|error| SimError::Encode {
                index: seq as usize,
                error,
            })?;
        Ok(out)
    }

    /// One book entry: updates the reference book and returns the entry's fields.
    fn entry(&mut self, s: usize) -> Option<Fields> {
        let Gen {
            rng,
            inc,
            books,
            mids,
            depth,
            ..
        } = self;
        let (l, depth, mid, book) = (&inc.1, *depth, mids[s], &mut books[s]);
        let mut f = l.fields();
        if rng.u32(..10) == 0 && !book.bids.is_empty() {
            // A trade at the best bid.
            let size = rng.i64(1..50);
            book.rpt_seq += 1;
            let p = book.bids[0].0;
            f[l.idx("MDUpdateAction").ok()?] = uint(0);
            f[l.idx("MDEntryType").ok()?] = ascii("2");
            f[l.idx("MDEntryPx").ok()?] = px(p);
            f[l.idx("MDEntrySize").ok()?] = Some(Value::Int(size));
            f[l.idx("AggressorSide").ok()?] = uint(2);
            f[l.idx("SecurityID").ok()?] = uint(book.security as u64);
            f[l.idx("RptSeq").ok()?] = uint(book.rpt_seq as u64);
            f[l.idx("MDEntryTime").ok()?] = uint(0);
            return Some(f);
        }
        let bid = rng.bool();
        let side = if bid {
            &mut book.bids
        } else {
            &mut book.offers
        };
        let len = side.len();
        // Price bounds for a level inserted at index i (between its neighbours).
        let bounds = |side: &Vec<RefLevel>, i: usize, skip: Option<usize>| {
            let nb = |k: usize| side.get(k).map(|l| l.0);
            let before = if i == 0 { None } else { nb(i - 1) };
            let after = nb(if skip.is_some() { i + 1 } else { i });
            if bid {
                let hi = before.map_or(mid - TICK, |p| p - TICK);
                let lo = after.map_or(hi - 20 * TICK, |p| p + TICK);
                (lo <= hi).then_some((lo, hi))
            } else {
                let lo = before.map_or(mid + TICK, |p| p + TICK);
                let hi = after.map_or(lo + 20 * TICK, |p| p - TICK);
                (lo <= hi).then_some((lo, hi))
            }
        };
        let pick = |rng: &mut fastrand::Rng, (lo, hi): (i64, i64)| {
            lo + rng.i64(0..=(hi - lo) / TICK) * TICK
        };
        let roll = if len == 0 { 0 } else { rng.u32(..100) };
        let (action, level, price, size, orders) = match roll {
            0..=39 => {
                let i = rng.usize(..=len.min(depth - 1));
                let b = bounds(side, i, None)?;
                let p = pick(rng, b);
                let (sz, o) = (rng.i64(1..500), rng.u32(1..30));
                side.insert(i, (p, sz, o));
                side.truncate(depth);
                (0, i + 1, Some(p), Some(sz), Some(o))
            }
            40..=74 => {
                let i = rng.usize(..len);
                let (sz, o) = (rng.i64(1..500), rng.u32(1..30));
                side[i].1 = sz;
                side[i].2 = o;
                (1, i + 1, Some(side[i].0), Some(sz), Some(o))
            }
            75..=91 => {
                let i = rng.usize(..len);
                let (p, ..) = side.remove(i);
                (2, i + 1, Some(p), None, None)
            }
            92..=95 => {
                let i = rng.usize(..len);
                let p = match bounds(side, i, Some(i)) {
                    Some(b) => pick(rng, b),
                    None => side[i].0,
                };
                let (sz, o) = (rng.i64(1..500), rng.u32(1..30));
                side[i] = (p, sz, o);
                (5, i + 1, Some(p), Some(sz), Some(o))
            }
            96..=97 => {
                let i = rng.usize(..len.min(3));
                side.drain(..=i);
                (3, i + 1, None, None, None)
            }
            _ => {
                let i = rng.usize(..len);
                side.truncate(i);
                (4, i + 1, None, None, None)
            }
        };
        book.rpt_seq += 1;
        f[l.idx("MDUpdateAction").ok()?] = uint(action);
        f[l.idx("MDPriceLevel").ok()?] = uint(level as u64);
        f[l.idx("MDEntryType").ok()?] = ascii(if bid { "0" } else { "1" });
        f[l.idx("SecurityID").ok()?] = uint(book.security as u64);
        f[l.idx("RptSeq").ok()?] = uint(book.rpt_seq as u64);
        f[l.idx("MDEntryPx").ok()?] = price.and_then(px);
        f[l.idx("MDEntrySize").ok()?] = size.map(Value::Int);
        f[l.idx("NumberOfOrders").ok()?] = orders.map(|o| Value::UInt(o as u64));
        f[l.idx("MDEntryTime").ok()?] = uint(0);
        Some(f)
    }

    fn snapshot(&self, s: usize, seq: u32, last: u32, t: u64) -> Message {
        let (l, e) = &self.snap;
        let book = &self.books[s];
        let mut m = l.message();
        let f = &mut m.fields;
        self.set(l, f, "MsgSeqNum", uint(seq as u64));
        self.set(l, f, "SendingTime", uint(t));
        self.set(l, f, "LastMsgSeqNumProcessed", uint(last as u64));
        self.set(l, f, "TotNumReports", uint(self.books.len() as u64));
        self.set(l, f, "SecurityID", uint(book.security as u64));
        self.set(l, f, "RptSeq", uint(book.rpt_seq as u64));
        let mut entries = Vec::new();
        for (t, side) in [("0", &book.bids), ("1", &book.offers)] {
            for (i, &(p, sz, o)) in side.iter().enumerate() {
                let mut x = e.fields();
                self.set(e, &mut x, "MDEntryType", ascii(t));
                self.set(e, &mut x, "MDPriceLevel", uint(i as u64 + 1));
                self.set(e, &mut x, "MDEntryPx", px(p));
                self.set(e, &mut x, "MDEntrySize", Some(Value::Int(sz)));
                self.set(e, &mut x, "NumberOfOrders", uint(o as u64));
                entries.push(x);
            }
        }
        self.set(l, f, "MDEntries", Some(Value::Sequence(entries)));
        m
    }
}

/// Generates a CME-style book feed.
pub fn book_feed(cfg: &BookFeedConfig) -> Result<BookFeed, SimError> {
    if cfg.depth == 0 || cfg.securities == 0 {
        return Err(SimError::Config(
            "depth and securities must be at least 1".into(),
        ));
    }
    let templates = fastfeed_codec::parse_templates(CME_TEMPLATES)?;
    let layout = |id| -> Result<(Layout, Layout), SimError> {
        let l = Layout::of_template(&templates, id)?;
        let name = if id == 90 { "MDFeedTypes" } else { "MDEntries" };
        let (_, e) = l.sequence(name)?;
        Ok((l, e))
    };
    let mut rng = fastrand::Rng::with_seed(cfg.seed);
    let mut g = Gen {
        inc: layout(81)?,
        snap: layout(83)?,
        def: layout(90)?,
        status: Layout::of_template(&templates, 91)?,
        heartbeat: Layout::of_template(&templates, 92)?,
        enc: Encoder::new(templates.clone()),
        books: (0..cfg.securities)
            .map(|k| RefBook {
                security: 1001 + k,
                ..RefBook::default()
            })
            .collect(),
        mids: (0..cfg.securities)
            .map(|_| rng.i64(4_000..40_000) * TICK)
            .collect(),
        depth: cfg.depth,
        rng,
    };
    let mut feed = BookFeed::default();
    let (mut seq, mut snap_seq) = (0u32, 0u32);
    let mut t = cfg.start_ns;
    for k in 0..cfg.messages {
        seq += 1;
        t += cfg.interval_ns;
        let m = if (k as u32) < cfg.securities {
            let (l, e) = &g.def;
            let mut m = l.message();
            let s = &g.books[k];
            let f = &mut m.fields;
            g.set(l, f, "MsgSeqNum", uint(seq as u64));
            g.set(l, f, "SendingTime", uint(t));
            g.set(l, f, "TotNumReports", uint(cfg.securities as u64));
            g.set(l, f, "Symbol", ascii(&format!("ES{}", s.security)));
            g.set(l, f, "SecurityID", uint(s.security as u64));
            g.set(l, f, "MinPriceIncrement", px(TICK));
            g.set(l, f, "SecurityTradingStatus", uint(17));
            let mut x = e.fields();
            g.set(e, &mut x, "MDFeedType", ascii("GBX"));
            g.set(e, &mut x, "MarketDepth", uint(cfg.depth as u64));
            g.set(l, f, "MDFeedTypes", Some(Value::Sequence(vec![x])));
            m
        } else if g.rng.u32(..100) == 0 {
            let l = &g.heartbeat;
            let mut m = l.message();
            g.set(l, &mut m.fields, "MsgSeqNum", uint(seq as u64));
            g.set(l, &mut m.fields, "SendingTime", uint(t));
            m
        } else if g.rng.u32(..200) == 0 {
            let l = &g.status;
            let mut m = l.message();
            let sec = g.books[g.rng.usize(..g.books.len())].security;
            g.set(l, &mut m.fields, "MsgSeqNum", uint(seq as u64));
            g.set(l, &mut m.fields, "SendingTime", uint(t));
            g.set(l, &mut m.fields, "SecurityID", uint(sec as u64));
            g.set(l, &mut m.fields, "SecurityTradingStatus", uint(17));
            m
        } else {
            let n = g.rng.usize(1..=4);
            let mut entries = Vec::with_capacity(n);
            while entries.len() < n {
                let s = g.rng.usize(..g.books.len());
                if let Some(e) = g.entry(s) {
                    let l = &g.inc.1;
                    let a = match &e[l.idx("MDEntryType")?] {
                        Some(Value::Ascii(t)) if t == "2" => None,
                        _ => match e[l.idx("MDUpdateAction")?] {
                            Some(Value::UInt(a)) => Some(a as usize),
                            _ => None,
                        },
                    };
                    match a {
                        Some(a) => feed.actions[a.min(5)] += 1,
                        None => feed.trades += 1,
                    }
                    entries.push(e);
                }
            }
            let (l, _) = &g.inc;
            let mut m = l.message();
            g.set(l, &mut m.fields, "MsgSeqNum", uint(seq as u64));
            g.set(l, &mut m.fields, "SendingTime", uint(t));
            g.set(l, &mut m.fields, "TradeDate", uint(20_240_102));
            g.set(
                l,
                &mut m.fields,
                "MDEntries",
                Some(Value::Sequence(entries)),
            );
            m
        };
        let p = g.packet(seq, &m)?;
        feed.increments.push((t, p));
        if (k + 1) % cfg.snapshot_every.max(1) == 0 {
            for s in 0..g.books.len() {
                snap_seq += 1;
                let st = t + 1 + s as u64;
                let m = g.snapshot(s, snap_seq, seq, st);
                let p = g.packet(snap_seq, &m)?;
                feed.snapshots.push((st, p));
            }
        }
    }
    feed.books = g.books;
    Ok(feed)
}
