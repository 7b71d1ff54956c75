//! `fastfeed subscribe`: receive records from the bus, count or print them, echo them back.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use fastfeed_bus::{Bus, Securities, SubscriberClass, SubscriberQos};
use fastfeed_bus_shm::{ShmBus, ShmConfig, WaitMode};
use fastfeed_publish::RecordSubscriber;
use fastfeed_records::Record;

use super::bus::{BusKind, ZenohArgs};
use crate::{input, signals};

#[derive(Args, Clone)]
pub struct SubscribeArgs {
    /// Bus feed name, as the publisher's --feed.
    #[arg(long, default_value = "fastfeed")]
    pub feed: String,
    /// The bus that carries the records.
    #[arg(long, value_enum, default_value_t = BusKind::Shm)]
    pub bus: BusKind,
    #[command(flatten)]
    pub zenoh: ZenohArgs,
    /// "all", or security ids separated by commas.
    #[arg(long, default_value = "all")]
    pub securities: String,
    /// Recorder class: on Zenoh a full queue holds the session's receiving task instead of
    /// dropping the oldest (with the publisher's --block-when-congested, nothing is lost).
    #[arg(long)]
    pub recorder: bool,
    /// A late joiner (Zenoh): first the current state, the last record of each security
    /// published before it joined, then the live stream with no gap and no duplicate. Prints
    /// "ready" once it has the state (or found no publisher within 5 s).
    #[arg(long)]
    pub history: bool,
    /// Records queued per record type before the class's rule applies (a screen drops its
    /// oldest, a recorder holds the session).
    #[arg(long, default_value_t = fastfeed_bus::DEFAULT_QUEUE,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub queue: usize,
    /// Do not echo records back to the publisher.
    #[arg(long)]
    pub no_echo: bool,
    /// Print every record, as JSON Lines (one object per record).
    #[arg(long)]
    pub print: bool,
    /// Write every record to this file as JSON Lines, as they come.
    #[arg(long)]
    pub dump: Option<PathBuf>,
    /// Poll by yielding the CPU instead of sleeping 50 us: lowest latency.
    #[arg(long)]
    pub spin: bool,
    /// Stop after this many seconds without traffic if no Done came.
    #[arg(long, default_value_t = 30)]
    pub idle_timeout: u64,
    /// After the first record, stop reading for this many milliseconds: a stuck consumer.
    /// The publisher and other subscribers go on; the records overwritten in this one's
    /// full queues are counted as missed.
    #[arg(long, default_value_t = 0)]
    pub stall_ms: u64,
    /// Write every counter of the report to this file as JSON.
    #[arg(long)]
    pub report_json: Option<PathBuf>,
}

fn securities(s: &str) -> Result<Securities> {
    if s == "all" {
        return Ok(Securities::All);
    }
    let ids = s
        .split(',')
        .map(|x| {
            x.trim()
                .parse::<u32>()
                .with_context(|| format!("bad security id {x:?}"))
        })
        .collect::<Result<_>>()?;
    Ok(Securities::Only(ids))
}

pub fn run(a: SubscribeArgs) -> Result<ExitCode> {
    for (flag, path) in [("--dump", &a.dump), ("--report-json", &a.report_json)] {
        if let Some(p) = path {
            input::writable(p, flag)?;
        }
    }
    signals::install();
    match a.bus {
        BusKind::Shm => {
            let mut config = ShmConfig::default();
            if a.spin {
                config.wait_mode = WaitMode::Spin;
            }
            let bus =
                ShmBus::with_config(&a.feed, config).context("opening the shared-memory bus")?;
            run_on(&bus, &a)
        }
        BusKind::Zenoh => {
            let bus = a.zenoh.open(&a.feed)?;
            if a.spin {
                bus.spin_when_idle();
            }
            run_on(&bus, &a)
        }
    }
}

fn run_on<B: Bus>(bus: &B, a: &SubscribeArgs) -> Result<ExitCode> {
    let qos = SubscriberQos {
        class: if a.recorder {
            SubscriberClass::Recorder
        } else {
            SubscriberClass::Screen
        },
        late_join: a.history,
        queue: a.queue,
    };
    let mut sub = RecordSubscriber::new(bus, &securities(&a.securities)?, &qos, !a.no_echo)
        .context("subscribing")?;
    if a.history {
        // The backend ends every join within its own time limits; this one only guards
        // against a backend that would not.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while sub.joining() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready")?;
        out.flush()?;
    }
    sub.stop_on(&signals::STOP);
    // Written by a thread of its own, a batch at a time: formatting in the receive loop would
    // make this subscriber the slow one it is meant to observe, and keeping them all to write
    // at the end would hold every record in memory.
    let dump = match &a.dump {
        Some(p) => Some(dump_writer(
            std::fs::File::create(p).with_context(|| format!("--dump {}", p.display()))?,
        )),
        None => None,
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut io_err = None;
    let mut stall = (a.stall_ms > 0).then(|| Duration::from_millis(a.stall_ms));
    let mut pending: Vec<Record> = Vec::with_capacity(DUMP_BATCH);
    let report = sub.run(Duration::from_secs(a.idle_timeout), |r| {
        if let Some(pause) = stall.take() {
            std::thread::sleep(pause);
        }
        if let Some((tx, _)) = &dump {
            pending.push(*r);
            if pending.len() >= DUMP_BATCH {
                // A send fails only once the writer stopped on an error, which join reports.
                let _ = tx.send(std::mem::replace(
                    &mut pending,
                    Vec::with_capacity(DUMP_BATCH),
                ));
            }
        }
        if a.print {
            if let Err(e) = writeln!(out, "{}", r.to_json()) {
                io_err.get_or_insert(e);
            }
        }
    })?;
    if let (Some((tx, writer)), Some(p)) = (dump, &a.dump) {
        let _ = tx.send(pending);
        drop(tx);
        let written = writer.join().expect("the dump writer does not panic");
        written.with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(e) = io_err {
        return Err(e).context("writing the records to standard output");
    }
    if let Some(path) = &a.report_json {
        super::report::write(path, &super::report::subscriber(&report))?;
    }
    let per_type: Vec<String> = report
        .per_type
        .iter()
        .filter(|t| t.received > 0)
        .map(|t| format!("{} {}", t.type_name, t.received))
        .collect();
    if let Some(w) = &report.one_way {
        let us = |ns: u64| ns as f64 / 1e3;
        writeln!(
            out,
            "one way from the publisher (on this host's clock), {} records: p50 {:.1} us, p90 {:.1}, \
             p99 {:.1}, p99.9 {:.1}, max {:.1}",
            w.count,
            us(w.p50_ns),
            us(w.p90_ns),
            us(w.p99_ns),
            us(w.p999_ns),
            us(w.max_ns)
        )?;
    }
    writeln!(
        out,
        "subscriber: received {} records ({}{}), filtered out {}, missed {}{}, echoed {}, Done {}",
        report.received,
        per_type.join(", "),
        if a.history {
            format!("; current state {}", report.snapshot)
        } else {
            String::new()
        },
        report.filtered_out,
        report.missed,
        match report.rejected {
            0 => String::new(),
            n => format!(" ({n} of them samples refused as malformed)"),
        },
        report.echoed,
        if report.complete {
            "seen, all records accounted for"
        } else if report.mixed {
            "seen, but records of several publishers mixed"
        } else if report.done_seen {
            "seen, records missing"
        } else {
            "NOT seen"
        }
    )?;
    if report.mixed {
        let ids: Vec<String> = report.publishers.iter().map(u32::to_string).collect();
        writeln!(
            out,
            "  {} publishers on feed {:?} (ids {}): their records cannot be told apart or \
             accounted for; run one publisher per feed",
            ids.len(),
            a.feed,
            ids.join(", ")
        )?;
    }
    if report.interrupted {
        writeln!(out, "interrupted: a partial report")?;
    }
    Ok(if report.interrupted {
        signals::exit_code()
    } else if report.complete {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

type DumpWriter = (
    std::sync::mpsc::Sender<Vec<Record>>,
    std::thread::JoinHandle<std::io::Result<()>>,
);

/// Records handed to the dump writer at a time: a send per record woke its thread per record,
/// a wake-up the receive loop paid for.
const DUMP_BATCH: usize = 256;

/// A thread writing the batches of records sent to it, one a line, until the sender is
/// dropped.
fn dump_writer(file: std::fs::File) -> DumpWriter {
    let (tx, rx) = std::sync::mpsc::channel::<Vec<Record>>();
    let writer = std::thread::spawn(move || {
        crate::signals::lower_this_threads_priority();
        let mut out = BufWriter::with_capacity(1 << 20, file);
        for batch in rx {
            for r in batch {
                writeln!(out, "{}", r.to_json())?;
            }
        }
        out.flush()
    });
    (tx, writer)
}
