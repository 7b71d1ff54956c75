//! The complex (CME-like) generator: MarketData messages whose MDEntries mix securities, with
//! a sprinkle of QuoteRequests.

use fastfeed_codec::{Decimal, Fields, Message, Templates, Value};

use crate::layout::Layout;
use crate::{GenConfig, SimError, Source};

const MARKET_DATA: u32 = 1;
const QUOTE_REQUEST: u32 = 2;
/// Prices are hundredths (exponent -2) moving in ticks of 0.25.
const PX_EXPONENT: i32 = -2;
const TICK: i64 = 25;
const MARKET_OPEN_MS: u32 = 34_200_000;
const TRADE_DATE: u64 = 20_240_102;

struct MdIdx {
    seq_num: usize,
    sending_time: usize,
    trade_date: usize,
    entries: usize,
    update_action: usize,
    price_level: usize,
    entry_type: usize,
    security_id: usize,
    rpt_seq: usize,
    px: usize,
    entry_time: usize,
    size: usize,
    orders: usize,
    session: usize,
    net_chg: usize,
    trade_volume: usize,
    tick_direction: usize,
    aggressor: usize,
    match_event: usize,
}

struct QrIdx {
    seq_num: usize,
    sending_time: usize,
    req_id: usize,
    related: usize,
    symbol: usize,
    security_id: usize,
    qty: usize,
    side: usize,
    transact_time: usize,
    quote_type: usize,
}

struct Security {
    id: u32,
    px: i64,
    prev_close: i64,
    rpt_seq: u32,
    volume: u64,
}

pub(crate) struct ComplexGen {
    rng: fastrand::Rng,
    md: (Layout, Layout, MdIdx),
    qr: (Layout, Layout, QrIdx),
    securities: Vec<Security>,
    avg_entries: f64,
    max_entries: usize,
    nosplit: bool,
    quote_request_ratio: f64,
    seq: u32,
    ms: u32,
    quote_reqs: u32,
    /// Securities of the message being built (reused).
    picked: Vec<usize>,
}

impl ComplexGen {
    pub fn new(templates: &Templates, cfg: &GenConfig) -> Result<Self, SimError> {
        let md = Layout::of_template(templates, MARKET_DATA)?;
        let (entries, e) = md.sequence("MDEntries")?;
        let md_idx = MdIdx {
            seq_num: md.idx("MsgSeqNum")?,
            sending_time: md.idx("SendingTime")?,
            trade_date: md.idx("TradeDate")?,
            entries,
            update_action: e.idx("MDUpdateAction")?,
            price_level: e.idx("MDPriceLevel")?,
            entry_type: e.idx("MDEntryType")?,
            security_id: e.idx("SecurityID")?,
            rpt_seq: e.idx("RptSeq")?,
            px: e.idx("MDEntryPx")?,
            entry_time: e.idx("MDEntryTime")?,
            size: e.idx("MDEntrySize")?,
            orders: e.idx("NumberOfOrders")?,
            session: e.idx("TradingSessionID")?,
            net_chg: e.idx("NetChgPrevDay")?,
            trade_volume: e.idx("TradeVolume")?,
            tick_direction: e.idx("TickDirection")?,
            aggressor: e.idx("AggressorSide")?,
            match_event: e.idx("MatchEventIndicator")?,
        };
        let qr = Layout::of_template(templates, QUOTE_REQUEST)?;
        let (related, r) = qr.sequence("RelatedSym")?;
        let qr_idx = QrIdx {
            seq_num: qr.idx("MsgSeqNum")?,
            sending_time: qr.idx("SendingTime")?,
            req_id: qr.idx("QuoteReqID")?,
            related,
            symbol: r.idx("Symbol")?,
            security_id: r.idx("SecurityID")?,
            qty: r.idx("OrderQty")?,
            side: r.idx("Side")?,
            transact_time: r.idx("TransactTime")?,
            quote_type: r.idx("QuoteType")?,
        };
        let mut rng = fastrand::Rng::with_seed(cfg.seed);
        let securities = (1..=cfg.securities)
            .map(|id| {
                let px = rng.i64(400..4_000) * TICK;
                Security {
                    id,
                    px,
                    prev_close: px,
                    rpt_seq: 0,
                    volume: 0,
                }
            })
            .collect();
        let max_entries = cfg.max_entries();
        Ok(ComplexGen {
            rng,
            md: (md, e, md_idx),
            qr: (qr, r, qr_idx),
            securities,
            avg_entries: cfg.avg_entries,
            max_entries,
            nosplit: cfg.nosplit,
            quote_request_ratio: cfg.quote_request_ratio,
            seq: 0,
            ms: MARKET_OPEN_MS,
            quote_reqs: 0,
            picked: Vec::new(),
        })
    }

    /// Geometric length with mean `avg_entries` (before the cap).
    fn entry_count(&mut self) -> usize {
        let p = 1.0 / self.avg_entries;
        let mut k = 1;
        while k < self.max_entries && self.rng.f64() >= p {
            k += 1;
        }
        k
    }

    /// Securities for `n` entries: one for nosplit, else a mix in which about half the
    /// entries revisit a security already in the message, as real books update in bursts.
    fn pick_securities(&mut self, n: usize) {
        self.picked.clear();
        let all = self.securities.len();
        let first = self.rng.usize(..all);
        for _ in 0..n {
            let s = if self.nosplit {
                first
            } else if !self.picked.is_empty() && self.rng.bool() {
                self.picked[self.rng.usize(..self.picked.len())]
            } else {
                self.rng.usize(..all)
            };
            self.picked.push(s);
        }
    }

    fn market_data(&mut self) -> Message {
        let n = self.entry_count();
        self.pick_securities(n);
        let (layout, elem, idx) = &self.md;
        let mut m = layout.message();
        set(&mut m.fields, idx.seq_num, self.seq as u64);
        set(&mut m.fields, idx.sending_time, self.ms as u64);
        set(&mut m.fields, idx.trade_date, TRADE_DATE);
        let mut entries = Vec::with_capacity(n);
        for (k, &s) in self.picked.iter().enumerate() {
            let rng = &mut self.rng;
            let sec = &mut self.securities[s];
            let mut f = elem.fields();
            // 0 bid, 1 offer, 2 trade.
            let kind = [0u8, 0, 1, 1, 2][rng.usize(..5)];
            sec.rpt_seq += 1;
            let level = rng.u32(1..=5).min(rng.u32(1..=5)) as i64;
            let px = match kind {
                0 => sec.px - level * TICK,
                1 => sec.px + level * TICK,
                _ => {
                    sec.px = (sec.px + rng.i64(-1..=1) * TICK).max(TICK);
                    sec.px
                }
            };
            let size = rng.i64(1..=500);
            set(
                &mut f,
                idx.update_action,
                if kind == 2 {
                    0
                } else {
                    [0, 1, 1, 1, 1, 1, 1, 2][rng.usize(..8)]
                },
            );
            f[idx.entry_type] = Some(ascii(["0", "1", "2"][kind as usize]));
            set(&mut f, idx.security_id, sec.id as u64);
            set(&mut f, idx.rpt_seq, sec.rpt_seq as u64);
            f[idx.px] = Some(Value::Decimal(Decimal::new(PX_EXPONENT, px)));
            set(&mut f, idx.entry_time, self.ms as u64);
            f[idx.size] = Some(Value::Int(size));
            f[idx.session] = Some(ascii("2"));
            if kind == 2 {
                sec.volume += size as u64;
                let chg = sec.px - sec.prev_close;
                f[idx.net_chg] = Some(Value::Decimal(Decimal::new(PX_EXPONENT, chg)));
                set(&mut f, idx.trade_volume, sec.volume.min(u32::MAX as u64));
                f[idx.tick_direction] = Some(ascii(["0", "1", "2", "3"][rng.usize(..4)]));
                set(&mut f, idx.aggressor, rng.u64(1..=2));
            } else {
                set(&mut f, idx.price_level, level as u64);
                set(&mut f, idx.orders, rng.u64(1..=30));
            }
            if k + 1 == n {
                f[idx.match_event] = Some(ascii("1"));
            }
            entries.push(f);
        }
        m.fields[idx.entries] = Some(Value::Sequence(entries));
        m
    }

    fn quote_request(&mut self) -> Message {
        let n = self.rng.usize(1..=2);
        self.quote_reqs += 1;
        let (layout, elem, idx) = &self.qr;
        let mut m = layout.message();
        set(&mut m.fields, idx.seq_num, self.seq as u64);
        set(&mut m.fields, idx.sending_time, self.ms as u64);
        m.fields[idx.req_id] = Some(ascii(&format!("QR{}", self.quote_reqs)));
        let mut related = Vec::with_capacity(n);
        for _ in 0..n {
            let sec = &self.securities[self.rng.usize(..self.securities.len())];
            let mut f = elem.fields();
            f[idx.symbol] = Some(ascii(&format!("SEC{:04}", sec.id)));
            set(&mut f, idx.security_id, sec.id as u64);
            set(&mut f, idx.qty, self.rng.u64(1..=100));
            set(&mut f, idx.side, self.rng.u64(1..=2));
            set(&mut f, idx.transact_time, self.ms as u64);
            set(&mut f, idx.quote_type, [1, 1, 1, 0][self.rng.usize(..4)]);
            related.push(f);
        }
        m.fields[idx.related] = Some(Value::Sequence(related));
        m
    }
}

fn set(f: &mut Fields, i: usize, v: u64) {
    f[i] = Some(Value::UInt(v));
}

fn ascii(s: &str) -> Value {
    Value::Ascii(s.to_owned())
}

impl Source for ComplexGen {
    fn next_message(&mut self) -> Message {
        self.seq += 1;
        self.ms += self.rng.u32(0..3);
        if self.rng.f64() < self.quote_request_ratio {
            self.quote_request()
        } else {
            self.market_data()
        }
    }
}
