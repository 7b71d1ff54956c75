//! The encoder: the decoder's mirror, per template, sequence and group a function that writes
//! each field with the operator's rule, giving the interpreter's canonical bytes.

use fastfeed_codec::template::{FieldType, Initial, IntType, Kind, Op, Scalar, Segment};

use crate::emit::{
    bytes_init, bytes_lit, decimal_init, decimal_lit, init_bytes, int_init, int_lit, int_ty, quote,
    Out,
};
use crate::plan::{borrowed, has_slot, scalars, Field, Plan, Role};
use crate::Error;

/// Presence-map words a segment needs (a message's template id bit included).
fn words(seg: &Segment, message: bool) -> u32 {
    (seg.max_bits + message as u32).div_ceil(64).max(1)
}

/// Bytes reserved for a segment's presence map before its fields are written.
fn reserve(seg: &Segment, message: bool) -> u32 {
    if message {
        (seg.max_bits + 1).div_ceil(7)
    } else if seg.has_pmap {
        seg.max_bits.div_ceil(7).max(1)
    } else {
        0
    }
}

pub(crate) fn emit(plan: &Plan, o: &mut Out) -> Result<(), Error> {
    let mlt = if plan.message_borrows { "<'_>" } else { "" };
    o.line("/// Encodes the generated structs, keeping dictionaries in step with a decoder: the");
    o.line("/// canonical (shortest) encoding, the interpreter's bytes.");
    o.line("#[derive(Debug, Clone, Default)]");
    o.open("pub struct Encoder {");
    o.line("dict: Dict,");
    o.line("last_tid: Option<u32>,");
    o.close("}");
    o.line("");
    o.line("#[allow(unused_variables, clippy::ptr_arg)]");
    o.open("impl Encoder {");
    o.open("pub fn new() -> Self {");
    o.line("Self::default()");
    o.close("}");
    o.line("");
    o.line("/// Every dictionary entry undefined; do it where the decoder will.");
    o.open("pub fn reset(&mut self) {");
    o.line("self.dict.reset();");
    o.line("self.last_tid = None;");
    o.close("}");
    o.line("");
    o.line("/// Appends the encoding of `msg` to `out`. On error `out` is left as it was, but the");
    o.line("/// dictionaries may have moved on: reset before encoding more.");
    o.open(format!(
        "pub fn encode(&mut self, msg: &Message{mlt}, out: &mut Vec<u8>) -> Result<(), fp::CodecError> {{"
    ));
    o.line("let start = out.len();");
    o.line("let r = self.any(msg, out, true);");
    o.open("if r.is_err() {");
    o.line("out.truncate(start);");
    o.close("}");
    o.line("r.map_err(|e| *e)");
    o.close("}");
    o.line("");
    for t in &plan.templates {
        let seg = &plan.segs[t.seg];
        let anon = if seg.borrows { "<'_>" } else { "" };
        o.line(format!(
            "/// Appends the encoding of a `{}` message.",
            t.t.name.replace(['\n', '\r'], " ")
        ));
        o.open(format!(
            "pub fn encode_{}(&mut self, m: &{}{anon}, out: &mut Vec<u8>) -> Result<(), fp::CodecError> {{",
            t.member, seg.type_name
        ));
        o.line("let start = out.len();");
        o.line(format!("let r = self.wt_{}(m, out, true);", seg.fn_name));
        o.open("if r.is_err() {");
        o.line("out.truncate(start);");
        o.close("}");
        o.line("r.map_err(|e| *e)");
        o.close("}");
        o.line("");
    }
    o.open(format!(
        "fn any(&mut self, msg: &Message{mlt}, out: &mut Vec<u8>, top: bool) -> fp::Res<()> {{"
    ));
    o.open("match msg {");
    for t in &plan.templates {
        o.line(format!(
            "Message::{}(m) => self.wt_{}(m, out, top),",
            t.variant, plan.segs[t.seg].fn_name
        ));
    }
    o.close("}");
    o.close("}");
    o.line("");
    for t in &plan.templates {
        let seg = &plan.segs[t.seg];
        let anon = if seg.borrows { "<'_>" } else { "" };
        let w = words(seg.seg, true);
        let res = reserve(seg.seg, true);
        o.open(format!(
            "fn wt_{}(&mut self, m: &{}{anon}, out: &mut Vec<u8>, top: bool) -> fp::Res<()> {{",
            seg.fn_name, seg.type_name
        ));
        o.line(format!("let send_tid = self.last_tid != Some({});", t.t.id));
        o.line(format!("self.last_tid = Some({});", t.t.id));
        if t.t.reset {
            // The next message sends its template id: after a reset a decoder may hold none.
            o.open("if top {");
            o.line("self.dict.reset();");
            o.line("self.last_tid = None;");
            o.close("}");
        }
        o.line("let at = out.len();");
        o.line(format!("out.resize(at + {res}, 0);"));
        o.line(format!("let mut bits = fp::put::Bits::<{w}>::default();"));
        o.line("bits.push(send_tid);");
        o.open("if send_tid {");
        o.line(format!("fp::put::put_u64(out, {});", t.t.id));
        o.close("}");
        o.line(format!(
            "self.wr_{}(m, out, &mut bits).at_template({})?;",
            seg.fn_name,
            quote(&t.t.name)
        ));
        o.line(format!("bits.patch(out, at, {res});"));
        o.line("Ok(())");
        o.close("}");
        o.line("");
    }
    for i in 0..plan.segs.len() {
        emit_seg(plan, i, o)?;
    }
    o.close("}");
    o.line("");
    Ok(())
}

fn emit_seg(plan: &Plan, i: usize, o: &mut Out) -> Result<(), Error> {
    let seg = &plan.segs[i];
    let anon = if seg.borrows { "<'_>" } else { "" };
    let message = seg.role == Role::Message;
    if message {
        o.open(format!(
            "fn wr_{}(&mut self, m: &{}{anon}, out: &mut Vec<u8>, bits: &mut fp::put::Bits<{}>) -> fp::Res<()> {{",
            seg.fn_name,
            seg.type_name,
            words(seg.seg, true)
        ));
    } else {
        o.open(format!(
            "fn wr_{}(&mut self, m: &{}{anon}, out: &mut Vec<u8>) -> fp::Res<()> {{",
            seg.fn_name, seg.type_name
        ));
        if seg.seg.has_pmap {
            o.line("let at = out.len();");
            o.line(format!("out.resize(at + {}, 0);", reserve(seg.seg, false)));
            o.line(format!(
                "let mut bits = fp::put::Bits::<{}>::default();",
                words(seg.seg, false)
            ));
        }
    }
    let b = "bits";
    if seg
        .fields
        .iter()
        .any(|f| scalars(f.instr).into_iter().any(has_slot))
    {
        o.line("let g = self.dict.gen;");
    }
    for f in &seg.fields {
        o.open("{");
        field(plan, f, b, o)?;
        o.close("}");
    }
    if !message && seg.seg.has_pmap {
        o.line(format!("bits.patch(out, at, {});", reserve(seg.seg, false)));
    }
    o.line("Ok(())");
    o.close("}");
    o.line("");
    Ok(())
}

fn unsupported<T>(what: String) -> Result<T, Error> {
    Err(Error::Unsupported(what))
}

/// Statements encoding integer scalar `s` whose value is `v` (`T` if mandatory, else
/// `Option<T>`).
fn int_field(
    plan: &Plan,
    s: &Scalar,
    it: IntType,
    v: &str,
    bits: &str,
    name: &str,
    o: &mut Out,
) -> Result<(), Error> {
    let t = int_ty(it);
    let init = int_init(s, it);
    let lit = match &s.initial {
        Some(Initial::Int(x)) => Some(int_lit(it, *x)),
        _ => None,
    };
    let opt = s.optional;
    let vo = if opt {
        v.to_string()
    } else {
        format!("Some({v})")
    };
    let put = if opt {
        format!("fp::put::nullable_int::<{t}>(out, {v});")
    } else {
        format!("fp::put::int::<{t}>(out, {v});")
    };
    let mismatch = format!("return fp::fail(fp::ErrorKind::ConstantMismatch, 0).at_field({name});");
    match s.op {
        Op::None => o.line(put),
        Op::Constant => {
            let lit = lit.ok_or_else(|| Error::Unsupported(format!("{name}: no value")))?;
            if opt {
                o.open(format!("if {v}.is_some_and(|v| v != {lit}) {{"));
                o.line(mismatch);
                o.close("}");
                o.line(format!("{bits}.push({v}.is_some());"));
            } else {
                o.open(format!("if {v} != {lit} {{"));
                o.line(mismatch);
                o.close("}");
            }
        }
        Op::Default => {
            if init == "None" {
                o.line(format!("let omit = {vo}.is_none();"));
            } else {
                o.line(format!("let omit = {vo} == {init};"));
            }
            o.line(format!("{bits}.push(!omit);"));
            o.open("if !omit {");
            o.line(put);
            o.close("}");
        }
        Op::Copy | Op::Increment => {
            let incr = s.op == Op::Increment;
            o.line(format!(
                "{bits}.push(fp::put::copy::<{t}>(out, {incr}, {opt}, g, &mut self.dict.{}, {vo}, {init}));",
                plan.slot(s).ident
            ));
        }
        Op::Delta => o.line(format!(
            "fp::put::delta::<{t}>(out, {opt}, g, &mut self.dict.{}, {vo}, {init}).at_field({name})?;",
            plan.slot(s).ident
        )),
        Op::Tail => return unsupported(format!("field {name}: tail on an integer")),
    }
    Ok(())
}

fn field(plan: &Plan, f: &Field, bits: &str, o: &mut Out) -> Result<(), Error> {
    let name = quote(&f.instr.name);
    let me = format!("m.{}", f.ident);
    let opt = f.instr.optional;
    let mismatch = format!("return fp::fail(fp::ErrorKind::ConstantMismatch, 0).at_field({name});");
    match &f.instr.kind {
        Kind::Scalar(s) => match s.ty {
            FieldType::Int(it) => int_field(plan, s, it, &me, bits, &name, o)?,
            FieldType::Decimal => {
                if opt {
                    o.line(format!(
                        "let v = {me}.map(fp::put::check_decimal).transpose().at_field({name})?;"
                    ));
                } else {
                    o.line(format!(
                        "let v = Some(fp::put::check_decimal({me}).at_field({name})?);"
                    ));
                }
                let init = decimal_init(s);
                let slot = || plan.slot(s).ident.clone();
                match s.op {
                    Op::None => o.line(format!("fp::put::decimal(out, v, {opt});")),
                    Op::Constant => {
                        let Some(Initial::Decimal { exponent, mantissa }) = &s.initial else {
                            return unsupported(format!("{name}: no value"));
                        };
                        let lit = decimal_lit(*exponent, *mantissa);
                        o.open(format!("if v.is_some_and(|v| v != {lit}) {{"));
                        o.line(mismatch);
                        o.close("}");
                        if opt {
                            o.line(format!("{bits}.push(v.is_some());"));
                        }
                    }
                    Op::Default => {
                        if init == "None" {
                            o.line("let omit = v.is_none();");
                        } else {
                            o.line(format!("let omit = v == {init};"));
                        }
                        o.line(format!("{bits}.push(!omit);"));
                        o.open("if !omit {");
                        o.line(format!("fp::put::decimal(out, v, {opt});"));
                        o.close("}");
                    }
                    Op::Copy => o.line(format!(
                        "{bits}.push(fp::put::decimal_copy(out, {opt}, g, &mut self.dict.{}, v, {init}));",
                        slot()
                    )),
                    Op::Delta => o.line(format!(
                        "fp::put::decimal_delta(out, {opt}, g, &mut self.dict.{}, v, {init}).at_field({name})?;",
                        slot()
                    )),
                    op => return unsupported(format!("field {name}: decimal operator {op:?}")),
                }
            }
            ty if borrowed(s) => borrowed_string(s, ty, &me, bits, &name, o)?,
            ty => {
                let ascii = ty == FieldType::Ascii;
                let v = match (opt, ty) {
                    (false, FieldType::Bytes) => format!("Some({me}.as_slice())"),
                    (false, _) => format!("Some({me}.as_bytes())"),
                    (true, FieldType::Ascii) => {
                        format!("{me}.as_ref().map(fp::AsciiBuf::as_bytes)")
                    }
                    (true, FieldType::Unicode) => format!("{me}.as_deref().map(str::as_bytes)"),
                    (true, _) => format!("{me}.as_deref()"),
                };
                let init = bytes_init(s);
                let slot = &plan.slot(s).ident;
                match s.op {
                    Op::Copy | Op::Tail => o.line(format!(
                        "{bits}.push(fp::put::string_copy(out, {ascii}, {}, {opt}, g, &mut self.dict.{slot}, {v}, {init}).at_field({name})?);",
                        s.op == Op::Tail
                    )),
                    Op::Delta => o.line(format!(
                        "fp::put::string_delta(out, {ascii}, {opt}, g, &mut self.dict.{slot}, {v}, {init}).at_field({name})?;"
                    )),
                    op => return unsupported(format!("field {name}: string operator {op:?}")),
                }
            }
        },
        Kind::SplitDecimal { exponent, mantissa } => {
            if opt {
                o.line(format!(
                    "let d = {me}.map(fp::put::check_decimal).transpose().at_field({name})?;"
                ));
                o.line("let e = d.map(|d| d.exponent);");
                int_field(plan, exponent, IntType::I32, "e", bits, &name, o)?;
                o.open("if let Some(d) = d {");
                int_field(plan, mantissa, IntType::I64, "d.mantissa", bits, &name, o)?;
                o.close("}");
            } else {
                o.line(format!(
                    "let d = fp::put::check_decimal({me}).at_field({name})?;"
                ));
                int_field(plan, exponent, IntType::I32, "d.exponent", bits, &name, o)?;
                int_field(plan, mantissa, IntType::I64, "d.mantissa", bits, &name, o)?;
            }
        }
        Kind::Sequence { length, .. } => {
            let c = &plan.segs[f.child.expect("element struct")].fn_name;
            let overflow = format!("fp::fail(fp::ErrorKind::IntegerOverflow, 0).at_field({name})");
            if opt {
                o.line(format!("let items = {me}.as_ref();"));
                o.line(format!(
                    "let n = items.map(|i| u32::try_from(i.len())).transpose().or_else(|_| {overflow})?;"
                ));
                int_field(plan, length, IntType::U32, "n", bits, &name, o)?;
                o.open("for e in items.into_iter().flatten() {");
            } else {
                o.line(format!("let items = &{me};"));
                o.line(format!(
                    "let n = u32::try_from(items.len()).or_else(|_| {overflow})?;"
                ));
                int_field(plan, length, IntType::U32, "n", bits, &name, o)?;
                o.open("for e in items {");
            }
            o.line(format!("self.wr_{c}(e, out).at_field({name})?;"));
            o.close("}");
        }
        Kind::Group(_) => {
            let c = &plan.segs[f.child.expect("group struct")].fn_name;
            if opt {
                o.open(format!("match &{me} {{"));
                o.line(format!("None => {bits}.push(false),"));
                o.open("Some(g) => {");
                o.line(format!("{bits}.push(true);"));
                o.line(format!("self.wr_{c}(g, out).at_field({name})?;"));
                o.close("}");
                o.close("}");
            } else {
                o.line(format!("self.wr_{c}(&{me}, out).at_field({name})?;"));
            }
        }
        Kind::DynamicRef => {
            o.open(format!("match &{me} {{"));
            o.line(format!(
                "Some(msg) => self.any(msg, out, false).at_field({name})?,"
            ));
            o.line(format!(
                "None => return fp::fail(fp::ErrorKind::TypeMismatch, 0).at_field({name}),"
            ));
            o.close("}");
        }
    }
    Ok(())
}

/// A string under none, constant or default (borrowed types).
fn borrowed_string(
    s: &Scalar,
    ty: FieldType,
    me: &str,
    bits: &str,
    name: &str,
    o: &mut Out,
) -> Result<(), Error> {
    let opt = s.optional;
    let v = if opt {
        me.to_string()
    } else {
        format!("Some({me})")
    };
    let put = match ty {
        FieldType::Ascii => format!("fp::put::ascii(out, {v}, {opt});"),
        FieldType::Unicode => {
            if opt {
                format!("fp::put::bytes(out, {me}.map(str::as_bytes), {opt});")
            } else {
                format!("fp::put::bytes(out, Some({me}.as_bytes()), {opt});")
            }
        }
        _ => format!("fp::put::bytes(out, {v}, {opt});"),
    };
    // Whether a value `x` equals (or differs from) plain bytes literal `b`.
    let eq = |x: &str, b: &[u8]| match ty {
        FieldType::Ascii => format!("{x}.eq_bytes({})", bytes_lit(b)),
        FieldType::Unicode => format!("{x}.as_bytes() == {}", bytes_lit(b)),
        _ => format!("{x} == {}", bytes_lit(b)),
    };
    let ne = |x: &str, b: &[u8]| match ty {
        FieldType::Ascii => format!("!{x}.eq_bytes({})", bytes_lit(b)),
        FieldType::Unicode => format!("{x}.as_bytes() != {}", bytes_lit(b)),
        _ => format!("{x} != {}", bytes_lit(b)),
    };
    let mismatch = format!("return fp::fail(fp::ErrorKind::ConstantMismatch, 0).at_field({name});");
    match s.op {
        Op::None => o.line(put),
        Op::Constant => {
            let b = init_bytes(s).ok_or_else(|| Error::Unsupported(format!("{name}: no value")))?;
            if opt {
                o.open(format!("if {me}.is_some_and(|v| {}) {{", ne("v", b)));
            } else {
                o.open(format!("if {} {{", ne(me, b)));
            }
            o.line(mismatch);
            o.close("}");
            if opt {
                o.line(format!("{bits}.push({me}.is_some());"));
            }
        }
        Op::Default => {
            let omit = match (init_bytes(s), opt) {
                (Some(b), true) => format!("{me}.is_some_and(|v| {})", eq("v", b)),
                (Some(b), false) => eq(me, b),
                (None, true) => format!("{me}.is_none()"),
                (None, false) => {
                    return unsupported(format!("{name}: mandatory default without a value"))
                }
            };
            o.line(format!("let omit = {omit};"));
            o.line(format!("{bits}.push(!omit);"));
            o.open("if !omit {");
            o.line(put);
            o.close("}");
        }
        op => return unsupported(format!("field {name}: string operator {op:?}")),
    }
    Ok(())
}
