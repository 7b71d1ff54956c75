//! Repeatable noise for the unit tests: a small xorshift, not a dependency.

/// The xorshift sequence from `seed`: each call steps it and returns the new state.
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}
