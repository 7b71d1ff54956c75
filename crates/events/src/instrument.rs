//! Instruments named by text. Books, recovery and the bus key instruments by a number, the
//! SecurityID (48) most venues send; some name them by Symbol (55) instead, with the
//! TradingSessionID (336) as part of the name (the Moscow Exchange's ASTS currency and equity
//! markets: `USD000UTSTOM` in `CETS`). Those get a number made from the texts: the same on
//! every run and every host, with [`SYMBOL_KEYED`] set so it never meets a venue's own ids.

use fastfeed_codec::FieldValue;

use crate::normalize::NO_SECURITY;

/// Set in every security id made from a symbol (a venue's SecurityIDs stay below it).
pub const SYMBOL_KEYED: u64 = 1 << 63;

/// 64-bit FNV-1a: short symbols, no dependency, stable across versions and platforms.
pub(crate) fn text_hash(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &c| {
        (h ^ c as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A field's value as text, hashed: strings as sent, integers as their decimal digits (so a
/// TradingSessionID sent as a number names the same session as its text). An empty text
/// names nothing (`None`): an empty Symbol is no instrument, an empty session no session.
pub(crate) fn value_hash(v: &FieldValue<'_>) -> Option<u64> {
    // The digits written on the stack: normalizing does not allocate.
    let number = |mut n: u64| {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        text_hash(&digits[at..])
    };
    match *v {
        FieldValue::Ascii(b) | FieldValue::Bytes(b) if !b.is_empty() => Some(text_hash(b)),
        FieldValue::Unicode(s) if !s.is_empty() => Some(text_hash(s.as_bytes())),
        FieldValue::UInt(u) => Some(number(u)),
        FieldValue::Int(i) if i >= 0 => Some(number(i as u64)),
        _ => None,
    }
}

/// The security id of the instrument whose symbol and session hash to these.
pub(crate) fn key(symbol: u64, session: Option<u64>) -> u64 {
    // Mixed (splitmix64's finalizer) so that ids spread over the whole range.
    let mut h = symbol ^ session.map_or(0, |s| s.rotate_left(29) ^ 0x9e37_79b9_7f4a_7c15);
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    let id = h | SYMBOL_KEYED;
    if id == NO_SECURITY {
        id - 1
    } else {
        id
    }
}

/// The security id fastfeed gives the instrument a venue names by `symbol`, with `session`
/// (its TradingSessionID) where the venue sends one beside the symbol: what `book --symbol`
/// looks for, and what records of such venues carry. An empty session is none.
pub fn symbol_security(symbol: &str, session: Option<&str>) -> u64 {
    key(
        text_hash(symbol.as_bytes()),
        session
            .filter(|s| !s.is_empty())
            .map(|s| text_hash(s.as_bytes())),
    )
}

/// An MDEntryID (278) sent as text (ASTS): its digits as a number, any other text hashed.
pub(crate) fn entry_id_text(b: &[u8]) -> Option<u64> {
    if b.is_empty() {
        return None;
    }
    if b.len() <= 19 && b.iter().all(u8::is_ascii_digit) {
        return std::str::from_utf8(b).ok()?.parse().ok();
    }
    Some(text_hash(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_and_apart_from_venue_ids() {
        // Fixed values: records on the bus carry these ids, so they must not change.
        assert_eq!(text_hash(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(text_hash(b"a"), 0xaf63_dc4c_8601_ec8c);
        let a = symbol_security("USD000UTSTOM", Some("CETS"));
        assert_eq!(a, symbol_security("USD000UTSTOM", Some("CETS")));
        assert_ne!(a, symbol_security("USD000UTSTOM", None));
        assert_ne!(a, symbol_security("USD000UTSTOM", Some("CNGD")));
        assert_ne!(a, symbol_security("EUR_RUB__TOM", Some("CETS")));
        for id in [a, symbol_security("", None)] {
            assert!(id & SYMBOL_KEYED != 0 && id != NO_SECURITY);
        }
        // A session sent as a number names the same session as its digits.
        for (n, text) in [(4, "4"), (0, "0"), (u64::MAX, "18446744073709551615")] {
            let n = value_hash(&FieldValue::UInt(n));
            assert_eq!(
                key(text_hash(b"RIM3"), n),
                symbol_security("RIM3", Some(text))
            );
        }
        assert_eq!(value_hash(&FieldValue::Int(120)), Some(text_hash(b"120")));
    }

    #[test]
    fn text_entry_ids() {
        assert_eq!(entry_id_text(b"1234567"), Some(1_234_567));
        assert_eq!(entry_id_text(b""), None);
        assert_eq!(entry_id_text(b"A17"), Some(text_hash(b"A17")));
        // Past u64: hashed, not dropped.
        assert_eq!(
            entry_id_text(b"99999999999999999999"),
            Some(text_hash(b"99999999999999999999"))
        );
    }
}
