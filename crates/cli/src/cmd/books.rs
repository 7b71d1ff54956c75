//! `fastfeed books FEEDCONFIG -o FILE`: every book change (or, with `--trades`, every trade)
//! of a feed's captures, as the handler builds them, into one Parquet or Arrow IPC file:
//! the command-line side of Python's `read_books`/`read_trades` (fastfeed-book-table).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use arrow_array::RecordBatch;
use clap::Args;
use fastfeed_arrow::{FileFormat, TableWriter};
use fastfeed_book_table::{replay, BookRows, BookTableError, Replayed, Rows, Streamed, TradeRows};

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
    /// Rows a batch: the file is written a batch at a time, so memory stays bounded.
    #[arg(long, default_value_t = 65_536)]
    pub batch_rows: usize,
    /// Fraction digits of the price columns; by default what the first batch's prices need
    /// (a later price needing more ends the run, naming the scale to give).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=18))]
    pub price_scale: Option<u8>,
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
    // The file is created with the first batch's schema, and written a batch at a time.
    let mut writer: Option<TableWriter> = None;
    let mut rows = 0;
    let sink = |batch: RecordBatch| -> Result<(), BookTableError> {
        let w = match &mut writer {
            Some(w) => w,
            None => writer.insert(
                TableWriter::create(&a.output, batch.schema(), format)
                    .map_err(|e| BookTableError::Sink(format!("{}: {e}", a.output.display())))?,
            ),
        };
        rows += batch.num_rows();
        w.write(&batch)
            .map_err(|e| BookTableError::Sink(format!("{}: {e}", a.output.display())))
    };
    let scale = a.price_scale.map(i32::from);
    let done = if a.trades {
        stream(
            &channels,
            Streamed::new(TradeRows::new(only), a.batch_rows, scale, sink),
        )?
    } else {
        let rows = BookRows::new(a.depth.into(), only);
        stream(&channels, Streamed::new(rows, a.batch_rows, scale, sink))?
    };
    if let Some(w) = writer {
        w.finish()?;
    }
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
        "{rows} {} to {}",
        if a.trades { "trades" } else { "book changes" },
        a.output.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Replays the channels into `out`, then hands on its last rows.
fn stream<R: Rows, S: FnMut(RecordBatch) -> Result<(), BookTableError> + Send>(
    channels: &[fastfeed_handler::ChannelSetup],
    mut out: Streamed<R, S>,
) -> Result<Replayed> {
    let done = replay(channels, &mut out)?;
    out.finish()?;
    Ok(done)
}
