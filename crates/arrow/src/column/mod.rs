//! Column storage filled while decoding: plain vectors that can be cut back when a message
//! fails halfway (Arrow's builders cannot), handed to Arrow without copying when a batch is
//! finished.

use fastfeed_codec::template::IntType;
use fastfeed_codec::FieldValue;

use crate::plan::{ColumnType, Constant};

mod arrays;

pub(crate) use arrays::{fields_with, finish};

/// The values of one column.
#[derive(Debug)]
pub(crate) enum Data {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    /// The mantissas, as on the wire until the batch's scale is known, in the vector that
    /// becomes the decimal128 buffer (rescaled in place: no second buffer to fault in).
    Decimal {
        mantissa: Vec<i128>,
        exponent: Vec<i8>,
    },
    /// Offsets (one more than values) into bytes: strings and byte vectors alike.
    Bytes {
        offsets: Vec<i32>,
        bytes: Vec<u8>,
    },
    /// Offsets into the children, which are columns of their own in the arena.
    List {
        offsets: Vec<i32>,
    },
}

/// One column under construction.
#[derive(Debug)]
pub(crate) struct Column {
    pub data: Data,
    /// Whether each value is valid, a byte per value (cheaper to append than a bit, packed
    /// into Arrow's bitmap when the batch is finished). Held only once a null arrives, and
    /// then as long as the values: empty, every value is valid, and a value costs one test
    /// of the length (an `Option` here costs a compare with its niche on every value).
    pub valid: Vec<bool>,
    /// Nulls after the values held, counted but not written yet: most optional fields of wide
    /// entry rows are absent in every row, and a count costs an add where a written null
    /// costs two pushes (the default value and its validity) and the memory they fill. They
    /// are written when a value follows them; a column of nulls only becomes Arrow's null
    /// array, whose buffers are never filled.
    nulls: usize,
    /// A decimal column's scale once fixed (by the template, the caller, or the first batch).
    pub scale: Option<i8>,
}

macro_rules! each_int {
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            Data::U8($v) => $body,
            Data::U16($v) => $body,
            Data::U32($v) => $body,
            Data::U64($v) => $body,
            Data::I8($v) => $body,
            Data::I16($v) => $body,
            Data::I32($v) => $body,
            Data::I64($v) => $body,
            _ => unreachable!("not an integer column"),
        }
    };
}

impl Column {
    pub fn new(ty: ColumnType) -> Column {
        let data = match ty {
            ColumnType::Int(t) => match t {
                IntType::U8 => Data::U8(Vec::new()),
                IntType::U16 => Data::U16(Vec::new()),
                IntType::U32 => Data::U32(Vec::new()),
                IntType::U64 => Data::U64(Vec::new()),
                IntType::I8 => Data::I8(Vec::new()),
                IntType::I16 => Data::I16(Vec::new()),
                IntType::I32 => Data::I32(Vec::new()),
                IntType::I64 => Data::I64(Vec::new()),
            },
            ColumnType::Decimal(_) => Data::Decimal {
                mantissa: Vec::new(),
                exponent: Vec::new(),
            },
            ColumnType::Utf8 | ColumnType::Binary => Data::Bytes {
                offsets: vec![0],
                bytes: Vec::new(),
            },
            ColumnType::List => Data::List { offsets: vec![0] },
        };
        let scale = match ty {
            ColumnType::Decimal(s) => s,
            _ => None,
        };
        Column {
            data,
            valid: Vec::new(),
            nulls: 0,
            scale,
        }
    }

    /// An empty column whose vectors have the capacity of `like`'s.
    fn with_capacity_of(ty: ColumnType, like: &Data) -> Column {
        let mut c = Column::new(ty);
        match (&mut c.data, like) {
            (
                Data::Decimal { mantissa, exponent },
                Data::Decimal {
                    mantissa: m,
                    exponent: e,
                },
            ) => {
                mantissa.reserve(m.len());
                exponent.reserve(e.len());
            }
            (
                Data::Bytes { offsets, bytes },
                Data::Bytes {
                    offsets: o,
                    bytes: b,
                },
            ) => {
                offsets.reserve(o.len());
                bytes.reserve(b.len());
            }
            (Data::List { offsets }, Data::List { offsets: o }) => offsets.reserve(o.len()),
            (data, like) => {
                let n = each_int!(like, d => d.len());
                each_int!(data, d => d.reserve(n));
            }
        }
        c
    }

    /// Values (nulls included).
    pub fn len(&self) -> usize {
        self.held() + self.nulls
    }

    /// Values written to the vectors (nulls included, the counted ones not).
    fn held(&self) -> usize {
        match &self.data {
            Data::Decimal { exponent, .. } => exponent.len(),
            Data::Bytes { offsets, .. } | Data::List { offsets } => offsets.len() - 1,
            data => each_int!(data, d => d.len()),
        }
    }

    /// Marks the value just pushed valid.
    #[inline(always)]
    fn valid(&mut self) {
        if !self.valid.is_empty() {
            self.valid.push(true);
        }
    }

    /// Appends a decoded value. The decoder range-checks integers against the field's type,
    /// so the narrowing casts keep every value.
    #[inline(always)]
    pub fn push(&mut self, v: FieldValue<'_>) {
        self.flush_nulls();
        match (&mut self.data, v) {
            (Data::U32(d), FieldValue::UInt(x)) => d.push(x as u32),
            (Data::U64(d), FieldValue::UInt(x)) => d.push(x),
            (Data::I32(d), FieldValue::Int(x)) => d.push(x as i32),
            (Data::I64(d), FieldValue::Int(x)) => d.push(x),
            (Data::U8(d), FieldValue::UInt(x)) => d.push(x as u8),
            (Data::U16(d), FieldValue::UInt(x)) => d.push(x as u16),
            (Data::I8(d), FieldValue::Int(x)) => d.push(x as i8),
            (Data::I16(d), FieldValue::Int(x)) => d.push(x as i16),
            (Data::Decimal { mantissa, exponent }, FieldValue::Decimal(x)) => {
                mantissa.push(x.mantissa as i128);
                // The decoder rejects exponents outside -63..=63.
                exponent.push(x.exponent as i8);
            }
            (Data::Bytes { offsets, bytes }, FieldValue::Ascii(b) | FieldValue::Bytes(b)) => {
                append_bytes(bytes, b);
                offsets.push(bytes.len() as i32);
            }
            (Data::Bytes { offsets, bytes }, FieldValue::Unicode(s)) => {
                append_bytes(bytes, s.as_bytes());
                offsets.push(bytes.len() as i32);
            }
            // The template types the column and the decoder the value alike.
            _ => return self.push_null(),
        }
        self.valid();
    }

    /// Appends a constant `n` times: the column of a mandatory constant, at the end of a
    /// batch, in one loop instead of a push per value while decoding.
    pub fn fill(&mut self, k: &Constant, n: usize) {
        if n == 0 {
            return;
        }
        self.flush_nulls();
        if let (Data::Bytes { offsets, bytes }, Constant::Bytes(b)) = (&mut self.data, k) {
            let start = *offsets.last().expect("offsets start with 0");
            offsets.extend((1..=n).map(|i| start.wrapping_add((i * b.len()) as i32)));
            // Copies of what is there already, doubling: a few long copies, not n short ones.
            let (from, total) = (bytes.len(), n * b.len());
            bytes.extend_from_slice(b);
            while bytes.len() - from < total {
                let have = bytes.len() - from;
                bytes.extend_from_within(from..from + have.min(total - have));
            }
            if !self.valid.is_empty() {
                self.valid.extend(std::iter::repeat_n(true, n));
            }
            return;
        }
        self.push(k.value());
        self.repeat_last(n - 1);
    }

    /// Room for `n` more values without regrowing (and `n * 8` bytes of strings).
    pub fn reserve(&mut self, n: usize) {
        match &mut self.data {
            Data::Decimal { mantissa, exponent } => {
                mantissa.reserve(n);
                exponent.reserve(n);
            }
            Data::Bytes { offsets, bytes } => {
                offsets.reserve(n);
                bytes.reserve(n * 8);
            }
            Data::List { offsets } => offsets.reserve(n),
            data => each_int!(data, d => d.reserve(n)),
        }
        if !self.valid.is_empty() {
            self.valid.reserve(n);
        }
    }

    /// Appends a null (an absent optional field): counted, written only if a value follows.
    /// Inlined into the decoder's arms, like `push`: most optional fields of wide entries are
    /// absent.
    #[inline(always)]
    pub fn push_null(&mut self) {
        self.nulls += 1;
    }

    /// Writes the counted nulls, if any, before what must follow them (a value, a list's
    /// end, a constant's fill).
    #[inline(always)]
    fn flush_nulls(&mut self) {
        if self.nulls != 0 {
            self.write_nulls();
        }
    }

    /// Writes the counted nulls: a default value and `false` validity each. The validity
    /// starts at the column's first null, every value before it valid.
    #[inline(never)]
    fn write_nulls(&mut self) {
        let n = std::mem::take(&mut self.nulls);
        let held = self.held();
        if self.valid.is_empty() {
            let room = self.data_capacity().max(held + n);
            self.valid.reserve(room);
            self.valid.resize(held, true);
        }
        self.valid.resize(held + n, false);
        match &mut self.data {
            Data::Decimal { mantissa, exponent } => {
                mantissa.resize(held + n, 0);
                exponent.resize(held + n, 0);
            }
            Data::Bytes { offsets, .. } | Data::List { offsets } => {
                let last = *offsets.last().expect("offsets start with 0");
                offsets.resize(held + n + 1, last);
            }
            data => each_int!(data, d => d.resize(held + n, Default::default())),
        }
    }

    /// Values the column has room for.
    fn data_capacity(&self) -> usize {
        match &self.data {
            Data::Decimal { exponent, .. } => exponent.capacity(),
            Data::Bytes { offsets, .. } | Data::List { offsets } => offsets.capacity(),
            data => each_int!(data, d => d.capacity()),
        }
    }

    /// Closes a list value whose children now end at `end`.
    pub fn push_list(&mut self, end: usize) {
        self.flush_nulls();
        if let Data::List { offsets } = &mut self.data {
            offsets.push(end as i32);
            self.valid();
        }
    }

    /// Where the children of this list end (for a list column).
    pub fn list_end(&self) -> usize {
        match &self.data {
            Data::List { offsets } => *offsets.last().expect("offsets start with 0") as usize,
            _ => 0,
        }
    }

    /// Cuts the column back to `len` values; returns, for a list, where its children end.
    pub fn truncate(&mut self, len: usize) -> usize {
        let held = self.held();
        if len >= held {
            // Within the counted nulls: fewer of them; a list's children end where they did.
            self.nulls = self.nulls.min(len - held);
            return self.list_end();
        }
        self.nulls = 0;
        self.valid.truncate(len);
        match &mut self.data {
            Data::Decimal { mantissa, exponent } => {
                mantissa.truncate(len);
                exponent.truncate(len);
                0
            }
            Data::Bytes { offsets, bytes } => {
                offsets.truncate(len + 1);
                bytes.truncate(*offsets.last().expect("offsets start with 0") as usize);
                0
            }
            Data::List { offsets } => {
                offsets.truncate(len + 1);
                *offsets.last().expect("offsets start with 0") as usize
            }
            data => {
                each_int!(data, d => d.truncate(len));
                0
            }
        }
    }

    /// Appends the last value `n` more times (a message's field on each of its entries).
    pub fn repeat_last(&mut self, n: usize) {
        // Most messages of a feed carry one entry: nothing to repeat.
        if n == 0 {
            return;
        }
        if self.nulls != 0 {
            self.nulls += n;
            return;
        }
        let Some(last) = self.len().checked_sub(1) else {
            return;
        };
        if let Some(&valid) = self.valid.get(last) {
            self.valid.extend(std::iter::repeat_n(valid, n));
        }
        match &mut self.data {
            Data::Decimal { mantissa, exponent } => {
                mantissa.extend(std::iter::repeat_n(mantissa[last], n));
                exponent.extend(std::iter::repeat_n(exponent[last], n));
            }
            Data::Bytes { offsets, bytes } => {
                let (from, to) = (offsets[last] as usize, offsets[last + 1] as usize);
                for _ in 0..n {
                    bytes.extend_from_within(from..to);
                    offsets.push(bytes.len() as i32);
                }
            }
            // Lists are not repeated: a message's other sequences are left out of entry rows.
            Data::List { .. } => {}
            data => each_int!(data, d => d.extend(std::iter::repeat_n(d[last], n))),
        }
    }
}

/// Appends a string's bytes. Most strings in market data are a few bytes, for which a call
/// to `memcpy` costs more than the copy.
#[inline(always)]
fn append_bytes(bytes: &mut Vec<u8>, b: &[u8]) {
    if let [x] = b {
        bytes.push(*x);
    } else if b.len() <= 16 {
        for &x in b {
            bytes.push(x);
        }
    } else {
        bytes.extend_from_slice(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The column's values as written, the counted nulls written first.
    fn ints(col: &mut Column) -> Vec<Option<u32>> {
        col.flush_nulls();
        let Data::U32(d) = &col.data else {
            panic!("a u32 column")
        };
        assert!(col.valid.is_empty() || col.valid.len() == d.len());
        d.iter()
            .enumerate()
            .map(|(i, &v)| col.valid.get(i).copied().unwrap_or(true).then_some(v))
            .collect()
    }

    fn u32_column() -> Column {
        Column::new(ColumnType::Int(IntType::U32))
    }

    /// Counted nulls come out where they were pushed: before a value, cut back by a
    /// rollback, repeated for a message's entries, and after values.
    #[test]
    fn counted_nulls_are_where_they_were_pushed() {
        let mut c = u32_column();
        c.push_null();
        c.push_null();
        c.push(FieldValue::UInt(5));
        assert_eq!(c.len(), 3);
        assert_eq!(ints(&mut c), [None, None, Some(5)]);

        let mut c = u32_column();
        c.push(FieldValue::UInt(1));
        (0..3).for_each(|_| c.push_null());
        assert_eq!(c.truncate(2), 0);
        c.push(FieldValue::UInt(7));
        assert_eq!(ints(&mut c), [Some(1), None, Some(7)]);

        let mut c = u32_column();
        c.push(FieldValue::UInt(1));
        c.push(FieldValue::UInt(2));
        c.push_null();
        c.truncate(1);
        assert_eq!(c.len(), 1);
        c.push_null();
        assert_eq!(ints(&mut c), [Some(1), None]);

        let mut c = u32_column();
        c.push(FieldValue::UInt(1));
        c.push_null();
        c.repeat_last(2);
        assert_eq!(c.len(), 4);
        c.push(FieldValue::UInt(3));
        c.repeat_last(1);
        assert_eq!(ints(&mut c), [Some(1), None, None, None, Some(3), Some(3)]);
    }

    /// A string column's offsets stay whole across counted nulls.
    #[test]
    fn counted_nulls_in_a_string_column() {
        let mut c = Column::new(ColumnType::Utf8);
        c.push(FieldValue::Ascii(b"ab"));
        c.push_null();
        c.push_null();
        c.push(FieldValue::Ascii(b"c"));
        c.push_null();
        c.write_nulls();
        let Data::Bytes { offsets, bytes } = &c.data else {
            panic!("a bytes column")
        };
        assert_eq!(offsets, &[0, 2, 2, 2, 3, 3]);
        assert_eq!(bytes, b"abc");
        assert_eq!(c.valid, [true, false, false, true, false]);
    }
}
