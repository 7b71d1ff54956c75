//! String and binary arrays handed to Arrow without its per-value validation, after checks
//! over whole buffers that establish the same guarantees.
//!
//! Arrow's checked constructors test every value: that its offsets never decrease, and for
//! strings that each offset falls on a character boundary of valid UTF-8. On complex30000's
//! entry table that was about 5% of the instructions of a table's build (callgrind), a pass
//! per value over columns whose bytes are nearly always ASCII. The checks here are two
//! branch-free passes the compiler vectorizes. Offsets that fail theirs are an error (Arrow's
//! own check would panic); bytes that are not all ASCII go to Arrow's checked constructors.
#![allow(unsafe_code)]

use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, StringArray};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::ArrowError;

/// Whether `offsets` are what Arrow asks of a byte array over `len` bytes: at least one, the
/// first 0 (ours always start there), none decreasing, the last within the bytes.
fn offsets_valid(offsets: &[i32], len: usize) -> bool {
    let ends_within = offsets
        .last()
        .is_some_and(|&l| usize::try_from(l).is_ok_and(|l| l <= len));
    // `fold` with `&` rather than `all`: no early exit, so the loop vectorizes.
    let rising = offsets.windows(2).fold(true, |ok, w| ok & (w[0] <= w[1]));
    offsets.first() == Some(&0) && ends_within && rising
}

/// A string (`utf8`) or binary array of these parts, with `nulls` one per value if any.
pub(crate) fn byte_array(
    utf8: bool,
    offsets: Vec<i32>,
    bytes: Vec<u8>,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef, ArrowError> {
    // Offsets are i32: a batch holding more than 2 GiB of one column's bytes (a long string
    // copied over many rows) wraps them. An error, where Arrow's `OffsetBuffer::new` panics.
    if !offsets_valid(&offsets, bytes.len()) {
        return Err(ArrowError::InvalidArgumentError(format!(
            "a string or binary column's offsets do not fit its {} bytes (more than 2 GiB in one batch?): use smaller batches",
            bytes.len()
        )));
    }
    let values = offsets.len().saturating_sub(1);
    let fits = nulls.as_ref().is_none_or(|n| n.len() == values)
        // ASCII bytes are UTF-8 however the offsets cut them.
        && (!utf8 || bytes.is_ascii());
    if !fits {
        let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
        return Ok(if utf8 {
            Arc::new(StringArray::try_new(offsets, bytes.into(), nulls)?)
        } else {
            Arc::new(BinaryArray::try_new(offsets, bytes.into(), nulls)?)
        });
    }
    // SAFETY: `offsets_valid` checked what `OffsetBuffer::new` asserts (non-empty, first not
    // negative, never decreasing).
    let offsets = unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)) };
    Ok(if utf8 {
        // SAFETY: `try_new` would not fail: the offsets rise from 0 to at most the bytes'
        // length, so each pair is a slice of the bytes; the bytes are all ASCII, so every
        // slice is valid UTF-8; `nulls`, if any, has one entry per value (all checked above).
        Arc::new(unsafe { StringArray::new_unchecked(offsets, bytes.into(), nulls) })
    } else {
        // SAFETY: as above, without the UTF-8 requirement.
        Arc::new(unsafe { BinaryArray::new_unchecked(offsets, bytes.into(), nulls) })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;

    #[test]
    fn offsets_are_checked_whole() {
        assert!(offsets_valid(&[0], 0));
        assert!(offsets_valid(&[0, 2, 2, 5], 5));
        assert!(!offsets_valid(&[], 0));
        assert!(!offsets_valid(&[1, 2], 5), "must start at 0");
        assert!(!offsets_valid(&[0, 3, 2, 5], 5), "decreasing");
        assert!(!offsets_valid(&[0, 2, 6], 5), "past the bytes");
        assert!(!offsets_valid(&[0, -1], 5));
    }

    #[test]
    fn ascii_strings_and_binary_build_unchecked() {
        let a = byte_array(true, vec![0, 2, 2, 5], b"abcde".to_vec(), None).unwrap();
        let s = a.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            [Some("ab"), Some(""), Some("cde")]
        );
        let b = byte_array(false, vec![0, 1, 3], vec![0xff, 0, 0x80], None).unwrap();
        let b = b.as_any().downcast_ref::<BinaryArray>().unwrap();
        assert_eq!(b.value(1), [0, 0x80]);
    }

    #[test]
    fn anything_else_goes_through_arrows_checks() {
        // Valid UTF-8, not ASCII: accepted by the checked path.
        let a = byte_array(true, vec![0, 2], "é".as_bytes().to_vec(), None).unwrap();
        assert_eq!(
            a.as_any().downcast_ref::<StringArray>().unwrap().value(0),
            "é"
        );
        // A cut inside a character, invalid UTF-8, offsets past the end, nulls of the
        // wrong length: errors, not arrays.
        assert!(byte_array(true, vec![0, 1, 2], "é".as_bytes().to_vec(), None).is_err());
        assert!(byte_array(true, vec![0, 1], vec![0xff], None).is_err());
        assert!(byte_array(false, vec![0, 3], vec![1, 2], None).is_err());
        // Wrapped offsets (past 2 GiB): an error, not Arrow's panic.
        assert!(byte_array(true, vec![0, i32::MAX, i32::MIN], b"ab".to_vec(), None).is_err());
        let nulls = Some(NullBuffer::new_null(3));
        assert!(byte_array(true, vec![0, 1], b"a".to_vec(), nulls).is_err());
    }
}
