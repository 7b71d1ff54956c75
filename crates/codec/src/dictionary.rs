//! Dictionaries (spec §6.4) as flat slots. All dictionaries of a template set share one slot
//! array: the compiler gave each (dictionary, key, type) its own index. A reset bumps a
//! generation number, so it costs the same however many entries there are. A slot's state is
//! one tag compared against the current generation: `2g` assigned, `2g + 1` empty, anything
//! else undefined, so the usual case (assigned) is a single compare.

use crate::template::{FieldType, Initial};

/// Generations stay below this, so `2g + 1` fits the tag.
const MAX_GENERATION: u32 = u32::MAX / 2 - 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Undefined,
    Empty,
    Assigned,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Slot {
    tag: u32,
    /// The type of the value ([`FieldType::code`]), kept only for entries that fields of
    /// different types share (spec §6.3.1, ERR D4).
    pub ty: u8,
    /// Integer bits, or a decimal's exponent.
    pub int: u64,
    /// A decimal's mantissa.
    pub mantissa: i64,
    /// String and byte vector values; the capacity is kept across messages.
    pub bytes: Vec<u8>,
}

#[derive(Debug, Clone)]
pub(crate) struct Dictionary {
    slots: Vec<Slot>,
    generation: u32,
}

impl Dictionary {
    pub fn new(slots: usize) -> Self {
        // Tag 0 in the slots and generation 1 here: every slot starts undefined.
        Dictionary {
            slots: vec![Slot::default(); slots],
            generation: 1,
        }
    }

    pub fn reset(&mut self) {
        self.generation += 1;
        if self.generation > MAX_GENERATION {
            // Clear for real once every 2 billion resets.
            self.slots.iter_mut().for_each(|s| s.tag = 0);
            self.generation = 1;
        }
    }

    #[inline]
    pub fn state(&self, i: u32) -> State {
        let tag = self.slots[i as usize].tag;
        if tag == self.generation * 2 {
            State::Assigned
        } else if tag == self.generation * 2 + 1 {
            State::Empty
        } else {
            State::Undefined
        }
    }

    #[inline]
    pub fn slot(&self, i: u32) -> &Slot {
        &self.slots[i as usize]
    }

    /// The slot, marked assigned; the caller writes the value.
    #[inline]
    pub fn assign(&mut self, i: u32) -> &mut Slot {
        let tag = self.generation * 2;
        let s = &mut self.slots[i as usize];
        s.tag = tag;
        s
    }

    /// Whether the entry holds a value of another type than `ty` (the D4 check).
    pub fn holds_other_type(&self, i: u32, ty: FieldType) -> bool {
        self.state(i) == State::Assigned && self.slots[i as usize].ty != ty.code()
    }

    pub fn set_type(&mut self, i: u32, ty: FieldType) {
        self.slots[i as usize].ty = ty.code();
    }

    #[inline]
    pub fn set_empty(&mut self, i: u32) {
        self.slots[i as usize].tag = self.generation * 2 + 1;
    }

    #[inline]
    pub fn set_int(&mut self, i: u32, v: u64) {
        self.assign(i).int = v;
    }

    #[inline]
    pub fn set_decimal(&mut self, i: u32, exponent: i32, mantissa: i64) {
        let s = self.assign(i);
        s.int = exponent as i64 as u64;
        s.mantissa = mantissa;
    }

    pub fn set_bytes(&mut self, i: u32, v: &[u8]) {
        let s = self.assign(i);
        s.bytes.clear();
        s.bytes.extend_from_slice(v);
    }

    /// Assigns a slot its initial value, as the copy, increment and tail operators do when
    /// the entry is undefined.
    pub fn set_initial(&mut self, i: u32, init: &Initial) {
        match init {
            Initial::Int(v) => self.set_int(i, *v),
            Initial::Decimal { exponent, mantissa } => self.set_decimal(i, *exponent, *mantissa),
            Initial::Bytes(b) => self.set_bytes(i, b),
        }
    }
}
