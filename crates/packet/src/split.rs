//! Packets of a raw capture: UDP payloads laid end to end, with no length between them.
//! Feeds whose every packet starts with a resetting message (MOEX's FAST Reset, template
//! 120) can be cut back into packets there.

use fastfeed_codec::{Decoder, Handler, Template};

use crate::{Packet, PacketError};

/// Notes whether the message being decoded resets the dictionaries.
pub(crate) struct ResetSeen(pub(crate) bool);

impl Handler for ResetSeen {
    fn begin_message(&mut self, template: &Template) {
        self.0 = template.reset;
    }
}

/// Cuts `data` into packets, one starting at each message of a template with `reset`.
/// Without such messages the whole input is one packet. A message that does not decode
/// ends the split with its located error: nothing after it can be located.
pub fn split_at_resets<'a>(
    decoder: &mut Decoder,
    data: &'a [u8],
) -> Result<Vec<Packet<'a>>, PacketError> {
    let mut starts = Vec::new();
    let mut pos = 0;
    let mut seen = ResetSeen(false);
    decoder.reset();
    while pos < data.len() {
        let n = decoder
            .decode(&data[pos..], &mut seen)
            .map_err(|error| PacketError {
                packet: starts.len().saturating_sub(1),
                file_offset: pos + error.offset,
                error,
            })?;
        if seen.0 || starts.is_empty() {
            starts.push(pos);
        }
        pos += n;
    }
    Ok(starts
        .iter()
        .enumerate()
        .map(|(index, &offset)| {
            let end = starts.get(index + 1).copied().unwrap_or(data.len());
            Packet {
                index,
                offset,
                bytes: &data[offset..end],
            }
        })
        .collect())
}
