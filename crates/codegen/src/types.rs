//! The plain structs: one per template, sequence element and group, with a `Default` that
//! holds the template's constants and default values, and a conversion to the interpreter's
//! owned `Message` (what the tests compare and what JSON output takes).

use fastfeed_codec::template::{FieldType, Initial, Kind, Op};

use crate::emit::{decimal_lit, describe, field_ty, int_lit, is_copy, quote, string_lit, Out};
use crate::plan::{Field, Plan, Role};

pub(crate) fn emit(plan: &Plan, o: &mut Out) {
    for (i, seg) in plan.segs.iter().enumerate() {
        let lt = plan.lt(i);
        let doc = match seg.role {
            Role::Message => {
                let t = plan
                    .templates
                    .iter()
                    .find(|t| t.seg == i)
                    .expect("a message struct has its template");
                format!("/// Template `{}` (id {}).", t.t.name, t.t.id)
            }
            Role::Element => "/// An element of a sequence.".into(),
            Role::Group => "/// A group.".into(),
        };
        o.line(clean(&doc));
        let defaults: Vec<Option<String>> = seg.fields.iter().map(default_of).collect();
        let derive_default = defaults.iter().all(Option::is_none);
        o.line(if derive_default {
            "#[derive(Debug, Clone, Default, PartialEq, Eq)]"
        } else {
            "#[derive(Debug, Clone, PartialEq, Eq)]"
        });
        o.open(format!("pub struct {}{lt} {{", seg.type_name));
        for f in &seg.fields {
            o.line(clean(&format!("/// {}", describe(f.instr))));
            o.line(format!("pub {}: {},", f.ident, field_ty(plan, f)));
        }
        o.close("}");
        o.line("");
        if !derive_default {
            o.open(format!("impl{lt} Default for {}{lt} {{", seg.type_name));
            o.open("fn default() -> Self {");
            o.open(format!("{} {{", seg.type_name));
            for (f, d) in seg.fields.iter().zip(&defaults) {
                let d = d.clone().unwrap_or_else(|| "Default::default()".into());
                o.line(format!("{}: {d},", f.ident));
            }
            o.close("}");
            o.close("}");
            o.close("}");
            o.line("");
        }
        let anon = if seg.borrows { "<'_>" } else { "" };
        o.open(format!("impl {}{anon} {{", seg.type_name));
        o.line("/// The field values in template order, as the interpreter gives them.");
        o.open("pub fn fields(&self) -> Vec<Option<fp::Value>> {");
        if seg.fields.is_empty() {
            o.line("Vec::new()");
        } else {
            o.open("vec![");
            for f in &seg.fields {
                o.line(format!("{},", value_of(f)));
            }
            o.close("]");
        }
        o.close("}");
        if seg.role == Role::Message {
            let t = plan
                .templates
                .iter()
                .find(|t| t.seg == i)
                .expect("template");
            o.line("");
            o.line("/// As the interpreter's owned message.");
            o.open("pub fn to_message(&self) -> fp::Message {");
            o.open("fp::Message {");
            o.line(format!("template_id: {},", t.t.id));
            o.line("fields: self.fields(),");
            o.close("}");
            o.close("}");
        }
        o.close("}");
        o.line("");
    }
    emit_message(plan, o);
}

/// Doc text on one line.
pub(crate) fn clean(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// A field's default when it is not its type's: constants, and default-operator values.
fn default_of(f: &Field) -> Option<String> {
    let Kind::Scalar(s) = &f.instr.kind else {
        return None;
    };
    if !matches!(s.op, Op::Constant | Op::Default) {
        return None;
    }
    let v = match (&s.initial, s.ty) {
        (Some(Initial::Int(v)), FieldType::Int(it)) => {
            if *v == 0 && !f.instr.optional {
                return None;
            }
            int_lit(it, *v)
        }
        (Some(Initial::Decimal { exponent, mantissa }), _) => decimal_lit(*exponent, *mantissa),
        (Some(Initial::Bytes(b)), ty) => {
            if b.is_empty() && !f.instr.optional {
                return None;
            }
            string_lit(ty, b)
        }
        _ => return None,
    };
    Some(if f.instr.optional {
        format!("Some({v})")
    } else {
        v
    })
}

/// The `Option<fp::Value>` source of a field.
fn value_of(f: &Field) -> String {
    let me = format!("self.{}", f.ident);
    let conv = |v: &str| -> String {
        match &f.instr.kind {
            Kind::Scalar(s) => match s.ty {
                FieldType::Int(it) if it.signed() => format!("fp::Value::Int(i64::from({v}))"),
                FieldType::Int(_) => format!("fp::Value::UInt(u64::from({v}))"),
                FieldType::Decimal => format!("fp::Value::Decimal({v})"),
                FieldType::Ascii => format!("fp::Value::Ascii({v}.to_string())"),
                FieldType::Unicode => format!("fp::Value::Unicode({v}.to_string())"),
                FieldType::Bytes => format!("fp::Value::Bytes({v}.to_vec())"),
            },
            Kind::SplitDecimal { .. } => format!("fp::Value::Decimal({v})"),
            Kind::Sequence { .. } => {
                format!("fp::Value::Sequence({v}.iter().map(|e| e.fields()).collect())")
            }
            Kind::Group(_) => format!("fp::Value::Group({v}.fields())"),
            Kind::DynamicRef => format!("fp::Value::Message(Box::new({v}.to_message()))"),
        }
    };
    // Constructors that take the value as it is map without a closure.
    let direct = match &f.instr.kind {
        Kind::Scalar(s) => match s.ty {
            FieldType::Int(fastfeed_codec::template::IntType::U64) => Some("fp::Value::UInt"),
            FieldType::Int(fastfeed_codec::template::IntType::I64) => Some("fp::Value::Int"),
            FieldType::Decimal => Some("fp::Value::Decimal"),
            _ => None,
        },
        Kind::SplitDecimal { .. } => Some("fp::Value::Decimal"),
        _ => None,
    };
    if matches!(f.instr.kind, Kind::DynamicRef) {
        return format!("{me}.as_ref().map(|m| {})", conv("m"));
    }
    if !f.instr.optional {
        return match direct {
            Some(d) => format!("Some({d}({me}))"),
            None => format!("Some({})", conv(&me)),
        };
    }
    match (direct, is_copy(f.instr)) {
        (Some(d), _) => format!("{me}.map({d})"),
        (None, true) => format!("{me}.map(|v| {})", conv("v")),
        (None, false) => format!("{me}.as_ref().map(|v| {})", conv("v")),
    }
}

/// `Message`, `MessageKind` and `Messages`: the templates as one type.
fn emit_message(plan: &Plan, o: &mut Out) {
    let lt = plan.message_lt();
    o.line("/// A message of any of the templates.");
    o.line("#[derive(Debug, Clone, PartialEq, Eq)]");
    o.line("#[allow(clippy::large_enum_variant)]");
    o.open(format!("pub enum Message{lt} {{"));
    for t in &plan.templates {
        o.line(format!(
            "{}({}{}),",
            t.variant,
            plan.segs[t.seg].type_name,
            plan.lt(t.seg)
        ));
    }
    o.close("}");
    o.line("");
    let anon = if plan.message_borrows { "<'_>" } else { "" };
    o.open(format!("impl Message{anon} {{"));
    o.open("pub fn kind(&self) -> MessageKind {");
    o.open("match self {");
    for t in &plan.templates {
        o.line(format!(
            "Message::{v}(_) => MessageKind::{v},",
            v = t.variant
        ));
    }
    o.close("}");
    o.close("}");
    o.line("");
    o.line("/// As the interpreter's owned message.");
    o.open("pub fn to_message(&self) -> fp::Message {");
    o.open("match self {");
    for t in &plan.templates {
        o.line(format!("Message::{}(m) => m.to_message(),", t.variant));
    }
    o.close("}");
    o.close("}");
    o.close("}");
    o.line("");
    o.line("/// Which template a message is.");
    o.line("#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]");
    o.open("pub enum MessageKind {");
    for t in &plan.templates {
        o.line(format!("{},", t.variant));
    }
    o.close("}");
    o.line("");
    o.open("impl MessageKind {");
    o.line("/// The template id.");
    o.open("pub const fn id(self) -> u32 {");
    o.open("match self {");
    for t in &plan.templates {
        o.line(format!("MessageKind::{} => {},", t.variant, t.t.id));
    }
    o.close("}");
    o.close("}");
    o.line("");
    o.line("/// The template name.");
    o.open("pub const fn name(self) -> &'static str {");
    o.open("match self {");
    for t in &plan.templates {
        o.line(format!(
            "MessageKind::{} => {},",
            t.variant,
            quote(&t.t.name)
        ));
    }
    o.close("}");
    o.close("}");
    o.close("}");
    o.line("");
    o.line("/// One message of each template, decoded into in place: a decoder reusing it keeps");
    o.line("/// the capacity of its sequences and strings. `'a` is the input's lifetime.");
    o.line("#[derive(Debug, Clone, Default, PartialEq, Eq)]");
    o.open("pub struct Messages<'a> {");
    for t in &plan.templates {
        o.line(format!(
            "pub {}: {}{},",
            t.member,
            plan.segs[t.seg].type_name,
            plan.lt(t.seg)
        ));
    }
    if !plan.message_borrows {
        o.line("_input: std::marker::PhantomData<&'a [u8]>,");
    }
    o.close("}");
    o.line("");
    o.open("impl<'a> Messages<'a> {");
    o.line("/// The message of `kind`, moved out (its place is left at its default).");
    o.open(format!(
        "pub fn take(&mut self, kind: MessageKind) -> Message{lt} {{"
    ));
    o.open("match kind {");
    for t in &plan.templates {
        o.line(format!(
            "MessageKind::{v} => Message::{v}(std::mem::take(&mut self.{m})),",
            v = t.variant,
            m = t.member
        ));
    }
    o.close("}");
    o.close("}");
    o.line("");
    o.line("/// The interpreter's owned form of the message of `kind`.");
    o.open("pub fn to_message(&self, kind: MessageKind) -> fp::Message {");
    o.open("match kind {");
    for t in &plan.templates {
        o.line(format!(
            "MessageKind::{} => self.{}.to_message(),",
            t.variant, t.member
        ));
    }
    o.close("}");
    o.close("}");
    o.close("}");
    o.line("");
}
