//! Exact comparison of FAST decimals: 13331e1 and 133310 are one price.

use std::cmp::Ordering;

use fastfeed_codec::Decimal;

/// Compares two decimals by value, exactly (no floating point): the one with the larger
/// exponent is scaled to the other's in 128 bits; if that overflows, its magnitude exceeds
/// any 64-bit mantissa and its sign decides.
pub fn cmp_price(a: Decimal, b: Decimal) -> Ordering {
    if a.exponent == b.exponent {
        return a.mantissa.cmp(&b.mantissa);
    }
    let (hi, lo, flip) = if a.exponent > b.exponent {
        (a, b, false)
    } else {
        (b, a, true)
    };
    let diff = (hi.exponent as i64 - lo.exponent as i64) as u32;
    let scaled = 10i128
        .checked_pow(diff)
        .and_then(|p| (hi.mantissa as i128).checked_mul(p));
    let ord = match scaled {
        Some(s) => s.cmp(&(lo.mantissa as i128)),
        None if hi.mantissa == 0 => 0.cmp(&lo.mantissa),
        None => hi.mantissa.signum().cmp(&0),
    };
    if flip {
        ord.reverse()
    } else {
        ord
    }
}

/// Whether two decimals are the same number.
pub fn same_price(a: Decimal, b: Decimal) -> bool {
    cmp_price(a, b) == Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(e: i32, m: i64) -> Decimal {
        Decimal::new(e, m)
    }

    #[test]
    fn exact_across_exponents() {
        assert!(same_price(d(1, 13331), d(0, 133310)));
        assert!(same_price(d(-2, 942755), d(-3, 9427550)));
        assert_eq!(cmp_price(d(1, 13331), d(0, 133311)), Ordering::Less);
        assert_eq!(cmp_price(d(-2, -5), d(0, 0)), Ordering::Less);
        assert_eq!(cmp_price(d(60, 1), d(-60, i64::MAX)), Ordering::Greater);
        assert_eq!(cmp_price(d(60, -1), d(-60, i64::MIN)), Ordering::Less);
        assert_eq!(cmp_price(d(-60, i64::MAX), d(60, 1)), Ordering::Less);
        assert_eq!(cmp_price(d(60, 0), d(-60, 5)), Ordering::Less);
    }

    proptest::proptest! {
        #[test]
        fn agrees_with_scaled_integers(m1 in -1_000_000i64..1_000_000, e1 in -6i32..6,
                                       m2 in -1_000_000i64..1_000_000, e2 in -6i32..6) {
            let scale = |m: i64, e: i32| m as i128 * 10i128.pow((e + 6) as u32);
            proptest::prop_assert_eq!(cmp_price(d(e1, m1), d(e2, m2)), scale(m1, e1).cmp(&scale(m2, e2)));
        }
    }
}
