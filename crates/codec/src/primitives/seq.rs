//! Sequence elements kept for reuse between messages.

use std::fmt;
use std::ops::{Deref, DerefMut};

/// A sequence's elements. Reads as a slice of the current message's elements; a decoder
/// decoding into it again keeps the spare elements of longer earlier messages, and so the
/// capacity of their strings and nested sequences: steady-state decoding does not allocate.
#[derive(Clone)]
pub struct Seq<T> {
    items: Vec<T>,
    len: usize,
}

impl<T> Seq<T> {
    pub const fn new() -> Self {
        Seq {
            items: Vec::new(),
            len: 0,
        }
    }

    pub fn as_slice(&self) -> &[T] {
        &self.items[..self.len]
    }

    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.items[..self.len]
    }

    /// Appends an element.
    pub fn push(&mut self, v: T) {
        self.items.truncate(self.len);
        self.items.push(v);
        self.len += 1;
    }

    /// No elements (the spare ones are kept).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// One more element, reusing a spare one or made by `Default`, for a decoder to fill.
    #[inline]
    pub fn next_slot(&mut self) -> &mut T
    where
        T: Default,
    {
        if self.len == self.items.len() {
            self.items.push(T::default());
        }
        self.len += 1;
        &mut self.items[self.len - 1]
    }
}

impl<T> Default for Seq<T> {
    fn default() -> Self {
        Seq::new()
    }
}

impl<T> Deref for Seq<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T> DerefMut for Seq<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

impl<T: PartialEq> PartialEq for Seq<T> {
    fn eq(&self, other: &Seq<T>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Eq> Eq for Seq<T> {}

impl<T: fmt::Debug> fmt::Debug for Seq<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_slice(), f)
    }
}

impl<T> From<Vec<T>> for Seq<T> {
    fn from(items: Vec<T>) -> Self {
        let len = items.len();
        Seq { items, len }
    }
}

impl<T> FromIterator<T> for Seq<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Vec::from_iter(iter).into()
    }
}

impl<'s, T> IntoIterator for &'s Seq<T> {
    type Item = &'s T;
    type IntoIter = std::slice::Iter<'s, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spare_elements_are_reused_not_shown() {
        let mut s: Seq<Vec<u8>> = Seq::new();
        s.next_slot().extend_from_slice(b"abc");
        s.next_slot().push(1);
        assert_eq!(s.len(), 2);
        s.clear();
        assert!(s.is_empty());
        let first = s.next_slot();
        assert_eq!(first, b"abc", "the spare element comes back as it was");
        first.clear();
        assert_eq!(s.len(), 1);
        assert_eq!(s, Seq::from(vec![vec![]]));
        s.push(vec![9]);
        assert_eq!(s.as_slice(), &[vec![], vec![9]]);
        assert_eq!((&s).into_iter().count(), 2);
    }
}
