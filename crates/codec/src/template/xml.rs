//! Template XML (spec Appendix 1) to compiled [`Templates`]. One walk over the DOM: static
//! template references are inlined as they are met, dictionary keys become slot indices.

use std::collections::HashMap;

use roxmltree::{Document, Node};

use super::model::*;
use crate::error::{SpecCode, TemplateError};
use crate::value::parse_decimal;

const FAST_NS: &str = "http://www.fixprotocol.org/ns/fast/td/1.1";
/// Hostile-input guards: template files of real exchanges are well under these.
const MAX_XML_BYTES: usize = 16 << 20;
const MAX_INSTRUCTIONS: usize = 200_000;
const MAX_NESTING: usize = 64;

/// Parses and compiles a template document.
pub fn parse(xml: &str) -> Result<Templates, TemplateError> {
    if xml.len() > MAX_XML_BYTES {
        return Err(TemplateError {
            code: SpecCode::S1,
            message: format!("template file is larger than {MAX_XML_BYTES} bytes"),
            line: 1,
            column: 1,
        });
    }
    let opts = roxmltree::ParsingOptions {
        allow_dtd: false,
        ..Default::default()
    };
    let doc = Document::parse_with_options(xml, opts).map_err(|e| TemplateError {
        code: SpecCode::S1,
        message: format!("not well-formed XML: {e}"),
        line: e.pos().row,
        column: e.pos().col,
    })?;
    Compiler::new(&doc).run()
}

struct Compiler<'a, 'input> {
    doc: &'a Document<'input>,
    by_name: HashMap<&'a str, Node<'a, 'input>>,
    slots: HashMap<(String, String, FieldType), u32>,
    instructions: usize,
    ref_stack: Vec<&'a str>,
}

/// Inherited context while walking: which template defines the instructions, the dictionary
/// in force and the application type.
#[derive(Clone)]
struct Ctx<'a> {
    template: &'a str,
    dictionary: &'a str,
    type_ref: &'a str,
    depth: usize,
}

type Res<T> = Result<T, TemplateError>;

impl<'a, 'input> Compiler<'a, 'input> {
    fn new(doc: &'a Document<'input>) -> Self {
        Compiler {
            doc,
            by_name: HashMap::new(),
            slots: HashMap::new(),
            instructions: 0,
            ref_stack: Vec::new(),
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

    fn run(mut self) -> Res<Templates> {
        let root = self.doc.root_element();
        let templates: Vec<Node> = match root.tag_name().name() {
            "templates" => fast_children(root).collect(),
            "template" => vec![root],
            other => {
                return Err(self.err(
                    root,
                    SpecCode::S1,
                    format!("root element must be <templates> or <template>, not <{other}>"),
                ))
            }
        };
        for t in &templates {
            if t.tag_name().name() != "template" {
                return Err(self.err(
                    *t,
                    SpecCode::S1,
                    format!("unexpected <{}> in <templates>", t.tag_name().name()),
                ));
            }
            let name = self.required_attr(*t, "name")?;
            if self.by_name.insert(name, *t).is_some() {
                return Err(self.err(
                    *t,
                    SpecCode::S1,
                    format!("template name {name:?} is used twice"),
                ));
            }
        }
        let mut list = Vec::with_capacity(templates.len());
        let mut ids = HashMap::new();
        for t in templates {
            let name = self.required_attr(t, "name")?;
            let id = match t.attribute("id") {
                Some(s) => s.trim().parse::<u32>().map_err(|_| {
                    self.err(
                        t,
                        SpecCode::S1,
                        format!("template id {s:?} is not a uInt32"),
                    )
                })?,
                // A template without an id can only be used through a static reference.
                None => continue,
            };
            if let Some(other) = ids.insert(id, name) {
                return Err(self.err(
                    t,
                    SpecCode::S1,
                    format!("template id {id} is used by both {other:?} and {name:?}"),
                ));
            }
            let reset = match t.attribute("reset") {
                None => false,
                Some(v) => parse_bool(v).ok_or_else(|| {
                    self.err(
                        t,
                        SpecCode::S1,
                        format!("reset={v:?} is not a yes/no value"),
                    )
                })?,
            };
            let ctx = Ctx {
                template: name,
                dictionary: inherited(t, "dictionary").unwrap_or("global"),
                type_ref: type_ref_of(t).unwrap_or(""),
                depth: 0,
            };
            self.ref_stack.clear();
            self.ref_stack.push(name);
            let instrs = self.instructions(t, &ctx)?;
            list.push(Template {
                id,
                name: name.to_owned(),
                ns: inherited(t, "ns").map(str::to_owned),
                reset,
                body: Segment::new(instrs),
            });
        }
        let slot_count = self.slots.len();
        Ok(Templates::new(list, slot_count))
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
        for node in fast_children(parent) {
            match node.tag_name().name() {
                "typeRef" | "length" => continue,
                "templateRef" => self.template_ref(node, ctx, &mut out)?,
                _ => out.push(self.instruction(node, ctx)?),
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
        let Some(&target) = self.by_name.get(name) else {
            return Err(self.err(
                node,
                SpecCode::S1,
                format!("templateRef to unknown template {name:?} [ERR D8]"),
            ));
        };
        if self.ref_stack.contains(&name) {
            return Err(self.err(
                node,
                SpecCode::S1,
                format!(
                    "static templateRef cycle: {} -> {name}",
                    self.ref_stack.join(" -> ")
                ),
            ));
        }
        self.ref_stack.push(name);
        // The referenced template's fields keep their own template dictionary scope.
        let inner = Ctx {
            template: name,
            dictionary: target.attribute("dictionary").unwrap_or(ctx.dictionary),
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

    fn scalar_kind(
        &mut self,
        node: Node<'a, 'input>,
        ctx: &Ctx<'a>,
        ty: FieldType,
        optional: bool,
        name: &str,
    ) -> Res<Kind> {
        let op_node = fast_children(node).find(|c| c.tag_name().name() != "length");
        Ok(Kind::Scalar(
            self.scalar(node, op_node, ctx, ty, optional, name)?,
        ))
    }

    /// Builds one scalar from its operator element (or none).
    fn scalar(
        &mut self,
        field: Node<'a, 'input>,
        op_node: Option<Node<'a, 'input>>,
        ctx: &Ctx<'a>,
        ty: FieldType,
        optional: bool,
        name: &str,
    ) -> Res<Scalar> {
        let Some(op_node) = op_node else {
            return Ok(Scalar {
                ty,
                op: Op::None,
                optional,
                initial: None,
                slot: 0,
            });
        };
        let op = match op_node.tag_name().name() {
            "constant" => Op::Constant,
            "default" => Op::Default,
            "copy" => Op::Copy,
            "increment" => Op::Increment,
            "delta" => Op::Delta,
            "tail" => Op::Tail,
            other => {
                return Err(self.err(
                    op_node,
                    SpecCode::S1,
                    format!("unknown operator <{other}> on field {name:?}"),
                ))
            }
        };
        let applicable = match op {
            Op::Increment => matches!(ty, FieldType::Int(_)),
            Op::Tail => matches!(ty, FieldType::Ascii | FieldType::Unicode | FieldType::Bytes),
            _ => true,
        };
        if !applicable {
            return Err(self.err(
                op_node,
                SpecCode::S2,
                format!(
                    "operator <{}> does not apply to field {name:?}",
                    op_node.tag_name().name()
                ),
            ));
        }
        let initial = match op_node.attribute("value") {
            Some(v) => Some(self.initial(op_node, ty, v)?),
            None => None,
        };
        if op == Op::Constant && initial.is_none() {
            return Err(self.err(
                op_node,
                SpecCode::S4,
                format!("constant field {name:?} has no value"),
            ));
        }
        if op == Op::Default && initial.is_none() && !optional {
            return Err(self.err(
                op_node,
                SpecCode::S5,
                format!("mandatory default field {name:?} has no value"),
            ));
        }
        let _ = field;
        let slot = match op {
            Op::Copy | Op::Increment | Op::Delta | Op::Tail => {
                let dict = op_node.attribute("dictionary").unwrap_or(ctx.dictionary);
                let scope = match dict {
                    "global" => "g".to_owned(),
                    "template" => format!("t:{}", ctx.template),
                    "type" => format!("y:{}", ctx.type_ref),
                    user => format!("u:{user}"),
                };
                // Keys are names, and two names are equal iff their namespaces and local
                // names are (spec §7): the nearest ns attribute qualifies the key.
                let key_ns = inherited(op_node, "ns").unwrap_or("");
                let key = format!("{key_ns}\u{0}{}", op_node.attribute("key").unwrap_or(name));
                let next = self.slots.len() as u32;
                *self.slots.entry((scope, key, ty)).or_insert(next)
            }
            _ => 0,
        };
        Ok(Scalar {
            ty,
            op,
            optional,
            initial,
            slot,
        })
    }

    fn initial(&self, node: Node, ty: FieldType, v: &str) -> Res<Initial> {
        let bad = |code, what: &str| self.err(node, code, format!("initial value {v:?} {what}"));
        Ok(match ty {
            FieldType::Int(it) => {
                let n: i128 = v
                    .trim()
                    .parse()
                    .map_err(|_| bad(SpecCode::S3, "is not an integer"))?;
                if n < it.min() || n > it.max() {
                    return Err(bad(SpecCode::R4, &format!("does not fit {}", it.name())));
                }
                Initial::Int(if it.signed() {
                    n as i64 as u64
                } else {
                    n as u64
                })
            }
            FieldType::Decimal => {
                let (exponent, mantissa) = parse_decimal(v.trim())
                    .ok_or_else(|| bad(SpecCode::S3, "is not a decimal in range"))?;
                let (exponent, mantissa) = normalize(exponent, mantissa);
                Initial::Decimal { exponent, mantissa }
            }
            FieldType::Ascii => {
                if !v.is_ascii() {
                    return Err(bad(SpecCode::R3, "is not ASCII"));
                }
                Initial::Bytes(v.as_bytes().into())
            }
            FieldType::Unicode => Initial::Bytes(v.as_bytes().into()),
            FieldType::Bytes => Initial::Bytes(
                parse_hex(v)
                    .ok_or_else(|| bad(SpecCode::S3, "is not hex digits"))?
                    .into(),
            ),
        })
    }

    fn decimal(
        &mut self,
        node: Node<'a, 'input>,
        ctx: &Ctx<'a>,
        optional: bool,
        name: &str,
    ) -> Res<Kind> {
        let exp_node = fast_children(node).find(|c| c.tag_name().name() == "exponent");
        let mant_node = fast_children(node).find(|c| c.tag_name().name() == "mantissa");
        if exp_node.is_none() && mant_node.is_none() {
            return self.scalar_kind(node, ctx, FieldType::Decimal, optional, name);
        }
        let exp_op = exp_node.and_then(|n| fast_children(n).next());
        let mant_op = mant_node.and_then(|n| fast_children(n).next());
        let exponent = self.scalar(
            node,
            exp_op,
            ctx,
            FieldType::Int(IntType::I32),
            optional,
            name,
        )?;
        let mantissa = self.scalar(
            node,
            mant_op,
            ctx,
            FieldType::Int(IntType::I64),
            false,
            name,
        )?;
        if let Some(Initial::Int(e)) = exponent.initial {
            let e = e as i64;
            if !(-63..=63).contains(&e) {
                return Err(self.err(
                    node,
                    SpecCode::R1,
                    format!("exponent initial value {e} is outside -63..=63"),
                ));
            }
        }
        Ok(Kind::SplitDecimal { exponent, mantissa })
    }

    fn sequence(
        &mut self,
        node: Node<'a, 'input>,
        ctx: &Ctx<'a>,
        optional: bool,
        name: &str,
    ) -> Res<Kind> {
        let inner = nested_ctx(node, ctx);
        let len_node = fast_children(node).find(|c| c.tag_name().name() == "length");
        let length_name = len_node
            .and_then(|n| n.attribute("name"))
            .map(str::to_owned)
            .unwrap_or_else(|| format!("{name}.length"));
        let len_op = len_node.and_then(|n| fast_children(n).next());
        let length = self.scalar(
            node,
            len_op,
            &inner,
            FieldType::Int(IntType::U32),
            optional,
            &length_name,
        )?;
        let body = Segment::new(self.instructions(node, &inner)?);
        Ok(Kind::Sequence {
            length_name,
            length,
            body,
        })
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
    node.children().filter(|c| {
        c.is_element() && matches!(c.tag_name().namespace(), None | Some("") | Some(FAST_NS))
    })
}

fn type_ref_of<'a>(node: Node<'a, '_>) -> Option<&'a str> {
    fast_children(node)
        .find(|c| c.tag_name().name() == "typeRef")
        .and_then(|c| c.attribute("name"))
}

/// An attribute from the node or its nearest ancestor that has it.
fn inherited<'a>(node: Node<'a, '_>, attr: &str) -> Option<&'a str> {
    node.ancestors()
        .filter(|n| n.is_element())
        .find_map(|n| n.attribute(attr))
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "t" | "true" | "1" => Some(true),
        "n" | "no" | "f" | "false" | "0" => Some(false),
        _ => None,
    }
}

fn parse_hex(v: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = v.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
        .collect()
}

/// Moves trailing zeros of the mantissa into the exponent: the spec takes an initial value
/// of 12000 as (exponent 3, mantissa 12).
fn normalize(mut exponent: i32, mut mantissa: i64) -> (i32, i64) {
    if mantissa == 0 {
        return (0, 0);
    }
    while mantissa % 10 == 0 && exponent < 63 {
        mantissa /= 10;
        exponent += 1;
    }
    (exponent, mantissa)
}
