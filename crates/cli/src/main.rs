//! The `fastfeed` command: a thin layer of argument parsing over the libraries.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use fastfeed_packet::Framing;

mod cmd;
mod deal;
mod hint;
mod input;
mod metrics;
mod out;
mod signals;
mod tally;

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
    /// Generate a Rust decoder and encoder specialised for a template file.
    Codegen(cmd::codegen::CodegenArgs),
    /// The exchange simulator: write a packet file of simple or complex data.
    Generate(cmd::generate::GenerateArgs),
    /// Send a packet file to a multicast group, one datagram per packet.
    Multicast(cmd::multicast::MulticastArgs),
    /// The decoding publisher: packets in, records out on the bus.
    Publish(cmd::publish::PublishArgs),
    /// Receive records from the bus; echo them back for latency measurement.
    Subscribe(cmd::subscribe::SubscribeArgs),
    /// The whole system on this host: generate, subscribe, publish, multicast, report.
    Demo(cmd::demo::DemoArgs),
    /// The feed handler: a feed's lines in, arbitrated, decoded, books built and recovered.
    Handle(cmd::handle::HandleArgs),
    /// Send a feed's captures to their multicast groups, with faults per line.
    Replay(cmd::replay::ReplayArgs),
    /// One instrument's book as the handler builds it (JSON Lines with --json).
    Book(cmd::book::BookArgs),
    /// Every book change (or trade) of a feed's captures, as the handler builds them, into a
    /// Parquet or Arrow file.
    Books(cmd::books::BooksArgs),
    /// FIX tag=value: FAST to FIX, FIX to FAST, and the compression report.
    Fix {
        #[command(subcommand)]
        action: cmd::fix::FixCmd,
    },
}

/// How an input file of FAST data is laid out; shared by decode, encode and bench.
#[derive(Args, Clone, Debug)]
pub struct FramingArgs {
    /// Template XML file.
    #[arg(short = 't', long)]
    pub templates: PathBuf,
    /// raw: one stream of messages; len32le: a 4-byte little-endian length before each
    /// packet; pcap: the UDP datagrams of a pcap or pcapng capture (see --udp), one packet
    /// each. A pcap/pcapng file is recognized by its magic number whatever this says.
    #[arg(long, default_value = "raw")]
    pub framing: InputFraming,
    /// With pcap: only the datagrams sent to this group and port (default: all UDP).
    #[arg(long, value_name = "GROUP:PORT")]
    pub udp: Option<std::net::SocketAddrV4>,
    /// Bytes of header to skip at the start of each packet.
    #[arg(long, default_value_t = 0)]
    pub skip_header: usize,
    /// Reset the dictionaries at the start of each packet.
    #[arg(long)]
    pub reset_each_packet: bool,
    /// Know only the template file's templates: not the FAST Session Control Protocol 1.1
    /// messages it leaves out (Reset 120, Hello 16002, Alert 16003).
    #[arg(long)]
    pub no_scp: bool,
}

/// How an input file is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFraming {
    /// One stream of messages.
    Raw,
    /// A 4-byte little-endian length before each packet.
    Len32le,
    /// The FAST spec's blocks: each block's size as a stop-bit integer, then its messages.
    Block,
    /// pcap or pcapng: UDP payloads.
    Pcap,
}

impl InputFraming {
    /// The packet framing of a non-capture file.
    pub fn framing(self) -> Framing {
        match self {
            InputFraming::Len32le => Framing::Len32Le,
            InputFraming::Block => Framing::Block,
            InputFraming::Raw | InputFraming::Pcap => Framing::Raw,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    fastfeed_bus_shm::quiet_engine_logs();
    let result = match cli.command {
        Command::Decode(a) => cmd::decode::run(a),
        Command::Encode(a) => cmd::encode::run(a),
        Command::Templates { action } => cmd::templates::run(action),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Codegen(a) => cmd::codegen::run(a),
        Command::Generate(a) => cmd::generate::run(a),
        Command::Multicast(a) => cmd::multicast::run(a),
        Command::Publish(a) => cmd::publish::run(a),
        Command::Subscribe(a) => cmd::subscribe::run(a),
        Command::Demo(a) => cmd::demo::run(a),
        Command::Handle(a) => cmd::handle::run(a),
        Command::Replay(a) => cmd::replay::run(a),
        Command::Book(a) => cmd::book::run(a),
        Command::Books(a) => cmd::books::run(a),
        Command::Fix { action } => cmd::fix::run(action),
    };
    match result {
        Ok(code) => code,
        // The reader of standard output has gone (`| head`): the output simply ends.
        Err(e) if out::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fastfeed: {e:#}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every argument of every command, as `command path: --name`, that `--help` shows
    /// without a description.
    fn undocumented(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        for a in cmd.get_arguments() {
            if a.get_help().is_none() && !["help", "version"].contains(&a.get_id().as_str()) {
                out.push(format!("{path}: {}", a.get_id()));
            }
        }
        for sub in cmd.get_subcommands() {
            if sub.get_about().is_none() && sub.get_name() != "help" {
                out.push(format!("{path} {}", sub.get_name()));
            }
            undocumented(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_option_has_a_description() {
        let cmd = super::Cli::command();
        cmd.clone().debug_assert();
        let mut missing = Vec::new();
        let checked = [
            "decode",
            "encode",
            "templates",
            "bench",
            "codegen",
            "generate",
            "multicast",
            "publish",
            "subscribe",
            "demo",
            "handle",
            "replay",
            "book",
            "fix",
        ];
        for sub in cmd.get_subcommands() {
            if checked.contains(&sub.get_name()) {
                assert!(sub.get_about().is_some(), "{}", sub.get_name());
                undocumented(sub, &format!("fastfeed {}", sub.get_name()), &mut missing);
            }
        }
        assert!(missing.is_empty(), "no --help text: {missing:#?}");
    }
}
