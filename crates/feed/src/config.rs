//! The feed configuration file (TOML): the feed's name and profile, its templates, and its
//! channels, each with incremental lines A and B and a snapshot line. A line is a multicast
//! group (with the interface to join it on) and/or a capture file (for replay and offline
//! handling). Relative paths are relative to the configuration file.
//!
//! ```toml
//! feed = "moex"
//! profile = "moex-forts"
//! templates = "templates.xml"
//!
//! [[channel]]
//! name = "FUT-BOOK-5"
//! packet = { kind = "none" }          # the MsgSeqNum of the packet's message orders it
//! gap_timeout_ms = 50
//! a = { group = "239.195.1.40:16040", capture = "increment_a.dat" }
//! b = { group = "239.195.1.168:16168", source = "91.203.253.235", capture = "increment_b.dat" }
//! snapshot = { group = "239.195.1.41:16041", capture = "snapshot.dat" }
//! ```

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("reading {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not valid TOML, or not the shape described here.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What toml/serde said, with line and column.
        message: String,
    },
    /// Valid TOML that does not make a feed.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// A whole feed: one or more channels sharing a profile.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FeedConfig {
    /// The feed's name: the `<feed>` of bus topics `fastfeed/<feed>/<type>/<security>`.
    pub feed: String,
    /// Where the venue departs from FIX: `fix` (none), `moex-forts`, `cme`.
    #[serde(default = "default_profile")]
    pub profile: String,
    /// Overrides of the profile's tables, for venues close to a shipped profile.
    #[serde(default)]
    pub overrides: ProfileOverrides,
    /// Template XML for every channel that does not name its own.
    pub templates: Option<PathBuf>,
    /// The channels.
    #[serde(rename = "channel")]
    pub channels: Vec<ChannelConfig>,
}

fn default_profile() -> String {
    "fix".into()
}

/// Departures from the profile, by value: `actions = { "5" = "overlay" }` maps an
/// MDUpdateAction value to new / change / delete / delete-thru / delete-from / overlay;
/// `entry_types = { "E" = "bid" }` maps an MDEntryType to bid / offer / trade /
/// empty-book / ignore; `book` forces the book kind (level, price, order).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProfileOverrides {
    /// MDUpdateAction value -> action name.
    #[serde(default)]
    pub actions: BTreeMap<String, String>,
    /// MDEntryType value -> entry kind name.
    #[serde(default)]
    pub entry_types: BTreeMap<String, String>,
    /// `level` (MDPriceLevel), `price` (by MDEntryPx), `order` (by MDEntryID).
    pub book: Option<String>,
    /// Template id -> message kind (incremental, snapshot, definition, status,
    /// session-status, sequence-reset, heartbeat, ignore), for templates without a MsgType
    /// (35) constant.
    #[serde(default)]
    pub templates: BTreeMap<String, String>,
}

/// One channel: incremental lines A and B, a snapshot line, and how its packets look.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ChannelConfig {
    /// A name for reports.
    pub name: String,
    /// Template XML of this channel (else the feed's).
    pub templates: Option<PathBuf>,
    /// What precedes the FAST messages in a packet.
    #[serde(default)]
    pub packet: PacketHeader,
    /// The sender resets the dictionaries at each packet start (the packets then decode
    /// on their own, and duplicates need not be decoded).
    #[serde(default)]
    pub reset_each_packet: bool,
    /// How long a gap in the packet sequence may wait for the other line before the
    /// affected instruments recover from snapshots.
    #[serde(default = "default_gap_timeout")]
    pub gap_timeout_ms: u64,
    /// Most packets held back behind a gap; past it the gap is given up at once.
    #[serde(default = "default_max_held")]
    pub max_held_packets: usize,
    /// A packet numbered this far past the expected one is taken for another channel's
    /// and rejected.
    #[serde(default = "default_max_jump")]
    pub max_seq_jump: u64,
    /// A line (A or B) that takes no packet for this long while the other line takes
    /// packets is reported silent, and counted (0: not watched).
    #[serde(default = "default_line_silence")]
    pub line_silence_ms: u64,
    /// Incremental line A.
    pub a: LineConfig,
    /// Incremental line B (the same packets).
    pub b: Option<LineConfig>,
    /// The snapshot (recovery) line.
    pub snapshot: Option<LineConfig>,
}

fn default_gap_timeout() -> u64 {
    20
}

fn default_line_silence() -> u64 {
    1_000
}

fn default_max_jump() -> u64 {
    1_000_000
}

fn default_max_held() -> usize {
    10_000
}

/// Byte order of a packet sequence number.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Endian {
    /// Little-endian.
    #[default]
    Le,
    /// Big-endian (network order).
    Be,
}

/// The packet header before the FAST messages.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum PacketHeader {
    /// No header: the packet's first MsgSeqNum (tag 34) orders it.
    #[default]
    None,
    /// A packet sequence number of `bytes` bytes at the start, the header `len` bytes in
    /// all (CME: 4 bytes big-endian then a sub-channel byte, `len = 5`).
    Seq {
        /// Width of the number, 1 to 8.
        bytes: u8,
        /// Its byte order.
        #[serde(default)]
        endian: Endian,
        /// Header length, at least `bytes` (default `bytes`).
        len: Option<usize>,
    },
    /// A FAST message of template `id` heads each packet; its field with FIX tag `seq_tag`
    /// (default 34) numbers the packet.
    Template {
        /// The header template's id.
        id: u32,
        /// The tag of its sequence field.
        #[serde(default = "default_seq_tag")]
        seq_tag: u32,
    },
}

fn default_seq_tag() -> u32 {
    34
}

impl PacketHeader {
    /// Bytes before the first FAST message (0 unless a sequence number prefix).
    pub fn prefix_len(&self) -> usize {
        match *self {
            PacketHeader::Seq { bytes, len, .. } => len.unwrap_or(bytes as usize),
            _ => 0,
        }
    }

    /// The sequence number of a packet with a prefix header; `None` for other headers or
    /// a packet shorter than its header.
    #[inline]
    pub fn prefix_seq(&self, packet: &[u8]) -> Option<u64> {
        let PacketHeader::Seq { bytes, endian, len } = *self else {
            return None;
        };
        let n = bytes as usize;
        if packet.len() < len.unwrap_or(n).max(n) {
            return None;
        }
        let mut v = 0u64;
        for i in 0..n {
            let b = match endian {
                Endian::Le => packet[n - 1 - i],
                Endian::Be => packet[i],
            };
            v = (v << 8) | b as u64;
        }
        Some(v)
    }
}

/// How a capture file is laid out.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CaptureFormat {
    /// UDP payloads laid end to end; packets start at messages of a resetting template
    /// (MOEX's Reset, template 120), or the whole file is one packet.
    Raw,
    /// A 4-byte little-endian length before each packet.
    Len32le,
    /// The FAST spec's blocks (§10): each packet's size as a stop-bit integer before it.
    Block,
    /// pcap or pcapng: the line's datagrams, selected by destination.
    Pcap,
}

/// One line: a multicast group to receive (and replay to), a capture file, or both.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LineConfig {
    /// Multicast group and port.
    pub group: Option<SocketAddrV4>,
    /// Address of the interface to join the group on.
    #[serde(default = "default_interface")]
    pub interface: Ipv4Addr,
    /// The line's sender, where the exchange names one (MOEX's `src-ip`, CME's source
    /// address): the group is then joined for that source only (IGMPv3 source-specific
    /// multicast), as networks that carry market data by PIM-SSM require, and a pcap
    /// capture's datagrams from other senders are not the line's.
    pub source: Option<Ipv4Addr>,
    /// A capture of this line.
    pub capture: Option<PathBuf>,
    /// The files that continue the capture, in order (a recording split in parts by
    /// `handle --record-split`), read after it as one capture.
    #[serde(default)]
    pub continued: Vec<PathBuf>,
    /// The capture's layout; by default pcap/pcapng if the file says so, else raw.
    pub format: Option<CaptureFormat>,
    /// In a pcap, the destination whose datagrams are this line (default: `group`).
    pub udp: Option<SocketAddrV4>,
}

fn default_interface() -> Ipv4Addr {
    Ipv4Addr::LOCALHOST
}

impl LineConfig {
    /// The datagrams of a pcap that belong to this line.
    pub fn capture_selector(&self) -> Option<SocketAddrV4> {
        self.udp.or(self.group)
    }
}

impl FeedConfig {
    /// Reads and checks a configuration file; relative paths become relative to its folder.
    pub fn load(path: &Path) -> Result<FeedConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        let base = path.parent().unwrap_or(Path::new(""));
        FeedConfig::parse(&text, base).map_err(|e| match e {
            ConfigError::Parse { message, .. } => ConfigError::Parse {
                path: path.to_owned(),
                message,
            },
            ConfigError::Invalid { message, .. } => ConfigError::Invalid {
                path: path.to_owned(),
                message,
            },
            e => e,
        })
    }

    /// Parses configuration text; relative paths are joined to `base`.
    pub fn parse(text: &str, base: &Path) -> Result<FeedConfig, ConfigError> {
        let mut c: FeedConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: PathBuf::new(),
            message: e.to_string(),
        })?;
        let invalid = |message: String| ConfigError::Invalid {
            path: PathBuf::new(),
            message,
        };
        if c.channels.is_empty() {
            return Err(invalid("no [[channel]]".into()));
        }
        let join = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        if let Some(t) = &mut c.templates {
            join(t);
        }
        for ch in &mut c.channels {
            if ch.templates.is_none() && c.templates.is_none() {
                return Err(invalid(format!("channel {}: no templates", ch.name)));
            }
            if let Some(t) = &mut ch.templates {
                join(t);
            }
            if let PacketHeader::Seq { bytes, len, .. } = ch.packet {
                if !(1..=8).contains(&bytes) || len.is_some_and(|l| l < bytes as usize) {
                    return Err(invalid(format!(
                        "channel {}: a sequence number of {bytes} bytes in a header of {len:?}",
                        ch.name
                    )));
                }
            }
            let name = ch.name.clone();
            for (which, line) in [("a", Some(&mut ch.a)), ("b", ch.b.as_mut())]
                .into_iter()
                .chain([("snapshot", ch.snapshot.as_mut())])
            {
                let Some(line) = line else { continue };
                if line.group.is_none() && line.capture.is_none() {
                    return Err(invalid(format!(
                        "channel {name} line {which}: neither a group nor a capture"
                    )));
                }
                if let Some(g) = line.group {
                    if !g.ip().is_multicast() {
                        return Err(invalid(format!(
                            "channel {name} line {which}: {g} is not a multicast group"
                        )));
                    }
                }
                if line.capture.is_none() && !line.continued.is_empty() {
                    return Err(invalid(format!(
                        "channel {name} line {which}: `continued` without a `capture`"
                    )));
                }
                line.capture
                    .iter_mut()
                    .chain(&mut line.continued)
                    .for_each(join);
            }
        }
        Ok(c)
    }

    /// The template file of a channel.
    pub fn templates_of(&self, channel: &ChannelConfig) -> PathBuf {
        channel
            .templates
            .clone()
            .or_else(|| self.templates.clone())
            .expect("checked by parse")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOEX: &str = r#"
feed = "moex"
profile = "moex-forts"
templates = "templates.xml"

[[channel]]
name = "FUT-BOOK-5"
gap_timeout_ms = 50
a = { group = "239.195.1.40:16040", capture = "increment_a.dat", format = "block" }
b = { group = "239.195.1.168:16168", source = "91.203.253.235", capture = "/abs/increment_b.dat", format = "raw" }
snapshot = { group = "239.195.1.41:16041", capture = "snapshot.pcap", udp = "239.9.9.9:1" }
"#;

    #[test]
    fn parses_and_resolves_paths() {
        let c = FeedConfig::parse(MOEX, Path::new("/cfg")).unwrap();
        assert_eq!(c.feed, "moex");
        assert_eq!(c.profile, "moex-forts");
        let ch = &c.channels[0];
        assert_eq!(c.templates_of(ch), PathBuf::from("/cfg/templates.xml"));
        assert_eq!(ch.packet, PacketHeader::None);
        assert_eq!(ch.gap_timeout_ms, 50);
        assert_eq!(ch.line_silence_ms, 1_000);
        assert_eq!(ch.a.capture, Some(PathBuf::from("/cfg/increment_a.dat")));
        assert_eq!(ch.a.interface, Ipv4Addr::LOCALHOST);
        assert_eq!(ch.a.format, Some(CaptureFormat::Block));
        let b = ch.b.as_ref().unwrap();
        assert_eq!(b.capture, Some(PathBuf::from("/abs/increment_b.dat")));
        assert_eq!(b.format, Some(CaptureFormat::Raw));
        assert_eq!(
            (ch.a.source, b.source),
            (None, Some(Ipv4Addr::new(91, 203, 253, 235)))
        );
        let s = ch.snapshot.as_ref().unwrap();
        assert_eq!(s.capture_selector(), Some("239.9.9.9:1".parse().unwrap()));
        assert_eq!(ch.a.capture_selector(), ch.a.group);
    }

    #[test]
    fn packet_headers() {
        let text = MOEX.replace(
            "gap_timeout_ms = 50",
            r#"packet = { kind = "seq", bytes = 4, endian = "be", len = 5 }"#,
        );
        let c = FeedConfig::parse(&text, Path::new("")).unwrap();
        let h = c.channels[0].packet;
        assert_eq!(h.prefix_len(), 5);
        assert_eq!(h.prefix_seq(&[0, 0, 1, 2, 9, 0xc0]), Some(258));
        assert_eq!(h.prefix_seq(&[0, 0, 1, 2]), None);
        let le = PacketHeader::Seq {
            bytes: 4,
            endian: Endian::Le,
            len: None,
        };
        assert_eq!(le.prefix_seq(&[2, 1, 0, 0]), Some(258));
        let text = MOEX.replace(
            "gap_timeout_ms = 50",
            r#"packet = { kind = "template", id = 120 }"#,
        );
        let c = FeedConfig::parse(&text, Path::new("")).unwrap();
        assert_eq!(
            c.channels[0].packet,
            PacketHeader::Template {
                id: 120,
                seq_tag: 34
            }
        );
    }

    #[test]
    fn errors_name_the_problem() {
        let e = |t: &str| FeedConfig::parse(t, Path::new("")).unwrap_err().to_string();
        assert!(e("feed = 1").contains("invalid type"), "{}", e("feed = 1"));
        assert!(e(&MOEX.replace("239.195.1.40", "10.0.0.1")).contains("not a multicast"));
        assert!(e(&MOEX.replace("gap_timeout_ms", "gap_timeout")).contains("unknown field"));
        assert!(e(&MOEX.replace(
            "gap_timeout_ms = 50",
            r#"packet = { kind = "seq", bytes = 9 }"#
        ))
        .contains("9 bytes"));
        assert!(e(&MOEX.replace("templates = \"templates.xml\"", "")).contains("no templates"));
        assert!(e(&MOEX.replace(
            r#"group = "239.195.1.40:16040", capture = "increment_a.dat", format = "block""#,
            ""
        ))
        .contains("neither"));
    }
}
