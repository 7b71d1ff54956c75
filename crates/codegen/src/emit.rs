//! Writing Rust source: indented lines, literals, and the Rust type of each field.

use fastfeed_codec::template::{FieldType, Initial, Instr, IntType, Kind, Scalar};

use crate::plan::{borrowed, Field, Plan};

/// Source text with indentation.
#[derive(Default)]
pub(crate) struct Out {
    pub text: String,
    indent: usize,
}

impl Out {
    pub fn line(&mut self, s: impl AsRef<str>) {
        let s = s.as_ref();
        if s.is_empty() {
            self.text.push('\n');
            return;
        }
        for l in s.lines() {
            for _ in 0..self.indent {
                self.text.push_str("    ");
            }
            self.text.push_str(l);
            self.text.push('\n');
        }
    }

    /// A line that opens a block.
    pub fn open(&mut self, s: impl AsRef<str>) {
        self.line(s);
        self.indent += 1;
    }

    /// A line that closes one block and opens the next (`} else {`).
    pub fn mid(&mut self, s: impl AsRef<str>) {
        self.indent -= 1;
        self.line(s);
        self.indent += 1;
    }

    /// A line that closes a block.
    pub fn close(&mut self, s: impl AsRef<str>) {
        self.indent -= 1;
        self.line(s);
    }
}

pub(crate) fn int_ty(it: IntType) -> &'static str {
    match it {
        IntType::U8 => "u8",
        IntType::U16 => "u16",
        IntType::U32 => "u32",
        IntType::U64 => "u64",
        IntType::I8 => "i8",
        IntType::I16 => "i16",
        IntType::I32 => "i32",
        IntType::I64 => "i64",
    }
}

/// An integer literal from integer bits.
pub(crate) fn int_lit(it: IntType, bits: u64) -> String {
    if !it.signed() {
        return bits.to_string();
    }
    match bits as i64 {
        i64::MIN => "i64::MIN".into(),
        v => v.to_string(),
    }
}

/// The initial value of an integer scalar as `Option<T>` source.
pub(crate) fn int_init(s: &Scalar, it: IntType) -> String {
    match &s.initial {
        Some(Initial::Int(v)) => format!("Some({})", int_lit(it, *v)),
        _ => "None".into(),
    }
}

pub(crate) fn decimal_lit(exponent: i32, mantissa: i64) -> String {
    let m = match mantissa {
        i64::MIN => "i64::MIN".into(),
        m => m.to_string(),
    };
    format!("fp::Decimal {{ exponent: {exponent}, mantissa: {m} }}")
}

pub(crate) fn decimal_init(s: &Scalar) -> String {
    match &s.initial {
        Some(Initial::Decimal { exponent, mantissa }) => {
            format!("Some({})", decimal_lit(*exponent, *mantissa))
        }
        _ => "None".into(),
    }
}

/// Bytes as a byte string literal (`&[u8]`).
pub(crate) fn bytes_lit(b: &[u8]) -> String {
    let mut s = String::from("b\"");
    for &c in b {
        match c {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s.push_str("\".as_slice()");
    s
}

/// The initial value of a string scalar as plain bytes, `Option<&[u8]>` source.
pub(crate) fn bytes_init(s: &Scalar) -> String {
    match &s.initial {
        Some(Initial::Bytes(b)) => format!("Some({})", bytes_lit(b)),
        _ => "None".into(),
    }
}

pub(crate) fn init_bytes(s: &Scalar) -> Option<&[u8]> {
    match &s.initial {
        Some(Initial::Bytes(b)) => Some(b),
        _ => None,
    }
}

/// A string constant as a value of the field's borrowed type.
pub(crate) fn string_lit(ty: FieldType, b: &[u8]) -> String {
    match ty {
        FieldType::Ascii => format!("fp::Ascii::lit({:?})", String::from_utf8_lossy(b)),
        FieldType::Unicode => format!("{:?}", String::from_utf8_lossy(b)),
        _ => bytes_lit(b),
    }
}

/// Quoted, for names in generated code.
pub(crate) fn quote(s: &str) -> String {
    format!("{s:?}")
}

/// The Rust type of a scalar's value (without `Option`).
pub(crate) fn scalar_ty(s: &Scalar) -> String {
    match s.ty {
        FieldType::Int(it) => int_ty(it).into(),
        FieldType::Decimal => "fp::Decimal".into(),
        FieldType::Ascii if borrowed(s) => "fp::Ascii<'a>".into(),
        FieldType::Ascii => "fp::AsciiBuf".into(),
        FieldType::Unicode if borrowed(s) => "&'a str".into(),
        FieldType::Unicode => "String".into(),
        FieldType::Bytes if borrowed(s) => "&'a [u8]".into(),
        FieldType::Bytes => "Vec<u8>".into(),
    }
}

/// Whether the field's Rust type is `Copy` (so `Option`s of it map by value).
pub(crate) fn is_copy(instr: &Instr) -> bool {
    match &instr.kind {
        Kind::Scalar(s) => match s.ty {
            FieldType::Int(_) | FieldType::Decimal => true,
            _ => borrowed(s),
        },
        Kind::SplitDecimal { .. } => true,
        _ => false,
    }
}

/// The Rust type of a field.
pub(crate) fn field_ty(plan: &Plan, f: &Field) -> String {
    let inner = match &f.instr.kind {
        Kind::Scalar(s) => scalar_ty(s),
        Kind::SplitDecimal { .. } => "fp::Decimal".into(),
        Kind::Sequence { .. } => {
            let c = f.child.expect("a sequence has an element struct");
            format!("fp::Seq<{}{}>", plan.segs[c].type_name, plan.lt(c))
        }
        Kind::Group(_) => {
            let c = f.child.expect("a group has a struct");
            format!("{}{}", plan.segs[c].type_name, plan.lt(c))
        }
        // Always a message once decoded; None only in a default-made struct.
        Kind::DynamicRef => return format!("Option<Box<Message{}>>", plan.message_lt()),
    };
    if f.instr.optional {
        format!("Option<{inner}>")
    } else {
        inner
    }
}

/// A one-line description of a field, for its doc comment.
pub(crate) fn describe(instr: &Instr) -> String {
    let id = instr
        .id
        .as_deref()
        .map(|i| format!(" (id {i})"))
        .unwrap_or_default();
    let presence = if instr.optional { "optional " } else { "" };
    let what = match &instr.kind {
        Kind::Scalar(s) => format!("{}{}", ty_name(s.ty), op_desc(s)),
        Kind::SplitDecimal { exponent, mantissa } => format!(
            "decimal, exponent{}, mantissa{}",
            op_desc(exponent),
            op_desc(mantissa)
        ),
        Kind::Sequence { length_name, .. } => format!("sequence, length {length_name:?}"),
        Kind::Group(_) => "group".into(),
        Kind::DynamicRef => "dynamic template reference".into(),
    };
    format!("`{}`{id}: {presence}{what}.", instr.name)
}

fn ty_name(ty: FieldType) -> &'static str {
    match ty {
        FieldType::Int(it) => it.name(),
        FieldType::Decimal => "decimal",
        FieldType::Ascii => "ASCII string",
        FieldType::Unicode => "unicode string",
        FieldType::Bytes => "byte vector",
    }
}

fn op_desc(s: &Scalar) -> String {
    use fastfeed_codec::template::Op;
    let op = match s.op {
        Op::None => return String::new(),
        Op::Constant => "constant",
        Op::Default => "default",
        Op::Copy => "copy",
        Op::Increment => "increment",
        Op::Delta => "delta",
        Op::Tail => "tail",
    };
    let init = match &s.initial {
        None => String::new(),
        Some(Initial::Int(v)) => match s.ty {
            FieldType::Int(it) => format!(" {}", int_lit(it, *v)),
            _ => format!(" {v}"),
        },
        Some(Initial::Decimal { exponent, mantissa }) => {
            format!(" {}", fastfeed_codec::Decimal::new(*exponent, *mantissa))
        }
        Some(Initial::Bytes(b)) => format!(" {:?}", String::from_utf8_lossy(b)),
    };
    format!(", {op}{init}")
}
