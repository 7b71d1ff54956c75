//! `fastfeed replay FEEDCONFIG`: every line's capture to its multicast group, interleaved as
//! recorded, at full speed, a rate, or the recorded pace, with faults on each line
//! independently (or the same faults on every faulted line).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use fastfeed_feed::FeedConfig;
use fastfeed_handler::replay::{replay, Pace, ReplayFaults};
use fastfeed_handler::{setup, LineId};

use super::multicast::FaultArgs;

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum LineName {
    A,
    B,
    Snapshot,
}

#[derive(Args)]
pub struct ReplayArgs {
    /// The feed configuration (TOML).
    pub config: PathBuf,
    /// Packets per second, all lines together (default: full speed).
    #[arg(long, conflicts_with = "recorded")]
    pub rate: Option<f64>,
    /// At the recorded pace (capture times, or SendingTime for raw files), sped up by
    /// --speed.
    #[arg(long)]
    pub recorded: bool,
    /// Speed-up of --recorded.
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// The lines that get the faults (each its own seed: seed, seed+1, ...).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "a,b")]
    pub fault_lines: Vec<LineName>,
    /// The same packet meets the same fate on every faulted line (drawn from --seed and its
    /// bytes): A and B lose the same packets. No reordering then.
    #[arg(long)]
    pub same_faults: bool,
    #[command(flatten)]
    pub faults: FaultArgs,
    /// No progress bar.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

pub fn run(a: ReplayArgs) -> Result<ExitCode> {
    let feed = FeedConfig::load(&a.config)?;
    let channels = setup(&feed)?;
    let pace = match (a.rate, a.recorded) {
        (Some(r), _) => Pace::Rate(r),
        (None, true) => Pace::Recorded(a.speed),
        (None, false) => Pace::Full,
    };
    let faults = ReplayFaults {
        config: a.faults.config(),
        seed: a.faults.seed,
        same: a.same_faults,
        lines: a
            .fault_lines
            .iter()
            .map(|l| match l {
                LineName::A => LineId::A,
                LineName::B => LineId::B,
                LineName::Snapshot => LineId::Snapshot,
            })
            .collect(),
    };
    let progress = !a.quiet && std::io::stderr().is_terminal();
    let start = std::time::Instant::now();
    let reports = replay(&channels, pace, &faults, |done, read| {
        if progress {
            let pct = 100.0 * read.done as f64 / read.total.max(1) as f64;
            eprint!("\r{done} packets, {pct:.0}% of the captures read");
            std::io::stderr().flush().ok();
        }
    })?;
    if progress {
        eprintln!();
    }
    for r in &reports {
        let f = r.faults;
        eprintln!(
            "{}/{} line {} -> {}: {} packets, {} sent (dropped {}, duplicated {}, reordered {}, corrupted {})",
            feed.feed,
            r.channel,
            r.line.name(),
            r.group,
            r.packets,
            r.sent,
            f.dropped,
            f.duplicated,
            f.reordered,
            f.corrupted
        );
        if let Some(d) = &r.damage {
            eprintln!("  stopped early, the rest of the file unread: {d}");
        }
    }
    eprintln!("replayed in {:.3} s", start.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}
