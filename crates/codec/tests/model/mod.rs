//! A small model of FAST 1.1 written from the spec's text, for differential tests: template
//! sets as plain data (what the random generator makes and writes out as XML), and a
//! decoder (`decoder.rs`) that keeps the spec's named dictionaries literally, as maps from
//! (dictionary, key) to a typed entry, instead of fastfeed's compiled slots.
#![allow(dead_code)]

pub mod decoder;

use std::fmt::Write;

/// Field types (the FAST 1.1 ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ty {
    U32,
    I32,
    U64,
    I64,
    Decimal,
    Ascii,
    Unicode,
    Bytes,
}

impl Ty {
    pub const ALL: [Ty; 8] = [
        Ty::U32,
        Ty::I32,
        Ty::U64,
        Ty::I64,
        Ty::Decimal,
        Ty::Ascii,
        Ty::Unicode,
        Ty::Bytes,
    ];

    pub fn is_int(self) -> bool {
        matches!(self, Ty::U32 | Ty::I32 | Ty::U64 | Ty::I64)
    }

    pub fn signed(self) -> bool {
        matches!(self, Ty::I32 | Ty::I64)
    }

    /// The integer range (spec §6.2.1).
    pub fn range(self) -> (i128, i128) {
        match self {
            Ty::U32 => (0, u32::MAX as i128),
            Ty::I32 => (i32::MIN as i128, i32::MAX as i128),
            Ty::U64 => (0, u64::MAX as i128),
            Ty::I64 => (i64::MIN as i128, i64::MAX as i128),
            _ => (0, 0),
        }
    }

    fn element(self) -> &'static str {
        match self {
            Ty::U32 => "uInt32",
            Ty::I32 => "int32",
            Ty::U64 => "uInt64",
            Ty::I64 => "int64",
            Ty::Decimal => "decimal",
            Ty::Ascii | Ty::Unicode => "string",
            Ty::Bytes => "byteVector",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Constant,
    Default,
    Copy,
    Increment,
    Delta,
    Tail,
}

/// A `dictionary` attribute's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dict {
    Global,
    Template,
    Type,
    /// A user-defined dictionary, named "user".
    User,
}

impl Dict {
    fn attr(self) -> &'static str {
        match self {
            Dict::Global => "global",
            Dict::Template => "template",
            Dict::Type => "type",
            Dict::User => "user",
        }
    }
}

/// An initial value, as the template states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lit {
    Int(i128),
    /// (exponent, mantissa), written out as a plain decimal literal.
    Dec(i32, i64),
    Str(String),
    Bytes(Vec<u8>),
}

#[derive(Debug, Clone)]
pub struct Op {
    pub kind: OpKind,
    pub dictionary: Option<Dict>,
    pub key: Option<&'static str>,
    pub init: Option<Lit>,
}

#[derive(Debug, Clone)]
pub enum FieldOp {
    None,
    Whole(Op),
    /// A decimal's individual operators (spec §6.2.2).
    Split {
        exponent: Option<Op>,
        mantissa: Option<Op>,
    },
}

#[derive(Debug, Clone)]
pub struct Field {
    pub name: &'static str,
    pub ty: Ty,
    pub optional: bool,
    pub op: FieldOp,
}

#[derive(Debug, Clone)]
pub struct Length {
    pub name: Option<&'static str>,
    pub op: Option<Op>,
}

#[derive(Debug, Clone)]
pub enum Instr {
    Field(Field),
    Group {
        name: &'static str,
        optional: bool,
        dictionary: Option<Dict>,
        type_ref: Option<&'static str>,
        body: Vec<Instr>,
    },
    Sequence {
        name: &'static str,
        optional: bool,
        dictionary: Option<Dict>,
        type_ref: Option<&'static str>,
        length: Option<Length>,
        body: Vec<Instr>,
    },
    /// A static reference to the template at this index of the set.
    StaticRef(usize),
    DynamicRef,
}

#[derive(Debug, Clone)]
pub struct Template {
    pub name: &'static str,
    pub template_ns: &'static str,
    /// The `ns` attribute: the namespace of the keys of this template's operators.
    pub ns: Option<&'static str>,
    pub id: u32,
    pub dictionary: Option<Dict>,
    pub type_ref: Option<&'static str>,
    pub body: Vec<Instr>,
}

#[derive(Debug, Clone)]
pub struct Set {
    /// The `dictionary` attribute of `<templates>`.
    pub dictionary: Option<Dict>,
    pub templates: Vec<Template>,
}

impl Set {
    pub fn by_id(&self, id: u32) -> Option<&Template> {
        self.templates.iter().find(|t| t.id == id)
    }

    /// The template set as XML.
    pub fn to_xml(&self) -> String {
        let mut x = String::from(r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1""#);
        if let Some(d) = self.dictionary {
            write!(x, r#" dictionary="{}""#, d.attr()).unwrap();
        }
        x.push_str(">\n");
        for t in &self.templates {
            write!(x, r#"<template name="{}" id="{}""#, t.name, t.id).unwrap();
            if !t.template_ns.is_empty() {
                write!(x, r#" templateNs="{}""#, t.template_ns).unwrap();
            }
            if let Some(ns) = t.ns {
                write!(x, r#" ns="{ns}""#).unwrap();
            }
            if let Some(d) = t.dictionary {
                write!(x, r#" dictionary="{}""#, d.attr()).unwrap();
            }
            x.push('>');
            if let Some(ty) = t.type_ref {
                write!(x, r#"<typeRef name="{ty}"/>"#).unwrap();
            }
            self.instrs(&mut x, &t.body);
            x.push_str("</template>\n");
        }
        x.push_str("</templates>\n");
        x
    }

    fn instrs(&self, x: &mut String, body: &[Instr]) {
        for i in body {
            match i {
                Instr::Field(f) => field_xml(x, f),
                Instr::Group {
                    name,
                    optional,
                    dictionary,
                    type_ref,
                    body,
                } => {
                    write!(x, r#"<group name="{name}"{}"#, presence(*optional)).unwrap();
                    dict_attr(x, *dictionary);
                    x.push('>');
                    if let Some(ty) = type_ref {
                        write!(x, r#"<typeRef name="{ty}"/>"#).unwrap();
                    }
                    self.instrs(x, body);
                    x.push_str("</group>");
                }
                Instr::Sequence {
                    name,
                    optional,
                    dictionary,
                    type_ref,
                    length,
                    body,
                } => {
                    write!(x, r#"<sequence name="{name}"{}"#, presence(*optional)).unwrap();
                    dict_attr(x, *dictionary);
                    x.push('>');
                    if let Some(ty) = type_ref {
                        write!(x, r#"<typeRef name="{ty}"/>"#).unwrap();
                    }
                    if let Some(l) = length {
                        x.push_str("<length");
                        if let Some(n) = l.name {
                            write!(x, r#" name="{n}""#).unwrap();
                        }
                        x.push('>');
                        if let Some(op) = &l.op {
                            op_xml(x, op, Ty::U32);
                        }
                        x.push_str("</length>");
                    }
                    self.instrs(x, body);
                    x.push_str("</sequence>");
                }
                Instr::StaticRef(k) => {
                    let t = &self.templates[*k];
                    write!(
                        x,
                        r#"<templateRef name="{}" templateNs="{}"/>"#,
                        t.name, t.template_ns
                    )
                    .unwrap();
                }
                Instr::DynamicRef => x.push_str("<templateRef/>"),
            }
        }
    }
}

fn presence(optional: bool) -> &'static str {
    if optional {
        r#" presence="optional""#
    } else {
        ""
    }
}

fn dict_attr(x: &mut String, d: Option<Dict>) {
    if let Some(d) = d {
        write!(x, r#" dictionary="{}""#, d.attr()).unwrap();
    }
}

fn field_xml(x: &mut String, f: &Field) {
    write!(
        x,
        r#"<{} name="{}"{}"#,
        f.ty.element(),
        f.name,
        presence(f.optional)
    )
    .unwrap();
    match f.ty {
        Ty::Ascii => x.push_str(r#" charset="ascii""#),
        Ty::Unicode => x.push_str(r#" charset="unicode""#),
        _ => {}
    }
    x.push('>');
    match &f.op {
        FieldOp::None => {}
        FieldOp::Whole(op) => op_xml(x, op, f.ty),
        FieldOp::Split { exponent, mantissa } => {
            x.push_str("<exponent>");
            if let Some(op) = exponent {
                op_xml(x, op, Ty::I32);
            }
            x.push_str("</exponent><mantissa>");
            if let Some(op) = mantissa {
                op_xml(x, op, Ty::I64);
            }
            x.push_str("</mantissa>");
        }
    }
    write!(x, "</{}>", f.ty.element()).unwrap();
}

fn op_xml(x: &mut String, op: &Op, ty: Ty) {
    let tag = match op.kind {
        OpKind::Constant => "constant",
        OpKind::Default => "default",
        OpKind::Copy => "copy",
        OpKind::Increment => "increment",
        OpKind::Delta => "delta",
        OpKind::Tail => "tail",
    };
    write!(x, "<{tag}").unwrap();
    dict_attr(x, op.dictionary);
    if let Some(k) = op.key {
        write!(x, r#" key="{k}""#).unwrap();
    }
    if let Some(v) = &op.init {
        write!(x, r#" value="{}""#, literal(v, ty)).unwrap();
    }
    x.push_str("/>");
}

/// An initial value's text (spec §8.1): integers as digits, decimals as `[-]int[.frac]`,
/// byte vectors as hex.
fn literal(v: &Lit, _ty: Ty) -> String {
    match v {
        Lit::Int(n) => n.to_string(),
        Lit::Dec(e, m) => {
            let digits = m.unsigned_abs().to_string();
            let sign = if *m < 0 { "-" } else { "" };
            if *e >= 0 {
                format!("{sign}{digits}{}", "0".repeat(*e as usize))
            } else {
                let scale = (-*e) as usize;
                let digits = format!("{digits:0>width$}", width = scale + 1);
                let (int, frac) = digits.split_at(digits.len() - scale);
                format!("{sign}{int}.{frac}")
            }
        }
        Lit::Str(s) => s.clone(),
        Lit::Bytes(b) => b.iter().map(|b| format!("{b:02x}")).collect(),
    }
}
