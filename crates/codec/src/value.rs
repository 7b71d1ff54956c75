//! Owned message values: what [`crate::MessageBuilder`] produces and the encoder consumes.

use std::fmt;

/// A FAST scaled number: `mantissa * 10^exponent`, kept exactly as it was on the wire
/// (9427.55 as (-2, 942755) and (-3, 9427550) are different encodings of one number).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Decimal {
    pub exponent: i32,
    pub mantissa: i64,
}

impl Decimal {
    pub fn new(exponent: i32, mantissa: i64) -> Decimal {
        Decimal { exponent, mantissa }
    }

    /// Parses the text [`Display`](fmt::Display) writes: `9427.55`, `-0.050`, `942755e2`.
    /// The number of fraction digits sets the exponent, so the text round-trips exactly.
    pub fn parse(s: &str) -> Option<Decimal> {
        parse_decimal(s).map(|(exponent, mantissa)| Decimal { exponent, mantissa })
    }
}

/// Exact text: a point with exactly `-exponent` fraction digits for exponents <= 0, and
/// `<mantissa>e<exponent>` for positive exponents. Never goes through binary floating point.
impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.exponent > 0 {
            return write!(f, "{}e{}", self.mantissa, self.exponent);
        }
        if self.exponent == 0 {
            return write!(f, "{}", self.mantissa);
        }
        let scale = (-self.exponent) as usize;
        let digits = self.mantissa.unsigned_abs().to_string();
        let sign = if self.mantissa < 0 { "-" } else { "" };
        if digits.len() > scale {
            let (int, frac) = digits.split_at(digits.len() - scale);
            write!(f, "{sign}{int}.{frac}")
        } else {
            write!(f, "{sign}0.{}{digits}", "0".repeat(scale - digits.len()))
        }
    }
}

/// Parses `[-]int[.frac][e[+-]exp]` into (exponent, mantissa) without losing digits.
pub(crate) fn parse_decimal(s: &str) -> Option<(i32, i64)> {
    let (num, exp_part) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (neg, num) = match num.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, num.strip_prefix('+').unwrap_or(num)),
    };
    let (int, frac) = match num.find('.') {
        Some(i) => (&num[..i], &num[i + 1..]),
        None => (num, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut mantissa: i128 = 0;
    for b in int.bytes().chain(frac.bytes()) {
        mantissa = mantissa * 10 + (b - b'0') as i128;
        if mantissa > i64::MAX as i128 + 1 {
            return None;
        }
    }
    if neg {
        mantissa = -mantissa;
    }
    let mantissa = i64::try_from(mantissa).ok()?;
    let mut exponent = -(frac.len() as i64);
    if let Some(e) = exp_part {
        exponent += e.strip_prefix('+').unwrap_or(e).parse::<i64>().ok()?;
    }
    if !(-63..=63).contains(&exponent) {
        return None;
    }
    Some((exponent as i32, mantissa))
}

/// One field's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    UInt(u64),
    Int(i64),
    Decimal(Decimal),
    Ascii(String),
    Unicode(String),
    Bytes(Vec<u8>),
    /// Each element is one group of fields, positioned like the sequence's instructions.
    Sequence(Vec<Fields>),
    Group(Fields),
    /// A dynamic template reference: a nested message.
    Message(Box<Message>),
}

/// Field values positioned like the instructions of their segment; `None` is absent.
pub type Fields = Vec<Option<Value>>;

/// A decoded message: its template id and the values of the template's top-level fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub template_id: u32,
    pub fields: Fields,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_text_round_trips() {
        for (e, m, s) in [
            (-2, 942755, "9427.55"),
            (2, 942755, "942755e2"),
            (0, -7, "-7"),
            (-3, -8193, "-8.193"),
            (-3, 50, "0.050"),
            (-1, -5, "-0.5"),
        ] {
            let d = Decimal::new(e, m);
            assert_eq!(d.to_string(), s);
            assert_eq!(Decimal::parse(s), Some(d), "{s}");
        }
        assert_eq!(Decimal::parse("1e64"), None);
        assert_eq!(Decimal::parse("abc"), None);
        assert_eq!(Decimal::parse("."), None);
    }
}
