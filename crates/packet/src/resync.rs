//! Getting past a decode error inside a packet. FAST has no message boundaries of its own:
//! once a message fails, the rest of its packet cannot be located unless the sender marks
//! places where decoding can start again. MOEX does: every UDP packet starts with a Reset
//! message (template 120, no fields, dictionaries reset; encoded `C0 F8`). A `raw` capture
//! is those packets laid end to end, so after an error the next Reset is the next place a
//! decoder can start from a known state.
//!
//! The marker's bytes can also occur inside a message, so a candidate is only taken after
//! a dry run from it decodes cleanly up to the next marker (or the packet's end): resuming
//! in the middle of a message would turn its bytes into wrong values, silently.

use fastfeed_codec::{Decoder, Templates};

/// Messages a dry run from a candidate may decode without meeting the next marker; past
/// this many clean messages the candidate is taken (a stream with rare markers). It also
/// bounds the work on hostile input: each candidate costs at most this many decodes.
const CONFIRM_MESSAGES: usize = 32;

/// The byte strings where decoding may resume: the encodings of the templates that reset
/// the dictionaries and carry no fields (a presence map with only the template-id bit,
/// `C0`, then the id as a stop-bit integer).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncMarkers {
    markers: Vec<Vec<u8>>,
}

impl SyncMarkers {
    /// The markers `templates` define; empty when no template qualifies.
    pub fn from_templates(templates: &Templates) -> Self {
        let markers = templates
            .iter()
            .filter(|t| t.reset && t.body.instrs.is_empty())
            .map(|t| {
                let mut m = vec![0xc0];
                m.extend(stop_bit(t.id));
                m
            })
            .collect();
        SyncMarkers { markers }
    }

    /// No marker: an error loses the rest of its packet.
    pub fn is_empty(&self) -> bool {
        self.markers.is_empty()
    }

    /// Whether a marker starts at `pos`.
    pub fn at(&self, bytes: &[u8], pos: usize) -> bool {
        let rest = &bytes[pos.min(bytes.len())..];
        self.markers.iter().any(|m| rest.starts_with(m))
    }

    /// The first place at or after `from` where a marker starts.
    pub fn find(&self, bytes: &[u8], from: usize) -> Option<usize> {
        (from..bytes.len()).find(|&p| self.at(bytes, p))
    }

    /// The first marker at or after `from` from which `decoder` decodes cleanly to the next
    /// marker (at least one message beyond the marker's own) or to the end of `bytes`. The
    /// dry run leaves the decoder's dictionaries undefined: the marker resets them anyway.
    pub fn resume_point(&self, decoder: &mut Decoder, bytes: &[u8], from: usize) -> Option<usize> {
        let mut from = from;
        while let Some(candidate) = self.find(bytes, from) {
            if self.confirms(decoder, bytes, candidate) {
                return Some(candidate);
            }
            from = candidate + 1;
        }
        None
    }

    fn confirms(&self, decoder: &mut Decoder, bytes: &[u8], start: usize) -> bool {
        decoder.reset();
        let mut pos = start;
        for decoded in 1..=CONFIRM_MESSAGES {
            match decoder.decode(&bytes[pos..], &mut ()) {
                Ok(n) => pos += n,
                Err(_) => return false,
            }
            if pos == bytes.len() || (decoded >= 2 && self.at(bytes, pos)) {
                return true;
            }
        }
        true
    }
}

/// `v` as a FAST stop-bit integer: 7 bits a byte, most significant first, the last byte
/// flagged.
fn stop_bit(v: u32) -> Vec<u8> {
    let mut out = vec![(v & 0x7f) as u8 | 0x80];
    let mut rest = v >> 7;
    while rest != 0 {
        out.push((rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const XML: &str = r#"<templates>
      <template name="Reset" id="120" reset="yes"/>
      <template name="Big" id="300" reset="yes"/>
      <template name="Data" id="1"><uInt32 name="X"/></template>
    </templates>"#;

    #[test]
    fn markers_are_the_empty_reset_templates() {
        let ts = fastfeed_codec::parse_templates(XML).unwrap();
        let m = SyncMarkers::from_templates(&ts);
        assert_eq!(m.markers, vec![vec![0xc0, 0xf8], vec![0xc0, 0x02, 0xac]]);
        let bytes = [0x00, 0xc0, 0x02, 0xac, 0xc0, 0xf8];
        assert_eq!(m.find(&bytes, 0), Some(1));
        assert_eq!(m.find(&bytes, 2), Some(4));
        assert_eq!(m.find(&bytes, 5), None);
        assert!(!m.at(&bytes, 6));
    }

    #[test]
    fn a_marker_inside_a_message_is_not_taken() {
        let ts = fastfeed_codec::parse_templates(XML).unwrap();
        let m = SyncMarkers::from_templates(&ts);
        let mut dec = Decoder::new(ts.clone());
        // A false marker (C0 F8), then bytes that do not decode (an unknown template id);
        // then a real packet: Reset, Data X=5, Reset.
        let bytes = [
            0xc0, 0xf8, 0xc0, 0x85, 0xc0, 0xf8, 0xc0, 0x81, 0x85, 0xc0, 0xf8,
        ];
        assert_eq!(m.resume_point(&mut dec, &bytes, 0), Some(4));
    }
}
