// The string and byte-vector operators for decoding (spec §6.3, §10.6.3-5): values borrowed
// from the input where they stand whole, kept in their dictionary entries where an operator
// (copy, tail, delta) builds on the previous value.

use super::{fail, Ascii, Entry, Generation, Res, Slot};
use crate::error::ErrorKind;
use crate::wire::Reader;

/// A subtraction length past 64 bits is out of the int32 range too: D7, not D2.
#[cold]
pub(crate) fn subtraction_overflow(e: Box<crate::CodecError>, at: usize) -> Box<crate::CodecError> {
    match e.kind {
        ErrorKind::IntegerOverflow => Box::new(crate::CodecError::new(
            ErrorKind::BadSubtraction(i64::MAX),
            at,
        )),
        _ => e,
    }
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
        None => r.cold(|r| ascii_slow(r, false))?.unwrap_or_default(),
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
        None => r.cold(|r| ascii_slow(r, true))?,
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
        None => *out = r.cold(|r| ascii_slow(r, true))?,
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
    let len = r.u64_local()?;
    r.bytes(len)
}

/// A nullable byte vector.
#[inline(always)]
pub fn nullable_bytes<'a>(r: &mut Reader<'a>) -> Res<Option<&'a [u8]>> {
    match r.nullable_u64_local()? {
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
            None => r.cold(|r| ascii_slow(r, nullable))?,
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
        r.nullable_u64_local()?
    } else {
        Some(r.u64_local()?)
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
        r.nullable_i64_local()
    } else {
        r.i64_local().map(Some)
    };
    let Some(sub) = sub.map_err(|e| subtraction_overflow(e, at))? else {
        return Ok(None);
    };
    // A subtraction length must be an int32 (spec §6.3.7.3, D7): checked before the string
    // is read, as the interpreter does, so both name the same error.
    if sub > i32::MAX as i64 || sub < i32::MIN as i64 {
        return fail(ErrorKind::BadSubtraction(sub), at);
    }
    string_into(r, ascii_form, false, scratch)?;
    match e.state(g) {
        Entry::Assigned => {}
        Entry::Undefined => set_bytes(g, e, init.unwrap_or_default()),
        Entry::Empty => return fail(ErrorKind::EmptyPrevious, at),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The readers with a fast path give the general reader's strings, NULLs, positions and
    /// errors for every form of an ASCII string (one byte, several, NULL and the empty string
    /// as a lone stop bit, zero preambles, overlong and unterminated ones), strict or not.
    #[test]
    fn ascii_readers_agree_with_the_general_reader() {
        let tails: [&[u8]; 3] = [
            &[],
            &[0x81],
            &[0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0xc8],
        ];
        type Got = Result<(Option<Vec<u8>>, usize), ErrorKind>;
        let general = |b: &[u8], strict: bool, nullable: bool| -> Got {
            let mut r = Reader::new(b, strict);
            let s = ascii_slow(&mut r, nullable).map_err(|e| e.kind)?;
            Ok((s.map(|s| s.to_string().into_bytes()), r.pos))
        };
        for form in crate::test_rng::ASCII_FORMS {
            for tail in tails {
                let b: Vec<u8> = form.iter().chain(tail).copied().collect();
                for strict in [false, true] {
                    let mut r = Reader::new(&b, strict);
                    let got = ascii(&mut r).map(|s| (Some(s.to_string().into_bytes()), r.pos));
                    let want =
                        general(&b, strict, false).map(|(s, at)| (Some(s.unwrap_or_default()), at));
                    assert_eq!(got.map_err(|e| e.kind), want, "ascii {b:02x?}");

                    let want = general(&b, strict, true);
                    let mut r = Reader::new(&b, strict);
                    let got = nullable_ascii(&mut r)
                        .map(|s| (s.map(|s| s.to_string().into_bytes()), r.pos));
                    assert_eq!(got.map_err(|e| e.kind), want, "nullable_ascii {b:02x?}");
                    let mut r = Reader::new(&b, strict);
                    let mut out = Some(Ascii::default());
                    let got = nullable_ascii_to(&mut r, &mut out)
                        .map(|()| (out.map(|s| s.to_string().into_bytes()), r.pos));
                    assert_eq!(got.map_err(|e| e.kind), want, "nullable_ascii_to {b:02x?}");

                    for nullable in [false, true] {
                        let mut r = Reader::new(&b, strict);
                        let mut out = b"old".to_vec();
                        let got = string_into(&mut r, true, nullable, &mut out)
                            .map(|present| (present.then(|| out.clone()), r.pos));
                        let want = general(&b, strict, nullable)
                            .map(|(s, at)| (s.map(|s| s.to_vec()), at));
                        assert_eq!(
                            got.map_err(|e| e.kind),
                            want,
                            "string_into {b:02x?} {nullable}"
                        );
                    }
                }
            }
        }
    }
}
