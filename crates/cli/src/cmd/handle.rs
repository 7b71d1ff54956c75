//! `fastfeed handle FEEDCONFIG`: the feed handler process. Lines in (multicast groups, or
//! the configuration's captures with `--captures`), books out, a status line every second
//! and every counter at the end; `--bench` times the whole path against decoding alone.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use fastfeed_bus_shm::ShmBus;
use fastfeed_bus_zenoh::ZenohBus;
use fastfeed_feed::FeedConfig;
use fastfeed_handler::publish::BusOutput;
use fastfeed_handler::{setup, ChannelSetup, Output};

use super::bus::{BusKind, ZenohArgs};
use super::handle_live::{
    captures_on, live_on, on_threads, open_live, say_ready, Finished, LiveOpts, Ready, RecordOpts,
    Running, Served,
};
use super::handle_record::RecordedConfig;

use crate::metrics::Metrics;
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
    /// Run the channels on N threads, channel C on thread C mod N (at most one thread a
    /// channel), each thread pinned to its own core (physical cores first) and owning its
    /// channels' sockets, books and bus publishers. Without it, every channel runs on one
    /// thread, unpinned.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..), conflicts_with = "bench")]
    pub threads: Option<u16>,
    /// Serve every channel's counters (and, live, each line's kernel drops read when asked)
    /// in Prometheus's text format at http://ADDR/metrics, updated every second; ADDR is
    /// HOST:PORT (port 0: any free one, printed on standard error).
    #[arg(long, value_name = "ADDR", conflicts_with = "bench")]
    pub metrics: Option<String>,
    /// Live: write every datagram each channel reads (lines A, B, and the snapshot line
    /// while joined) to DIR/<channel>.pcap as it comes, with the kernel's receive time and
    /// the sender: a capture that `--captures` and `replay` take back.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["bench", "captures"])]
    pub record: Option<PathBuf>,
    /// With `--record`: go on in a new file once a channel's file holds this many MiB
    /// (`<channel>.2.pcap`, `.3.pcap` ...; `DIR/feed.toml` lists them, in order).
    #[arg(long, value_name = "MIB", requires = "record",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub record_split: Option<u32>,
    /// With `--record`: go on in a new file at each multiple of this period of the
    /// datagrams' receive time since the epoch, so that `1h` gives a file an hour, each
    /// beginning on the hour (UTC), and `1d` a file a day from midnight UTC: a number of
    /// seconds, or with `s`, `m`, `h` or `d`. Named and listed as `--record-split`'s parts
    /// (the two may be given together).
    #[arg(long, value_name = "PERIOD", requires = "record", value_parser = period_ns)]
    pub record_every: Option<u64>,
    /// With `--record`: how far (MiB) each channel's recording may fall behind a slow disk
    /// before datagrams are handled but not recorded (counted as `recorded_refused`).
    #[arg(long, value_name = "MIB", default_value_t = 16, requires = "record",
          value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub record_buffer: u32,
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
    let name = a.feed.clone().unwrap_or_else(|| feed.feed.clone());
    // Zenoh with --listen: one session, as an endpoint is bound once; the threads are its
    // partners. Otherwise each thread opens its own.
    let zenoh = match (a.bus, a.threads) {
        (Some(BusKind::Zenoh), Some(_)) if !a.zenoh.listen.is_empty() => Some(a.zenoh.open(&name)?),
        _ => None,
    };
    let metrics = match &a.metrics {
        Some(addr) => {
            let (m, at) = Metrics::serve(addr, &name)?;
            eprintln!("{name}: metrics on http://{at}/metrics");
            Some(m)
        }
        None => None,
    };
    let mut run = Running::new(metrics);
    if let Some(dir) = &a.record {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let recorded = RecordedConfig::start(&a.config, dir)?;
        eprintln!(
            "recording to {}: handled again by `fastfeed handle {} --captures`",
            dir.display(),
            recorded.path().display()
        );
        run = run.on_part(Arc::new(move |c: &str, p: &std::path::Path| {
            recorded.part_opened(c, p)
        }));
    }
    let serve = |set: &[ChannelSetup], run: &Running, ready: Ready<'_>| {
        serve(&a, &name, zenoh.as_ref(), set, run, ready)
    };
    let (finals, bus) = match a.threads {
        None => serve(&channels, &run, &|r| match r {
            Ok(()) if !a.captures => say_ready(),
            _ => Ok(()),
        })?,
        Some(n) => on_threads(&channels, n as usize, !a.captures, &run, serve)?,
    };
    report(&feed, &finals, a.report_json.as_ref(), bus)?;
    Ok(match signals::stopped() {
        true => signals::exit_code(),
        false => ExitCode::SUCCESS,
    })
}

/// One thread's channels with their output: none, or the bus's record publishers (a bus
/// node of the thread's own).
fn serve(
    a: &HandleArgs,
    name: &str,
    zenoh: Option<&ZenohBus>,
    channels: &[ChannelSetup],
    run: &Running,
    ready: Ready<'_>,
) -> Result<Served> {
    fn on<B: fastfeed_bus::Bus>(
        bus: &B,
        a: &HandleArgs,
        channels: &[ChannelSetup],
        run: &Running,
        ready: Ready<'_>,
    ) -> Result<Served> {
        let mut out = BusOutput::new(bus).context("opening the record publishers")?;
        let finals = serve_on(a, channels, &mut out, run, ready)?;
        Ok((finals, Some((out.published, out.errors))))
    }
    match a.bus {
        None => serve_on(a, channels, &mut (), run, ready).map(|f| (f, None)),
        Some(BusKind::Shm) => ShmBus::new(name)
            .context("opening the shared-memory bus")
            .and_then(|bus| on(&bus, a, channels, run, ready)),
        Some(BusKind::Zenoh) => match zenoh {
            Some(listening) => on(&listening.partner(), a, channels, run, ready),
            None => a
                .zenoh
                .open(name)
                .and_then(|bus| on(&bus, a, channels, run, ready)),
        },
    }
}

/// The channels over their captures, or joined to their lines and handled live.
fn serve_on<O: Output>(
    a: &HandleArgs,
    channels: &[ChannelSetup],
    out: &mut O,
    run: &Running,
    ready: Ready<'_>,
) -> Result<Vec<Finished>> {
    if a.captures {
        ready(Ok(()))?;
        return captures_on(channels, out, !a.quiet, run);
    }
    let live = open_live(channels)?;
    ready(Ok(()))?;
    let opts = LiveOpts {
        idle_exit_ms: a.idle_exit_ms,
        status: !a.quiet,
        spin_for: match (a.spin, a.spin_us) {
            (true, _) => Duration::MAX,
            (false, us) => Duration::from_micros(us.unwrap_or(0)),
        },
        record: a.record.as_deref().map(|dir| {
            let mib = a.record_buffer as usize;
            RecordOpts {
                dir,
                size: fastfeed_capture::SpoolSize::total(mib << 20),
                split: a.record_split.map(|mib| u64::from(mib) << 20),
                every_ns: a.record_every,
            }
        }),
    };
    live_on(channels, live, out, &opts, run)
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
        placement,
        recorded,
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
        if let Some(p) = placement {
            line.push_str(&format!(" thread={}", p.thread));
            obj.insert("thread".into(), (p.thread as u64).into());
            match &p.cpu {
                Ok(cpu) => {
                    line.push_str(&format!(" cpu={cpu}"));
                    obj.insert("cpu".into(), (*cpu as u64).into());
                }
                Err(e) => {
                    line.push_str(&format!(" cpu=unpinned ({e})"));
                    obj.insert("cpu".into(), serde_json::Value::Null);
                }
            }
        }
        eprintln!(
            "{}/{name}: instruments={known} not_live={waiting}{line}",
            feed.feed
        );
        if let Some(r) = recorded {
            let path = r.path.display();
            obj.insert("recorded_datagrams".into(), r.datagrams.into());
            obj.insert("recorded_refused".into(), r.refused.into());
            if r.refused > 0 {
                eprintln!(
                    "{}/{name}: {} datagrams handled but not recorded: the disk fell {} KiB behind",
                    feed.feed,
                    r.refused,
                    r.buffer >> 10
                );
            }
            obj.insert("recorded_to".into(), path.to_string().into());
            match &r.error {
                None => eprintln!(
                    "{}/{name}: recorded {} datagrams to {path}",
                    feed.feed, r.datagrams
                ),
                Some(e) => {
                    eprintln!(
                        "{}/{name}: recording to {path} stopped after {} datagrams: {e}",
                        feed.feed, r.datagrams
                    );
                    obj.insert("record_error".into(), e.to_string().into());
                }
            }
        }
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

/// `--record-every`: seconds, or a number with `s`, `m`, `h` or `d`, as nanoseconds.
fn period_ns(s: &str) -> Result<u64, String> {
    let (number, unit) = match s.trim().char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&s.trim()[..i], c),
        _ => (s.trim(), 's'),
    };
    let secs: u64 = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return Err(format!("{s:?}: the unit is s, m, h or d")),
    };
    number
        .parse::<u64>()
        .ok()
        .filter(|&n| n > 0)
        .and_then(|n| n.checked_mul(secs)?.checked_mul(1_000_000_000))
        .ok_or_else(|| format!("{s:?}: a whole number of seconds, minutes, hours or days above 0"))
}

#[cfg(test)]
mod tests {
    use super::period_ns;

    #[test]
    fn periods_are_seconds_or_a_unit() {
        const S: u64 = 1_000_000_000;
        assert_eq!(period_ns("90"), Ok(90 * S));
        assert_eq!(period_ns("30s"), Ok(30 * S));
        assert_eq!(period_ns("15m"), Ok(900 * S));
        assert_eq!(period_ns("1h"), Ok(3600 * S));
        assert_eq!(period_ns("1d"), Ok(86_400 * S));
        for bad in ["0", "0h", "1w", "h", "", "-1s", "99999999999999d"] {
            assert!(period_ns(bad).is_err(), "{bad:?}");
        }
    }
}
