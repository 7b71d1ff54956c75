//! `fastfeed multicast`: send a packet file to a multicast group, one datagram per packet,
//! optionally with injected faults.

use std::io::{IsTerminal, Write};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use fastfeed_net::{Corruption, FaultConfig, FaultInjector, McastSender, MAX_DATAGRAM};
use fastfeed_packet::len32le_packets;

use crate::input;

pub const DEFAULT_GROUP: &str = "224.1.2.133:13014";

#[derive(Args, Clone)]
pub struct MulticastArgs {
    /// Packet file in the len32le framing (as `fastfeed generate` writes).
    #[arg(short = 'f', long)]
    pub file: PathBuf,
    /// Multicast group and port.
    #[arg(short = 'g', long, default_value = DEFAULT_GROUP)]
    pub group: SocketAddrV4,
    /// Address of the interface to send on (127.0.0.1 for this host only).
    #[arg(short = 'i', long, default_value = "127.0.0.1")]
    pub interface: Ipv4Addr,
    /// Hops a datagram may take (1: this network only).
    #[arg(long, default_value_t = 1)]
    pub ttl: u32,
    /// Pause between sends, in microseconds (see --pacing).
    #[arg(short = 's', long, default_value_t = 0)]
    pub sleep_us: u64,
    /// spin: wait the pause by yielding the CPU, exact but busy; sleep: sleep it, a few tens
    /// of microseconds late each time but leaving the CPU to others (when processes
    /// outnumber cores).
    #[arg(long, value_enum, default_value = "spin")]
    pub pacing: Pacing,
    /// Packets carry a channel number after their sequence number (the 6-byte header of
    /// `fastfeed generate opra`): send channel C to its own group, the -g address plus C
    /// (same port), as a many-line feed publishes its lines.
    #[arg(long)]
    pub by_channel: bool,
    #[command(flatten)]
    pub faults: FaultArgs,
    /// No progress bar.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// Fault injection: rates in [0, 1], repeatable with a seed.
#[derive(Args, Clone, Default)]
pub struct FaultArgs {
    /// Share of packets not sent.
    #[arg(long, default_value_t = 0.0)]
    pub drop: f64,
    /// Share of packets sent twice in a row.
    #[arg(long, default_value_t = 0.0)]
    pub duplicate: f64,
    /// Share of packets held back and sent after the next one.
    #[arg(long, default_value_t = 0.0)]
    pub reorder: f64,
    /// Share of packets damaged (see --corrupt-mode).
    #[arg(long, default_value_t = 0.0)]
    pub corrupt: f64,
    /// tear: zero the packet from a random offset past --keep-header to its end, which a
    /// FAST decoder always detects (zero bytes carry no stop bit, so the input ends inside
    /// a field). flip: XOR one random byte, which FAST often decodes into silently wrong
    /// values, since it has no checksum.
    #[arg(long, value_enum, default_value = "tear")]
    pub corrupt_mode: CorruptMode,
    /// Bytes at the start of each packet a tear leaves intact (the 4-byte packet sequence
    /// number of `fastfeed generate`'s packets).
    #[arg(long, default_value_t = 4)]
    pub keep_header: usize,
    /// Seed of the fault choices: the same seed gives the same faults.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// How the pause between packets is waited.
#[derive(Clone, Copy, Debug, Default, ValueEnum, PartialEq, Eq)]
pub enum Pacing {
    /// Yield the CPU until the time comes: exact, but the process stays busy.
    #[default]
    Spin,
    /// Sleep: late by the timer's slack, but idle.
    Sleep,
}

#[derive(Clone, Copy, Debug, Default, ValueEnum, PartialEq, Eq)]
pub enum CorruptMode {
    #[default]
    Tear,
    Flip,
}

impl FaultArgs {
    /// The same options as command-line arguments (for `demo` to pass on to `multicast`).
    pub fn to_args(&self) -> Vec<String> {
        let mode = self
            .corrupt_mode
            .to_possible_value()
            .expect("no skipped variants");
        [
            ("--drop", self.drop.to_string()),
            ("--duplicate", self.duplicate.to_string()),
            ("--reorder", self.reorder.to_string()),
            ("--corrupt", self.corrupt.to_string()),
            ("--corrupt-mode", mode.get_name().to_string()),
            ("--keep-header", self.keep_header.to_string()),
            ("--seed", self.seed.to_string()),
        ]
        .into_iter()
        .flat_map(|(flag, value)| [flag.to_string(), value])
        .collect()
    }

    pub fn config(&self) -> FaultConfig {
        FaultConfig {
            drop: self.drop,
            duplicate: self.duplicate,
            reorder: self.reorder,
            corrupt: self.corrupt,
            corruption: match self.corrupt_mode {
                CorruptMode::Tear => Corruption::Tear {
                    keep: self.keep_header,
                },
                CorruptMode::Flip => Corruption::Flip,
            },
        }
    }
}

pub fn run(a: MulticastArgs) -> Result<ExitCode> {
    let data = input::bytes(&a.file)?;
    let packets: Vec<&[u8]> = len32le_packets(&data)
        .map(|p| p.map(|p| p.bytes))
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading the packets of {}", a.file.display()))?;
    if let Some((i, p)) = packets
        .iter()
        .enumerate()
        .find(|(_, p)| p.len() > MAX_DATAGRAM)
    {
        bail!(
            "packet {i} of {} has {} bytes: a UDP datagram carries at most {MAX_DATAGRAM} \
             (generate it again with a smaller -p)",
            a.file.display(),
            p.len()
        );
    }
    let mut faults = a.faults.clone();
    if a.by_channel {
        // A tear must leave the channel number, or the packet goes to another line.
        faults.keep_header = faults.keep_header.max(CHANNEL_HEADER_LEN);
    }
    let mut injector = FaultInjector::new(faults.config(), faults.seed)?;
    let datagrams = injector.apply(packets.iter().copied());
    let mut senders = Senders::new(&a)?;
    let progress = !a.quiet && std::io::stderr().is_terminal();
    let pause = Duration::from_micros(a.sleep_us);
    let start = Instant::now();
    let mut bytes = 0usize;
    let mut next = Instant::now();
    for (i, d) in datagrams.iter().enumerate() {
        match a.pacing {
            Pacing::Spin => {
                while Instant::now() < next {
                    std::thread::yield_now();
                }
            }
            Pacing::Sleep => std::thread::sleep(next.saturating_duration_since(Instant::now())),
        }
        let sender = senders.for_packet(d, i)?;
        bytes += sender
            .send(d)
            .with_context(|| format!("sending packet {i} to {}", sender.group()))?;
        next = Instant::now() + pause;
        if progress && (i % 256 == 0 || i + 1 == datagrams.len()) {
            bar(i + 1, datagrams.len());
        }
    }
    if progress {
        eprintln!();
    }
    let c = injector.counts();
    let to = if a.by_channel {
        format!("{} groups from {}", senders.groups(), a.group)
    } else {
        a.group.to_string()
    };
    eprintln!(
        "sent {} packets, {bytes} bytes to {to} in {:.3} s (from {} packets in {}; dropped {}, duplicated {}, reordered {}, corrupted {})",
        datagrams.len(),
        start.elapsed().as_secs_f64(),
        packets.len(),
        a.file.display(),
        c.dropped,
        c.duplicated,
        c.reordered,
        c.corrupted
    );
    Ok(ExitCode::SUCCESS)
}

/// Bytes of the OPRA-like packet header: sequence number, then channel number.
const CHANNEL_HEADER_LEN: usize = 6;

/// The sender of each group: one, or one per channel (opened when its first packet comes).
struct Senders {
    base: SocketAddrV4,
    interface: Ipv4Addr,
    ttl: u32,
    by_channel: bool,
    /// Indexed by channel number; index 0 alone without channels.
    open: Vec<Option<McastSender>>,
}

impl Senders {
    fn new(a: &MulticastArgs) -> Result<Self> {
        let mut s = Senders {
            base: a.group,
            interface: a.interface,
            ttl: a.ttl,
            by_channel: a.by_channel,
            open: Vec::new(),
        };
        if !a.by_channel {
            s.open.push(Some(s.open_group(a.group)?));
        }
        Ok(s)
    }

    fn open_group(&self, group: SocketAddrV4) -> Result<McastSender> {
        McastSender::new(group, self.interface, self.ttl, true)
            .with_context(|| format!("opening the multicast sender to {group}"))
    }

    /// The sender for datagram `d` (the `i`th).
    fn for_packet(&mut self, d: &[u8], i: usize) -> Result<&McastSender> {
        let channel = if self.by_channel {
            match d.get(4..CHANNEL_HEADER_LEN) {
                Some(c) => u16::from_le_bytes([c[0], c[1]]),
                None => bail!(
                    "packet {i} has {} bytes: too short for a channel number (--by-channel)",
                    d.len()
                ),
            }
        } else {
            0
        };
        let c = channel as usize;
        if self.open.len() <= c {
            self.open.resize_with(c + 1, || None);
        }
        if self.open[c].is_none() {
            let group = fastfeed_net::channel_group(self.base, channel)
                .with_context(|| format!("the group of channel {channel}"))?;
            self.open[c] = Some(self.open_group(group)?);
        }
        Ok(self.open[c].as_ref().expect("opened above"))
    }

    fn groups(&self) -> usize {
        self.open.iter().flatten().count()
    }
}

fn bar(done: usize, total: usize) {
    let width = 40;
    let filled = done * width / total.max(1);
    eprint!(
        "\r[{}{}] {done}/{total} packets",
        "#".repeat(filled),
        " ".repeat(width - filled)
    );
    std::io::stderr().flush().ok();
}
