//! `fastfeed generate`: the exchange simulator, writing a `len32le` packet file.

use std::io::BufWriter;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use fastfeed_net::MAX_DATAGRAM;
use fastfeed_sim::{GenConfig, Kind};

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum DataSet {
    /// ARCA-like: Quote, New, Change, Remove.
    Simple,
    /// CME-like: MarketData with MDEntries, QuoteRequest.
    Complex,
    /// A CME-style book feed (crates/sim/templates/cme.xml) as a pcap: line A to
    /// 239.255.90.1:14310, line B to 239.255.90.2:14311 (the same packets 1 ms later), the
    /// snapshot line to 239.255.90.3:14312, as configs/cme.toml expects. -n messages,
    /// --securities instruments.
    Cme,
    /// OPRA-like: option quotes (~90%), trades, open interest, status and heartbeats on
    /// --channels channels (crates/sim/templates/opra.xml). One len32le file, the channels'
    /// packets interleaved; each packet starts with its channel's packet sequence number
    /// (4 bytes) and the channel number (2 bytes, little-endian): decode with
    /// --skip-header 6. --securities underlyings.
    Opra,
}

impl DataSet {
    /// The simulator's generator for simple and complex, the templates of cme (opra has a
    /// generator and templates of its own: this is not used for it).
    fn kind(self) -> Kind {
        match self {
            DataSet::Simple | DataSet::Opra => Kind::Simple,
            DataSet::Complex | DataSet::Cme => Kind::Complex,
        }
    }

    /// The template XML this data set decodes with (cme: the complex templates).
    pub fn templates_xml(self) -> &'static str {
        match self {
            DataSet::Opra => fastfeed_sim::OPRA_TEMPLATES,
            d => d.kind().templates_xml(),
        }
    }

    /// The compiled templates of [`DataSet::templates_xml`].
    pub fn templates(self) -> std::sync::Arc<fastfeed_codec::Templates> {
        match self {
            DataSet::Opra => fastfeed_sim::opra_templates(),
            d => d.kind().templates(),
        }
    }
}

#[derive(Args, Clone)]
pub struct GenerateArgs {
    /// Which data set.
    #[arg(value_enum, default_value = "simple")]
    pub data: DataSet,
    /// Output packet file.
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// Data messages (a Done message follows them).
    #[arg(short = 'n', long, default_value_t = 30_000)]
    pub count: usize,
    /// Largest packet in bytes, its 4-byte sequence header included; at most 65507, what
    /// one UDP datagram carries.
    #[arg(short = 'p', long, default_value_t = 1024)]
    pub max_packet: usize,
    /// Complex: average MDEntries per message (limited by what fits a packet).
    #[arg(long, default_value_t = 3.0)]
    pub seq: f64,
    /// Complex: one security per message.
    #[arg(long)]
    pub nosplit: bool,
    /// Securities (default: 300 simple, 100 complex); opra: underlyings (default 480).
    #[arg(long)]
    pub securities: Option<u32>,
    /// Opra: channels (lines), numbered 0 to N-1, each its own packet stream.
    #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u16).range(1..))]
    pub channels: u16,
    /// Seed of the random data: the same seed gives the same file.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Cme: write datagrams larger than this link MTU (bytes, IP header included) as the IPv4
    /// fragments a sending host makes, to test reassembly; by default each is one frame.
    #[arg(long, value_parser = clap::value_parser!(u16).range(68..))]
    pub mtu: Option<u16>,
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

/// The CME-style book feed's groups: lines A, B and snapshot.
pub const CME_GROUPS: [&str; 3] = [
    "239.255.90.1:14310",
    "239.255.90.2:14311",
    "239.255.90.3:14312",
];

fn cme(a: &GenerateArgs) -> Result<ExitCode> {
    let feed = fastfeed_sim::book_feed(&fastfeed_sim::BookFeedConfig {
        messages: a.count,
        securities: a.securities.unwrap_or(4),
        seed: a.seed,
        ..Default::default()
    })?;
    let src = "10.0.0.1:30000".parse()?;
    let [ga, gb, gs] = CME_GROUPS.map(|g| g.parse().expect("group"));
    let mut all: Vec<(u64, std::net::SocketAddrV4, &[u8])> = Vec::new();
    for (t, p) in &feed.increments {
        all.push((*t, ga, p));
        all.push((*t + 1_000_000, gb, p));
    }
    for (t, p) in &feed.snapshots {
        all.push((*t, gs, p));
    }
    all.sort_by_key(|d| d.0);
    let file = std::fs::File::create(&a.output)
        .with_context(|| format!("creating {}", a.output.display()))?;
    let out = fastfeed_capture::write_pcap(
        BufWriter::new(file),
        all.iter().map(|&(t, g, p)| (t, src, g, p)),
        a.mtu.map(usize::from),
    )?;
    out.into_inner().map_err(|e| e.into_error())?;
    eprintln!(
        "generated {} incremental and {} snapshot packets ({} instruments) to {}",
        feed.increments.len(),
        feed.snapshots.len(),
        feed.books.len(),
        a.output.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Refuses what `multicast` could not send, and says where `--seq` falls short.
pub fn check(a: &GenerateArgs) -> Result<()> {
    if a.max_packet > MAX_DATAGRAM {
        bail!(
            "-p {}: a packet must fit one UDP datagram, at most {MAX_DATAGRAM} bytes",
            a.max_packet
        );
    }
    let c = config(a);
    if a.data == DataSet::Complex && (c.max_entries() as f64) < a.seq {
        bail!(
            "--seq {}: a MarketData message holds at most {} entries in packets of {} bytes; \
             raise -p or lower --seq",
            a.seq,
            c.max_entries(),
            a.max_packet
        );
    }
    let got = c.effective_avg_entries();
    if a.data == DataSet::Complex && got < 0.95 * a.seq {
        eprintln!(
            "warning: --seq {} gives {got:.1} entries per message on average: messages are \
             cut at {} entries to fit packets of {} bytes (raise -p for more)",
            a.seq,
            c.max_entries(),
            a.max_packet
        );
    }
    Ok(())
}

/// The OPRA-like set: one file, the channels' packets interleaved.
fn opra(a: &GenerateArgs) -> Result<ExitCode> {
    let mut c = fastfeed_sim::OpraConfig {
        count: a.count,
        channels: a.channels,
        max_packet: a.max_packet,
        seed: a.seed,
        ..Default::default()
    };
    if let Some(s) = a.securities {
        c.underlyings = s;
    }
    let file = std::fs::File::create(&a.output)
        .with_context(|| format!("creating {}", a.output.display()))?;
    let mut out = BufWriter::new(file);
    let (s, per_channel) = fastfeed_sim::generate_opra_to(&c, &mut out)?;
    std::io::Write::flush(&mut out)?;
    let (least, most) = per_channel.iter().fold((usize::MAX, 0), |(l, m), c| {
        (l.min(c.messages), m.max(c.messages))
    });
    eprintln!(
        "generated {} messages ({} bytes of FAST, {:.1} per message) in {} packets, {} bytes, \
         on {} channels ({least} to {most} messages each, a Done each), to {}",
        s.messages,
        s.message_bytes,
        s.message_bytes as f64 / s.messages.max(1) as f64,
        s.packets,
        s.bytes_written,
        a.channels,
        a.output.display()
    );
    eprintln!(
        "decode with: -t crates/sim/templates/opra.xml --framing len32le --skip-header {} \
         --reset-each-packet",
        fastfeed_sim::CHANNEL_HEADER_LEN
    );
    Ok(ExitCode::SUCCESS)
}

pub fn run(a: GenerateArgs) -> Result<ExitCode> {
    if a.data == DataSet::Cme {
        return cme(&a);
    }
    if let Some(mtu) = a.mtu {
        bail!("--mtu {mtu}: only cme is written as a capture, with frames to fragment");
    }
    if a.data == DataSet::Opra {
        check(&a)?;
        return opra(&a);
    }
    check(&a)?;
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
