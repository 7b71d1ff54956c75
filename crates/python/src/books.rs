//! `read_books` and `read_trades`: a feed's captures through the feed handler (A/B
//! arbitration, gaps, snapshot recovery, books), as `fastfeed handle --captures` runs them,
//! into one pyarrow table with a row per book change or per trade (built by
//! fastfeed-book-table): the quant's view of a replayed session.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_pyarrow::PyArrowType;
use fastfeed_book_table::{replay, BookRows, Gather, Replayed, TradeRows};
use fastfeed_feed::FeedConfig;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Runs every channel of the feed configured in `config` over its capture files into
/// `gather`, with the GIL released; returns each channel's counters as JSON. A capture
/// damaged part-way is read up to the damage, with a RuntimeWarning.
fn replay_config<G: Gather>(
    py: Python<'_>,
    config: &std::path::Path,
    gather: &mut G,
) -> PyResult<Vec<(String, String)>> {
    let feed = FeedConfig::load(config)
        .map_err(|e| PyValueError::new_err(format!("{}: {}", config.display(), chain(&e))))?;
    let channels = fastfeed_handler::setup(&feed).map_err(|e| PyValueError::new_err(chain(&e)))?;
    let done = py
        .detach(|| replay(&channels, gather))
        .map_err(|e| PyValueError::new_err(chain(&e)))?;
    warn_damage(py, &done)?;
    Ok(done
        .channels
        .into_iter()
        .map(|(name, stats)| {
            let fields: serde_json::Map<String, serde_json::Value> = stats
                .fields()
                .into_iter()
                .map(|(k, v)| (k, v.into()))
                .collect();
            (name, serde_json::Value::Object(fields).to_string())
        })
        .collect())
}

/// Damage met by a replay, each as a RuntimeWarning.
pub(crate) fn warn_damage(py: Python<'_>, done: &Replayed) -> PyResult<()> {
    for d in &done.damage {
        crate::warn(
            py,
            &format!("fastfeed: stopped early, the rest unread: {d}"),
        )?;
    }
    Ok(())
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
    let mut rows = BookRows::new(depth, securities.map(|s| s.into_iter().collect()));
    let counters = replay_config(py, &config, &mut rows)?;
    let batch = rows
        .into_batch()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    table_with_counters(py, batch, counters)
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
    let mut trades = TradeRows::new(securities.map(|s| s.into_iter().collect()));
    let counters = replay_config(py, &config, &mut trades)?;
    let batch = trades
        .into_batch()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
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
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}
