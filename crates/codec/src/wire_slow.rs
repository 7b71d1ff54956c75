//! The slow paths of the integer reads, out of the way of the fast ones: each takes the input
//! by value (see [`Reader`](super::Reader)) and returns a result that fits two registers.

use super::err;
use crate::error::{CodecError, ErrorKind};

/// Where the stop-bit entity starting at `start` ends (past its stop byte). Out of line: the
/// slow paths call it, and inlined it would grow every field's code.
#[inline(never)]
pub(super) fn entity_end(buf: &[u8], start: usize) -> Result<usize, Box<CodecError>> {
    match buf[start..].iter().position(|b| b & 0x80 != 0) {
        Some(i) => Ok(start + i + 1),
        None => err(ErrorKind::Truncated, buf.len()),
    }
}

/// An unsigned integer the fast paths of [`Reader::u64`](super::Reader::u64) did not take (near the end of the
/// input, over 8 bytes, or overlong when strict). It returns the value alone, in registers
/// (with where it ends, the result would go through memory, and the interpreter's arms would
/// each keep a stack slot for it): the caller finds the end again.
#[cold]
pub(super) fn u64_slow(buf: &[u8], start: usize, strict: bool) -> Result<u64, Box<CodecError>> {
    let end = entity_end(buf, start)?;
    let bytes = &buf[start..end];
    // Strict, an overlong form is R6 whatever its value: before the range, as every read of
    // an integer (narrow, wide, nullable) checks it, so that both decoders say the same.
    if strict && bytes.len() > 1 && bytes[0] == 0 {
        return err(ErrorKind::OverlongInteger, start);
    }
    let mut acc: u64 = 0;
    for &b in bytes {
        if acc >> 57 != 0 {
            return err(ErrorKind::IntegerOverflow, start);
        }
        acc = (acc << 7) | (b & 0x7f) as u64;
    }
    Ok(acc)
}

/// A signed integer the fast paths of [`Reader::i64`](super::Reader::i64) did not take (see [`u64_slow`]).
#[cold]
pub(super) fn i64_slow(buf: &[u8], start: usize, strict: bool) -> Result<i64, Box<CodecError>> {
    let end = entity_end(buf, start)?;
    let bytes = &buf[start..end];
    // Strict, R6 before the range (see `u64_slow`).
    if strict && redundant_sign(bytes) {
        return err(ErrorKind::OverlongInteger, start);
    }
    let mut acc: i64 = if bytes[0] & 0x40 != 0 { -1 } else { 0 };
    for &b in bytes {
        let top = acc >> 56;
        if top != 0 && top != -1 {
            return err(ErrorKind::IntegerOverflow, start);
        }
        acc = (acc << 7) | (b & 0x7f) as i64;
    }
    Ok(acc)
}

/// A nullable unsigned integer past 64 bits (`e`: why the 64-bit read failed): only 2^64
/// itself (the nullable uInt64 maximum) is a value. Strict, an overlong form never gets here:
/// `u64_slow` reports R6 before the range.
#[cold]
pub(super) fn nullable_u64_wide(
    buf: &[u8],
    start: usize,
    e: Box<CodecError>,
) -> Result<Option<u64>, Box<CodecError>> {
    if e.kind != ErrorKind::IntegerOverflow {
        return Err(e);
    }
    let bytes = &buf[start..entity_end(buf, start)?];
    let wide = bytes.iter().try_fold(0u128, |acc, &b| {
        (acc >> 100 == 0).then_some((acc << 7) | (b & 0x7f) as u128)
    });
    if wide == Some(1u128 << 64) {
        Ok(Some(u64::MAX))
    } else {
        err(ErrorKind::IntegerOverflow, start)
    }
}

/// A nullable signed integer past 64 bits: only 2^63 (the nullable int64 maximum) is a value
/// (an overlong form, strict, is `i64_slow`'s R6, as in [`nullable_u64_wide`]).
#[cold]
pub(super) fn nullable_i64_wide(
    buf: &[u8],
    start: usize,
    e: Box<CodecError>,
) -> Result<Option<i64>, Box<CodecError>> {
    if e.kind != ErrorKind::IntegerOverflow {
        return Err(e);
    }
    let bytes = &buf[start..entity_end(buf, start)?];
    let mut acc: i128 = if bytes[0] & 0x40 != 0 { -1 } else { 0 };
    for &b in bytes {
        if acc.unsigned_abs() >> 100 != 0 {
            return err(ErrorKind::IntegerOverflow, start);
        }
        acc = (acc << 7) | (b & 0x7f) as i128;
    }
    if acc == i64::MAX as i128 + 1 {
        Ok(Some(i64::MAX))
    } else {
        err(ErrorKind::IntegerOverflow, start)
    }
}

/// Whether a signed entity's first byte only repeats the sign of the next (overlong, R6).
pub(super) fn redundant_sign(bytes: &[u8]) -> bool {
    bytes.len() > 1
        && ((bytes[0] == 0 && bytes[1] & 0x40 == 0) || (bytes[0] == 0x7f && bytes[1] & 0x40 != 0))
}
