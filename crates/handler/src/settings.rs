//! Which line a packet came on, and how a channel behaves: what the channel's state machine
//! (`channel.rs`) is built with.

use fastfeed_feed::config::{ChannelConfig, PacketHeader};

/// Which line a packet came on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LineId {
    /// Incremental line A.
    A,
    /// Incremental line B.
    B,
    /// The snapshot line.
    Snapshot,
}

impl LineId {
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// `a`, `b` or `snapshot`.
    pub fn name(self) -> &'static str {
        match self {
            LineId::A => "a",
            LineId::B => "b",
            LineId::Snapshot => "snapshot",
        }
    }
}

/// How a channel behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelSettings {
    /// What precedes the FAST messages of a packet.
    pub header: PacketHeader,
    /// The sender resets dictionaries at each packet.
    pub reset_each_packet: bool,
    /// How long a gap may wait for the other line, ns.
    pub gap_timeout_ns: u64,
    /// Most packets held behind a gap.
    pub max_held: usize,
    /// Most updates queued per instrument waiting for a snapshot.
    pub max_queue: usize,
    /// Whether the channel has a snapshot line.
    pub snapshot_line: bool,
    /// Whether the channel has a line B (else no copy needs recognizing).
    pub line_b: bool,
    /// A packet numbered this far past the expected one is taken for another channel's and
    /// rejected (it would open a gap no line can fill).
    pub max_jump: u64,
    /// Stay on the snapshot line and check every snapshot of a live instrument against its
    /// book at the same RptSeq.
    pub verify: bool,
    /// A line that took no packet for this long while the other took packets is silent,
    /// ns (0: not watched).
    pub line_silence_ns: u64,
}

impl ChannelSettings {
    /// From a channel's configuration.
    pub fn from_config(c: &ChannelConfig) -> ChannelSettings {
        ChannelSettings {
            header: c.packet,
            reset_each_packet: c.reset_each_packet,
            gap_timeout_ns: c.gap_timeout_ms.saturating_mul(1_000_000),
            max_held: c.max_held_packets.max(1),
            max_queue: 100_000,
            snapshot_line: c.snapshot.is_some(),
            line_b: c.b.is_some(),
            max_jump: c.max_seq_jump,
            verify: false,
            line_silence_ns: c.line_silence_ms.saturating_mul(1_000_000),
        }
    }
}
