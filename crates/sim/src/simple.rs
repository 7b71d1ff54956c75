//! The simple (ARCA-like) generator: Quote, New, Change and Remove in equal shares.

use fastfeed_codec::{Fields, Message, Templates, Value};

use crate::layout::Layout;
use crate::{GenConfig, SimError, Source};

/// Template ids of the simple set, in quota order.
const QUOTE: usize = 0;
const NEW: usize = 1;
const CHANGE: usize = 2;
const REMOVE: usize = 3;
const TEMPLATE_IDS: [u32; 4] = [1, 2, 3, 4];

/// 09:30:00.000 in milliseconds since midnight.
const MARKET_OPEN_MS: u32 = 34_200_000;

struct Idx {
    seq: usize,
    ts: usize,
    order: usize,
    exchange: usize,
    security: usize,
    security_type: usize,
    session: usize,
    volume: Option<usize>,
    price: Option<usize>,
    side: Option<usize>,
}

struct Security {
    id: u16,
    price: u32,
    exchange: u8,
    security_type: u8,
    session: u8,
}

struct Order {
    id: u32,
    security: usize,
    side: u8,
    price: u32,
}

pub(crate) struct SimpleGen {
    rng: fastrand::Rng,
    layouts: Vec<(Layout, Idx)>,
    /// Messages of each kind still to generate: exact equal shares over the whole run.
    quota: [usize; 4],
    securities: Vec<Security>,
    live: Vec<Order>,
    next_order: u32,
    seq: u32,
    ts: u32,
}

impl SimpleGen {
    pub fn new(templates: &Templates, cfg: &GenConfig) -> Result<Self, SimError> {
        let mut layouts = Vec::new();
        for id in TEMPLATE_IDS {
            let l = Layout::of_template(templates, id)?;
            let idx = Idx {
                seq: l.idx("SequenceNumber")?,
                ts: l.idx("Timestamp")?,
                order: l.idx("OrderId")?,
                exchange: l.idx("ExchangeId")?,
                security: l.idx("SecurityId")?,
                security_type: l.idx("SecurityType")?,
                session: l.idx("SessionId")?,
                volume: l.idx("Volume").ok(),
                price: l.idx("Price").ok(),
                side: l.idx("Side").ok(),
            };
            layouts.push((l, idx));
        }
        let mut rng = fastrand::Rng::with_seed(cfg.seed);
        let securities = (1..=cfg.securities)
            .map(|id| Security {
                id: id as u16,
                price: rng.u32(1_000..=50_000),
                exchange: rng.u8(1..=4),
                security_type: rng.u8(1..=3),
                session: rng.u8(1..=2),
            })
            .collect();
        // The remainder goes to Quote, New, Change in that order, so New never trails Remove.
        let mut quota = [cfg.count / 4; 4];
        for q in quota.iter_mut().take(cfg.count % 4) {
            *q += 1;
        }
        Ok(SimpleGen {
            next_order: rng.u32(1_000_000..2_000_000),
            rng,
            layouts,
            quota,
            securities,
            live: Vec::new(),
            seq: 0,
            ts: MARKET_OPEN_MS,
        })
    }

    /// Whether a message of `kind` can come next without ever leaving a Change or Remove
    /// with no live order to refer to.
    fn feasible(&self, kind: usize) -> bool {
        let q = &self.quota;
        q[kind] > 0
            && match kind {
                CHANGE => !self.live.is_empty(),
                // Keep one order alive for pending Changes once no New is left to make one.
                REMOVE => match self.live.len() {
                    0 => false,
                    1 => q[CHANGE] == 0 || q[NEW] > 0,
                    _ => true,
                },
                _ => true,
            }
    }

    /// Picks a kind weighted by remaining quota, so the shares stay even along the run.
    fn pick(&mut self) -> usize {
        let weights: [usize; 4] =
            std::array::from_fn(|k| if self.feasible(k) { self.quota[k] } else { 0 });
        let total: usize = weights.iter().sum();
        assert!(total > 0, "no feasible message kind: quota exhausted");
        let mut r = self.rng.usize(0..total);
        for (k, w) in weights.iter().enumerate() {
            if r < *w {
                return k;
            }
            r -= w;
        }
        unreachable!()
    }

    /// Moves a security's price by a few ticks, never below one tick.
    fn walk(&mut self, s: usize) -> u32 {
        let step = self.rng.i32(-2..=2);
        let p = &mut self.securities[s].price;
        *p = p.saturating_add_signed(step).max(1);
        *p
    }
}

fn set(f: &mut Fields, i: usize, v: u64) {
    f[i] = Some(Value::UInt(v));
}

impl Source for SimpleGen {
    fn next_message(&mut self) -> Message {
        let kind = self.pick();
        self.quota[kind] -= 1;
        self.seq += 1;
        self.ts += self.rng.u32(0..3);
        let (order_id, s, side, volume, price) = match kind {
            QUOTE => {
                let s = self.rng.usize(..self.securities.len());
                (0, s, None, 100 * self.rng.u32(1..=50), self.walk(s))
            }
            NEW => {
                let s = self.rng.usize(..self.securities.len());
                let side = self.rng.u8(1..=2);
                let mid = self.walk(s);
                let off = self.rng.u32(0..=5);
                // Bids rest below the market, offers above.
                let price = if side == 1 {
                    mid.saturating_sub(off).max(1)
                } else {
                    mid + off
                };
                self.next_order += 1;
                let id = self.next_order;
                self.live.push(Order {
                    id,
                    security: s,
                    side,
                    price,
                });
                (id, s, Some(side), 100 * self.rng.u32(1..=20), price)
            }
            CHANGE => {
                let i = self.rng.usize(..self.live.len());
                let step = self.rng.i32(-1..=1);
                let o = &mut self.live[i];
                o.price = o.price.saturating_add_signed(step).max(1);
                let (id, s, side, price) = (o.id, o.security, o.side, o.price);
                (id, s, Some(side), 100 * self.rng.u32(1..=20), price)
            }
            _ => {
                let i = self.rng.usize(..self.live.len());
                let o = self.live.swap_remove(i);
                (o.id, o.security, Some(o.side), 0, o.price)
            }
        };
        let (layout, idx) = &self.layouts[kind];
        let mut m = layout.message();
        let f = &mut m.fields;
        let sec = &self.securities[s];
        set(f, idx.seq, self.seq as u64);
        set(f, idx.ts, self.ts as u64);
        set(f, idx.order, order_id as u64);
        set(f, idx.exchange, sec.exchange as u64);
        set(f, idx.security, sec.id as u64);
        set(f, idx.security_type, sec.security_type as u64);
        set(f, idx.session, sec.session as u64);
        if let Some(i) = idx.volume {
            set(f, i, volume as u64);
        }
        if let Some(i) = idx.price {
            set(f, i, price as u64);
        }
        if let (Some(i), Some(side)) = (idx.side, side) {
            set(f, i, side as u64);
        }
        m
    }
}
