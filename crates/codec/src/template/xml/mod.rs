//! Template XML (spec Appendix 1) to compiled [`Templates`]. One walk over the DOM: static
//! template references are inlined as they are met, dictionary keys become slot indices. The
//! templates and instructions are compiled here, their fields in `fields.rs`.

use std::collections::HashMap;

use roxmltree::{Document, Node};

use super::model::*;
use crate::error::{SpecCode, TemplateError};

mod fields;

use fields::parse_bool;

const FAST_NS: &str = "http://www.fixprotocol.org/ns/fast/td/1.1";
/// FAST 1.0's template namespace, which the 1.1 specification's own example in §4 still uses
/// (and so do template files written from it): the same elements, read as FAST's.
const FAST_NS_1_0: &str = "http://www.fixprotocol.org/ns/template-definition";

/// Whether elements in namespace `ns` are FAST template elements (no namespace counts).
/// Exchanges' published files also spell FAST 1.1's URI in other cases, or with another host
/// (the Shanghai Stock Exchange's `http://www.FIXprotocal.org/ns/FAST/td/1.1`), and other
/// decoders (mFAST, QuickFAST) read them: a URI whose path is FAST's, in any case, is FAST's.
fn is_fast_ns(ns: Option<&str>) -> bool {
    const PATH: &str = "/ns/fast/td/1.1";
    match ns {
        None | Some("") | Some(FAST_NS) | Some(FAST_NS_1_0) => true,
        Some(u) => {
            u.len() >= PATH.len() && {
                let tail = &u.as_bytes()[u.len() - PATH.len()..];
                tail.eq_ignore_ascii_case(PATH.as_bytes())
            }
        }
    }
}
/// Hostile-input guards: template files of real exchanges are well under these.
const MAX_XML_BYTES: usize = 16 << 20;
const MAX_INSTRUCTIONS: usize = 200_000;
const MAX_NESTING: usize = 64;
/// XML nodes (elements, attributes' owners, text) a template document may have: a 16 MiB file
/// of short elements stays well under it; entity expansion cannot go past it.
const MAX_XML_NODES: u32 = 1 << 22;

/// How template documents are read.
#[derive(Debug, Clone, Copy)]
pub struct ParseOptions {
    /// Know the FAST Session Control Protocol 1.1 messages (Reset 120, Hello 16002, Alert
    /// 16003) without the template file; the file's own template of an id wins. On by
    /// default.
    pub session_control: bool,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            session_control: true,
        }
    }
}

/// Parses and compiles a template document; the first error found, if any.
pub fn parse(xml: &str) -> Result<Templates, TemplateError> {
    parse_with(xml, ParseOptions::default())
}

/// [`parse`] with options.
pub fn parse_with(xml: &str, opts: ParseOptions) -> Result<Templates, TemplateError> {
    let checked = check_with(xml, opts);
    match checked.errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(checked.templates.expect("no errors, so compiled")),
    }
}

/// What [`check`] found in a template document.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The compiled templates, when there are no errors.
    pub templates: Option<Templates>,
    /// Every error, in document order: each template is checked whatever the ones before
    /// it held (an error stops the check of its own template only).
    pub errors: Vec<TemplateError>,
    /// Elements that are not errors but give no template of their own: a template without
    /// an id (usable only through a static reference), an element outside the FAST
    /// namespace. They explain a file that yields fewer templates than it seems to hold.
    pub skipped: Vec<Skipped>,
}

/// An element [`check`] left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub line: u32,
    pub column: u32,
    pub why: String,
}

/// Parses and compiles a template document, collecting every error.
pub fn check(xml: &str) -> Checked {
    check_with(xml, ParseOptions::default())
}

/// [`check`] with options.
pub fn check_with(xml: &str, parse_opts: ParseOptions) -> Checked {
    let fail = |e| Checked {
        templates: None,
        errors: vec![e],
        skipped: Vec::new(),
    };
    if xml.len() > MAX_XML_BYTES {
        return fail(TemplateError {
            code: SpecCode::S1,
            message: format!("template file is larger than {MAX_XML_BYTES} bytes"),
            line: 1,
            column: 1,
        });
    }
    // A document type declaration (`<!DOCTYPE templates SYSTEM "fast.dtd">`, which tools
    // that validate write) is allowed: roxmltree reads no external DTD, refuses recursive
    // entities and stops a billion-laughs expansion, and the node limit bounds the rest.
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        nodes_limit: MAX_XML_NODES,
    };
    let doc = match Document::parse_with_options(xml, opts) {
        Ok(d) => d,
        Err(e) => {
            return fail(TemplateError {
                code: SpecCode::S1,
                message: format!("not well-formed XML: {e}"),
                line: e.pos().row,
                column: e.pos().col,
            })
        }
    };
    let mut c = Compiler::new(&doc);
    let mut list = c.run();
    // Entries that fields of different types share take the general path, which checks
    // the entry's type on every read.
    let shared: Vec<bool> = c.slot_types.iter().map(|&(_, mixed)| mixed).collect();
    if shared.contains(&true) {
        for t in &mut list {
            mark_typed_entries(&mut t.body, &shared);
        }
    }
    if parse_opts.session_control {
        super::session::add_missing(&mut list);
    }
    let slot_count = c.slots.len();
    let mut errors = c.errors;
    // A template used by static references reports its error at each use: once is enough.
    let mut seen = std::collections::HashSet::new();
    errors.retain(|e| seen.insert((e.line, e.column, e.message.clone())));
    Checked {
        templates: errors.is_empty().then(|| Templates::new(list, slot_count)),
        errors,
        skipped: c.skipped,
    }
}

struct Compiler<'a, 'input> {
    doc: &'a Document<'input>,
    by_name: HashMap<QName<'a>, Node<'a, 'input>>,
    /// Dictionary entries by (dictionary, key): one slot each, whatever the types of the
    /// fields that use it (spec §6.3.1: a type clash is a dynamic error, D4).
    slots: HashMap<(String, String), u32>,
    /// The type of the first field to use each slot, and whether another type uses it too.
    slot_types: Vec<(FieldType, bool)>,
    instructions: usize,
    ref_stack: Vec<QName<'a>>,
    errors: Vec<TemplateError>,
    skipped: Vec<Skipped>,
}

/// A namespace-qualified name (spec §7): (namespace URI, local name).
type QName<'a> = (&'a str, &'a str);

/// Inherited context while walking: which template defines the instructions, the dictionary
/// in force and the application type.
#[derive(Clone)]
struct Ctx<'a> {
    template: QName<'a>,
    dictionary: &'a str,
    type_ref: QName<'a>,
    depth: usize,
}

type Res<T> = Result<T, TemplateError>;

impl<'a, 'input> Compiler<'a, 'input> {
    fn new(doc: &'a Document<'input>) -> Self {
        Compiler {
            doc,
            by_name: HashMap::new(),
            slots: HashMap::new(),
            slot_types: Vec::new(),
            instructions: 0,
            ref_stack: Vec::new(),
            errors: Vec::new(),
            skipped: Vec::new(),
        }
    }

    fn err(&self, node: Node, code: SpecCode, message: impl Into<String>) -> TemplateError {
        let pos = self.doc.text_pos_at(node.range().start);
        TemplateError {
            code,
            message: message.into(),
            line: pos.row,
            column: pos.col,
        }
    }

    fn skip(&mut self, node: Node, why: String) {
        let pos = self.doc.text_pos_at(node.range().start);
        self.skipped.push(Skipped {
            line: pos.row,
            column: pos.col,
            why,
        });
    }

    /// Compiles every template it can; errors and skipped elements are collected.
    fn run(&mut self) -> Vec<Template> {
        let root = self.doc.root_element();
        let templates: Vec<Node> = match root.tag_name().name() {
            "templates" => {
                for n in root.children().filter(|c| c.is_element()) {
                    if let Some(ns) = n.tag_name().namespace().filter(|ns| !is_fast_ns(Some(ns))) {
                        let why = format!(
                            "<{}> is in namespace {ns}, not FAST's ({FAST_NS}): ignored",
                            n.tag_name().name()
                        );
                        self.skip(n, why);
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
            if self.by_name.insert(qname, t).is_some() {
                let e = self.err(
                    t,
                    SpecCode::S1,
                    format!(
                        "template name {name:?} is used twice in templateNs {:?}",
                        qname.0
                    ),
                );
                self.errors.push(e);
                continue;
            }
            named.push((name, t));
        }
        let mut list = Vec::with_capacity(named.len());
        let mut ids = HashMap::new();
        for (name, t) in named {
            match self.template(name, t, &mut ids) {
                Ok(Some(t)) => list.push(t),
                Ok(None) => {}
                Err(e) => self.errors.push(e),
            }
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
        let id = match t.attribute("id") {
            Some(s) => s.trim().parse::<u32>().map_err(|_| {
                self.err(
                    t,
                    SpecCode::S1,
                    format!("template id {s:?} is not a uInt32"),
                )
            })?,
            // A template without an id can only be used through a static reference.
            None => {
                let why = format!(
                    "template {name:?} has no id: it can only be used through a static \
                     <templateRef name=\"{name}\"/>, not decoded on its own"
                );
                self.skip(t, why);
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
            .or_else(|| t.attribute((super::SCP_NS, "reset")));
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
        let ctx = Ctx {
            template: (template_ns.unwrap_or(""), name),
            dictionary: inherited(t, "dictionary").unwrap_or("global"),
            type_ref: type_ref_of(t).unwrap_or(("", "")),
            depth: 0,
        };
        self.ref_stack.clear();
        self.ref_stack.push(ctx.template);
        let instrs = self.instructions(t, &ctx)?;
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

    fn required_attr(&self, node: Node<'a, 'input>, name: &str) -> Res<&'a str> {
        node.attribute(name).ok_or_else(|| {
            self.err(
                node,
                SpecCode::S1,
                format!("<{}> needs a {name:?} attribute", node.tag_name().name()),
            )
        })
    }

    fn instructions(&mut self, parent: Node<'a, 'input>, ctx: &Ctx<'a>) -> Res<Vec<Instr>> {
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
        let Some(&target) = self.by_name.get(&qname) else {
            return Err(self.err(
                node,
                SpecCode::S1,
                format!("templateRef to unknown template {name:?} [ERR D8]"),
            ));
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

fn nested_ctx<'a>(node: Node<'a, '_>, ctx: &Ctx<'a>) -> Ctx<'a> {
    Ctx {
        template: ctx.template,
        dictionary: node.attribute("dictionary").unwrap_or(ctx.dictionary),
        type_ref: type_ref_of(node).unwrap_or(ctx.type_ref),
        depth: ctx.depth + 1,
    }
}

/// Element children in the FAST namespace (or in none). Elements of other namespaces are
/// extension points the spec's schema allows ("other"), so they are skipped.
fn fast_children<'a, 'input>(node: Node<'a, 'input>) -> impl Iterator<Item = Node<'a, 'input>> {
    node.children()
        .filter(|c| c.is_element() && is_fast_ns(c.tag_name().namespace()))
}

/// The application type an element names, qualified by its nearest ns (spec §7).
fn type_ref_of<'a>(node: Node<'a, '_>) -> Option<QName<'a>> {
    let t = fast_children(node).find(|c| c.tag_name().name() == "typeRef")?;
    Some((inherited(t, "ns").unwrap_or(""), t.attribute("name")?))
}

/// A generated name (a decimal part's, an implicit sequence length's): U+0001 cannot appear
/// in an XML document, so no name given in a template equals it.
fn generated(name: &str, part: &str) -> String {
    format!("{name}\u{1}{part}")
}

/// Marks the scalars whose entries fields of other types share, and gives their
/// instructions the general path.
fn mark_typed_entries(seg: &mut Segment, shared: &[bool]) {
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
fn inherited<'a>(node: Node<'a, '_>, attr: &str) -> Option<&'a str> {
    node.ancestors()
        .filter(|n| n.is_element())
        .find_map(|n| n.attribute(attr))
}
