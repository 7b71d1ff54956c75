//! `fastfeed handle FEEDCONFIG`: the feed handler process. Lines in (multicast groups, or
//! the configuration's captures with `--captures`), books out, a status line every second
//! and every counter at the end; `--bench` times the whole path against decoding alone.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use fastfeed_bus_shm::ShmBus;
use fastfeed_feed::FeedConfig;
use fastfeed_handler::live::LiveChannel;
use fastfeed_handler::publish::BusOutput;
use fastfeed_handler::{setup, Channel, ChannelSetup, Output, WireLatency};

use super::bus::{BusKind, ZenohArgs};

use crate::out::outln;
use crate::signals;

#[derive(Args)]
pub struct HandleArgs {
    /// The feed configuration (TOML).
    pub config: PathBuf,
    /// Read each line's capture file (as fast as possible) instead of its multicast group.
    #[arg(long)]
    pub captures: bool,
    /// Stay on the snapshot line and check every snapshot of a live instrument against its
    /// book at the same RptSeq (counted as snapshot_checks / snapshot_mismatches).
    #[arg(long)]
    pub verify: bool,
    /// Time the whole path (arbitration, decode, events, books, output) against decoding
    /// alone, over the captures in memory, in alternating passes.
    #[arg(long)]
    pub bench: bool,
    /// Passes of --bench.
    #[arg(long, default_value_t = 11)]
    pub passes: usize,
    /// Live: stop once no packet came for this long after the first (0: run until killed).
    #[arg(long, default_value_t = 0)]
    pub idle_exit_ms: u64,
    /// Write every counter of every channel as JSON to this file at the end.
    #[arg(long)]
    pub report_json: Option<PathBuf>,
    /// Publish books (`book`), top of book (`top`), trades and statuses as records on this
    /// bus: topics `fastfeed/<feed>/<type>/<security>`.
    #[arg(long, value_enum)]
    pub bus: Option<BusKind>,
    #[command(flatten)]
    pub zenoh: ZenohArgs,
    /// The feed's name on the bus (default: the configuration's `feed`).
    #[arg(long)]
    pub feed: Option<String>,
    /// No status line.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Live: read the sockets without ever blocking (a core kept busy) instead of waiting
    /// in poll(2) for the next datagram: the lowest latency.
    #[arg(long)]
    pub spin: bool,
    /// Live: after each datagram, read without blocking for this many microseconds before
    /// waiting in poll(2) again: the next packets of a burst are taken without a wake-up,
    /// and a quiet feed costs no core.
    #[arg(long, value_name = "US", conflicts_with = "spin")]
    pub spin_us: Option<u64>,
}

/// A channel at the end of its input.
pub struct Finished {
    /// The channel's name in the configuration.
    pub name: String,
    /// Its state and counters.
    pub channel: Channel,
    /// Live: its datagrams' time from the kernel to the books.
    pub latency: Option<WireLatency>,
}

pub fn load(config: &std::path::Path, verify: bool) -> Result<(FeedConfig, Vec<ChannelSetup>)> {
    let feed = FeedConfig::load(config)?;
    let mut channels = setup(&feed)?;
    for c in &mut channels {
        c.settings.verify = verify;
    }
    Ok((feed, channels))
}

pub fn run(a: HandleArgs) -> Result<ExitCode> {
    let (feed, channels) = load(&a.config, a.verify)?;
    if a.bench {
        return bench(&channels, a.passes);
    }
    // Ctrl-C or SIGTERM ends the run with the full report (exit status 128 + the signal).
    signals::install();
    match a.bus {
        None => {
            let finals = run_all(&a, &channels, &mut ())?;
            report(&feed, &finals, a.report_json.as_ref(), None)?;
        }
        Some(BusKind::Shm) => {
            let name = a.feed.clone().unwrap_or_else(|| feed.feed.clone());
            let bus = ShmBus::new(&name).context("opening the shared-memory bus")?;
            handle_on(&bus, &a, &feed, &channels)?;
        }
        Some(BusKind::Zenoh) => {
            let name = a.feed.clone().unwrap_or_else(|| feed.feed.clone());
            handle_on(&a.zenoh.open(&name)?, &a, &feed, &channels)?;
        }
    }
    Ok(match signals::stopped() {
        true => signals::exit_code(),
        false => ExitCode::SUCCESS,
    })
}

fn handle_on<B: fastfeed_bus::Bus>(
    bus: &B,
    a: &HandleArgs,
    feed: &FeedConfig,
    channels: &[ChannelSetup],
) -> Result<()> {
    let mut out = BusOutput::new(bus).context("opening the record publishers")?;
    let finals = run_all(a, channels, &mut out)?;
    report(
        feed,
        &finals,
        a.report_json.as_ref(),
        Some((out.published, out.errors)),
    )
}

fn run_all<O: Output>(
    a: &HandleArgs,
    channels: &[ChannelSetup],
    out: &mut O,
) -> Result<Vec<Finished>> {
    if a.captures {
        run_captures(channels, out, !a.quiet)
    } else {
        let spin_for = match (a.spin, a.spin_us) {
            (true, _) => Duration::MAX,
            (false, us) => Duration::from_micros(us.unwrap_or(0)),
        };
        run_live(channels, out, a.idle_exit_ms, !a.quiet, spin_for)
    }
}

/// Every channel over its captures, lines interleaved by time.
pub fn run_captures<O: Output>(
    channels: &[ChannelSetup],
    out: &mut O,
    status: bool,
) -> Result<Vec<Finished>> {
    let mut finals = Vec::new();
    for c in channels {
        let (ch, lines) = c
            .run_captures(out, |_, _| match signals::stopped() {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            })
            .with_context(|| format!("channel {}", c.config.name))?;
        for l in lines.lines() {
            if let Some(d) = l.damage() {
                eprintln!(
                    "{} line {}: stopped early, the rest of the file unread: {d}",
                    c.config.name,
                    l.line().name()
                );
            }
        }
        if status {
            eprintln!("{}", status_line(&c.config.name, &ch, 0.0));
            for l in lines.lines() {
                if let Some(p) = l.capture_stats() {
                    eprintln!(
                        "{} line {}: {}",
                        c.config.name,
                        l.line().name(),
                        crate::input::capture_line(&p)
                    );
                }
            }
        }
        finals.push(Finished {
            name: c.config.name.clone(),
            channel: ch,
            latency: None,
        });
        if signals::stopped() {
            break;
        }
    }
    Ok(finals)
}

/// Every channel on its multicast lines until idle (or forever).
pub fn run_live<O: Output>(
    channels: &[ChannelSetup],
    out: &mut O,
    idle_exit_ms: u64,
    status: bool,
    spin_for: Duration,
) -> Result<Vec<Finished>> {
    let mut live: Vec<LiveChannel> = channels
        .iter()
        .map(|c| LiveChannel::open(c).with_context(|| format!("channel {}", c.config.name)))
        .collect::<Result<_>>()?;
    outln!("ready");
    std::io::stdout().flush().ok();
    let start = Instant::now();
    let mut last_packet: Option<Instant> = None;
    let mut next_status = start + Duration::from_secs(1);
    let mut last_msgs = 0u64;
    let mut silent = vec![[false; 2]; live.len()];
    loop {
        let now_ns = start.elapsed().as_nanos() as u64;
        let mut n = 0;
        for ((l, c), was) in live.iter_mut().zip(channels).zip(&mut silent) {
            n += l.poll(now_ns, out)?;
            let now = l.channel.silent_lines();
            if now != *was {
                report_silence(&c.config, &l.channel, *was, now);
                *was = now;
            }
        }
        let now = Instant::now();
        if n > 0 {
            last_packet = Some(now);
        } else if spin_for == Duration::MAX || last_packet.is_some_and(|t| now - t < spin_for) {
            // Spinning: for good (`--spin`), or for `--spin-us` after the last datagram.
            std::hint::spin_loop();
        } else {
            // Woken by the next datagram on any line; at least every millisecond for the
            // gaps' timeouts, the status line and the idle exit.
            let sockets = live.iter().flat_map(|l| l.sockets()).map(|(_, rx)| rx);
            fastfeed_net::wait_any(sockets, Duration::from_millis(1))
                .context("waiting for the lines")?;
        }
        if status && now >= next_status {
            let msgs: u64 = live.iter().map(|l| l.channel.stats().messages).sum();
            for (c, l) in channels.iter().zip(&live) {
                eprintln!(
                    "{}",
                    status_line(&c.config.name, &l.channel, (msgs - last_msgs) as f64)
                );
                if l.latency.count() > 0 {
                    eprintln!("{} since start: {}", c.config.name, l.latency.summary());
                }
            }
            last_msgs = msgs;
            next_status += Duration::from_secs(1);
        }
        if signals::stopped()
            || idle_exit_ms > 0
                && last_packet.is_some_and(|t| now - t > Duration::from_millis(idle_exit_ms))
        {
            break;
        }
    }
    for (c, l) in channels.iter().zip(&live) {
        for (line, rx) in l.sockets() {
            let (granted, drops) = (rx.recv_buffer_size(), rx.kernel_drops());
            let shown = drops.map_or_else(|| "unknown".into(), |d| d.to_string());
            let from = rx
                .source()
                .map(|s| format!(" from {s}"))
                .unwrap_or_default();
            eprintln!(
                "{} line {line} ({}{from}): receive buffer {granted} bytes granted, datagrams dropped by the kernel {shown}",
                c.config.name,
                rx.group()
            );
            if let Some(d) = drops.filter(|&d| d > 0) {
                eprintln!("  {}", fastfeed_net::overflow_hint(d, granted));
            }
        }
    }
    let end_ns = start.elapsed().as_nanos() as u64 + 1_000_000_000;
    Ok(channels
        .iter()
        .zip(live)
        .map(|(c, l)| {
            let (channel, latency) = l.finish(end_ns, out);
            Finished {
                name: c.config.name.clone(),
                channel,
                latency: Some(latency),
            }
        })
        .collect())
}

/// A line fell silent or came back: said on standard error as it happens.
fn report_silence(
    config: &fastfeed_feed::config::ChannelConfig,
    ch: &Channel,
    was: [bool; 2],
    now: [bool; 2],
) {
    let s = ch.stats();
    for (i, (line, other)) in [("a", "b"), ("b", "a")].into_iter().enumerate() {
        match (was[i], now[i]) {
            (false, true) => eprintln!(
                "{}: line {line} silent: no packet for {} ms while line {other} took packets",
                config.name, config.line_silence_ms
            ),
            (true, false) => eprintln!(
                "{}: line {line} back ({:.3} s silent in all)",
                config.name,
                s.silent_ns[i] as f64 / 1e9
            ),
            _ => {}
        }
    }
}

/// One line of status: rates, gaps, recoveries, stale books.
pub fn status_line(name: &str, ch: &Channel, msgs_per_s: f64) -> String {
    let s = ch.stats();
    let (known, waiting) = ch.instrument_counts();
    format!(
        "{name}: {:.0} msg/s | packets A {} B {} snapshot {} | rejected {} | gaps {} filled {} timed out {} | stale {}/{} books, recoveries {} | snapshot line {}{}",
        msgs_per_s,
        s.packets[0],
        s.packets[1],
        s.snapshot_packets,
        s.rejected.iter().sum::<u64>(),
        s.gaps_opened,
        s.gaps_filled,
        s.gaps_timed_out,
        waiting,
        known,
        s.recoveries,
        if ch.wants_snapshots() { "joined" } else { "left" },
        // Never both: a line is silent only while the other takes packets.
        match ch.silent_lines() {
            [true, _] => " | line A silent",
            [_, true] => " | line B silent",
            _ => "",
        },
    )
}

/// Prints and writes every counter; `bus`: records published and refused.
fn report(
    feed: &FeedConfig,
    finals: &[Finished],
    json: Option<&PathBuf>,
    bus: Option<(u64, u64)>,
) -> Result<()> {
    let mut doc = serde_json::Map::new();
    if let Some((published, errors)) = bus {
        eprintln!(
            "{}: {published} records published, {errors} refused by the bus",
            feed.feed
        );
        doc.insert("bus_published".into(), published.into());
        doc.insert("bus_errors".into(), errors.into());
    }
    for Finished {
        name,
        channel: ch,
        latency,
    } in finals
    {
        let s = ch.stats();
        let mut obj = serde_json::Map::new();
        let mut line = String::new();
        for (k, v) in s.fields() {
            line.push_str(&format!(" {k}={v}"));
            obj.insert(k, v.into());
        }
        let (known, waiting) = ch.instrument_counts();
        obj.insert("instruments".into(), (known as u64).into());
        obj.insert("not_live".into(), (waiting as u64).into());
        let periods: Vec<serde_json::Value> = ch
            .stale_periods()
            .iter()
            .map(|p| {
                serde_json::json!({"security": p.security, "from_ns": p.from_ns,
                    "to_ns": p.to_ns, "messages": p.messages})
            })
            .collect();
        obj.insert("stale_period_list".into(), periods.into());
        eprintln!(
            "{}/{name}: instruments={known} not_live={waiting}{line}",
            feed.feed
        );
        if let Some(w) = latency {
            for (k, v) in w.fields() {
                obj.insert(k, v.into());
            }
            eprintln!("{}/{name}: {}", feed.feed, w.summary());
        }
        doc.insert(name.clone(), obj.into());
    }
    if let Some(path) = json {
        let mut f =
            std::fs::File::create(path).with_context(|| format!("writing {}", path.display()))?;
        writeln!(f, "{}", serde_json::Value::Object(doc))?;
    }
    Ok(())
}

fn bench(channels: &[ChannelSetup], passes: usize) -> Result<ExitCode> {
    for c in channels {
        let captures = c
            .captures()
            .with_context(|| format!("channel {}", c.config.name))?;
        for (what, lines) in fastfeed_handler::bench::runs(captures) {
            let r = fastfeed_handler::bench::bench(
                &c.templates,
                &c.profile,
                &c.settings,
                &lines,
                passes,
            );
            if r.messages == 0 {
                bail!("channel {}: no messages to time", c.config.name);
            }
            let (decode, whole) = r.ns_per_message();
            let (by_median, by_min) = r.ratios();
            outln!(
                "channel {} {what}: {} packets, {} messages, {} book changes per pass, {} passes",
                c.config.name,
                r.packets,
                r.messages,
                r.books,
                r.decode_s.len()
            );
            outln!("  decode only  {decode:>8.1} ns/msg (median, thread CPU time)");
            outln!("  whole path   {whole:>8.1} ns/msg (median, thread CPU time)");
            outln!("  whole/decode {by_median:>8.2}x (medians), {by_min:.2}x (minima)");
        }
    }
    Ok(ExitCode::SUCCESS)
}
