//! Lines read while they are handled, so that a day's capture of many gigabytes runs in the
//! memory of a little of each line: a pcap/pcapng capture a megabyte of records at a time
//! ([`fastfeed_capture::CaptureRuns`]), a `len32le` or raw file a packet at a time
//! ([`fastfeed_packet::PacketReader`]; each packet timed by its SendingTime as it is read).
//! [`MergedLines`] hands the lines' packets out in the order of
//! [`merge`](crate::source::merge).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufReader, Read};
use std::net::Ipv4Addr;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use fastfeed_capture::{CaptureRuns, Parts, PayloadStats};
use fastfeed_codec::{Decoder, Templates};
use fastfeed_feed::config::{CaptureFormat, LineConfig, PacketHeader};
use fastfeed_packet::{PacketReader, StreamError};

use crate::settings::LineId;
use crate::source::{SendingTimes, SourceError};

/// One line's packets, in file order, read as they are asked for.
pub struct LineStream {
    line: LineId,
    source: Source,
}

/// How far a [`LineStream`] has read: bytes of its file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadSoFar {
    /// Bytes read.
    pub done: u64,
    /// Bytes in all.
    pub total: u64,
}

enum Source {
    /// A pcap or pcapng file: the selected datagrams of one run of records at a time,
    /// their payloads end to end in `run`.
    Capture {
        path: PathBuf,
        file_len: u64,
        runs: Box<CaptureRuns<BufReader<Parts>>>,
        run: Vec<u8>,
        queue: VecDeque<(u64, Range<usize>)>,
        stats: Arc<Mutex<PayloadStats>>,
        /// The line's sender, where it names one: datagrams from others are not the line's.
        source: Option<Ipv4Addr>,
    },
    /// A `len32le` or raw file: a packet at a time, timed by its SendingTime.
    Framed {
        path: PathBuf,
        file_len: u64,
        packets: Box<PacketReader<Parts>>,
        times: Box<SendingTimes>,
        /// Why the line ended before its file did.
        damage: Option<String>,
    },
}

impl LineStream {
    /// Opens a line's capture, to be read as it is handled: a pcap/pcapng (by `format`, or by
    /// its first bytes), a `len32le` file, or else a raw one.
    pub fn open(
        line: LineId,
        cfg: &LineConfig,
        templates: &Arc<Templates>,
        header: PacketHeader,
    ) -> Result<Self, SourceError> {
        let path = cfg
            .capture
            .as_ref()
            .ok_or(SourceError::NoCapture(line.name()))?;
        let read = |source| SourceError::Read {
            path: path.clone(),
            source,
        };
        let format = match cfg.format {
            Some(f) => f,
            None => {
                let mut head = Vec::with_capacity(4);
                let file = File::open(path).map_err(read)?;
                file.take(4).read_to_end(&mut head).map_err(read)?;
                match fastfeed_capture::is_capture(&head) {
                    true => CaptureFormat::Pcap,
                    false => CaptureFormat::Raw,
                }
            }
        };
        // The capture and the parts that continue it, read as one file.
        let file = Parts::open(path, &cfg.continued).map_err(read)?;
        let file_len = file.len();
        if format != CaptureFormat::Pcap {
            let packets = match format {
                CaptureFormat::Len32le => PacketReader::len32le(file),
                CaptureFormat::Block => PacketReader::block(file),
                _ => PacketReader::raw(file, Decoder::new(templates.clone())),
            };
            return Ok(LineStream {
                line,
                source: Source::Framed {
                    path: path.clone(),
                    file_len,
                    packets: Box::new(packets),
                    times: Box::new(SendingTimes::new(templates, header)),
                    damage: None,
                },
            });
        }
        let runs = CaptureRuns::new(BufReader::new(file), cfg.capture_selector()).map_err(|e| {
            SourceError::Format {
                path: path.clone(),
                message: e.to_string(),
            }
        })?;
        Ok(LineStream {
            line,
            source: Source::Capture {
                path: path.clone(),
                file_len,
                stats: runs.stats(),
                runs: Box::new(runs),
                run: Vec::new(),
                queue: VecDeque::new(),
                source: cfg.source,
            },
        })
    }

    /// Which line.
    pub fn line(&self) -> LineId {
        self.line
    }

    /// The next packet: its bytes replace `out`'s, and its time is returned; None at the
    /// end of the line, or where its file is damaged (a capture's container, which
    /// [`LineStream::capture_stats`] locates; a `len32le` record or raw message, which
    /// [`LineStream::damage`] names). An error only where the file cannot be read.
    pub fn next_into(&mut self, out: &mut Vec<u8>) -> Result<Option<u64>, SourceError> {
        out.clear();
        match &mut self.source {
            Source::Framed {
                path,
                packets,
                times,
                damage,
                ..
            } => match packets.next_packet() {
                Ok(Some(p)) => {
                    out.extend_from_slice(p.bytes);
                    Ok(Some(times.stamp(p.bytes)))
                }
                Ok(None) => Ok(None),
                Err(StreamError::Io(source)) => Err(SourceError::Read {
                    path: path.clone(),
                    source,
                }),
                // The packets before it were handled; the next one's start is unknown.
                Err(e) => {
                    *damage = Some(format!("{}: {e}", path.display()));
                    Ok(None)
                }
            },
            Source::Capture {
                path,
                runs,
                run,
                queue,
                source,
                ..
            } => loop {
                if let Some((ts, range)) = queue.pop_front() {
                    out.extend_from_slice(&run[range]);
                    return Ok(Some(ts));
                }
                run.clear();
                let more = runs
                    .next_run(|d, _| {
                        if source.is_some_and(|s| *d.src.ip() != s) {
                            return;
                        }
                        let start = run.len();
                        run.extend_from_slice(&d.payload);
                        queue.push_back((d.ts_ns, start..run.len()));
                    })
                    .map_err(|source| SourceError::Read {
                        path: path.clone(),
                        source,
                    })?;
                if !more && queue.is_empty() {
                    return Ok(None);
                }
            },
        }
    }

    /// How far it has read.
    pub fn read_so_far(&self) -> ReadSoFar {
        match &self.source {
            Source::Capture {
                stats, file_len, ..
            } => ReadSoFar {
                done: stats.lock().expect("not poisoned").bytes,
                total: *file_len,
            },
            Source::Framed {
                packets, file_len, ..
            } => ReadSoFar {
                done: packets.position() as u64,
                total: *file_len,
            },
        }
    }

    /// For a `len32le` or raw file that ended the line early: what was wrong, and at which
    /// byte (the rest of the file is not read).
    pub fn damage(&self) -> Option<&str> {
        match &self.source {
            Source::Framed { damage, .. } => damage.as_deref(),
            Source::Capture { .. } => None,
        }
    }

    /// For a capture: its frames and datagrams so far, and the datagrams of this line.
    pub fn capture_stats(&self) -> Option<PayloadStats> {
        match &self.source {
            Source::Capture { stats, .. } => Some(*stats.lock().expect("not poisoned")),
            Source::Framed { .. } => None,
        }
    }
}

/// Of the lines' next packet times (None: the line has ended), the line whose packet comes
/// first: the earliest, the first line on a tie. The one rule of [`MergedLines`] and
/// [`merge`](crate::source::merge).
pub(crate) fn earliest(heads: impl Iterator<Item = Option<u64>>) -> Option<usize> {
    heads
        .enumerate()
        .filter_map(|(i, h)| h.map(|t| (t, i)))
        .min()
        .map(|(_, i)| i)
}

/// A packet handed out by [`MergedLines`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinePacket<'a> {
    /// The line it came on.
    pub line: LineId,
    /// Its line's place among the lines given to [`MergedLines::new`].
    pub source: usize,
    /// When it arrived (capture time) or was sent (SendingTime), ns since the epoch.
    pub ts_ns: u64,
    /// Its bytes.
    pub bytes: &'a [u8],
}

/// Several lines' packets in arrival order: the earliest next packet of any line, the first
/// line on a tie; each line in its file order.
pub struct MergedLines {
    lines: Vec<LineStream>,
    heads: Vec<Option<u64>>,
    bufs: Vec<Vec<u8>>,
    /// The line whose head was handed out last, to be read on at the next call.
    taken: Option<usize>,
}

impl MergedLines {
    /// Reads each line's first packet.
    pub fn new(mut lines: Vec<LineStream>) -> Result<Self, SourceError> {
        let mut bufs = vec![Vec::new(); lines.len()];
        let heads = lines
            .iter_mut()
            .zip(&mut bufs)
            .map(|(l, b)| l.next_into(b))
            .collect::<Result<_, _>>()?;
        Ok(MergedLines {
            lines,
            heads,
            bufs,
            taken: None,
        })
    }

    /// The next packet of any line; None when every line has ended.
    #[allow(clippy::should_implement_trait)] // it lends its buffer: not an Iterator
    pub fn next(&mut self) -> Result<Option<LinePacket<'_>>, SourceError> {
        if let Some(i) = self.taken.take() {
            self.heads[i] = self.lines[i].next_into(&mut self.bufs[i])?;
        }
        let Some(i) = earliest(self.heads.iter().copied()) else {
            return Ok(None);
        };
        let ts = self.heads[i].expect("the earliest line has a packet");
        self.taken = Some(i);
        Ok(Some(LinePacket {
            line: self.lines[i].line,
            source: i,
            ts_ns: ts,
            bytes: &self.bufs[i],
        }))
    }

    /// The lines, for their capture counts.
    pub fn lines(&self) -> &[LineStream] {
        &self.lines
    }

    /// How far all the lines have read together.
    pub fn read_so_far(&self) -> ReadSoFar {
        self.lines
            .iter()
            .map(LineStream::read_so_far)
            .fold(ReadSoFar::default(), |a, b| ReadSoFar {
                done: a.done + b.done,
                total: a.total + b.total,
            })
    }
}
