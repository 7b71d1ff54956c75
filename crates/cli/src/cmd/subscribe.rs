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

use super::bus::{BusKind, ZenohArgs};

#[derive(Args, Clone)]
pub struct SubscribeArgs {
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
    /// Do not echo records back to the publisher.
    #[arg(long)]
    pub no_echo: bool,
    /// Print every record.
    #[arg(long)]
    pub print: bool,
    /// Write every record, one per line, to this file.
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
        BusKind::Zenoh => run_on(&a.zenoh.open(&a.feed)?, &a),
    }
}

fn run_on<B: Bus>(bus: &B, a: &SubscribeArgs) -> Result<ExitCode> {
    let qos = SubscriberQos {
        class: if a.recorder {
            SubscriberClass::Recorder
        } else {
            SubscriberClass::Screen
        },
        ..SubscriberQos::default()
    };
    let mut sub = RecordSubscriber::new(bus, &securities(&a.securities)?, &qos, !a.no_echo)?;
    // Dumped records are kept and written at the end: formatting them in the receive loop
    // would make this subscriber the slow one it is meant to observe.
    let mut kept = Vec::new();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut io_err = None;
    let mut stall = (a.stall_ms > 0).then(|| Duration::from_millis(a.stall_ms));
    let report = sub.run(Duration::from_secs(a.idle_timeout), |r| {
        if let Some(pause) = stall.take() {
            std::thread::sleep(pause);
        }
        if a.dump.is_some() {
            kept.push(*r);
        }
        if a.print {
            if let Err(e) = writeln!(out, "{r:?}") {
                io_err.get_or_insert(e);
            }
        }
    })?;
    if let Some(e) = io_err {
        return Err(e.into());
    }
    if let Some(p) = &a.dump {
        let mut d = BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
        );
        for r in &kept {
            writeln!(d, "{r:?}")?;
        }
        d.flush()?;
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
    writeln!(
        out,
        "subscriber: received {} records ({}), filtered out {}, missed {}, echoed {}, Done {}",
        report.received,
        per_type.join(", "),
        report.filtered_out,
        report.missed,
        report.echoed,
        if report.complete {
            "seen, all records accounted for"
        } else if report.done_seen {
            "seen, records missing"
        } else {
            "NOT seen"
        }
    )?;
    Ok(if report.complete {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
