//! `fastfeed publish`: the decoding publisher, and its report.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use fastfeed_bus::Bus;
use fastfeed_net::McastReceiver;
use fastfeed_packet::len32le_packets;
use fastfeed_publish::{DecodingPublisher, PublisherOptions};

use super::generate::DataSet;
use crate::input;

#[derive(Args, Clone)]
pub struct PublishArgs {
    /// Which templates to decode with (the simulator's), unless --templates is given.
    #[arg(value_enum, default_value = "simple")]
    pub data: DataSet,
    #[arg(short = 't', long)]
    pub templates: Option<PathBuf>,
    /// Read packets from this len32le file instead of the network.
    #[arg(short = 'f', long)]
    pub file: Option<PathBuf>,
    #[arg(short = 'g', long, default_value = super::multicast::DEFAULT_GROUP)]
    pub group: SocketAddrV4,
    #[arg(short = 'i', long, default_value = "127.0.0.1")]
    pub interface: Ipv4Addr,
    /// Bus feed name: topics are fastfeed/<feed>/<type>[/<security>].
    #[arg(long, default_value = "fastfeed")]
    pub feed: String,
    /// Decode only, into an empty builder: times the decoder alone.
    #[arg(long)]
    pub empty_builder: bool,
    /// Subscribers do not echo: no round-trip measurement.
    #[arg(long)]
    pub no_echo: bool,
    /// Wait for this many subscribers to say hello before taking packets.
    #[arg(long, default_value_t = 0)]
    pub wait_subscribers: usize,
    /// Give up when no packet came for this many seconds (no Done seen).
    #[arg(long, default_value_t = 30)]
    pub idle_timeout: u64,
    /// Write the percentile distributions (HdrHistogram text form) here.
    #[arg(long)]
    pub histogram: Option<PathBuf>,
    /// Draw the percentile distributions into this PNG file.
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

pub fn run(a: PublishArgs) -> Result<ExitCode> {
    let templates = match &a.templates {
        Some(p) => input::templates(p)?,
        None => a.data.kind().templates(),
    };
    let bus = Bus::new(&a.feed).context("opening the shared-memory bus")?;
    let opts = PublisherOptions {
        empty_builder: a.empty_builder,
        echo: !a.no_echo && !a.empty_builder,
    };
    let mut p = DecodingPublisher::new(&bus, templates, opts)?;
    if a.wait_subscribers > 0 {
        let n = p.wait_for_subscribers(a.wait_subscribers, Duration::from_secs(30))?;
        eprintln!("{n} subscriber(s) ready");
    }
    let idle = Duration::from_secs(a.idle_timeout);
    match &a.file {
        Some(f) => {
            let data = input::bytes(f)?;
            announce_ready()?;
            for packet in len32le_packets(&data) {
                if p.on_packet(packet?.bytes)? {
                    break;
                }
            }
        }
        None => {
            let rx = McastReceiver::new(a.group, a.interface)
                .with_context(|| format!("joining {}", a.group))?;
            rx.set_nonblocking(true)?;
            announce_ready()?;
            let mut buf = vec![0u8; 65536];
            let mut last = Instant::now();
            loop {
                match rx.recv(&mut buf) {
                    Ok(n) => {
                        last = Instant::now();
                        if p.on_packet(&buf[..n])? {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        p.poll_echoes()?;
                        if last.elapsed() > idle {
                            eprintln!("no packet for {} s and no Done: stopping", a.idle_timeout);
                            break;
                        }
                        std::thread::yield_now();
                    }
                    Err(e) => return Err(e).context("receiving"),
                }
            }
        }
    }
    let elapsed = p.elapsed();
    p.finish(Duration::from_secs(5))?;
    print!("{}", report(&p, elapsed));
    if let Some(h) = &a.histogram {
        let mut f =
            std::fs::File::create(h).with_context(|| format!("creating {}", h.display()))?;
        for s in [&p.decode, &p.publish, &p.round_trip] {
            s.write_percentiles(&mut f)?;
        }
    }
    if let Some(png) = &a.plot {
        let stages: Vec<_> = [&p.decode, &p.publish, &p.round_trip]
            .into_iter()
            .filter(|s| s.count() > 0)
            .collect();
        fastfeed_stats::plot_png(&stages, png, "fastfeed publisher: latency by percentile")
            .map_err(|e| anyhow::anyhow!("plotting {}: {e}", png.display()))?;
    }
    Ok(if p.counters.done {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Tells a supervising process (the demo) that the receiver is open.
fn announce_ready() -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")?;
    out.flush()?;
    Ok(())
}

fn report(p: &DecodingPublisher, elapsed: Duration) -> String {
    let c = &p.counters;
    let s = &c.packets;
    let mut out = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(
        out,
        "packets: received {}, accepted {}, decoded {}, rejected {}",
        s.received, s.accepted, c.packets_decoded, c.packets_rejected
    );
    let _ = writeln!(
        out,
        "packet sequence: gaps {} ({} packets, {} late, {} still missing), duplicates {}, stale {}",
        s.gaps, s.gap_packets, s.late, s.missing, s.duplicates, s.stale
    );
    for (a, b) in p.missing_ranges().iter().take(10) {
        let _ = writeln!(out, "  missing packets {a}..={b}");
    }
    for e in &c.errors {
        let _ = writeln!(out, "  rejected: {e}");
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
        "first to last packet: {:.1} ms, {:.0} messages/s",
        secs * 1e3,
        rate
    );
    let _ = writeln!(out, "times in microseconds:");
    let mut stages = vec![&p.decode];
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
