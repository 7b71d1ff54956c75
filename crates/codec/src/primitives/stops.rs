//! Integer fields read from a mask of the input's stop bits. A present integer is one
//! stop-bit entity, so in a run of integer fields each field's end is the next stop bit after
//! the one before. The reader of `wire.rs` finds a field's length only once the field's bytes
//! are loaded and their stop bit found: a branch per length, and a load that waits for the
//! one before. Here two 16-byte masks give the stop bits of the next 32 bytes at once, and
//! each field's position comes from that mask (a bit scan and a bit clear), so no length is a
//! branch and the fields' loads do not wait on one another (BENCHMARKS.md, "Stop-bit masks").

use super::decode::{int, nullable_int, step, unassigned, unassigned_error, unassigned_opt};
use super::{check_exponent, Generation, Int, Res, Slot};
use crate::error::CodecError;
use crate::groups::{concat_groups, concat_groups4};
use crate::wire::Reader;
use crate::Decimal;

/// Bytes a field's value is loaded with at most: a 64-bit type's word.
const LOAD: usize = 8;

/// The stop bits of the 32 bytes from `at`, byte `at + i` in bit `i`, each bit at a byte
/// `e` with `e + LOAD <= buf.len()`: the invariant [`Stops::int`]'s loads rely on. Near the
/// end of the input the bits of the last bytes are left out, and their fields take the
/// general path.
#[inline(always)]
fn window(buf: &[u8], at: usize) -> u64 {
    match buf.get(at..at + 32 + LOAD) {
        Some(c) => {
            let w = |i: usize| u64::from_le_bytes(c[8 * i..8 * i + 8].try_into().expect("8"));
            stop_bits16(w(0), w(1)) | stop_bits16(w(2), w(3)) << 16
        }
        None => window_tail(buf, at),
    }
}

/// [`window`] near the end of the input: the usable bytes copied into a zeroed block (zero
/// bytes have no stop bit), then masked as [`window`] does. The last message of every packet
/// comes here; a loop over the bytes took 2% of the simple data's generated decoding.
#[cold]
#[inline(never)]
fn window_tail(buf: &[u8], at: usize) -> u64 {
    let usable = buf.len().saturating_sub(LOAD - 1);
    let rest = buf.get(at..usable).unwrap_or_default();
    let rest = &rest[..rest.len().min(32)];
    let mut c = [0u8; 32];
    c[..rest.len()].copy_from_slice(rest);
    let w = |i: usize| u64::from_le_bytes(c[8 * i..8 * i + 8].try_into().expect("8"));
    stop_bits16(w(0), w(1)) | stop_bits16(w(2), w(3)) << 16
}

/// The stop bits of 16 bytes (two words, the first in the low bits): SSE2's byte mask, which
/// every x86-64 CPU has (two instructions where the portable form takes twelve).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn stop_bits16(lo: u64, hi: u64) -> u64 {
    use std::arch::x86_64::{_mm_movemask_epi8, _mm_set_epi64x};
    // SAFETY: compiled only where the build targets SSE2 (the cfg above: every x86-64
    // target), so the instructions exist wherever the binary runs; they read no memory.
    unsafe { _mm_movemask_epi8(_mm_set_epi64x(hi as i64, lo as i64)) as u32 as u64 }
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn stop_bits16(lo: u64, hi: u64) -> u64 {
    stop_bits8(lo) | stop_bits8(hi) << 8
}

/// Bit `i` set where byte `i` of `w` (little-endian) has its stop bit: the eight stop bits
/// gathered into the top byte by one multiplication (each lands on a bit of its own).
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
#[inline(always)]
fn stop_bits8(w: u64) -> u64 {
    (w & 0x8080_8080_8080_8080).wrapping_mul(0x0002_0408_1020_4081) >> 56
}

/// A run of integer fields' input, with the stop bits ahead of the next field. Made by
/// [`Reader::stops`]; the caller writes [`Stops::pos`] back to the reader after the run.
#[derive(Debug, Clone, Copy)]
pub struct Stops<'a> {
    buf: &'a [u8],
    strict: bool,
    /// Where the next field starts.
    pos: usize,
    /// The byte of the mask's bit 0.
    base: usize,
    /// Stop bits at or after `pos` not yet taken by a field; bit `i` set only where
    /// `base + i + LOAD <= buf.len()` (see [`window`]).
    mask: u64,
    /// Values gathered with `pext` (the reader's choice, [`crate::fast_pext`]).
    pext: bool,
}

impl<'a> Reader<'a> {
    /// The input from the reader's position on, for integer fields read with `*_s`.
    #[inline(always)]
    pub fn stops(&self) -> Stops<'a> {
        Stops {
            buf: self.buf,
            strict: self.strict,
            pos: self.pos,
            base: self.pos,
            mask: window(self.buf, self.pos),
            pext: self.pext,
        }
    }
}

impl Stops<'_> {
    /// Where the next field starts.
    #[inline(always)]
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// A present integer of type `T`, range-checked. A value of up to four bytes (eight for
    /// 64-bit types) is read with one load where the mask says it is; longer or overlong
    /// entities, values out of `T`'s range, the end of the input and an exhausted mask take
    /// the reader's general path, with its errors. The cold paths take no reference to
    /// `self`, so the mask and positions stay in registers.
    #[inline(always)]
    pub fn int<T: Int>(&mut self) -> Res<T> {
        // Never NULL: not nullable.
        Ok(T::from_bits(self.read::<T, false>()?.unwrap_or_default()))
    }

    /// A present nullable integer of type `T` (spec §10.6.1): NULL is `None`.
    #[inline(always)]
    pub fn nullable<T: Int>(&mut self) -> Res<Option<T>> {
        Ok(self.read::<T, true>()?.map(T::from_bits))
    }

    /// The bits of the next integer, or NULL (None) where `NULLABLE`.
    #[inline(always)]
    fn read<T: Int, const NULLABLE: bool>(&mut self) -> Res<Option<u64>> {
        if self.mask == 0 {
            return self.far::<T, NULLABLE>();
        }
        let start = self.pos;
        let end = self.base + self.mask.trailing_zeros() as usize;
        let n = end + 1 - start;
        self.mask &= self.mask - 1;
        self.pos = end + 1;
        let (v, first) = if T::HI <= u32::MAX as u64 {
            if n > 4 {
                return general_res::<T, NULLABLE>(self.buf, self.strict, start);
            }
            // SAFETY: `start <= end` (the mask's bits are at or after the position) and the
            // mask holds `end`, so `start + 8 <= end + LOAD <= buf.len()` (the invariant of
            // `window`, the mask's only source): the four bytes are in the input.
            let w = unsafe { self.buf.as_ptr().add(start).cast::<u32>().read_unaligned() };
            let w = u32::from_le(w);
            (concat_groups4(w, n, self.pext) as u64, w as u8)
        } else {
            if n > 8 {
                return general_res::<T, NULLABLE>(self.buf, self.strict, start);
            }
            // SAFETY: as above, the eight bytes from `start` are in the input.
            let w = unsafe { self.buf.as_ptr().add(start).cast::<u64>().read_unaligned() };
            let w = u64::from_le(w);
            (concat_groups(w, n, self.pext), w as u8)
        };
        // Overlong forms (R6) are the general path's to reject. An unsigned one starts with
        // a zero byte (a one-byte entity never does: it has its stop bit).
        let overlong = if T::SIGNED {
            self.strict && n > 1
        } else {
            first == 0
        };
        if overlong {
            return general_res::<T, NULLABLE>(self.buf, self.strict, start);
        }
        // Nullable: 0 is NULL, non-negative values are one more than the value.
        let bits = if T::SIGNED {
            let shift = 64 - 7 * n as u32;
            let s = ((v << shift) as i64) >> shift;
            if NULLABLE && s == 0 {
                return Ok(None);
            }
            let s = if NULLABLE { s - (s > 0) as i64 } else { s };
            (s >= T::LO && s <= T::HI as i64).then_some(s as u64)
        } else {
            if NULLABLE && v == 0 {
                return Ok(None);
            }
            let v = if NULLABLE { v - 1 } else { v };
            (v <= T::HI).then_some(v)
        };
        match bits {
            Some(bits) => Ok(Some(bits)),
            None => general_res::<T, NULLABLE>(self.buf, self.strict, start),
        }
    }

    /// No stop bit left in the mask: the next field is long, near the end of the input or
    /// past the window. The general path reads it; the mask starts again after it.
    #[inline(always)]
    fn far<T: Int, const NULLABLE: bool>(&mut self) -> Res<Option<u64>> {
        let v = general_res::<T, NULLABLE>(self.buf, self.strict, self.pos)?;
        self.pos = far_end(self.buf, self.pos);
        self.base = self.pos;
        self.mask = window(self.buf, self.pos);
        Ok(v)
    }
}

/// What the general path read: an error, NULL, or a value's bits.
const ERROR: u8 = 0;
const NULL: u8 = 1;
const VALUE: u8 = 2;

/// The general reader's value of the entity at `start`, or its error: the value from one
/// cold call (two words, returned in registers) and the error from another, so that no
/// `Res` returned by a cold call joins the hot path's (it would go through a stack slot).
#[inline(always)]
fn general_res<T: Int, const NULLABLE: bool>(
    buf: &[u8],
    strict: bool,
    start: usize,
) -> Res<Option<u64>> {
    match general::<T, NULLABLE>(buf, strict, start) {
        (bits, VALUE) => Ok(Some(bits)),
        (_, NULL) => Ok(None),
        _ => Err(general_error::<T, NULLABLE>(buf, strict, start)),
    }
}

/// The general reader from `start`: (bits, [`VALUE`]), (0, [`NULL`]) or (0, [`ERROR`]).
#[cold]
#[inline(never)]
fn general<T: Int, const NULLABLE: bool>(buf: &[u8], strict: bool, start: usize) -> (u64, u8) {
    let mut r = Reader::new(buf, strict);
    r.pos = start;
    let got = if NULLABLE {
        nullable_int::<T>(&mut r)
    } else {
        int::<T>(&mut r).map(Some)
    };
    match got {
        Ok(Some(v)) => (v.to_bits(), VALUE),
        Ok(None) => (0, NULL),
        Err(_) => (0, ERROR),
    }
}

#[cold]
#[inline(never)]
fn general_error<T: Int, const NULLABLE: bool>(
    buf: &[u8],
    strict: bool,
    start: usize,
) -> Box<CodecError> {
    let mut r = Reader::new(buf, strict);
    r.pos = start;
    let got = if NULLABLE {
        nullable_int::<T>(&mut r).map(drop)
    } else {
        int::<T>(&mut r).map(drop)
    };
    match got {
        Err(e) => e,
        // Not reached: `general` failed on the same input.
        Ok(()) => super::error(crate::error::ErrorKind::Truncated, start),
    }
}

/// Where the entity at `start`, which the general reader took, ends.
#[cold]
#[inline(never)]
fn far_end(buf: &[u8], start: usize) -> usize {
    start
        + buf[start..]
            .iter()
            .position(|b| b & 0x80 != 0)
            .map_or(0, |i| i + 1)
}

/// A mandatory integer without operator (spec §6.3.1), read with the stop-bit mask.
#[inline(always)]
pub fn int_s<T: Int>(s: &mut Stops) -> Res<T> {
    s.int::<T>()
}

/// [`default`](super::default) read with the stop-bit mask.
#[inline(always)]
pub fn default_s<T: Int>(s: &mut Stops, present: bool, init: T) -> Res<T> {
    if present {
        s.int::<T>()
    } else {
        Ok(init)
    }
}

/// [`copy`](super::copy) read with the stop-bit mask.
#[inline(always)]
pub fn copy_s<T: Int>(
    s: &mut Stops,
    present: bool,
    g: Generation,
    e: &mut Slot<u64>,
    init: Option<T>,
) -> Res<T> {
    previous_or_read_s::<T, false>(s, present, g, e, init)
}

/// [`increment`](super::increment) read with the stop-bit mask.
#[inline(always)]
pub fn increment_s<T: Int>(
    s: &mut Stops,
    present: bool,
    g: Generation,
    e: &mut Slot<u64>,
    init: Option<T>,
) -> Res<T> {
    previous_or_read_s::<T, true>(s, present, g, e, init)
}

#[inline(always)]
fn previous_or_read_s<T: Int, const INCR: bool>(
    s: &mut Stops,
    present: bool,
    g: Generation,
    e: &mut Slot<u64>,
    init: Option<T>,
) -> Res<T> {
    // The presence bit tested once: `needs_entry` first, then `present` again, took two
    // more instructions a field whichever way it went.
    // An entry copied as it is already holds its state and value: nothing to store.
    let bits = if present {
        let bits = s.int::<T>()?.to_bits();
        e.set(g, bits);
        bits
    } else if !e.is_assigned(g) {
        return match unassigned(g, e, init) {
            Some(bits) => Ok(T::from_bits(bits)),
            None => Err(unassigned_error(s.pos, g, e)),
        };
    } else if INCR {
        e.value = step::<T>(e.value);
        e.value
    } else {
        e.value
    };
    Ok(T::from_bits(bits))
}

/// [`nullable_int_to`](super::nullable_int_to) read with the stop-bit mask.
#[inline(always)]
pub fn nullable_int_to_s<T: Int>(s: &mut Stops, out: &mut Option<T>) -> Res<()> {
    *out = s.nullable::<T>()?;
    Ok(())
}

/// [`default_opt`](super::default_opt) read with the stop-bit mask.
#[inline(always)]
pub fn default_opt_s<T: Int>(
    s: &mut Stops,
    present: bool,
    init: Option<T>,
    out: &mut Option<T>,
) -> Res<()> {
    *out = if present { s.nullable::<T>()? } else { init };
    Ok(())
}

/// [`copy_opt`](super::copy_opt) read with the stop-bit mask.
#[inline(always)]
pub fn copy_opt_s<T: Int>(
    s: &mut Stops,
    present: bool,
    g: Generation,
    e: &mut Slot<u64>,
    init: Option<T>,
    out: &mut Option<T>,
) -> Res<()> {
    previous_or_read_opt_s::<T, false>(s, present, g, e, init, out)
}

/// [`increment_opt`](super::increment_opt) read with the stop-bit mask.
#[inline(always)]
pub fn increment_opt_s<T: Int>(
    s: &mut Stops,
    present: bool,
    g: Generation,
    e: &mut Slot<u64>,
    init: Option<T>,
    out: &mut Option<T>,
) -> Res<()> {
    previous_or_read_opt_s::<T, true>(s, present, g, e, init, out)
}

#[inline(always)]
fn previous_or_read_opt_s<T: Int, const INCR: bool>(
    s: &mut Stops,
    present: bool,
    g: Generation,
    e: &mut Slot<u64>,
    init: Option<T>,
    out: &mut Option<T>,
) -> Res<()> {
    // As `previous_or_read_s`: an entry copied as it is is not stored again.
    if present {
        *out = s.nullable::<T>()?;
        match out {
            Some(v) => e.set(g, v.to_bits()),
            None => e.set_empty(g),
        }
    } else if !e.is_assigned(g) {
        *out = unassigned_opt(g, e, init);
    } else if INCR {
        e.value = step::<T>(e.value);
        *out = Some(T::from_bits(e.value));
    } else {
        *out = Some(T::from_bits(e.value));
    }
    Ok(())
}

/// [`decimal`](super::decimal) read with the stop-bit mask: exponent, then mantissa.
#[inline(always)]
pub fn decimal_s(s: &mut Stops) -> Res<Decimal> {
    let at = s.pos;
    let e = check_exponent(s.int::<i64>()?, at)?;
    Ok(Decimal::new(e, s.int::<i64>()?))
}

/// [`nullable_decimal_to`](super::nullable_decimal_to) read with the stop-bit mask: a NULL
/// exponent and no mantissa is absent.
#[inline(always)]
pub fn nullable_decimal_to_s(s: &mut Stops, out: &mut Option<Decimal>) -> Res<()> {
    let at = s.pos;
    match s.nullable::<i64>()? {
        Some(e) => {
            let e = check_exponent(e, at)?;
            *out = Some(Decimal::new(e, s.int::<i64>()?));
        }
        None => *out = None,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn stop_bits_gather_each_bytes_top_bit() {
        let mut rng = crate::test_rng::xorshift(0x1234_5678_9abc_def1);
        for _ in 0..10_000 {
            let w = rng();
            let want = (0..8).fold(0u64, |m, i| m | ((w >> (8 * i + 7)) & 1) << i);
            assert_eq!(stop_bits8(w), want, "{w:016x}");
        }
    }

    /// Every bit of a window is at a byte with room for a value's load after it (the
    /// invariant the unchecked loads rely on), and every such byte's stop bit is there.
    #[test]
    fn windows_leave_room_for_a_load() {
        for len in 0..90 {
            let b: Vec<u8> = (0..len)
                .map(|i| if i % 3 == 0 { 0x81 } else { 0x7f })
                .collect();
            for at in 0..=len + 2 {
                let m = window(&b, at);
                let room = len.saturating_sub(LOAD - 1);
                let want = (at..room.min(at + 32))
                    .filter(|&e| b[e] & 0x80 != 0)
                    .count();
                assert_eq!(m.count_ones() as usize, want, "len {len} at {at}");
                for i in 0..64 {
                    if m >> i & 1 != 0 {
                        assert!(
                            at + i + LOAD <= len && b[at + i] & 0x80 != 0,
                            "{len} {at} {i}"
                        );
                    }
                }
            }
        }
    }

    fn general<T: Int>(b: &[u8], at: usize, strict: bool, nullable: bool) -> (Got<T>, usize) {
        let mut r = Reader::new(b, strict);
        r.pos = at;
        let v = if nullable {
            nullable_int::<T>(&mut r)
        } else {
            int::<T>(&mut r).map(Some)
        };
        (v.map_err(|e| e.kind), r.pos)
    }

    type Got<T> = Result<Option<T>, ErrorKind>;

    /// Runs of integers, nullable or not, read with the mask give the general reader's values, errors and
    /// positions: random entities of 1 to 11 bytes (overlong, out of range, unterminated
    /// at the end), in inputs long and short enough for both windows.
    fn agrees<T: Int>() {
        let mut rng = crate::test_rng::xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..3_000 {
            let fields = (rng() % 12) as usize + 1;
            let mut b = Vec::new();
            for _ in 0..fields {
                let x = rng();
                let len = match x % 16 {
                    0 => 5 + (x >> 8) as usize % 7,
                    1..=6 => 1,
                    _ => 2 + (x >> 8) as usize % 3,
                };
                let start = b.len();
                b.extend((0..len).map(|i| x.rotate_right(7 * i as u32 + 12) as u8 & 0x7f));
                if x & (1 << 60) != 0 {
                    b[start] = if x & (1 << 61) != 0 { 0 } else { 0x7f };
                }
                if x & (1 << 59) == 0 || b.len() < 40 {
                    let last = b.len() - 1;
                    b[last] |= 0x80;
                }
            }
            for (strict, nullable) in [(false, false), (true, false), (false, true), (true, true)] {
                let r = Reader::new(&b, strict);
                let mut s = r.stops();
                let mut at = 0;
                loop {
                    let (want, next) = general::<T>(&b, at, strict, nullable);
                    let got = if nullable {
                        s.nullable::<T>()
                    } else {
                        s.int::<T>().map(Some)
                    };
                    let got = got.map_err(|e| e.kind);
                    assert_eq!(got, want, "{b:02x?} at {at} strict {strict}");
                    if want.is_err() || next >= b.len() {
                        break;
                    }
                    assert_eq!(s.pos(), next, "{b:02x?} at {at}");
                    at = next;
                }
            }
        }
    }

    #[test]
    fn integers_agree_with_the_general_reader() {
        agrees::<u8>();
        agrees::<u16>();
        agrees::<u32>();
        agrees::<u64>();
        agrees::<i8>();
        agrees::<i16>();
        agrees::<i32>();
        agrees::<i64>();
    }
}
