//! The wire reader's and writer's tests: integers, strings and presence maps, valid and
//! malformed.

use super::*;
use crate::test_rng::xorshift;

fn u(bytes: &[u8]) -> Result<u64, Box<CodecError>> {
    Reader::new(bytes, true).u64()
}
fn i(bytes: &[u8]) -> Result<i64, Box<CodecError>> {
    Reader::new(bytes, true).i64()
}

#[test]
fn spec_integer_vectors() {
    assert_eq!(u(&[0x39, 0x45, 0xa3]).unwrap(), 942755);
    assert_eq!(i(&[0x7c, 0x1b, 0x1b, 0x9d]).unwrap(), -7942755);
    assert_eq!(i(&[0x00, 0x40, 0x81]).unwrap(), 8193);
    assert_eq!(i(&[0x7f, 0x3f, 0xff]).unwrap(), -8193);
    assert_eq!(i(&[0x00, 0xc0]).unwrap(), 64);
    assert_eq!(i(&[0xc0]).unwrap(), -64);
    assert_eq!(i(&[0x78, 0, 0, 0, 0x80]).unwrap(), i32::MIN as i64);
    assert_eq!(
        i(&[0, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0xff]).unwrap(),
        i64::MAX
    );
    assert_eq!(i(&[0x7f, 0, 0, 0, 0, 0, 0, 0, 0, 0x80]).unwrap(), i64::MIN);
    assert_eq!(
        u(&[0x01, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0xff]).unwrap(),
        u64::MAX
    );
    assert_eq!(
        u(&[0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0x80]).unwrap_err().kind,
        ErrorKind::IntegerOverflow
    );
    assert_eq!(
        u(&[0x00, 0x81]).unwrap_err().kind,
        ErrorKind::OverlongInteger
    );
    assert_eq!(u(&[0x00, 0x01]).unwrap_err().kind, ErrorKind::Truncated);
    let mut r = Reader::new(&[0x39, 0x45, 0xa4, 0x80], false);
    assert_eq!(r.nullable_i64().unwrap(), Some(942755));
    assert_eq!(r.nullable_i64().unwrap(), None);
}

/// The nullable maxima (2^64 on the wire for uInt64, 2^63 for int64) take the wide path; an
/// overlong form of them is R6 when strict, as any other integer's is, and the value when
/// lenient. (Found by fuzzing: the interpreter took the value in strict mode too.)
#[test]
fn overlong_nullable_maxima_are_r6_when_strict() {
    let mut i_max = vec![0x01];
    i_max.extend([0; 8]);
    i_max.push(0x80);
    let mut u_max = vec![0x02];
    u_max.extend([0; 8]);
    u_max.push(0x80);
    for zeros in [0, 1, 5] {
        let pad = |v: &[u8]| [vec![0; zeros], v.to_vec()].concat();
        for strict in [false, true] {
            let got = Reader::new(&pad(&i_max), strict).nullable_i64();
            let got_u = Reader::new(&pad(&u_max), strict).nullable_u64();
            if strict && zeros > 0 {
                assert_eq!(got.unwrap_err().kind, ErrorKind::OverlongInteger, "{zeros}");
                assert_eq!(
                    got_u.unwrap_err().kind,
                    ErrorKind::OverlongInteger,
                    "{zeros}"
                );
            } else {
                assert_eq!(got.unwrap(), Some(i64::MAX), "{zeros} {strict}");
                assert_eq!(got_u.unwrap(), Some(u64::MAX), "{zeros} {strict}");
            }
        }
    }
}

/// Strict, an overlong integer is R6 even when its value is also out of range (past 64 bits,
/// or past 128 for a delta), so that every read, and both decoders, report the same error.
#[test]
fn r6_comes_before_the_range_when_strict() {
    // A zero byte, then eleven groups of ones: overlong and past 64 bits.
    let mut long = vec![0x00];
    long.extend([0x7f; 10]);
    long.push(0xff);
    assert_eq!(u(&long).unwrap_err().kind, ErrorKind::OverlongInteger);
    // Signed, the zero byte is overlong only before a group whose sign bit is clear.
    assert_eq!(i(&long).unwrap_err().kind, ErrorKind::IntegerOverflow);
    long[1] = 0x3f;
    assert_eq!(i(&long).unwrap_err().kind, ErrorKind::OverlongInteger);
    let lenient = |b: &[u8]| Reader::new(b, false).u64().unwrap_err().kind;
    assert_eq!(lenient(&long), ErrorKind::IntegerOverflow);
    // Past 128 bits behind a zero byte: the wide read saturates only when not overlong.
    let mut wide = vec![0x00, 0x3d];
    wide.extend([0; 26]);
    wide.push(0xff);
    assert_eq!(
        Reader::new(&wide, true).wide_i128().unwrap_err().kind,
        ErrorKind::OverlongInteger
    );
    assert_eq!(Reader::new(&wide, false).wide_i128().unwrap(), i128::MAX);
}

#[test]
fn integers_round_trip_at_the_edges() {
    for v in [
        0i64,
        1,
        -1,
        63,
        64,
        -64,
        -65,
        8193,
        -8193,
        i64::MAX,
        i64::MIN,
        i32::MIN as i64,
    ] {
        let mut out = Vec::new();
        put_i64(&mut out, v);
        assert_eq!(i(&out).unwrap(), v, "{v}");
        let mut out = Vec::new();
        put_nullable_i64(&mut out, Some(v));
        assert_eq!(
            Reader::new(&out, true).nullable_i64().unwrap(),
            Some(v),
            "{v}"
        );
    }
    for v in [0u64, 1, 127, 128, 942755, u32::MAX as u64, u64::MAX] {
        let mut out = Vec::new();
        put_u64(&mut out, v);
        assert_eq!(u(&out).unwrap(), v);
        let mut out = Vec::new();
        put_nullable_u64(&mut out, Some(v));
        assert_eq!(
            Reader::new(&out, true).nullable_u64().unwrap(),
            Some(v),
            "{v}"
        );
    }
}

/// The four-byte reader of narrow fields reads what the general one does: the same value,
/// position and error, strict or not, for entities of every length, cut short or not.
#[test]
fn narrow_reads_agree_with_the_general_reader() {
    let mut rng = xorshift(0x2545_f491_4f6c_dd1d);
    for _ in 0..20_000 {
        let x = rng();
        let len = (x % 11) as usize;
        let stop = (x >> 8) as usize % 7;
        let mut b: Vec<u8> = (0..len)
            .map(|i| (x >> (8 * (i % 8))) as u8 & 0x7f)
            .collect();
        if stop < len {
            b[stop] |= 0x80;
        }
        if x & (1 << 60) != 0 && !b.is_empty() {
            b[0] = 0;
        }
        for strict in [false, true] {
            let mut general = Reader::new(&b, strict);
            let mut narrow = Reader::new(&b, strict);
            let want = general.u64_local().map_err(|e| (e.kind, e.offset));
            let got = narrow.narrow_u64_local().map_err(|e| (e.kind, e.offset));
            assert_eq!(got, want, "{b:02x?} strict {strict}");
            if want.is_ok() {
                assert_eq!(narrow.pos, general.pos, "{b:02x?}");
            }
        }
    }
}

/// Signed integers read with one word (8 bytes or more left) give the general reader's
/// value, position and error, strict or not: overlong forms (a first byte 0x00 or 0x7f that
/// only repeats the next one's sign, R6) are errors in strict mode only.
#[test]
fn signed_word_reads_agree_with_the_general_reader() {
    let mut rng = xorshift(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let x = rng();
        let len = 2 + (x % 8) as usize;
        let mut b: Vec<u8> = (0..len)
            .map(|i| (x >> (8 * (i % 8) + 3)) as u8 & 0x7f)
            .collect();
        b[len - 1] |= 0x80;
        match (x >> 60) % 4 {
            0 => b[0] = 0,
            1 => b[0] = 0x7f,
            _ => {}
        }
        // Room for the word load after the entity.
        b.extend_from_slice(&[0x81; 8]);
        for strict in [false, true] {
            let want = slow::i64_slow(&b, 0, strict)
                .map(|v| (v, slow::entity_end(&b, 0).unwrap()))
                .map_err(|e| (e.kind, e.offset));
            let mut r = Reader::new(&b, strict);
            let got = r.i64().map(|v| (v, r.pos)).map_err(|e| (e.kind, e.offset));
            assert_eq!(got, want, "{b:02x?} strict {strict}");
        }
    }
}

#[test]
fn pmap_bits_and_long_maps() {
    let buf = [
        0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x81,
    ];
    let mut r = Reader::new(&buf, false);
    let mut p = r.pmap().unwrap();
    let bits: Vec<bool> = (0..77).map(|_| p.next(&buf)).collect();
    assert!(bits[0]);
    assert!(bits[76]);
    assert_eq!(bits.iter().filter(|b| **b).count(), 2);
    assert!(!p.next(&buf), "bits past the end read as 0");
}
