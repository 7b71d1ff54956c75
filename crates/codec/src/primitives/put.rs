//! The field operators for encoding: the mirror of decoding. Each predicts what a decoder
//! would reconstruct from the dictionary and leaves the field out where that is right, so
//! the output is the canonical (shortest) encoding, byte for byte the interpreter's
//! [`Encoder`](crate::Encoder)'s. Errors carry offset 0, as the encoder's do.

use super::{fail, step, Ascii, Entry, Generation, Int, Res, Slot};
use crate::error::ErrorKind;
use crate::wire;
use crate::Decimal;

pub use crate::wire::{put_i64, put_nullable_i64, put_nullable_u64, put_u64};

/// Presence-map bits of one segment as they are decided, in `W` words.
#[derive(Debug, Clone, Copy)]
pub struct Bits<const W: usize> {
    words: [u64; W],
    n: u32,
}

impl<const W: usize> Default for Bits<W> {
    fn default() -> Self {
        Bits {
            words: [0; W],
            n: 0,
        }
    }
}

impl<const W: usize> Bits<W> {
    #[inline(always)]
    pub fn push(&mut self, bit: bool) {
        let i = self.n as usize;
        if i < 64 * W {
            self.words[i / 64] |= (bit as u64) << (63 - i % 64);
        }
        self.n += 1;
    }

    #[inline(always)]
    fn get(&self, i: usize) -> bool {
        i < 64 * W && self.words[i / 64] & (1 << (63 - i % 64)) != 0
    }

    /// Writes the map over the `reserved` bytes at `at` in as few bytes as it needs, and
    /// closes the gap.
    #[inline]
    pub fn patch(&self, out: &mut Vec<u8>, at: usize, reserved: usize) {
        let last_set = (0..W)
            .rev()
            .find(|&w| self.words[w] != 0)
            .map(|w| w * 64 + 63 - self.words[w].trailing_zeros() as usize);
        let nbytes = last_set.map_or(1, |i| i / 7 + 1);
        debug_assert!(nbytes <= reserved);
        for i in 0..nbytes {
            let mut byte = 0u8;
            for j in 0..7 {
                if self.get(i * 7 + j) {
                    byte |= 0x40 >> j;
                }
            }
            out[at + i] = byte;
        }
        out[at + nbytes - 1] |= 0x80;
        if nbytes < reserved {
            out.drain(at + nbytes..at + reserved);
        }
    }
}

/// A mandatory integer.
#[inline(always)]
pub fn int<T: Int>(out: &mut Vec<u8>, v: T) {
    if T::SIGNED {
        put_i64(out, v.to_bits() as i64)
    } else {
        put_u64(out, v.to_bits())
    }
}

/// A nullable integer.
#[inline(always)]
pub fn nullable_int<T: Int>(out: &mut Vec<u8>, v: Option<T>) {
    if T::SIGNED {
        put_nullable_i64(out, v.map(|v| v.to_bits() as i64))
    } else {
        put_nullable_u64(out, v.map(T::to_bits))
    }
}

#[inline(always)]
fn int_opt<T: Int>(out: &mut Vec<u8>, v: Option<T>, nullable: bool) {
    if nullable {
        nullable_int(out, v)
    } else {
        int(out, v.unwrap_or_default())
    }
}

/// A decimal's exponent must be within [-63, 63] (R1).
#[inline(always)]
pub fn check_decimal(d: Decimal) -> Res<Decimal> {
    if !(-63..=63).contains(&d.exponent) {
        return fail(ErrorKind::ExponentRange(d.exponent as i64), 0);
    }
    Ok(d)
}

/// A decimal, nullable if `nullable` (None is NULL).
#[inline(always)]
pub fn decimal(out: &mut Vec<u8>, d: Option<Decimal>, nullable: bool) {
    match d {
        None => out.push(0x80),
        Some(d) => {
            if nullable {
                put_nullable_i64(out, Some(d.exponent as i64));
            } else {
                put_i64(out, d.exponent as i64);
            }
            put_i64(out, d.mantissa);
        }
    }
}

/// An ASCII string, nullable if `nullable` (None is NULL), with the preambles it needs.
#[inline]
pub fn ascii(out: &mut Vec<u8>, s: Option<Ascii>, nullable: bool) {
    let Some(s) = s else {
        out.push(0x80);
        return;
    };
    let preamble = s.raw().first().is_none_or(|&b| b & 0x7f == 0);
    if nullable && preamble {
        out.push(0x00);
    }
    if s.is_empty() {
        out.push(0x80);
        return;
    }
    if preamble {
        out.push(0x00);
    }
    out.extend(s.bytes());
    *out.last_mut().expect("non-empty") |= 0x80;
}

/// A byte vector or unicode string: a length (nullable if `nullable`), then the bytes.
#[inline]
pub fn bytes(out: &mut Vec<u8>, b: Option<&[u8]>, nullable: bool) {
    match b {
        None => out.push(0x80),
        Some(b) => {
            if nullable {
                put_nullable_u64(out, Some(b.len() as u64));
            } else {
                put_u64(out, b.len() as u64);
            }
            out.extend_from_slice(b);
        }
    }
}

/// Any string value from plain bytes: ASCII (`ascii_form`) or length-prefixed.
#[inline]
pub fn string(out: &mut Vec<u8>, ascii_form: bool, v: Option<&[u8]>, nullable: bool) {
    if ascii_form {
        wire::put_ascii(out, v, nullable)
    } else {
        bytes(out, v, nullable)
    }
}

/// The value a decoder derives from the entry for a clear bit under copy, increment or tail;
/// `None` where it would be an error.
#[inline(always)]
fn implied<V: Copy>(state: Entry, prev: V, init: Option<V>, optional: bool) -> Option<Option<V>> {
    match state {
        Entry::Assigned => Some(Some(prev)),
        Entry::Undefined if init.is_some() => Some(init),
        Entry::Undefined | Entry::Empty => optional.then_some(None),
    }
}

/// An integer under copy or increment; `v` None only for optional fields. Returns the
/// presence bit.
#[inline(always)]
pub fn copy<T: Int>(
    out: &mut Vec<u8>,
    increment: bool,
    optional: bool,
    g: Generation,
    e: &mut Slot<u64>,
    v: Option<T>,
    init: Option<T>,
) -> bool {
    let state = e.state(g);
    let prev = if increment {
        T::from_bits(step::<T>(e.value))
    } else {
        T::from_bits(e.value)
    };
    let omit = implied(state, prev, init, optional) == Some(v);
    if !omit {
        int_opt(out, v, optional);
    }
    if !omit || state != Entry::Assigned || increment {
        match v {
            Some(v) => e.set(g, v.to_bits()),
            None => e.set_empty(g),
        }
    }
    !omit
}

/// An integer under delta; `v` None (NULL) only for optional fields.
#[inline(always)]
pub fn delta<T: Int>(
    out: &mut Vec<u8>,
    optional: bool,
    g: Generation,
    e: &mut Slot<u64>,
    v: Option<T>,
    init: Option<T>,
) -> Res<()> {
    let Some(n) = v else {
        out.push(0x80);
        return Ok(());
    };
    let base = match e.state(g) {
        Entry::Assigned => e.value,
        Entry::Undefined => init.map_or(0, T::to_bits),
        Entry::Empty => return fail(ErrorKind::EmptyPrevious, 0),
    };
    let d = if T::SIGNED {
        (n.to_bits() as i64 as i128) - (base as i64 as i128)
    } else {
        n.to_bits() as i128 - base as i128
    };
    // A delta wider than int64 (uInt64 0 -> MAX) is written in full, as the interpreter's
    // encoder does (spec 6.3.7.1: the delta may need more bits than the field).
    match i64::try_from(d) {
        Ok(d) if optional => put_nullable_i64(out, Some(d)),
        Ok(d) => put_i64(out, d),
        Err(_) => wire::put_wide_delta(out, d, optional),
    }
    e.set(g, n.to_bits());
    Ok(())
}

/// A decimal under copy. Returns the presence bit.
#[inline(always)]
pub fn decimal_copy(
    out: &mut Vec<u8>,
    optional: bool,
    g: Generation,
    e: &mut Slot<Decimal>,
    v: Option<Decimal>,
    init: Option<Decimal>,
) -> bool {
    let state = e.state(g);
    let omit = implied(state, e.value, init, optional) == Some(v);
    if !omit {
        decimal(out, v, optional);
    }
    if !omit || state != Entry::Assigned {
        match v {
            Some(v) => e.set(g, v),
            None => e.set_empty(g),
        }
    }
    !omit
}

/// A decimal under delta.
#[inline(always)]
pub fn decimal_delta(
    out: &mut Vec<u8>,
    optional: bool,
    g: Generation,
    e: &mut Slot<Decimal>,
    v: Option<Decimal>,
    init: Option<Decimal>,
) -> Res<()> {
    let Some(n) = v else {
        out.push(0x80);
        return Ok(());
    };
    let b = match e.state(g) {
        Entry::Assigned => e.value,
        Entry::Undefined => init.unwrap_or(Decimal::new(0, 0)),
        Entry::Empty => return fail(ErrorKind::EmptyPrevious, 0),
    };
    let dm = n.mantissa as i128 - b.mantissa as i128;
    let de = n.exponent as i64 - b.exponent as i64;
    if optional {
        put_nullable_i64(out, Some(de));
    } else {
        put_i64(out, de);
    }
    match i64::try_from(dm) {
        Ok(dm) => put_i64(out, dm),
        Err(_) => wire::put_wide_delta(out, dm, false),
    }
    e.set(g, n);
    Ok(())
}

fn set_string(g: Generation, e: &mut Slot<Vec<u8>>, v: Option<&[u8]>) {
    match v {
        Some(b) => {
            let s = e.assign(g);
            s.clear();
            s.extend_from_slice(b);
        }
        None => e.set_empty(g),
    }
}

/// A string (plain bytes) under copy or tail. Returns the presence bit.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn string_copy(
    out: &mut Vec<u8>,
    ascii_form: bool,
    tail: bool,
    optional: bool,
    g: Generation,
    e: &mut Slot<Vec<u8>>,
    v: Option<&[u8]>,
    init: Option<&[u8]>,
) -> Res<bool> {
    let state = e.state(g);
    let omit = implied(state, &e.value[..], init, optional) == Some(v);
    if omit {
        if state != Entry::Assigned {
            set_string(g, e, v);
        }
        return Ok(false);
    }
    match v {
        Some(b) if tail => {
            let base = match state {
                Entry::Assigned => &e.value[..],
                _ => init.unwrap_or_default(),
            };
            let part = if b.len() > base.len() {
                b
            } else if b.len() == base.len() {
                let common = base.iter().zip(b).take_while(|(x, y)| x == y).count();
                &b[common..]
            } else {
                // A tail can only keep or grow the length.
                return fail(ErrorKind::ConstantMismatch, 0);
            };
            string(out, ascii_form, Some(part), optional);
        }
        _ => string(out, ascii_form, v, optional),
    }
    set_string(g, e, v);
    Ok(true)
}

/// A string (plain bytes) under delta: remove from the back and append, or from the front
/// and prepend, whichever sends fewer bytes (ties go to the back).
#[inline]
pub fn string_delta(
    out: &mut Vec<u8>,
    ascii_form: bool,
    optional: bool,
    g: Generation,
    e: &mut Slot<Vec<u8>>,
    v: Option<&[u8]>,
    init: Option<&[u8]>,
) -> Res<()> {
    let Some(n) = v else {
        out.push(0x80);
        return Ok(());
    };
    let b: &[u8] = match e.state(g) {
        Entry::Assigned => &e.value,
        Entry::Undefined => init.unwrap_or_default(),
        Entry::Empty => return fail(ErrorKind::EmptyPrevious, 0),
    };
    let prefix = b.iter().zip(n).take_while(|(x, y)| x == y).count();
    let suffix = b
        .iter()
        .rev()
        .zip(n.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (sub, part) = if n.len() - suffix.min(n.len()) < n.len() - prefix {
        let keep = suffix.min(b.len()).min(n.len());
        (-((b.len() - keep) as i64) - 1, &n[..n.len() - keep])
    } else {
        ((b.len() - prefix) as i64, &n[prefix..])
    };
    if optional {
        put_nullable_i64(out, Some(sub));
    } else {
        put_i64(out, sub);
    }
    string(out, ascii_form, Some(part), false);
    set_string(g, e, Some(n));
    Ok(())
}
