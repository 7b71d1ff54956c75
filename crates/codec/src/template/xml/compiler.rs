//! The template compiler: one walk over the DOM, static template references inlined as
//! they are met, dictionary keys made slot indices; the fields' own rules in `fields.rs`.

use std::collections::HashMap;

use roxmltree::{Document, Node};

use super::fields::parse_bool;
use super::{is_fast_ns, Discarded, Note, FAST_NS, MAX_INSTRUCTIONS, MAX_NESTING};
use crate::error::{SpecCode, TemplateError};
use crate::template::model::*;
use crate::template::SCP_NS;

pub(super) struct Compiler<'a, 'input> {
    pub(super) doc: &'a Document<'input>,
    /// Templates by name: a name may be shared (the spec keys messages by id), and a static
    /// reference to a shared one is an error of the referring template.
    pub(super) by_name: HashMap<QName<'a>, Vec<Node<'a, 'input>>>,
    /// Dictionary entries by (dictionary, key): one slot each, whatever the types of the
    /// fields that use it (spec §6.3.1: a type clash is a dynamic error, D4).
    pub(super) slots: HashMap<(String, String), u32>,
    /// The type of the first field to use each slot, and whether another type uses it too.
    pub(super) slot_types: Vec<(FieldType, bool)>,
    pub(super) instructions: usize,
    pub(super) ref_stack: Vec<QName<'a>>,
    pub(super) errors: Vec<TemplateError>,
    pub(super) notes: Vec<Note>,
    /// Templates left out for a static error of their own (spec §4), in document order.
    pub(super) discarded: Vec<Discarded>,
}

/// A namespace-qualified name (spec §7): (namespace URI, local name).
pub(super) type QName<'a> = (&'a str, &'a str);

/// Inherited context while walking: which template defines the instructions, the dictionary
/// in force and the application type.
#[derive(Clone)]
pub(super) struct Ctx<'a> {
    pub(super) template: QName<'a>,
    /// Where the current template's element starts: the key of its `template` dictionary,
    /// since two templates may share a name.
    pub(super) template_at: usize,
    pub(super) dictionary: &'a str,
    pub(super) type_ref: QName<'a>,
    pub(super) depth: usize,
}

pub(super) type Res<T> = Result<T, TemplateError>;

impl<'a, 'input> Compiler<'a, 'input> {
    pub(super) fn new(doc: &'a Document<'input>) -> Self {
        Compiler {
            doc,
            by_name: HashMap::new(),
            slots: HashMap::new(),
            slot_types: Vec::new(),
            instructions: 0,
            ref_stack: Vec::new(),
            errors: Vec::new(),
            notes: Vec::new(),
            discarded: Vec::new(),
        }
    }

    pub(super) fn err(
        &self,
        node: Node,
        code: SpecCode,
        message: impl Into<String>,
    ) -> TemplateError {
        let pos = self.doc.text_pos_at(node.range().start);
        TemplateError {
            code,
            message: message.into(),
            line: pos.row,
            column: pos.col,
        }
    }

    fn note(&mut self, node: Node, why: String) {
        let pos = self.doc.text_pos_at(node.range().start);
        self.notes.push(Note {
            line: pos.row,
            column: pos.col,
            why,
        });
    }

    /// Compiles every template it can; errors and skipped elements are collected.
    pub(super) fn run(&mut self) -> Vec<Template> {
        let root = self.doc.root_element();
        let templates: Vec<Node> = match root.tag_name().name() {
            "templates" => {
                for n in root.children().filter(|c| c.is_element()) {
                    if let Some(ns) = n.tag_name().namespace().filter(|ns| !is_fast_ns(Some(ns))) {
                        let why = format!(
                            "<{}> is in namespace {ns}, not FAST's ({FAST_NS}): ignored",
                            n.tag_name().name()
                        );
                        self.note(n, why);
                    }
                }
                fast_children(root).collect()
            }
            "template" => vec![root],
            other => {
                let e = self.err(
                    root,
                    SpecCode::S1,
                    format!("root element must be <templates> or <template>, not <{other}>"),
                );
                self.errors.push(e);
                return Vec::new();
            }
        };
        let mut named = Vec::with_capacity(templates.len());
        for t in templates {
            if t.tag_name().name() != "template" {
                let e = self.err(
                    t,
                    SpecCode::S1,
                    format!("unexpected <{}> in <templates>", t.tag_name().name()),
                );
                self.errors.push(e);
                continue;
            }
            let name = match self.required_attr(t, "name") {
                Ok(n) => n,
                Err(e) => {
                    self.errors.push(e);
                    continue;
                }
            };
            let qname = (inherited(t, "templateNs").unwrap_or(""), name);
            let same = self.by_name.entry(qname).or_default();
            same.push(t);
            let first = same[0];
            if first != t {
                let line = self.doc.text_pos_at(first.range().start).row;
                let why = format!(
                    "template name {name:?} is also that of the template at line {line}: \
                     both decode by their ids, but a static <templateRef name=\"{name}\"/> \
                     could mean either, so it is an error"
                );
                self.note(t, why);
            }
            named.push((name, t));
        }
        let mut list = Vec::with_capacity(named.len());
        let mut ids = HashMap::new();
        let mut unnamed = Vec::new();
        for (name, t) in named {
            match self.template(name, t, &mut ids) {
                Ok(Some(t)) => list.push(t),
                Ok(None) => unnamed.push((name, t)),
                Err(e) => {
                    self.errors.push(e);
                    self.discarded.push(Discarded {
                        name: name.to_owned(),
                        id: t.attribute("id").and_then(|s| s.trim().parse().ok()),
                    });
                }
            }
        }
        // Templates without an id decode only through static references, where their errors
        // surface at each use; checked on their own too, so that an unused one's errors are
        // still signalled (spec §4). What that compiles is dropped, dictionary entries too.
        for (name, t) in unnamed {
            let (slots, slot_types, instructions) = (
                self.slots.clone(),
                self.slot_types.clone(),
                self.instructions,
            );
            if let Err(e) = self.body(name, t) {
                self.errors.push(e);
            }
            (self.slots, self.slot_types, self.instructions) = (slots, slot_types, instructions);
        }
        list
    }

    /// One template, or `None` for one without an id.
    fn template(
        &mut self,
        name: &'a str,
        t: Node<'a, 'input>,
        ids: &mut HashMap<u32, &'a str>,
    ) -> Res<Option<Template>> {
        let id = match t.attribute("id").map(|s| (s, s.trim().parse::<u32>())) {
            Some((_, Ok(id))) => id,
            // The schema's id is any token (spec §7.1 gives it no meaning), but a message
            // names its template by a number: such a template is one without an id.
            Some((s, Err(_))) => {
                let why = format!(
                    "template {name:?} has id {s:?}, not a number that a message can name: \
                     it can only be used through a static <templateRef name=\"{name}\"/>"
                );
                self.note(t, why);
                return Ok(None);
            }
            // A template without an id can only be used through a static reference.
            None => {
                let why = format!(
                    "template {name:?} has no id: it can only be used through a static \
                     <templateRef name=\"{name}\"/>, not decoded on its own"
                );
                self.note(t, why);
                return Ok(None);
            }
        };
        if let Some(other) = ids.insert(id, name) {
            return Err(self.err(
                t,
                SpecCode::S1,
                format!("template id {id} is used by both {other:?} and {name:?}"),
            ));
        }
        // `reset` (fastfeed, QuickFAST) or SCP 1.1's `scp:reset` (OpenFAST, mFAST, MOEX).
        let reset_attr = t
            .attribute("reset")
            .or_else(|| t.attribute((SCP_NS, "reset")));
        let reset = match reset_attr {
            None => false,
            Some(v) => parse_bool(v).ok_or_else(|| {
                self.err(
                    t,
                    SpecCode::S1,
                    format!("reset={v:?} is not a yes/no value"),
                )
            })?,
        };
        let template_ns = inherited(t, "templateNs");
        let instrs = self.body(name, t)?;
        Ok(Some(Template {
            id,
            name: name.to_owned(),
            template_ns: template_ns.map(str::to_owned),
            ns: inherited(t, "ns").map(str::to_owned),
            reset,
            session: false,
            body: Segment::new(instrs),
        }))
    }

    /// A template's instructions, its static references inlined.
    fn body(&mut self, name: &'a str, t: Node<'a, 'input>) -> Res<Vec<Instr>> {
        let ctx = Ctx {
            template: (inherited(t, "templateNs").unwrap_or(""), name),
            template_at: t.range().start,
            dictionary: inherited(t, "dictionary").unwrap_or("global"),
            type_ref: type_ref_of(t).unwrap_or(("", "")),
            depth: 0,
        };
        self.ref_stack.clear();
        self.ref_stack.push(ctx.template);
        self.instructions(t, &ctx)
    }

    fn required_attr(&self, node: Node<'a, 'input>, name: &str) -> Res<&'a str> {
        node.attribute(name).ok_or_else(|| {
            self.err(
                node,
                SpecCode::S1,
                format!("<{}> needs a {name:?} attribute", node.tag_name().name()),
            )
        })
    }

    pub(super) fn instructions(
        &mut self,
        parent: Node<'a, 'input>,
        ctx: &Ctx<'a>,
    ) -> Res<Vec<Instr>> {
        if ctx.depth > MAX_NESTING {
            return Err(self.err(parent, SpecCode::S1, "groups and sequences nested too deep"));
        }
        let mut out = Vec::new();
        // The schema's order: `typeRef?`, then a sequence's `length?`, then the fields. A
        // second typeRef, or either one after a field, would leave what is meant to a guess.
        let parent_tag = parent.tag_name().name();
        let mut type_ref = false;
        let mut field: Option<&str> = None;
        for node in fast_children(parent) {
            let tag = node.tag_name().name();
            let bad = |message: String| Err(self.err(node, SpecCode::S1, message));
            match tag {
                "typeRef" if type_ref || field.is_some() => {
                    return bad(format!(
                        "<typeRef> comes once, before the fields of its <{parent_tag}>"
                    ))
                }
                "typeRef" => type_ref = true,
                // The sequence's own, which `sequence` compiled.
                "length" if parent_tag == "sequence" => {
                    if let Some(f) = field {
                        let name = parent.attribute("name").unwrap_or("");
                        return bad(format!(
                            "sequence {name:?} has its <length> after <{f}>: it comes first"
                        ));
                    }
                }
                "length" => {
                    return bad(
                        "<length> belongs to a sequence (or a string or byte vector field)".into(),
                    )
                }
                "templateRef" => {
                    field = field.or(Some(tag));
                    self.template_ref(node, ctx, &mut out)?;
                }
                _ => {
                    field = field.or(Some(tag));
                    out.push(self.instruction(node, ctx)?);
                }
            }
        }
        Ok(out)
    }

    fn template_ref(
        &mut self,
        node: Node<'a, 'input>,
        ctx: &Ctx<'a>,
        out: &mut Vec<Instr>,
    ) -> Res<()> {
        let Some(name) = node.attribute("name") else {
            out.push(Instr::new(
                "templateRef".into(),
                None,
                false,
                Kind::DynamicRef,
            ));
            return Ok(());
        };
        let qname = (inherited(node, "templateNs").unwrap_or(""), name);
        let target = match self.by_name.get(&qname).map(Vec::as_slice) {
            Some(&[one]) => one,
            Some(many @ [_, _, ..]) => {
                let lines: Vec<String> = many
                    .iter()
                    .map(|t| self.doc.text_pos_at(t.range().start).row.to_string())
                    .collect();
                return Err(self.err(
                    node,
                    SpecCode::S1,
                    format!(
                        "templateRef to {name:?}, the name of {} templates (lines {}): \
                         which one is meant cannot be told",
                        many.len(),
                        lines.join(", ")
                    ),
                ));
            }
            _ => {
                return Err(self.err(
                    node,
                    SpecCode::S1,
                    format!("templateRef to unknown template {name:?} [ERR D8]"),
                ))
            }
        };
        if self.ref_stack.contains(&qname) {
            let names: Vec<&str> = self.ref_stack.iter().map(|q| q.1).collect();
            return Err(self.err(
                node,
                SpecCode::S1,
                format!("static templateRef cycle: {} -> {name}", names.join(" -> ")),
            ));
        }
        self.ref_stack.push(qname);
        // The referred template becomes the current one (spec §6.4), and its fields take
        // their dictionary from their own XML ancestry (§6.3.1), which holds the referred
        // template and never the <templateRef>: the referring context's does not carry over.
        let inner = Ctx {
            template: qname,
            template_at: target.range().start,
            dictionary: inherited(target, "dictionary").unwrap_or("global"),
            type_ref: type_ref_of(target).unwrap_or(ctx.type_ref),
            depth: ctx.depth + 1,
        };
        let instrs = self.instructions(target, &inner)?;
        self.ref_stack.pop();
        out.extend(instrs);
        Ok(())
    }

    fn instruction(&mut self, node: Node<'a, 'input>, ctx: &Ctx<'a>) -> Res<Instr> {
        self.instructions += 1;
        if self.instructions > MAX_INSTRUCTIONS {
            return Err(self.err(
                node,
                SpecCode::S1,
                "too many instructions in the template file",
            ));
        }
        let tag = node.tag_name().name();
        let name = self.required_attr(node, "name")?.to_owned();
        let optional = match node.attribute("presence") {
            None | Some("mandatory") => false,
            Some("optional") => true,
            Some(p) => {
                return Err(self.err(
                    node,
                    SpecCode::S1,
                    format!("presence={p:?} is not mandatory/optional"),
                ))
            }
        };
        let id = node.attribute("id").map(str::to_owned);
        let mut ctx = ctx.clone();
        if let Some(d) = node.attribute("dictionary") {
            ctx.dictionary = d;
        }
        let kind = match tag {
            "int32" => {
                self.scalar_kind(node, &ctx, FieldType::Int(IntType::I32), optional, &name)?
            }
            "uInt32" => {
                self.scalar_kind(node, &ctx, FieldType::Int(IntType::U32), optional, &name)?
            }
            "int64" => {
                self.scalar_kind(node, &ctx, FieldType::Int(IntType::I64), optional, &name)?
            }
            "uInt64" => {
                self.scalar_kind(node, &ctx, FieldType::Int(IntType::U64), optional, &name)?
            }
            "int8" => self.scalar_kind(node, &ctx, FieldType::Int(IntType::I8), optional, &name)?,
            "uInt8" => {
                self.scalar_kind(node, &ctx, FieldType::Int(IntType::U8), optional, &name)?
            }
            "int16" => {
                self.scalar_kind(node, &ctx, FieldType::Int(IntType::I16), optional, &name)?
            }
            "uInt16" => {
                self.scalar_kind(node, &ctx, FieldType::Int(IntType::U16), optional, &name)?
            }
            "byteVector" => self.scalar_kind(node, &ctx, FieldType::Bytes, optional, &name)?,
            "string" => {
                let ty = match node.attribute("charset") {
                    None | Some("ascii") => FieldType::Ascii,
                    Some("unicode") => FieldType::Unicode,
                    Some(c) => {
                        return Err(self.err(
                            node,
                            SpecCode::S1,
                            format!("charset={c:?} is not ascii/unicode"),
                        ))
                    }
                };
                self.scalar_kind(node, &ctx, ty, optional, &name)?
            }
            "decimal" => self.decimal(node, &ctx, optional, &name)?,
            "sequence" => self.sequence(node, &ctx, optional, &name)?,
            "group" => {
                let inner = nested_ctx(node, &ctx);
                Kind::Group(Segment::new(self.instructions(node, &inner)?))
            }
            other => {
                return Err(self.err(node, SpecCode::S1, format!("unknown instruction <{other}>")))
            }
        };
        Ok(Instr::new(name, id, optional, kind))
    }
}

pub(super) fn nested_ctx<'a>(node: Node<'a, '_>, ctx: &Ctx<'a>) -> Ctx<'a> {
    Ctx {
        template: ctx.template,
        template_at: ctx.template_at,
        dictionary: node.attribute("dictionary").unwrap_or(ctx.dictionary),
        type_ref: type_ref_of(node).unwrap_or(ctx.type_ref),
        depth: ctx.depth + 1,
    }
}

/// Element children in the FAST namespace (or in none). Elements of other namespaces are
/// extension points the spec's schema allows ("other"), so they are skipped.
pub(super) fn fast_children<'a, 'input>(
    node: Node<'a, 'input>,
) -> impl Iterator<Item = Node<'a, 'input>> {
    node.children()
        .filter(|c| c.is_element() && is_fast_ns(c.tag_name().namespace()))
}

/// The application type an element names, qualified by its nearest ns (spec §7).
pub(super) fn type_ref_of<'a>(node: Node<'a, '_>) -> Option<QName<'a>> {
    let t = fast_children(node).find(|c| c.tag_name().name() == "typeRef")?;
    Some((inherited(t, "ns").unwrap_or(""), t.attribute("name")?))
}

/// A generated name (a decimal part's, an implicit sequence length's): U+0001 cannot appear
/// in an XML document, so no name given in a template equals it.
pub(super) fn generated(name: &str, part: &str) -> String {
    format!("{name}\u{1}{part}")
}

/// Marks the scalars whose entries fields of other types share, and gives their
/// instructions the general path.
pub(super) fn mark_typed_entries(seg: &mut Segment, shared: &[bool]) {
    let mark = |s: &mut Scalar| {
        let keyed = matches!(s.op, Op::Copy | Op::Increment | Op::Delta | Op::Tail);
        s.typed_entry = keyed && shared[s.slot as usize];
    };
    for instr in &mut seg.instrs {
        match &mut instr.kind {
            Kind::Scalar(s) => mark(s),
            Kind::SplitDecimal { exponent, mantissa } => {
                mark(exponent);
                mark(mantissa);
            }
            Kind::Sequence { length, body, .. } => {
                mark(length);
                mark_typed_entries(body, shared);
            }
            Kind::Group(body) => mark_typed_entries(body, shared),
            Kind::DynamicRef => {}
        }
        instr.recompile();
    }
    *seg = Segment::new(std::mem::take(&mut seg.instrs));
}

/// An attribute from the node or its nearest ancestor that has it.
pub(super) fn inherited<'a>(node: Node<'a, '_>, attr: &str) -> Option<&'a str> {
    node.ancestors()
        .filter(|n| n.is_element())
        .find_map(|n| n.attribute(attr))
}
