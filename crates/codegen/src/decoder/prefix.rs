//! Templates that begin alike: the integer fields they all start with, read once before the
//! dispatch on the template id instead of in each template's function.
//!
//! A feed's messages come in an order no branch predictor learns (a quote, then a new order,
//! then a cancel, ...), so the jump to the template's code is mostly mispredicted, and all
//! the work after it is thrown away and done again once the template id is known. Fields
//! every template of a group reads alike (the same type, operator, initial value,
//! dictionary entry and presence-map bit: a sequence number, a timestamp) do not depend on
//! the template, so they are read before the jump, and only the rest of each template waits
//! for it (BENCHMARKS.md, "Templates that begin alike").

use fastfeed_codec::template::{FieldType, Initial, Kind, Op, Scalar};

use super::fields::{int_stmt, masked_segment, Src};
use super::{emit_fields, sig, Cursor};
use crate::emit::{quote, Out};
use crate::plan::{has_slot, Plan};
use crate::Error;

/// The templates read through a common prefix, and what it holds.
pub(super) struct Prefix {
    /// Indexes into `plan.templates`, in the plan's order.
    pub members: Vec<usize>,
    /// Per member, the indexes in its fields of the fields read before the dispatch.
    pub hoisted: Vec<Vec<usize>>,
    /// Whether the fields are read from the stop-bit mask (every member's segment is
    /// [`masked_segment`]).
    pub masked: bool,
    /// Presence-map bits the prefix takes (after the template id's).
    pub bits: u32,
}

/// What makes two leading fields the same: their name (errors name it), type, operator,
/// initial value and dictionary entry.
#[derive(PartialEq)]
struct Sig<'t> {
    name: &'t str,
    ty: FieldType,
    op: Op,
    initial: Option<&'t Initial>,
    slot: Option<String>,
}

/// A template's leading fields that a prefix may take, with their indexes: mandatory
/// integers read with a statement of their own, mandatory constants of any type (which
/// read nothing) passed over, up to the first field of any other kind.
fn leading<'t>(plan: &Plan<'t>, t: usize, src: Src) -> Vec<(usize, Sig<'t>)> {
    let seg = &plan.segs[plan.templates[t].seg];
    let mut out = Vec::new();
    for (i, f) in seg.fields.iter().enumerate() {
        let Kind::Scalar(s) = &f.instr.kind else {
            break;
        };
        if s.optional {
            break;
        }
        if s.op == Op::Constant {
            continue;
        }
        let FieldType::Int(it) = s.ty else { break };
        let bit = s.uses_bit().then_some("b");
        if int_stmt(plan, s, it, bit, "n", "v", src).is_err() {
            break;
        }
        out.push((i, signature(plan, &f.instr.name, s)));
    }
    out
}

fn signature<'t>(plan: &Plan<'t>, name: &'t str, s: &'t Scalar) -> Sig<'t> {
    Sig {
        name,
        ty: s.ty,
        op: s.op,
        initial: s.initial.as_ref(),
        slot: has_slot(s).then(|| plan.slot(s).ident.clone()),
    }
}

/// The largest group of templates (two at least) whose first leading fields are the same,
/// with the fields they all share; None if no two templates begin alike. Templates that
/// reset the dictionaries are left out.
pub(super) fn find(plan: &Plan) -> Option<Prefix> {
    let mut best: Option<Prefix> = None;
    for masked in [true, false] {
        let src = if masked { Src::Stops } else { Src::Reader };
        let lead: Vec<(usize, Vec<(usize, Sig)>)> = (0..plan.templates.len())
            .filter(|&t| {
                let tpl = &plan.templates[t];
                !tpl.t.reset && masked_segment(&plan.segs[tpl.seg].fields) == masked
            })
            .map(|t| (t, leading(plan, t, src)))
            .filter(|(_, l)| !l.is_empty())
            .collect();
        for (first, (_, l0)) in lead.iter().enumerate() {
            let group: Vec<&(usize, Vec<(usize, Sig)>)> =
                lead.iter().filter(|(_, l)| l[0].1 == l0[0].1).collect();
            // Each group once, from its first template.
            if group.len() < 2 || !std::ptr::eq(group[0], &lead[first]) {
                continue;
            }
            let len = group
                .iter()
                .map(|(_, l)| l.iter().zip(l0).take_while(|(a, b)| a.1 == b.1).count())
                .min()
                .unwrap_or(0);
            let better = best
                .as_ref()
                .is_none_or(|b| (group.len(), len) > (b.members.len(), b.hoisted[0].len()));
            if better {
                let bits = l0[..len]
                    .iter()
                    .filter(|(i, _)| uses_bit(plan, group[0].0, *i))
                    .count() as u32;
                best = Some(Prefix {
                    members: group.iter().map(|(t, _)| *t).collect(),
                    hoisted: group
                        .iter()
                        .map(|(_, l)| l[..len].iter().map(|(i, _)| *i).collect())
                        .collect(),
                    masked,
                    bits,
                });
            }
        }
    }
    best
}

fn uses_bit(plan: &Plan, t: usize, i: usize) -> bool {
    let f = &plan.segs[plan.templates[t].seg].fields[i];
    matches!(&f.instr.kind, Kind::Scalar(s) if s.uses_bit())
}

/// In `message_into`, after the template id: for a member of the group, its prefix read
/// into locals, then the dispatch among the members, each taking the rest of its fields.
pub(super) fn emit_dispatch(plan: &Plan, p: &Prefix, o: &mut Out) -> Result<(), Error> {
    let ids: Vec<String> = p
        .members
        .iter()
        .map(|&t| plan.templates[t].t.id.to_string())
        .collect();
    o.open(format!("if matches!(tid, {}) {{", ids.join(" | ")));
    let first = &plan.segs[plan.templates[p.members[0]].seg];
    let fields: Vec<_> = p.hoisted[0].iter().map(|&i| &first.fields[i]).collect();
    if fields
        .iter()
        .any(|f| matches!(&f.instr.kind, Kind::Scalar(s) if has_slot(s)))
    {
        o.line("let g = self.dict.gen;");
    }
    let src = if p.masked {
        o.line("let mut stops = r.stops();");
        Src::Stops
    } else {
        Src::Reader
    };
    let mut cur = Cursor::At(1);
    for (k, f) in fields.iter().enumerate() {
        let Kind::Scalar(s) = &f.instr.kind else {
            unreachable!("leading fields are scalars")
        };
        let FieldType::Int(it) = s.ty else {
            unreachable!("leading fields are integers")
        };
        let bit = s.uses_bit().then(|| cur.take(o));
        let name = quote(&f.instr.name);
        let stmt = int_stmt(plan, s, it, bit.as_deref(), &name, "v", src)?;
        // `v = EXPR?;`: the expression, its error named with the template on the cold path.
        let expr = stmt
            .strip_prefix("v = ")
            .and_then(|e| e.strip_suffix("?;"))
            .expect("a mandatory integer's statement");
        o.open(format!("let p{k} = match {expr} {{"));
        o.line("Ok(v) => v,");
        o.line("Err(e) => return Err(e).at_template(Self::template_name(tid)),");
        o.close("};");
    }
    o.open("return match tid {");
    for (m, &t) in p.members.iter().enumerate() {
        let tpl = &plan.templates[t];
        let seg = &plan.segs[tpl.seg];
        let name = quote(&tpl.t.name);
        let arm = if m + 1 == p.members.len() {
            "_".to_string()
        } else {
            tpl.t.id.to_string()
        };
        o.open(format!("{arm} => {{"));
        o.line(format!("let o = &mut out.{};", tpl.member));
        for (k, &i) in p.hoisted[m].iter().enumerate() {
            o.line(format!("o.{} = p{k};", seg.fields[i].ident));
        }
        let stops = if p.masked { ", stops" } else { "" };
        o.line(format!(
            "let used = self.rx_{}(r, &pm, o{stops}, 0).at_template({name})?;",
            seg.fn_name
        ));
        o.line(format!(
            "Self::check_pmap(r, &pm, used, at).at_template({name})?;"
        ));
        o.line(format!("Ok(MessageKind::{})", tpl.variant));
        o.close("}");
    }
    o.close("};");
    o.close("}");
    Ok(())
}

/// Each member's function for the fields after the prefix: `rx_<template>`, which goes on
/// with the stop-bit mask (when masked) and the presence-map bit where the prefix left them.
pub(super) fn emit_rest(plan: &Plan, p: &Prefix, o: &mut Out) -> Result<(), Error> {
    for (m, &t) in p.members.iter().enumerate() {
        let tpl = &plan.templates[t];
        let seg = &plan.segs[tpl.seg];
        let (fn_lt, reader) = sig(plan, tpl.seg);
        let stops = if p.masked {
            ", mut stops: fp::Stops<'_>"
        } else {
            ""
        };
        o.line("#[inline(always)]");
        o.open(format!(
            "fn rx_{}{fn_lt}(&mut self, r: &mut {reader}, pm: &fp::Presence, out: &mut {}{}{stops}, depth: u32) -> fp::Res<u32> {{",
            seg.fn_name,
            seg.type_name,
            plan.lt(tpl.seg)
        ));
        let rest: Vec<_> = seg
            .fields
            .iter()
            .enumerate()
            .filter(|(i, _)| !p.hoisted[m].contains(i))
            .map(|(_, f)| f)
            .collect();
        let cur = emit_fields(plan, &rest, 1 + p.bits, p.masked, true, o)?;
        o.line(format!("Ok({})", cur.end()));
        o.close("}");
        o.line("");
    }
    Ok(())
}

/// `template_name(tid)`: a template's name by id, for errors of the prefix, whose template
/// is known only by id there.
pub(super) fn emit_names(plan: &Plan, o: &mut Out) {
    o.line("#[cold]");
    o.open("fn template_name(tid: u32) -> &'static str {");
    o.open("match tid {");
    for t in &plan.templates {
        o.line(format!("{} => {},", t.t.id, quote(&t.t.name)));
    }
    o.line("_ => \"\",");
    o.close("}");
    o.close("}");
    o.line("");
}
