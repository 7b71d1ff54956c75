//! `fastfeed generate`: the exchange simulator, writing a `len32le` packet file.

use std::io::BufWriter;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use fastfeed_sim::{GenConfig, Kind};

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum DataSet {
    /// ARCA-like: Quote, New, Change, Remove.
    Simple,
    /// CME-like: MarketData with MDEntries, QuoteRequest.
    Complex,
}

impl DataSet {
    pub fn kind(self) -> Kind {
        match self {
            DataSet::Simple => Kind::Simple,
            DataSet::Complex => Kind::Complex,
        }
    }
}

#[derive(Args, Clone)]
pub struct GenerateArgs {
    #[arg(value_enum, default_value = "simple")]
    pub data: DataSet,
    /// Output packet file.
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// Data messages (a Done message follows them).
    #[arg(short = 'n', long, default_value_t = 30_000)]
    pub count: usize,
    /// Largest packet in bytes, its 4-byte sequence header included.
    #[arg(short = 'p', long, default_value_t = 1024)]
    pub max_packet: usize,
    /// Complex: average MDEntries per message.
    #[arg(long, default_value_t = 3.0)]
    pub seq: f64,
    /// Complex: one security per message.
    #[arg(long)]
    pub nosplit: bool,
    /// Securities (default: 300 simple, 100 complex).
    #[arg(long)]
    pub securities: Option<u32>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

pub fn config(a: &GenerateArgs) -> GenConfig {
    let mut c = GenConfig::for_kind(a.data.kind());
    c.count = a.count;
    c.max_packet = a.max_packet;
    c.avg_entries = a.seq;
    c.nosplit = a.nosplit;
    c.seed = a.seed;
    if let Some(s) = a.securities {
        c.securities = s;
    }
    c
}

pub fn run(a: GenerateArgs) -> Result<ExitCode> {
    let file = std::fs::File::create(&a.output)
        .with_context(|| format!("creating {}", a.output.display()))?;
    let mut out = BufWriter::new(file);
    let s = fastfeed_sim::generate_to(&config(&a), &mut out)?;
    std::io::Write::flush(&mut out)?;
    eprintln!(
        "generated {} messages ({} bytes of FAST) in {} packets, {} bytes, to {}",
        s.messages,
        s.message_bytes,
        s.packets,
        s.bytes_written,
        a.output.display()
    );
    Ok(ExitCode::SUCCESS)
}
