//! A feed's captures through the feed handler (A/B arbitration, gaps, snapshot recovery,
//! books), as `fastfeed handle --captures` runs them, into Arrow record batches: a row per
//! book change ([`BookRows`]) or per trade ([`TradeRows`]), the best levels a side with exact
//! decimal128 prices. Python's `read_books`/`read_trades` and `fastfeed books` use it.

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;

use arrow_array::builder::{
    Decimal128Builder, Int64Builder, StringBuilder, TimestampNanosecondBuilder, UInt32Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use fastfeed_book::Level;
use fastfeed_codec::Decimal;
use fastfeed_events::{Side, Trade};
use fastfeed_handler::{BookView, ChannelSetup, ChannelStats, Output};

/// Why a replay or its table failed.
#[derive(Debug, thiserror::Error)]
pub enum BookTableError {
    /// A line's capture cannot be opened or read.
    #[error("channel {channel}: {source}")]
    Source {
        channel: String,
        source: fastfeed_handler::source::SourceError,
    },
    /// A price that no decimal128 column of at most 18 fraction digits holds.
    #[error("{0}")]
    Price(String),
    /// Arrow refused the columns.
    #[error(transparent)]
    Arrow(#[from] arrow_schema::ArrowError),
    /// What a batch was handed to (a [`Streamed`] sink: a file writer) failed.
    #[error("{0}")]
    Sink(String),
}

/// Most fraction digits a price column takes: decimal128's 38 digits less an i64 mantissa's
/// 19 and a margin.
const MAX_SCALE: i32 = 18;

/// One level of one side: (price, size, orders); None past the book's end.
type Slot = Option<(Decimal, i64, Option<u32>)>;

/// The book changes gathered while the handler runs.
#[derive(Default)]
pub struct BookRows {
    depth: usize,
    only: Option<HashSet<u64>>,
    at: At,
    head: Head,
    state: Vec<&'static str>,
    from_snapshot: Vec<bool>,
    /// `depth` slots a row, best first: no allocation per row.
    bids: Vec<Slot>,
    offers: Vec<Slot>,
    /// Most fraction digits of any price kept.
    scale: i32,
}

/// `levels`' best `depth` into `slots`; the most fraction digits among their prices and
/// `digits`.
fn side(slots: &mut Vec<Slot>, levels: &[Level], depth: usize, digits: i32) -> i32 {
    let mut digits = digits;
    for k in 0..depth {
        slots.push(levels.get(k).map(|l| {
            digits = digits.max(-l.price.exponent);
            (l.price, l.size, l.orders)
        }));
    }
    digits
}

/// Where a replay stands: the time and channel of the packet the handler is taking.
#[derive(Default)]
pub struct At {
    /// The packet's time.
    pub now_ns: u64,
    /// Its channel.
    pub channel: Arc<str>,
}

/// What a replay gathers: an output told where the replay stands before each packet.
pub trait Gather: Output + Send {
    /// Where the replay stands, to be set before each packet.
    fn at(&mut self) -> &mut At;
    /// Whether the replay should stop (what the rows go to has failed or gone): it then
    /// ends at the next packet.
    fn stopped(&self) -> bool {
        false
    }
}

impl Gather for BookRows {
    fn at(&mut self) -> &mut At {
        &mut self.at
    }
}

impl Output for BookRows {
    fn book(&mut self, v: &BookView<'_>) {
        if self.only.as_ref().is_some_and(|s| !s.contains(&v.security)) {
            return;
        }
        self.scale = side(&mut self.bids, v.book.bids(), self.depth, self.scale);
        self.scale = side(&mut self.offers, v.book.offers(), self.depth, self.scale);
        self.head
            .push(&self.at, v.security, v.rpt_seq, v.msg_seq_num);
        self.state.push(v.state.name());
        self.from_snapshot.push(v.from_snapshot);
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
fn check_scale(digits: i32) -> Result<i32, BookTableError> {
    if digits > MAX_SCALE {
        return Err(BookTableError::Price(format!(
            "a price has {digits} fraction digits; at most {MAX_SCALE} fit a price column"
        )));
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

impl BookRows {
    /// The rows gathered, as one record batch.
    pub fn into_batch(mut self) -> Result<RecordBatch, BookTableError> {
        let scale = check_scale(self.scale)?;
        self.batch_at(scale)
    }

    /// The rows gathered so far as a batch with prices of `scale` fraction digits, taken
    /// out (the gathering goes on empty).
    fn batch_at(&mut self, scale: i32) -> Result<RecordBatch, BookTableError> {
        let n = self.head.len();
        let (mut fields, mut cols) = std::mem::take(&mut self.head).finish();
        let (bids, offers) = (
            std::mem::take(&mut self.bids),
            std::mem::take(&mut self.offers),
        );
        let state = std::mem::take(&mut self.state);
        let from_snapshot = std::mem::take(&mut self.from_snapshot);
        fields.push(Field::new("state", DataType::Utf8, false));
        fields.push(Field::new("from_snapshot", DataType::Boolean, false));
        cols.push(Arc::new(
            state
                .iter()
                .copied()
                .map(Some)
                .collect::<arrow_array::StringArray>(),
        ));
        cols.push(Arc::new(
            from_snapshot
                .iter()
                .map(|&b| Some(b))
                .collect::<arrow_array::BooleanArray>(),
        ));
        let price = DataType::Decimal128(38, scale as i8);
        for (name, sides) in [("bid", &bids), ("offer", &offers)] {
            for k in 0..self.depth {
                let mut px = Decimal128Builder::with_capacity(n)
                    .with_precision_and_scale(38, scale as i8)?;
                let mut size = Int64Builder::with_capacity(n);
                let mut orders = UInt32Builder::with_capacity(n);
                for slot in sides.iter().skip(k).step_by(self.depth) {
                    match *slot {
                        Some((p, s, o)) => {
                            let p = scaled(p, scale).ok_or_else(|| {
                                BookTableError::Price(format!(
                                    "the price {p} does not fit scale {scale}"
                                ))
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
        Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
    }
}

/// The trades handed on while the handler runs.
#[derive(Default)]
pub struct TradeRows {
    only: Option<HashSet<u64>>,
    at: At,
    head: Head,
    price: Vec<Option<Decimal>>,
    size: Vec<i64>,
    aggressor: Vec<Option<&'static str>>,
    scale: i32,
}

impl Gather for TradeRows {
    fn at(&mut self) -> &mut At {
        &mut self.at
    }
}

impl Output for TradeRows {
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

impl TradeRows {
    /// The trades gathered, as one record batch.
    pub fn into_batch(mut self) -> Result<RecordBatch, BookTableError> {
        let scale = check_scale(self.scale)?;
        self.batch_at(scale)
    }

    /// As [`BookRows::batch_at`].
    fn batch_at(&mut self, scale: i32) -> Result<RecordBatch, BookTableError> {
        let (mut fields, mut cols) = std::mem::take(&mut self.head).finish();
        let prices = std::mem::take(&mut self.price);
        let sizes = std::mem::take(&mut self.size);
        let aggressors = std::mem::take(&mut self.aggressor);
        fields.push(Field::new(
            "price",
            DataType::Decimal128(38, scale as i8),
            true,
        ));
        fields.push(Field::new("size", DataType::Int64, false));
        fields.push(Field::new("aggressor", DataType::Utf8, true));
        let mut price = Decimal128Builder::with_capacity(prices.len())
            .with_precision_and_scale(38, scale as i8)?;
        for p in &prices {
            match p {
                Some(p) => price.append_value(scaled(*p, scale).ok_or_else(|| {
                    BookTableError::Price(format!("the price {p} does not fit scale {scale}"))
                })?),
                None => price.append_null(),
            }
        }
        cols.push(Arc::new(price.finish()));
        cols.push(Arc::new(arrow_array::Int64Array::from(sizes)));
        cols.push(Arc::new(
            aggressors
                .iter()
                .copied()
                .collect::<arrow_array::StringArray>(),
        ));
        Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
    }
}

impl BookRows {
    /// Book changes of every instrument (or of `only`'s), the best `depth` levels a side.
    pub fn new(depth: usize, only: Option<HashSet<u64>>) -> BookRows {
        BookRows {
            depth,
            only,
            ..BookRows::default()
        }
    }
}

impl TradeRows {
    /// Trades of every instrument (or of `only`'s).
    pub fn new(only: Option<HashSet<u64>>) -> TradeRows {
        TradeRows {
            only,
            ..TradeRows::default()
        }
    }
}

/// Rows that can be handed on in batches ([`Streamed`]).
pub trait Rows: Gather {
    /// Rows gathered and not yet handed on.
    fn len(&self) -> usize;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Most fraction digits of any price seen so far.
    fn digits(&self) -> i32;
    /// The rows gathered so far as a batch of prices with `scale` fraction digits, taken
    /// out.
    fn take_batch(&mut self, scale: i32) -> Result<RecordBatch, BookTableError>;
}

macro_rules! rows {
    ($($t:ty),*) => {$(
        impl Rows for $t {
            fn len(&self) -> usize {
                self.head.len()
            }
            fn digits(&self) -> i32 {
                self.scale
            }
            fn take_batch(&mut self, scale: i32) -> Result<RecordBatch, BookTableError> {
                self.batch_at(scale)
            }
        }
    )*};
}

rows!(BookRows, TradeRows);

/// Rows handed to `sink` a batch of `batch_rows` at a time, so memory stays bounded however
/// long the capture. Every batch has one schema: the prices' scale is given, or fixed by the
/// first batch (a session starts with a snapshot of every instrument, so its first rows
/// show every instrument's prices); a later price with more fraction digits ends the run
/// with an error that names the scale to give.
pub struct Streamed<R, S> {
    rows: R,
    batch_rows: usize,
    scale: Option<i32>,
    sink: S,
    error: Option<BookTableError>,
    written: bool,
}

impl<R: Rows, S: FnMut(RecordBatch) -> Result<(), BookTableError> + Send> Streamed<R, S> {
    /// `rows` to `sink` in batches of `batch_rows`, prices with `scale` fraction digits
    /// (else as the first batch needs).
    pub fn new(rows: R, batch_rows: usize, scale: Option<i32>, sink: S) -> Self {
        Streamed {
            rows,
            batch_rows: batch_rows.max(1),
            scale,
            sink,
            error: None,
            written: false,
        }
    }

    fn flush(&mut self) {
        let digits = self.rows.digits().max(0);
        let scale = *self.scale.get_or_insert(digits);
        let batch = if digits > scale {
            Err(BookTableError::Price(format!(
                "a price has {digits} fraction digits, more than the {scale} of the table's \
                 price columns (fixed by its first rows): give a price scale of {digits}"
            )))
        } else {
            check_scale(scale).and_then(|s| self.rows.take_batch(s))
        };
        match batch.and_then(|b| (self.sink)(b)) {
            Ok(()) => self.written = true,
            Err(e) => self.error = Some(e),
        }
    }

    fn check(&mut self) {
        if self.rows.len() >= self.batch_rows {
            self.flush();
        }
    }

    /// Hands on the last rows (an empty batch if none came, so the table has its schema);
    /// the first error met, if any.
    pub fn finish(mut self) -> Result<(), BookTableError> {
        if self.error.is_none() && (!self.rows.is_empty() || !self.written) {
            self.flush();
        }
        self.error.map_or(Ok(()), Err)
    }
}

impl<R: Rows, S: FnMut(RecordBatch) -> Result<(), BookTableError> + Send> Output
    for Streamed<R, S>
{
    fn book(&mut self, view: &BookView<'_>) {
        if self.error.is_none() {
            self.rows.book(view);
            self.check();
        }
    }

    fn trade(&mut self, trade: &Trade, msg_seq_num: Option<u64>) {
        if self.error.is_none() {
            self.rows.trade(trade, msg_seq_num);
            self.check();
        }
    }
}

impl<R: Rows, S: FnMut(RecordBatch) -> Result<(), BookTableError> + Send> Gather
    for Streamed<R, S>
{
    fn at(&mut self) -> &mut At {
        self.rows.at()
    }
    fn stopped(&self) -> bool {
        self.error.is_some()
    }
}

/// What a replay of captures found besides its rows.
pub struct Replayed {
    /// Each channel's name and counters.
    pub channels: Vec<(String, ChannelStats)>,
    /// Lines whose capture was damaged part-way: read up to the damage, which this names.
    pub damage: Vec<String>,
}

/// Runs every channel over its capture files into `gather`, as `fastfeed handle
/// --captures` does, until the captures end or `gather` stops.
pub fn replay<G: Gather>(
    channels: &[ChannelSetup],
    gather: &mut G,
) -> Result<Replayed, BookTableError> {
    let mut out = Replayed {
        channels: Vec::new(),
        damage: Vec::new(),
    };
    for c in channels {
        let name = &c.config.name;
        gather.at().channel = Arc::from(name.as_str());
        let (ch, lines) = c
            .run_captures(gather, |g, now| {
                g.at().now_ns = now;
                match g.stopped() {
                    true => ControlFlow::Break(()),
                    false => ControlFlow::Continue(()),
                }
            })
            .map_err(|source| BookTableError::Source {
                channel: name.clone(),
                source,
            })?;
        for l in lines.lines() {
            if let Some(d) = l.damage() {
                out.damage
                    .push(format!("channel {name} line {}: {d}", l.line().name()));
            }
        }
        out.channels.push((name.clone(), ch.stats()));
        if gather.stopped() {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_scale_exactly_or_not_at_all() {
        let d = |m, e| Decimal::new(e, m);
        assert_eq!(scaled(d(13331, 1), 2), Some(13_331_000));
        assert_eq!(scaled(d(-905, -2), 2), Some(-905));
        assert_eq!(
            scaled(d(1, -3), 2),
            None,
            "more fraction digits than the column"
        );
        assert_eq!(scaled(d(i64::MAX, 30), 18), None, "past 38 digits");
        assert_eq!(check_scale(-3).unwrap(), 0);
        assert!(matches!(check_scale(19), Err(BookTableError::Price(_))));
    }
}
