//! Captures of any size, read from an `io::Read` a run of whole records at a time: each run
//! is parsed as a capture of its own, with the file's header (and in pcapng the section's
//! header and interface blocks) put in front, so memory is bounded by a run, not by the file.
//! [`Len32Payloads`] lays the selected UDP payloads end to end as `len32le` packets, the
//! framing the decoders read from files.

use std::io::{self, Read};
use std::net::SocketAddrV4;
use std::sync::{Arc, Mutex};

use crate::{Capture, CaptureError, CaptureStats, Datagram, Format, Reassembly};

/// File bytes per run.
pub const RUN_BYTES: usize = 1 << 20;

/// The most bytes one read takes.
const CHUNK: usize = 256 << 10;

/// A record longer than this is taken for damage: it bounds what a bad length can make the
/// reader hold.
const MAX_RECORD: usize = 64 << 20;

/// pcapng's Section Header Block and Interface Description Block types.
const SHB: u32 = 0x0a0d_0d0a;
const IDB: u32 = 1;

/// What a [`Len32Payloads`] has read so far, shared with whoever reads its output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PayloadStats {
    /// The capture's frames and datagrams, as [`crate::Datagrams::stats`] counts them, with
    /// `damaged_at` a byte offset in the file.
    pub capture: CaptureStats,
    /// Datagrams passed on: those sent to the selected destination, or all of them.
    pub selected: u64,
    /// File bytes read and parsed (the header included).
    pub bytes: u64,
}

impl CaptureStats {
    /// Frames whose datagrams could not be read whole: cut short by the snap length, damaged,
    /// or fragments of datagrams never completed. Other traffic is not counted here.
    pub fn lost(&self) -> u64 {
        self.truncated + self.fragments_lost + self.bad_frames
    }
}

/// One line: every frame in one count, and where the container was damaged.
impl std::fmt::Display for PayloadStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.capture;
        write!(f, "{} frames, {} UDP datagrams", s.frames, s.datagrams)?;
        if s.fragments > 0 {
            write!(
                f,
                " ({} put together from {} fragments)",
                s.reassembled, s.fragments
            )?;
        }
        write!(
            f,
            ", {} selected; skipped {} truncated, {} fragments lost, {} not UDP, {} bad, {} unknown links",
            self.selected, s.truncated, s.fragments_lost, s.not_udp, s.bad_frames, s.unsupported_link
        )?;
        if let Some(at) = s.damaged_at {
            write!(f, "; damaged at byte {at}, the rest unread")?;
        }
        Ok(())
    }
}

/// The UDP datagrams of a capture read from `R`, a run of whole records at a time, in file
/// order; datagrams to other destinations than `udp` (when given) are left out. Reading
/// stops at damage to the container, which [`PayloadStats`] locates.
pub struct CaptureRuns<R> {
    input: R,
    format: Format,
    /// Byte order of the records' lengths: the pcap header's, or the pcapng section's.
    big_endian: bool,
    /// Put before each run: the pcap header, or the pcapng section header and interfaces.
    header: Vec<u8>,
    /// File bytes read and not yet in a run; `base` is the file offset of `buf[0]`.
    buf: Vec<u8>,
    base: usize,
    eof: bool,
    done: bool,
    udp: Option<SocketAddrV4>,
    run_bytes: usize,
    stats: Arc<Mutex<PayloadStats>>,
    /// Datagrams whose fragments are still coming, carried from run to run.
    reassembly: Reassembly,
    /// Where each read lands before it joins `buf` (zeroed once, when first needed).
    chunk: Option<Box<[u8]>>,
}

impl<R: Read> CaptureRuns<R> {
    /// Checks the capture's header.
    pub fn new(input: R, udp: Option<SocketAddrV4>) -> Result<Self, CaptureError> {
        let mut s = CaptureRuns {
            input,
            format: Format::Pcap,
            big_endian: false,
            header: Vec::new(),
            buf: Vec::new(),
            base: 0,
            eof: false,
            done: false,
            udp,
            run_bytes: RUN_BYTES,
            stats: Arc::default(),
            reassembly: Reassembly::default(),
            chunk: None,
        };
        let read = |e: io::Error| CaptureError::Read(e.to_string());
        s.fill(24).map_err(read)?;
        s.format = Format::detect(&s.buf)
            .ok_or_else(|| CaptureError::NotACapture(s.buf.iter().take(4).copied().collect()))?;
        match s.format {
            Format::Pcap => {
                Capture::open(&s.buf)?;
                s.big_endian = matches!(&s.buf[..4], [0xa1, 0xb2, ..]);
                s.header = s.buf.drain(..24).collect();
                s.base = 24;
                s.stats.lock().expect("not poisoned").bytes = 24;
            }
            Format::PcapNg => {
                // The first section header whole, to check it as the in-memory reader does.
                s.fill(12).map_err(read)?;
                if s.buf.len() >= 12 {
                    let (len, _) = s.ng_block(0).unwrap_or((12, false));
                    s.fill(len.min(MAX_RECORD)).map_err(read)?;
                }
                Capture::open(&s.buf)?;
            }
        }
        Ok(s)
    }

    /// Sets the file bytes per run (at least one record a run).
    pub fn run_bytes(mut self, bytes: usize) -> Self {
        self.run_bytes = bytes.max(1);
        self
    }

    /// The counts so far, updated a run at a time, through a handle that outlives `self`.
    pub fn stats(&self) -> Arc<Mutex<PayloadStats>> {
        self.stats.clone()
    }

    /// Counts into `stats` (what it held is replaced) instead of a handle of its own.
    pub fn counting_into(mut self, stats: Arc<Mutex<PayloadStats>>) -> Self {
        *stats.lock().expect("not poisoned") = *self.stats.lock().expect("not poisoned");
        self.stats = stats;
        self
    }

    /// Reads until `buf` holds `want` bytes or the input ends. Each read takes what the
    /// input has (up to [`CHUNK`] bytes), so a pipe's records are parsed as they come, not
    /// once a whole block has arrived.
    fn fill(&mut self, want: usize) -> io::Result<()> {
        while !self.eof && self.buf.len() < want {
            let chunk = self
                .chunk
                .get_or_insert_with(|| vec![0; CHUNK].into_boxed_slice());
            let got = loop {
                match self.input.read(chunk) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    other => break other?,
                }
            };
            self.buf.extend_from_slice(&chunk[..got]);
            self.eof = got == 0;
        }
        Ok(())
    }

    fn u32_at(&self, at: usize) -> u32 {
        let b: [u8; 4] = self.buf[at..at + 4].try_into().expect("4 bytes");
        if self.big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    }

    /// A pcapng block at `at` (its first 12 bytes held): its length, and whether it starts a
    /// section (whose byte order it sets). None for a length no block can have.
    fn ng_block(&mut self, at: usize) -> Option<(usize, bool)> {
        let kind = u32::from_le_bytes(self.buf[at..at + 4].try_into().expect("4 bytes"));
        let shb = kind == SHB;
        if shb {
            self.big_endian = self.buf[at + 8..at + 12] == [0x1a, 0x2b, 0x3c, 0x4d];
        }
        let len = self.u32_at(at + 4) as usize;
        (len >= 12 && len.is_multiple_of(4)).then_some((len, shb))
    }

    /// Cuts the next run of whole records and calls `f` with each selected datagram and the
    /// file offset of its payload. False at the end of the input or after damage.
    pub fn next_run(&mut self, f: impl FnMut(&Datagram<'_>, usize)) -> io::Result<bool> {
        if self.done {
            return Ok(false);
        }
        let prefix = self.header.clone();
        let head = match self.format {
            Format::Pcap => 16,
            Format::PcapNg => 12,
        };
        let mut end = 0;
        loop {
            self.fill(end + head)?;
            if self.buf.len() < end + head {
                // The end of the input, or a record cut short: the parser locates the cut.
                self.done = true;
                end = self.buf.len();
                break;
            }
            let record = match self.format {
                Format::Pcap => Some((16 + self.u32_at(end + 8) as usize, false)),
                Format::PcapNg => self.ng_block(end),
            };
            let Some((len, shb)) = record.filter(|&(len, _)| len <= MAX_RECORD) else {
                // A length no record has: nothing after it can be located.
                self.done = true;
                end += head;
                break;
            };
            self.fill(end + len)?;
            if self.buf.len() < end + len {
                self.done = true;
                end = self.buf.len();
                break;
            }
            if self.format == Format::PcapNg {
                let kind = self.u32_at(end);
                if shb {
                    self.header = self.buf[end..end + len].to_vec();
                } else if kind == IDB {
                    self.header.extend_from_slice(&self.buf[end..end + len]);
                }
            }
            end += len;
            if end >= self.run_bytes {
                break;
            }
        }
        if end == 0 {
            self.done = true;
            self.give_up_fragments();
            return Ok(false);
        }
        let mut run = prefix;
        let skip = run.len();
        run.extend(self.buf.drain(..end));
        let base = self.base;
        self.base += end;
        self.parse_run(&run, skip, base, f);
        Ok(true)
    }

    /// The datagrams of one run to `f`, its counts into the shared stats. `skip`: the bytes
    /// put in front; `base`: the file offset of the run's first record.
    fn parse_run(
        &mut self,
        run: &[u8],
        skip: usize,
        base: usize,
        mut f: impl FnMut(&Datagram<'_>, usize),
    ) {
        let mut counts = PayloadStats::default();
        if let Ok(capture) = Capture::open(run) {
            let mut it = capture.datagrams_resuming(std::mem::take(&mut self.reassembly));
            for d in it.by_ref() {
                if self.udp.is_some_and(|u| u != d.dst) {
                    continue;
                }
                counts.selected += 1;
                // Where it lies in the run, less what was put in front, from base.
                f(&d, (base + d.offset_in(run)).saturating_sub(skip));
            }
            counts.capture = it.stats();
            self.reassembly = it.into_reassembly();
        } else {
            // A section header that does not parse: damage at the run's start.
            counts.capture.damaged_at = Some(0);
        }
        if let Some(at) = counts.capture.damaged_at {
            counts.capture.damaged_at = Some(base + at.saturating_sub(skip));
            self.done = true;
        }
        let mut total = self.stats.lock().expect("not poisoned");
        add(&mut total.capture, &counts.capture);
        total.selected += counts.selected;
        total.bytes = self.base as u64;
        drop(total);
        if self.done {
            self.give_up_fragments();
        }
    }

    /// The capture has ended: fragments of datagrams still incomplete are lost.
    fn give_up_fragments(&mut self) {
        let lost = self.reassembly.finish();
        self.stats
            .lock()
            .expect("not poisoned")
            .capture
            .fragments_lost += lost;
    }
}

fn add(total: &mut CaptureStats, run: &CaptureStats) {
    total.frames += run.frames;
    total.datagrams += run.datagrams;
    total.truncated += run.truncated;
    total.fragments += run.fragments;
    total.reassembled += run.reassembled;
    total.fragments_lost += run.fragments_lost;
    total.not_udp += run.not_udp;
    total.bad_frames += run.bad_frames;
    total.unsupported_link += run.unsupported_link;
    total.other_blocks += run.other_blocks;
    total.damaged_at = total.damaged_at.or(run.damaged_at);
}

/// The UDP payloads of a capture read from `R`, each as a `len32le` packet (a 4-byte
/// little-endian length, then the payload), in file order: what the decoders read from framed
/// files, from a capture of any size in bounded memory (see [`CaptureRuns`]).
pub struct Len32Payloads<R> {
    runs: CaptureRuns<R>,
    /// Output ready to read: `out[out_pos..]`.
    out: Vec<u8>,
    out_pos: usize,
}

impl<R: Read> Len32Payloads<R> {
    /// Checks the capture's header.
    pub fn new(input: R, udp: Option<SocketAddrV4>) -> Result<Self, CaptureError> {
        Ok(Len32Payloads {
            runs: CaptureRuns::new(input, udp)?,
            out: Vec::new(),
            out_pos: 0,
        })
    }

    /// Sets the file bytes per run (at least one record a run).
    pub fn run_bytes(mut self, bytes: usize) -> Self {
        self.runs = self.runs.run_bytes(bytes);
        self
    }

    /// The counts so far, updated a run at a time, through a handle that outlives `self`.
    pub fn stats(&self) -> Arc<Mutex<PayloadStats>> {
        self.runs.stats()
    }

    /// Counts into `stats` (what it held is replaced) instead of a handle of its own.
    pub fn counting_into(mut self, stats: Arc<Mutex<PayloadStats>>) -> Self {
        self.runs = self.runs.counting_into(stats);
        self
    }
}

impl<R: Read> Read for Len32Payloads<R> {
    fn read(&mut self, dst: &mut [u8]) -> io::Result<usize> {
        while self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
            let out = &mut self.out;
            let more = self.runs.next_run(|d, _| {
                out.extend_from_slice(&(d.payload.len() as u32).to_le_bytes());
                out.extend_from_slice(&d.payload);
            })?;
            if !more {
                return Ok(0);
            }
        }
        let n = dst.len().min(self.out.len() - self.out_pos);
        dst[..n].copy_from_slice(&self.out[self.out_pos..self.out_pos + n]);
        self.out_pos += n;
        Ok(n)
    }
}
