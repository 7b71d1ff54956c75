//! What crosses the bus: records in envelopes, and the echo and control messages.
//!
//! Every type here is `#[repr(C)]` with its padding written out, so its bytes are the same in
//! every process and can be documented as a wire layout (little-endian).

use crate::{Message, Record};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// The version of the envelope header's layout (see [`EnvelopeHeader`]).
pub const ENVELOPE_VERSION: u16 = 1;

/// A record as it is sent: 32 bytes of header, then the record's bytes.
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 8 | `seq` |
/// | 8 | 8 | `security_seq` |
/// | 16 | 8 | `sent_ns` |
/// | 24 | 4 | `publisher` |
/// | 28 | 4 | padding, zero |
/// | 32 | `size_of::<R>()` | `record` |
///
/// In memory the struct may have trailing padding after a record whose size is not a multiple
/// of 8; on a byte wire the envelope is the header's bytes then the record's
/// ([`Envelope::header`], [`Envelope::from_parts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Envelope<R> {
    /// Per publisher and record type, from 1: a gap is a lost record.
    pub seq: u64,
    /// Per publisher, record type and security, from 1: a subscriber of some securities, or a
    /// late joiner, detects gaps and duplicates without seeing the other securities.
    pub security_seq: u64,
    /// When it was sent ([`now_ns`](crate::now_ns) of the publisher's host).
    pub sent_ns: u64,
    /// The publisher's id ([`Bus::id`](crate::Bus::id)), unique per publishing bus instance,
    /// so echoes and counts are matched to their publisher when several publish on one feed.
    pub publisher: u32,
    /// Zero.
    pub _pad: u32,
    /// The record.
    pub record: R,
}

/// The first 32 bytes of every [`Envelope`], on their own: what a byte wire carries before
/// the record.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, IntoBytes, FromBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct EnvelopeHeader {
    /// See [`Envelope::seq`].
    pub seq: u64,
    /// See [`Envelope::security_seq`].
    pub security_seq: u64,
    /// See [`Envelope::sent_ns`].
    pub sent_ns: u64,
    /// See [`Envelope::publisher`].
    pub publisher: u32,
    /// Zero.
    pub _pad: u32,
}

impl<R: Record> Envelope<R> {
    /// The header fields.
    pub fn header(&self) -> EnvelopeHeader {
        EnvelopeHeader {
            seq: self.seq,
            security_seq: self.security_seq,
            sent_ns: self.sent_ns,
            publisher: self.publisher,
            _pad: 0,
        }
    }

    /// An envelope from a header and a record.
    pub fn from_parts(h: EnvelopeHeader, record: R) -> Self {
        Envelope {
            seq: h.seq,
            security_seq: h.security_seq,
            sent_ns: h.sent_ns,
            publisher: h.publisher,
            _pad: 0,
            record,
        }
    }
}

/// Latency echo sent back by subscribers on `fastfeed/<feed>/echo`: 32 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, IntoBytes, FromBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Echo {
    /// `seq` of the echoed envelope.
    pub seq: u64,
    /// `sent_ns` of the echoed envelope; the publisher computes `now_ns() - sent_ns`.
    pub sent_ns: u64,
    /// [`Record::type_tag`] of the echoed record type.
    pub type_tag: u32,
    /// Id chosen by the echoing subscriber (e.g. its process id).
    pub subscriber: u32,
    /// `publisher` of the echoed envelope: the publisher this echo answers.
    pub publisher: u32,
    /// Zero.
    pub _pad: u32,
}

impl Message for Echo {
    const TYPE_NAME: &'static str = "echo";
    const LAYOUT_VERSION: u16 = 2;
}

impl Echo {
    /// The echo of `env`, from `subscriber`.
    pub fn of<R: Record>(env: &Envelope<R>, subscriber: u32) -> Echo {
        Echo::answer(&env.header(), R::type_tag(), subscriber)
    }

    /// The echo of the envelope with header `h` and a record of type `type_tag`.
    pub fn answer(h: &EnvelopeHeader, type_tag: u32, subscriber: u32) -> Echo {
        Echo {
            seq: h.seq,
            sent_ns: h.sent_ns,
            type_tag,
            subscriber,
            publisher: h.publisher,
            _pad: 0,
        }
    }
}

/// Control message on `fastfeed/<feed>/control`: 24 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, IntoBytes, FromBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Control {
    /// One of the `Control::*` kind constants; receivers ignore kinds they do not know.
    pub kind: u32,
    /// Id of the sender: the publisher's id for `DONE` and `PUBLISHER*`, the subscriber's for
    /// `HELLO`/`BYE`.
    pub sender: u32,
    /// [`Record::type_tag`] the message refers to, 0 for "all types". For `PUBLISHER*`: how
    /// many publishers its group has (0: alone).
    pub type_tag: u32,
    /// For `PUBLISHER*` and `DONE`: the sender's publisher group. The publishers of one
    /// multi-channel publisher (a thread each) share a nonzero group: partners on one feed,
    /// not rivals, and a subscriber waits for every member's Done. 0: a publisher alone.
    pub group: u32,
    /// For `DONE`: the last `seq` published for `type_tag`. For `BYE`: the echoes sent. For
    /// `PUBLISHER*`: when the publisher started ([`now_ns`](crate::now_ns)), so two publishers
    /// agree on which came first. For `CLOCK`: the publisher's [`clock_id`](crate::clock_id).
    pub count: u64,
}

impl Message for Control {
    const TYPE_NAME: &'static str = "control";
    const LAYOUT_VERSION: u16 = 1;
}

impl Control {
    /// The publisher finished; `count` = last seq published for `type_tag`. A last DONE
    /// with `type_tag` 0 closes the token: every type's DONE came before it.
    pub const DONE: u32 = 1;
    /// A subscriber announces itself (sent after its data subscriber exists).
    pub const HELLO: u32 = 2;
    /// A subscriber leaves.
    pub const BYE: u32 = 3;
    /// A publisher is on the feed and wants no echoes. Sent when it starts, in answer to
    /// each `HELLO` and now and then: subscribers learn whom to echo, and a second
    /// publisher on the feed learns it is not alone.
    pub const PUBLISHER: u32 = 4;
    /// As [`Control::PUBLISHER`], for a publisher that wants every record echoed.
    pub const PUBLISHER_ECHO: u32 = 5;
    /// Sent with each announcement: `count` is the publisher's [`clock_id`](crate::clock_id).
    /// A subscriber with the same clock id (the same machine: one host, or network namespaces
    /// of one machine) reads the envelopes' `sent_ns` on its own clock, and times each
    /// record's way from the publisher to itself.
    pub const CLOCK: u32 = 6;

    /// A control message of `kind`.
    pub fn new(kind: u32, sender: u32, type_tag: u32, count: u64) -> Control {
        Control {
            kind,
            sender,
            type_tag,
            group: 0,
            count,
        }
    }

    /// The same message, sent by a member of publisher group `group`.
    pub fn in_group(mut self, group: u32) -> Control {
        self.group = group;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestRecord;
    use std::mem::{offset_of, size_of};

    #[test]
    fn layouts() {
        assert_eq!(size_of::<EnvelopeHeader>(), 32);
        assert_eq!(offset_of!(Envelope<TestRecord>, seq), 0);
        assert_eq!(offset_of!(Envelope<TestRecord>, security_seq), 8);
        assert_eq!(offset_of!(Envelope<TestRecord>, sent_ns), 16);
        assert_eq!(offset_of!(Envelope<TestRecord>, publisher), 24);
        assert_eq!(offset_of!(Envelope<TestRecord>, record), 32);
        assert_eq!(size_of::<Echo>(), 32);
        assert_eq!(offset_of!(Echo, publisher), 24);
        assert_eq!(size_of::<Control>(), 24);
        assert_eq!(offset_of!(Control, count), 16);
    }

    #[test]
    fn header_bytes_then_record_bytes() {
        let env = Envelope {
            seq: 0x0102,
            security_seq: 3,
            sent_ns: 4,
            publisher: 0x0a0b_0c0d,
            _pad: 0,
            record: TestRecord {
                security_id: 9,
                ..TestRecord::default()
            },
        };
        let h = env.header();
        let bytes = h.as_bytes();
        assert_eq!(&bytes[..2], &[0x02, 0x01], "little-endian");
        assert_eq!(&bytes[24..28], &[0x0d, 0x0c, 0x0b, 0x0a]);
        let back = EnvelopeHeader::read_from_bytes(bytes).unwrap();
        assert_eq!(Envelope::from_parts(back, env.record), env);
    }
}
