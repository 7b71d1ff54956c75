//! The thin socket layer: a channel's lines as multicast receivers. Lines A and B are
//! joined for good; the snapshot line is joined while the channel wants snapshots and left
//! when it does not. Every datagram is timed from the kernel's receive timestamp to the
//! books ([`WireLatency`]).

use std::io;

use fastfeed_feed::LineConfig;
use fastfeed_net::{realtime_ns, McastReceiver, NetError, StampedRecv};

use crate::channel::Channel;
use crate::latency::WireLatency;
use crate::output::Output;
use crate::settings::LineId;
use crate::setup::ChannelSetup;

/// Most datagrams read from one socket per poll, so no line starves the others.
const BURST: usize = 64;

/// A channel on live multicast lines.
pub struct LiveChannel {
    /// The state machine.
    pub channel: Channel,
    lines: Vec<(LineId, McastReceiver)>,
    snapshot: Option<LineConfig>,
    snapshot_rx: Option<McastReceiver>,
    buf: Vec<u8>,
    recv: StampedRecv,
    /// Each datagram's time from the kernel to the books.
    pub latency: WireLatency,
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
            buf: vec![0; 65_536],
            recv: StampedRecv::new(),
            latency: WireLatency::default(),
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
            for _ in 0..BURST {
                let (id, rx) = &self.lines[k];
                let id = *id;
                match self.recv.recv(rx, &mut self.buf) {
                    Ok((len, stamp)) => {
                        n += 1;
                        let read = realtime_ns();
                        self.channel.on_packet(id, &self.buf[..len], now_ns, out);
                        self.latency.record(stamp, read, realtime_ns());
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(error) => {
                        return Err(NetError::Io {
                            context: format!("receiving line {}", id.name()),
                            error,
                        })
                    }
                }
            }
        }
        for _ in 0..BURST {
            let Some(rx) = &self.snapshot_rx else { break };
            match self.recv.recv(rx, &mut self.buf) {
                Ok((len, stamp)) => {
                    n += 1;
                    let read = realtime_ns();
                    self.channel
                        .on_packet(LineId::Snapshot, &self.buf[..len], now_ns, out);
                    self.latency.record(stamp, read, realtime_ns());
                    if !self.channel.wants_snapshots() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(error) => {
                    return Err(NetError::Io {
                        context: "receiving the snapshot line".into(),
                        error,
                    })
                }
            }
        }
        self.channel.on_tick(now_ns, out);
        self.follow_snapshot_wish()?;
        Ok(n)
    }
}
