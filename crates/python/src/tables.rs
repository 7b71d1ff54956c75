//! `read_table`, `read_tables`, `read_batches`: files to pyarrow tables, built in Rust by
//! fastfeed-arrow and handed over through the Arrow C data interface (no Python object per
//! value). The decoding runs with the GIL released.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_pyarrow::{IntoPyArrow, PyArrowType};
use arrow_schema::{ArrowError, SchemaRef};
use fastfeed_arrow::{
    collect_table_parallel, collect_tables_parallel, with_scale_retry, BatchReader, Blocking,
    OnError, ParallelTable, ParallelTables, Skipped, TableBuilder, TableError, TableOptions,
    TableSet,
};
use fastfeed_codec::template::Kind;
use fastfeed_packet::Framing;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::table_error;
use crate::stream::{skip_errors, Input};
use crate::Templates;

/// The templates argument: a Templates object or the path of a template file.
fn templates_of(py: Python<'_>, t: &Bound<'_, PyAny>) -> PyResult<Arc<fastfeed_codec::Templates>> {
    if let Ok(t) = t.cast::<Templates>() {
        return Ok(t.get().inner.clone());
    }
    let path: std::path::PathBuf = t.extract()?;
    Ok(Templates::from_file(py, path)?.inner)
}

/// The template to table: the one named, else the only one (with `entries`, the only one
/// that has that sequence).
fn pick<'t>(
    ts: &'t fastfeed_codec::Templates,
    template: Option<&str>,
    entries: Option<&str>,
) -> PyResult<&'t fastfeed_codec::Template> {
    if let Some(name) = template {
        return ts
            .lookup(name)
            .map_err(|e| PyValueError::new_err(e.to_string()));
    }
    let fits: Vec<_> = ts
        .iter()
        .filter(|t| {
            entries.is_none_or(|e| {
                t.body
                    .instrs
                    .iter()
                    .any(|i| i.name == e && matches!(i.kind, Kind::Sequence { .. }))
            })
        })
        .collect();
    match fits.as_slice() {
        [one] => Ok(one),
        _ => Err(PyValueError::new_err(format!(
            "say which template: template= one of {:?}",
            fits.iter().map(|t| t.name.as_str()).collect::<Vec<_>>()
        ))),
    }
}

fn warn_skipped(py: Python<'_>, skipped: &Skipped) -> PyResult<()> {
    if skipped.count == 0 {
        return Ok(());
    }
    let first = skipped
        .first
        .first()
        .map(|e| e.to_string())
        .unwrap_or_default();
    let msg = format!(
        "fastfeed: {} decode errors skipped; the first: {first}",
        skipped.count
    );
    crate::warn(py, &msg)
}

struct Args {
    input: Input,
    opts: TableOptions,
    batch_rows: usize,
    on_error: OnError,
}

impl Args {
    /// How blocks of packets decode on `threads` workers, with these options.
    fn blocking<'a>(
        &self,
        opts: &TableOptions,
        new_decoder: &'a (dyn Fn() -> fastfeed_codec::Decoder + Sync),
        threads: usize,
    ) -> Blocking<'a> {
        Blocking {
            opts: opts.clone(),
            batch_rows: self.batch_rows,
            on_error: self.on_error,
            new_decoder,
            packet: self.input.packet,
            max_packet: fastfeed_packet::DEFAULT_MAX_PACKET,
            threads,
            block_bytes: fastfeed_arrow::BLOCK_BYTES,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn args(
    path: std::path::PathBuf,
    entries: Option<String>,
    framing: &str,
    udp: Option<&str>,
    skip_header: usize,
    reset_each_packet: bool,
    strict: bool,
    batch_rows: usize,
    decimal_scale: Option<i8>,
    errors: &str,
) -> PyResult<Args> {
    Ok(Args {
        input: Input::new(path, framing, udp, skip_header, reset_each_packet, strict)?,
        opts: TableOptions {
            entries,
            decimal_scale,
            ..Default::default()
        },
        batch_rows,
        on_error: if skip_errors(errors)? {
            OnError::Skip
        } else {
            OnError::Stop
        },
    })
}

type Collected = (Vec<RecordBatch>, SchemaRef, Skipped);

/// Decodes a whole file into one template's batches, widening decimal scales as needed: on
/// `threads` workers, blocks of packets at a time, where every packet resets the
/// dictionaries.
fn collect(
    ts: &Arc<fastfeed_codec::Templates>,
    template: &fastfeed_codec::Template,
    a: &Args,
    threads: usize,
) -> Result<Collected, TableError> {
    let new_decoder =
        || fastfeed_codec::Decoder::with_options(ts.clone(), crate::options(a.input.strict));
    with_scale_retry(&a.opts, |opts| {
        let (mut source, framing) = a.input.source()?;
        if threads > 1 && a.input.packet.reset_each_packet && framing == Framing::Len32Le {
            let cfg = ParallelTable {
                template,
                blocks: a.blocking(opts, &new_decoder, threads),
            };
            if let Some(t) = collect_table_parallel(source, &cfg, |_| {})? {
                return Ok((t.batches, t.schema, t.skipped));
            }
            // No row in the first block to learn the schema from: one thread, from the start.
            source = a.input.source()?.0;
        }
        let stream = a.input.stream(source, framing, ts);
        let t = TableBuilder::new(template, opts)?.batch_rows(a.batch_rows);
        let mut r = BatchReader::new(stream, t, a.on_error)?;
        let mut batches = Vec::new();
        while let Some(b) = r.next_batch()? {
            batches.push(b);
        }
        let schema = r.table().schema();
        Ok((batches, schema, r.take_skipped()))
    })
}

/// Reads a file of FAST data into a pyarrow.Table of one template's messages: a row per
/// message (sequences as lists of structs), or with `entries="MDEntries"` a row per entry of
/// that sequence with the message's fields repeated. Columns are typed from the template:
/// uInt32 -> uint32, int64 -> int64, decimal -> decimal128(38, scale), string -> string,
/// byteVector -> binary; optional fields are nullable; groups become `Group.Field` columns.
/// A decimal column's scale is the most fraction digits its values have (or
/// `decimal_scale`): every value is exact, none is rounded.
///
/// templates: Templates or the template file's path. template: the template's name, or its
/// id as a string where templates share a name (may be left out when only one template
/// fits). framing: "raw", "len32le", "block" or "pcap" (a capture's
/// UDP payloads are the packets; a capture is also known by its magic number, and read a
/// run of records at a time whatever its size); udp: "GROUP:PORT", only the capture's
/// datagrams sent there; skip_header: bytes of header before each packet's messages; reset_each_packet: reset the dictionaries at each
/// packet. errors: "raise" (DecodeError at the first bad packet) or "skip" (bad packets
/// dropped, counted in a RuntimeWarning; frames of a capture that could not be read, cut
/// short, damaged or fragments never completed, are told in one too). threads: workers decoding blocks of packets at
/// once where each packet resets the dictionaries (len32le or pcap with
/// reset_each_packet=True); 0, the default: one per core, at most 16.
#[pyfunction]
#[pyo3(signature = (templates, path, template = None, *, entries = None, framing = "raw",
    udp = None, skip_header = 0, reset_each_packet = false, strict = false, batch_rows = 65536,
    decimal_scale = None, errors = "raise", threads = 0))]
#[allow(clippy::too_many_arguments)]
pub fn read_table(
    py: Python<'_>,
    templates: &Bound<'_, PyAny>,
    path: std::path::PathBuf,
    template: Option<&str>,
    entries: Option<String>,
    framing: &str,
    udp: Option<&str>,
    skip_header: usize,
    reset_each_packet: bool,
    strict: bool,
    batch_rows: usize,
    decimal_scale: Option<i8>,
    errors: &str,
    threads: usize,
) -> PyResult<Py<PyAny>> {
    let ts = templates_of(py, templates)?;
    let t = pick(&ts, template, entries.as_deref())?;
    let threads = match threads {
        0 => fastfeed_arrow::default_threads(),
        n => n,
    };
    let a = args(
        path,
        entries,
        framing,
        udp,
        skip_header,
        reset_each_packet,
        strict,
        batch_rows,
        decimal_scale,
        errors,
    )?;
    let (batches, schema, skipped) = py
        .detach(|| collect(&ts, t, &a, threads))
        .map_err(|e| explain(py, &a.input, &ts, &e))?;
    warn_skipped(py, &skipped)?;
    a.input.warn_capture_losses(py)?;
    let table =
        arrow_pyarrow::Table::try_new(batches, schema).map_err(|e| table_error(py, &e.into()))?;
    Ok(PyArrowType(table).into_pyobject(py)?.unbind())
}

/// Reads every template's table from a file in one pass (or in blocks of packets on
/// `threads` workers, as read_table): a dict from template name to pyarrow.Table (a name
/// that templates share becomes "name-id" for each), for the templates that have messages
/// and fields. `entries` applies to the
/// templates that have that sequence; the others get a row per message. Arguments as
/// read_table.
#[pyfunction]
#[pyo3(signature = (templates, path, *, entries = None, framing = "raw", udp = None, skip_header = 0,
    reset_each_packet = false, strict = false, batch_rows = 65536, decimal_scale = None,
    errors = "raise", threads = 0))]
#[allow(clippy::too_many_arguments)]
pub fn read_tables<'py>(
    py: Python<'py>,
    templates: &Bound<'py, PyAny>,
    path: std::path::PathBuf,
    entries: Option<String>,
    framing: &str,
    udp: Option<&str>,
    skip_header: usize,
    reset_each_packet: bool,
    strict: bool,
    batch_rows: usize,
    decimal_scale: Option<i8>,
    errors: &str,
    threads: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let ts = templates_of(py, templates)?;
    let threads = match threads {
        0 => fastfeed_arrow::default_threads(),
        n => n,
    };
    let a = args(
        path,
        entries,
        framing,
        udp,
        skip_header,
        reset_each_packet,
        strict,
        batch_rows,
        decimal_scale,
        errors,
    )?;
    let (tables, skipped) = py
        .detach(|| collect_all(&ts, &a, threads))
        .map_err(|e| explain(py, &a.input, &ts, &e))?;
    warn_skipped(py, &skipped)?;
    a.input.warn_capture_losses(py)?;
    let out = PyDict::new(py);
    for (name, (batches, schema)) in tables {
        let table = arrow_pyarrow::Table::try_new(batches, schema)
            .map_err(|e| table_error(py, &e.into()))?;
        out.set_item(name, PyArrowType(table))?;
    }
    Ok(out)
}

type AllTables = (Vec<(String, (Vec<RecordBatch>, SchemaRef))>, Skipped);

/// Decodes a whole file into every template's batches, widening decimal scales as needed:
/// on `threads` workers where every packet resets the dictionaries, as [`collect`].
fn collect_all(
    ts: &Arc<fastfeed_codec::Templates>,
    a: &Args,
    threads: usize,
) -> Result<AllTables, TableError> {
    let new_decoder =
        || fastfeed_codec::Decoder::with_options(ts.clone(), crate::options(a.input.strict));
    with_scale_retry(&a.opts, |opts| {
        let (source, framing) = a.input.source()?;
        if threads > 1 && a.input.packet.reset_each_packet && framing == Framing::Len32Le {
            let cfg = ParallelTables {
                templates: ts,
                blocks: a.blocking(opts, &new_decoder, threads),
            };
            let t = collect_tables_parallel(source, &cfg, |_| {})?;
            let tables = t.tables.into_iter().map(|(n, b, s)| (n, (b, s))).collect();
            return Ok((tables, t.skipped));
        }
        let mut stream = a.input.stream(source, framing, ts);
        let mut set = TableSet::new(ts, opts, a.batch_rows)?;
        let mut skipped = Skipped::default();
        let mut batches: HashMap<usize, Vec<RecordBatch>> = HashMap::new();
        loop {
            let more = set.fill(&mut stream, a.on_error, &mut skipped)?;
            while let Some((i, b)) = set.finish_full()? {
                batches.entry(i).or_default().push(b);
            }
            if !more {
                break;
            }
        }
        for (i, b) in set.finish_all()? {
            batches.entry(i).or_default().push(b);
        }
        let mut out = Vec::new();
        for (i, t) in set.tables().iter().enumerate() {
            let schema = t.schema();
            if t.messages() > 0 && !schema.fields().is_empty() {
                out.push((
                    t.name().to_owned(),
                    (batches.remove(&i).unwrap_or_default(), schema),
                ));
            }
        }
        Ok((out, skipped))
    })
}

/// Streams one template's table as a pyarrow.RecordBatchReader, in bounded memory, for files
/// larger than memory. The first batch is decoded at once; it sets the decimal scales, and a
/// later value needing more fraction digits fails the read (give decimal_scale then).
/// Errors from a later batch come out of pyarrow as its own exceptions (ArrowInvalid), whose
/// message names the skip_header / reset_each_packet to try as DecodeError.hint does.
/// Arguments as read_table.
#[pyfunction]
#[pyo3(signature = (templates, path, template = None, *, entries = None, framing = "raw",
    udp = None, skip_header = 0, reset_each_packet = false, strict = false, batch_rows = 65536,
    decimal_scale = None, errors = "raise"))]
#[allow(clippy::too_many_arguments)]
pub fn read_batches(
    py: Python<'_>,
    templates: &Bound<'_, PyAny>,
    path: std::path::PathBuf,
    template: Option<&str>,
    entries: Option<String>,
    framing: &str,
    udp: Option<&str>,
    skip_header: usize,
    reset_each_packet: bool,
    strict: bool,
    batch_rows: usize,
    decimal_scale: Option<i8>,
    errors: &str,
) -> PyResult<Py<PyAny>> {
    let ts = templates_of(py, templates)?;
    let t = pick(&ts, template, entries.as_deref())?;
    let a = args(
        path,
        entries,
        framing,
        udp,
        skip_header,
        reset_each_packet,
        strict,
        batch_rows,
        decimal_scale,
        errors,
    )?;
    let reader = py
        .detach(|| -> Result<_, TableError> {
            let stream = a.input.open(&ts)?;
            let table = TableBuilder::new(t, &a.opts)?.batch_rows(a.batch_rows);
            BatchReader::new(stream, table, a.on_error)
        })
        .map_err(|e| explain(py, &a.input, &ts, &e))?;
    let reader: Box<dyn RecordBatchReader + Send> = Box::new(Hinted {
        inner: reader,
        input: a.input,
        templates: ts,
    });
    Ok(reader.into_pyarrow(py)?.unbind())
}

/// `read_batches`' reader: a decode error met after the first batch carries the header hint
/// in its message too (pyarrow raises it with that message, not as a `DecodeError`).
struct Hinted<R> {
    inner: BatchReader<R>,
    input: Input,
    templates: Arc<fastfeed_codec::Templates>,
}

/// A table error and what to try, as one message.
#[derive(Debug)]
struct HintedError {
    error: TableError,
    hint: String,
}

impl std::fmt::Display for HintedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; {}", self.error, self.hint)
    }
}

impl std::error::Error for HintedError {}

impl<R: std::io::Read> Iterator for Hinted<R> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let error = match self.inner.next_batch() {
            Ok(batch) => return batch.map(Ok),
            Err(e) => e,
        };
        let hint = match &error {
            TableError::Stream(s) => self.input.hint(&self.templates, s),
            _ => None,
        };
        Some(Err(match hint {
            Some(hint) => ArrowError::ExternalError(Box::new(HintedError { error, hint })),
            None => ArrowError::ExternalError(Box::new(error)),
        }))
    }
}

impl<R: std::io::Read> RecordBatchReader for Hinted<R> {
    fn schema(&self) -> SchemaRef {
        self.inner.table().schema()
    }
}

/// A table error as raised, with the header hint where it is a decode error.
fn explain(
    py: Python<'_>,
    input: &Input,
    ts: &Arc<fastfeed_codec::Templates>,
    e: &TableError,
) -> PyErr {
    let err = table_error(py, e);
    match e {
        TableError::Stream(s) => input.explain(py, ts, s, err),
        _ => err,
    }
}
