//! The bytes of a Zenoh sample: an 8-byte wire prefix, then (for records) the 32-byte envelope
//! header, then the record's or message's own little-endian bytes. Documented in
//! `crates/records/LAYOUT.md` ("On Zenoh").

use fastfeed_bus::zerocopy::{FromBytes, IntoBytes};
use fastfeed_bus::{type_tag, Envelope, EnvelopeHeader, Message, Record, ENVELOPE_VERSION};

/// Version of the Zenoh sample layout: the prefix below, then the envelope of
/// [`ENVELOPE_VERSION`] (records) or nothing (auxiliary messages). Version 2: a record
/// sample ends after the record's [`Record::wire_len`] bytes, the rest being zero (version 1
/// always carried the whole record; a complex feed's MarketData is 920 bytes for 8 entry
/// slots, about 3 of them used).
pub const WIRE_VERSION: u16 = 2;

/// Bytes before the envelope header: `u16` wire version, `u16` the record's layout version,
/// `u32` its type tag (FNV-1a of the type name).
pub const PREFIX_LEN: usize = 8;

/// Offset of the record in a record sample.
pub const RECORD_OFFSET: usize = PREFIX_LEN + size_of::<EnvelopeHeader>();

// The envelope's version is part of what WIRE_VERSION 2 means: a new envelope layout must come
// with a new wire version.
const _: () = assert!(ENVELOPE_VERSION == 1 && RECORD_OFFSET == 40);

/// Why a sample was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// Shorter than the envelope, or longer than the type's layout (or, for a message,
    /// not its size).
    Size,
    /// Another wire version, type or layout version.
    Version,
}

fn prefix(layout_version: u16, tag: u32) -> [u8; PREFIX_LEN] {
    let mut p = [0u8; PREFIX_LEN];
    p[..2].copy_from_slice(&WIRE_VERSION.to_le_bytes());
    p[2..4].copy_from_slice(&layout_version.to_le_bytes());
    p[4..].copy_from_slice(&tag.to_le_bytes());
    p
}

fn check_prefix(bytes: &[u8], expected: &[u8; PREFIX_LEN], len: usize) -> Result<(), Reject> {
    if bytes.len() != len {
        return Err(Reject::Size);
    }
    if bytes[..PREFIX_LEN] != expected[..] {
        return Err(Reject::Version);
    }
    Ok(())
}

/// Encodes and decodes one record type's samples.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordWire {
    prefix: [u8; PREFIX_LEN],
}

impl RecordWire {
    pub(crate) fn of<R: Record>() -> Self {
        RecordWire {
            prefix: prefix(R::LAYOUT_VERSION, R::type_tag()),
        }
    }

    /// The longest sample of `R`: the whole record.
    pub(crate) fn len<R: Record>() -> usize {
        RECORD_OFFSET + size_of::<R>()
    }

    /// Writes `env`'s sample into `out` (cleared first): the record up to its
    /// [`Record::wire_len`].
    pub(crate) fn encode<R: Record>(&self, env: &Envelope<R>, out: &mut Vec<u8>) {
        let used = env.record.wire_len().min(size_of::<R>());
        out.clear();
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(env.header().as_bytes());
        out.extend_from_slice(&env.record.as_bytes()[..used]);
    }

    /// Reads a sample: the record's bytes it leaves out are zero.
    pub(crate) fn decode<R: Record>(&self, bytes: &[u8]) -> Result<Envelope<R>, Reject> {
        if bytes.len() < RECORD_OFFSET || bytes.len() > Self::len::<R>() {
            return Err(Reject::Size);
        }
        check_prefix(bytes, &self.prefix, bytes.len())?;
        let header = EnvelopeHeader::read_from_bytes(&bytes[PREFIX_LEN..RECORD_OFFSET])
            .map_err(|_| Reject::Size)?;
        let mut record = R::new_zeroed();
        let given = &bytes[RECORD_OFFSET..];
        record.as_mut_bytes()[..given.len()].copy_from_slice(given);
        Ok(Envelope::from_parts(header, record))
    }
}

/// Encodes and decodes an auxiliary message (echo, control): prefix, then the message.
pub(crate) fn encode_message<M: Message>(m: &M) -> Vec<u8> {
    let mut out = Vec::with_capacity(PREFIX_LEN + size_of::<M>());
    out.extend_from_slice(&prefix(M::LAYOUT_VERSION, type_tag(M::TYPE_NAME)));
    out.extend_from_slice(m.as_bytes());
    out
}

pub(crate) fn decode_message<M: Message>(bytes: &[u8]) -> Result<M, Reject> {
    let expected = prefix(M::LAYOUT_VERSION, type_tag(M::TYPE_NAME));
    check_prefix(bytes, &expected, PREFIX_LEN + size_of::<M>())?;
    M::read_from_bytes(&bytes[PREFIX_LEN..]).map_err(|_| Reject::Size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fastfeed_bus::testing::{record, TestRecord};
    use fastfeed_bus::{Control, Echo, Sequencer};

    #[test]
    fn record_sample_layout() {
        let wire = RecordWire::of::<TestRecord>();
        let env = Sequencer::new(0x0a0b_0c0d).stamp(&record(3));
        let mut bytes = Vec::new();
        wire.encode(&env, &mut bytes);
        assert_eq!(bytes.len(), 40 + 32);
        assert_eq!(&bytes[..2], &[2, 0], "wire version 2, little-endian");
        assert_eq!(&bytes[2..4], &[1, 0], "layout version");
        assert_eq!(&bytes[4..8], &TestRecord::type_tag().to_le_bytes());
        assert_eq!(&bytes[8..16], &1u64.to_le_bytes(), "seq");
        assert_eq!(&bytes[32..36], &[0x0d, 0x0c, 0x0b, 0x0a], "publisher");
        assert_eq!(&bytes[40..44], &3u32.to_le_bytes(), "security_id");
        assert_eq!(wire.decode::<TestRecord>(&bytes), Ok(env));
    }

    #[test]
    fn bad_samples_are_refused() {
        let wire = RecordWire::of::<TestRecord>();
        let env = Sequencer::new(1).stamp(&record(3));
        let mut bytes = Vec::new();
        wire.encode(&env, &mut bytes);
        assert_eq!(wire.decode::<TestRecord>(&bytes[..39]), Err(Reject::Size));
        assert_eq!(wire.decode::<TestRecord>(&[]), Err(Reject::Size));
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(wire.decode::<TestRecord>(&longer), Err(Reject::Size));
        let mut newer = bytes.clone();
        newer[2] = 2;
        assert_eq!(wire.decode::<TestRecord>(&newer), Err(Reject::Version));
        let mut other_wire = bytes.clone();
        other_wire[0] = 9;
        assert_eq!(wire.decode::<TestRecord>(&other_wire), Err(Reject::Version));
    }

    #[test]
    fn a_short_sample_reads_as_zeros_past_its_end() {
        let wire = RecordWire::of::<TestRecord>();
        let env = Sequencer::new(1).stamp(&record(3));
        let mut bytes = Vec::new();
        wire.encode(&env, &mut bytes);
        let got = wire.decode::<TestRecord>(&bytes[..44]).unwrap();
        assert_eq!(got.record.security_id(), 3);
        assert!(got.record.as_bytes()[4..].iter().all(|&b| b == 0));
        assert_eq!(got.seq, env.seq);
    }

    #[test]
    fn messages() {
        let c = Control::new(Control::DONE, 5, 6, 7);
        let bytes = encode_message(&c);
        assert_eq!(bytes.len(), 8 + 24);
        assert_eq!(decode_message::<Control>(&bytes), Ok(c));
        assert_eq!(decode_message::<Echo>(&bytes), Err(Reject::Size));
        let mut wrong = encode_message(&c);
        wrong[4] ^= 1;
        assert_eq!(decode_message::<Control>(&wrong), Err(Reject::Version));
    }
}
