//! Captures to their multicast groups: every line of every channel, interleaved in time as
//! recorded, at full speed, a packet rate, or the recorded pace; faults injected on each
//! line independently (or identically, to lose the same packets on A and B).

use std::net::SocketAddrV4;
use std::time::{Duration, Instant};

use fastfeed_net::{FaultConfig, FaultCounts, FaultInjector, McastSender, NetError};

use crate::settings::LineId;
use crate::setup::{ChannelSetup, SetupError};
use crate::stream::{MergedLines, ReadSoFar};

/// How fast to send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// As fast as the sockets take them.
    Full,
    /// This many packets per second, all lines together.
    Rate(f64),
    /// The capture's own timing, sped up by the factor.
    Recorded(f64),
}

/// Faults, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayFaults {
    /// Rates and corruption.
    pub config: FaultConfig,
    /// Seed of line A; other lines take the next seeds unless `same`.
    pub seed: u64,
    /// The same packet meets the same fate on every faulted line (its fate is drawn from
    /// the seed and its bytes): A and B lose the same packets. Reordering needs a packet
    /// stream and does not apply then.
    pub same: bool,
    /// Which lines get faults.
    pub lines: Vec<LineId>,
}

/// What was sent on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineReport {
    /// Channel name.
    pub channel: String,
    /// Which line.
    pub line: LineId,
    /// Its group.
    pub group: SocketAddrV4,
    /// Packets in the capture.
    pub packets: u64,
    /// Datagrams sent.
    pub sent: u64,
    /// What the fault injector did.
    pub faults: FaultCounts,
    /// Where a `len32le` or raw capture ended the line early (see [`LineStream::damage`](crate::stream::LineStream::damage)).
    pub damage: Option<String>,
}

/// Replay errors.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// Setting up or loading captures.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// A socket.
    #[error(transparent)]
    Net(#[from] NetError),
    /// A line without a group to send to.
    #[error("channel {0} line {1}: no multicast group to replay to")]
    NoGroup(String, &'static str),
}

struct Sending {
    sender: McastSender,
    injector: FaultInjector,
    /// Same faults on every line: a fresh injector per packet, seeded by its bytes.
    per_packet: Option<(FaultConfig, u64)>,
    counts: FaultCounts,
    report: LineReport,
}

/// FNV-1a: a packet's bytes to a seed.
fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Sends every line's capture to its group, the lines of every channel interleaved by time,
/// reading the captures as it goes (see [`LineStream`]); `progress(packets, read)` is
/// called as it goes.
pub fn replay(
    channels: &[ChannelSetup],
    pace: Pace,
    faults: &ReplayFaults,
    mut progress: impl FnMut(u64, ReadSoFar),
) -> Result<Vec<LineReport>, ReplayError> {
    let mut lines = Vec::new();
    let mut streams = Vec::new();
    let mut k = 0u64;
    for ch in channels {
        let captures = ch.streams().map_err(SetupError::from)?;
        for ((id, cfg), line) in ch.lines().into_iter().zip(captures) {
            let group = cfg
                .group
                .ok_or_else(|| ReplayError::NoGroup(ch.config.name.clone(), id.name()))?;
            let config = if faults.lines.contains(&id) {
                faults.config
            } else {
                FaultConfig::default()
            };
            let seed = faults.seed.wrapping_add(k);
            k += 1;
            let faulted = faults.lines.contains(&id);
            lines.push(Sending {
                sender: McastSender::new(group, cfg.interface, 1, true)?,
                injector: FaultInjector::new(config, seed)?,
                per_packet: (faults.same && faulted).then_some((config, faults.seed)),
                counts: FaultCounts::default(),
                report: LineReport {
                    channel: ch.config.name.clone(),
                    line: id,
                    group,
                    packets: 0,
                    sent: 0,
                    faults: FaultCounts::default(),
                    damage: None,
                },
            });
            streams.push(line);
        }
    }
    let mut merged = MergedLines::new(streams).map_err(SetupError::from)?;
    let mut t0 = None;
    let start = Instant::now();
    let mut out = Vec::new();
    let mut n = 0u64;
    while let Some(p) = merged.next().map_err(SetupError::from)? {
        let t0 = *t0.get_or_insert(p.ts_ns);
        let due = match pace {
            Pace::Full => None,
            Pace::Rate(r) => Some(Duration::from_secs_f64(n as f64 / r.max(1e-9))),
            Pace::Recorded(speed) => {
                let ns = p.ts_ns.saturating_sub(t0) as f64;
                Some(Duration::from_secs_f64(ns / 1e9 / speed.max(1e-9)))
            }
        };
        if let Some(due) = due {
            wait_until(start + due);
        }
        let s = &mut lines[p.source];
        s.report.packets += 1;
        out.clear();
        let packet = p.bytes;
        match s.per_packet {
            Some((config, seed)) => {
                let mut one = FaultInjector::new(config, seed ^ hash(packet))?;
                one.process(packet, &mut out);
                one.flush(&mut out);
                let c = one.counts();
                s.counts.dropped += c.dropped;
                s.counts.duplicated += c.duplicated;
                s.counts.corrupted += c.corrupted;
            }
            None => s.injector.process(packet, &mut out),
        }
        for d in &out {
            send(s, d)?;
        }
        n += 1;
        if n % 256 == 1 {
            progress(n, merged.read_so_far());
        }
    }
    progress(n, merged.read_so_far());
    for (s, stream) in lines.iter_mut().zip(merged.lines()) {
        s.report.damage = stream.damage().map(str::to_string);
    }
    for s in &mut lines {
        out.clear();
        s.injector.flush(&mut out);
        for d in &out {
            send(s, d)?;
        }
    }
    Ok(lines
        .into_iter()
        .map(|s| LineReport {
            faults: if s.per_packet.is_some() {
                s.counts
            } else {
                s.injector.counts()
            },
            ..s.report
        })
        .collect())
}

fn send(s: &mut Sending, d: &[u8]) -> Result<(), NetError> {
    s.sender.send(d).map_err(|error| NetError::Io {
        context: format!("sending to {}", s.report.group),
        error,
    })?;
    s.report.sent += 1;
    Ok(())
}

/// Sleeps most of the way, then yields: exact for short waits without a busy core.
fn wait_until(t: Instant) {
    loop {
        let now = Instant::now();
        if now >= t {
            return;
        }
        let left = t - now;
        if left > Duration::from_millis(2) {
            std::thread::sleep(left - Duration::from_millis(1));
        } else {
            std::thread::yield_now();
        }
    }
}
