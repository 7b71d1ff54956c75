//! Repeatable inputs for the unit tests: a small xorshift (not a dependency), and the forms
//! an ASCII string takes on the wire.

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

/// Every form of an ASCII string on the wire (spec §10.6.3): one byte, several (up to and
/// past a word's 8), NULL or the empty string as a lone stop bit, zero preambles before a
/// stop bit or a character, unterminated, and no bytes at all.
pub(crate) const ASCII_FORMS: [&[u8]; 10] = [
    &[0xc1],
    &[0x80],
    &[0x00, 0x80],
    &[0x00, 0x00, 0x80],
    &[0x00, 0xc1],
    &[0x00, 0x00, 0xc1],
    &[0x41, 0x42, 0xc3],
    &[0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0xc9],
    &[0x41, 0x42],
    &[],
];
