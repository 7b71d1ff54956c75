//! `fastfeed publish` on a many-channel feed (`publish opra`, or `--channels N`): channel C
//! arrives on its own multicast group (-g plus C), and the channels are split over threads,
//! channel C on thread C mod T (from a file, the channels dealt out by their bytes). Each
//! thread is pinned to its own core and owns everything on its hot path: its sockets,
//! decoder, converter and bus publisher (a bus node of its own).
//! The threads are one publisher group on the feed: partners, not rivals, and subscribers
//! wait for every thread's Done.

use std::net::SocketAddrV4;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use fastfeed_bus::Bus;
use fastfeed_bus_shm::ShmBus;
use fastfeed_bus_zenoh::ZenohBus;
use fastfeed_net::{channel_group, realtime_ns, Lines};
use fastfeed_packet::len32le_packets;
use fastfeed_publish::{DecodingPublisher, Group};
use serde_json::{json, Value};

use super::bus::BusKind;
use super::publish::{
    announce_ready, report, start, templates, write_stages, IdleWait, PublishArgs, ECHO_QUIET,
};
use crate::out::out;
use crate::{input, signals};

/// What one channel thread did, for the report.
struct ThreadOutcome {
    thread: usize,
    core: std::result::Result<usize, String>,
    channels: Vec<u16>,
    not_done: Vec<u16>,
    messages: u64,
    records: u64,
    first_last: Option<(Instant, Instant)>,
    kernel_drops: Option<u64>,
    text: String,
    json: Value,
    /// decode, publish and round trip.
    stages: [fastfeed_stats::Stage; 4],
}

/// What every thread shares, read-only.
struct Shared {
    args: PublishArgs,
    templates: Arc<fastfeed_codec::Templates>,
    group: Group,
    /// The packet file (-f), read once.
    file: Option<Vec<u8>>,
    /// Set when a thread failed: the others stop.
    abort: AtomicBool,
    /// Zenoh with `--listen`: the session the threads share, as an endpoint is bound once.
    /// Otherwise each thread opens its own (nothing of Zenoh's shared between them).
    zenoh: Option<ZenohBus>,
}

pub fn run(a: &PublishArgs, channels: u16, threads: usize) -> Result<ExitCode> {
    let shared = Arc::new(Shared {
        args: a.clone(),
        templates: templates(a)?,
        group: Group::new(threads as u32),
        file: a.file.as_deref().map(input::bytes).transpose()?,
        abort: AtomicBool::new(false),
        zenoh: match a.bus {
            BusKind::Zenoh if !a.zenoh.listen.is_empty() => Some(a.zenoh.open(&a.feed)?),
            _ => None,
        },
    });
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
    let mut handles = Vec::with_capacity(threads);
    let weights = shared.file.as_deref().map(|f| channel_bytes(f, channels));
    for (t, mine) in assign(channels, threads, weights.as_deref())
        .into_iter()
        .enumerate()
    {
        let shared = shared.clone();
        let ready = ready_tx.clone();
        let h = std::thread::Builder::new()
            .name(format!("channels-{t}"))
            .spawn(move || {
                let r = channel_thread(t, mine, &shared, &ready);
                if let Err(e) = &r {
                    shared.abort.store(true, Ordering::Relaxed);
                    // Only heard while the main thread waits for the threads to be ready.
                    let _ = ready.send(Err(format!("{e:#}")));
                }
                r
            })
            .context("starting a channel thread")?;
        handles.push(h);
    }
    drop(ready_tx);
    let mut failed = None;
    for _ in 0..threads {
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                failed = Some(e);
                break;
            }
            Err(_) => break,
        }
    }
    if failed.is_none() {
        announce_ready()?;
    }
    let mut outcomes = Vec::with_capacity(threads);
    let mut errors = Vec::new();
    for h in handles {
        match h.join() {
            Ok(Ok(o)) => outcomes.push(o),
            Ok(Err(e)) => errors.push(format!("{e:#}")),
            Err(_) => errors.push("a channel thread panicked".to_string()),
        }
    }
    if let Some(e) = errors.first().or(failed.as_ref()) {
        bail!("{e}");
    }
    out!("{}", text(&outcomes, channels));
    if let Some(path) = &a.report_json {
        super::report::write(path, &json(&outcomes, channels))?;
    }
    // The threads' distributions merged: the publisher's, whatever thread took a packet.
    if let Some((first, rest)) = outcomes.split_first() {
        let mut all = first.stages.clone();
        for o in rest {
            for (m, s) in all.iter_mut().zip(&o.stages) {
                m.merge(s);
            }
        }
        write_stages(a, &all.iter().collect::<Vec<_>>())?;
    }
    Ok(if signals::stopped() {
        signals::exit_code()
    } else if outcomes.iter().all(|o| o.not_done.is_empty()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The channels of each of `threads` threads. Live, channel C on thread C mod T: nothing
/// says yet which channels will be busy. With each channel's bytes known (a file), the
/// busiest channel first to the thread with the fewest bytes so far: on the OPRA-like feed,
/// whose first channels carry the most, C mod 2 split a million messages 552,724 / 447,300.
fn assign(channels: u16, threads: usize, weights: Option<&[u64]>) -> Vec<Vec<u16>> {
    let threads = threads.max(1);
    let mut mine = vec![Vec::new(); threads];
    let thread_of: Vec<usize> = match weights {
        None => (0..channels as usize).map(|c| c % threads).collect(),
        Some(w) => crate::deal::least_loaded(w, threads),
    };
    for (c, t) in (0..channels).zip(thread_of) {
        mine[t].push(c);
    }
    mine
}

/// The bytes of each channel's packets in a `len32le` file (by the channel number after
/// the 4-byte sequence number; packets too short or of other channels count nowhere).
fn channel_bytes(data: &[u8], channels: u16) -> Vec<u64> {
    let mut w = vec![0u64; channels as usize];
    for p in len32le_packets(data).map_while(Result::ok) {
        if let Some(c) = p.bytes.get(4..6) {
            if let Some(n) = w.get_mut(u16::from_le_bytes([c[0], c[1]]) as usize) {
                *n += p.bytes.len() as u64;
            }
        }
    }
    w
}

/// One thread: pins itself, opens its bus, serves its channels.
fn channel_thread(
    t: usize,
    mine: Vec<u16>,
    shared: &Shared,
    ready: &mpsc::Sender<Result<(), String>>,
) -> Result<ThreadOutcome> {
    let core = fastfeed_net::affinity::pin_current_thread(t).map_err(|e| e.to_string());
    let a = &shared.args;
    match a.bus {
        BusKind::Shm => {
            let bus = ShmBus::new(&a.feed).context("opening the shared-memory bus")?;
            serve(&bus, t, core, mine, shared, ready)
        }
        BusKind::Zenoh => {
            let bus = match &shared.zenoh {
                Some(listening) => listening.partner(),
                None => a.zenoh.open(&a.feed)?,
            };
            serve(&bus, t, core, mine, shared, ready)
        }
    }
}

fn serve<B: Bus>(
    bus: &B,
    t: usize,
    core: std::result::Result<usize, String>,
    mine: Vec<u16>,
    shared: &Shared,
    ready: &mpsc::Sender<Result<(), String>>,
) -> Result<ThreadOutcome> {
    let a = &shared.args;
    let mut p = start(
        bus,
        a,
        shared.templates.clone(),
        Some(mine.clone()),
        shared.group,
        || stop(shared),
    )?;
    let mut kernel_drops = None;
    let mut socket = Value::Null;
    match &shared.file {
        Some(data) => {
            let _ = ready.send(Ok(()));
            from_file(&mut p, data, &mine, t == 0, shared)?;
        }
        None => {
            let groups = mine
                .iter()
                .map(|&c| channel_group(a.group, c))
                .collect::<Result<Vec<SocketAddrV4>, _>>()?;
            let mut lines = Lines::join(&groups, a.source, a.interface)
                .with_context(|| format!("joining the groups of channels {mine:?}"))?;
            let _ = ready.send(Ok(()));
            receive(&mut p, &mut lines, shared)?;
            let rx = lines.receivers();
            kernel_drops = rx.iter().map(|r| r.kernel_drops()).sum();
            socket = json!({
                "groups": groups.iter().map(|g| g.to_string()).collect::<Vec<_>>(),
                "recv_buffer_granted": rx.first().map(|r| r.recv_buffer_size()),
                "kernel_drops": kernel_drops,
            });
        }
    }
    let elapsed = p.elapsed();
    if !signals::stopped() && !shared.abort.load(Ordering::Relaxed) {
        p.finish(Duration::from_secs(5))?;
        if a.bus == BusKind::Zenoh {
            p.wait_for_byes(Duration::from_secs(15))?;
        }
    }
    let mut js = super::report::publisher(&p, elapsed);
    js["thread"] = t.into();
    js["core"] = core.clone().map_or(Value::Null, Value::from);
    js["channels"] = json!(mine);
    js["socket"] = socket;
    let (_, not_done) = p.channels();
    Ok(ThreadOutcome {
        thread: t,
        core,
        channels: mine,
        not_done,
        messages: p.counters.messages,
        records: p.counters.records,
        first_last: p.first_last_packet(),
        kernel_drops,
        text: report(&p, elapsed),
        json: js,
        stages: [
            p.in_socket.clone(),
            p.decode.clone(),
            p.publish.clone(),
            p.round_trip.clone(),
        ],
    })
}

fn stop(shared: &Shared) -> bool {
    signals::stopped() || shared.abort.load(Ordering::Relaxed)
}

/// The file's packets of this thread's channels (and, on thread 0, those too short to
/// carry a channel number, so each is counted once).
fn from_file<B: Bus>(
    p: &mut DecodingPublisher<B>,
    data: &[u8],
    mine: &[u16],
    first: bool,
    shared: &Shared,
) -> Result<()> {
    for packet in len32le_packets(data) {
        if stop(shared) {
            break;
        }
        let bytes = packet.context("reading the packet file")?.bytes;
        let ours = match bytes.get(4..6) {
            Some(c) => mine.contains(&u16::from_le_bytes([c[0], c[1]])),
            None => first,
        };
        if ours {
            p.on_packet(bytes)?;
        }
    }
    Ok(())
}

/// Takes packets from the thread's groups until every channel's Done and then quiet for the
/// linger time, or until no packet came for the idle timeout.
fn receive<B: Bus>(p: &mut DecodingPublisher<B>, lines: &mut Lines, shared: &Shared) -> Result<()> {
    let a = &shared.args;
    let block = a.idle_wait == IdleWait::Block;
    let idle = Duration::from_secs(a.idle_timeout);
    let linger = Duration::from_millis(a.linger_ms);
    let mut buf = vec![0u8; 65536];
    let mut last = Instant::now();
    while !stop(shared) {
        match lines.try_recv_stamped(&mut buf).context("receiving")? {
            Some((_, n, stamp)) => {
                last = Instant::now();
                if let Some(at) = stamp {
                    p.in_socket.record(realtime_ns().saturating_sub(at));
                }
                p.on_packet(&buf[..n])?;
                if block {
                    p.await_echoes(ECHO_QUIET)?;
                }
            }
            None => {
                p.poll_echoes()?;
                if p.counters.done && last.elapsed() >= linger {
                    break;
                }
                if last.elapsed() > idle {
                    let (_, not_done) = p.channels();
                    eprintln!(
                        "no packet for {} s and no Done on channels {not_done:?}: stopping",
                        a.idle_timeout
                    );
                    break;
                }
                if block {
                    lines.wait(Duration::from_millis(1))?;
                } else {
                    std::thread::yield_now();
                }
            }
        }
    }
    Ok(())
}

/// First to last packet over all threads.
fn span(outcomes: &[ThreadOutcome]) -> Duration {
    let first = outcomes
        .iter()
        .filter_map(|o| o.first_last)
        .map(|f| f.0)
        .min();
    let last = outcomes
        .iter()
        .filter_map(|o| o.first_last)
        .map(|f| f.1)
        .max();
    match (first, last) {
        (Some(a), Some(b)) => b - a,
        _ => Duration::ZERO,
    }
}

fn text(outcomes: &[ThreadOutcome], channels: u16) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for o in outcomes {
        let core = match &o.core {
            Ok(c) => format!("core {c}"),
            Err(e) => format!("not pinned: {e}"),
        };
        let _ = writeln!(
            out,
            "== thread {} ({core}), channels {:?}",
            o.thread, o.channels
        );
        out.push_str(&o.text);
    }
    let messages: u64 = outcomes.iter().map(|o| o.messages).sum();
    let records: u64 = outcomes.iter().map(|o| o.records).sum();
    let not_done: Vec<u16> = outcomes.iter().flat_map(|o| o.not_done.clone()).collect();
    let secs = span(outcomes).as_secs_f64();
    let _ = writeln!(
        out,
        "== all {} threads, {channels} channels: messages {messages}, records {records}, \
         Done {}",
        outcomes.len(),
        if not_done.is_empty() {
            "seen on every channel".to_string()
        } else {
            format!("NOT seen on channels {not_done:?}")
        }
    );
    if secs > 0.0 {
        let _ = writeln!(
            out,
            "first to last packet over all threads: {:.1} ms, {:.0} messages/s",
            secs * 1e3,
            messages as f64 / secs
        );
    }
    let drops: Option<u64> = outcomes.iter().map(|o| o.kernel_drops).sum();
    if let Some(d) = drops {
        let _ = writeln!(out, "datagrams dropped by the kernel, all sockets: {d}");
    }
    out
}

fn json(outcomes: &[ThreadOutcome], channels: u16) -> Value {
    let messages: u64 = outcomes.iter().map(|o| o.messages).sum();
    let records: u64 = outcomes.iter().map(|o| o.records).sum();
    let not_done: Vec<u16> = outcomes.iter().flat_map(|o| o.not_done.clone()).collect();
    let drops: Option<u64> = outcomes.iter().map(|o| o.kernel_drops).sum();
    json!({
        "channels": channels,
        "threads": outcomes.iter().map(|o| o.json.clone()).collect::<Vec<_>>(),
        "messages": messages,
        "records": records,
        "done": not_done.is_empty(),
        "channels_not_done": not_done,
        "first_to_last_packet_ms": span(outcomes).as_secs_f64() * 1e3,
        "kernel_drops": drops,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_channels_go_round_the_threads_and_a_file_s_by_their_bytes() {
        assert_eq!(assign(5, 2, None), [vec![0, 2, 4], vec![1, 3]]);
        // Busiest first, each to the least loaded thread: 9 + 1 against 5 + 3 + 1, where
        // C mod 2 would give 13 against 6.
        let w = [9, 5, 3, 1, 1];
        assert_eq!(assign(5, 2, Some(&w)), [vec![0, 4], vec![1, 2, 3]]);
        assert_eq!(assign(3, 3, Some(&[1, 1, 1])), [vec![0], vec![1], vec![2]]);
        assert_eq!(assign(2, 4, None), [vec![0], vec![1], vec![], vec![]]);
    }

    #[test]
    fn channel_bytes_count_each_channel_s_packets() {
        let mut f = Vec::new();
        for (seq, ch, len) in [(1u32, 0u16, 10usize), (1, 1, 20), (2, 0, 7), (1, 9, 6)] {
            f.extend_from_slice(&(len as u32).to_le_bytes());
            let mut p = vec![0u8; len];
            p[..4].copy_from_slice(&seq.to_le_bytes());
            p[4..6].copy_from_slice(&ch.to_le_bytes());
            f.extend_from_slice(&p);
        }
        // Channel 9 is past the 2 channels: counted nowhere.
        assert_eq!(channel_bytes(&f, 2), [17, 20]);
    }
}
