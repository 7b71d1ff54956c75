//! Compiled templates: a flat program the decoder and encoder walk. Names are kept only for
//! output and error messages; dictionary entries are resolved to slot indices once, here.

use std::collections::HashMap;

use super::code::Compiled;
use crate::value::{Decimal, Value};

/// Integer field types. The 8- and 16-bit ones are not FAST 1.1 types; the seed paper's
/// templates use them (a QuickFAST extension), encoded like 32-bit integers and range-checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntType {
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
}

impl IntType {
    pub fn signed(self) -> bool {
        matches!(
            self,
            IntType::I8 | IntType::I16 | IntType::I32 | IntType::I64
        )
    }

    pub fn min(self) -> i128 {
        match self {
            IntType::U8 | IntType::U16 | IntType::U32 | IntType::U64 => 0,
            IntType::I8 => i8::MIN as i128,
            IntType::I16 => i16::MIN as i128,
            IntType::I32 => i32::MIN as i128,
            IntType::I64 => i64::MIN as i128,
        }
    }

    pub fn max(self) -> i128 {
        match self {
            IntType::U8 => u8::MAX as i128,
            IntType::U16 => u16::MAX as i128,
            IntType::U32 => u32::MAX as i128,
            IntType::U64 => u64::MAX as i128,
            IntType::I8 => i8::MAX as i128,
            IntType::I16 => i16::MAX as i128,
            IntType::I32 => i32::MAX as i128,
            IntType::I64 => i64::MAX as i128,
        }
    }

    /// The increment operator's step (spec §6.3.6): plus one, the maximum wrapping to the
    /// minimum. Values are integer bits, signed ones as `i64 as u64`.
    #[inline]
    pub fn increment(self, v: u64) -> u64 {
        super::code::increment_bits(v, self.min() as i64, self.max() as u64)
    }

    pub fn name(self) -> &'static str {
        match self {
            IntType::U8 => "uInt8",
            IntType::U16 => "uInt16",
            IntType::U32 => "uInt32",
            IntType::U64 => "uInt64",
            IntType::I8 => "int8",
            IntType::I16 => "int16",
            IntType::I32 => "int32",
            IntType::I64 => "int64",
        }
    }
}

/// The type of a scalar field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldType {
    Int(IntType),
    Decimal,
    Ascii,
    Unicode,
    Bytes,
}

impl FieldType {
    /// A number per type, for the dictionary's type check.
    pub(crate) fn code(self) -> u8 {
        match self {
            FieldType::Int(it) => it as u8,
            FieldType::Decimal => 8,
            FieldType::Ascii => 9,
            FieldType::Unicode => 10,
            FieldType::Bytes => 11,
        }
    }
}

/// Field operators (spec §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    None,
    Constant,
    Default,
    Copy,
    Increment,
    Delta,
    Tail,
}

/// An initial value from the template, already parsed into its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Initial {
    /// Integer bits: unsigned as is, signed as two's complement `i64 as u64`.
    Int(u64),
    Decimal {
        exponent: i32,
        mantissa: i64,
    },
    Bytes(Box<[u8]>),
}

/// One scalar field with its operator, presence, initial value and dictionary slot.
#[derive(Debug, Clone)]
pub struct Scalar {
    pub ty: FieldType,
    pub op: Op,
    pub optional: bool,
    pub initial: Option<Initial>,
    /// Index into the dictionary's slots; meaningful for copy, increment, delta and tail.
    pub slot: u32,
    /// The entry is shared with fields of another type, so its type is checked whenever it
    /// is read (spec §6.3.1, ERR D4). Such fields take the general path.
    pub typed_entry: bool,
}

impl Scalar {
    /// Whether this field takes a presence map bit (spec §6.5, the table of Appendix 3.3.1).
    pub fn uses_bit(&self) -> bool {
        match self.op {
            Op::None | Op::Delta => false,
            Op::Constant => self.optional,
            Op::Default | Op::Copy | Op::Increment | Op::Tail => true,
        }
    }
}

/// What an instruction is.
#[derive(Debug, Clone)]
pub enum Kind {
    Scalar(Scalar),
    /// A decimal with separate exponent and mantissa operators. The exponent carries the
    /// decimal's presence; the mantissa is always mandatory.
    SplitDecimal {
        exponent: Scalar,
        mantissa: Scalar,
    },
    Sequence {
        length_name: String,
        /// The length's id attribute: the FIX NoXXX counter tag in most templates.
        length_id: Option<String>,
        length: Scalar,
        body: Segment,
    },
    Group(Segment),
    /// A dynamic template reference: a nested message with its own presence map and id.
    DynamicRef,
}

/// One field instruction. Static template references are inlined at compile time, so they
/// never appear here.
#[derive(Debug, Clone)]
pub struct Instr {
    pub name: String,
    /// The field id attribute (a FIX tag number in most templates), if given.
    pub id: Option<String>,
    pub optional: bool,
    pub kind: Kind,
    /// The decoder's dispatch code and flat operands, derived from `kind`.
    pub(crate) compiled: Compiled,
}

impl Instr {
    pub(crate) fn new(name: String, id: Option<String>, optional: bool, kind: Kind) -> Instr {
        Instr {
            compiled: Compiled::of(&kind),
            name,
            id,
            optional,
            kind,
        }
    }

    /// Derives the dispatch code again after `kind` changed.
    pub(crate) fn recompile(&mut self) {
        self.compiled = Compiled::of(&self.kind);
    }

    /// A mandatory constant's value (spec 6.3.3: its initial value, never in the stream),
    /// for readers of messages written by hand, which may leave such fields out.
    pub fn constant_value(&self) -> Option<Value> {
        let Kind::Scalar(s) = &self.kind else {
            return None;
        };
        if s.op != Op::Constant || self.optional {
            return None;
        }
        let text = |b: &[u8]| String::from_utf8(b.to_vec()).ok();
        Some(match (s.ty, s.initial.as_ref()?) {
            (FieldType::Int(it), &Initial::Int(bits)) if it.signed() => Value::Int(bits as i64),
            (FieldType::Int(_), &Initial::Int(bits)) => Value::UInt(bits),
            (FieldType::Decimal, &Initial::Decimal { exponent, mantissa }) => {
                Value::Decimal(Decimal::new(exponent, mantissa))
            }
            (FieldType::Ascii, Initial::Bytes(b)) => Value::Ascii(text(b)?),
            (FieldType::Unicode, Initial::Bytes(b)) => Value::Unicode(text(b)?),
            (FieldType::Bytes, Initial::Bytes(b)) => Value::Bytes(b.to_vec()),
            _ => return None,
        })
    }

    /// Whether the instruction may take a bit in the presence map of its segment.
    pub fn uses_bit(&self) -> bool {
        match &self.kind {
            Kind::Scalar(s) => s.uses_bit(),
            Kind::SplitDecimal { exponent, mantissa } => exponent.uses_bit() || mantissa.uses_bit(),
            Kind::Sequence { length, .. } => length.uses_bit(),
            Kind::Group(_) => self.optional,
            Kind::DynamicRef => false,
        }
    }
}

/// A list of instructions that share one presence map (a message body, a group, or a
/// sequence element).
#[derive(Debug, Clone)]
pub struct Segment {
    pub instrs: Vec<Instr>,
    /// Whether the segment has a presence map of its own on the wire.
    pub has_pmap: bool,
    /// The most presence-map bits the segment can use; sizes the encoder's reservation.
    pub max_bits: u32,
    /// Decode with threaded dispatch (one indirect call per field, see `decode/threaded.rs`):
    /// worth it where the field kinds vary enough to defeat one shared jump's prediction.
    pub(crate) threaded: bool,
}

/// Changes of dispatch code along a segment from which threaded dispatch pays (measured on
/// the corpus: the mFAST and MOEX entries have 12 and more, the simple data's messages 2).
const THREADED_FROM: usize = 8;

impl Segment {
    pub(crate) fn new(instrs: Vec<Instr>) -> Segment {
        let max_bits = instrs.iter().map(|i| bits_of(i) as u32).sum();
        let changes = instrs
            .windows(2)
            .filter(|w| w[0].compiled.code != w[1].compiled.code)
            .count();
        Segment {
            has_pmap: max_bits > 0,
            max_bits,
            threaded: changes >= THREADED_FROM,
            instrs,
        }
    }
}

fn bits_of(i: &Instr) -> usize {
    match &i.kind {
        Kind::SplitDecimal { exponent, mantissa } => {
            exponent.uses_bit() as usize + mantissa.uses_bit() as usize
        }
        _ => i.uses_bit() as usize,
    }
}

/// A compiled template.
#[derive(Debug, Clone)]
pub struct Template {
    pub id: u32,
    pub name: String,
    /// The namespace of the template's name (`templateNs`, spec §7).
    pub template_ns: Option<String>,
    /// The namespace of field names (`ns`).
    pub ns: Option<String>,
    /// `reset="Y"`: every dictionary is reset before a message of this template.
    pub reset: bool,
    /// A FAST Session Control Protocol message the codec knows without the template file
    /// (see [`crate::template::SCP_XML`]).
    pub session: bool,
    pub body: Segment,
}

/// Why [`Templates::lookup`] found no template.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    #[error("no template with id {0}")]
    NoId(u32),
    #[error("no template named {0:?}")]
    NoName(String),
    #[error("templates {ids:?} are all named {name:?}: name one by its id")]
    Shared { name: String, ids: Vec<u32> },
}

/// A compiled set of templates, ready for a decoder or encoder.
#[derive(Debug, Clone)]
pub struct Templates {
    pub(crate) list: Vec<Template>,
    by_id: HashMap<u32, usize>,
    /// Direct index for small ids (most feeds use ids below a few thousand).
    dense: Vec<u32>,
    pub(crate) slot_count: usize,
}

const DENSE_LIMIT: u32 = 4096;
const NO_TEMPLATE: u32 = u32::MAX;

impl Templates {
    pub(crate) fn new(list: Vec<Template>, slot_count: usize) -> Templates {
        let mut by_id = HashMap::new();
        let mut dense = Vec::new();
        for (i, t) in list.iter().enumerate() {
            by_id.insert(t.id, i);
            if t.id < DENSE_LIMIT {
                if dense.len() <= t.id as usize {
                    dense.resize(t.id as usize + 1, NO_TEMPLATE);
                }
                dense[t.id as usize] = i as u32;
            }
        }
        Templates {
            list,
            by_id,
            dense,
            slot_count,
        }
    }

    /// The template with this id.
    #[inline(always)]
    pub fn get(&self, id: u32) -> Option<&Template> {
        self.index_of(id).map(|i| &self.list[i])
    }

    #[inline(always)]
    pub(crate) fn index_of(&self, id: u32) -> Option<usize> {
        if let Some(&i) = self.dense.get(id as usize) {
            return (i != NO_TEMPLATE).then_some(i as usize);
        }
        self.sparse_index_of(id)
    }

    /// Ids past the dense table: rare, kept out of the decoder's message loop.
    #[inline(never)]
    fn sparse_index_of(&self, id: u32) -> Option<usize> {
        self.by_id.get(&id).copied()
    }

    /// The template with this name; `None` also where several templates share it (see
    /// [`Templates::lookup`], which says so).
    pub fn by_name(&self, name: &str) -> Option<&Template> {
        let mut named = self.list.iter().filter(|t| t.name == name);
        let first = named.next()?;
        named.next().is_none().then_some(first)
    }

    /// The template `key` names: an id (decimal digits), else a name. The spec makes ids,
    /// not names, the key of a message (Shanghai's Level-2 file names two pairs of its
    /// templates alike), so a name that several templates share names none of them and the
    /// error lists their ids.
    pub fn lookup(&self, key: &str) -> Result<&Template, LookupError> {
        let key = key.trim();
        if let Ok(id) = key.parse::<u32>() {
            return self.get(id).ok_or(LookupError::NoId(id));
        }
        let named: Vec<&Template> = self.list.iter().filter(|t| t.name == key).collect();
        match named[..] {
            [] => Err(LookupError::NoName(key.to_owned())),
            [t] => Ok(t),
            _ => Err(LookupError::Shared {
                name: key.to_owned(),
                ids: named.iter().map(|t| t.id).collect(),
            }),
        }
    }

    /// A name for `t` that no other template of the set has: its name, or, where another
    /// template has that name too, `name-id` (a table's file name, a dictionary's key).
    pub fn unique_name<'t>(&self, t: &'t Template) -> std::borrow::Cow<'t, str> {
        if self
            .list
            .iter()
            .filter(|o| o.name == t.name)
            .nth(1)
            .is_some()
        {
            format!("{}-{}", t.name, t.id).into()
        } else {
            t.name.as_str().into()
        }
    }

    /// All templates in file order.
    pub fn iter(&self) -> impl Iterator<Item = &Template> {
        self.list.iter()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// How many dictionary entries the templates use, over all dictionaries.
    pub fn dictionary_slots(&self) -> usize {
        self.slot_count
    }
}
