// The field operators for decoding integers and decimals (spec §6.3, §10; strings are in
// `strings.rs`): each reads what the operator puts on the wire and applies the dictionary, with
// the interpreter's errors and offsets. Mandatory and optional fields have functions of their
// own, so a mandatory field's value needs no Option.

use super::{error, fail, Entry, Generation, Int, Res, Slot};
use crate::error::{CodecError, ErrorKind};
use crate::wire::Reader;
use crate::Decimal;

/// An integer of type `T` (mandatory: not nullable), range-checked.
#[inline(always)]
pub fn int<T: Int>(r: &mut Reader) -> Res<T> {
    let at = r.pos;
    let bits = if T::SIGNED {
        let v = r.i64_local()?;
        if v < T::LO || v > T::HI as i64 {
            return fail(ErrorKind::IntegerOverflow, at);
        }
        v as u64
    } else {
        let v = if T::HI <= u32::MAX as u64 {
            r.narrow_u64_local()?
        } else {
            r.u64_local()?
        };
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
        let Some(v) = r.nullable_i64_local()? else {
            return Ok(None);
        };
        if v < T::LO || v > T::HI as i64 {
            return fail(ErrorKind::IntegerOverflow, at);
        }
        v as u64
    } else {
        let Some(v) = r.nullable_u64_local()? else {
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
        let v = match r.i64_local() {
            Ok(v) => v,
            Err(_) => return r.cold(|r| nullable_int_wide(r, at, out)),
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
        let v = match r.u64_local() {
            Ok(v) => v,
            Err(_) => return r.cold(|r| nullable_int_wide(r, at, out)),
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
pub(super) fn needs_entry<T>(present: bool, g: Generation, e: &Slot<T>) -> bool {
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
        return match unassigned(g, e, init) {
            Some(bits) => Ok(T::from_bits(bits)),
            None => Err(unassigned_error(r.pos, g, e)),
        };
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
        *out = unassigned_opt(g, e, init);
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

/// A mandatory copy or increment whose entry is not assigned: the initial value's bits, or
/// None for an error ([`unassigned_error`]). Neither returns a `Res<T>`: a cold call
/// returning one writes it to the stack, and the hot path of every copy and increment then
/// stored its own value in that slot too (two stores a field in the generated decoders).
#[cold]
#[inline(never)]
pub(super) fn unassigned<T: Int>(g: Generation, e: &mut Slot<u64>, init: Option<T>) -> Option<u64> {
    match (e.state(g), init) {
        (Entry::Undefined, Some(v)) => {
            e.set(g, v.to_bits());
            Some(v.to_bits())
        }
        _ => None,
    }
}

/// Why an unassigned mandatory entry has no value: D5 if undefined, D6 if empty.
#[cold]
#[inline(never)]
pub(super) fn unassigned_error(at: usize, g: Generation, e: &Slot<u64>) -> Box<CodecError> {
    let kind = match e.state(g) {
        Entry::Undefined => ErrorKind::MissingValue,
        _ => ErrorKind::EmptyPrevious,
    };
    error(kind, at)
}

/// An optional copy or increment whose entry is not assigned: the initial value or absent.
#[cold]
#[inline(never)]
pub(super) fn unassigned_opt<T: Int>(
    g: Generation,
    e: &mut Slot<u64>,
    init: Option<T>,
) -> Option<T> {
    match (e.state(g), init) {
        (Entry::Undefined, Some(v)) => {
            e.set(g, v.to_bits());
            Some(v)
        }
        (Entry::Undefined, None) => {
            e.set_empty(g);
            None
        }
        _ => None,
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
    let e = check_exponent(r.i64_local()?, at)?;
    Ok(Decimal::new(e, r.i64_local()?))
}

/// A nullable decimal: a NULL exponent and no mantissa is absent.
#[inline(always)]
pub fn nullable_decimal(r: &mut Reader) -> Res<Option<Decimal>> {
    let at = r.pos;
    let Some(e) = r.nullable_i64_local()? else {
        return Ok(None);
    };
    let e = check_exponent(e, at)?;
    Ok(Some(Decimal::new(e, r.i64_local()?)))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy reads, for any input, what the general path reads: the stream's value if its
    /// bit is set, else the previous one, with the same errors and position, strict or not
    /// (types of 8 to 64 bits: the one-byte path, the narrow and the wide reader).
    fn narrow_copies_agree<T: Int>() {
        let mut rng = crate::test_rng::xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let x = rng();
            let len = (x % 9) as usize;
            let mut b: Vec<u8> = (0..len).map(|i| (x >> (7 * i)) as u8).collect();
            if x & (1 << 62) != 0 {
                b.iter_mut().skip(1).for_each(|c| *c &= 0x7f);
            }
            let present = x & (1 << 61) != 0;
            for strict in [false, true] {
                let g = Generation::default();
                let mut e = Slot::<u64>::default();
                e.set(g, 5);
                let mut r = Reader::new(&b, strict);
                let got = copy::<T>(&mut r, present, g, &mut e, None).map_err(|e| e.kind);
                let mut w = Reader::new(&b, strict);
                let want = if present {
                    int::<T>(&mut w).map_err(|e| e.kind)
                } else {
                    Ok(T::from_bits(5))
                };
                assert_eq!(got, want, "{b:02x?} present {present} strict {strict}");
                if want.is_ok() {
                    assert_eq!(r.pos, w.pos, "{b:02x?}");
                }
            }
        }
    }

    #[test]
    fn copies_agree_with_the_general_path() {
        narrow_copies_agree::<u8>();
        narrow_copies_agree::<u16>();
        narrow_copies_agree::<u32>();
        narrow_copies_agree::<i8>();
        narrow_copies_agree::<i16>();
        narrow_copies_agree::<i32>();
        narrow_copies_agree::<u64>();
    }
}
