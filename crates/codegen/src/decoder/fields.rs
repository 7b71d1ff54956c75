//! One field's decoding statements: integers, decimals (one field or split), strings and
//! byte vectors, each with its operator, read at the segment's cursor.

use fastfeed_codec::template::{FieldType, Initial, IntType, Kind, Op, Scalar};

use super::Cursor;
use crate::emit::{
    bytes_init, decimal_init, decimal_lit, init_bytes, int_init, int_lit, int_ty, quote,
    string_lit, Out,
};
use crate::plan::{borrowed, Field, Plan};
use crate::Error;

pub(super) fn unsupported<T>(what: String) -> Result<T, Error> {
    Err(Error::Unsupported(what))
}

/// Where a field's entities are read from: the reader `r`, or the stop-bit mask `stops` of a
/// [`masked_segment`], whose primitives carry an `_s`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Src {
    Reader,
    Stops,
}

impl Src {
    /// The primitive's first argument and its name's suffix.
    fn parts(self) -> (&'static str, &'static str) {
        match self {
            Src::Reader => ("r", ""),
            Src::Stops => ("&mut stops", "_s"),
        }
    }
}

/// The statement that decodes integer scalar `s` into the place `to` (`T` if mandatory,
/// `Option<T>` if optional). Optional values are written through `&mut`: a returned
/// `Result<Option<T>>` built on several paths goes through memory and stalls when read back.
pub(super) fn int_stmt(
    plan: &Plan,
    s: &Scalar,
    it: IntType,
    bit: Option<&str>,
    name: &str,
    to: &str,
    src: Src,
) -> Result<String, Error> {
    let (a, x) = src.parts();
    let t = int_ty(it);
    let init = int_init(s, it);
    let v = match &s.initial {
        Some(Initial::Int(v)) => Some(int_lit(it, *v)),
        _ => None,
    };
    let bit = || bit.ok_or_else(|| Error::Unsupported(format!("field {name}: no presence bit")));
    let slot = || &plan.slot(s).ident;
    let opt = s.optional;
    Ok(match (s.op, v) {
        (Op::None, _) if opt => {
            format!("fp::nullable_int_to{x}::<{t}>({a}, &mut {to}).at_field({name})?;")
        }
        (Op::None, _) => format!("{to} = fp::int{x}::<{t}>({a}).at_field({name})?;"),
        (Op::Constant, Some(v)) if opt => format!("{to} = {}.then_some({v});", bit()?),
        (Op::Constant, Some(v)) => format!("{to} = {v};"),
        (Op::Default, _) if opt => format!(
            "fp::default_opt{x}::<{t}>({a}, {}, {init}, &mut {to}).at_field({name})?;",
            bit()?
        ),
        (Op::Default, Some(v)) => {
            format!(
                "{to} = fp::default{x}::<{t}>({a}, {}, {v}).at_field({name})?;",
                bit()?
            )
        }
        (Op::Copy | Op::Increment, _) => {
            let op = if s.op == Op::Copy {
                "copy"
            } else {
                "increment"
            };
            if opt {
                format!(
                    "fp::{op}_opt{x}::<{t}>({a}, {}, g, &mut self.dict.{}, {init}, &mut {to}).at_field({name})?;",
                    bit()?,
                    slot()
                )
            } else {
                format!(
                    "{to} = fp::{op}{x}::<{t}>({a}, {}, g, &mut self.dict.{}, {init}).at_field({name})?;",
                    bit()?,
                    slot()
                )
            }
        }
        (Op::Delta, _) if opt => format!(
            "fp::delta_opt::<{t}>(r, g, &mut self.dict.{}, {init}, &mut {to}).at_field({name})?;",
            slot()
        ),
        (Op::Delta, _) => format!(
            "{to} = fp::delta::<{t}>(r, g, &mut self.dict.{}, {init}).at_field({name})?;",
            slot()
        ),
        _ => return unsupported(format!("field {name}: integer operator {:?}", s.op)),
    })
}

/// Whether scalar `s` can be read with the stop-bit mask ([`Src::Stops`]): an integer
/// whose operator reads at most one entity, or a decimal without operator.
pub(super) fn maskable(s: &Scalar) -> bool {
    let initial = matches!(s.initial, Some(Initial::Int(_)));
    match s.ty {
        FieldType::Int(_) => match s.op {
            Op::None | Op::Copy | Op::Increment | Op::Constant => true,
            Op::Default => initial || s.optional,
            _ => false,
        },
        // Exponent and mantissa, two entities.
        FieldType::Decimal => s.op == Op::None,
        _ => false,
    }
}

/// The statement that decodes decimal scalar `s` into the place `to`.
pub(super) fn decimal_stmt(
    plan: &Plan,
    s: &Scalar,
    bit: Option<&str>,
    name: &str,
    to: &str,
    src: Src,
) -> Result<String, Error> {
    let (a, x) = src.parts();
    let init = decimal_init(s);
    let v = match &s.initial {
        Some(Initial::Decimal { exponent, mantissa }) => Some(decimal_lit(*exponent, *mantissa)),
        _ => None,
    };
    let bit = || bit.ok_or_else(|| Error::Unsupported(format!("field {name}: no presence bit")));
    let slot = || &plan.slot(s).ident;
    let opt = s.optional;
    let read = if opt {
        format!("fp::nullable_decimal_to{x}({a}, &mut {to}).at_field({name})?;")
    } else {
        format!("{to} = fp::decimal{x}({a}).at_field({name})?;")
    };
    Ok(match (s.op, v) {
        (Op::None, _) => read,
        (Op::Constant, Some(v)) if opt => format!("{to} = {}.then_some({v});", bit()?),
        (Op::Constant, Some(v)) => format!("{to} = {v};"),
        (Op::Default, _) if opt => {
            format!("if {} {{ {read} }} else {{ {to} = {init}; }}", bit()?)
        }
        (Op::Default, Some(v)) => format!("if {} {{ {read} }} else {{ {to} = {v}; }}", bit()?),
        (Op::Copy, _) if opt => format!(
            "fp::decimal_copy_opt(r, {}, g, &mut self.dict.{}, {init}, &mut {to}).at_field({name})?;",
            bit()?,
            slot()
        ),
        (Op::Copy, _) => format!(
            "{to} = fp::decimal_copy(r, {}, g, &mut self.dict.{}, {init}).at_field({name})?;",
            bit()?,
            slot()
        ),
        (Op::Delta, _) if opt => format!(
            "fp::decimal_delta_opt(r, g, &mut self.dict.{}, {init}, &mut {to}).at_field({name})?;",
            slot()
        ),
        (Op::Delta, _) => format!(
            "{to} = fp::decimal_delta(r, g, &mut self.dict.{}, {init}).at_field({name})?;",
            slot()
        ),
        _ => return unsupported(format!("field {name}: decimal operator {:?}", s.op)),
    })
}

/// Whether a segment's fields are read with the stop-bit mask: all of them [`maskable`], at
/// least two on the wire. Runs between other fields lost more than they gained: a mask per
/// run, and one-byte values (NULLs, small numbers) the general reader takes in a few
/// instructions (BENCHMARKS.md, "Stop-bit masks").
pub(super) fn masked_segment(fields: &[Field]) -> bool {
    let mut read = 0;
    let all = fields.iter().all(|f| match &f.instr.kind {
        Kind::Scalar(s) if maskable(s) => {
            read += (s.op != Op::Constant) as usize;
            true
        }
        _ => false,
    });
    all && read >= 2
}

/// One field's statements; a [`masked_segment`]'s scalars read from `Src::Stops`.
pub(super) fn field(
    plan: &Plan,
    f: &Field,
    cur: &mut Cursor,
    o: &mut Out,
    src: Src,
) -> Result<(), Error> {
    let name = quote(&f.instr.name);
    let id = &f.ident;
    match &f.instr.kind {
        Kind::Scalar(s) => {
            let bit = if s.uses_bit() {
                Some(cur.take(o))
            } else {
                None
            };
            match s.ty {
                FieldType::Int(it) => {
                    let to = format!("out.{id}");
                    o.line(int_stmt(plan, s, it, bit.as_deref(), &name, &to, src)?);
                }
                FieldType::Decimal => {
                    let to = format!("out.{id}");
                    o.line(decimal_stmt(plan, s, bit.as_deref(), &name, &to, src)?);
                }
                _ if borrowed(s) => borrowed_string(s, bit.as_deref(), id, &name, o)?,
                _ => owned_string(plan, s, bit.as_deref(), id, &name, o)?,
            }
        }
        Kind::SplitDecimal { exponent, mantissa } => {
            split_decimal(plan, f, exponent, mantissa, cur, o)?;
        }
        Kind::Sequence { length, .. } => {
            let bit = if length.uses_bit() {
                cur.take(o)
            } else {
                "false".into()
            };
            let c = f.child.expect("element struct");
            o.line(format!(
                "self.rs_{}(r, {bit}, &mut out.{id}, depth).at_field({name})?;",
                plan.segs[c].fn_name
            ));
        }
        Kind::Group(_) => {
            let c = &plan.segs[f.child.expect("group struct")].fn_name;
            if f.instr.optional {
                let bit = cur.take(o);
                o.open(format!("if {bit} {{"));
                o.line(format!(
                    "let v = out.{id}.get_or_insert_with(Default::default);"
                ));
                o.line(format!("self.rd_{c}(r, v, depth).at_field({name})?;"));
                o.mid("} else {");
                o.line(format!("out.{id} = None;"));
                o.close("}");
            } else {
                o.line(format!(
                    "self.rd_{c}(r, &mut out.{id}, depth).at_field({name})?;"
                ));
            }
        }
        Kind::DynamicRef => {
            o.open("if depth >= self.opts.max_depth {");
            o.line(format!(
                "return fp::fail(fp::ErrorKind::TooDeep(self.opts.max_depth), r.pos).at_field({name});"
            ));
            o.close("}");
            o.line(format!(
                "out.{id} = Some(Box::new(self.any(r, depth + 1).at_field({name})?));"
            ));
        }
    }
    Ok(())
}

pub(super) fn split_decimal(
    plan: &Plan,
    f: &Field,
    exponent: &Scalar,
    mantissa: &Scalar,
    cur: &mut Cursor,
    o: &mut Out,
) -> Result<(), Error> {
    let name = quote(&f.instr.name);
    let id = &f.ident;
    let ebit = if exponent.uses_bit() {
        Some(cur.take(o))
    } else {
        None
    };
    let e = int_stmt(
        plan,
        exponent,
        IntType::I32,
        ebit.as_deref(),
        &name,
        "e",
        Src::Reader,
    )?;
    // The mantissa's bit exists only when the exponent is present: from here on bits are
    // counted at run time.
    let dynamic = f.instr.optional && mantissa.uses_bit();
    if dynamic {
        if let Cursor::At(k) = *cur {
            o.line(format!("let mut kd: u32 = {k};"));
        }
        *cur = Cursor::Dynamic;
    }
    let mantissa_stmt = |o: &mut Out, cur: &mut Cursor| -> Result<String, Error> {
        let mbit = if mantissa.uses_bit() {
            Some(cur.take(o))
        } else {
            None
        };
        int_stmt(
            plan,
            mantissa,
            IntType::I64,
            mbit.as_deref(),
            &name,
            "mantissa",
            Src::Reader,
        )
    };
    o.open("{");
    o.line("let at = r.pos;");
    if f.instr.optional {
        o.line("let mut e: Option<i32> = None;");
        o.line(e);
        o.open("match e {");
        o.open("Some(e) => {");
        o.line(format!(
            "let exponent = fp::check_exponent(i64::from(e), at).at_field({name})?;"
        ));
        let mut inner = *cur;
        o.line("let mantissa: i64;");
        let m = mantissa_stmt(o, &mut inner)?;
        o.line(m);
        o.line(format!(
            "out.{id} = Some(fp::Decimal {{ exponent, mantissa }});"
        ));
        o.close("}");
        o.line(format!("None => out.{id} = None,"));
        o.close("}");
        if !dynamic {
            *cur = inner;
        }
    } else {
        o.line("let e: i32;");
        o.line(e);
        o.line(format!(
            "let exponent = fp::check_exponent(i64::from(e), at).at_field({name})?;"
        ));
        o.line("let mantissa: i64;");
        let m = mantissa_stmt(o, cur)?;
        o.line(m);
        o.line(format!("out.{id} = fp::Decimal {{ exponent, mantissa }};"));
    }
    o.close("}");
    Ok(())
}

/// The primitives that read a string of this type: mandatory (returning it) and nullable
/// (into a place).
pub(super) fn reads(ty: FieldType) -> (&'static str, &'static str) {
    match ty {
        FieldType::Ascii => ("fp::ascii", "fp::nullable_ascii_to"),
        FieldType::Unicode => ("fp::unicode", "fp::nullable_unicode_to"),
        _ => ("fp::bytes", "fp::nullable_bytes_to"),
    }
}

/// A string under none, constant or default: borrowed from the input or the template.
pub(super) fn borrowed_string(
    s: &Scalar,
    bit: Option<&str>,
    id: &str,
    name: &str,
    o: &mut Out,
) -> Result<(), Error> {
    let (m, n) = reads(s.ty);
    // A statement reading the field from the stream into `out.<id>`.
    let read = if s.optional {
        format!("{n}(r, &mut out.{id}).at_field({name})?;")
    } else {
        format!("out.{id} = {m}(r).at_field({name})?;")
    };
    let bit = || bit.ok_or_else(|| Error::Unsupported(format!("field {name}: no presence bit")));
    // The template's value, checked against the length limit as a decoded one would be.
    let init = |o: &mut Out, wrap: bool| match init_bytes(s) {
        Some(b) => {
            if !b.is_empty() {
                o.line(format!(
                    "fp::check_len({}, r, r.pos).at_field({name})?;",
                    b.len()
                ));
            }
            let v = string_lit(s.ty, b);
            o.line(if wrap { format!("Some({v})") } else { v });
        }
        None => o.line("None"),
    };
    match s.op {
        Op::None => o.line(read),
        Op::Constant if !s.optional => {
            let b = init_bytes(s).ok_or_else(|| Error::Unsupported(format!("{name}: no value")))?;
            if !b.is_empty() {
                o.line(format!(
                    "fp::check_len({}, r, r.pos).at_field({name})?;",
                    b.len()
                ));
            }
            o.line(format!("out.{id} = {};", string_lit(s.ty, b)));
        }
        Op::Constant => {
            o.open(format!("out.{id} = if {} {{", bit()?));
            init(o, true);
            o.mid("} else {");
            o.line("None");
            o.close("};");
        }
        _ => {
            o.open(format!("if {} {{", bit()?));
            o.line(read);
            o.mid("} else {");
            o.open(format!("out.{id} = {{"));
            init(o, s.optional);
            o.close("};");
            o.close("}");
        }
    }
    Ok(())
}

/// A string under copy, tail or delta: the dictionary keeps it, the field gets a copy.
pub(super) fn owned_string(
    plan: &Plan,
    s: &Scalar,
    bit: Option<&str>,
    id: &str,
    name: &str,
    o: &mut Out,
) -> Result<(), Error> {
    let ascii = s.ty == FieldType::Ascii;
    let opt = s.optional;
    let slot = &plan.slot(s).ident;
    let init = bytes_init(s);
    let bit = || bit.ok_or_else(|| Error::Unsupported(format!("field {name}: no presence bit")));
    let call = match s.op {
        Op::Copy => format!(
            "fp::string_copy(r, {ascii}, {opt}, {}, g, &mut self.dict.{slot}, {init})",
            bit()?
        ),
        Op::Tail => format!(
            "fp::string_tail(r, {ascii}, {opt}, {}, g, &mut self.dict.{slot}, {init}, &mut self.scratch)",
            bit()?
        ),
        Op::Delta => format!(
            "fp::string_delta(r, {ascii}, {opt}, g, &mut self.dict.{slot}, {init}, &mut self.scratch)"
        ),
        op => return unsupported(format!("field {name}: string operator {op:?}")),
    };
    o.open("{");
    o.line("let at = r.pos;");
    o.line(format!("let v = {call}.at_field({name})?;"));
    let set = |o: &mut Out| {
        o.line(format!("fp::check_len(v.len(), r, at).at_field({name})?;"));
        match s.ty {
            FieldType::Ascii => o.line("s.set(v);"),
            FieldType::Unicode => {
                o.line(format!("let v = fp::utf8(v, at).at_field({name})?;"));
                o.line("s.clear();");
                o.line("s.push_str(v);");
            }
            _ => {
                o.line("s.clear();");
                o.line("s.extend_from_slice(v);");
            }
        }
    };
    if opt {
        o.open("match v {");
        o.open("Some(v) => {");
        o.line(format!(
            "let s = out.{id}.get_or_insert_with(Default::default);"
        ));
        set(o);
        o.close("}");
        o.line(format!("None => out.{id} = None,"));
        o.close("}");
    } else {
        o.line("let v = v.unwrap_or_default();");
        o.line(format!("let s = &mut out.{id};"));
        set(o);
    }
    o.close("}");
    Ok(())
}
