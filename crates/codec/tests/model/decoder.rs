//! The model decoder: the spec's rules read off the template data structure, with no
//! compilation step. Dictionaries are what §6.3.1 describes: named maps of typed entries,
//! an entry absent from the map being undefined. Integers are held in `i128`, wide enough
//! for every value and delta of the 64-bit types. Reportable errors R6-R9 (overlong
//! encodings, unused presence-map bits) are not signalled, as a lenient decoder may do.

use std::collections::HashMap;

use fastfeed_codec::{Decimal, Fields, Message, Value};

use super::{Dict, Field, FieldOp, Instr, Lit, Op, OpKind, Set, Template, Ty};

/// The spec code of an error, or None for running out of input (or past a decoding limit,
/// where fastfeed has one the spec leaves open).
pub type Code = Option<&'static str>;

type Res<T> = Result<T, Code>;

/// The limit fastfeed puts on sequence lengths by default; the spec sets none.
const MAX_SEQUENCE: i128 = 65_536;

/// A dictionary: the three predefined ones qualified by the template or application type
/// they are local to, or a user-defined one by name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum DictName {
    Global,
    Template(&'static str, &'static str),
    /// An application type: (namespace, name) of a typeRef, None for "any".
    Type(Option<(&'static str, &'static str)>),
    User,
}

/// A previous value.
#[derive(Debug, Clone, PartialEq)]
enum Prev {
    Int(i128),
    Dec(i32, i64),
    Bytes(Vec<u8>),
}

#[derive(Debug, Clone)]
enum Entry {
    Empty(Ty),
    Assigned(Ty, Prev),
}

/// Where an instruction sits: the current template, the nearest `dictionary` attribute of
/// its XML ancestry, the current application type, and the namespace of its keys.
#[derive(Clone, Copy)]
struct Ctx<'s> {
    template: &'s Template,
    dictionary: Option<Dict>,
    app_type: Option<(&'static str, &'static str)>,
}

/// Decodes a whole stream: the messages, and the error that stopped it if one did.
pub fn decode(set: &Set, bytes: &[u8]) -> (Vec<Message>, Option<Code>) {
    run(set, bytes, None)
}

/// The fields the model decoded, with their offsets, up to where it stopped: for the
/// reader of a failed test.
pub fn trace(set: &Set, bytes: &[u8]) -> String {
    let mut t = String::new();
    let (msgs, err) = run(set, bytes, Some(&mut t));
    t + &format!("{} messages, then {err:?}\n", msgs.len())
}

fn run(set: &Set, bytes: &[u8], trace: Option<&mut String>) -> (Vec<Message>, Option<Code>) {
    let mut m = Model {
        set,
        dicts: HashMap::new(),
        tid: None,
        r: Reader { buf: bytes, pos: 0 },
        trace: trace.is_some().then(String::new),
    };
    let mut out = Vec::new();
    let mut err = None;
    while m.r.pos < bytes.len() {
        if let Some(t) = &mut m.trace {
            t.push_str(&format!("message at {}\n", m.r.pos));
        }
        match m.message() {
            Ok(msg) => out.push(msg),
            Err(code) => {
                err = Some(code);
                break;
            }
        }
    }
    if let (Some(t), Some(buf)) = (m.trace.take(), trace) {
        *buf = t;
    }
    (out, err)
}

struct Model<'s, 'b> {
    set: &'s Set,
    dicts: HashMap<(DictName, &'static str, String), Entry>,
    /// The template identifier's copy entry (§10.3: global, one internal key).
    tid: Option<u32>,
    r: Reader<'b>,
    trace: Option<String>,
}

impl<'s> Model<'s, '_> {
    /// A message or a dynamically referenced one: a segment with a template identifier.
    fn message(&mut self) -> Res<Message> {
        let mut pmap = self.r.pmap()?;
        let tid = if pmap.next() {
            let v = self.r.uint()?;
            let v = u32::try_from(v).map_err(|_| Some("D2"))?;
            self.tid = Some(v);
            v
        } else {
            self.tid.ok_or(Some("D5"))?
        };
        let t = self.set.by_id(tid).ok_or(Some("D9"))?;
        let ctx = Ctx {
            template: t,
            dictionary: t.dictionary.or(self.set.dictionary),
            app_type: qualified(t, t.type_ref),
        };
        let mut fields = Vec::new();
        self.instrs(&t.body, ctx, &mut pmap, &mut fields)?;
        Ok(Message {
            template_id: tid,
            fields,
        })
    }

    fn instrs(
        &mut self,
        body: &[Instr],
        ctx: Ctx<'s>,
        pmap: &mut Pmap,
        out: &mut Fields,
    ) -> Res<()> {
        for i in body {
            match i {
                Instr::Field(f) => out.push(self.field(f, ctx, pmap)?),
                Instr::Group {
                    optional,
                    dictionary,
                    type_ref,
                    body,
                    ..
                } => {
                    if *optional && !pmap.next() {
                        out.push(None);
                        continue;
                    }
                    let inner = nested(ctx, *dictionary, *type_ref);
                    let mut fields = Vec::new();
                    self.segment(body, inner, &mut fields)?;
                    out.push(Some(Value::Group(fields)));
                }
                Instr::Sequence {
                    name,
                    optional,
                    dictionary,
                    type_ref,
                    length,
                    body,
                } => {
                    let inner = nested(ctx, *dictionary, *type_ref);
                    // The length is a uInt32 field named by <length> or by a generated name
                    // (§6.2.5) that no template can spell.
                    let (key, op) = match length {
                        Some(l) => (
                            l.name
                                .map_or_else(|| format!("{name}#length"), str::to_owned),
                            l.op.as_ref(),
                        ),
                        None => (format!("{name}#length"), None),
                    };
                    let Some(len) = self.scalar(&key, Ty::U32, *optional, op, inner, pmap)? else {
                        out.push(None);
                        continue;
                    };
                    let Prev::Int(len) = len else { unreachable!() };
                    // Past fastfeed's limit, or more elements with a presence map (a byte
                    // each at least) than bytes left: out of input, said before decoding
                    // the elements (fastfeed does, to allocate nothing for them).
                    let left = (self.r.buf.len() - self.r.pos) as i128;
                    if len > MAX_SEQUENCE || (self.needs_bit(body) && len > left) {
                        return Err(None);
                    }
                    let mut items = Vec::new();
                    for _ in 0..len {
                        let mut fields = Vec::new();
                        self.segment(body, inner, &mut fields)?;
                        items.push(fields);
                    }
                    out.push(Some(Value::Sequence(items)));
                }
                Instr::StaticRef(k) => {
                    // The referred template becomes current (§6.4); its instructions' XML
                    // ancestry is its own, so their dictionary comes from there (§6.3.1).
                    let t = &self.set.templates[*k];
                    let inner = Ctx {
                        template: t,
                        dictionary: t.dictionary.or(self.set.dictionary),
                        app_type: qualified(t, t.type_ref).or(ctx.app_type),
                    };
                    self.instrs(&t.body, inner, pmap, out)?;
                }
                Instr::DynamicRef => {
                    let m = self.message()?;
                    out.push(Some(Value::Message(Box::new(m))));
                }
            }
        }
        Ok(())
    }

    /// A group's or sequence element's instructions: a segment with a presence map of its
    /// own iff any of them needs a bit (§6.2.5, §6.2.6).
    fn segment(&mut self, body: &[Instr], ctx: Ctx<'s>, out: &mut Fields) -> Res<()> {
        let mut pmap = if self.needs_bit(body) {
            self.r.pmap()?
        } else {
            Pmap::default()
        };
        self.instrs(body, ctx, &mut pmap, out)
    }

    /// Whether any instruction of a segment allocates a presence-map bit (§10.5.1).
    fn needs_bit(&self, body: &[Instr]) -> bool {
        let op_bit = |op: Option<&Op>, optional: bool| match op.map(|o| o.kind) {
            None | Some(OpKind::Delta) => false,
            Some(OpKind::Constant) => optional,
            Some(_) => true,
        };
        body.iter().any(|i| match i {
            Instr::Field(f) => match &f.op {
                FieldOp::None => false,
                FieldOp::Whole(op) => op_bit(Some(op), f.optional),
                FieldOp::Split { exponent, mantissa } => {
                    op_bit(exponent.as_ref(), f.optional) || op_bit(mantissa.as_ref(), false)
                }
            },
            Instr::Group { optional, .. } => *optional,
            Instr::Sequence {
                optional, length, ..
            } => op_bit(length.as_ref().and_then(|l| l.op.as_ref()), *optional),
            Instr::StaticRef(k) => self.needs_bit(&self.set.templates[*k].body),
            Instr::DynamicRef => false,
        })
    }

    fn field(&mut self, f: &Field, ctx: Ctx<'s>, pmap: &mut Pmap) -> Res<Option<Value>> {
        let v = match &f.op {
            FieldOp::None => self.scalar(f.name, f.ty, f.optional, None, ctx, pmap)?,
            FieldOp::Whole(op) => self.scalar(f.name, f.ty, f.optional, Some(op), ctx, pmap)?,
            FieldOp::Split { exponent, mantissa } => {
                // Generated names, unique to the decimal (§6.2.2), key the two parts.
                let ek = format!("{}#exponent", f.name);
                let Some(Prev::Int(e)) =
                    self.scalar(&ek, Ty::I32, f.optional, exponent.as_ref(), ctx, pmap)?
                else {
                    return Ok(None);
                };
                if !(-63..=63).contains(&e) {
                    return Err(Some("R1"));
                }
                let mk = format!("{}#mantissa", f.name);
                let Some(Prev::Int(m)) =
                    self.scalar(&mk, Ty::I64, false, mantissa.as_ref(), ctx, pmap)?
                else {
                    unreachable!("a mandatory field is never absent")
                };
                Some(Prev::Dec(e as i32, m as i64))
            }
        };
        // A unicode value must be UTF-8, whichever operator made it (§6.3.7.4, §6.3.8.2).
        if let (Ty::Unicode, Some(Prev::Bytes(b))) = (f.ty, &v) {
            if std::str::from_utf8(b).is_err() {
                return Err(Some("R2"));
            }
        }
        Ok(v.map(|v| match (f.ty, v) {
            (Ty::U32 | Ty::U64, Prev::Int(n)) => Value::UInt(n as u64),
            (Ty::I32 | Ty::I64, Prev::Int(n)) => Value::Int(n as i64),
            (Ty::Decimal, Prev::Dec(e, m)) => Value::Decimal(Decimal::new(e, m)),
            (Ty::Ascii, Prev::Bytes(b)) => Value::Ascii(b.iter().map(|&c| c as char).collect()),
            (Ty::Unicode, Prev::Bytes(b)) => Value::Unicode(String::from_utf8(b).unwrap()),
            (Ty::Bytes, Prev::Bytes(b)) => Value::Bytes(b),
            (ty, v) => unreachable!("{ty:?} {v:?}"),
        }))
    }

    /// One scalar value of type `ty` under `op` (§6.3), keyed by `name` unless the operator
    /// names a key. None is absent.
    fn scalar(
        &mut self,
        name: &str,
        ty: Ty,
        optional: bool,
        op: Option<&Op>,
        ctx: Ctx<'s>,
        pmap: &mut Pmap,
    ) -> Res<Option<Prev>> {
        if let Some(t) = &mut self.trace {
            let kind = op.map(|o| o.kind);
            t.push_str(&format!(
                "{name} {ty:?} optional={optional} {kind:?} at {}\n",
                self.r.pos
            ));
        }
        let Some(op) = op else {
            return self.read(ty, optional);
        };
        let init = op.init.as_ref().map(|l| initial(l, ty));
        let key = (
            self.dict_name(op, ctx),
            ctx.template.ns.unwrap_or(""),
            op.key.map_or_else(|| name.to_owned(), str::to_owned),
        );
        let v = match op.kind {
            OpKind::Constant => (!optional || pmap.next()).then(|| init.clone().unwrap()),
            OpKind::Default => {
                if pmap.next() {
                    self.read(ty, optional)?
                } else {
                    init
                }
            }
            OpKind::Copy | OpKind::Increment => {
                if pmap.next() {
                    let v = self.read(ty, optional)?;
                    self.dicts.insert(key, entry(ty, &v));
                    v
                } else {
                    match self.lookup(&key, ty)? {
                        Some(Entry::Assigned(_, p)) => {
                            let v = match (op.kind, p) {
                                (OpKind::Increment, Prev::Int(n)) => {
                                    let (lo, hi) = ty.range();
                                    Prev::Int(if n == hi { lo } else { n + 1 })
                                }
                                (_, p) => p,
                            };
                            self.dicts.insert(key, Entry::Assigned(ty, v.clone()));
                            Some(v)
                        }
                        None => self.undefined(key, ty, optional, init, "D5")?,
                        Some(Entry::Empty(_)) if optional => None,
                        Some(Entry::Empty(_)) => return Err(Some("D6")),
                    }
                }
            }
            OpKind::Delta => {
                let Some(v) = self.delta(ty, optional, &key, init)? else {
                    return Ok(None);
                };
                self.dicts.insert(key, Entry::Assigned(ty, v.clone()));
                Some(v)
            }
            OpKind::Tail => self.tail(ty, optional, key, init, pmap)?,
        };
        Ok(v)
    }

    /// A value not in the stream, its entry undefined (§6.3.5, §6.3.6, §6.3.8): the initial
    /// value, or absent and the entry empty, or the error `missing`.
    fn undefined(
        &mut self,
        key: (DictName, &'static str, String),
        ty: Ty,
        optional: bool,
        init: Option<Prev>,
        missing: &'static str,
    ) -> Res<Option<Prev>> {
        match init {
            Some(i) => {
                self.dicts.insert(key, Entry::Assigned(ty, i.clone()));
                Ok(Some(i))
            }
            None if optional => {
                self.dicts.insert(key, Entry::Empty(ty));
                Ok(None)
            }
            None => Err(Some(missing)),
        }
    }

    /// The entry an operator reads; an assigned value of another type is D4 (§6.3.1).
    fn lookup(&self, key: &(DictName, &'static str, String), ty: Ty) -> Res<Option<Entry>> {
        match self.dicts.get(key) {
            Some(Entry::Assigned(t, _)) if *t != ty => Err(Some("D4")),
            e => Ok(e.cloned()),
        }
    }

    /// The dictionary of an operator: its own attribute, else the nearest ancestor's, else
    /// global; template and type dictionaries are local to the current template or type.
    fn dict_name(&self, op: &Op, ctx: Ctx<'s>) -> DictName {
        match op.dictionary.or(ctx.dictionary).unwrap_or(Dict::Global) {
            Dict::Global => DictName::Global,
            Dict::Template => DictName::Template(ctx.template.template_ns, ctx.template.name),
            Dict::Type => DictName::Type(ctx.app_type),
            Dict::User => DictName::User,
        }
    }

    fn delta(
        &mut self,
        ty: Ty,
        optional: bool,
        key: &(DictName, &'static str, String),
        init: Option<Prev>,
    ) -> Res<Option<Prev>> {
        let d = if optional {
            self.r.nullable_int()?
        } else {
            Some(self.r.int()?)
        };
        let Some(d) = d else { return Ok(None) };
        // A subtraction length outside int32 is D7 (§6.3.7.3), said as soon as it is read.
        if !ty.is_int() && ty != Ty::Decimal && (d < i32::MIN as i128 || d > i32::MAX as i128) {
            return Err(Some("D7"));
        }
        let part = match ty {
            Ty::Decimal => Some(Prev::Int(self.r.int()?)),
            Ty::Ascii => Some(Prev::Bytes(self.r.ascii(false)?.unwrap())),
            Ty::Unicode | Ty::Bytes => Some(Prev::Bytes(self.r.byte_vector(false)?.unwrap())),
            _ => None,
        };
        let base = match self.lookup(key, ty)? {
            Some(Entry::Assigned(_, p)) => p,
            None => init.unwrap_or(match ty {
                Ty::Decimal => Prev::Dec(0, 0),
                t if t.is_int() => Prev::Int(0),
                _ => Prev::Bytes(Vec::new()),
            }),
            Some(Entry::Empty(_)) => return Err(Some("D6")),
        };
        Ok(Some(match (base, part) {
            (Prev::Int(b), None) => {
                let (lo, hi) = ty.range();
                let v = b + d;
                if v < lo || v > hi {
                    return Err(Some("R4"));
                }
                Prev::Int(v)
            }
            (Prev::Dec(e, m), Some(Prev::Int(dm))) => {
                let e = e as i128 + d;
                let m = m as i128 + dm;
                if !(-63..=63).contains(&e) || m < i64::MIN as i128 || m > i64::MAX as i128 {
                    return Err(Some("R1"));
                }
                Prev::Dec(e as i32, m as i64)
            }
            (Prev::Bytes(mut b), Some(Prev::Bytes(part))) => {
                // Excess-1: a negative length removes -d - 1 from the front.
                let (front, n) = if d < 0 {
                    (true, (-d - 1) as usize)
                } else {
                    (false, d as usize)
                };
                if n > b.len() {
                    return Err(Some("D7"));
                }
                if front {
                    b.drain(..n);
                    b.splice(0..0, part);
                } else {
                    b.truncate(b.len() - n);
                    b.extend(part);
                }
                Prev::Bytes(b)
            }
            (b, p) => unreachable!("{b:?} {p:?}"),
        }))
    }

    fn tail(
        &mut self,
        ty: Ty,
        optional: bool,
        key: (DictName, &'static str, String),
        init: Option<Prev>,
        pmap: &mut Pmap,
    ) -> Res<Option<Prev>> {
        if pmap.next() {
            let t = match ty {
                Ty::Ascii => self.r.ascii(optional)?,
                _ => self.r.byte_vector(optional)?,
            };
            let Some(t) = t else {
                self.dicts.insert(key, Entry::Empty(ty));
                return Ok(None);
            };
            let base = match self.lookup(&key, ty)? {
                Some(Entry::Assigned(_, Prev::Bytes(b))) => b,
                _ => match init {
                    Some(Prev::Bytes(b)) => b,
                    _ => Vec::new(),
                },
            };
            let v = if t.len() >= base.len() {
                t
            } else {
                let mut b = base;
                b.truncate(b.len() - t.len());
                b.extend(t);
                b
            };
            self.dicts
                .insert(key, Entry::Assigned(ty, Prev::Bytes(v.clone())));
            return Ok(Some(Prev::Bytes(v)));
        }
        Ok(match self.lookup(&key, ty)? {
            Some(Entry::Assigned(_, p)) => Some(p),
            // Tail names D6 here where copy and increment name D5.
            None => self.undefined(key, ty, optional, init, "D6")?,
            Some(Entry::Empty(_)) if optional => None,
            Some(Entry::Empty(_)) => return Err(Some("D7")),
        })
    }

    /// A value of type `ty` from the stream, nullable if `optional`.
    fn read(&mut self, ty: Ty, optional: bool) -> Res<Option<Prev>> {
        Ok(match ty {
            t if t.is_int() => {
                let v = if t.signed() {
                    if optional {
                        self.r.nullable_int()?
                    } else {
                        Some(self.r.int()?)
                    }
                } else if optional {
                    self.r.nullable_uint()?
                } else {
                    Some(self.r.uint()?)
                };
                let (lo, hi) = t.range();
                match v {
                    Some(v) if v < lo || v > hi => return Err(Some("D2")),
                    v => v.map(Prev::Int),
                }
            }
            Ty::Decimal => {
                // A scaled number (§10.6.2): an exponent outside -63..=63 is R1 (§6.2.2);
                // one past 64 bits D2, as fastfeed reads both parts as int64 first.
                let e = if optional {
                    self.r.nullable_int()?
                } else {
                    Some(self.r.int()?)
                };
                let Some(e) = e else { return Ok(None) };
                if e < i64::MIN as i128 || e > i64::MAX as i128 {
                    return Err(Some("D2"));
                }
                if !(-63..=63).contains(&e) {
                    return Err(Some("R1"));
                }
                let m = self.r.int()?;
                if m < i64::MIN as i128 || m > i64::MAX as i128 {
                    return Err(Some("D2"));
                }
                Some(Prev::Dec(e as i32, m as i64))
            }
            Ty::Ascii => self.r.ascii(optional)?.map(Prev::Bytes),
            _ => self.r.byte_vector(optional)?.map(Prev::Bytes),
        })
    }
}

fn nested<'s>(ctx: Ctx<'s>, dictionary: Option<Dict>, type_ref: Option<&'static str>) -> Ctx<'s> {
    Ctx {
        template: ctx.template,
        dictionary: dictionary.or(ctx.dictionary),
        app_type: qualified(ctx.template, type_ref).or(ctx.app_type),
    }
}

/// An application type's name qualified by the nearest ns (§7): the template's, as no other
/// element of the generated sets carries one.
fn qualified(t: &Template, type_ref: Option<&'static str>) -> Option<(&'static str, &'static str)> {
    type_ref.map(|name| (t.ns.unwrap_or(""), name))
}

fn entry(ty: Ty, v: &Option<Prev>) -> Entry {
    match v {
        Some(p) => Entry::Assigned(ty, p.clone()),
        None => Entry::Empty(ty),
    }
}

/// An initial value converted to its field's type; decimals normalized (§6.3.2).
fn initial(l: &Lit, ty: Ty) -> Prev {
    match l {
        Lit::Int(n) => Prev::Int(*n),
        Lit::Dec(e, m) => {
            let (mut e, mut m) = (*e, *m);
            if m == 0 {
                e = 0;
            }
            while m != 0 && m % 10 == 0 {
                m /= 10;
                e += 1;
            }
            Prev::Dec(e, m)
        }
        Lit::Str(s) => Prev::Bytes(s.as_bytes().to_vec()),
        Lit::Bytes(b) => {
            debug_assert_eq!(ty, Ty::Bytes);
            Prev::Bytes(b.clone())
        }
    }
}

/// The transfer encoding (§10), reading every integer into 128 bits (saturating beyond).
struct Reader<'b> {
    buf: &'b [u8],
    pos: usize,
}

impl Reader<'_> {
    fn entity(&mut self) -> Res<Vec<u8>> {
        let rest = &self.buf[self.pos..];
        let n = rest.iter().position(|b| b & 0x80 != 0).ok_or(None)? + 1;
        self.pos += n;
        Ok(rest[..n].iter().map(|b| b & 0x7f).collect())
    }

    fn uint(&mut self) -> Res<i128> {
        let mut v: i128 = 0;
        for g in self.entity()? {
            v = v.checked_mul(128).map_or(i128::MAX, |v| v + g as i128);
        }
        Ok(v)
    }

    fn int(&mut self) -> Res<i128> {
        let e = self.entity()?;
        let mut v: i128 = if e[0] & 0x40 != 0 { -1 } else { 0 };
        for g in e {
            v = match v.checked_mul(128) {
                Some(v) => v | g as i128,
                None => return Ok(if v < 0 { i128::MIN } else { i128::MAX }),
            };
        }
        Ok(v)
    }

    fn nullable_uint(&mut self) -> Res<Option<i128>> {
        Ok(match self.uint()? {
            0 => None,
            v => Some(v - 1),
        })
    }

    fn nullable_int(&mut self) -> Res<Option<i128>> {
        Ok(match self.int()? {
            0 => None,
            v if v > 0 => Some(v - 1),
            v => Some(v),
        })
    }

    /// An ASCII string and its zero preambles (§10.6.3).
    fn ascii(&mut self, nullable: bool) -> Res<Option<Vec<u8>>> {
        let mut e = self.entity()?;
        if nullable && e[0] == 0 {
            e.remove(0);
            if e.is_empty() {
                return Ok(None);
            }
        }
        if e[0] == 0 {
            e.remove(0);
        }
        Ok(Some(e))
    }

    /// A byte vector (and a unicode string's bytes): a length, then raw bytes.
    fn byte_vector(&mut self, nullable: bool) -> Res<Option<Vec<u8>>> {
        let len = if nullable {
            self.nullable_uint()?
        } else {
            Some(self.uint()?)
        };
        let Some(len) = len else { return Ok(None) };
        // A length past 64 bits: fastfeed says D2 (the spec sets no bound on it).
        if len > u64::MAX as i128 {
            return Err(Some("D2"));
        }
        if len > (self.buf.len() - self.pos) as i128 {
            return Err(None);
        }
        let b = self.buf[self.pos..self.pos + len as usize].to_vec();
        self.pos += len as usize;
        Ok(Some(b))
    }

    fn pmap(&mut self) -> Res<Pmap> {
        let bits = self
            .entity()?
            .into_iter()
            .flat_map(|g| (0..7).rev().map(move |i| g >> i & 1 == 1))
            .collect();
        Ok(Pmap { bits, next: 0 })
    }
}

/// A presence map's bits; past its end every bit is 0 (§10.5).
#[derive(Default)]
struct Pmap {
    bits: Vec<bool>,
    next: usize,
}

impl Pmap {
    fn next(&mut self) -> bool {
        self.next += 1;
        self.bits.get(self.next - 1).copied().unwrap_or(false)
    }
}
