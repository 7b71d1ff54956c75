//! The decoder: per template, sequence and group a function that reads each field with the
//! primitive its type and operator call for, presence-map bits known at generation time.

use fastfeed_codec::template::{FieldType, IntType, Kind, Op};

use crate::emit::{quote, Out};
use crate::plan::{has_slot, scalars, Field, Plan, Role, SlotKind};
use crate::Error;

mod fields;
mod prefix;

use fields::{field, int_stmt, masked_segment, Src};

/// Where the next presence-map bit is: known, or in the variable `kd` once a field's bits
/// depend on its value (an optional decimal whose mantissa has a bit of its own).
#[derive(Clone, Copy)]
enum Cursor {
    At(u32),
    Dynamic,
}

impl Cursor {
    /// The expression of the next bit.
    fn take(&mut self, o: &mut Out) -> String {
        match self {
            Cursor::At(k) => {
                let s = format!("pm.bit({k}, r.buf)");
                *k += 1;
                s
            }
            Cursor::Dynamic => {
                o.line("let p = pm.bit(kd, r.buf);");
                o.line("kd += 1;");
                "p".into()
            }
        }
    }

    fn end(&self) -> String {
        match self {
            Cursor::At(k) => k.to_string(),
            Cursor::Dynamic => "kd".into(),
        }
    }
}

pub(crate) fn emit_dict(plan: &Plan, o: &mut Out) {
    o.line("/// The dictionaries: one entry per (dictionary, key, type) the templates use.");
    o.line("#[derive(Debug, Clone, Default)]");
    o.open("struct Dict {");
    o.line("gen: fp::Generation,");
    for s in plan.slots.iter().flatten() {
        let ty = match s.kind {
            SlotKind::Int => "u64",
            SlotKind::Decimal => "fp::Decimal",
            SlotKind::Bytes => "Vec<u8>",
        };
        o.line(format!("{}: fp::Slot<{ty}>,", s.ident));
    }
    o.close("}");
    o.line("");
    o.open("impl Dict {");
    o.line("/// Every entry undefined: a new generation, the slots cleared only when the");
    o.line("/// generation numbers wrap around.");
    o.open("fn reset(&mut self) {");
    if plan.slots.iter().flatten().next().is_none() {
        o.line("self.gen.bump();");
    } else {
        o.open("if self.gen.bump() {");
        for s in plan.slots.iter().flatten() {
            o.line(format!("self.{}.forget();", s.ident));
        }
        o.close("}");
    }
    o.close("}");
    o.close("}");
    o.line("");
}

/// Whether the decoder needs scratch space (tail and delta strings).
fn needs_scratch(plan: &Plan) -> bool {
    plan.segs.iter().any(|s| {
        s.fields.iter().any(|f| {
            matches!(&f.instr.kind, Kind::Scalar(s)
                if !matches!(s.ty, FieldType::Int(_) | FieldType::Decimal)
                    && matches!(s.op, Op::Tail | Op::Delta))
        })
    })
}

pub(crate) fn emit(plan: &Plan, opts: &crate::Options, o: &mut Out) -> Result<(), Error> {
    let scratch = needs_scratch(plan);
    let mlt = plan.message_lt();
    o.line("/// Decodes the messages of one stream into the generated structs. Keeps the");
    o.line("/// dictionaries between messages; [`reset`](Decoder::reset) where the feed restarts them.");
    o.line("#[derive(Debug, Clone, Default)]");
    o.open("pub struct Decoder {");
    o.line("dict: Dict,");
    o.line("last_tid: Option<u32>,");
    o.line("opts: fp::DecodeOptions,");
    if scratch {
        o.line("scratch: Vec<u8>,");
    }
    o.close("}");
    o.line("");
    o.line("#[allow(unused_variables, clippy::needless_lifetimes, clippy::needless_late_init, clippy::manual_range_patterns)]");
    o.open("impl Decoder {");
    o.open("pub fn new() -> Self {");
    o.line("Self::default()");
    o.close("}");
    o.line("");
    o.line("/// A decoder with these limits and strictness.");
    o.open("pub fn with_options(opts: fp::DecodeOptions) -> Self {");
    o.open("Decoder {");
    o.line("opts,");
    o.line("..Self::default()");
    o.close("}");
    o.close("}");
    o.line("");
    o.line("/// Every dictionary entry undefined, and the last template id forgotten.");
    o.open("pub fn reset(&mut self) {");
    o.line("self.dict.reset();");
    o.line("self.last_tid = None;");
    o.close("}");
    o.line("");
    o.line("/// Decodes one message from the start of `buf` into its template's member of `out`;");
    o.line("/// returns which template it was and the bytes it took. Strings are borrowed from");
    o.line("/// `buf` where the template allows.");
    o.open("pub fn decode<'a>(");
    o.line("&mut self,");
    o.line("buf: &'a [u8],");
    o.line("out: &mut Messages<'a>,");
    o.mid(") -> Result<(MessageKind, usize), fp::CodecError> {");
    o.line("let mut r = fp::Reader::with_limits(buf, self.opts.strict, self.opts.max_string_len);");
    o.line("let kind = self.message_into(&mut r, out).map_err(|e| *e)?;");
    o.line("Ok((kind, r.pos))");
    o.close("}");
    o.line("");
    o.line("/// Decodes every message of `buf` (a packet's, say) into `out` in turn, and calls");
    o.line("/// `each` with each one's template and bytes in `buf` once it is there; returns how");
    o.line("/// many there were. One call for many messages keeps the reader and the decoder's");
    o.line(
        "/// state in registers from one message to the next, where [`decode`](Decoder::decode)",
    );
    o.line("/// sets them up again for each. An error ends the run, its offset counted from the");
    o.line("/// start of `buf`; the messages before it have been given to `each`.");
    o.open("pub fn decode_each<'a>(");
    o.line("&mut self,");
    o.line("buf: &'a [u8],");
    o.line("out: &mut Messages<'a>,");
    o.line("mut each: impl FnMut(MessageKind, &Messages<'a>, std::ops::Range<usize>),");
    o.mid(") -> Result<usize, fp::CodecError> {");
    o.line("let mut r = fp::Reader::with_limits(buf, self.opts.strict, self.opts.max_string_len);");
    o.line("let mut n = 0;");
    o.open("while r.pos < buf.len() {");
    o.line("let start = r.pos;");
    o.line("let kind = self.message_into(&mut r, out).map_err(|e| *e)?;");
    o.line("each(kind, out, start..r.pos);");
    o.line("n += 1;");
    o.close("}");
    o.line("Ok(n)");
    o.close("}");
    o.line("");
    o.line("/// Decodes one message from the start of `buf` into a new value.");
    o.open(format!(
        "pub fn decode_message<'a>(&mut self, buf: &'a [u8]) -> Result<(Message{mlt}, usize), fp::CodecError> {{"
    ));
    o.line("let mut r = fp::Reader::with_limits(buf, self.opts.strict, self.opts.max_string_len);");
    o.line("let m = self.any(&mut r, 0).map_err(|e| *e)?;");
    o.line("Ok((m, r.pos))");
    o.close("}");
    o.line("");
    emit_tid(o);
    let prefix = if opts.common_prefix {
        prefix::find(plan)
    } else {
        None
    };
    emit_message_into(plan, prefix.as_ref(), o)?;
    emit_any(plan, o);
    if let Some(p) = &prefix {
        prefix::emit_rest(plan, p, o)?;
        prefix::emit_names(plan, o);
    }
    for (i, seg) in plan.segs.iter().enumerate() {
        emit_seg(plan, i, o)?;
        if seg.role == Role::Element {
            emit_seq(plan, i, o)?;
        }
    }
    o.close("}");
    o.line("");
    Ok(())
}

fn emit_tid(o: &mut Out) {
    o.line("/// The template id: from the stream if the first bit is set, else the last one.");
    o.line("#[inline(always)]");
    o.open(
        "fn tid(&mut self, r: &mut fp::Reader<'_>, pm: &fp::Presence, at: usize) -> fp::Res<u32> {",
    );
    o.open("if pm.bit(0, r.buf) {");
    o.line("let Ok(v) = u32::try_from(r.u64_local()?) else {");
    o.line("    return fp::fail(fp::ErrorKind::IntegerOverflow, at);");
    o.line("};");
    o.line("self.last_tid = Some(v);");
    o.line("return Ok(v);");
    o.close("}");
    o.open("match self.last_tid {");
    o.line("Some(t) => Ok(t),");
    o.line("None => fp::fail(fp::ErrorKind::NoTemplateId, at),");
    o.close("}");
    o.close("}");
    o.line("");
    o.line("/// Presence-map bits set beyond those the fields used (R8, strict only).");
    o.line("#[inline(always)]");
    o.open(
        "fn check_pmap(r: &fp::Reader<'_>, pm: &fp::Presence, used: u32, at: usize) -> fp::Res<()> {",
    );
    o.open("if r.strict && pm.set_from(used, r.buf) {");
    o.line("return fp::fail(fp::ErrorKind::PresenceMapTooLong, at);");
    o.close("}");
    o.line("Ok(())");
    o.close("}");
    o.line("");
}

fn emit_message_into(
    plan: &Plan,
    prefix: Option<&prefix::Prefix>,
    o: &mut Out,
) -> Result<(), Error> {
    // In line in both `decode` and `decode_each`: a call per message would bring back the
    // set-up that `decode_each` saves.
    o.line("#[inline(always)]");
    o.open(
        "fn message_into<'a>(&mut self, r: &mut fp::Reader<'a>, out: &mut Messages<'a>) -> fp::Res<MessageKind> {",
    );
    o.line("let mut pm = fp::Presence::default();");
    o.line("r.presence_to(&mut pm)?;");
    o.line("let at = r.pos;");
    o.line("let tid = self.tid(r, &pm, at)?;");
    if let Some(p) = prefix {
        prefix::emit_dispatch(plan, p, o)?;
    }
    o.open("match tid {");
    for (i, t) in plan.templates.iter().enumerate() {
        if prefix.is_some_and(|p| p.members.contains(&i)) {
            continue;
        }
        let seg = &plan.segs[t.seg];
        let name = quote(&t.t.name);
        o.open(format!("{} => {{", t.t.id));
        if t.t.reset {
            o.line("self.dict.reset();");
            o.line(format!("self.last_tid = Some({});", t.t.id));
        }
        o.line(format!(
            "let used = self.rd_{}(r, &pm, &mut out.{}, 0).at_template({name})?;",
            seg.fn_name, t.member
        ));
        o.line(format!(
            "Self::check_pmap(r, &pm, used, at).at_template({name})?;"
        ));
        o.line(format!("Ok(MessageKind::{})", t.variant));
        o.close("}");
    }
    o.line("tid => fp::fail(fp::ErrorKind::UnknownTemplate(tid), at),");
    o.close("}");
    o.close("}");
    o.line("");
    Ok(())
}

fn emit_any(plan: &Plan, o: &mut Out) {
    let mlt = plan.message_lt();
    o.line("/// A message into a new value; `depth` > 0 for a dynamic template reference.");
    o.open(format!(
        "fn any<'a>(&mut self, r: &mut fp::Reader<'a>, depth: u32) -> fp::Res<Message{mlt}> {{"
    ));
    o.line("let mut pm = fp::Presence::default();");
    o.line("r.presence_to(&mut pm)?;");
    o.line("let at = r.pos;");
    o.open("match self.tid(r, &pm, at)? {");
    for t in &plan.templates {
        let seg = &plan.segs[t.seg];
        let name = quote(&t.t.name);
        o.open(format!("{} => {{", t.t.id));
        if t.t.reset {
            o.open("if depth == 0 {");
            o.line("self.dict.reset();");
            o.line(format!("self.last_tid = Some({});", t.t.id));
            o.close("}");
        }
        o.line(format!("let mut m = {}::default();", seg.type_name));
        o.line(format!(
            "let used = self.rd_{}(r, &pm, &mut m, depth).at_template({name})?;",
            seg.fn_name
        ));
        o.line(format!(
            "Self::check_pmap(r, &pm, used, at).at_template({name})?;"
        ));
        o.line(format!("Ok(Message::{}(m))", t.variant));
        o.close("}");
    }
    o.line("tid => fp::fail(fp::ErrorKind::UnknownTemplate(tid), at),");
    o.close("}");
    o.close("}");
    o.line("");
}

/// The lifetime parameter and the reader's type for a function over struct `seg`.
fn sig(plan: &Plan, seg: usize) -> (&'static str, &'static str) {
    if plan.segs[seg].borrows {
        ("<'a>", "fp::Reader<'a>")
    } else {
        ("", "fp::Reader<'_>")
    }
}

fn uses_dict<'f, 't: 'f>(fields: impl IntoIterator<Item = &'f Field<'t>>) -> bool {
    fields.into_iter().any(|f| {
        scalars(f.instr).into_iter().any(has_slot) && !matches!(f.instr.kind, Kind::Sequence { .. })
    })
}

/// The statements of `fields`, their presence bits from `start`: the dictionary's
/// generation if they use it, then each field, from the stop-bit mask where `masked` (made
/// here unless the function was handed `stops`) or else from the reader, and the reader's
/// position written back after a masked run. Returns where the bits end.
fn emit_fields(
    plan: &Plan,
    fields: &[&Field],
    start: u32,
    masked: bool,
    stops_given: bool,
    o: &mut Out,
) -> Result<Cursor, Error> {
    if uses_dict(fields.iter().copied()) {
        o.line("let g = self.dict.gen;");
    }
    if masked && !stops_given {
        o.line("let mut stops = r.stops();");
    }
    let src = if masked { Src::Stops } else { Src::Reader };
    let mut cur = Cursor::At(start);
    for f in fields {
        field(plan, f, &mut cur, o, src)?;
    }
    if masked {
        o.line("r.pos = stops.pos();");
    }
    Ok(cur)
}

fn emit_seg(plan: &Plan, i: usize, o: &mut Out) -> Result<(), Error> {
    let seg = &plan.segs[i];
    let (lt, reader) = sig(plan, i);
    let ty = format!("{}{}", seg.type_name, plan.lt(i));
    let start = if seg.role == Role::Message {
        o.line("#[inline(always)]");
        o.open(format!(
            "fn rd_{}{lt}(&mut self, r: &mut {reader}, pm: &fp::Presence, out: &mut {ty}, depth: u32) -> fp::Res<u32> {{",
            seg.fn_name
        ));
        1
    } else {
        // An element's fields read a copy of the reader, its position written back after
        // them: through the caller's reader, each field stored the position to memory and
        // reloaded the input's bounds (a message's fields already read a local reader).
        o.open(format!(
            "fn rd_{}{lt}(&mut self, r: &mut {reader}, out: &mut {ty}, depth: u32) -> fp::Res<()> {{",
            seg.fn_name
        ));
        o.line("let mut local = *r;");
        o.line(format!(
            "let done = self.rd_{}_fields(&mut local, out, depth);",
            seg.fn_name
        ));
        o.line("r.pos = local.pos;");
        o.line("done");
        o.close("}");
        o.line("");
        o.line("#[inline(always)]");
        o.open(format!(
            "fn rd_{}_fields{lt}(&mut self, r: &mut {reader}, out: &mut {ty}, depth: u32) -> fp::Res<()> {{",
            seg.fn_name
        ));
        if seg.seg.has_pmap {
            o.line("let at = r.pos;");
            o.line("let mut pm = fp::Presence::default();");
            o.line("r.presence_to(&mut pm)?;");
        }
        0
    };
    // Integers and decimals alone: their ends from a mask of the stop bits (`fp::Stops`).
    let masked = masked_segment(&seg.fields);
    let fields: Vec<&Field> = seg.fields.iter().collect();
    let cur = emit_fields(plan, &fields, start, masked, false, o)?;
    if seg.role == Role::Message {
        o.line(format!("Ok({})", cur.end()));
    } else {
        if seg.seg.has_pmap {
            o.line(format!("Self::check_pmap(r, &pm, {}, at)", cur.end()));
        } else {
            o.line("Ok(())");
        }
    }
    o.close("}");
    o.line("");
    Ok(())
}

/// The sequence whose elements are struct `i`: its length, then each element.
fn emit_seq(plan: &Plan, i: usize, o: &mut Out) -> Result<(), Error> {
    let seg = &plan.segs[i];
    let (parent_field, length) = plan
        .segs
        .iter()
        .flat_map(|s| &s.fields)
        .find_map(|f| match &f.instr.kind {
            Kind::Sequence { length, .. } if f.child == Some(i) => Some((f, length)),
            _ => None,
        })
        .expect("an element struct belongs to a sequence");
    let (lt, reader) = sig(plan, i);
    let elems = format!("fp::Seq<{}{}>", seg.type_name, plan.lt(i));
    let out_ty = if parent_field.instr.optional {
        format!("Option<{elems}>")
    } else {
        elems
    };
    o.open(format!(
        "fn rs_{}{lt}(&mut self, r: &mut {reader}, present: bool, out: &mut {out_ty}, depth: u32) -> fp::Res<()> {{",
        seg.fn_name
    ));
    if has_slot(length) {
        o.line("let g = self.dict.gen;");
    }
    o.line("let at = r.pos;");
    let name = quote(&parent_field.instr.name);
    let bit = length.uses_bit().then_some("present");
    if length.optional {
        o.line("let mut len: Option<u32> = None;");
    } else {
        o.line("let len: u32;");
    }
    o.line(int_stmt(
        plan,
        length,
        IntType::U32,
        bit,
        &name,
        "len",
        Src::Reader,
    )?);
    if parent_field.instr.optional {
        o.line("let Some(len) = len else {");
        o.line("    *out = None;");
        o.line("    return Ok(());");
        o.line("};");
        o.line("let out = out.get_or_insert_with(fp::Seq::new);");
    }
    o.line(format!(
        "let n = fp::sequence_len(r, len, self.opts.max_sequence_len, {}, at)?;",
        seg.seg.has_pmap
    ));
    o.line("out.clear();");
    o.open("for _ in 0..n {");
    o.line(format!(
        "self.rd_{}(r, out.next_slot(), depth)?;",
        seg.fn_name
    ));
    o.close("}");
    o.line("Ok(())");
    o.close("}");
    o.line("");
    Ok(())
}
