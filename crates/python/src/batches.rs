//! `iter_books` and `iter_trades`: the rows of `read_books` and `read_trades` a batch at a
//! time, for captures whose rows do not fit in memory. The replay runs on a thread of its
//! own, a batch ahead of Python at most (bounded memory, and the handler works while Python
//! takes the last batch); dropping the iterator stops it at the next packet.

use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use arrow_array::RecordBatch;
use arrow_pyarrow::PyArrowType;
use arrow_schema::SchemaRef;
use fastfeed_book_table::{replay, BookRows, BookTableError, Replayed, Rows, Streamed, TradeRows};
use fastfeed_feed::FeedConfig;
use pyo3::exceptions::{PyStopIteration, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::books::{chain, warn_damage};

/// What the replay thread hands over.
enum Step {
    Batch(RecordBatch),
    /// The replay ended: its counters and damage, or why it failed.
    Done(Result<Replayed, BookTableError>),
}

/// A feed's book changes or trades, a `pyarrow.RecordBatch` at a time (`iter_books`,
/// `iter_trades`). Every batch has `schema`; `counters` holds each channel's counters once
/// the last batch has been taken.
#[pyclass(module = "fastfeed._native")]
pub struct BatchIter {
    /// In a mutex only so that the class is `Sync`, as pyo3 asks: Python holds the
    /// iterator, one caller at a time.
    rx: Option<Mutex<Receiver<Step>>>,
    /// The first batch, taken to learn the schema.
    first: Option<RecordBatch>,
    schema: SchemaRef,
    counters: Option<Py<PyDict>>,
    thread: Option<JoinHandle<()>>,
}

fn start<R: Rows + 'static>(
    py: Python<'_>,
    config: PathBuf,
    rows: R,
    batch_rows: usize,
    price_scale: Option<i32>,
) -> PyResult<BatchIter> {
    if batch_rows == 0 {
        return Err(PyValueError::new_err("batch_rows must be at least 1"));
    }
    if price_scale.is_some_and(|s| !(0..=18).contains(&s)) {
        return Err(PyValueError::new_err("price_scale must be 0..=18"));
    }
    let feed = FeedConfig::load(&config)
        .map_err(|e| PyValueError::new_err(format!("{}: {}", config.display(), chain(&e))))?;
    let channels = fastfeed_handler::setup(&feed).map_err(|e| PyValueError::new_err(chain(&e)))?;
    // One batch in the channel and one being built: memory stays bounded.
    let (tx, rx) = sync_channel(1);
    let thread = std::thread::Builder::new()
        .name("fastfeed-replay".into())
        .spawn(move || {
            let batches = tx.clone();
            let sink = move |b| {
                batches
                    .send(Step::Batch(b))
                    .map_err(|_| BookTableError::Sink("the reader went away".into()))
            };
            let mut out = Streamed::new(rows, batch_rows, price_scale, sink);
            let done = replay(&channels, &mut out);
            let done = done.and_then(|d| out.finish().map(|()| d));
            let _ = tx.send(Step::Done(done));
        })
        .map_err(|e| PyValueError::new_err(format!("starting the replay: {e}")))?;
    let mut it = BatchIter {
        rx: Some(Mutex::new(rx)),
        first: None,
        schema: Arc::new(arrow_schema::Schema::empty()),
        counters: None,
        thread: Some(thread),
    };
    // The first batch (an empty one if the captures hold no row) gives the schema; a
    // configuration whose captures cannot be read fails here, at the call.
    match it.step(py)? {
        Some(b) => {
            it.schema = b.schema();
            it.first = Some(b);
        }
        None => return Err(PyValueError::new_err("the replay ended without a batch")),
    }
    Ok(it)
}

impl BatchIter {
    /// The next batch; None once the replay has ended (its counters kept, its damage
    /// warned about).
    fn step(&mut self, py: Python<'_>) -> PyResult<Option<RecordBatch>> {
        if let Some(b) = self.first.take() {
            return Ok(Some(b));
        }
        let Some(rx) = &self.rx else { return Ok(None) };
        let step = py.detach(|| {
            rx.lock()
                .map_err(|_| ())
                .and_then(|r| r.recv().map_err(|_| ()))
        });
        match step {
            Ok(Step::Batch(b)) => Ok(Some(b)),
            Ok(Step::Done(done)) => {
                self.end();
                let done = done.map_err(|e| PyValueError::new_err(chain(&e)))?;
                warn_damage(py, &done)?;
                let counters = PyDict::new(py);
                for (name, stats) in done.channels {
                    let fields = PyDict::new(py);
                    for (k, v) in stats.fields() {
                        fields.set_item(k, v)?;
                    }
                    counters.set_item(name, fields)?;
                }
                self.counters = Some(counters.unbind());
                Ok(None)
            }
            Err(_) => {
                self.end();
                Err(PyValueError::new_err(
                    "the replay thread ended without a word",
                ))
            }
        }
    }

    /// Lets the replay thread go: it stops at its next packet once its channel is gone.
    fn end(&mut self) {
        self.rx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for BatchIter {
    fn drop(&mut self) {
        // The thread's next send fails, and the replay stops at the next packet; it is not
        // waited for.
        self.rx = None;
    }
}

#[pymethods]
impl BatchIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.step(py)? {
            Some(b) => Ok(PyArrowType(b).into_pyobject(py)?.unbind()),
            None => Err(PyStopIteration::new_err(())),
        }
    }

    /// The pyarrow.Schema every batch has.
    #[getter]
    fn schema(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(PyArrowType(self.schema.as_ref().clone())
            .into_pyobject(py)?
            .unbind())
    }

    /// Each channel's counters (as `handle --report-json` writes them), by channel name, once
    /// the last batch has been taken; None before.
    #[getter]
    fn counters(&self, py: Python<'_>) -> Option<Py<PyDict>> {
        self.counters.as_ref().map(|c| c.clone_ref(py))
    }
}

/// `read_books`' rows a batch at a time.
#[pyfunction]
#[pyo3(signature = (config, *, depth = 5, securities = None, batch_rows = 65_536, price_scale = None))]
pub fn iter_books(
    py: Python<'_>,
    config: PathBuf,
    depth: usize,
    securities: Option<Vec<u64>>,
    batch_rows: usize,
    price_scale: Option<i32>,
) -> PyResult<BatchIter> {
    if depth == 0 || depth > 64 {
        return Err(PyValueError::new_err("depth must be 1..=64"));
    }
    let rows = BookRows::new(depth, securities.map(|s| s.into_iter().collect()));
    start(py, config, rows, batch_rows, price_scale)
}

/// `read_trades`' rows a batch at a time.
#[pyfunction]
#[pyo3(signature = (config, *, securities = None, batch_rows = 65_536, price_scale = None))]
pub fn iter_trades(
    py: Python<'_>,
    config: PathBuf,
    securities: Option<Vec<u64>>,
    batch_rows: usize,
    price_scale: Option<i32>,
) -> PyResult<BatchIter> {
    let rows = TradeRows::new(securities.map(|s| s.into_iter().collect()));
    start(py, config, rows, batch_rows, price_scale)
}
