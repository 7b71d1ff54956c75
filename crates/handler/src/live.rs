//! The thin socket layer: a channel's lines as multicast receivers. Lines A and B are
//! joined for good; the snapshot line is joined while the channel wants snapshots and left
//! when it does not. Every datagram is timed from the kernel's receive timestamp to the
//! books ([`WireLatency`]).

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};

use fastfeed_capture::{PcapRecorder, Split, Spool, SpoolSize};
use fastfeed_feed::LineConfig;
use fastfeed_net::{realtime_ns, McastReceiver, NetError, StampedRecv, BATCH};

use crate::channel::Channel;
use crate::latency::WireLatency;
use crate::output::Output;
use crate::settings::LineId;
use crate::setup::ChannelSetup;

/// Most datagrams read from one socket per poll, so no line starves the others (in batches
/// of up to [`BATCH`] a system call).
const BURST: usize = 64;

/// A channel on live multicast lines.
pub struct LiveChannel {
    /// The state machine.
    pub channel: Channel,
    lines: Vec<(LineId, McastReceiver)>,
    snapshot: Option<LineConfig>,
    snapshot_rx: Option<McastReceiver>,
    /// The datagrams of the last batch read, with their kernel timestamps.
    recv: StampedRecv,
    /// Each datagram's time from the kernel to the books.
    pub latency: WireLatency,
    /// Where every datagram read is written, if asked.
    recording: Option<Recording>,
}

/// Every datagram a channel's sockets read, as it is read, into a pcap: the kernel's
/// receive time, the sender, the line's group. Handled as it would be without.
struct Recording {
    pcap: PcapRecorder<Spool>,
    /// How far the disk may fall behind, bytes.
    buffer: usize,
    path: PathBuf,
    /// The first write that failed: recording stopped there; handling goes on.
    error: Option<io::Error>,
    /// A new part at each multiple of this many ns of receive time, and when the next is.
    every: Option<(u64, u64)>,
}

impl Recording {
    /// A new part before a datagram received at `at`, if a period's end has passed.
    fn cut_at(&mut self, at: u64) -> io::Result<()> {
        match &mut self.every {
            Some((every, next)) if at >= *next => {
                *next = next_multiple(at, *every);
                self.pcap.get_mut().cut()
            }
            _ => Ok(()),
        }
    }
}

/// The first multiple of `every` after `t`.
fn next_multiple(t: u64, every: u64) -> u64 {
    (t / every).saturating_add(1).saturating_mul(every)
}

/// Told of each new part of a split recording (its file), on the writing thread.
pub type NewPart = Box<dyn FnMut(&Path) + Send>;

/// Where a recording goes on in a new part (`<stem>.2.pcap`, `<stem>.3.pcap` ..., each a
/// pcap of its own).
pub struct Parts {
    /// Once a part holds this many bytes.
    pub bytes: Option<u64>,
    /// At each multiple of this many nanoseconds since the epoch, by the datagrams' receive
    /// times: an hour's gives a file an hour, each beginning on the hour (UTC).
    pub every_ns: Option<u64>,
    /// Told of each new part once it is open, on the writing thread.
    pub opened: NewPart,
}

/// What a recording wrote.
#[derive(Debug)]
pub struct Recorded {
    /// The file.
    pub path: PathBuf,
    /// Datagrams written.
    pub datagrams: u64,
    /// Datagrams not written because the disk was that far behind (the spool's chunks all
    /// waiting for it): the handler went on without waiting for it.
    pub refused: u64,
    /// How far the disk could fall behind, bytes (`refused` counts what came past it).
    pub buffer: usize,
    /// Why it stopped early, if it did (the datagrams after it were handled, not written).
    pub error: Option<io::Error>,
}

fn receiver(line: &LineConfig, which: &str) -> Result<McastReceiver, NetError> {
    let group = line.group.ok_or_else(|| NetError::Io {
        context: format!("line {which}"),
        error: io::Error::new(io::ErrorKind::InvalidInput, "no multicast group configured"),
    })?;
    let rx = McastReceiver::join(group, line.source, line.interface)?;
    rx.set_nonblocking(true).map_err(|error| NetError::Io {
        context: format!("non-blocking {group}"),
        error,
    })?;
    // Without timestamps the handler still runs; its datagrams are counted unstamped.
    let _ = rx.stamp_arrivals();
    Ok(rx)
}

impl LiveChannel {
    /// Joins lines A and B (the snapshot line when the channel first wants it).
    pub fn open(setup: &ChannelSetup) -> Result<LiveChannel, NetError> {
        let mut lines = Vec::new();
        for (id, cfg) in setup.lines() {
            if id != LineId::Snapshot {
                lines.push((id, receiver(cfg, id.name())?));
            }
        }
        let mut live = LiveChannel {
            channel: setup.channel(),
            lines,
            snapshot: setup.config.snapshot.clone(),
            snapshot_rx: None,
            recv: StampedRecv::new(),
            latency: WireLatency::default(),
            recording: None,
        };
        live.follow_snapshot_wish()?;
        Ok(live)
    }

    /// Each joined line's socket: its group and source, its receive buffer as granted and
    /// the datagrams the kernel dropped for it (a full buffer's loss, which the sequence
    /// alone shows as a network gap).
    pub fn sockets(&self) -> Vec<(&'static str, &McastReceiver)> {
        let lines = self.lines.iter().map(|(id, rx)| (id.name(), rx));
        let snapshot = self.snapshot_rx.iter().map(|rx| ("snapshot", rx));
        lines.chain(snapshot).collect()
    }

    /// The input has ended at `now_ns`: the sockets' kernel drops are counted into the
    /// channel's, which [`Channel::finish`] then ends; the channel is handed back with its
    /// datagrams' latency.
    pub fn finish<O: Output>(mut self, now_ns: u64, out: &mut O) -> (Channel, WireLatency) {
        let drops: Vec<(LineId, u64)> = (self.lines.iter().map(|(id, rx)| (*id, rx)))
            .chain(self.snapshot_rx.iter().map(|rx| (LineId::Snapshot, rx)))
            .map(|(id, rx)| (id, rx.kernel_drops().unwrap_or(0)))
            .collect();
        for (id, d) in drops {
            self.channel.add_kernel_drops(id, d);
        }
        self.channel.finish(now_ns, out);
        (self.channel, self.latency)
    }

    /// From now on, writes every datagram read (lines A, B and the snapshot line while
    /// joined) to a new nanosecond pcap at `path`, a frame per datagram: the kernel's receive
    /// time, its sender, the line's group as its destination; `handle --captures` on a
    /// configuration whose lines name that file handles it as it was handled live.
    /// `size` bounds how far the disk may fall behind: past it, datagrams are handled but
    /// not recorded, and counted. With `parts`, the recording goes on in `<stem>.2.pcap`,
    /// `<stem>.3.pcap` ... once a part holds so many bytes, or at each multiple of a period
    /// (the first datagram received at or after it begins the next part), each part a pcap
    /// of its own.
    pub fn record_to(
        &mut self,
        path: &Path,
        size: SpoolSize,
        parts: Option<Parts>,
    ) -> io::Result<()> {
        // The writes go to a thread of their own, in the background of the channel's: a
        // flush to a slow disk never holds the next datagram in its socket.
        let background = || {
            let _ = fastfeed_net::affinity::background_current_thread();
        };
        let every = parts.as_ref().and_then(|p| p.every_ns).filter(|&e| e > 0);
        let split = parts.map(|p| {
            let first = path.to_path_buf();
            Split {
                bytes: p.bytes.unwrap_or(u64::MAX),
                header: PcapRecorder::<Spool>::file_header(),
                path: Box::new(move |n| first.with_extension(format!("{n}.pcap"))),
                opened: p.opened,
            }
        });
        let spool = Spool::create(path, size, split, background)?;
        self.recv.keep_senders();
        self.recording = Some(Recording {
            pcap: PcapRecorder::new(spool)?,
            buffer: size.chunk * size.chunks,
            path: path.to_path_buf(),
            error: None,
            every: every.map(|e| (e, next_multiple(realtime_ns(), e))),
        });
        Ok(())
    }

    /// Ends the recording (its file written and synced): what it wrote.
    pub fn stop_recording(&mut self) -> Option<Recorded> {
        let r = self.recording.take()?;
        let (datagrams, refused) = (r.pcap.written, r.pcap.refused);
        let finished = r.pcap.into_inner().finish();
        // The first error: what stopped the recording (the writer's own, a full disk, say),
        // or what ending it met.
        let error = r.error.or(finished.err());
        Some(Recorded {
            path: r.path,
            datagrams,
            refused,
            buffer: r.buffer,
            error,
        })
    }

    /// While recording: the datagrams written so far, and those refused (the disk behind).
    pub fn recording_counts(&self) -> Option<(u64, u64)> {
        let r = self.recording.as_ref()?;
        Some((r.pcap.written, r.pcap.refused))
    }

    /// Whether the snapshot line is joined now.
    pub fn snapshot_joined(&self) -> bool {
        self.snapshot_rx.is_some()
    }

    fn follow_snapshot_wish(&mut self) -> Result<(), NetError> {
        let want = self.channel.wants_snapshots();
        match (&self.snapshot, &self.snapshot_rx, want) {
            (Some(cfg), None, true) => self.snapshot_rx = Some(receiver(cfg, "snapshot")?),
            (_, Some(_), false) => {
                // Its drops are counted before the socket goes.
                let rx = self.snapshot_rx.take().expect("joined");
                let drops = rx.kernel_drops().unwrap_or(0);
                self.channel.add_kernel_drops(LineId::Snapshot, drops);
            }
            _ => {}
        }
        Ok(())
    }

    /// Reads what the sockets hold (without blocking) into the channel; returns the number of
    /// datagrams read.
    pub fn poll<O: Output>(&mut self, now_ns: u64, out: &mut O) -> Result<usize, NetError> {
        let mut n = 0;
        for k in 0..self.lines.len() {
            let id = self.lines[k].0;
            let mut left = BURST;
            while left > 0 {
                let got = self.batch(id, left, now_ns, out)?;
                n += got;
                left -= got;
                // Fewer than asked: the socket is empty.
                if got < BATCH.min(left + got) {
                    break;
                }
            }
        }
        // One at a time, so that reading stops once the channel has its snapshots.
        for _ in 0..BURST {
            if self.snapshot_rx.is_none() || self.batch(LineId::Snapshot, 1, now_ns, out)? == 0 {
                break;
            }
            n += 1;
            if !self.channel.wants_snapshots() {
                break;
            }
        }
        self.channel.on_tick(now_ns, out);
        self.follow_snapshot_wish()?;
        Ok(n)
    }

    /// What line `id`'s socket holds, `most` datagrams at most and in one system call, into
    /// the channel, each timed from the kernel's stamp; 0 when the socket is empty.
    fn batch<O: Output>(
        &mut self,
        id: LineId,
        most: usize,
        now_ns: u64,
        out: &mut O,
    ) -> Result<usize, NetError> {
        let rx = match id {
            LineId::Snapshot => self.snapshot_rx.as_ref(),
            _ => self.lines.iter().find(|(l, _)| *l == id).map(|(_, rx)| rx),
        };
        let Some(rx) = rx else { return Ok(0) };
        let group = rx.group();
        let got = match self.recv.recv_batch(rx, most) {
            Ok(got) => got,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
            Err(error) => {
                return Err(NetError::Io {
                    context: format!("receiving line {}", id.name()),
                    error,
                })
            }
        };
        let read = realtime_ns();
        for i in 0..got {
            let (bytes, stamp) = self.recv.datagram(i);
            self.channel.on_packet(id, bytes, now_ns, out);
            self.latency.record(stamp, read, realtime_ns());
            // After the books: the write is not on the datagram's way to them.
            if let Some(r) = self.recording.as_mut().filter(|r| r.error.is_none()) {
                let from = self.recv.sender(i);
                let from = from.unwrap_or(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));
                let at = stamp.unwrap_or(read);
                // Refused (the disk behind) is counted in the recorder; an error stops it.
                if let Err(e) = r
                    .cut_at(at)
                    .and_then(|()| r.pcap.record(at, from, group, bytes))
                {
                    r.error = Some(e);
                }
            }
        }
        Ok(got)
    }
}
