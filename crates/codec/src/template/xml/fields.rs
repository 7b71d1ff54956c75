//! The field-level half of the compiler: scalars with their operators and dictionary slots,
//! initial values, decimals and sequences.

use roxmltree::Node;

use super::compiler::{fast_children, generated, inherited, nested_ctx, Compiler, Ctx, Res};
use crate::error::SpecCode;
use crate::template::model::*;
use crate::value::parse_decimal;

impl<'a, 'input> Compiler<'a, 'input> {
    pub(super) fn scalar_kind(
        &mut self,
        node: Node<'a, 'input>,
        ctx: &Ctx<'a>,
        ty: FieldType,
        optional: bool,
        name: &str,
    ) -> Res<Kind> {
        let op_node = self.operator(node, name)?;
        Ok(Kind::Scalar(
            self.scalar(op_node, ctx, ty, optional, name, name)?,
        ))
    }

    /// The field's operator element, if any: the schema allows at most one (a string's or
    /// byte vector's `<length>` aside), so a second is a static error, not a choice.
    fn operator(&self, node: Node<'a, 'input>, name: &str) -> Res<Option<Node<'a, 'input>>> {
        self.at_most_one(
            node,
            |c| c != "length",
            |first, second| {
                format!("field {name:?} has a second operator <{second}> after <{first}>")
            },
        )
    }

    /// The only child element of `node` named `tag`, if any; a second is a static error.
    /// `what` names `node` in the error.
    fn only_child(
        &self,
        node: Node<'a, 'input>,
        tag: &str,
        what: &str,
    ) -> Res<Option<Node<'a, 'input>>> {
        self.at_most_one(
            node,
            |c| c == tag,
            |_, _| format!("{what} has a second <{tag}>"),
        )
    }

    /// The first child element of `node` whose tag `wanted` takes; a second such child is a
    /// static error (S1), `message(first, second)` saying it by the two tags.
    fn at_most_one(
        &self,
        node: Node<'a, 'input>,
        wanted: impl Fn(&str) -> bool,
        message: impl FnOnce(&str, &str) -> String,
    ) -> Res<Option<Node<'a, 'input>>> {
        let mut found = fast_children(node).filter(|c| wanted(c.tag_name().name()));
        let first = found.next();
        match (first, found.next()) {
            (Some(first), Some(second)) => Err(self.err(
                second,
                SpecCode::S1,
                message(first.tag_name().name(), second.tag_name().name()),
            )),
            _ => Ok(first),
        }
    }

    /// Builds one scalar from its operator element (or none). `key` is the operator's
    /// default key: the field's name, or a generated one (a decimal's exponent and mantissa,
    /// a sequence's implicit length) that no name in a template can equal.
    pub(super) fn scalar(
        &mut self,
        op_node: Option<Node<'a, 'input>>,
        ctx: &Ctx<'a>,
        ty: FieldType,
        optional: bool,
        name: &str,
        key: &str,
    ) -> Res<Scalar> {
        let Some(op_node) = op_node else {
            return Ok(Scalar {
                ty,
                op: Op::None,
                optional,
                initial: None,
                slot: 0,
                typed_entry: false,
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
        // Operators take attributes only (the schema's opContext).
        if let Some(child) = fast_children(op_node).next() {
            return Err(self.err(
                child,
                SpecCode::S1,
                format!(
                    "operator <{}> of field {name:?} has a child <{}>: operators take attributes only",
                    op_node.tag_name().name(),
                    child.tag_name().name()
                ),
            ));
        }
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
        let slot = match op {
            Op::Copy | Op::Increment | Op::Delta | Op::Tail => {
                let dict = op_node.attribute("dictionary").unwrap_or(ctx.dictionary);
                let scope = match dict {
                    "global" => "g".to_owned(),
                    "template" => format!("t:{}", ctx.template_at),
                    "type" => format!("y:{}\u{0}{}", ctx.type_ref.0, ctx.type_ref.1),
                    user => format!("u:{user}"),
                };
                // Keys are names, and two names are equal iff their namespaces and local
                // names are (spec §7): the nearest ns attribute qualifies the key.
                let key_ns = inherited(op_node, "ns").unwrap_or("");
                let key = format!("{key_ns}\u{0}{}", op_node.attribute("key").unwrap_or(key));
                self.slot(scope, key, ty)
            }
            _ => 0,
        };
        Ok(Scalar {
            ty,
            op,
            optional,
            initial,
            slot,
            typed_entry: false,
        })
    }

    /// The slot of an entry, noting when fields of different types share it.
    pub(super) fn slot(&mut self, scope: String, key: String, ty: FieldType) -> u32 {
        let next = self.slots.len() as u32;
        let slot = *self.slots.entry((scope, key)).or_insert(next);
        if slot == next {
            self.slot_types.push((ty, false));
        } else if self.slot_types[slot as usize].0 != ty {
            self.slot_types[slot as usize].1 = true;
        }
        slot
    }

    /// Converts an initial value (spec §6.3.2, §8.1): a value that does not convert is a
    /// static error, S3, whatever error the conversion itself would signal.
    pub(super) fn initial(&self, node: Node, ty: FieldType, v: &str) -> Res<Initial> {
        let bad = |what: &str| self.err(node, SpecCode::S3, format!("initial value {v:?} {what}"));
        Ok(match ty {
            FieldType::Int(it) => {
                let n = parse_integer(v, it.signed()).ok_or_else(|| bad("is not an integer"))?;
                if n < it.min() || n > it.max() {
                    return Err(bad(&format!("does not fit {}", it.name())));
                }
                Initial::Int(if it.signed() {
                    n as i64 as u64
                } else {
                    n as u64
                })
            }
            FieldType::Decimal => {
                let (exponent, mantissa) =
                    parse_initial_decimal(v).ok_or_else(|| bad("is not a decimal in range"))?;
                let (exponent, mantissa) = normalize(exponent, mantissa);
                Initial::Decimal { exponent, mantissa }
            }
            FieldType::Ascii => {
                if !v.is_ascii() {
                    return Err(bad("is not ASCII"));
                }
                Initial::Bytes(v.as_bytes().into())
            }
            FieldType::Unicode => Initial::Bytes(v.as_bytes().into()),
            FieldType::Bytes => {
                Initial::Bytes(parse_hex(v).ok_or_else(|| bad("is not hex digits"))?.into())
            }
        })
    }

    pub(super) fn decimal(
        &mut self,
        node: Node<'a, 'input>,
        ctx: &Ctx<'a>,
        optional: bool,
        name: &str,
    ) -> Res<Kind> {
        let what = format!("decimal {name:?}");
        let exp_node = self.only_child(node, "exponent", &what)?;
        let mant_node = self.only_child(node, "mantissa", &what)?;
        if exp_node.is_none() && mant_node.is_none() {
            return self.scalar_kind(node, ctx, FieldType::Decimal, optional, name);
        }
        // One operator for the whole decimal, or one for each part: not both (the schema's
        // `fieldOp | decFieldOp`).
        if let Some(other) =
            fast_children(node).find(|c| !matches!(c.tag_name().name(), "exponent" | "mantissa"))
        {
            return Err(self.err(
                other,
                SpecCode::S1,
                format!(
                    "decimal {name:?} has <{}> beside its <exponent>/<mantissa>",
                    other.tag_name().name()
                ),
            ));
        }
        let part = |n: Node<'a, 'input>, p: &str| self.operator(n, &format!("{name}.{p}"));
        let exp_op = exp_node.map(|n| part(n, "exponent")).transpose()?.flatten();
        let mant_op = mant_node
            .map(|n| part(n, "mantissa"))
            .transpose()?
            .flatten();
        // The parts' generated names (spec §6.2.2) are their default keys.
        let exponent = self.scalar(
            exp_op,
            ctx,
            FieldType::Int(IntType::I32),
            optional,
            name,
            &generated(name, "exponent"),
        )?;
        let mantissa = self.scalar(
            mant_op,
            ctx,
            FieldType::Int(IntType::I64),
            false,
            name,
            &generated(name, "mantissa"),
        )?;
        if let Some(Initial::Int(e)) = exponent.initial {
            let e = e as i64;
            if !(-63..=63).contains(&e) {
                return Err(self.err(
                    node,
                    SpecCode::R1,
                    format!("exponent initial value {e} is outside -63 to 63"),
                ));
            }
        }
        Ok(Kind::SplitDecimal { exponent, mantissa })
    }

    pub(super) fn sequence(
        &mut self,
        node: Node<'a, 'input>,
        ctx: &Ctx<'a>,
        optional: bool,
        name: &str,
    ) -> Res<Kind> {
        let inner = nested_ctx(node, ctx);
        let len_node = self.only_child(node, "length", &format!("sequence {name:?}"))?;
        let explicit = len_node.and_then(|n| n.attribute("name"));
        // The implicit name is shown as `S.length`; its key can equal no explicit name.
        let length_name = explicit.map_or_else(|| format!("{name}.length"), str::to_owned);
        let length_key = explicit.map_or_else(|| generated(name, "length"), str::to_owned);
        let length_id = len_node.and_then(|n| n.attribute("id")).map(str::to_owned);
        let len_op = len_node
            .map(|n| self.operator(n, &length_name))
            .transpose()?
            .flatten();
        let length = self.scalar(
            len_op,
            &inner,
            FieldType::Int(IntType::U32),
            optional,
            &length_name,
            &length_key,
        )?;
        let body = Segment::new(self.instructions(node, &inner)?);
        Ok(Kind::Sequence {
            length_name,
            length_id,
            length,
            body,
        })
    }
}

pub(super) fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "t" | "true" | "1" => Some(true),
        "n" | "no" | "f" | "false" | "0" => Some(false),
        _ => None,
    }
}

pub(super) fn parse_hex(v: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = v.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
        .collect()
}

/// Whitespace as §8.1 trims it: space, tab, carriage return, line feed.
pub(super) fn trim_ws(v: &str) -> &str {
    v.trim_matches([' ', '\t', '\r', '\n'])
}

/// An integer literal (spec §8.1.1): digits, after a minus sign if the type is signed.
pub(super) fn parse_integer(v: &str, signed: bool) -> Option<i128> {
    let v = trim_ws(v);
    let digits = if signed {
        v.strip_prefix('-').unwrap_or(v)
    } else {
        v
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

/// A decimal literal (spec §8.1.2): `1`, `1.1`, `.1`, `-0.1`; no exponent, and a period only
/// before a decimal part.
pub(super) fn parse_initial_decimal(v: &str) -> Option<(i32, i64)> {
    let v = trim_ws(v);
    let body = v.strip_prefix('-').unwrap_or(v);
    let (int, frac) = match body.split_once('.') {
        Some((_, "")) => return None,
        Some((int, frac)) => (int, frac),
        None => (body, ""),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) {
        return None;
    }
    // The value is normalized (§6.3.2: the mantissa has no trailing zeros), so those zeros
    // belong to the exponent before the mantissa's range is judged: 9223372036854775807
    // followed by 45 zeros is (45, 9223372036854775807), and 1.0000000000000000000000 is 1.
    let all = format!("{int}{frac}");
    let significant = all.trim_start_matches('0');
    let kept = significant.trim_end_matches('0');
    if kept.is_empty() {
        return Some((0, 0));
    }
    let exponent = (significant.len() - kept.len()) as i64 - frac.len() as i64;
    let sign = if v.starts_with('-') { "-" } else { "" };
    parse_decimal(&format!("{sign}{kept}e{exponent}"))
}

/// Moves trailing zeros of the mantissa into the exponent: the spec takes an initial value
/// of 12000 as (exponent 3, mantissa 12).
pub(super) fn normalize(mut exponent: i32, mut mantissa: i64) -> (i32, i64) {
    if mantissa == 0 {
        return (0, 0);
    }
    while mantissa % 10 == 0 && exponent < 63 {
        mantissa /= 10;
        exponent += 1;
    }
    (exponent, mantissa)
}
