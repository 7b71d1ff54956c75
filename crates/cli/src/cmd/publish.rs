//! `fastfeed publish`: the decoding publisher, and its report.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use fastfeed_bus::Bus;
use fastfeed_bus_shm::ShmBus;
use fastfeed_net::{realtime_ns, McastReceiver, StampedRecv};
use fastfeed_packet::PacketReader;
use fastfeed_publish::{DecodingPublisher, Group, PacketHeader, PublisherOptions, HEARTBEAT};

use super::bus::{BusKind, ZenohArgs};
use super::generate::DataSet;
use crate::out::{out, outln};
use crate::{input, signals};

#[derive(Args, Clone)]
pub struct PublishArgs {
    /// Which templates to decode with (the simulator's), unless --templates is given.
    #[arg(value_enum, default_value = "simple")]
    pub data: DataSet,
    /// Template XML file to decode with, instead of the simulator's.
    #[arg(short = 't', long)]
    pub templates: Option<PathBuf>,
    /// Read packets from this len32le file instead of the network.
    #[arg(short = 'f', long)]
    pub file: Option<PathBuf>,
    /// Multicast group and port to receive the packets from.
    #[arg(short = 'g', long, default_value = super::multicast::DEFAULT_GROUP)]
    pub group: SocketAddrV4,
    /// Address of the interface to join the group on (127.0.0.1 for this host only).
    #[arg(short = 'i', long, default_value = "127.0.0.1")]
    pub interface: Ipv4Addr,
    /// Take the group's datagrams from this sender only (a source-specific join, IGMPv3),
    /// as networks that carry market data by PIM-SSM require.
    #[arg(long)]
    pub source: Option<Ipv4Addr>,
    /// Bus feed name: topics are fastfeed/<feed>/<type>[/<security>].
    #[arg(long, default_value = "fastfeed")]
    pub feed: String,
    /// The bus that carries the records.
    #[arg(long, value_enum, default_value_t = BusKind::Shm)]
    pub bus: BusKind,
    #[command(flatten)]
    pub zenoh: ZenohArgs,
    /// Decode only, into an empty builder: times the decoder alone.
    #[arg(long)]
    pub empty_builder: bool,
    /// Subscribers do not echo: no round-trip measurement.
    #[arg(long)]
    pub no_echo: bool,
    /// Send each record at once rather than batched with the next ones (Zenoh's express
    /// flag): the lowest latency, at some cost in throughput. Shared memory never batches.
    #[arg(long)]
    pub express: bool,
    /// Wait for this many subscribers to say hello before taking packets.
    #[arg(long, default_value_t = 0)]
    pub wait_subscribers: usize,
    /// Give up when no packet came for this many seconds (no Done seen).
    #[arg(long, default_value_t = 30)]
    pub idle_timeout: u64,
    /// The packet sequence number the feed starts at (`fastfeed generate` starts at 1), so
    /// losing the first packets is a gap too; "any": the first packet seen starts it.
    #[arg(long, default_value = "1", value_parser = first_seq)]
    pub first_seq: FirstSeq,
    /// After the Done message, keep taking packets until none came for this many
    /// milliseconds: packets overtaken by the Done message, or duplicates of it, still count.
    #[arg(long, default_value_t = 100)]
    pub linger_ms: u64,
    /// Write every counter of the report to this file as JSON.
    #[arg(long)]
    pub report_json: Option<PathBuf>,
    /// Write the percentile distributions (HdrHistogram text form) here.
    #[arg(long)]
    pub histogram: Option<PathBuf>,
    /// Draw the percentile distributions into this PNG file.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Echoes counted but not timed at the start (cold caches, first wake-ups).
    #[arg(long, default_value_t = 0)]
    pub warmup: u64,
    /// Between packets: spin (poll the socket, yielding the CPU), or block on the socket
    /// after taking the packet's echoes. Block when processes outnumber cores: a spinning
    /// publisher then takes the CPU the subscriber needs, and the round trip measures the
    /// scheduler.
    #[arg(long, value_enum, default_value_t = IdleWait::Spin)]
    pub idle_wait: IdleWait,
    /// Packets carry a channel number after their sequence number (the 6-byte header of
    /// `fastfeed generate opra`), channels 0..N, channel C on group -g plus C: each channel
    /// its own sequence and Done. `publish opra` takes 24 unless told.
    #[arg(long)]
    pub channels: Option<u16>,
    /// With channels: decode them on this many threads, channel C on thread C mod N (from
    /// a file, the channels dealt out by their bytes, the busiest first), each
    /// pinned to its own core with its own sockets, decoder and bus publisher (default:
    /// the cores there are, at most one per channel and 16).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// How the publisher waits for the next packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum IdleWait {
    /// Poll the socket, yielding the CPU in between.
    Spin,
    /// Spin for the packet's echoes, then block on the socket (1 ms at a time).
    Block,
}

/// `--first-seq`: a number, or "any".
#[derive(Clone, Copy, Debug)]
pub struct FirstSeq(pub Option<u64>);

fn first_seq(s: &str) -> Result<FirstSeq, String> {
    if s == "any" {
        return Ok(FirstSeq(None));
    }
    s.parse()
        .map(|n| FirstSeq(Some(n)))
        .map_err(|_| format!("expected a packet sequence number or \"any\", not {s:?}"))
}

/// The most threads `--threads` defaults to (a core each).
pub(crate) const MAX_DEFAULT_THREADS: usize = 16;

/// Channels of `publish opra` when --channels is not given: `generate opra`'s default.
const OPRA_CHANNELS: u16 = 24;

pub fn run(a: PublishArgs) -> Result<ExitCode> {
    let channels = match a.channels {
        Some(0) => bail!("--channels takes at least 1"),
        Some(n) => Some(n),
        None if a.data == DataSet::Opra && a.templates.is_none() => Some(OPRA_CHANNELS),
        None => None,
    };
    if a.threads.is_some() && channels.is_none() {
        bail!("--threads splits channels over threads: give --channels too (or `publish opra`)");
    }
    for (flag, path) in [
        ("--report-json", &a.report_json),
        ("--histogram", &a.histogram),
        ("--plot", &a.plot),
    ] {
        if let Some(p) = path {
            input::writable(p, flag)?;
        }
    }
    signals::install();
    if let Some(channels) = channels {
        let threads = match a.threads {
            Some(0) => bail!("--threads takes at least 1"),
            Some(t) => t.min(channels as usize),
            // The shared-memory bus takes 17 publishers per record type.
            None => fastfeed_net::affinity::cores()
                .min(channels as usize)
                .min(MAX_DEFAULT_THREADS),
        };
        return super::publish_channels::run(&a, channels, threads);
    }
    match a.bus {
        BusKind::Shm => run_on(
            &ShmBus::new(&a.feed).context("opening the shared-memory bus")?,
            &a,
        ),
        BusKind::Zenoh => run_on(&a.zenoh.open(&a.feed)?, &a),
    }
}

fn run_on<B: Bus>(bus: &B, a: &PublishArgs) -> Result<ExitCode> {
    let mut p = start(
        bus,
        a,
        templates(a)?,
        None,
        Group::default(),
        signals::stopped,
    )?;
    if a.wait_subscribers > 0 {
        eprintln!("{} subscriber(s) ready", p.subscribers()?);
    }
    let mut socket = None;
    match &a.file {
        Some(f) => {
            let reading = || format!("reading {}", f.display());
            // Read a megabyte at a time, whatever the file's size.
            let mut packets = PacketReader::len32le(std::fs::File::open(f).with_context(reading)?);
            announce_ready()?;
            // The whole file, even past the Done message, as lingering on the network would.
            while let Some(packet) = packets.next_packet().with_context(reading)? {
                if signals::stopped() {
                    break;
                }
                p.on_packet(packet.bytes)?;
            }
        }
        None => socket = Some(receive(&mut p, a)?),
    }
    let elapsed = p.elapsed();
    let interrupted = signals::stopped();
    if !interrupted {
        p.finish(Duration::from_secs(5))?;
        // Closing the Zenoh session at exit drops what its links still queue: the last
        // records and the Done, on their way to a subscriber that fell behind or was cut
        // off for a while. Wait for each to say bye (or go silent).
        if a.bus == BusKind::Zenoh {
            // Past Zenoh's lease (10 s), a subscriber cut off has reconnected or is gone.
            let wait = Duration::from_secs(15);
            let left = p.wait_for_byes(wait)?;
            if left > 0 {
                eprintln!(
                    "{left} subscriber(s) had not said bye {} s after the Done",
                    wait.as_secs()
                );
            }
        }
    }
    out!("{}", report(&p, elapsed));
    if let Some(s) = &socket {
        out!("{}", s.text());
    }
    if interrupted {
        outln!("interrupted: a partial report (no Done sent)");
    }
    if let Some(path) = &a.report_json {
        let mut json = super::report::publisher(&p, elapsed);
        if let Some(s) = &socket {
            json["socket"] = s.json();
        }
        super::report::write(path, &json)?;
    }
    write_stages(a, &[&p.in_socket, &p.decode, &p.publish, &p.round_trip])?;
    Ok(if interrupted {
        signals::exit_code()
    } else if p.counters.done {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A publisher on `bus` for `channels` (`None`: one stream), a member of `group`: alone on
/// its feed (or an error naming the publisher there first), then waiting up to 30 s for
/// --wait-subscribers subscribers, unless `stop` says to stop.
pub(super) fn start<B: Bus>(
    bus: &B,
    a: &PublishArgs,
    templates: std::sync::Arc<fastfeed_codec::Templates>,
    channels: Option<Vec<u16>>,
    group: Group,
    stop: impl Fn() -> bool,
) -> Result<DecodingPublisher<B>> {
    let opts = PublisherOptions {
        empty_builder: a.empty_builder,
        echo: !a.no_echo && !a.empty_builder,
        first_seq: a.first_seq.0,
        warmup: a.warmup,
        qos: fastfeed_bus::PublisherQos {
            express: a.express,
            ..Default::default()
        },
        channels,
        group,
    };
    let mut p = DecodingPublisher::new(bus, templates, opts)?;
    // Two publishers on one feed would mix their records at every subscriber.
    if let Some(id) = p.wait_alone(HEARTBEAT * 2)? {
        bail!(
            "another publisher (id {id}) is already on feed {:?}: subscribers would get both \
             publishers' records mixed; stop it, or give this one another --feed",
            a.feed
        );
    }
    if a.wait_subscribers > 0 {
        let deadline = Instant::now() + Duration::from_secs(30);
        while p.subscribers()? < a.wait_subscribers && Instant::now() < deadline && !stop() {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    Ok(p)
}

/// --histogram and --plot: the stages' percentile distributions, as text and drawn.
pub(super) fn write_stages(a: &PublishArgs, stages: &[&fastfeed_stats::Stage]) -> Result<()> {
    if let Some(h) = &a.histogram {
        let mut f =
            std::fs::File::create(h).with_context(|| format!("creating {}", h.display()))?;
        for s in stages {
            s.write_percentiles(&mut f)?;
        }
    }
    if let Some(png) = &a.plot {
        let drawn: Vec<_> = stages.iter().copied().filter(|s| s.count() > 0).collect();
        fastfeed_stats::plot_png(&drawn, png, "fastfeed publisher: latency by percentile")
            .map_err(|e| anyhow::anyhow!("plotting {}: {e}", png.display()))?;
    }
    Ok(())
}

/// The templates to decode with: --templates, or the data set's.
pub(super) fn templates(a: &PublishArgs) -> Result<std::sync::Arc<fastfeed_codec::Templates>> {
    Ok(match &a.templates {
        Some(p) => input::templates(p, true)?,
        None => a.data.templates(),
    })
}

/// The receiving socket at the end: a full receive buffer loses datagrams in the kernel,
/// which the packet sequence alone would show as an ordinary network gap.
struct SocketReport {
    granted: usize,
    requested: usize,
    /// `None` where the kernel's counter cannot be read (not Linux).
    kernel_drops: Option<u64>,
}

impl SocketReport {
    fn of(rx: &McastReceiver) -> Self {
        SocketReport {
            granted: rx.recv_buffer_size(),
            requested: rx.recv_buffer_requested(),
            kernel_drops: rx.kernel_drops(),
        }
    }

    fn text(&self) -> String {
        let drops = self
            .kernel_drops
            .map_or_else(|| "unknown".to_string(), |d| d.to_string());
        let mut t = format!(
            "socket: receive buffer {} bytes granted ({} asked), datagrams dropped by the kernel {drops}\n",
            self.granted, self.requested
        );
        if let Some(d) = self.kernel_drops.filter(|&d| d > 0) {
            t += &format!("  {}\n", fastfeed_net::overflow_hint(d, self.granted));
        }
        t
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "recv_buffer_granted": self.granted,
            "recv_buffer_requested": self.requested,
            "kernel_drops": self.kernel_drops,
        })
    }
}

/// Takes packets from the multicast group until the Done message and then quiet for the
/// linger time, or until no packet came for the idle timeout.
fn receive<B: Bus>(p: &mut DecodingPublisher<B>, a: &PublishArgs) -> Result<SocketReport> {
    let rx = McastReceiver::join(a.group, a.source, a.interface)
        .with_context(|| format!("joining {}", a.group))?;
    // Each packet's wait in the socket, from the kernel's timestamp (none where refused).
    let _ = rx.stamp_arrivals();
    let mut recv = StampedRecv::new();
    let block = a.idle_wait == IdleWait::Block;
    if block {
        rx.set_read_timeout(Some(Duration::from_millis(1)))?;
    } else {
        rx.set_nonblocking(true)?;
    }
    announce_ready()?;
    let idle = Duration::from_secs(a.idle_timeout);
    let linger = Duration::from_millis(a.linger_ms);
    let mut buf = vec![0u8; 65536];
    let mut last = Instant::now();
    loop {
        if signals::stopped() {
            return Ok(SocketReport::of(&rx));
        }
        match recv.recv(&rx, &mut buf) {
            Ok((n, stamp)) => {
                last = Instant::now();
                if let Some(at) = stamp {
                    p.in_socket.record(realtime_ns().saturating_sub(at));
                }
                p.on_packet(&buf[..n])?;
                if block {
                    p.await_echoes(ECHO_QUIET)?;
                }
            }
            // Interrupted: a signal came while blocked (Ctrl-C); the loop's top sees it.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                p.poll_echoes()?;
                if p.counters.done && last.elapsed() >= linger {
                    return Ok(SocketReport::of(&rx));
                }
                if last.elapsed() > idle {
                    eprintln!("no packet for {} s and no Done: stopping", a.idle_timeout);
                    return Ok(SocketReport::of(&rx));
                }
                if !block {
                    std::thread::yield_now();
                }
            }
            Err(e) => return Err(e).context("receiving"),
        }
    }
}

/// With `--idle-wait block`: how long the publisher spins for a packet's echoes once they
/// stop coming (a filtered subscriber never echoes some records).
pub(super) const ECHO_QUIET: Duration = Duration::from_micros(300);

/// Tells a supervising process (the demo) that the receiver is open.
pub(super) fn announce_ready() -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")?;
    out.flush()?;
    Ok(())
}

/// Rejected packets named in the text report (the JSON report has more).
const ERRORS_SHOWN: usize = 20;
/// Missing packet ranges named in the text report (the JSON report has them all).
const RANGES_SHOWN: usize = 10;

pub(super) fn report<B: Bus>(p: &DecodingPublisher<B>, elapsed: Duration) -> String {
    let c = &p.counters;
    let s = &c.packets;
    let mut out = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(
        out,
        "packets: received {}, accepted {}, decoded {}, rejected {}",
        s.received, s.accepted, c.packets_decoded, c.packets_rejected
    );
    if c.packets_foreign > 0 {
        let _ = writeln!(
            out,
            "  {} datagrams of channels this publisher does not take",
            c.packets_foreign
        );
    }
    if c.packets_short > 0 {
        let _ = writeln!(
            out,
            "  {} datagrams too short for a packet sequence number",
            c.packets_short
        );
    }
    let _ = writeln!(
        out,
        "packet sequence: gaps {} ({} packets, {} late, {} still missing), duplicates {}, stale {}",
        s.gaps, s.gap_packets, s.late, s.missing, s.duplicates, s.stale
    );
    let ranges = p.missing_ranges();
    let by_channel = p.header() == PacketHeader::SequenceChannel;
    for (c, a, b) in ranges.iter().take(RANGES_SHOWN) {
        if by_channel {
            let _ = writeln!(out, "  missing packets {a}..={b} of channel {c}");
        } else {
            let _ = writeln!(out, "  missing packets {a}..={b}");
        }
    }
    if ranges.len() > RANGES_SHOWN {
        let _ = writeln!(
            out,
            "  and {} more missing ranges (--report-json lists them all)",
            ranges.len() - RANGES_SHOWN
        );
    }
    for e in c.errors.iter().take(ERRORS_SHOWN) {
        let _ = writeln!(out, "  rejected: {e}");
    }
    let more = c.packets_rejected.saturating_sub(ERRORS_SHOWN as u64);
    if more > 0 {
        let _ = writeln!(out, "  and {more} more rejected packets");
    }
    let published: Vec<String> = p
        .published()
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(t, n)| format!("{t} {n}"))
        .collect();
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        c.messages as f64 / secs
    } else {
        0.0
    };
    let _ = writeln!(
        out,
        "messages decoded {}, records published {} ({}), echoes {}, Done {}",
        c.messages,
        c.records,
        published.join(", "),
        c.echoes,
        if c.done { "seen" } else { "NOT seen" }
    );
    let _ = writeln!(
        out,
        "first to last packet: {:.1} ms, {:.0} messages/s: the sender's pacing, not this \
         publisher's capacity",
        secs * 1e3,
        rate
    );
    let busy_ns = p.decode.mean_ns() * p.decode.count() as f64
        + p.publish.mean_ns() * p.publish.count() as f64;
    if busy_ns > 0.0 {
        let _ = writeln!(
            out,
            "publisher capacity: {:.0} messages/s (messages / time spent decoding, converting \
             and publishing)",
            c.messages as f64 / (busy_ns / 1e9)
        );
    }
    if p.warmup() > 0 {
        let _ = writeln!(
            out,
            "round trips: the first {} echoes were counted but not timed (warm-up)",
            p.warmup().min(c.echoes)
        );
    }
    let _ = writeln!(
        out,
        "subscribers: {} said hello, {} said bye, {} went silent without a bye",
        c.subscribers_seen, c.subscribers_left, c.subscribers_silent
    );
    if c.other_publishers > 0 {
        let _ = writeln!(
            out,
            "other publishers on this feed: {} (their echoes: {}, not timed here)",
            c.other_publishers, c.echoes_other
        );
    }
    let _ = writeln!(out, "times in microseconds:");
    let mut stages = vec![];
    if p.in_socket.count() > 0 {
        stages.push(&p.in_socket);
    }
    stages.push(&p.decode);
    if c.records > 0 {
        stages.push(&p.publish);
    }
    if c.echoes > 0 {
        stages.push(&p.round_trip);
    }
    out.push_str(&fastfeed_stats::table(&stages));
    if c.echoes > 0 {
        let _ = writeln!(
            out,
            "one-way latency (round trip / 2): p50 {:.3} us, p99 {:.3} us",
            p.round_trip.percentile_ns(50.0) as f64 / 2e3,
            p.round_trip.percentile_ns(99.0) as f64 / 2e3
        );
    }
    out
}
