//! The codec's building blocks, public for code generated from templates (`fastfeed-codegen`):
//! the wire reader and presence maps, dictionary entries, and each field operator's rule
//! (spec §6.3) for decoding ([`decode`](self#functions)) and encoding ([`put`]). Generated
//! code calls these with its types and operands as constants, so after inlining each field is
//! straight-line code; the rules themselves live here once.
//!
//! Errors are boxed (`Res<T>`): a thin `Result` keeps values in registers on the hot path.

mod ascii;
mod decode;
mod delta;
mod presence;
pub mod put;
mod seq;
mod stops;
mod strings;

pub use crate::error::{CodecError, ErrorKind, Locate};
pub use crate::wire::{Pmap, Reader};
pub use crate::{Decimal, DecodeOptions, Message, Value};
pub use ascii::{Ascii, AsciiBuf};
pub use decode::*;
pub use delta::*;
pub use presence::Presence;
pub use seq::Seq;
pub use stops::*;
pub use strings::*;

/// A result with a boxed error.
pub type Res<T> = Result<T, Box<CodecError>>;

/// An error of `kind` at byte `at`. Inlined around a cold call that returns the box alone
/// (in a register): a cold call returning a `Res<T>` writes it to a stack slot, and code
/// whose hot path joins it then kept its own results in that slot too.
#[inline(always)]
pub fn fail<T>(kind: ErrorKind, at: usize) -> Res<T> {
    Err(error(kind, at))
}

/// The boxed error of `kind` at byte `at`.
#[cold]
#[inline(never)]
pub fn error(kind: ErrorKind, at: usize) -> Box<CodecError> {
    Box::new(CodecError::new(kind, at))
}

/// Field and template names on errors travelling out of generated code.
pub trait At {
    /// Names the field on an error that has no field yet (the innermost one wins).
    fn at_field(self, name: &str) -> Self;
    /// Names the template on an error that has no template yet.
    fn at_template(self, name: &str) -> Self;
}

impl<T> At for Res<T> {
    #[inline(always)]
    fn at_field(self, name: &str) -> Self {
        self.map_err(|e| e.in_field(name))
    }

    #[inline(always)]
    fn at_template(self, name: &str) -> Self {
        self.map_err(|e| e.in_template(name))
    }
}

/// The integer field types, with their range. Values are kept in dictionaries as integer bits
/// (signed ones as `i64 as u64`), as the interpreter keeps them.
pub trait Int: Copy + PartialEq + std::fmt::Debug + Default {
    const SIGNED: bool;
    /// Smallest and largest value, as integer bits (`LO` signed).
    const LO: i64;
    const HI: u64;
    fn from_bits(bits: u64) -> Self;
    fn to_bits(self) -> u64;
}

macro_rules! int_types {
    ($($t:ty, $signed:expr;)*) => {$(
        impl Int for $t {
            const SIGNED: bool = $signed;
            const LO: i64 = <$t>::MIN as i64;
            const HI: u64 = <$t>::MAX as u64;
            #[inline(always)]
            fn from_bits(bits: u64) -> Self {
                bits as $t
            }
            #[inline(always)]
            fn to_bits(self) -> u64 {
                self as i64 as u64
            }
        }
    )*};
}

int_types! {
    u8, false; u16, false; u32, false; i8, true; i16, true; i32, true; i64, true;
}

impl Int for u64 {
    const SIGNED: bool = false;
    const LO: i64 = 0;
    const HI: u64 = u64::MAX;
    #[inline(always)]
    fn from_bits(bits: u64) -> Self {
        bits
    }
    #[inline(always)]
    fn to_bits(self) -> u64 {
        self
    }
}

/// A dictionary entry's state (spec §6.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    Undefined,
    Empty,
    Assigned,
}

/// The dictionaries' generation: a reset starts a new one, so it costs the same however many
/// entries there are. Entries tagged with an older generation read as undefined.
#[derive(Debug, Clone, Copy)]
pub struct Generation(u32);

/// Generations stay below this, so `2g + 1` fits a tag.
const MAX_GENERATION: u32 = u32::MAX / 2 - 1;

impl Default for Generation {
    fn default() -> Self {
        // Tag 0 in fresh slots: undefined in generation 1.
        Generation(1)
    }
}

impl Generation {
    /// Starts a new generation. True when the numbers wrapped around: the caller must then
    /// [`forget`](Slot::forget) every slot.
    #[inline]
    pub fn bump(&mut self) -> bool {
        self.0 += 1;
        if self.0 > MAX_GENERATION {
            self.0 = 1;
            return true;
        }
        false
    }
}

/// One dictionary entry holding a `T`: the value and its state in one tag.
#[derive(Debug, Clone, Default)]
pub struct Slot<T> {
    tag: u32,
    pub value: T,
}

impl<T> Slot<T> {
    #[inline(always)]
    pub fn state(&self, g: Generation) -> Entry {
        if self.tag == g.0 * 2 {
            Entry::Assigned
        } else if self.tag == g.0 * 2 + 1 {
            Entry::Empty
        } else {
            Entry::Undefined
        }
    }

    #[inline(always)]
    pub fn is_assigned(&self, g: Generation) -> bool {
        self.tag == g.0 * 2
    }

    /// Marks the entry assigned; the caller writes the value.
    #[inline(always)]
    pub fn assign(&mut self, g: Generation) -> &mut T {
        self.tag = g.0 * 2;
        &mut self.value
    }

    #[inline(always)]
    pub fn set(&mut self, g: Generation, v: T) {
        self.tag = g.0 * 2;
        self.value = v;
    }

    #[inline(always)]
    pub fn set_empty(&mut self, g: Generation) {
        self.tag = g.0 * 2 + 1;
    }

    /// The value if assigned, else `other`: a select, not a branch, as whether an entry is
    /// assigned often changes from one sequence element to the next (the first element after
    /// a reset finds it undefined, the others assigned). `None` if the entry is empty.
    #[inline(always)]
    pub fn assigned_or(&self, g: Generation, other: T) -> Option<T>
    where
        T: Copy,
    {
        if self.tag == g.0 * 2 + 1 {
            return None;
        }
        Some(std::hint::select_unpredictable(
            self.tag == g.0 * 2,
            self.value,
            other,
        ))
    }

    /// Undefined in every generation (after [`Generation::bump`] wrapped).
    pub fn forget(&mut self) {
        self.tag = 0;
    }
}

impl Slot<Decimal> {
    /// The decimal, when assigned.
    #[inline(always)]
    pub fn decimal(&self) -> Decimal {
        self.value
    }
}

// The bench and fuzz entry points: one primitive over a buffer and a position.

fn at<T>(
    buf: &[u8],
    pos: &mut usize,
    f: impl FnOnce(&mut Reader) -> Res<T>,
) -> Result<T, CodecError> {
    let mut r = Reader::new(buf, false);
    r.pos = *pos;
    let v = f(&mut r).map_err(|e| *e)?;
    *pos = r.pos;
    Ok(v)
}

/// A stop-bit unsigned integer at `*pos`; advances `pos`.
pub fn u64(buf: &[u8], pos: &mut usize) -> Result<u64, CodecError> {
    at(buf, pos, |r| r.u64_local())
}

/// A stop-bit signed integer.
pub fn i64(buf: &[u8], pos: &mut usize) -> Result<i64, CodecError> {
    at(buf, pos, |r| r.i64_local())
}

/// A nullable unsigned integer.
pub fn nullable_u64(buf: &[u8], pos: &mut usize) -> Result<Option<u64>, CodecError> {
    at(buf, pos, |r| r.nullable_u64_local())
}

/// A presence map, then the number of set bits among its first `take` bits, walked bit by
/// bit as the decoder does.
pub fn pmap(buf: &[u8], pos: &mut usize, take: u32) -> Result<u32, CodecError> {
    at(buf, pos, |r| {
        let mut p = r.pmap()?;
        Ok((0..take).filter(|_| p.next(buf)).count() as u32)
    })
}

/// An ASCII string into `out`; false for NULL.
pub fn ascii_into(
    buf: &[u8],
    pos: &mut usize,
    nullable: bool,
    out: &mut Vec<u8>,
) -> Result<bool, CodecError> {
    at(buf, pos, |r| crate::decode::read_ascii(r, nullable, out))
}

/// A decimal: exponent then mantissa, both stop-bit signed integers.
pub fn decimal_at(buf: &[u8], pos: &mut usize) -> Result<Decimal, CodecError> {
    at(buf, pos, decode::decimal)
}
