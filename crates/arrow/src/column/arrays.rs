//! A batch's columns handed to Arrow: each column's vectors become an array's buffers without
//! copying (validity packed into a bitmap, decimals rescaled in place, strings checked whole),
//! and the Arrow types and fields of the table's schema.

use std::sync::Arc;

use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, Decimal128Array, ListArray, PrimitiveArray, StructArray};
use arrow_buffer::{BooleanBuffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields};
use fastfeed_codec::template::IntType;
use fastfeed_codec::Decimal;

use super::{Column, Data};
use crate::plan::{ColumnType, Plan, DECIMAL_PRECISION};
use crate::TableError;

/// A byte per value packed into Arrow's bitmap (value `i` in bit `i % 8` of byte `i / 8`),
/// eight at a time: a loop the compiler turns into vector compares and mask moves, where
/// Arrow's `collect_bool` calls a closure per value.
fn pack_bits(v: &[bool]) -> BooleanBuffer {
    let chunks = v.chunks_exact(8);
    let tail = chunks.remainder();
    let mut bytes: Vec<u8> = chunks
        .map(|c| c.iter().rev().fold(0u8, |acc, &b| acc << 1 | b as u8))
        .collect();
    if !tail.is_empty() {
        bytes.push(tail.iter().rev().fold(0u8, |acc, &b| acc << 1 | b as u8));
    }
    BooleanBuffer::new(bytes.into(), 0, v.len())
}

/// The Arrow type of column `c` of `plan`, with the scale a decimal column has now.
pub(crate) fn data_type_with(plan: &Plan, cols: &[Column], c: usize) -> DataType {
    let spec = &plan.columns[c];
    match spec.ty {
        ColumnType::Int(t) => match t {
            IntType::U8 => DataType::UInt8,
            IntType::U16 => DataType::UInt16,
            IntType::U32 => DataType::UInt32,
            IntType::U64 => DataType::UInt64,
            IntType::I8 => DataType::Int8,
            IntType::I16 => DataType::Int16,
            IntType::I32 => DataType::Int32,
            IntType::I64 => DataType::Int64,
        },
        ColumnType::Decimal(fixed) => DataType::Decimal128(
            DECIMAL_PRECISION,
            cols.get(c).and_then(|col| col.scale).or(fixed).unwrap_or(0),
        ),
        ColumnType::Utf8 => DataType::Utf8,
        ColumnType::Binary => DataType::Binary,
        ColumnType::List => DataType::List(Arc::new(Field::new(
            "item",
            DataType::Struct(fields_with(plan, cols, &spec.children)),
            false,
        ))),
    }
}

pub(crate) fn fields_with(plan: &Plan, cols: &[Column], list: &[usize]) -> Fields {
    list.iter()
        .map(|&c| {
            Field::new(
                plan.columns[c].name.clone(),
                data_type_with(plan, cols, c),
                plan.columns[c].nullable,
            )
        })
        .collect()
}

/// The 10^k that rescales a mantissa, for k in 0..=38.
fn pow10(k: u32) -> Option<i128> {
    10i128.checked_pow(k)
}

/// A decimal as the mantissa at `scale`, exactly, or None when it has more fraction digits
/// than the scale holds or does not fit 38 digits.
pub(crate) fn rescale(d: Decimal, scale: i8) -> Option<i128> {
    let shift = d.exponent + scale as i32;
    let m = d.mantissa as i128;
    let v = if shift >= 0 {
        m.checked_mul(pow10(shift as u32)?)?
    } else {
        let p = pow10(shift.unsigned_abs())?;
        if m % p != 0 {
            return None;
        }
        m / p
    };
    (v.unsigned_abs() < 10u128.pow(DECIMAL_PRECISION as u32)).then_some(v)
}

/// Turns a column (and, for a list, its children) into an Arrow array, leaving it empty for
/// the next batch.
/// `len` is the values the column must have: the rows (or a list's elements) of the batch;
/// a constant's column is filled to it here.
pub(crate) fn finish(
    plan: &Plan,
    cols: &mut [Column],
    c: usize,
    len: usize,
) -> Result<ArrayRef, TableError> {
    if let Some(k) = &plan.columns[c].constant {
        cols[c].fill(k, len);
    }
    let col = &mut cols[c];
    if col.nulls != 0 {
        if col.held() == 0 && col.nulls == len && plan.columns[c].ty != ColumnType::List {
            // Nothing but nulls: Arrow's null array, its buffers allocated zeroed and never
            // filled. The vectors stay, empty, for the next batch. A decimal column's scale
            // is learned as from values that are all 0e0.
            col.nulls = 0;
            if let ColumnType::Decimal(_) = plan.columns[c].ty {
                col.scale.get_or_insert(crate::plan::scale_of(0));
            }
            return Ok(arrow_array::new_null_array(
                &data_type_with(plan, cols, c),
                len,
            ));
        }
        col.write_nulls();
    }
    let valid = std::mem::take(&mut cols[c].valid);
    let nulls = Some(NullBuffer::new(pack_bits(&valid))).filter(|n| n.null_count() > 0);
    let name = &plan.columns[c].name;
    // The next batch's vectors start at this one's size: no regrowth on the hot path.
    let next = Column::with_capacity_of(plan.columns[c].ty, &cols[c].data).data;
    let data = std::mem::replace(&mut cols[c].data, next);
    let array: ArrayRef = match data {
        Data::U8(v) => Arc::new(PrimitiveArray::<UInt8Type>::new(v.into(), nulls)),
        Data::U16(v) => Arc::new(PrimitiveArray::<UInt16Type>::new(v.into(), nulls)),
        Data::U32(v) => Arc::new(PrimitiveArray::<UInt32Type>::new(v.into(), nulls)),
        Data::U64(v) => Arc::new(PrimitiveArray::<UInt64Type>::new(v.into(), nulls)),
        Data::I8(v) => Arc::new(PrimitiveArray::<Int8Type>::new(v.into(), nulls)),
        Data::I16(v) => Arc::new(PrimitiveArray::<Int16Type>::new(v.into(), nulls)),
        Data::I32(v) => Arc::new(PrimitiveArray::<Int32Type>::new(v.into(), nulls)),
        Data::I64(v) => Arc::new(PrimitiveArray::<Int64Type>::new(v.into(), nulls)),
        Data::Decimal { mantissa, exponent } => {
            // Nulls hold 0e0: no fraction digits, and 0 at any scale, so they need no check.
            // Unless fixed, the first batch's values set the scale: the most fraction digits
            // any of them has. It stays for the later batches, so every batch has one schema.
            // The most fraction digits are the smallest exponent's: a min over bytes, which
            // the compiler vectorizes, instead of a scale worked out per value.
            let scale = cols[c].scale.unwrap_or_else(|| {
                crate::plan::scale_of(exponent.iter().copied().min().unwrap_or(0) as i64)
            });
            let mut values = mantissa;
            for (v, &e) in values.iter_mut().zip(&exponent) {
                // Most values have the column's exponent: the mantissa is the value. Zero
                // (and so every null) is zero at any scale.
                if e as i32 == -(scale as i32) || *v == 0 {
                    continue;
                }
                // The mantissa came from an i64.
                let d = Decimal::new(e as i32, *v as i64);
                let needed = crate::plan::scale_of(d.exponent as i64);
                *v = rescale(d, scale).ok_or_else(|| TableError::Decimal {
                    column: name.clone(),
                    value: d.to_string(),
                    scale,
                    needed: (needed > scale).then_some(needed),
                })?;
            }
            cols[c].scale.get_or_insert(scale);
            Arc::new(
                Decimal128Array::new(ScalarBuffer::from(values), nulls)
                    .with_precision_and_scale(DECIMAL_PRECISION, scale)?,
            )
        }
        // ASCII fields are 7-bit and unicode ones checked on decode, so UTF-8 validation
        // never fails on decoder output.
        Data::Bytes { offsets, bytes } => crate::unchecked::byte_array(
            plan.columns[c].ty == ColumnType::Utf8,
            offsets,
            bytes,
            nulls,
        )?,
        Data::List { offsets } => {
            let children = plan.columns[c].children.clone();
            let elements = *offsets.last().expect("offsets start with 0") as usize;
            let arrays = children
                .iter()
                .map(|&k| finish(plan, cols, k, elements))
                .collect::<Result<Vec<_>, _>>()?;
            let fields = fields_with(plan, cols, &children);
            let entries = StructArray::try_new_with_length(fields, arrays, None, elements)?;
            let item = Arc::new(Field::new("item", entries.data_type().clone(), false));
            let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
            Arc::new(ListArray::try_new(item, offsets, Arc::new(entries), nulls)?)
        }
    };
    Ok(array)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed bitmap agrees with the bytes it came from, for lengths around multiples of 8.
    #[test]
    fn packed_bits_agree() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..70 {
            let v: Vec<bool> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x & 1 == 1
                })
                .collect();
            let b = pack_bits(&v);
            assert_eq!(b.len(), len);
            assert_eq!(b.iter().collect::<Vec<_>>(), v, "len {len}");
        }
    }
}
