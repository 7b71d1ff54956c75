//! Files of FAST data as Python iterators: the framings of the CLI, read in bounded memory.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddrV4;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use fastfeed_capture::{Len32Payloads, PayloadStats};
use fastfeed_codec::{Decoder, Message, MessageBuilder, Templates};
use fastfeed_packet::{
    guess_header, Framing, HeaderGuess, PacketOptions, StreamDecoder, StreamError,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::stream_error;

/// Where the data is and how it is framed.
pub struct Input {
    pub path: PathBuf,
    pub framing: Framing,
    /// A pcap or pcapng capture (`framing="pcap"`, or known by its magic number): its UDP
    /// payloads, those sent to `udp` when given, are the packets.
    pub pcap: bool,
    pub udp: Option<SocketAddrV4>,
    pub packet: PacketOptions,
    pub strict: bool,
    /// What the last read of a capture found (a read that starts again starts them again).
    capture: Arc<Mutex<PayloadStats>>,
    is_capture: AtomicBool,
}

/// What the decoders read: a file, or a capture's payloads as len32le packets.
pub type Source = Box<dyn Read + Send + Sync>;

impl Input {
    pub fn new(
        path: PathBuf,
        framing: &str,
        udp: Option<&str>,
        skip_header: usize,
        reset_each_packet: bool,
        strict: bool,
    ) -> PyResult<Input> {
        let pcap = framing == "pcap";
        let framing = match pcap {
            true => Framing::Len32Le,
            false => framing.parse().map_err(|e: String| {
                PyValueError::new_err(
                    e.replace("(raw, len32le or block)", "(raw, len32le, block or pcap)"),
                )
            })?,
        };
        let udp = udp
            .map(|u| {
                u.parse().map_err(|_| {
                    PyValueError::new_err(format!("udp must be \"GROUP:PORT\", not {u:?}"))
                })
            })
            .transpose()?;
        Ok(Input {
            path,
            framing,
            pcap,
            udp,
            packet: PacketOptions {
                skip_header,
                reset_each_packet,
            },
            strict,
            capture: Arc::default(),
            is_capture: AtomicBool::new(false),
        })
    }

    /// What the capture held, once it has been read (as far as it has been); None when the
    /// input is not a capture.
    pub fn capture_stats(&self) -> Option<PayloadStats> {
        self.is_capture
            .load(Ordering::Relaxed)
            .then(|| *self.capture.lock().expect("not poisoned"))
    }

    /// A RuntimeWarning when frames of the capture could not be read whole (cut short,
    /// damaged, fragments never completed): they are not in the result.
    pub fn warn_capture_losses(&self, py: Python<'_>) -> PyResult<()> {
        match self.capture_stats() {
            Some(s) if s.capture.lost() > 0 || s.capture.damaged_at.is_some() => {
                crate::warn(py, &format!("fastfeed: data lost in the capture: {s}"))
            }
            _ => Ok(()),
        }
    }

    pub fn open(&self, templates: &Arc<Templates>) -> std::io::Result<StreamDecoder<Source>> {
        let (source, framing) = self.source()?;
        Ok(self.stream(source, framing, templates))
    }

    /// A fresh decoder over bytes `source` opened.
    pub fn stream(
        &self,
        source: Source,
        framing: Framing,
        templates: &Arc<Templates>,
    ) -> StreamDecoder<Source> {
        let decoder = Decoder::with_options(templates.clone(), crate::options(self.strict));
        StreamDecoder::new(source, framing, decoder, self.packet)
    }

    /// The bytes the decoder reads, and their framing.
    pub fn source(&self) -> std::io::Result<(Source, Framing)> {
        self.source_counted(true)
    }

    /// [`source`](Input::source), a capture's counts kept for [`capture_stats`] if `count`.
    fn source_counted(&self, count: bool) -> std::io::Result<(Source, Framing)> {
        let mut file = BufReader::with_capacity(1 << 20, File::open(&self.path)?);
        let pcap = self.pcap || fastfeed_capture::is_capture(file.fill_buf()?);
        Ok(if pcap {
            let payloads = Len32Payloads::new(file, self.udp)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
            if !count {
                return Ok((Box::new(payloads), Framing::Len32Le));
            }
            let payloads = payloads.counting_into(self.capture.clone());
            self.is_capture.store(true, Ordering::Relaxed);
            (Box::new(payloads) as Source, Framing::Len32Le)
        } else if self.udp.is_some() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "udp= selects the datagrams of a pcap capture, and {} is not one",
                    self.path.display()
                ),
            ));
        } else {
            (Box::new(file), self.framing)
        })
    }
}

impl Input {
    /// The packet header (and reset) with which the input's first 32 packets decode, where
    /// the options given do worse: what a `DecodeError` adds as its hint. None for a raw
    /// stream, or where nothing does better.
    pub fn header_guess(&self, templates: &Arc<Templates>) -> Option<HeaderGuess> {
        let (source, framing) = self.source_counted(false).ok()?;
        if framing == Framing::Raw {
            return None;
        }
        let mut start = Vec::new();
        source.take(1 << 20).read_to_end(&mut start).ok()?;
        let packets: Vec<&[u8]> = framing
            .packets(&start)
            .map_while(Result::ok)
            .map(|p| p.bytes)
            .filter(|b| b.len() <= 16 << 10)
            .take(32)
            .collect();
        let opts = crate::options(self.strict);
        guess_header(templates, &packets, self.packet, &opts)
    }

    /// `err`, raised for `e`, with the header hint where `e` is a decode error and the first
    /// packets decode better with other options (`skip_header=`, `reset_each_packet=`).
    pub fn explain(
        &self,
        py: Python<'_>,
        templates: &Arc<Templates>,
        e: &StreamError,
        err: PyErr,
    ) -> PyErr {
        match self.hint(templates, e) {
            Some(hint) => crate::errors::with_hint(py, err, &hint),
            None => err,
        }
    }

    /// What to try for `e`: the header hint in Python's terms, where `e` is a decode error
    /// and the first packets decode better with other options; None otherwise.
    pub fn hint(&self, templates: &Arc<Templates>, e: &StreamError) -> Option<String> {
        if !matches!(e, StreamError::Decode(_)) {
            return None;
        }
        self.header_guess(templates).map(|g| python_hint(&g))
    }
}

/// The guess in Python's terms.
fn python_hint(g: &HeaderGuess) -> String {
    format!(
        "the first packets decode with skip_header={}{} ({} of {} whole, against {} as given)",
        g.options.skip_header,
        if g.options.reset_each_packet {
            ", reset_each_packet=True"
        } else {
            ""
        },
        g.whole,
        g.tried,
        g.whole_as_given
    )
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
/// with errors="skip"; `packets` the packets read; `capture` what a capture held.
#[pyclass(module = "fastfeed")]
pub struct MessageIter {
    templates: Arc<Templates>,
    input: Input,
    stream: StreamDecoder<Source>,
    builder: MessageBuilder,
    queue: VecDeque<Message>,
    skip: bool,
    /// An error held back until the messages before it are out.
    pending: Option<fastfeed_packet::StreamError>,
    #[pyo3(get)]
    errors: u64,
}

impl MessageIter {
    pub fn new(templates: Arc<Templates>, input: Input, errors: &str) -> PyResult<MessageIter> {
        Ok(MessageIter {
            stream: input.open(&templates)?,
            input,
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
                let err = stream_error(py, &e);
                return Err(self.input.explain(py, &self.templates, &e, err));
            }
            let queue = &mut self.queue;
            match self.stream.next_step(&mut self.builder, |b| {
                queue.extend(b.take());
                // A few hundred messages at a time: memory stays bounded on a raw stream.
                queue.len() < 1024
            }) {
                None => {
                    self.input.warn_capture_losses(py)?;
                    return Ok(None);
                }
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

    /// What the capture held, as read so far: a dict of counts (frames, datagrams, selected,
    /// truncated, fragments, reassembled, fragments_lost, not_udp, bad_frames,
    /// unsupported_link, other_blocks, bytes, and damaged_at: a byte offset or None). None
    /// when the input is not a capture.
    #[getter]
    fn capture<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, pyo3::types::PyDict>>> {
        let Some(p) = self.input.capture_stats() else {
            return Ok(None);
        };
        let s = &p.capture;
        let d = pyo3::types::PyDict::new(py);
        for (k, v) in [
            ("frames", s.frames),
            ("datagrams", s.datagrams),
            ("selected", p.selected),
            ("truncated", s.truncated),
            ("fragments", s.fragments),
            ("reassembled", s.reassembled),
            ("fragments_lost", s.fragments_lost),
            ("not_udp", s.not_udp),
            ("bad_frames", s.bad_frames),
            ("unsupported_link", s.unsupported_link),
            ("other_blocks", s.other_blocks),
            ("bytes", p.bytes),
        ] {
            d.set_item(k, v)?;
        }
        d.set_item("damaged_at", s.damaged_at)?;
        Ok(Some(d))
    }
}
