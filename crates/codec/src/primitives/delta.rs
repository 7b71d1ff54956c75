// The delta operator for decoding (spec §6.3.7): integer and decimal differences to the
// previous value. A difference between two 64-bit values can need 65 bits: those are read in
// 128 bits on a cold path, with the interpreter's errors and offsets.

use super::{check_exponent, fail, Generation, Int, Res, Slot};
use crate::error::ErrorKind;
use crate::wire::Reader;
use crate::Decimal;

/// A mandatory integer under delta (spec §6.3.7): a signed difference to the previous value
/// (or the initial value, or 0).
#[inline(always)]
pub fn delta<T: Int>(r: &mut Reader, g: Generation, e: &mut Slot<u64>, init: Option<T>) -> Res<T> {
    let at = r.pos;
    match r.i64_local() {
        Ok(d) => apply_delta(at, d, g, e, init),
        // Always `Some` when not nullable.
        Err(err) => Ok(r
            .cold(|r| wide_delta(r, at, false, err, g, e, init))?
            .unwrap_or_default()),
    }
}

/// An optional integer under delta, into `out`: NULL leaves the entry as it is.
#[inline(always)]
pub fn delta_opt<T: Int>(
    r: &mut Reader,
    g: Generation,
    e: &mut Slot<u64>,
    init: Option<T>,
    out: &mut Option<T>,
) -> Res<()> {
    let at = r.pos;
    let d = match r.i64_local() {
        Ok(0) => None,
        // Non-negative values are one more than the value.
        Ok(d) => Some(d - (d > 0) as i64),
        Err(err) => {
            *out = r.cold(|r| wide_delta(r, at, true, err, g, e, init))?;
            return Ok(());
        }
    };
    match d {
        Some(d) => *out = Some(apply_delta(at, d, g, e, init)?),
        None => *out = None,
    }
    Ok(())
}

/// A delta past 64 bits: the difference between two 64-bit values can need 65 (spec
/// §6.3.7.1 note), so it is read in 128 bits and the sum range-checked there, as the
/// interpreter does. Only reached from a 64-bit read's error, so never hot.
#[cold]
#[inline(never)]
fn wide_delta<T: Int>(
    r: &mut Reader,
    at: usize,
    nullable: bool,
    err: Box<crate::CodecError>,
    g: Generation,
    e: &mut Slot<u64>,
    init: Option<T>,
) -> Res<Option<T>> {
    let Some(d) = wide_difference(r, at, nullable, err)? else {
        return Ok(None);
    };
    let Some(base) = e.assigned_or(g, init.map_or(0, T::to_bits)) else {
        return fail(ErrorKind::EmptyPrevious, at);
    };
    let base = if T::SIGNED {
        base as i64 as i128
    } else {
        base as i128
    };
    let v = base.saturating_add(d);
    if v < T::LO as i128 || v > T::HI as i128 {
        return fail(ErrorKind::DeltaOverflow, at);
    }
    let bits = if T::SIGNED { v as i64 as u64 } else { v as u64 };
    e.set(g, bits);
    Ok(Some(T::from_bits(bits)))
}

/// Re-reads at `at`, in 128 bits, the difference whose 64-bit read failed with `err`; NULL
/// (`None`) only where `nullable`. Errors other than an overflow stand.
#[cold]
fn wide_difference(
    r: &mut Reader,
    at: usize,
    nullable: bool,
    err: Box<crate::CodecError>,
) -> Res<Option<i128>> {
    if err.kind != ErrorKind::IntegerOverflow {
        return Err(err);
    }
    r.pos = at;
    Ok(match r.wide_i128()? {
        0 if nullable => None,
        d if nullable && d > 0 => Some(d - 1),
        d => Some(d),
    })
}

#[inline(always)]
fn apply_delta<T: Int>(
    at: usize,
    d: i64,
    g: Generation,
    e: &mut Slot<u64>,
    init: Option<T>,
) -> Res<T> {
    let Some(base) = e.assigned_or(g, init.map_or(0, T::to_bits)) else {
        return fail(ErrorKind::EmptyPrevious, at);
    };
    let v = if T::SIGNED {
        (base as i64)
            .checked_add(d)
            .filter(|&v| v >= T::LO && v <= T::HI as i64)
            .map(|v| v as u64)
    } else {
        base.checked_add_signed(d).filter(|&v| v <= T::HI)
    };
    let Some(v) = v else {
        return fail(ErrorKind::DeltaOverflow, at);
    };
    e.set(g, v);
    Ok(T::from_bits(v))
}

/// A mandatory decimal under delta: exponent and mantissa differences (spec §6.3.7.1).
#[inline(always)]
pub fn decimal_delta(
    r: &mut Reader,
    g: Generation,
    e: &mut Slot<Decimal>,
    init: Option<Decimal>,
) -> Res<Decimal> {
    let at = r.pos;
    match r.i64_local().and_then(|de| Ok((de, r.i64_local()?))) {
        Ok((de, dm)) => apply_decimal_delta(at, de, dm, g, e, init),
        // Always `Some` when not nullable.
        Err(err) => Ok(r
            .cold(|r| wide_decimal_delta(r, at, false, err, g, e, init))?
            .unwrap_or_default()),
    }
}

/// An optional decimal under delta, into `out`: a NULL exponent difference is absent.
#[inline(always)]
pub fn decimal_delta_opt(
    r: &mut Reader,
    g: Generation,
    e: &mut Slot<Decimal>,
    init: Option<Decimal>,
    out: &mut Option<Decimal>,
) -> Res<()> {
    let at = r.pos;
    match r
        .nullable_i64_local()
        .and_then(|de| Ok((de, de.map(|_| r.i64_local()).transpose()?)))
    {
        Ok((Some(de), Some(dm))) => *out = Some(apply_decimal_delta(at, de, dm, g, e, init)?),
        Ok(_) => *out = None,
        Err(err) => *out = r.cold(|r| wide_decimal_delta(r, at, true, err, g, e, init))?,
    }
    Ok(())
}

/// A decimal delta whose exponent or mantissa difference is past 64 bits: read in 128 bits
/// and range-checked there, as the interpreter does.
#[cold]
#[inline(never)]
fn wide_decimal_delta(
    r: &mut Reader,
    at: usize,
    nullable: bool,
    err: Box<crate::CodecError>,
    g: Generation,
    e: &mut Slot<Decimal>,
    init: Option<Decimal>,
) -> Res<Option<Decimal>> {
    let Some(de) = wide_difference(r, at, nullable, err)? else {
        return Ok(None);
    };
    let dm = r.wide_i128()?;
    let Some(base) = e.assigned_or(g, init.unwrap_or_default()) else {
        return fail(ErrorKind::EmptyPrevious, at);
    };
    let exponent = (base.exponent as i128).saturating_add(de);
    if !(-63..=63).contains(&exponent) {
        let shown = exponent.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        return fail(ErrorKind::ExponentRange(shown), at);
    }
    let Ok(mantissa) = i64::try_from((base.mantissa as i128).saturating_add(dm)) else {
        return fail(ErrorKind::MantissaRange, at);
    };
    let d = Decimal::new(exponent as i32, mantissa);
    e.set(g, d);
    Ok(Some(d))
}

#[inline(always)]
fn apply_decimal_delta(
    at: usize,
    de: i64,
    dm: i64,
    g: Generation,
    e: &mut Slot<Decimal>,
    init: Option<Decimal>,
) -> Res<Decimal> {
    let Some(base) = e.assigned_or(g, init.unwrap_or_default()) else {
        return fail(ErrorKind::EmptyPrevious, at);
    };
    let exponent = check_exponent(base.exponent as i64 + de, at)?;
    let Some(mantissa) = base.mantissa.checked_add(dm) else {
        return fail(ErrorKind::MantissaRange, at);
    };
    let d = Decimal::new(exponent, mantissa);
    e.set(g, d);
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 13's first conformance case, through the generated decoders' primitives: a uInt64
    /// delta from 0 to u64::MAX needs 65 bits; one more is out of range (R4).
    #[test]
    fn deltas_past_64_bits() {
        let g = Generation::default();
        let wide = [0x01, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0xFF];
        let mut slot = Slot::<u64>::default();
        let mut r = Reader::new(&wide, false);
        assert_eq!(delta::<u64>(&mut r, g, &mut slot, None).unwrap(), u64::MAX);
        let mut r = Reader::new(&[0x81], false);
        let e = delta::<u64>(&mut r, g, &mut slot, None).unwrap_err();
        assert_eq!(e.kind, ErrorKind::DeltaOverflow);
        // Nullable: the wide value is one more than the delta.
        let mut slot = Slot::<u64>::default();
        let mut out = None;
        let nullable = [0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80];
        let mut r = Reader::new(&nullable, false);
        delta_opt::<u64>(&mut r, g, &mut slot, None, &mut out).unwrap();
        assert_eq!(out, Some(u64::MAX));
        // A decimal whose mantissa difference is past 64 bits but whose sum fits.
        let mut slot = Slot::<Decimal>::default();
        slot.set(g, Decimal::new(0, i64::MIN));
        let mut bytes = vec![0x80];
        bytes.extend_from_slice(&wide);
        let mut r = Reader::new(&bytes, false);
        let d = decimal_delta(&mut r, g, &mut slot, None).unwrap();
        assert_eq!(d, Decimal::new(0, i64::MAX));
    }
}
