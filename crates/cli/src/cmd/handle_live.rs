//! The handler's loops: channels over their captures, or on their live lines until the
//! feed goes quiet. One thread runs one set of channels; `handle --threads N` runs N sets
//! at once ([`on_threads`]), each thread pinned to its own core and owning its channels'
//! sockets, books and output, so nothing is shared on the hot path but a clock of the
//! feed's last datagram, written at most once a millisecond.

use std::io::Write;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use fastfeed_handler::live::{LiveChannel, NewPart, Parts, Recorded};
use fastfeed_handler::{Channel, ChannelSetup, Output, WireLatency};

use crate::metrics::Metrics;
use crate::out::outln;
use crate::signals;

/// A channel at the end of its input.
pub struct Finished {
    /// The channel's name in the configuration.
    pub name: String,
    /// Its state and counters.
    pub channel: Channel,
    /// Live: its datagrams' time from the kernel to the books.
    pub latency: Option<WireLatency>,
    /// With `--threads`: the thread that ran it and the CPU that thread was pinned to.
    pub placement: Option<Placement>,
    /// With `--record`: what its recording wrote.
    pub recorded: Option<Recorded>,
}

/// Where a channel ran.
#[derive(Clone, Debug)]
pub struct Placement {
    /// The thread, from 0.
    pub thread: usize,
    /// The CPU it was pinned to, or why it could not be.
    pub cpu: std::result::Result<usize, String>,
}

/// How the live loop runs.
#[derive(Clone, Copy, Debug)]
pub struct LiveOpts<'a> {
    /// Stop once no datagram came to any channel for this long after the first (0: never).
    pub idle_exit_ms: u64,
    /// A status line a second.
    pub status: bool,
    /// Read without blocking for this long after a datagram (`Duration::MAX`: always).
    pub spin_for: Duration,
    /// Write every datagram each channel reads to `<channel>.pcap` in a folder.
    pub record: Option<RecordOpts<'a>>,
}

/// `--record DIR` and how: the disk allowed to fall `size` behind, going on in a new part
/// every `split` bytes and at each multiple of `every_ns` of receive time.
#[derive(Clone, Copy, Debug)]
pub struct RecordOpts<'a> {
    pub dir: &'a std::path::Path,
    pub size: fastfeed_capture::SpoolSize,
    pub split: Option<u64>,
    pub every_ns: Option<u64>,
}

/// What the threads of one handler share: the feed's last datagram, a stop on failure, and
/// where each channel's counters go once a second (`--metrics`).
pub struct Running {
    start: Instant,
    /// The last datagram any thread read, in ns since `start` plus 1 (0: none yet).
    last_ns: AtomicU64,
    /// Set when a thread failed: the others stop.
    abort: AtomicBool,
    metrics: Option<Arc<Metrics>>,
    /// Told when a channel's recording goes on in a new part (channel, the part's file).
    part_opened: Option<PartOpened>,
}

/// What a new part of a channel's recording is told to (`--record-split`, `--record-every`).
pub type PartOpened = Arc<dyn Fn(&str, &std::path::Path) + Send + Sync>;

impl Running {
    pub fn new(metrics: Option<Arc<Metrics>>) -> Running {
        Running {
            start: Instant::now(),
            last_ns: AtomicU64::new(0),
            abort: AtomicBool::new(false),
            metrics,
            part_opened: None,
        }
    }

    /// With `tell` told of each new part of a recording.
    pub fn on_part(mut self, tell: PartOpened) -> Running {
        self.part_opened = Some(tell);
        self
    }

    /// Every channel's counters now (with its recording's, if it records), for `--metrics`.
    fn publish<'c>(
        &self,
        channels: impl Iterator<
            Item = (
                &'c str,
                &'c Channel,
                Option<&'c WireLatency>,
                Option<(u64, u64)>,
            ),
        >,
    ) {
        if let Some(m) = &self.metrics {
            for (name, ch, latency, recorded) in channels {
                let mut values = channel_values(ch, latency);
                if let Some((written, refused)) = recorded {
                    values.push(("recorded_datagrams".into(), written));
                    values.push(("recorded_refused".into(), refused));
                }
                m.set(name, values);
            }
        }
    }

    /// Every channel's sockets now (the snapshot line's comes and goes), for `--metrics`.
    fn watch_sockets(&self, channels: &[ChannelSetup], live: &[LiveChannel]) {
        if let Some(m) = &self.metrics {
            for (c, l) in channels.iter().zip(live) {
                let lines = l.sockets().into_iter();
                let lines = lines.filter_map(|(line, rx)| Some((line, rx.inode()?)));
                m.watch_sockets(&c.config.name, lines.collect());
            }
        }
    }

    fn saw_packet(&self, at: Instant) {
        let ns = (at - self.start).as_nanos() as u64 + 1;
        self.last_ns.fetch_max(ns, Ordering::Relaxed);
    }

    /// The feed's last datagram: this thread's `mine`, or a later one another thread saw.
    fn last_packet(&self, mine: Option<Instant>) -> Option<Instant> {
        let theirs = match self.last_ns.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(self.start + Duration::from_nanos(ns - 1)),
        };
        mine.max(theirs)
    }

    fn stopped(&self) -> bool {
        signals::stopped() || self.abort.load(Ordering::Relaxed)
    }
}

/// How often a thread tells the others it took a datagram: the idle exit is this exact.
const SHARE_EVERY: Duration = Duration::from_millis(1);

/// Every channel over its captures, lines interleaved by time.
pub fn run_captures<O: Output>(
    channels: &[ChannelSetup],
    out: &mut O,
    status: bool,
) -> Result<Vec<Finished>> {
    captures_on(channels, out, status, &Running::new(None))
}

/// [`run_captures`], stopping early when `run` says so.
pub fn captures_on<O: Output>(
    channels: &[ChannelSetup],
    out: &mut O,
    status: bool,
    run: &Running,
) -> Result<Vec<Finished>> {
    let mut finals = Vec::new();
    for c in channels {
        let (ch, lines) = c
            .run_captures(out, |_, _| match run.stopped() {
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
        run.publish(std::iter::once((c.config.name.as_str(), &ch, None, None)));
        finals.push(Finished {
            name: c.config.name.clone(),
            channel: ch,
            latency: None,
            placement: None,
            recorded: None,
        });
        if run.stopped() {
            break;
        }
    }
    Ok(finals)
}

/// Joins every channel's lines.
pub fn open_live(channels: &[ChannelSetup]) -> Result<Vec<LiveChannel>> {
    channels
        .iter()
        .map(|c| LiveChannel::open(c).with_context(|| format!("channel {}", c.config.name)))
        .collect()
}

/// Prints `ready` (the lines are joined) for whoever started the handler.
pub fn say_ready() -> Result<()> {
    outln!("ready");
    std::io::stdout().flush().ok();
    Ok(())
}

/// Every channel on its multicast lines until idle (or forever), on this thread.
pub fn run_live<O: Output>(
    channels: &[ChannelSetup],
    out: &mut O,
    idle_exit_ms: u64,
    status: bool,
    spin_for: Duration,
) -> Result<Vec<Finished>> {
    let live = open_live(channels)?;
    say_ready()?;
    let opts = LiveOpts {
        idle_exit_ms,
        status,
        spin_for,
        record: None,
    };
    live_on(channels, live, out, &opts, &Running::new(None))
}

/// The live loop over channels already joined.
pub fn live_on<O: Output>(
    channels: &[ChannelSetup],
    mut live: Vec<LiveChannel>,
    out: &mut O,
    o: &LiveOpts<'_>,
    run: &Running,
) -> Result<Vec<Finished>> {
    let start = run.start;
    let idle = Duration::from_millis(o.idle_exit_ms);
    let mut last_packet: Option<Instant> = None;
    let mut shared: Option<Instant> = None;
    let mut next_status = Instant::now() + Duration::from_secs(1);
    let mut last_msgs = 0u64;
    let mut silent = vec![[false; 2]; live.len()];
    if let Some(r) = &o.record {
        let (bytes, every_ns) = (r.split, r.every_ns);
        for (c, l) in channels.iter().zip(&mut live) {
            let path = r.dir.join(record_file(&c.config.name));
            let parts = (bytes.is_some() || every_ns.is_some()).then(|| {
                let (tell, name) = (run.part_opened.clone(), c.config.name.clone());
                let opened: NewPart = Box::new(move |p| {
                    if let Some(tell) = &tell {
                        tell(&name, p);
                    }
                });
                Parts {
                    bytes,
                    every_ns,
                    opened,
                }
            });
            l.record_to(&path, r.size, parts)
                .with_context(|| format!("recording to {}", path.display()))?;
        }
    }
    run.watch_sockets(channels, &live);
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
            if shared.is_none_or(|t| now - t >= SHARE_EVERY) {
                run.saw_packet(now);
                shared = Some(now);
            }
        } else if o.spin_for == Duration::MAX || last_packet.is_some_and(|t| now - t < o.spin_for) {
            // Spinning: for good (`--spin`), or for `--spin-us` after the last datagram.
            std::hint::spin_loop();
        } else {
            // Woken by the next datagram on any line; at least every millisecond for the
            // gaps' timeouts, the status line and the idle exit.
            let sockets = live.iter().flat_map(|l| l.sockets()).map(|(_, rx)| rx);
            fastfeed_net::wait_any(sockets, Duration::from_millis(1))
                .context("waiting for the lines")?;
        }
        if now >= next_status {
            if o.status {
                let msgs: u64 = live.iter().map(|l| l.channel.stats().messages).sum();
                for (c, l) in channels.iter().zip(&live) {
                    eprintln!(
                        "{}",
                        status_line(&c.config.name, &l.channel, (msgs - last_msgs) as f64)
                    );
                    if l.latency.count() > 0 {
                        eprintln!("{} since start: {}", c.config.name, l.latency.summary());
                    }
                    if let Some((written, refused)) = l.recording_counts() {
                        eprintln!(
                            "{}: recorded {written} datagrams, {refused} handled but not recorded (the disk behind)",
                            c.config.name
                        );
                    }
                }
                last_msgs = msgs;
            }
            run.publish((channels.iter().zip(&live)).map(|(c, l)| {
                let name = c.config.name.as_str();
                (name, &l.channel, Some(&l.latency), l.recording_counts())
            }));
            run.watch_sockets(channels, &live);
            next_status += Duration::from_secs(1);
        }
        // Quiet here: is the whole feed quiet? (Another thread's datagrams count too.)
        let quiet = |t: Option<Instant>| t.is_some_and(|t| now - t > idle);
        if run.stopped()
            || o.idle_exit_ms > 0
                && (last_packet.is_none() || quiet(last_packet))
                && quiet(run.last_packet(last_packet))
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
    let finals: Vec<Finished> = channels
        .iter()
        .zip(live)
        .map(|(c, mut l)| {
            let recorded = l.stop_recording();
            let (channel, latency) = l.finish(end_ns, out);
            Finished {
                name: c.config.name.clone(),
                channel,
                latency: Some(latency),
                placement: None,
                recorded,
            }
        })
        .collect();
    run.publish(finals.iter().map(|f| {
        let recorded = f.recorded.as_ref().map(|r| (r.datagrams, r.refused));
        (f.name.as_str(), &f.channel, f.latency.as_ref(), recorded)
    }));
    Ok(finals)
}

/// The file a channel is recorded to: its name, with what a file name should not hold as
/// `_`.
pub fn record_file(channel: &str) -> String {
    let name: String = channel
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '-' | '_' => c,
            _ => '_',
        })
        .collect();
    format!("{name}.pcap")
}

/// A channel's counters as the report names them, with its instruments and, live, its
/// datagrams' latency.
pub fn channel_values(ch: &Channel, latency: Option<&WireLatency>) -> Vec<(String, u64)> {
    let mut v = ch.stats().fields();
    let (known, waiting) = ch.instrument_counts();
    v.push(("instruments".into(), known as u64));
    v.push(("not_live".into(), waiting as u64));
    v.extend(latency.into_iter().flat_map(|w| w.fields()));
    v
}

/// What one thread did: its channels, and its output's (records published, refused).
pub type Served = (Vec<Finished>, Option<(u64, u64)>);

/// Tells the thread that started the handler that this one has joined its lines (or
/// failed before it could).
pub type Ready<'a> = &'a dyn Fn(std::result::Result<(), String>) -> Result<()>;

/// The channels dealt over `threads` threads, channel C on thread C mod T (at most one
/// thread a channel), each pinned to its own core (physical cores first) and running
/// `serve` on its own channels; with `announce`, `ready` is printed once every thread has
/// joined its lines.
/// The channels come back in the configuration's order, each with where it ran.
pub fn on_threads<F>(
    channels: &[ChannelSetup],
    threads: usize,
    announce: bool,
    run: &Running,
    serve: F,
) -> Result<Served>
where
    F: Fn(&[ChannelSetup], &Running, Ready<'_>) -> Result<Served> + Sync,
{
    let threads = threads.clamp(1, channels.len().max(1));
    let mut mine: Vec<Vec<usize>> = vec![Vec::new(); threads];
    for c in 0..channels.len() {
        mine[c % threads].push(c);
    }
    let (ready_tx, ready_rx) = mpsc::channel::<std::result::Result<(), String>>();
    let outcomes = std::thread::scope(|s| {
        let handles: Vec<_> = mine
            .iter()
            .enumerate()
            .map(|(t, idx)| {
                let set: Vec<ChannelSetup> = idx.iter().map(|&c| channels[c].clone()).collect();
                let ready_tx = ready_tx.clone();
                let serve = &serve;
                std::thread::Builder::new()
                    .name(format!("handle-{t}"))
                    .spawn_scoped(s, move || {
                        let cpu = fastfeed_net::affinity::pin_current_thread(t)
                            .map_err(|e| e.to_string());
                        let said = |r| {
                            // Unheard once the starting thread has stopped listening.
                            let _ = ready_tx.send(r);
                            Ok(())
                        };
                        let r = serve(&set, run, &said);
                        if let Err(e) = &r {
                            run.abort.store(true, Ordering::Relaxed);
                            let _ = said(Err(format!("{e:#}")));
                        }
                        r.map(|served| (served, cpu))
                    })
            })
            .collect::<std::io::Result<_>>()?;
        drop(ready_tx);
        let mut failed = false;
        for _ in 0..threads {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        if announce && !failed {
            say_ready()?;
        }
        Ok::<_, anyhow::Error>(handles.into_iter().map(|h| h.join()).collect::<Vec<_>>())
    })?;
    let mut finals: Vec<Option<Finished>> = (0..channels.len()).map(|_| None).collect();
    let mut bus: Option<(u64, u64)> = None;
    let mut errors = Vec::new();
    for ((t, idx), outcome) in mine.iter().enumerate().zip(outcomes) {
        match outcome {
            Ok(Ok(((done, counts), cpu))) => {
                for (&c, mut f) in idx.iter().zip(done) {
                    f.placement = Some(Placement {
                        thread: t,
                        cpu: cpu.clone(),
                    });
                    finals[c] = Some(f);
                }
                if let Some((p, e)) = counts {
                    let (bp, be) = bus.get_or_insert((0, 0));
                    *bp += p;
                    *be += e;
                }
            }
            Ok(Err(e)) => errors.push(format!("thread {t}: {e:#}")),
            Err(_) => errors.push(format!("thread {t} panicked")),
        }
    }
    if let Some(e) = errors.first() {
        bail!("{e}");
    }
    // A run stopped early (Ctrl-C over captures) leaves later channels out.
    let finals: Vec<Finished> = finals.into_iter().flatten().collect();
    if finals.is_empty() && !channels.is_empty() && !run.stopped() {
        return Err(anyhow!("no channel ran"));
    }
    Ok((finals, bus))
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
