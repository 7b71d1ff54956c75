//! The native module of the `fastfeed` Python package (`fastfeed._native`): thin wrappers
//! over fastfeed-codec, fastfeed-packet and fastfeed-arrow. Tables are built in Rust and
//! handed to pyarrow through the Arrow C data interface.

use std::sync::Arc;

use fastfeed_codec::{DecodeOptions, Decoder as CodecDecoder, Encoder as CodecEncoder};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

// Tables are many large buffers, fresh for every call and freed when Python drops them.
// glibc hands such blocks back to the kernel or keeps them depending on the order of past
// calls, so the next call's pages fault in again or not: on complex30000 a read_table took
// 13.0 or 15.0 ms by the history of the process. mimalloc keeps freed pages for reuse, as
// polars does with jemalloc; only this module's allocations use it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod batches;
mod books;
mod convert;
mod errors;
mod stream;
mod tables;

use errors::{codec_error, encode_error, template_error};

/// A compiled set of FAST templates.
#[pyclass(module = "fastfeed", frozen)]
struct Templates {
    inner: Arc<fastfeed_codec::Templates>,
}

#[pymethods]
impl Templates {
    /// Parses template XML; raises TemplateError with the spec code, line and column.
    #[staticmethod]
    fn from_xml(py: Python<'_>, xml: &str) -> PyResult<Templates> {
        fastfeed_codec::parse_templates(xml)
            .map(|inner| Templates { inner })
            .map_err(|e| template_error(py, &e))
    }

    /// Reads and parses a template XML file, in the encoding it names (a byte-order mark, its
    /// XML declaration, else UTF-8).
    #[staticmethod]
    fn from_file(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Templates> {
        let bytes = std::fs::read(&path)?;
        let xml = fastfeed_codec::template::template_text(&bytes).map_err(|e| {
            pyo3::exceptions::PyValueError::new_err(format!("{}: {e}", path.display()))
        })?;
        Self::from_xml(py, &xml)
    }

    /// The template names, in file order. The FAST session control templates (Reset 120,
    /// Hello, Alert) that every decoder knows without the file are not listed.
    #[getter]
    fn names(&self) -> Vec<String> {
        self.own().map(|t| t.name.clone()).collect()
    }

    /// The template ids, in file order (session control templates left out, as in `names`).
    #[getter]
    fn ids(&self) -> Vec<u32> {
        self.own().map(|t| t.id).collect()
    }

    fn __len__(&self) -> usize {
        self.own().count()
    }

    fn __repr__(&self) -> String {
        let names: Vec<String> = self.own().map(|t| format!("{}={}", t.name, t.id)).collect();
        format!("Templates({})", names.join(", "))
    }
}

impl Templates {
    /// The file's own templates.
    fn own(&self) -> impl Iterator<Item = &fastfeed_codec::template::Template> {
        self.inner.iter().filter(|t| !t.session)
    }
}

/// Decodes FAST messages. Keeps the dictionaries between calls to `decode`, as a stream
/// does; `reset()` clears them.
#[pyclass(module = "fastfeed")]
struct Decoder {
    templates: Arc<fastfeed_codec::Templates>,
    inner: CodecDecoder,
    strict: bool,
}

#[pymethods]
impl Decoder {
    #[new]
    #[pyo3(signature = (templates, *, strict = false))]
    fn new(templates: &Templates, strict: bool) -> Decoder {
        Decoder {
            templates: templates.inner.clone(),
            inner: CodecDecoder::with_options(templates.inner.clone(), options(strict)),
            strict,
        }
    }

    /// Decodes every message in `data` (one stream of messages) into a list of dicts.
    /// Raises DecodeError (code, offset, template, field) at the first bad message.
    fn decode<'py>(&mut self, py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        let mut pos = 0;
        while pos < data.len() {
            let (m, n) = self
                .inner
                .decode_message(&data[pos..])
                .map_err(|e| codec_error(py, &e, 0, pos + e.offset))?;
            out.append(convert::message_to_py(py, &m, &self.templates)?)?;
            pos += n;
        }
        Ok(out)
    }

    /// Resets the dictionaries (what a feed does at a packet start or a reset message).
    fn reset(&mut self) {
        self.inner.reset();
    }

    /// Iterates over the messages of a file, read in bounded memory, with a fresh decoder.
    /// framing: "raw" (one stream of messages), "len32le" (a 4-byte little-endian length
    /// before each packet), "block" (the FAST spec's blocks: a stop-bit size before each) or
    /// "pcap" (a pcap or pcapng capture, whose UDP payloads are the
    /// packets; a capture is also known by its magic number); udp: "GROUP:PORT", only the
    /// capture's datagrams sent there; skip_header: bytes before each packet's messages;
    /// reset_each_packet: reset the dictionaries at each packet start; errors: "raise"
    /// (DecodeError) or "skip" (bad packets are counted in `.errors` and passed over).
    #[pyo3(signature = (path, *, framing = "raw", udp = None, skip_header = 0, reset_each_packet = false, errors = "raise"))]
    fn iter_file(
        &self,
        path: std::path::PathBuf,
        framing: &str,
        udp: Option<&str>,
        skip_header: usize,
        reset_each_packet: bool,
        errors: &str,
    ) -> PyResult<stream::MessageIter> {
        let input = stream::Input::new(
            path,
            framing,
            udp,
            skip_header,
            reset_each_packet,
            self.strict,
        )?;
        stream::MessageIter::new(self.templates.clone(), input, errors)
    }
}

/// A RuntimeWarning from fastfeed, with `msg` (NULs, which a C string cannot hold, as
/// spaces).
fn warn(py: Python<'_>, msg: &str) -> PyResult<()> {
    let msg = std::ffi::CString::new(msg.replace('\0', " ")).expect("no NUL left");
    PyErr::warn(
        py,
        &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(),
        &msg,
        1,
    )
}

fn options(strict: bool) -> DecodeOptions {
    DecodeOptions {
        strict,
        ..Default::default()
    }
}

/// Encodes messages (dicts as the decoder gives them) into the shortest FAST encoding.
/// Keeps the dictionaries between calls; `reset()` clears them.
#[pyclass(module = "fastfeed")]
struct Encoder {
    templates: Arc<fastfeed_codec::Templates>,
    inner: CodecEncoder,
}

#[pymethods]
impl Encoder {
    #[new]
    fn new(templates: &Templates) -> Encoder {
        Encoder {
            templates: templates.inner.clone(),
            inner: CodecEncoder::new(templates.inner.clone()),
        }
    }

    /// Encodes a message dict or an iterable of them into one stream of bytes.
    fn encode<'py>(
        &mut self,
        py: Python<'py>,
        messages: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let mut out = Vec::new();
        if messages.is_instance_of::<pyo3::types::PyDict>() {
            self.encode_one(py, messages, &mut out)?;
        } else {
            for m in messages.try_iter()? {
                self.encode_one(py, &m?, &mut out)?;
            }
        }
        Ok(PyBytes::new(py, &out))
    }

    fn reset(&mut self) {
        self.inner.reset();
    }
}

impl Encoder {
    fn encode_one(
        &mut self,
        py: Python<'_>,
        m: &Bound<'_, PyAny>,
        out: &mut Vec<u8>,
    ) -> PyResult<()> {
        let msg = convert::message_from_py(m, &self.templates)?;
        self.inner
            .encode(&msg, out)
            .map_err(|e| encode_error(py, &e))
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Templates>()?;
    m.add_class::<Decoder>()?;
    m.add_class::<Encoder>()?;
    m.add_class::<stream::MessageIter>()?;
    m.add_function(wrap_pyfunction!(tables::read_table, m)?)?;
    m.add_function(wrap_pyfunction!(tables::read_tables, m)?)?;
    m.add_function(wrap_pyfunction!(tables::read_batches, m)?)?;
    m.add_function(wrap_pyfunction!(books::read_books, m)?)?;
    m.add_function(wrap_pyfunction!(books::read_trades, m)?)?;
    m.add_function(wrap_pyfunction!(books::symbol_security, m)?)?;
    m.add_function(wrap_pyfunction!(batches::iter_books, m)?)?;
    m.add_function(wrap_pyfunction!(batches::iter_trades, m)?)?;
    m.add_class::<batches::BatchIter>()?;
    m.add("FastError", py.get_type::<errors::FastError>())?;
    m.add("TemplateError", py.get_type::<errors::TemplateError>())?;
    m.add("DecodeError", py.get_type::<errors::DecodeError>())?;
    m.add("EncodeError", py.get_type::<errors::EncodeError>())?;
    m.add("TableError", py.get_type::<errors::TableError>())?;
    Ok(())
}
