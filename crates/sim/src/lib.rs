//! fastfeed-sim: the exchange simulator of the seed paper (its SimpleGenerator and
//! ComplexGenerator). Seeded generators produce FAST [`Message`]s, a [`Packetizer`] packs
//! their encodings into packets that each decode on their own, and [`write_len32le`] frames
//! the packets for a file.
//!
//! Packet layout: a 4-byte little-endian packet sequence number (1, 2, 3, ...) followed by
//! one or more FAST messages; the encoder's dictionaries are reset at every packet start.
//! The OPRA-like set ([`opra`]) has many channels, each its own packet stream: its packets
//! carry the channel's sequence number and then a 2-byte channel number
//! ([`CHANNEL_HEADER_LEN`] bytes).

mod book_feed;
mod complex;
mod layout;
pub mod opra;
mod packetizer;
mod simple;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_opra;

use std::io::Write;
use std::sync::Arc;

use fastfeed_codec::{CodecError, Message, TemplateError, Templates};

pub use book_feed::{
    book_feed, BookFeed, BookFeedConfig, RefBook, RefLevel, CME_PREAMBLE, CME_TEMPLATES,
};
pub use fastfeed_packet::write_len32le;
pub use opra::{
    generate_opra, generate_opra_to, opra_templates, packet_channel, ChannelCount, OpraConfig,
    OpraGenerated, OPRA_TEMPLATES,
};
pub use packetizer::{Packetizer, CHANNEL_HEADER_LEN, PACKET_HEADER_LEN};

/// The simple (ARCA-like) templates: Quote=1, New=2, Change=3, Remove=4, Done=99.
pub const SIMPLE_TEMPLATES: &str = include_str!("../templates/simple.xml");
/// The complex (CME-like) templates: MarketData=1, QuoteRequest=2, Done=99.
pub const COMPLEX_TEMPLATES: &str = include_str!("../templates/complex.xml");
/// The template id of the end-of-stream marker in both template sets.
pub const DONE_TEMPLATE_ID: u32 = 99;

/// Which message set to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Simple,
    Complex,
}

impl Kind {
    /// The template XML this kind encodes with.
    pub fn templates_xml(self) -> &'static str {
        match self {
            Kind::Simple => SIMPLE_TEMPLATES,
            Kind::Complex => COMPLEX_TEMPLATES,
        }
    }

    /// The compiled templates of [`Kind::templates_xml`].
    pub fn templates(self) -> Arc<Templates> {
        fastfeed_codec::parse_templates(self.templates_xml()).expect("shipped templates parse")
    }
}

/// Generator settings. [`GenConfig::simple`] and [`GenConfig::complex`] give the paper's
/// defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct GenConfig {
    pub kind: Kind,
    /// Data messages to generate; the Done message comes on top.
    pub count: usize,
    /// Most bytes in one packet, header included.
    pub max_packet: usize,
    pub seed: u64,
    /// Number of securities, with ids 1..=securities.
    pub securities: u32,
    /// Complex only: mean length of the MDEntries sequence (at least 1).
    pub avg_entries: f64,
    /// Complex only: one security per MarketData message.
    pub nosplit: bool,
    /// Complex only: share of QuoteRequest messages.
    pub quote_request_ratio: f64,
    /// Keep the generated messages in [`Generated::messages`] (costs memory; for tests).
    pub keep_messages: bool,
}

impl GenConfig {
    pub fn simple() -> Self {
        GenConfig {
            kind: Kind::Simple,
            count: 30_000,
            max_packet: 1024,
            seed: 1,
            securities: 300,
            avg_entries: 3.0,
            nosplit: false,
            quote_request_ratio: 0.01,
            keep_messages: false,
        }
    }

    pub fn complex() -> Self {
        GenConfig {
            kind: Kind::Complex,
            securities: 100,
            ..GenConfig::simple()
        }
    }

    /// The defaults of `kind`.
    pub fn for_kind(kind: Kind) -> Self {
        match kind {
            Kind::Simple => GenConfig::simple(),
            Kind::Complex => GenConfig::complex(),
        }
    }
}

impl GenConfig {
    /// Complex: the most MDEntries one MarketData message gets. The lengths are geometric
    /// with mean `avg_entries`, cut at six times the mean and at what fits a packet (an
    /// entry takes up to ~40 bytes, the message's own fields ~48).
    pub fn max_entries(&self) -> usize {
        let by_packet = (self.max_packet.saturating_sub(48) / 40).max(1);
        ((self.avg_entries * 6.0).ceil() as usize).clamp(1, by_packet)
    }

    /// Complex: the mean MDEntries per MarketData message that the cut at
    /// [`max_entries`](Self::max_entries) leaves of `avg_entries`.
    pub fn effective_avg_entries(&self) -> f64 {
        // E[min(G, c)] for G geometric on 1, 2, ... with mean m: m (1 - (1 - 1/m)^c).
        let m = self.avg_entries;
        m * (1.0 - (1.0 - 1.0 / m).powi(self.max_entries() as i32))
    }
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig::simple()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error("template {template} lacks field {field}")]
    MissingField {
        template: String,
        field: &'static str,
    },
    #[error("encoding message {index}: {error}")]
    Encode { index: usize, error: CodecError },
    #[error("message {index} encodes to {len} bytes, over the packet limit of {max} (with the packet header)")]
    MessageTooLarge {
        index: usize,
        len: usize,
        max: usize,
    },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What [`generate`] produced.
#[derive(Debug, Clone, Default)]
pub struct Generated {
    pub packets: Vec<Vec<u8>>,
    /// Messages generated, Done included.
    pub messages: usize,
    /// Encoded message bytes, packet headers excluded.
    pub message_bytes: usize,
    /// The messages in order, Done included, if [`GenConfig::keep_messages`].
    pub messages_kept: Vec<Message>,
}

/// Summary of [`generate_to`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub packets: usize,
    pub messages: usize,
    pub message_bytes: usize,
    /// Bytes written, framing included.
    pub bytes_written: usize,
}

/// One message source: yields data messages, then the caller appends Done.
pub(crate) trait Source {
    fn next_message(&mut self) -> Message;
}

fn check(cfg: &GenConfig) -> Result<(), SimError> {
    let bad = |m: &str| Err(SimError::Config(m.into()));
    if cfg.securities == 0 {
        return bad("securities must be at least 1");
    }
    if cfg.kind == Kind::Simple && cfg.securities > u16::MAX as u32 {
        return bad("simple SecurityId is a uInt16: at most 65535 securities");
    }
    if !(cfg.avg_entries.is_finite() && cfg.avg_entries >= 1.0) {
        return bad("avg_entries must be a number >= 1");
    }
    if !(0.0..=1.0).contains(&cfg.quote_request_ratio) {
        return bad("quote_request_ratio must be within 0..=1");
    }
    if cfg.max_packet <= PACKET_HEADER_LEN {
        return bad("max_packet must exceed the packet header");
    }
    Ok(())
}

/// Runs the generator of `cfg`, handing each finished packet to `sink`.
fn run(
    cfg: &GenConfig,
    mut keep: impl FnMut(&Message),
    mut sink: impl FnMut(&[u8]) -> Result<(), SimError>,
) -> Result<(usize, usize), SimError> {
    check(cfg)?;
    let templates = cfg.kind.templates();
    let mut source: Box<dyn Source> = match cfg.kind {
        Kind::Simple => Box::new(simple::SimpleGen::new(&templates, cfg)?),
        Kind::Complex => Box::new(complex::ComplexGen::new(&templates, cfg)?),
    };
    let done = layout::Layout::of_template(&templates, DONE_TEMPLATE_ID)?.message();
    let mut packer = Packetizer::new(templates, cfg.max_packet);
    for _ in 0..cfg.count {
        let msg = source.next_message();
        if let Some(p) = packer.push(&msg)? {
            sink(p)?;
        }
        keep(&msg);
    }
    if let Some(p) = packer.push(&done)? {
        sink(p)?;
    }
    keep(&done);
    if let Some(p) = packer.finish() {
        sink(p)?;
    }
    Ok((packer.messages(), packer.message_bytes()))
}

/// Generates all packets in memory.
pub fn generate(cfg: &GenConfig) -> Result<Generated, SimError> {
    let mut kept = Vec::new();
    let mut packets = Vec::new();
    let (messages, message_bytes) = run(
        cfg,
        |m| {
            if cfg.keep_messages {
                kept.push(m.clone());
            }
        },
        |p| {
            packets.push(p.to_vec());
            Ok(())
        },
    )?;
    Ok(Generated {
        packets,
        messages,
        message_bytes,
        messages_kept: kept,
    })
}

/// Generates straight into a `len32le` stream, holding one packet at a time.
pub fn generate_to(cfg: &GenConfig, mut out: impl Write) -> Result<Summary, SimError> {
    let mut summary = Summary::default();
    let (messages, message_bytes) = run(
        cfg,
        |_| {},
        |p| {
            write_len32le([p], &mut out)?;
            summary.packets += 1;
            summary.bytes_written += 4 + p.len();
            Ok(())
        },
    )?;
    out.flush()?;
    summary.messages = messages;
    summary.message_bytes = message_bytes;
    Ok(summary)
}
