// The field operators for decoding (spec §6.3, §10): each reads what the operator puts on the
// wire and applies the dictionary, with the interpreter's errors and offsets. Mandatory and
// optional fields have functions of their own, so a mandatory field's value needs no Option.

use super::{fail, Ascii, Entry, Generation, Int, Res, Slot};
use crate::error::ErrorKind;
use crate::wire::Reader;
use crate::Decimal;

/// An integer of type `T` (mandatory: not nullable), range-checked.
#[inline(always)]
pub fn int<T: Int>(r: &mut Reader) -> Res<T> {
    let at = r.pos;
    let bits = if T::SIGNED {
        let v = r.i64()?;
        if v < T::LO || v > T::HI as i64 {
            return fail(ErrorKind::IntegerOverflow, at);
        }
        v as u64
    } else {
        let v = r.u64()?;
        if v > T::HI {
            return fail(ErrorKind::IntegerOverflow, at);
        }
        v
    };
    Ok(T::from_bits(bits))
}

/// A nullable integer of type `T`.
#[inline(always)]
pub fn nullable_int<T: Int>(r: &mut Reader) -> Res<Option<T>> {
    let at = r.pos;
    let bits = if T::SIGNED {
        let Some(v) = r.nullable_i64()? else {
            return Ok(None);
        };
        if v < T::LO || v > T::HI as i64 {
            return fail(ErrorKind::IntegerOverflow, at);
        }
        v as u64
    } else {
        let Some(v) = r.nullable_u64()? else {
            return Ok(None);
        };
        if v > T::HI {
            return fail(ErrorKind::IntegerOverflow, at);
        }
        v
    };
    Ok(Some(T::from_bits(bits)))
}

/// A nullable integer of type `T` into `out`. Fields take their values through `out` where
/// the value is an `Option`: a returned `Result<Option<T>>` built on several paths goes
/// through memory, and reading it back stalls.
#[inline(always)]
pub fn nullable_int_to<T: Int>(r: &mut Reader, out: &mut Option<T>) -> Res<()> {
    let at = r.pos;
    let bits = if T::SIGNED {
        let v = match r.i64() {
            Ok(v) => v,
            Err(_) => return nullable_int_wide(r, at, out),
        };
        if v == 0 {
            *out = None;
            return Ok(());
        }
        // Non-negative values are one more than the value.
        let v = v - (v > 0) as i64;
        if v < T::LO || v > T::HI as i64 {
            return fail(ErrorKind::IntegerOverflow, at);
        }
        v as u64
    } else {
        let v = match r.u64() {
            Ok(v) => v,
            Err(_) => return nullable_int_wide(r, at, out),
        };
        if v == 0 {
            *out = None;
            return Ok(());
        }
        if v - 1 > T::HI {
            return fail(ErrorKind::IntegerOverflow, at);
        }
        v - 1
    };
    *out = Some(T::from_bits(bits));
    Ok(())
}

/// Past 64 bits or at the end of the input: the reader's general nullable path.
#[cold]
#[inline(never)]
fn nullable_int_wide<T: Int>(r: &mut Reader, at: usize, out: &mut Option<T>) -> Res<()> {
    r.pos = at;
    *out = nullable_int::<T>(r)?;
    Ok(())
}

/// The integer bits of a field with a presence bit when its value, if present, takes one
/// byte: `absent` when not present. Does not branch on `present` (presence bits change
/// from element to element, and a branch on them mispredicts). None where the general
/// path must decide: a present value of several bytes, or NULL.
#[inline(always)]
fn one_byte<T: Int, const NULLABLE: bool>(
    r: &mut Reader,
    present: bool,
    absent: u64,
) -> Option<u64> {
    let b = r.buf.get(r.pos).copied().unwrap_or(0);
    let general = b & 0x80 == 0 || (NULLABLE && b == 0x80);
    if present & general {
        return None;
    }
    let x = (b & 0x7f) as u64;
    // Seven bits always fit the type.
    let v = if T::SIGNED {
        let s = ((x << 57) as i64) >> 57;
        (if NULLABLE { s - (s > 0) as i64 } else { s }) as u64
    } else if NULLABLE {
        x.wrapping_sub(1)
    } else {
        x
    };
    r.pos += present as usize;
    Some(std::hint::select_unpredictable(present, v, absent))
}

/// Whether a field left out of the stream finds its entry not assigned.
#[inline(always)]
fn needs_entry<T>(present: bool, g: Generation, e: &Slot<T>) -> bool {
    !present & !e.is_assigned(g)
}

/// A mandatory integer under default (spec §6.3.2): from the stream if its bit is set, else
/// the initial value.
#[inline(always)]
pub fn default<T: Int>(r: &mut Reader, present: bool, init: T) -> Res<T> {
    match one_byte::<T, false>(r, present, init.to_bits()) {
        Some(bits) => Ok(T::from_bits(bits)),
        None => int::<T>(r),
    }
}

/// An optional integer under default, into `out`: absent if its bit is clear and there is no
/// initial value.
#[inline(always)]
pub fn default_opt<T: Int>(
    r: &mut Reader,
    present: bool,
    init: Option<T>,
    out: &mut Option<T>,
) -> Res<()> {
    match one_byte::<T, true>(r, present, init.map_or(0, T::to_bits)) {
        Some(bits) => {
            *out = (present | init.is_some()).then_some(T::from_bits(bits));
            Ok(())
        }
        None => nullable_int_to::<T>(r, out),
    }
}

/// A mandatory integer under copy (spec §6.3.3): from the stream if its bit is set, else the
/// previous value, else the initial value.
#[inline(always)]
pub fn copy<T: Int>(
    r: &mut Reader,
    present: bool,
    g: Generation,
    e: &mut Slot<u64>,
    init: Option<T>,
) -> Res<T> {
    previous_or_read::<T, false>(r, present, g, e, init)
}

/// An optional integer under copy, into `out`.
#[inline(always)]
pub fn copy_opt<T: Int>(
    r: &mut Reader,
    present: bool,
    g: Generation,
    e: &mut Slot<u64>,
    init: Option<T>,
    out: &mut Option<T>,
) -> Res<()> {
    previous_or_read_opt::<T, false>(r, present, g, e, init, out)
}

/// A mandatory integer under increment (spec §6.3.6): the previous value plus one when its
/// bit is clear.
#[inline(always)]
pub fn increment<T: Int>(
    r: &mut Reader,
    present: bool,
    g: Generation,
    e: &mut Slot<u64>,
    init: Option<T>,
) -> Res<T> {
    previous_or_read::<T, true>(r, present, g, e, init)
}

/// An optional integer under increment, into `out`.
#[inline(always)]
pub fn increment_opt<T: Int>(
    r: &mut Reader,
    present: bool,
    g: Generation,
    e: &mut Slot<u64>,
    init: Option<T>,
    out: &mut Option<T>,
) -> Res<()> {
    previous_or_read_opt::<T, true>(r, present, g, e, init, out)
}

/// Copy (`INCR` false) or increment: the stream's value if present, else the previous one
/// (plus one for increment).
#[inline(always)]
fn previous_or_read<T: Int, const INCR: bool>(
    r: &mut Reader,
    present: bool,
    g: Generation,
    e: &mut Slot<u64>,
    init: Option<T>,
) -> Res<T> {
    if needs_entry(present, g, e) {
        return unassigned(r, g, e, init);
    }
    let previous = if INCR { step::<T>(e.value) } else { e.value };
    let bits = match one_byte::<T, false>(r, present, previous) {
        Some(bits) => bits,
        None => int::<T>(r)?.to_bits(),
    };
    e.set(g, bits);
    Ok(T::from_bits(bits))
}

#[inline(always)]
fn previous_or_read_opt<T: Int, const INCR: bool>(
    r: &mut Reader,
    present: bool,
    g: Generation,
    e: &mut Slot<u64>,
    init: Option<T>,
    out: &mut Option<T>,
) -> Res<()> {
    if needs_entry(present, g, e) {
        *out = unassigned_opt(g, e, init)?;
        return Ok(());
    }
    let previous = if INCR { step::<T>(e.value) } else { e.value };
    match one_byte::<T, true>(r, present, previous) {
        Some(bits) => *out = Some(T::from_bits(bits)),
        None => nullable_int_to::<T>(r, out)?,
    }
    match out {
        Some(v) => e.set(g, v.to_bits()),
        None => e.set_empty(g),
    }
    Ok(())
}

/// Plus one, the type's maximum wrapping to its minimum (spec §6.3.6).
#[inline(always)]
pub fn step<T: Int>(bits: u64) -> u64 {
    crate::template::increment_bits(bits, T::LO, T::HI)
}

/// A mandatory copy or increment whose entry is not assigned: the initial value, or D5 / D6.
#[cold]
#[inline(never)]
fn unassigned<T: Int>(r: &Reader, g: Generation, e: &mut Slot<u64>, init: Option<T>) -> Res<T> {
    match (e.state(g), init) {
        (Entry::Undefined, Some(v)) => {
            e.set(g, v.to_bits());
            Ok(v)
        }
        (Entry::Undefined, None) => fail(ErrorKind::MissingValue, r.pos),
        _ => fail(ErrorKind::EmptyPrevious, r.pos),
    }
}

/// An optional copy or increment whose entry is not assigned: the initial value or absent.
#[cold]
#[inline(never)]
fn unassigned_opt<T: Int>(g: Generation, e: &mut Slot<u64>, init: Option<T>) -> Res<Option<T>> {
    match (e.state(g), init) {
        (Entry::Undefined, Some(v)) => {
            e.set(g, v.to_bits());
            Ok(Some(v))
        }
        (Entry::Undefined, None) => {
            e.set_empty(g);
            Ok(None)
        }
        _ => Ok(None),
    }
}

/// A decimal exponent is within [-63, 63] (spec §10.6.2, R1).
#[inline(always)]
pub fn check_exponent(e: i64, at: usize) -> Res<i32> {
    if !(-63..=63).contains(&e) {
        return fail(ErrorKind::ExponentRange(e), at);
    }
    Ok(e as i32)
}

/// A mandatory decimal: exponent, then mantissa.
#[inline(always)]
pub fn decimal(r: &mut Reader) -> Res<Decimal> {
    let at = r.pos;
    let e = check_exponent(r.i64()?, at)?;
    Ok(Decimal::new(e, r.i64()?))
}

/// A nullable decimal: a NULL exponent and no mantissa is absent.
#[inline(always)]
pub fn nullable_decimal(r: &mut Reader) -> Res<Option<Decimal>> {
    let at = r.pos;
    let Some(e) = r.nullable_i64()? else {
        return Ok(None);
    };
    let e = check_exponent(e, at)?;
    Ok(Some(Decimal::new(e, r.i64()?)))
}

/// A nullable decimal into `out`.
#[inline(always)]
pub fn nullable_decimal_to(r: &mut Reader, out: &mut Option<Decimal>) -> Res<()> {
    match nullable_decimal(r)? {
        Some(d) => *out = Some(d),
        None => *out = None,
    }
    Ok(())
}

/// A mandatory decimal under copy.
#[inline(always)]
pub fn decimal_copy(
    r: &mut Reader,
    present: bool,
    g: Generation,
    e: &mut Slot<Decimal>,
    init: Option<Decimal>,
) -> Res<Decimal> {
    if present {
        let v = decimal(r)?;
        e.set(g, v);
        return Ok(v);
    }
    match (e.state(g), init) {
        (Entry::Assigned, _) => Ok(e.value),
        (Entry::Undefined, Some(v)) => {
            e.set(g, v);
            Ok(v)
        }
        (Entry::Undefined, None) => fail(ErrorKind::MissingValue, r.pos),
        (Entry::Empty, _) => fail(ErrorKind::EmptyPrevious, r.pos),
    }
}

/// An optional decimal under copy, into `out`.
#[inline(always)]
pub fn decimal_copy_opt(
    r: &mut Reader,
    present: bool,
    g: Generation,
    e: &mut Slot<Decimal>,
    init: Option<Decimal>,
    out: &mut Option<Decimal>,
) -> Res<()> {
    if present {
        match nullable_decimal(r)? {
            Some(v) => {
                e.set(g, v);
                *out = Some(v);
            }
            None => {
                e.set_empty(g);
                *out = None;
            }
        }
        return Ok(());
    }
    match (e.state(g), init) {
        (Entry::Assigned, _) => *out = Some(e.value),
        (Entry::Undefined, Some(v)) => {
            e.set(g, v);
            *out = Some(v);
        }
        (Entry::Undefined, None) => {
            e.set_empty(g);
            *out = None;
        }
        (Entry::Empty, _) => *out = None,
    }
    Ok(())
}

/// A string value longer than the decoder's limit is `LengthTooLong` at the field's start.
#[inline(always)]
pub fn check_len(len: usize, r: &Reader, at: usize) -> Res<()> {
    if len > r.max_len {
        return fail(ErrorKind::LengthTooLong(len as u64), at);
    }
    Ok(())
}

/// A mandatory ASCII string, borrowed from the input.
#[inline(always)]
pub fn ascii<'a>(r: &mut Reader<'a>) -> Res<Ascii<'a>> {
    let at = r.pos;
    let s = match short_ascii(r) {
        Some(s) => s,
        None => ascii_slow(r, false)?.unwrap_or_default(),
    };
    check_len(s.len(), r, at)?;
    Ok(s)
}

/// A nullable ASCII string, borrowed from the input.
#[inline(always)]
pub fn nullable_ascii<'a>(r: &mut Reader<'a>) -> Res<Option<Ascii<'a>>> {
    let at = r.pos;
    let s = match short_ascii(r) {
        Some(s) => Some(s),
        None => ascii_slow(r, true)?,
    };
    if let Some(s) = s {
        check_len(s.len(), r, at)?;
    }
    Ok(s)
}

/// A nullable ASCII string into `out`.
#[inline(always)]
pub fn nullable_ascii_to<'a>(r: &mut Reader<'a>, out: &mut Option<Ascii<'a>>) -> Res<()> {
    let at = r.pos;
    match short_ascii(r) {
        Some(s) => *out = Some(s),
        None => *out = ascii_slow(r, true)?,
    }
    if let Some(s) = out {
        check_len(s.len(), r, at)?;
    }
    Ok(())
}

/// Strings of up to 8 bytes that need no preamble handling, found with one byte or one
/// word load.
#[inline(always)]
fn short_ascii<'a>(r: &mut Reader<'a>) -> Option<Ascii<'a>> {
    let start = r.pos;
    let &first = r.buf.get(start)?;
    if first & 0x80 != 0 && first & 0x7f != 0 {
        r.pos = start + 1;
        return Some(Ascii::from_wire(&r.buf[start..start + 1]));
    }
    let chunk = r.buf.get(start..start + 8)?;
    let w = u64::from_le_bytes(chunk.try_into().ok()?);
    let stops = w & 0x8080_8080_8080_8080;
    // A first byte of seven zero bits is NULL or a preamble: the general reader knows.
    if stops == 0 || w & 0x7f == 0 {
        return None;
    }
    let n = (stops.trailing_zeros() / 8 + 1) as usize;
    r.pos = start + n;
    Some(Ascii::from_wire(&r.buf[start..start + n]))
}

/// Any ASCII string (spec §10.6.3): the zero preambles, NULL, overlong forms (R9, strict).
/// Returns None for NULL.
#[inline(never)]
fn ascii_slow<'a>(r: &mut Reader<'a>, nullable: bool) -> Res<Option<Ascii<'a>>> {
    let at = r.pos;
    let mut e = r.entity()?;
    if nullable {
        if e == [0x80] {
            return Ok(None);
        }
        if e[0] == 0 {
            e = &e[1..];
            if r.strict && e[0] & 0x7f != 0 {
                return fail(ErrorKind::OverlongString, at);
            }
        }
    }
    if e[0] & 0x7f == 0 {
        if e.len() == 1 {
            return Ok(Some(Ascii::default()));
        }
        e = &e[1..];
        if r.strict && e[0] & 0x7f != 0 {
            return fail(ErrorKind::OverlongString, at);
        }
    }
    Ok(Some(Ascii::from_wire(e)))
}

/// A mandatory byte vector (a length, then the bytes), borrowed from the input.
#[inline(always)]
pub fn bytes<'a>(r: &mut Reader<'a>) -> Res<&'a [u8]> {
    let len = r.u64()?;
    r.bytes(len)
}

/// A nullable byte vector.
#[inline(always)]
pub fn nullable_bytes<'a>(r: &mut Reader<'a>) -> Res<Option<&'a [u8]>> {
    match r.nullable_u64()? {
        Some(len) => r.bytes(len).map(Some),
        None => Ok(None),
    }
}

/// Bytes as a unicode string: `InvalidUtf8` (R2) at the field's start if they are not UTF-8.
#[inline]
pub fn utf8(b: &[u8], at: usize) -> Res<&str> {
    match std::str::from_utf8(b) {
        Ok(s) => Ok(s),
        Err(_) => fail(ErrorKind::InvalidUtf8, at),
    }
}

/// A mandatory unicode string, borrowed from the input.
#[inline(always)]
pub fn unicode<'a>(r: &mut Reader<'a>) -> Res<&'a str> {
    let at = r.pos;
    utf8(bytes(r)?, at)
}

/// A nullable byte vector into `out`.
#[inline(always)]
pub fn nullable_bytes_to<'a>(r: &mut Reader<'a>, out: &mut Option<&'a [u8]>) -> Res<()> {
    *out = nullable_bytes(r)?;
    Ok(())
}

/// A nullable unicode string into `out`.
#[inline(always)]
pub fn nullable_unicode_to<'a>(r: &mut Reader<'a>, out: &mut Option<&'a str>) -> Res<()> {
    *out = nullable_unicode(r)?;
    Ok(())
}

/// A nullable unicode string.
#[inline(always)]
pub fn nullable_unicode<'a>(r: &mut Reader<'a>) -> Res<Option<&'a str>> {
    let at = r.pos;
    match nullable_bytes(r)? {
        Some(b) => utf8(b, at).map(Some),
        None => Ok(None),
    }
}

/// A string value of any type into `out` (plain bytes: ASCII without the stop bit); false for
/// NULL. `ascii` picks the stop-bit form, else the length-prefixed one.
#[inline(always)]
pub fn string_into(
    r: &mut Reader,
    ascii_form: bool,
    nullable: bool,
    out: &mut Vec<u8>,
) -> Res<bool> {
    out.clear();
    if ascii_form {
        let s = match short_ascii(r) {
            Some(s) => Some(s),
            None => ascii_slow(r, nullable)?,
        };
        return Ok(match s {
            Some(s) => {
                s.write_to(out);
                true
            }
            None => false,
        });
    }
    let len = if nullable {
        r.nullable_u64()?
    } else {
        Some(r.u64()?)
    };
    let Some(len) = len else { return Ok(false) };
    out.extend_from_slice(r.bytes(len)?);
    Ok(true)
}

/// A string under copy (spec §6.3.3), kept in its dictionary entry; None when absent.
/// `init` is the template's initial value.
#[inline(always)]
pub fn string_copy<'e>(
    r: &mut Reader,
    ascii_form: bool,
    optional: bool,
    present: bool,
    g: Generation,
    e: &'e mut Slot<Vec<u8>>,
    init: Option<&[u8]>,
) -> Res<Option<&'e [u8]>> {
    if present {
        if !string_into(r, ascii_form, optional, e.assign(g))? {
            e.set_empty(g);
            return Ok(None);
        }
        return Ok(Some(&e.value));
    }
    previous(r, optional, false, g, e, init)
}

/// The previous value for a clear bit under copy or tail: the entry, the initial value,
/// absent, or an error (tail names D7 for an empty mandatory entry where copy names D6).
#[inline]
fn previous<'e>(
    r: &Reader,
    optional: bool,
    tail: bool,
    g: Generation,
    e: &'e mut Slot<Vec<u8>>,
    init: Option<&[u8]>,
) -> Res<Option<&'e [u8]>> {
    match e.state(g) {
        Entry::Assigned => Ok(Some(&e.value)),
        Entry::Undefined => match init {
            Some(i) => {
                set_bytes(g, e, i);
                Ok(Some(&e.value))
            }
            None if optional => {
                e.set_empty(g);
                Ok(None)
            }
            None if tail => fail(ErrorKind::EmptyPrevious, r.pos),
            None => fail(ErrorKind::MissingValue, r.pos),
        },
        Entry::Empty if optional => Ok(None),
        Entry::Empty if tail => fail(ErrorKind::BadSubtraction(0), r.pos),
        Entry::Empty => fail(ErrorKind::EmptyPrevious, r.pos),
    }
}

fn set_bytes(g: Generation, e: &mut Slot<Vec<u8>>, b: &[u8]) {
    let v = e.assign(g);
    v.clear();
    v.extend_from_slice(b);
}

/// A string under tail (spec §6.3.8): the bytes sent replace the end of the previous value.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn string_tail<'e>(
    r: &mut Reader,
    ascii_form: bool,
    optional: bool,
    present: bool,
    g: Generation,
    e: &'e mut Slot<Vec<u8>>,
    init: Option<&[u8]>,
    scratch: &mut Vec<u8>,
) -> Res<Option<&'e [u8]>> {
    if !present {
        return previous(r, optional, true, g, e, init);
    }
    if !string_into(r, ascii_form, optional, scratch)? {
        e.set_empty(g);
        return Ok(None);
    }
    if !e.is_assigned(g) {
        set_bytes(g, e, init.unwrap_or_default());
    }
    let base = e.assign(g);
    if scratch.len() >= base.len() {
        base.clear();
    } else {
        base.truncate(base.len() - scratch.len());
    }
    base.extend_from_slice(scratch);
    Ok(Some(&e.value))
}

/// A string under delta (spec §6.3.7.2): a subtraction length (negative: from the front),
/// then the bytes to add at that end.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn string_delta<'e>(
    r: &mut Reader,
    ascii_form: bool,
    optional: bool,
    g: Generation,
    e: &'e mut Slot<Vec<u8>>,
    init: Option<&[u8]>,
    scratch: &mut Vec<u8>,
) -> Res<Option<&'e [u8]>> {
    let at = r.pos;
    let sub = if optional {
        r.nullable_i64()?
    } else {
        Some(r.i64()?)
    };
    let Some(sub) = sub else { return Ok(None) };
    string_into(r, ascii_form, false, scratch)?;
    match e.state(g) {
        Entry::Assigned => {}
        Entry::Undefined => set_bytes(g, e, init.unwrap_or_default()),
        Entry::Empty => return fail(ErrorKind::EmptyPrevious, at),
    }
    if sub > i32::MAX as i64 || sub < i32::MIN as i64 {
        return fail(ErrorKind::BadSubtraction(sub), at);
    }
    let base = e.assign(g);
    let (front, n) = if sub < 0 {
        (true, (-sub - 1) as usize)
    } else {
        (false, sub as usize)
    };
    if n > base.len() {
        return fail(ErrorKind::BadSubtraction(sub), at);
    }
    if front {
        base.drain(..n);
        base.splice(0..0, scratch.iter().copied());
    } else {
        base.truncate(base.len() - n);
        base.extend_from_slice(scratch);
    }
    Ok(Some(&e.value))
}

/// A sequence's length checked against the limit, and against the input where each element
/// takes at least a presence-map byte (so a hostile length allocates nothing).
#[inline(always)]
pub fn sequence_len(r: &Reader, len: u32, max: u32, has_pmap: bool, at: usize) -> Res<usize> {
    if len > max {
        return fail(ErrorKind::SequenceTooLong(len as u64), at);
    }
    if has_pmap && len as usize > r.remaining() {
        return fail(ErrorKind::Truncated, r.buf.len());
    }
    Ok(len as usize)
}
