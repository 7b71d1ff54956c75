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
    /// The exchange simulator: write a packet file of simple or complex data.
    Generate(cmd::generate::GenerateArgs),
    /// Send a packet file to a multicast group, one datagram per packet.
    Multicast(cmd::multicast::MulticastArgs),
    /// The decoding publisher: packets in, records out on the shared-memory bus.
    Publish(cmd::publish::PublishArgs),
    /// Receive records from the bus; echo them back for latency measurement.
    Subscribe(cmd::subscribe::SubscribeArgs),
    /// The whole system on this host: generate, subscribe, publish, multicast, report.
    Demo(cmd::demo::DemoArgs),
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
    fastfeed_bus::quiet_engine_logs();
    let result = match cli.command {
        Command::Decode(a) => cmd::decode::run(a),
        Command::Encode(a) => cmd::encode::run(a),
        Command::Templates { action } => cmd::templates::run(action),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Generate(a) => cmd::generate::run(a),
        Command::Multicast(a) => cmd::multicast::run(a),
        Command::Publish(a) => cmd::publish::run(a),
        Command::Subscribe(a) => cmd::subscribe::run(a),
        Command::Demo(a) => cmd::demo::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("fastfeed: {e:#}");
            ExitCode::from(2)
        }
    }
}
