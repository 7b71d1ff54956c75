//! A byte buffer written at a cursor, for the FIX writer's hot path: room is made once per
//! field, then digits and short strings go in with fixed-size moves instead of a `memcpy`
//! call per piece (which the profile showed costing more than the writing).

/// Two digits per entry: "00" to "99".
const PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Decimal digits of `v` (1 for 0), without a loop or a division: the bit length gives
/// the count or one more, and a table lookup settles which.
#[inline]
fn digits(v: u64) -> usize {
    let w = v | 1;
    let t = (((64 - w.leading_zeros()) * 1233) >> 12) as usize;
    t + 1 - usize::from(w < POW10[t])
}

const POW10: [u64; 20] = {
    let mut p = [1u64; 20];
    let mut i = 1;
    while i < 20 {
        p[i] = p[i - 1] * 10;
        i += 1;
    }
    p
};

/// Bytes `b[..n]` written; `b` beyond `n` is slack.
#[derive(Debug)]
pub(crate) struct Buf {
    b: Vec<u8>,
    n: usize,
}

/// Room every non-string field needs: a tag, `=`, 20 digits, a point, a separator.
pub(crate) const FIELD_ROOM: usize = 64;

impl Buf {
    pub fn new(cap: usize) -> Buf {
        Buf {
            b: vec![0; cap],
            n: 0,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.n
    }

    #[inline]
    pub fn set_len(&mut self, n: usize) {
        self.room_at(n, 0);
        self.n = n;
    }

    pub fn get(&self, from: usize, to: usize) -> &[u8] {
        &self.b[from..to]
    }

    pub fn slice_mut(&mut self, from: usize, to: usize) -> &mut [u8] {
        &mut self.b[from..to]
    }

    /// Makes room for `k` more bytes.
    #[inline]
    pub fn room(&mut self, k: usize) {
        self.room_at(self.n, k);
    }

    #[inline]
    fn room_at(&mut self, n: usize, k: usize) {
        if n + k > self.b.len() {
            self.grow(n + k);
        }
    }

    #[cold]
    fn grow(&mut self, need: usize) {
        let len = (self.b.len() * 2).max(need + 256);
        self.b.resize(len, 0);
    }

    /// Needs room for 1 byte.
    #[inline]
    pub fn byte(&mut self, c: u8) {
        self.b[self.n] = c;
        self.n += 1;
    }

    /// Needs room for `s.len()` bytes.
    #[inline]
    pub fn bytes(&mut self, s: &[u8]) {
        let d = &mut self.b[self.n..self.n + s.len()];
        copy_short(d, s);
        self.n += s.len();
    }

    /// Needs room for 20 bytes.
    #[inline]
    pub fn uint(&mut self, v: u64) {
        self.padded(v, digits(v));
    }

    /// `tag=`; needs room for `tag.len() + 1`.
    #[inline]
    fn tag(&mut self, tag: &[u8]) {
        self.bytes(tag);
        self.byte(b'=');
    }

    /// `tag=<v><sep>`. Makes its own room.
    #[inline]
    pub fn uint_field(&mut self, tag: &[u8], v: u64, sep: u8) {
        self.room(tag.len() + FIELD_ROOM);
        self.tag(tag);
        self.uint(v);
        self.byte(sep);
    }

    /// `tag=<v><sep>`. Makes its own room.
    #[inline]
    pub fn int_field(&mut self, tag: &[u8], v: i64, sep: u8) {
        self.room(tag.len() + FIELD_ROOM);
        self.tag(tag);
        self.int(v);
        self.byte(sep);
    }

    /// `tag=<price><sep>`. Makes its own room.
    #[inline]
    pub fn decimal_field(&mut self, tag: &[u8], exponent: i32, mantissa: i64, sep: u8) {
        self.room(tag.len() + 1);
        self.tag(tag);
        self.decimal(exponent, mantissa);
        self.byte(sep);
    }

    /// `tag=<b><sep>`. Makes its own room.
    #[inline]
    pub fn bytes_field(&mut self, tag: &[u8], b: &[u8], sep: u8) {
        self.room(tag.len() + b.len() + 2);
        self.tag(tag);
        self.bytes(b);
        self.byte(sep);
    }

    /// Needs room for 21 bytes.
    #[inline]
    pub fn int(&mut self, v: i64) {
        if v < 0 {
            self.byte(b'-');
        }
        self.uint(v.unsigned_abs());
    }

    /// `v` in exactly `width` digits (leading zeros); `v` must fit. Needs room for `width`.
    #[inline]
    fn padded(&mut self, mut v: u64, width: usize) {
        let d = &mut self.b[self.n..self.n + width];
        let mut i = width;
        while i >= 2 {
            let r = (v % 100) as usize * 2;
            v /= 100;
            i -= 2;
            d[i..i + 2].copy_from_slice(&PAIRS[r..r + 2]);
        }
        if i == 1 {
            d[0] = b'0' + (v % 10) as u8;
        }
        self.n += width;
    }

    /// A FIX price: exact, no exponent notation (positive exponents as trailing zeros).
    /// Makes its own room.
    pub fn decimal(&mut self, exponent: i32, mantissa: i64) {
        self.room(FIELD_ROOM + exponent.unsigned_abs() as usize);
        if mantissa < 0 {
            self.byte(b'-');
        }
        let m = mantissa.unsigned_abs();
        if exponent >= 0 {
            self.uint(m);
            if m != 0 {
                for _ in 0..exponent {
                    self.byte(b'0');
                }
            }
            return;
        }
        let scale = exponent.unsigned_abs() as usize;
        if scale >= POW10.len() {
            // Beyond 19 fraction digits: every digit of the mantissa is a fraction digit.
            self.bytes(b"0.");
            let digits = m.checked_ilog10().unwrap_or(0) as usize + 1;
            for _ in digits..scale {
                self.byte(b'0');
            }
            self.uint(m);
            return;
        }
        let p = POW10[scale];
        self.uint(m / p);
        self.byte(b'.');
        self.padded(m % p, scale);
    }
}

/// `d.copy_from_slice(s)` for short `s` with fixed-size (overlapping) moves.
#[inline]
fn copy_short(d: &mut [u8], s: &[u8]) {
    let n = s.len();
    match n {
        0 => {}
        1..=3 => {
            d[0] = s[0];
            d[n / 2] = s[n / 2];
            d[n - 1] = s[n - 1];
        }
        4..=7 => {
            d[..4].copy_from_slice(&s[..4]);
            d[n - 4..].copy_from_slice(&s[n - 4..]);
        }
        8..=16 => {
            d[..8].copy_from_slice(&s[..8]);
            d[n - 8..].copy_from_slice(&s[n - 8..]);
        }
        _ => d.copy_from_slice(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: impl FnOnce(&mut Buf)) -> String {
        let mut b = Buf::new(4);
        b.room(100);
        f(&mut b);
        String::from_utf8(b.get(0, b.len()).to_vec()).unwrap()
    }

    #[test]
    fn numbers_and_short_strings() {
        for v in [0u64, 7, 10, 99, 100, 12345, u64::MAX] {
            assert_eq!(text(|b| b.uint(v)), v.to_string());
        }
        for p in POW10 {
            for v in [p - 1, p, p + 1] {
                assert_eq!(digits(v), v.to_string().len(), "{v}");
            }
        }
        assert_eq!(digits(u64::MAX), 20);
        for v in [i64::MIN, -1, 0, 42] {
            assert_eq!(text(|b| b.int(v)), v.to_string());
        }
        for s in [
            "",
            "a",
            "ab",
            "abc",
            "abcd",
            "abcdefg",
            "abcdefgh",
            "0123456789abcdef",
            "0123456789abcdefXYZ",
        ] {
            assert_eq!(text(|b| b.bytes(s.as_bytes())), s);
        }
        for (e, m, s) in [
            (-2, 942755, "9427.55"),
            (-3, 50, "0.050"),
            (-1, -5, "-0.5"),
            (2, 338, "33800"),
            (0, 0, "0"),
            (3, 0, "0"),
            (-19, 1, "0.0000000000000000001"),
            (-21, -12, "-0.000000000000000000012"),
            (-2, i64::MIN, "-92233720368547758.08"),
            (-4, 1234567, "123.4567"),
            (-5, 1234567, "12.34567"),
            (-6, 1234567, "1.234567"),
            (-7, 1234567, "0.1234567"),
            (-6, -7, "-0.000007"),
        ] {
            assert_eq!(text(|b| b.decimal(e, m)), s, "{e} {m}");
        }
    }
}
