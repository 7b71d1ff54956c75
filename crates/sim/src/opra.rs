//! The OPRA-like generator: option quotes on many channels, in the manner of the OPRA feed
//! over FAST (the IBM paper of the seeds: 24 lines).
//!
//! Underlyings are spread over the channels (underlying `u` on channel `u % channels`, so
//! the busy ones land on different lines, as OPRA splits its lines by underlying), each
//! with its option series: expirations x call/put x strikes around its price, numbered
//! consecutively. Most of the traffic is quote bursts: an underlying moves and one
//! participant re-quotes a run of consecutive series, which is what makes OPRA's FAST
//! operators pay (the same time and participant, the series id incremented, prices a
//! small delta from the previous strike's). Between bursts come trades, open-interest
//! runs, trading status changes and heartbeats.
//!
//! Every channel is its own packet stream: packets of at most `max_packet` bytes with the
//! channel's sequence number and channel number in front (see
//! [`Packetizer::for_channel`]), dictionaries reset at each packet start, its own
//! MsgSeqNum, and a Done message of its own at the end. Packets of all channels come out
//! interleaved, in the order they fill up.

use fastfeed_codec::{Decimal, Fields, Message, Templates, Value};

use crate::layout::Layout;
use crate::{write_len32le, Packetizer, SimError, DONE_TEMPLATE_ID};
use std::io::Write;
use std::sync::Arc;

/// The OPRA-like templates: OptionQuote=1, OptionTrade=2, OpenInterest=3, SeriesStatus=4,
/// Heartbeat=5, Done=99.
pub const OPRA_TEMPLATES: &str = include_str!("../templates/opra.xml");

pub const QUOTE: u32 = 1;
pub const TRADE: u32 = 2;
pub const OPEN_INTEREST: u32 = 3;
pub const STATUS: u32 = 4;
pub const HEARTBEAT: u32 = 5;

/// The compiled [`OPRA_TEMPLATES`].
pub fn opra_templates() -> Arc<Templates> {
    fastfeed_codec::parse_templates(OPRA_TEMPLATES).expect("shipped templates parse")
}

/// Settings of the OPRA-like generator.
#[derive(Debug, Clone, PartialEq)]
pub struct OpraConfig {
    /// Data messages over all channels; each channel's Done message comes on top.
    pub count: usize,
    /// Channels (lines), numbered 0..channels.
    pub channels: u16,
    /// Most bytes in one packet, header included.
    pub max_packet: usize,
    pub seed: u64,
    /// Underlying instruments, with ids 1..=underlyings.
    pub underlyings: u32,
    /// Keep the generated messages in [`OpraGenerated::messages_kept`] (for tests).
    pub keep_messages: bool,
}

impl Default for OpraConfig {
    fn default() -> Self {
        OpraConfig {
            count: 30_000,
            channels: 24,
            max_packet: 1000,
            seed: 1,
            underlyings: 480,
            keep_messages: false,
        }
    }
}

/// What [`generate_opra`] produced.
#[derive(Debug, Clone, Default)]
pub struct OpraGenerated {
    /// The packets of all channels, interleaved in the order they were finished.
    pub packets: Vec<Vec<u8>>,
    /// Messages generated, the channels' Done messages included.
    pub messages: usize,
    /// Encoded message bytes, packet headers excluded.
    pub message_bytes: usize,
    /// Per channel: packets and messages (Done included).
    pub per_channel: Vec<ChannelCount>,
    /// With [`OpraConfig::keep_messages`]: each message and its channel, in generation order.
    pub messages_kept: Vec<(u16, Message)>,
}

/// One channel's share of the feed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChannelCount {
    pub packets: usize,
    pub messages: usize,
}

/// The channel number in a channel packet's header, if the packet has one.
pub fn packet_channel(packet: &[u8]) -> Option<u16> {
    let b = packet.get(4..6)?;
    Some(u16::from_le_bytes([b[0], b[1]]))
}

/// 09:30:00.000 in milliseconds since midnight.
const MARKET_OPEN_MS: u32 = 34_200_000;
/// Quotes per burst on average (geometric), and the longest burst.
const BURST_MEAN: f64 = 8.0;
const BURST_MAX: usize = 40;
const EXPIRATIONS: u32 = 4;
const PARTICIPANTS: u32 = 16;
const SIZES: [u64; 8] = [1, 5, 10, 10, 10, 20, 50, 100];

struct Underlying {
    /// Price in cents.
    price: f64,
    /// Strikes per expiration and side, and their step in cents.
    strikes: u32,
    step: u32,
    /// The first strike, in cents.
    low: u32,
    first_series: u32,
    channel: u16,
}

impl Underlying {
    fn series(&self) -> u32 {
        EXPIRATIONS * 2 * self.strikes
    }

    /// The fair value in cents of series `k` (0-based within this underlying): intrinsic
    /// value plus a time value that fades away from the money and grows with expiration.
    fn value(&self, k: u32) -> f64 {
        let per_side = self.strikes;
        let expiration = k / (2 * per_side);
        let call = (k / per_side).is_multiple_of(2);
        let strike = (self.low + (k % per_side) * self.step) as f64;
        let intrinsic = if call {
            self.price - strike
        } else {
            strike - self.price
        }
        .max(0.0);
        let away = (self.price - strike).abs() / (0.1 * self.price);
        let time = self.price * 0.01 * (expiration as f64 + 1.0).sqrt() / (1.0 + away * away);
        intrinsic + time
    }
}

/// Field positions of each template, resolved once.
struct Layouts {
    quote: (Layout, [usize; 8]),
    trade: (Layout, [usize; 7]),
    oi: (Layout, [usize; 4]),
    status: (Layout, [usize; 4]),
    heartbeat: (Layout, [usize; 2]),
}

/// Template `id`'s layout and the positions of `names` in it.
fn layout<const N: usize>(
    t: &Templates,
    id: u32,
    names: [&'static str; N],
) -> Result<(Layout, [usize; N]), SimError> {
    let l = Layout::of_template(t, id)?;
    let mut out = [0; N];
    for (o, n) in out.iter_mut().zip(names) {
        *o = l.idx(n)?;
    }
    Ok((l, out))
}

impl Layouts {
    fn new(t: &Templates) -> Result<Self, SimError> {
        let quote = [
            "MsgSeqNum",
            "Time",
            "Participant",
            "SeriesId",
            "BidPrice",
            "BidSize",
            "AskPrice",
            "AskSize",
        ];
        let trade = [
            "MsgSeqNum",
            "Time",
            "Participant",
            "SeriesId",
            "TradePrice",
            "TradeVolume",
            "TradeCondition",
        ];
        Ok(Layouts {
            quote: layout(t, QUOTE, quote)?,
            trade: layout(t, TRADE, trade)?,
            oi: layout(
                t,
                OPEN_INTEREST,
                ["MsgSeqNum", "Time", "SeriesId", "OpenInterest"],
            )?,
            status: layout(
                t,
                STATUS,
                ["MsgSeqNum", "Time", "UnderlyingId", "TradingStatus"],
            )?,
            heartbeat: layout(t, HEARTBEAT, ["MsgSeqNum", "Time"])?,
        })
    }
}

/// The message source: yields (channel, message) one at a time.
struct OpraGen {
    rng: fastrand::Rng,
    layouts: Layouts,
    underlyings: Vec<Underlying>,
    channels: u16,
    /// Each channel's last MsgSeqNum.
    seq: Vec<u32>,
    ts: u32,
    /// The quote burst under way: underlying, next series (within it), quotes left,
    /// participant.
    burst: Option<(usize, u32, usize, u32)>,
    /// The open-interest run under way: underlying, next series, messages left.
    oi_run: Option<(usize, u32, usize)>,
}

fn uint(f: &mut Fields, i: usize, v: u64) {
    f[i] = Some(Value::UInt(v));
}

/// A message of a layout with the two fields every template starts with: MsgSeqNum, Time.
fn headed<const N: usize>((layout, i): &(Layout, [usize; N]), seq: u64, ts: u32) -> Message {
    let mut m = layout.message();
    uint(&mut m.fields, i[0], seq);
    uint(&mut m.fields, i[1], ts as u64);
    m
}

fn cents(f: &mut Fields, i: usize, v: i64) {
    f[i] = Some(Value::Decimal(Decimal::new(-2, v)));
}

/// Rounds a price in cents to OPRA's ticks: a cent below $3, five cents above.
fn tick(c: f64) -> i64 {
    let c = c.max(0.0).round() as i64;
    if c < 300 {
        c
    } else {
        c / 5 * 5
    }
}

impl OpraGen {
    fn new(t: &Templates, cfg: &OpraConfig) -> Result<Self, SimError> {
        let mut rng = fastrand::Rng::with_seed(cfg.seed);
        let mut next_series = 1;
        let underlyings = (0..cfg.underlyings)
            .map(|i| {
                // $5 to $500, more of them cheap than dear.
                let price = 500.0 * 100f64.powf(rng.f64());
                let step = match price {
                    p if p < 2_500.0 => 250,
                    p if p < 20_000.0 => 500,
                    _ => 1_000,
                };
                let strikes = rng.u32(4..=12) * 2 + 1;
                let low = ((price as u32 / step).saturating_sub(strikes / 2)).max(1) * step;
                let u = Underlying {
                    price,
                    strikes,
                    step,
                    low,
                    first_series: next_series,
                    channel: (i % cfg.channels as u32) as u16,
                };
                next_series += u.series();
                u
            })
            .collect();
        Ok(OpraGen {
            layouts: Layouts::new(t)?,
            rng,
            underlyings,
            channels: cfg.channels,
            seq: vec![0; cfg.channels as usize],
            ts: MARKET_OPEN_MS,
            burst: None,
            oi_run: None,
        })
    }

    /// An underlying, the first ones far more often than the last (a few names carry
    /// most of the options traffic).
    fn pick_underlying(&mut self) -> usize {
        let x = self.rng.f64();
        ((x * x * x) * self.underlyings.len() as f64) as usize
    }

    fn next_seq(&mut self, channel: u16) -> u64 {
        let s = &mut self.seq[channel as usize];
        *s += 1;
        *s as u64
    }

    fn next(&mut self) -> (u16, Message) {
        if let Some((u, k, left, who)) = self.burst {
            self.burst = (left > 1 && k + 1 < self.underlyings[u].series()).then_some((
                u,
                k + 1,
                left - 1,
                who,
            ));
            return self.quote(u, k, who);
        }
        if let Some((u, k, left)) = self.oi_run {
            self.oi_run =
                (left > 1 && k + 1 < self.underlyings[u].series()).then_some((u, k + 1, left - 1));
            return self.open_interest(u, k);
        }
        self.ts += self.rng.u32(0..=2);
        // Event weights chosen so that by message about 90% are quotes (bursts of 8 on
        // average), 5% trades, 3% open interest (runs of 2.5), 1% status, 1% heartbeats.
        let r = self.rng.f64() * 19.45;
        let u = self.pick_underlying();
        if r < 11.25 {
            let und = &mut self.underlyings[u];
            und.price = (und.price * (1.0 + 0.002 * (self.rng.f64() - 0.5))).max(1.0);
            let len = geometric(&mut self.rng, BURST_MEAN).min(BURST_MAX);
            let n = self.underlyings[u].series();
            let start = self.rng.u32(0..n);
            let who = self.rng.u32(1..=PARTICIPANTS);
            self.burst = Some((u, start, len, who));
            self.next()
        } else if r < 16.25 {
            self.trade(u)
        } else if r < 17.45 {
            let n = self.underlyings[u].series();
            let len = self.rng.usize(1..=4);
            self.oi_run = Some((u, self.rng.u32(0..n), len));
            self.next()
        } else if r < 18.45 {
            self.status(u)
        } else {
            let channel = self.rng.u16(0..self.channels);
            self.heartbeat(channel)
        }
    }

    fn quote(&mut self, u: usize, k: u32, who: u32) -> (u16, Message) {
        let und = &self.underlyings[u];
        let (channel, series, value) = (und.channel, und.first_series + k, und.value(k));
        let width = tick(value * 0.04).max(if value < 300.0 { 1 } else { 5 });
        let bid = tick(value - width as f64 / 2.0);
        let ask = bid + width;
        let seq = self.next_seq(channel);
        let mut m = headed(&self.layouts.quote, seq, self.ts);
        let (f, i) = (&mut m.fields, &self.layouts.quote.1);
        uint(f, i[2], who as u64);
        uint(f, i[3], series as u64);
        cents(f, i[4], bid);
        uint(f, i[5], SIZES[self.rng.usize(..SIZES.len())]);
        cents(f, i[6], ask);
        uint(f, i[7], SIZES[self.rng.usize(..SIZES.len())]);
        (channel, m)
    }

    fn trade(&mut self, u: usize) -> (u16, Message) {
        let und = &self.underlyings[u];
        let k = self.rng.u32(0..und.series());
        let (channel, series, value) = (und.channel, und.first_series + k, und.value(k));
        let seq = self.next_seq(channel);
        let who = self.rng.u32(1..=PARTICIPANTS);
        let mut m = headed(&self.layouts.trade, seq, self.ts);
        let (f, i) = (&mut m.fields, &self.layouts.trade.1);
        uint(f, i[2], who as u64);
        uint(f, i[3], series as u64);
        cents(f, i[4], tick(value).max(1));
        uint(f, i[5], SIZES[self.rng.usize(..SIZES.len())]);
        // Most trades are regular (no condition); a few carry one.
        if self.rng.u8(0..10) == 0 {
            uint(f, i[6], self.rng.u64(1..=20));
        }
        (channel, m)
    }

    fn open_interest(&mut self, u: usize, k: u32) -> (u16, Message) {
        let und = &self.underlyings[u];
        let (channel, series) = (und.channel, und.first_series + k);
        let seq = self.next_seq(channel);
        let mut m = headed(&self.layouts.oi, seq, self.ts);
        let (f, i) = (&mut m.fields, &self.layouts.oi.1);
        uint(f, i[2], series as u64);
        uint(f, i[3], self.rng.u64(0..50_000));
        (channel, m)
    }

    fn status(&mut self, u: usize) -> (u16, Message) {
        let channel = self.underlyings[u].channel;
        let seq = self.next_seq(channel);
        let mut m = headed(&self.layouts.status, seq, self.ts);
        let (f, i) = (&mut m.fields, &self.layouts.status.1);
        uint(f, i[2], u as u64 + 1);
        // 17 ready to trade, 2 halted, 21 pre-open (FIX SecurityTradingStatus).
        uint(f, i[3], [17, 17, 2, 21][self.rng.usize(0..4)]);
        (channel, m)
    }

    fn heartbeat(&mut self, channel: u16) -> (u16, Message) {
        let seq = self.next_seq(channel);
        (channel, headed(&self.layouts.heartbeat, seq, self.ts))
    }
}

/// A geometric length on 1, 2, ... with mean `mean`.
fn geometric(rng: &mut fastrand::Rng, mean: f64) -> usize {
    let p = 1.0 / mean;
    let u = rng.f64().max(f64::MIN_POSITIVE);
    1 + (u.ln() / (1.0 - p).ln()).floor() as usize
}

fn check(cfg: &OpraConfig) -> Result<(), SimError> {
    let bad = |m: &str| Err(SimError::Config(m.into()));
    if cfg.channels == 0 {
        return bad("channels must be at least 1");
    }
    if cfg.underlyings < cfg.channels as u32 {
        return bad("underlyings (securities) must be at least as many as the channels");
    }
    if cfg.max_packet <= crate::CHANNEL_HEADER_LEN {
        return bad("max_packet must exceed the packet header");
    }
    Ok(())
}

/// Runs the generator, handing each finished packet to `sink` with its channel.
fn run(
    cfg: &OpraConfig,
    mut keep: impl FnMut(u16, &Message),
    mut sink: impl FnMut(u16, &[u8]) -> Result<(), SimError>,
) -> Result<(usize, usize, Vec<ChannelCount>), SimError> {
    check(cfg)?;
    let templates = opra_templates();
    let mut source = OpraGen::new(&templates, cfg)?;
    let done = Layout::of_template(&templates, DONE_TEMPLATE_ID)?.message();
    let mut packers: Vec<Packetizer> = (0..cfg.channels)
        .map(|c| Packetizer::for_channel(templates.clone(), cfg.max_packet, c))
        .collect();
    let mut push = |c: u16, msg: &Message, packers: &mut [Packetizer]| {
        if let Some(p) = packers[c as usize].push(msg)? {
            sink(c, p)?;
        }
        keep(c, msg);
        Ok::<_, SimError>(())
    };
    for _ in 0..cfg.count {
        let (c, msg) = source.next();
        push(c, &msg, &mut packers)?;
    }
    for c in 0..cfg.channels {
        push(c, &done, &mut packers)?;
    }
    for (c, p) in packers.iter_mut().enumerate() {
        if let Some(p) = p.finish() {
            sink(c as u16, p)?;
        }
    }
    let per_channel = packers
        .iter()
        .map(|p| ChannelCount {
            packets: p.packets() as usize,
            messages: p.messages(),
        })
        .collect::<Vec<_>>();
    let messages = packers.iter().map(|p| p.messages()).sum();
    let bytes = packers.iter().map(|p| p.message_bytes()).sum();
    Ok((messages, bytes, per_channel))
}

/// Generates all packets in memory.
pub fn generate_opra(cfg: &OpraConfig) -> Result<OpraGenerated, SimError> {
    let mut kept = Vec::new();
    let mut packets = Vec::new();
    let (messages, message_bytes, per_channel) = run(
        cfg,
        |c, m| {
            if cfg.keep_messages {
                kept.push((c, m.clone()));
            }
        },
        |_, p| {
            packets.push(p.to_vec());
            Ok(())
        },
    )?;
    Ok(OpraGenerated {
        packets,
        messages,
        message_bytes,
        per_channel,
        messages_kept: kept,
    })
}

/// Generates straight into one `len32le` stream, the channels' packets interleaved (each
/// packet's header names its channel), holding one packet per channel at a time.
pub fn generate_opra_to(
    cfg: &OpraConfig,
    mut out: impl Write,
) -> Result<(crate::Summary, Vec<ChannelCount>), SimError> {
    let mut summary = crate::Summary::default();
    let (messages, message_bytes, per_channel) = run(
        cfg,
        |_, _| {},
        |_, p| {
            write_len32le([p], &mut out)?;
            summary.packets += 1;
            summary.bytes_written += 4 + p.len();
            Ok(())
        },
    )?;
    out.flush()?;
    summary.messages = messages;
    summary.message_bytes = message_bytes;
    Ok((summary, per_channel))
}
