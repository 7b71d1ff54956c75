//! `fastfeed books FEEDCONFIG -o FILE`: every book change (or, with `--trades`, every trade)
//! of a feed's captures, as the handler builds them, into one Parquet or Arrow IPC file:
//! the command-line side of Python's `read_books`/`read_trades` (fastfeed-book-table).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use fastfeed_arrow::{FileFormat, TableWriter};
use fastfeed_book_table::{replay, BookRows, Gather, Replayed, TradeRows};

use super::handle::load;

#[derive(Args)]
pub struct BooksArgs {
    /// The feed configuration (TOML); its lines' capture files are read.
    pub config: PathBuf,
    /// The table file to write.
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// parquet or arrow (IPC); by default from the output's extension, else parquet.
    #[arg(long)]
    pub format: Option<FileFormat>,
    /// Levels a side in each row.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub depth: u16,
    /// A row per trade instead of per book change.
    #[arg(long)]
    pub trades: bool,
    /// Only these instruments (SecurityID; repeat the option for more).
    #[arg(long)]
    pub security: Vec<u64>,
}

pub fn run(a: BooksArgs) -> Result<ExitCode> {
    let (_, channels) = load(&a.config, false)?;
    let only = (!a.security.is_empty()).then(|| a.security.iter().copied().collect());
    let format = a
        .format
        .unwrap_or_else(|| match a.output.extension().and_then(|e| e.to_str()) {
            Some("arrow" | "ipc" | "feather") => FileFormat::Arrow,
            _ => FileFormat::Parquet,
        });
    fn gather<G: Gather>(
        channels: &[fastfeed_handler::ChannelSetup],
        mut g: G,
        finish: impl FnOnce(G) -> Result<arrow_array::RecordBatch, fastfeed_book_table::BookTableError>,
    ) -> Result<(arrow_array::RecordBatch, Replayed)> {
        let done = replay(channels, &mut g)?;
        Ok((finish(g)?, done))
    }
    let (batch, done) = if a.trades {
        gather(&channels, TradeRows::new(only), TradeRows::into_batch)?
    } else {
        gather(
            &channels,
            BookRows::new(a.depth.into(), only),
            BookRows::into_batch,
        )?
    };
    let mut w = TableWriter::create(&a.output, batch.schema(), format)
        .with_context(|| format!("creating {}", a.output.display()))?;
    w.write(&batch)?;
    w.finish()?;
    for d in &done.damage {
        eprintln!("stopped early, the rest unread: {d}");
    }
    for (name, s) in &done.channels {
        eprintln!(
            "{name}: packets A {} B {} snapshot {}, gaps {} (timed out {}), recoveries {}, book errors {}",
            s.packets[0],
            s.packets[1],
            s.snapshot_packets,
            s.gaps_opened,
            s.gaps_timed_out,
            s.recoveries,
            s.book_errors
        );
    }
    eprintln!(
        "{} {} to {}",
        batch.num_rows(),
        if a.trades { "trades" } else { "book changes" },
        a.output.display()
    );
    Ok(ExitCode::SUCCESS)
}
