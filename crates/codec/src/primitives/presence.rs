//! Presence maps for code that knows each field's bit: the map's bytes kept as loaded, so
//! testing bit `k` is one shift and mask with constants, with no walk over the bits.

use super::{fail, Res};
use crate::error::ErrorKind;
use crate::wire::Reader;

const DATA: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// A presence map: its first 8 bytes in a word as they are on the wire (byte `i` in bits
/// `8i..8i+8`, stop bits cleared, bytes past the map zero); bits of longer maps are read from
/// the input.
#[derive(Debug, Clone, Copy, Default)]
pub struct Presence {
    word: u64,
    start: usize,
    len: u32,
}

impl Reader<'_> {
    /// A presence map, for [`Presence::bit`].
    #[inline(always)]
    pub fn presence(&mut self) -> Res<Presence> {
        let mut p = Presence::default();
        self.presence_to(&mut p)?;
        Ok(p)
    }

    /// A presence map into `out`: generated code reads maps this way, as a `Result<Presence>`
    /// built on two paths goes through memory and stalls when read back.
    #[inline(always)]
    pub fn presence_to(&mut self, out: &mut Presence) -> Res<()> {
        let start = self.pos;
        if let Some(chunk) = self.buf.get(start..start + 8) {
            let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            let stops = w & !DATA;
            if stops != 0 {
                // Short maps' lengths as branches (see `Reader::narrow_u64_local`).
                let n = if stops & 0x80 != 0 {
                    1
                } else if stops & 0x8000 != 0 {
                    2
                } else if stops & 0x80_0000 != 0 {
                    3
                } else {
                    stops.trailing_zeros() / 8 + 1
                };
                let word = w & DATA & (u64::MAX >> (64 - 8 * n));
                // Overlong (R7): a last byte of zero bits after the first.
                if self.strict && n > 1 && word >> (8 * (n - 1)) == 0 {
                    return fail(ErrorKind::OverlongPresenceMap, start);
                }
                self.pos = start + n as usize;
                out.word = word;
                out.start = start;
                out.len = n;
                return Ok(());
            }
        }
        self.cold(|r| r.presence_slow(start, out))
    }

    #[cold]
    #[inline(never)]
    fn presence_slow(&mut self, start: usize, out: &mut Presence) -> Res<()> {
        let bytes = self.entity()?;
        if self.strict && bytes.len() > 1 && bytes[bytes.len() - 1] & 0x7f == 0 {
            return fail(ErrorKind::OverlongPresenceMap, start);
        }
        out.word = bytes
            .iter()
            .take(8)
            .enumerate()
            .fold(0u64, |w, (i, &b)| w | ((b & 0x7f) as u64) << (8 * i));
        out.start = start;
        out.len = bytes.len() as u32;
        Ok(())
    }
}

impl Presence {
    /// Bit `k`: the `k % 7`-th data bit of byte `k / 7`.
    #[inline(always)]
    pub fn bit(&self, k: u32, buf: &[u8]) -> bool {
        if k < 56 {
            (self.word >> (8 * (k / 7) + 6 - k % 7)) & 1 != 0
        } else {
            self.far_bit(k, buf)
        }
    }

    #[cold]
    fn far_bit(&self, k: u32, buf: &[u8]) -> bool {
        let byte = (k / 7) as usize;
        byte < self.len as usize && buf[self.start + byte] & (0x40 >> (k % 7)) != 0
    }

    /// Whether any bit from bit `k` on is set: bits no field used (R8).
    pub fn set_from(&self, k: u32, buf: &[u8]) -> bool {
        let i = k / 7;
        if i < 8 {
            let this = ((1u64 << (7 - k % 7)) - 1) << (8 * i);
            let later = if i < 7 { DATA << (8 * (i + 1)) } else { 0 };
            if self.word & (this | later) != 0 {
                return true;
            }
        }
        (k.max(56)..self.len * 7).any(|j| self.far_bit(j, buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same bits as the interpreter's map, walked one by one, for maps of 1 to 11 bytes,
    /// with and without room for a word load.
    #[test]
    fn bits_agree_with_the_walked_map() {
        let mut rng = crate::test_rng::xorshift(0x2545_f491_4f6c_dd1d);
        for len in 1..=11usize {
            for _ in 0..50 {
                let x = rng();
                let mut buf: Vec<u8> = (0..len).map(|i| (x >> (i % 8 * 8)) as u8 & 0x7f).collect();
                buf[len - 1] |= 0x80;
                for pad in [0, 8] {
                    let mut b = buf.clone();
                    b.extend(std::iter::repeat_n(0xff, pad));
                    let p = Reader::new(&b, false).presence().unwrap();
                    let mut walked = Reader::new(&b, false).pmap().unwrap();
                    for k in 0..(len as u32 * 7 + 3) {
                        assert_eq!(p.bit(k, &b), walked.next(&b), "len {len} bit {k}");
                        let any_later = (k..len as u32 * 7 + 3).any(|j| p.bit(j, &b));
                        assert_eq!(p.set_from(k, &b), any_later, "len {len} from {k}");
                    }
                }
            }
        }
    }

    #[test]
    fn overlong_maps_are_r7_when_strict() {
        for b in [&[0x40, 0x80][..], &[0x40, 0x00, 0x80, 0, 0, 0, 0, 0, 0]] {
            assert!(Reader::new(b, false).presence().is_ok());
            let e = Reader::new(b, true).presence().unwrap_err();
            assert_eq!(e.kind, ErrorKind::OverlongPresenceMap);
        }
        assert!(Reader::new(&[0x80], true).presence().is_ok());
    }
}
