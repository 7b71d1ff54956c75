//! What to generate: one struct per template, sequence element and group, each field's Rust
//! name, and the dictionary entries. Built once from the compiled templates; the emitters
//! only walk it.

use fastfeed_codec::template::{FieldType, Instr, Kind, Op, Scalar, Segment, Template};
use fastfeed_codec::Templates;

use crate::names::{camel, snake, Scope};
use crate::Error;

/// Names the generated code itself defines at the top level.
const RESERVED: &[&str] = &[
    "Message",
    "MessageKind",
    "Messages",
    "Decoder",
    "Encoder",
    "Dict",
    "TEMPLATES_XML",
    "fp",
];

pub(crate) struct Plan<'t> {
    pub segs: Vec<Seg<'t>>,
    pub templates: Vec<Tpl<'t>>,
    pub slots: Vec<Option<SlotPlan>>,
    /// Whether `Message` (and so every struct holding a dynamic reference) borrows.
    pub message_borrows: bool,
}

pub(crate) struct Tpl<'t> {
    pub t: &'t Template,
    pub seg: usize,
    /// The variant of `Message` and `MessageKind`.
    pub variant: String,
    /// The member of `Messages`.
    pub member: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Message,
    Element,
    Group,
}

pub(crate) struct Seg<'t> {
    pub type_name: String,
    /// The decoding and encoding functions' name stem.
    pub fn_name: String,
    pub seg: &'t Segment,
    pub fields: Vec<Field<'t>>,
    pub role: Role,
    /// Whether the struct has a lifetime: it borrows strings from the input.
    pub borrows: bool,
    /// Whether a dynamic template reference is inside (its functions take the depth).
    pub dynamic: bool,
}

pub(crate) struct Field<'t> {
    pub ident: String,
    pub instr: &'t Instr,
    /// The struct of a sequence's elements or a group.
    pub child: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlotKind {
    Int,
    Decimal,
    Bytes,
}

pub(crate) struct SlotPlan {
    pub ident: String,
    pub kind: SlotKind,
}

/// Whether a string field's value is borrowed from the input or the template (none, constant
/// and default never take it from the dictionary).
pub(crate) fn borrowed(s: &Scalar) -> bool {
    matches!(s.op, Op::None | Op::Constant | Op::Default)
}

/// Whether an operator keeps a dictionary entry.
pub(crate) fn has_slot(s: &Scalar) -> bool {
    matches!(s.op, Op::Copy | Op::Increment | Op::Delta | Op::Tail)
}

impl<'t> Plan<'t> {
    pub fn new(ts: &'t Templates) -> Result<Plan<'t>, Error> {
        let mut plan = Plan {
            segs: Vec::new(),
            templates: Vec::new(),
            slots: (0..ts.dictionary_slots()).map(|_| None).collect(),
            message_borrows: false,
        };
        let mut types = Scope::with(RESERVED);
        let mut members = Scope::default();
        let mut slot_names = Scope::with(&["gen"]);
        for t in ts.iter() {
            let type_name = types.unique(camel(&t.name));
            let seg = plan.add_seg(
                type_name.clone(),
                &t.body,
                Role::Message,
                &mut types,
                &mut slot_names,
            )?;
            plan.templates.push(Tpl {
                t,
                seg,
                variant: type_name,
                member: members.unique(snake(&t.name)),
            });
        }
        plan.settle_borrows();
        Ok(plan)
    }

    fn add_seg(
        &mut self,
        type_name: String,
        seg: &'t Segment,
        role: Role,
        types: &mut Scope,
        slot_names: &mut Scope,
    ) -> Result<usize, Error> {
        let idx = self.segs.len();
        self.segs.push(Seg {
            fn_name: snake(&type_name),
            type_name: type_name.clone(),
            seg,
            fields: Vec::new(),
            role,
            borrows: false,
            dynamic: false,
        });
        let mut idents = Scope::default();
        let mut fields = Vec::new();
        for instr in &seg.instrs {
            let child = match &instr.kind {
                Kind::Sequence { body, .. } => Some(self.add_seg(
                    types.unique(format!("{type_name}{}", camel(&instr.name))),
                    body,
                    Role::Element,
                    types,
                    slot_names,
                )?),
                Kind::Group(body) => Some(self.add_seg(
                    types.unique(format!("{type_name}{}", camel(&instr.name))),
                    body,
                    Role::Group,
                    types,
                    slot_names,
                )?),
                _ => None,
            };
            for s in scalars(instr) {
                if has_slot(s) {
                    self.add_slot(s, &instr.name, slot_names)?;
                }
            }
            fields.push(Field {
                ident: idents.unique(snake(&instr.name)),
                instr,
                child,
            });
        }
        self.segs[idx].fields = fields;
        Ok(idx)
    }

    fn add_slot(&mut self, s: &Scalar, name: &str, names: &mut Scope) -> Result<(), Error> {
        // An entry that fields of different types share (int32 and int64, ASCII and byte
        // vector, ...) must be checked for the type it holds on every read (spec §6.3.1, D4),
        // as the interpreter does; generated slots hold no type, so such sets are refused
        // rather than decoded differently.
        if s.typed_entry {
            return Err(Error::Unsupported(format!(
                "field {name:?} shares a dictionary entry with a field of another type \
                 (generated decoders do not check D4 type mismatches; use the interpreter)"
            )));
        }
        let kind = match s.ty {
            FieldType::Int(_) => SlotKind::Int,
            FieldType::Decimal => SlotKind::Decimal,
            _ => SlotKind::Bytes,
        };
        let Some(entry) = self.slots.get_mut(s.slot as usize) else {
            return Err(Error::Unsupported(format!(
                "field {name:?}: dictionary slot {} out of range",
                s.slot
            )));
        };
        match entry {
            Some(p) if p.kind != kind => Err(Error::Unsupported(format!(
                "field {name:?} shares a dictionary entry with a field of another type"
            ))),
            Some(_) => Ok(()),
            None => {
                *entry = Some(SlotPlan {
                    ident: names.unique(snake(name)),
                    kind,
                });
                Ok(())
            }
        }
    }

    /// Which structs borrow and which hold dynamic references, to a fixed point: a struct
    /// holding a dynamic reference borrows if any message does.
    fn settle_borrows(&mut self) {
        loop {
            let mut changed = false;
            for i in (0..self.segs.len()).rev() {
                let mut borrows = false;
                let mut dynamic = false;
                for f in &self.segs[i].fields {
                    match &f.instr.kind {
                        Kind::Scalar(s) => {
                            borrows |= s.ty != FieldType::Decimal
                                && !matches!(s.ty, FieldType::Int(_))
                                && borrowed(s)
                        }
                        Kind::DynamicRef => {
                            dynamic = true;
                            borrows |= self.message_borrows;
                        }
                        _ => {}
                    }
                    if let Some(c) = f.child {
                        borrows |= self.segs[c].borrows;
                        dynamic |= self.segs[c].dynamic;
                    }
                }
                let s = &mut self.segs[i];
                changed |= s.borrows != borrows || s.dynamic != dynamic;
                s.borrows = borrows;
                s.dynamic = dynamic;
            }
            let mb = self.templates.iter().any(|t| self.segs[t.seg].borrows);
            changed |= mb != self.message_borrows;
            self.message_borrows = mb;
            if !changed {
                break;
            }
        }
    }

    /// `<'a>` where the struct borrows.
    pub fn lt(&self, seg: usize) -> &'static str {
        if self.segs[seg].borrows {
            "<'a>"
        } else {
            ""
        }
    }

    pub fn message_lt(&self) -> &'static str {
        if self.message_borrows {
            "<'a>"
        } else {
            ""
        }
    }

    pub fn slot(&self, s: &Scalar) -> &SlotPlan {
        self.slots[s.slot as usize]
            .as_ref()
            .expect("every dictionary operator's slot is planned")
    }
}

/// The scalars of an instruction that may keep a dictionary entry.
pub(crate) fn scalars(instr: &Instr) -> Vec<&Scalar> {
    match &instr.kind {
        Kind::Scalar(s) => vec![s],
        Kind::SplitDecimal { exponent, mantissa } => vec![exponent, mantissa],
        Kind::Sequence { length, .. } => vec![length],
        Kind::Group(_) | Kind::DynamicRef => vec![],
    }
}
