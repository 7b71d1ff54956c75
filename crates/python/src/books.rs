//! `read_books` and `read_trades`: a feed's captures through the feed handler (A/B
//! arbitration, gaps, snapshot recovery, books), as `fastfeed handle --captures` runs them,
//! into one pyarrow table with a row per book change or per trade: the quant's view of a
//! replayed session.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::builder::{
    Decimal128Builder, Int64Builder, StringBuilder, TimestampNanosecondBuilder, UInt32Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_pyarrow::PyArrowType;
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use fastfeed_book::Level;
use fastfeed_codec::Decimal;
use fastfeed_events::{Side, Trade};
use fastfeed_feed::FeedConfig;
use fastfeed_handler::stream::MergedLines;
use fastfeed_handler::{BookView, Output};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Most fraction digits a price column takes: decimal128's 38 digits less an i64 mantissa's
/// 19 and a margin.
const MAX_SCALE: i32 = 18;

/// One side's levels of one row: (price, size, orders) from the best down.
type Levels = Vec<(Decimal, i64, Option<u32>)>;

/// The book changes gathered while the handler runs.
#[derive(Default)]
struct Rows {
    depth: usize,
    only: Option<HashSet<u64>>,
    at: At,
    head: Head,
    state: Vec<&'static str>,
    from_snapshot: Vec<bool>,
    bids: Vec<Levels>,
    offers: Vec<Levels>,
    /// Most fraction digits of any price kept.
    scale: i32,
}

impl Rows {
    fn side(&mut self, levels: &[Level]) -> Levels {
        levels
            .iter()
            .take(self.depth)
            .map(|l| {
                self.scale = self.scale.max(-l.price.exponent);
                (l.price, l.size, l.orders)
            })
            .collect()
    }
}

/// Where a replay stands: the time and channel of the packet the handler is taking.
#[derive(Default)]
struct At {
    now_ns: u64,
    channel: Arc<str>,
}

/// What a replay gathers: an output told where the replay stands before each packet.
trait Gather: Output + Send {
    fn at(&mut self) -> &mut At;
}

impl Gather for Rows {
    fn at(&mut self) -> &mut At {
        &mut self.at
    }
}

impl Output for Rows {
    fn book(&mut self, v: &BookView<'_>) {
        if self.only.as_ref().is_some_and(|s| !s.contains(&v.security)) {
            return;
        }
        let bids = self.side(v.book.bids());
        let offers = self.side(v.book.offers());
        self.head
            .push(&self.at, v.security, v.rpt_seq, v.msg_seq_num);
        self.state.push(v.state.name());
        self.from_snapshot.push(v.from_snapshot);
        self.bids.push(bids);
        self.offers.push(offers);
    }
}

/// `d` as a decimal128 of `scale` fraction digits; None where it does not fit.
fn scaled(d: Decimal, scale: i32) -> Option<i128> {
    let shift = u32::try_from(scale + d.exponent).ok()?;
    10i128
        .checked_pow(shift)?
        .checked_mul(i128::from(d.mantissa))
}

/// The scale of a price column whose prices have at most `digits` fraction digits.
fn check_scale(digits: i32) -> Result<i32, String> {
    if digits > MAX_SCALE {
        return Err(format!(
            "a price has {digits} fraction digits; at most {MAX_SCALE} fit a price column"
        ));
    }
    Ok(digits.max(0))
}

/// The columns every row begins with: where and when, the instrument, its RptSeq and the
/// message's MsgSeqNum.
#[derive(Default)]
struct Head {
    time: Vec<u64>,
    channels: Vec<Arc<str>>,
    security: Vec<u64>,
    rpt_seq: Vec<Option<u64>>,
    msg_seq_num: Vec<Option<u64>>,
}

impl Head {
    fn push(&mut self, at: &At, security: u64, rpt_seq: Option<u64>, msg_seq_num: Option<u64>) {
        self.time.push(at.now_ns);
        self.channels.push(at.channel.clone());
        self.security.push(security);
        self.rpt_seq.push(rpt_seq);
        self.msg_seq_num.push(msg_seq_num);
    }

    fn len(&self) -> usize {
        self.time.len()
    }

    /// The fields and columns.
    fn finish(self) -> (Vec<Field>, Vec<ArrayRef>) {
        let fields = vec![
            Field::new(
                "time",
                DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
                false,
            ),
            Field::new("channel", DataType::Utf8, false),
            Field::new("security", DataType::UInt64, false),
            Field::new("rpt_seq", DataType::UInt64, true),
            Field::new("msg_seq_num", DataType::UInt64, true),
        ];
        let mut t = TimestampNanosecondBuilder::with_capacity(self.len()).with_timezone("UTC");
        for &ns in &self.time {
            t.append_value(i64::try_from(ns).unwrap_or(i64::MAX));
        }
        let mut c = StringBuilder::new();
        for name in &self.channels {
            c.append_value(&**name);
        }
        let cols: Vec<ArrayRef> = vec![
            Arc::new(t.finish()),
            Arc::new(c.finish()),
            Arc::new(arrow_array::UInt64Array::from(self.security)),
            Arc::new(arrow_array::UInt64Array::from(self.rpt_seq)),
            Arc::new(arrow_array::UInt64Array::from(self.msg_seq_num)),
        ];
        (fields, cols)
    }
}

impl Rows {
    fn into_batch(self) -> Result<RecordBatch, String> {
        let scale = check_scale(self.scale)?;
        let n = self.head.len();
        let (mut fields, mut cols) = self.head.finish();
        fields.push(Field::new("state", DataType::Utf8, false));
        fields.push(Field::new("from_snapshot", DataType::Boolean, false));
        cols.push(Arc::new(
            self.state
                .iter()
                .copied()
                .map(Some)
                .collect::<arrow_array::StringArray>(),
        ));
        cols.push(Arc::new(
            self.from_snapshot
                .iter()
                .map(|&b| Some(b))
                .collect::<arrow_array::BooleanArray>(),
        ));
        let price = DataType::Decimal128(38, scale as i8);
        for (name, sides) in [("bid", &self.bids), ("offer", &self.offers)] {
            for k in 0..self.depth {
                let mut px = Decimal128Builder::with_capacity(n)
                    .with_precision_and_scale(38, scale as i8)
                    .map_err(|e| e.to_string())?;
                let mut size = Int64Builder::with_capacity(n);
                let mut orders = UInt32Builder::with_capacity(n);
                for side in sides.iter() {
                    match side.get(k) {
                        Some(&(p, s, o)) => {
                            let p = scaled(p, scale).ok_or_else(|| {
                                format!("the price {p} does not fit scale {scale}")
                            })?;
                            px.append_value(p);
                            size.append_value(s);
                            orders.append_option(o);
                        }
                        None => {
                            px.append_null();
                            size.append_null();
                            orders.append_null();
                        }
                    }
                }
                let level = k + 1;
                fields.push(Field::new(
                    format!("{name}_price_{level}"),
                    price.clone(),
                    true,
                ));
                fields.push(Field::new(
                    format!("{name}_size_{level}"),
                    DataType::Int64,
                    true,
                ));
                fields.push(Field::new(
                    format!("{name}_orders_{level}"),
                    DataType::UInt32,
                    true,
                ));
                cols.push(Arc::new(px.finish()));
                cols.push(Arc::new(size.finish()));
                cols.push(Arc::new(orders.finish()));
            }
        }
        RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).map_err(|e| e.to_string())
    }
}

/// Runs every channel of the feed configured in `config` over its capture files into
/// `gather`, as `fastfeed handle CONFIG --captures` does; returns each channel's counters as
/// JSON. A capture damaged part-way is read up to the damage, with a RuntimeWarning.
fn replay<G: Gather>(
    py: Python<'_>,
    config: &std::path::Path,
    gather: &mut G,
) -> PyResult<Vec<(String, String)>> {
    let feed = FeedConfig::load(config)
        .map_err(|e| PyValueError::new_err(format!("{}: {}", config.display(), chain(&e))))?;
    let channels = fastfeed_handler::setup(&feed).map_err(|e| PyValueError::new_err(chain(&e)))?;
    let (counters, damage) = py
        .detach(|| -> Result<_, String> {
            let mut counters = Vec::new();
            let mut damage = Vec::new();
            for c in &channels {
                let name = &c.config.name;
                let streams = c
                    .streams()
                    .map_err(|e| format!("channel {name}: {}", chain(&e)))?;
                let mut lines = MergedLines::new(streams).map_err(|e| chain(&e))?;
                let mut ch = c.channel();
                let channel: Arc<str> = Arc::from(name.as_str());
                let mut now = 0;
                while let Some(p) = lines.next().map_err(|e| chain(&e))? {
                    now = p.ts_ns;
                    let at = gather.at();
                    at.now_ns = now;
                    if !Arc::ptr_eq(&at.channel, &channel) {
                        at.channel = channel.clone();
                    }
                    ch.on_packet(p.line, p.bytes, now, gather);
                }
                ch.finish(now.saturating_add(1_000_000_000), gather);
                for l in lines.lines() {
                    if let Some(d) = l.damage() {
                        damage.push(format!("channel {name} line {}: {d}", l.line().name()));
                    }
                }
                let fields: serde_json::Map<String, serde_json::Value> = ch
                    .stats()
                    .fields()
                    .into_iter()
                    .map(|(k, v)| (k, v.into()))
                    .collect();
                counters.push((name.clone(), serde_json::Value::Object(fields).to_string()));
            }
            Ok((counters, damage))
        })
        .map_err(PyValueError::new_err)?;
    for d in damage {
        crate::warn(
            py,
            &format!("fastfeed: stopped early, the rest unread: {d}"),
        )?;
    }
    Ok(counters)
}

/// `batch` as a pyarrow.Table, each channel's counters in its schema's metadata.
fn table_with_counters(
    py: Python<'_>,
    batch: RecordBatch,
    counters: Vec<(String, String)>,
) -> PyResult<Py<PyAny>> {
    let metadata: std::collections::HashMap<String, String> = counters
        .into_iter()
        .map(|(name, json)| (format!("fastfeed.counters.{name}"), json))
        .collect();
    let schema = Arc::new(batch.schema().as_ref().clone().with_metadata(metadata));
    let batch = batch
        .with_schema(schema.clone())
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let table = arrow_pyarrow::Table::try_new(vec![batch], schema)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(PyArrowType(table).into_pyobject(py)?.unbind())
}

/// Runs every channel of the feed configured in `config` over its capture files, as
/// `fastfeed handle CONFIG --captures` does: lines A and B arbitrated, gaps held and
/// recovered from the snapshot line, a book per instrument. Returns a pyarrow.Table with a
/// row per book change: time (the packet's: its pcap timestamp, or its SendingTime for a
/// raw or len32le capture), channel, security, rpt_seq, msg_seq_num, state (live, stale,
/// unknown), from_snapshot, then for each of the `depth` best levels a side
/// bid_price_K / bid_size_K / bid_orders_K and offer_price_K / ... (null past the book's
/// end; prices decimal128, exact). `securities` keeps those instruments' rows only. The
/// schema's metadata holds each channel's counters as JSON (`fastfeed.counters.<channel>`:
/// gaps, recoveries, stale periods, rejected packets, as `handle --report-json` writes
/// them). A capture file damaged part-way is read up to the damage, with a RuntimeWarning.
#[pyfunction]
#[pyo3(signature = (config, *, depth = 5, securities = None))]
pub fn read_books(
    py: Python<'_>,
    config: PathBuf,
    depth: usize,
    securities: Option<Vec<u64>>,
) -> PyResult<Py<PyAny>> {
    if depth == 0 || depth > 64 {
        return Err(PyValueError::new_err("depth must be 1..=64"));
    }
    let mut rows = Rows {
        depth,
        only: securities.map(|s| s.into_iter().collect()),
        ..Rows::default()
    };
    let counters = replay(py, &config, &mut rows)?;
    let batch = rows.into_batch().map_err(PyValueError::new_err)?;
    table_with_counters(py, batch, counters)
}

/// The trades handed on while the handler runs.
#[derive(Default)]
struct Trades {
    only: Option<HashSet<u64>>,
    at: At,
    head: Head,
    price: Vec<Option<Decimal>>,
    size: Vec<i64>,
    aggressor: Vec<Option<&'static str>>,
    scale: i32,
}

impl Gather for Trades {
    fn at(&mut self) -> &mut At {
        &mut self.at
    }
}

impl Output for Trades {
    fn trade(&mut self, t: &Trade, msg_seq_num: Option<u64>) {
        if self.only.as_ref().is_some_and(|s| !s.contains(&t.security)) {
            return;
        }
        if let Some(p) = t.price {
            self.scale = self.scale.max(-p.exponent);
        }
        self.head.push(&self.at, t.security, t.rpt_seq, msg_seq_num);
        self.price.push(t.price);
        self.size.push(t.size);
        self.aggressor.push(t.aggressor.map(|s| match s {
            Side::Bid => "buy",
            Side::Offer => "sell",
        }));
    }
}

impl Trades {
    fn into_batch(self) -> Result<RecordBatch, String> {
        let scale = check_scale(self.scale)?;
        let (mut fields, mut cols) = self.head.finish();
        fields.push(Field::new(
            "price",
            DataType::Decimal128(38, scale as i8),
            true,
        ));
        fields.push(Field::new("size", DataType::Int64, false));
        fields.push(Field::new("aggressor", DataType::Utf8, true));
        let mut price = Decimal128Builder::with_capacity(self.price.len())
            .with_precision_and_scale(38, scale as i8)
            .map_err(|e| e.to_string())?;
        for p in &self.price {
            match p {
                Some(p) => price.append_value(
                    scaled(*p, scale)
                        .ok_or_else(|| format!("the price {p} does not fit scale {scale}"))?,
                ),
                None => price.append_null(),
            }
        }
        cols.push(Arc::new(price.finish()));
        cols.push(Arc::new(arrow_array::Int64Array::from(self.size)));
        cols.push(Arc::new(
            self.aggressor
                .iter()
                .copied()
                .collect::<arrow_array::StringArray>(),
        ));
        RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).map_err(|e| e.to_string())
    }
}

/// Runs a feed's captures through the feed handler as [`read_books`] does, and returns a
/// pyarrow.Table with a row per trade the handler hands on (each once, whichever line
/// brought it first): time, channel, security, rpt_seq, msg_seq_num, price (decimal128,
/// exact; null where the feed sent none), size, aggressor (buy, sell, or null where not
/// given). `securities` keeps those instruments' rows only; the schema's metadata holds
/// each channel's counters as in `read_books`.
#[pyfunction]
#[pyo3(signature = (config, *, securities = None))]
pub fn read_trades(
    py: Python<'_>,
    config: PathBuf,
    securities: Option<Vec<u64>>,
) -> PyResult<Py<PyAny>> {
    let mut trades = Trades {
        only: securities.map(|s| s.into_iter().collect()),
        ..Trades::default()
    };
    let counters = replay(py, &config, &mut trades)?;
    let batch = trades.into_batch().map_err(PyValueError::new_err)?;
    table_with_counters(py, batch, counters)
}

/// The security id fastfeed gives an instrument that its venue names by Symbol (55) and,
/// where it sends one, TradingSessionID (336), as MOEX's ASTS markets do: what the `security`
/// column of `read_books` and `read_trades` holds for it, and what `securities=` takes. The
/// same on every run and host; its top bit is set, so it never equals a numeric SecurityID
/// of up to 63 bits.
#[pyfunction]
#[pyo3(signature = (symbol, session = None))]
pub fn symbol_security(symbol: &str, session: Option<&str>) -> u64 {
    fastfeed_events::symbol_security(symbol, session)
}

/// An error and its causes, as one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}
