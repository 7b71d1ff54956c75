//! ASCII string values borrowed from the input. On the wire an ASCII string's last byte carries
//! the stop bit (0x80); [`Ascii`] keeps the bytes as they are and masks that bit when read, so a
//! decoded string costs no copy.

use std::fmt;

/// An ASCII string: 7-bit characters, of which the last byte may carry the stop bit 0x80 (the
/// form the string has on the wire). Compare, print and copy it through the methods, which
/// mask that bit.
#[derive(Clone, Copy, Default)]
pub struct Ascii<'a>(&'a [u8]);

impl<'a> Ascii<'a> {
    /// A string literal as an `Ascii`; `None` if it is not ASCII.
    pub fn new(s: &'a str) -> Option<Ascii<'a>> {
        s.is_ascii().then_some(Ascii(s.as_bytes()))
    }

    /// For constants in generated code. Panics (at compile time, in a `const`) if `s` is
    /// not ASCII.
    pub const fn lit(s: &'a str) -> Ascii<'a> {
        assert!(s.is_ascii(), "not an ASCII string");
        Ascii(s.as_bytes())
    }

    /// Bytes of 7-bit characters in wire form: only the last may carry the stop bit.
    pub(crate) fn from_wire(b: &'a [u8]) -> Ascii<'a> {
        Ascii(b)
    }

    /// The bytes as held, the last possibly with its stop bit.
    pub fn raw(&self) -> &'a [u8] {
        self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The characters, without the stop bit.
    pub fn bytes(&self) -> impl Iterator<Item = u8> + 'a {
        self.0.iter().map(|b| b & 0x7f)
    }

    /// All characters but the last, which are borrowed as they are (only the last byte can
    /// carry the stop bit), and the last one.
    pub fn split_last(&self) -> (&'a str, Option<char>) {
        match self.0.split_last() {
            // Bytes below 0x80 are valid UTF-8 on their own.
            Some((last, init)) => (
                std::str::from_utf8(init).unwrap_or_default(),
                Some((last & 0x7f) as char),
            ),
            None => ("", None),
        }
    }

    /// Appends the characters to `out`.
    #[inline]
    pub fn write_to(&self, out: &mut Vec<u8>) {
        extend_short(out, self.0);
        if !self.0.is_empty() {
            let last = out.len() - 1;
            out[last] &= 0x7f;
        }
    }

    /// The characters as an owned vector.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.0.len());
        self.write_to(&mut v);
        v
    }

    /// Whether the characters equal `other` (plain bytes).
    #[inline]
    pub fn eq_bytes(&self, other: &[u8]) -> bool {
        match (self.0.split_last(), other.split_last()) {
            (Some((a, ai)), Some((b, bi))) => ai == bi && a & 0x7f == *b,
            (None, None) => true,
            _ => false,
        }
    }
}

/// Appends `b`, byte by byte when it is short: most market-data strings are a few
/// characters, for which a call to `memcpy` costs more than the copy.
#[inline(always)]
pub(crate) fn extend_short(out: &mut Vec<u8>, b: &[u8]) {
    if b.len() <= 8 {
        out.reserve(b.len());
        for &c in b {
            out.push(c);
        }
    } else {
        out.extend_from_slice(b);
    }
}

impl PartialEq for Ascii<'_> {
    fn eq(&self, other: &Ascii<'_>) -> bool {
        match other.0.split_last() {
            Some((b, bi)) => match self.0.split_last() {
                Some((a, ai)) => ai == bi && a & 0x7f == b & 0x7f,
                None => false,
            },
            None => self.0.is_empty(),
        }
    }
}

impl Eq for Ascii<'_> {}

impl PartialEq<str> for Ascii<'_> {
    fn eq(&self, other: &str) -> bool {
        self.eq_bytes(other.as_bytes())
    }
}

impl PartialEq<&str> for Ascii<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.eq_bytes(other.as_bytes())
    }
}

impl fmt::Display for Ascii<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (init, last) = self.split_last();
        f.write_str(init)?;
        match last {
            Some(c) => write!(f, "{c}"),
            None => Ok(()),
        }
    }
}

impl fmt::Debug for Ascii<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

/// An owned ASCII string: what a field whose value may come from the dictionary (copy, delta,
/// tail) decodes into. Its capacity is kept when it is decoded into again.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct AsciiBuf(Vec<u8>);

impl AsciiBuf {
    /// An owned copy of `s`; `None` if it is not ASCII.
    pub fn new(s: &str) -> Option<AsciiBuf> {
        s.is_ascii().then(|| AsciiBuf(s.as_bytes().to_vec()))
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn as_str(&self) -> &str {
        // Only 7-bit bytes are ever stored.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    pub fn as_ascii(&self) -> Ascii<'_> {
        Ascii(&self.0)
    }

    /// Replaces the value with `b`, 7-bit bytes (the decoder's dictionary keeps them so).
    #[inline]
    pub fn set(&mut self, b: &[u8]) {
        self.0.clear();
        extend_short(&mut self.0, b);
        self.0.iter_mut().for_each(|c| *c &= 0x7f);
    }
}

impl fmt::Display for AsciiBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for AsciiBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq<str> for AsciiBuf {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<&str> for AsciiBuf {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_bit_is_not_part_of_the_string() {
        let wire = Ascii::from_wire(&[b'A', b'B', b'C' | 0x80]);
        assert_eq!(wire, "ABC");
        assert_eq!(wire, Ascii::lit("ABC"));
        assert_eq!(wire.to_vec(), b"ABC");
        assert_eq!(wire.to_string(), "ABC");
        assert_eq!(wire.split_last(), ("AB", Some('C')));
        assert_ne!(wire, Ascii::lit("ABD"));
        assert_ne!(wire, Ascii::lit("AB"));
        assert_eq!(Ascii::from_wire(&[0x80]), "\0");
        assert_eq!(Ascii::default(), "");
        assert_ne!(Ascii::default(), Ascii::from_wire(&[0x80]));
        assert!(Ascii::new("é").is_none());
        let mut b = AsciiBuf::default();
        b.set(wire.raw());
        assert_eq!(b, "ABC");
        assert_eq!(b.as_ascii(), wire);
    }
}
