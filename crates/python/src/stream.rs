//! Files of FAST data as Python iterators: the framings of the CLI, read in bounded memory.

use std::collections::VecDeque;
use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::sync::Arc;

use fastfeed_codec::{Decoder, Message, MessageBuilder, Templates};
use fastfeed_packet::{Framing, PacketOptions, StreamDecoder};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::stream_error;

/// Where the data is and how it is framed.
pub struct Input {
    pub path: PathBuf,
    pub framing: Framing,
    pub packet: PacketOptions,
    pub strict: bool,
}

impl Input {
    pub fn new(
        path: PathBuf,
        framing: &str,
        skip_header: usize,
        reset_each_packet: bool,
        strict: bool,
    ) -> PyResult<Input> {
        Ok(Input {
            path,
            framing: framing.parse().map_err(PyValueError::new_err)?,
            packet: PacketOptions {
                skip_header,
                reset_each_packet,
            },
            strict,
        })
    }

    pub fn open(
        &self,
        templates: &Arc<Templates>,
    ) -> std::io::Result<StreamDecoder<BufReader<File>>> {
        let file = File::open(&self.path)?;
        let decoder = Decoder::with_options(templates.clone(), crate::options(self.strict));
        Ok(StreamDecoder::new(
            BufReader::with_capacity(1 << 20, file),
            self.framing,
            decoder,
            self.packet,
        ))
    }
}

/// `errors=` of the readers: raise at the first bad packet, or skip and count.
pub fn skip_errors(errors: &str) -> PyResult<bool> {
    match errors {
        "raise" => Ok(false),
        "skip" => Ok(true),
        _ => Err(PyValueError::new_err(format!(
            "errors must be \"raise\" or \"skip\", not {errors:?}"
        ))),
    }
}

/// An iterator over the messages (dicts) of a file. `errors` counts the packets skipped
/// with errors="skip"; `packets` the packets read.
#[pyclass(module = "fastfeed")]
pub struct MessageIter {
    templates: Arc<Templates>,
    stream: StreamDecoder<BufReader<File>>,
    builder: MessageBuilder,
    queue: VecDeque<Message>,
    skip: bool,
    /// An error held back until the messages before it are out.
    pending: Option<fastfeed_packet::StreamError>,
    #[pyo3(get)]
    errors: u64,
}

impl MessageIter {
    pub fn new(templates: Arc<Templates>, input: &Input, errors: &str) -> PyResult<MessageIter> {
        Ok(MessageIter {
            stream: input.open(&templates)?,
            templates,
            builder: MessageBuilder::new(),
            queue: VecDeque::new(),
            skip: skip_errors(errors)?,
            pending: None,
            errors: 0,
        })
    }
}

#[pymethods]
impl MessageIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        while self.queue.is_empty() {
            if let Some(e) = self.pending.take() {
                return Err(stream_error(py, &e));
            }
            let queue = &mut self.queue;
            match self.stream.next_step(&mut self.builder, |b| {
                queue.extend(b.take());
                // A few hundred messages at a time: memory stays bounded on a raw stream.
                queue.len() < 1024
            }) {
                None => return Ok(None),
                Some(Ok(_)) => {}
                Some(Err(_)) if self.skip => self.errors += 1,
                Some(Err(e)) => self.pending = Some(e),
            }
        }
        let m = self.queue.pop_front().expect("not empty");
        Ok(Some(
            crate::convert::message_to_py(py, &m, &self.templates)?.into_any(),
        ))
    }

    /// Packets read so far (a raw stream counts as one).
    #[getter]
    fn packets(&self) -> usize {
        self.stream.packets()
    }
}
