//! The `fastfeed` command: a thin layer of argument parsing over the libraries.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use fastfeed_packet::Framing;

mod cmd;
mod input;

#[derive(Parser)]
#[command(name = "fastfeed", version, about = "FAST market-data feed handler")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decode FAST data to JSON Lines, one object per message.
    Decode(cmd::decode::DecodeArgs),
    /// Encode JSON Lines (as `decode` prints them) back into FAST bytes.
    Encode(cmd::encode::EncodeArgs),
    /// Check a template file, or list its templates.
    Templates {
        #[command(subcommand)]
        action: cmd::templates::TemplatesCmd,
    },
    /// Measure decode or encode speed over a whole file held in memory.
    Bench(cmd::bench::BenchArgs),
}

/// How an input file of FAST data is laid out; shared by decode, encode and bench.
#[derive(Args, Clone, Debug)]
pub struct FramingArgs {
    /// Template XML file.
    #[arg(short = 't', long)]
    pub templates: PathBuf,
    /// raw: one stream of messages; len32le: a 4-byte little-endian length before each packet.
    #[arg(long, default_value = "raw")]
    pub framing: Framing,
    /// Bytes of header to skip at the start of each packet.
    #[arg(long, default_value_t = 0)]
    pub skip_header: usize,
    /// Reset the dictionaries at the start of each packet.
    #[arg(long)]
    pub reset_each_packet: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Decode(a) => cmd::decode::run(a),
        Command::Encode(a) => cmd::encode::run(a),
        Command::Templates { action } => cmd::templates::run(action),
        Command::Bench(a) => cmd::bench::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("fastfeed: {e:#}");
            ExitCode::from(2)
        }
    }
}
