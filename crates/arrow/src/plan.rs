//! From a template to columns: which column each instruction fills, and the Arrow type of
//! each column. The decoder calls the handler once per instruction in template order, so the
//! plan is a tree of segments walked by position, mirroring the template's segments.

use std::collections::{HashMap, HashSet};

use fastfeed_codec::template::{
    FieldType, Initial, Instr, IntType, Kind, Op, Scalar, Segment, Template,
};
use fastfeed_codec::{Decimal, FieldValue};

use crate::TableError;

/// Largest decimal128 precision: a FAST mantissa has at most 19 digits, so any scale up to
/// 19 holds every mantissa with exponent 0.
pub(crate) const DECIMAL_PRECISION: u8 = 38;

/// What one column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColumnType {
    Int(IntType),
    /// The scale when the template or the caller fixes it; learned from the data otherwise.
    Decimal(Option<i8>),
    Utf8,
    Binary,
    /// A sequence as a list of structs; the children are the columns of its plan segment.
    List,
}

#[derive(Debug, Clone)]
pub(crate) struct ColumnSpec {
    pub name: String,
    pub ty: ColumnType,
    pub nullable: bool,
    /// For a list: the columns of one element.
    pub children: Vec<usize>,
    /// A mandatory constant's value: the same on every row, so the column is filled when
    /// its batch is finished instead of value by value while decoding.
    pub constant: Option<Constant>,
}

/// The value of a mandatory constant field, as the decoder gives it.
#[derive(Debug, Clone)]
pub(crate) enum Constant {
    UInt(u64),
    Int(i64),
    Decimal(Decimal),
    Bytes(Box<[u8]>),
}

impl Constant {
    /// The constant of a mandatory field with a constant operator, if the column can hold it
    /// (a unicode constant must be UTF-8 to fill a string column).
    fn of(s: &Scalar) -> Option<Constant> {
        if s.op != Op::Constant || s.optional {
            return None;
        }
        match (s.ty, s.initial.as_ref()?) {
            (FieldType::Int(t), &Initial::Int(bits)) if t.signed() => {
                Some(Constant::Int(bits as i64))
            }
            (FieldType::Int(_), &Initial::Int(bits)) => Some(Constant::UInt(bits)),
            (FieldType::Decimal, &Initial::Decimal { exponent, mantissa }) => {
                Some(Constant::Decimal(Decimal::new(exponent, mantissa)))
            }
            (FieldType::Unicode, Initial::Bytes(b)) if std::str::from_utf8(b).is_err() => None,
            (FieldType::Ascii | FieldType::Unicode | FieldType::Bytes, Initial::Bytes(b)) => {
                Some(Constant::Bytes(b.clone()))
            }
            _ => None,
        }
    }

    /// As the decoder would hand it to the handler.
    pub fn value(&self) -> FieldValue<'_> {
        match self {
            Constant::UInt(v) => FieldValue::UInt(*v),
            Constant::Int(v) => FieldValue::Int(*v),
            Constant::Decimal(d) => FieldValue::Decimal(*d),
            Constant::Bytes(b) => FieldValue::Bytes(b),
        }
    }
}

/// What the handler does with one instruction's callback.
#[derive(Debug, Clone)]
pub(crate) enum Slot {
    /// A scalar: a value or a null into this column.
    Column(usize),
    /// A mandatory constant (see [`ColumnSpec::constant`]): nothing to do while decoding.
    Constant,
    /// A group, flattened: its fields are columns of the enclosing level, named
    /// `Group.Field`. `nulls` are the columns an absent group fills with nulls.
    Group { body: usize, nulls: Vec<usize> },
    /// A sequence held as a list column.
    List { column: usize, body: usize },
    /// The sequence whose elements are the rows.
    Entries { body: usize },
    /// Ignored: another sequence of the message when rows are entries.
    Skip,
}

/// No column: past the end of any plan's columns, so looking it up finds nothing.
pub(crate) const NO_COLUMN: u32 = u32::MAX;

/// The plan of one template: segments of slots, and the columns in the arena.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The slots of every segment, one after another, so the handler walks one vector.
    pub slots: Vec<Slot>,
    /// For each slot, the column a value goes to ([`NO_COLUMN`] for slots of other kinds):
    /// the handler's hot path reads a `u32` instead of matching a `Slot`.
    pub value_column: Vec<u32>,
    /// For each slot, the column an absent field nulls (a scalar's or a list's), else
    /// [`NO_COLUMN`].
    pub null_column: Vec<u32>,
    /// Each segment's slots: `slots[start..end]`.
    pub segments: Vec<(usize, usize)>,
    pub columns: Vec<ColumnSpec>,
    /// The row-level columns, in schema order.
    pub top: Vec<usize>,
    /// Row mode by entries: the columns filled once per message (repeated on each entry).
    pub parent: Vec<usize>,
    /// The parent columns that hold values while decoding (constants are filled at the end).
    pub repeated: Vec<usize>,
    pub entries: bool,
    /// The entries sequence's name, for entry columns named like message columns.
    pub entries_prefix: String,
}

/// How the rows of a table are cut from messages.
#[derive(Debug, Clone, Default)]
pub struct TableOptions {
    /// One row per element of this sequence (by name, or `Group.Name` inside a group) with
    /// the message's other fields repeated on each; `None`: one row per message, sequences
    /// as list columns.
    pub entries: Option<String>,
    /// The scale of every decimal column; by default the template's constant exponent where
    /// it has one, otherwise learned from the data (see [`crate::TableBuilder`]).
    pub decimal_scale: Option<i8>,
    /// The scale of decimal columns by name, over `decimal_scale`.
    pub column_scales: HashMap<String, i8>,
}

struct Planner<'a> {
    plan: Plan,
    /// The slots of each segment, flattened into `plan.slots` at the end.
    segments: Vec<Vec<Slot>>,
    opts: &'a TableOptions,
    found_entries: bool,
    template: &'a str,
}

impl Plan {
    pub(crate) fn new(t: &Template, opts: &TableOptions) -> Result<Plan, TableError> {
        let mut p = Planner {
            plan: Plan {
                slots: Vec::new(),
                value_column: Vec::new(),
                null_column: Vec::new(),
                segments: Vec::new(),
                columns: Vec::new(),
                top: Vec::new(),
                parent: Vec::new(),
                repeated: Vec::new(),
                entries: false,
                entries_prefix: String::new(),
            },
            segments: Vec::new(),
            opts,
            found_entries: false,
            template: &t.name,
        };
        let scales = opts.decimal_scale.iter().chain(opts.column_scales.values());
        if let Some(bad) = scales
            .copied()
            .find(|s| !(0..=DECIMAL_PRECISION as i8).contains(s))
        {
            return Err(TableError::Schema(format!(
                "decimal scale {bad} is outside 0..=38"
            )));
        }
        let mut top = Vec::new();
        let mut nulls = Vec::new();
        p.segment(&t.body, "", false, Level::Message, &mut top, &mut nulls)?;
        if let Some(name) = &opts.entries {
            if !p.found_entries {
                return Err(TableError::NoSequence {
                    template: t.name.clone(),
                    name: name.clone(),
                });
            }
        }
        let mut plan = p.plan;
        for seg in p.segments {
            let start = plan.slots.len();
            plan.slots.extend(seg);
            plan.segments.push((start, plan.slots.len()));
        }
        let index = |c: usize| u32::try_from(c).unwrap_or(NO_COLUMN);
        for slot in &plan.slots {
            let (value, null) = match *slot {
                Slot::Column(c) => (index(c), index(c)),
                Slot::List { column, .. } => (NO_COLUMN, index(column)),
                _ => (NO_COLUMN, NO_COLUMN),
            };
            plan.value_column.push(value);
            plan.null_column.push(null);
        }
        plan.entries = opts.entries.is_some();
        plan.repeated = plan
            .parent
            .iter()
            .copied()
            .filter(|&c| plan.columns[c].constant.is_none())
            .collect();
        if plan.entries {
            // Message fields first, then the entry's own, in template order within each.
            let entry: Vec<usize> = top
                .iter()
                .copied()
                .filter(|c| !plan.parent.contains(c))
                .collect();
            plan.top = plan.parent.iter().copied().chain(entry).collect();
            plan.dedupe_entry_names();
        } else {
            plan.top = top;
        }
        Ok(plan)
    }

    /// An entry field named like a message field is called `Sequence.Field`.
    fn dedupe_entry_names(&mut self) {
        let parent: HashSet<String> = self
            .parent
            .iter()
            .map(|&c| self.columns[c].name.clone())
            .collect();
        let prefix = self.entries_prefix.clone();
        for &c in &self.top {
            if !self.parent.contains(&c) && parent.contains(&self.columns[c].name) {
                self.columns[c].name = format!("{prefix}.{}", self.columns[c].name);
            }
        }
    }
}

/// Where a segment sits: at message level (columns per message), inside the entries
/// sequence (columns per row), or inside a list (columns per element).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Message,
    Entry,
    List,
}

impl Planner<'_> {
    /// Plans `seg`, pushing its columns (and those of its flattened groups) onto `cols` and
    /// the columns an absent enclosing group must null onto `nulls`. Returns the segment index.
    fn segment(
        &mut self,
        seg: &Segment,
        prefix: &str,
        nullable: bool,
        level: Level,
        cols: &mut Vec<usize>,
        nulls: &mut Vec<usize>,
    ) -> Result<usize, TableError> {
        let index = self.segments.len();
        self.segments.push(Vec::new());
        let mut slots = Vec::with_capacity(seg.instrs.len());
        for instr in &seg.instrs {
            let name = format!("{prefix}{}", instr.name);
            let slot = self.instr(instr, name, nullable, level, cols, nulls)?;
            slots.push(slot);
        }
        self.segments[index] = slots;
        Ok(index)
    }

    fn column(&mut self, name: String, ty: ColumnType, nullable: bool, level: Level) -> usize {
        let c = self.plan.columns.len();
        self.plan.columns.push(ColumnSpec {
            name,
            ty,
            nullable,
            children: Vec::new(),
            constant: None,
        });
        if level == Level::Message && self.opts.entries.is_some() {
            self.plan.parent.push(c);
        }
        c
    }

    fn instr(
        &mut self,
        instr: &Instr,
        name: String,
        nullable: bool,
        level: Level,
        cols: &mut Vec<usize>,
        nulls: &mut Vec<usize>,
    ) -> Result<Slot, TableError> {
        let nullable = nullable || instr.optional;
        Ok(match &instr.kind {
            Kind::Scalar(s) => {
                let c = self.column(name.clone(), self.scalar_type(s, &name), nullable, level);
                cols.push(c);
                nulls.push(c);
                // Inside an optional group a constant is null where the group is absent.
                match Constant::of(s).filter(|_| !nullable) {
                    Some(k) => {
                        self.plan.columns[c].constant = Some(k);
                        Slot::Constant
                    }
                    None => Slot::Column(c),
                }
            }
            Kind::SplitDecimal { exponent, .. } => {
                let fixed = match (exponent.op, &exponent.initial) {
                    (Op::Constant, Some(fastfeed_codec::template::Initial::Int(e))) => {
                        Some(scale_of(*e as i64))
                    }
                    _ => None,
                };
                let ty = ColumnType::Decimal(self.scale(&name).or(fixed));
                let c = self.column(name, ty, nullable, level);
                cols.push(c);
                nulls.push(c);
                Slot::Column(c)
            }
            Kind::Group(body) => {
                let mut inner_nulls = Vec::new();
                let body = self.segment(
                    body,
                    &format!("{name}."),
                    nullable,
                    level,
                    cols,
                    &mut inner_nulls,
                )?;
                nulls.extend(&inner_nulls);
                Slot::Group {
                    body,
                    nulls: inner_nulls,
                }
            }
            Kind::Sequence { body, .. } => {
                if level == Level::Message && self.opts.entries.as_deref() == Some(&name) {
                    self.found_entries = true;
                    self.plan.entries_prefix = name;
                    let mut ignored = Vec::new();
                    let body = self.segment(body, "", false, Level::Entry, cols, &mut ignored)?;
                    return Ok(Slot::Entries { body });
                }
                if level == Level::Message && self.opts.entries.is_some() {
                    return Ok(Slot::Skip);
                }
                let c = self.column(name, ColumnType::List, nullable, level);
                let mut children = Vec::new();
                let mut ignored = Vec::new();
                let body =
                    self.segment(body, "", false, Level::List, &mut children, &mut ignored)?;
                self.plan.columns[c].children = children;
                cols.push(c);
                nulls.push(c);
                Slot::List { column: c, body }
            }
            Kind::DynamicRef => {
                return Err(TableError::Schema(format!(
                    "template {}: field {name} is a dynamic template reference, which a table \
                     cannot hold",
                    self.template
                )))
            }
        })
    }

    /// The scale the caller asks for this column, if any.
    fn scale(&self, name: &str) -> Option<i8> {
        self.opts
            .column_scales
            .get(name)
            .copied()
            .or(self.opts.decimal_scale)
    }

    fn scalar_type(&self, s: &Scalar, name: &str) -> ColumnType {
        match s.ty {
            FieldType::Int(t) => ColumnType::Int(t),
            FieldType::Decimal => {
                // A whole-decimal constant fixes the exponent too.
                let fixed = match (s.op, &s.initial) {
                    (
                        Op::Constant,
                        Some(fastfeed_codec::template::Initial::Decimal { exponent, .. }),
                    ) => Some(scale_of(*exponent as i64)),
                    _ => None,
                };
                ColumnType::Decimal(self.scale(name).or(fixed))
            }
            FieldType::Ascii | FieldType::Unicode => ColumnType::Utf8,
            FieldType::Bytes => ColumnType::Binary,
        }
    }
}

/// The decimal128 scale that holds a value of this exponent: its count of fraction digits.
pub(crate) fn scale_of(exponent: i64) -> i8 {
    (-exponent).clamp(0, DECIMAL_PRECISION as i64) as i8
}
