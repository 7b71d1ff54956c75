//! What a decoding publisher is started with and what it counts: its options, its counters
//! (which reconcile), and the packets it rejected.

use fastfeed_bus::PublisherQos;
use fastfeed_codec::CodecError;
use fastfeed_feed::SeqCounters;

use crate::peers::Group;

#[derive(Debug, Clone, Default)]
pub struct PublisherOptions {
    /// Decode only (into an empty handler): times the decoder alone, publishes nothing.
    pub empty_builder: bool,
    /// Expect subscribers to echo every record back, and measure the round trip.
    pub echo: bool,
    /// The packet sequence number the feed starts at, when known (the simulator's is 1):
    /// then losing the first packets is a gap too. `None`: the first packet seen starts it.
    pub first_seq: Option<u64>,
    /// The record publishers' quality of service.
    pub qos: PublisherQos,
    /// Echoes counted but not timed at the start: the first round trips pay for cold
    /// caches, page faults and the subscriber's first wake-up, not the steady path.
    pub warmup: u64,
    /// The channels this publisher takes, when packets carry a channel number
    /// ([`PacketHeader::SequenceChannel`](crate::PacketHeader)); `None`: one stream with
    /// a 4-byte sequence header. Each channel has its own sequence and its own Done.
    pub channels: Option<Vec<u16>>,
    /// The publishers of one multi-channel publisher, one per thread, share a feed: they
    /// are partners, not rivals, and subscribers wait for all their Dones.
    pub group: Group,
}

/// What happened to the packets and messages, reconciled: datagrams = `packets.received` +
/// `packets_short` + `packets_foreign`; received = accepted + duplicates + stale; accepted = decoded + rejected.
#[derive(Debug, Clone, Default)]
pub struct PublisherCounters {
    /// Summed over the channels.
    pub packets: SeqCounters,
    /// Datagrams too short to hold a packet header: not in `packets`.
    pub packets_short: u64,
    /// Datagrams of a channel this publisher does not take: not in `packets`.
    pub packets_foreign: u64,
    pub packets_decoded: u64,
    pub packets_rejected: u64,
    /// Why packets were rejected, the first [`MAX_ERRORS_KEPT`] of them.
    pub errors: Vec<Rejection>,
    /// Messages of the decoded packets.
    pub messages: u64,
    pub records: u64,
    pub echoes: u64,
    /// Echoes answering another publisher on the same feed: not ours to time.
    pub echoes_other: u64,
    pub done: bool,
    /// Subscribers that said hello, that said bye, and that went silent without a bye.
    pub subscribers_seen: u64,
    pub subscribers_left: u64,
    pub subscribers_silent: u64,
    /// Other publishers heard on the same feed.
    pub other_publishers: u64,
}

/// A packet that did not decode: which one, where, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// Its packet sequence number.
    pub packet: u64,
    /// The byte offset in the packet, header included.
    pub byte: usize,
    pub error: CodecError,
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "packet {} byte {}: {}",
            self.packet, self.byte, self.error
        )
    }
}

/// Rejections kept for the report; more are only counted.
pub const MAX_ERRORS_KEPT: usize = 1024;
