//! Dictionaries (spec §6.4) as flat slots. All dictionaries of a template set share one slot
//! array: the compiler gave each (dictionary, key, type) its own index. A reset bumps a
//! generation number, so it costs the same however many entries there are.

use crate::template::Initial;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Undefined,
    Empty,
    Assigned,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Slot {
    generation: u32,
    empty: bool,
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
        // Generation 0 in the slots and 1 here: every slot starts undefined.
        Dictionary {
            slots: vec![Slot::default(); slots],
            generation: 1,
        }
    }

    pub fn reset(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // Wrapped: clear for real once every 4 billion resets.
            self.slots.iter_mut().for_each(|s| s.generation = 0);
            self.generation = 1;
        }
    }

    #[inline]
    pub fn state(&self, i: u32) -> State {
        let s = &self.slots[i as usize];
        if s.generation != self.generation {
            State::Undefined
        } else if s.empty {
            State::Empty
        } else {
            State::Assigned
        }
    }

    #[inline]
    pub fn slot(&self, i: u32) -> &Slot {
        &self.slots[i as usize]
    }

    /// The slot, marked assigned; the caller writes the value.
    #[inline]
    pub fn assign(&mut self, i: u32) -> &mut Slot {
        let g = self.generation;
        let s = &mut self.slots[i as usize];
        s.generation = g;
        s.empty = false;
        s
    }

    #[inline]
    pub fn set_empty(&mut self, i: u32) {
        let g = self.generation;
        let s = &mut self.slots[i as usize];
        s.generation = g;
        s.empty = true;
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
