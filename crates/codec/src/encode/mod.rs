//! The encoder: the mirror of the decoder. For each field it predicts what the decoder would
//! reconstruct from the dictionary and leaves the field out wherever that is right, so the
//! output is the shortest encoding the templates allow.

mod fast;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use crate::dictionary::{Dictionary, State};
use crate::error::{CodecError, ErrorKind, Locate};
use crate::template::{FieldType, Initial, Instr, Kind, Op, Scalar, Segment, Templates};
use crate::value::{Decimal, Message, Value};
use crate::wire::{
    patch_pmap, put_ascii, put_i64, put_nullable_i64, put_nullable_u64, put_u64, put_wide_delta,
};

/// Encodes messages of one stream, keeping dictionaries in step with a decoder.
pub struct Encoder {
    templates: Arc<Templates>,
    state: State_,
}

/// Everything but the templates, so the templates can be borrowed while this changes.
struct State_ {
    dict: Dictionary,
    last_tid: Option<u32>,
    /// Presence-map bits of the open segments, innermost last.
    bits: Vec<bool>,
}

/// Errors travel boxed inside the encoder, as in the decoder: small results stay in registers.
type Res<T> = Result<T, Box<CodecError>>;

fn fail<T>(kind: ErrorKind) -> Res<T> {
    Err(Box::new(CodecError::new(kind, 0)))
}

/// A scalar value in the form the dictionary keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sv<'a> {
    Int(u64),
    Dec(Decimal),
    Bytes(&'a [u8]),
}

fn initial(s: &Scalar) -> Option<Sv<'_>> {
    s.initial.as_ref().map(|i| match i {
        Initial::Int(v) => Sv::Int(*v),
        Initial::Decimal { exponent, mantissa } => Sv::Dec(Decimal::new(*exponent, *mantissa)),
        Initial::Bytes(b) => Sv::Bytes(b),
    })
}

/// Converts a message value to the field's type, range-checking integers.
fn scalar_value<'a>(ty: FieldType, v: &'a Value) -> Res<Sv<'a>> {
    match (ty, v) {
        (FieldType::Int(it), Value::UInt(_) | Value::Int(_)) => {
            let n = match v {
                Value::UInt(u) => *u as i128,
                Value::Int(i) => *i as i128,
                _ => unreachable!(),
            };
            if n < it.min() || n > it.max() {
                return fail(ErrorKind::IntegerOverflow);
            }
            Ok(Sv::Int(if it.signed() {
                n as i64 as u64
            } else {
                n as u64
            }))
        }
        (FieldType::Decimal, Value::Decimal(d)) => {
            if !(-63..=63).contains(&d.exponent) {
                return fail(ErrorKind::ExponentRange(d.exponent as i64));
            }
            Ok(Sv::Dec(*d))
        }
        (FieldType::Ascii, Value::Ascii(s) | Value::Unicode(s)) if s.is_ascii() => {
            Ok(Sv::Bytes(s.as_bytes()))
        }
        (FieldType::Unicode, Value::Ascii(s) | Value::Unicode(s)) => Ok(Sv::Bytes(s.as_bytes())),
        (FieldType::Bytes, Value::Bytes(b)) => Ok(Sv::Bytes(b)),
        _ => fail(ErrorKind::TypeMismatch),
    }
}

impl Encoder {
    pub fn new(templates: Arc<Templates>) -> Self {
        let dict = Dictionary::new(templates.slot_count);
        Encoder {
            templates,
            state: State_ {
                dict,
                last_tid: None,
                bits: Vec::new(),
            },
        }
    }

    pub fn templates(&self) -> &Arc<Templates> {
        &self.templates
    }

    /// Resets every dictionary entry to undefined; do it where the decoder will.
    pub fn reset(&mut self) {
        self.state.dict.reset();
        self.state.last_tid = None;
    }

    /// Appends a Session Control Protocol Reset message (template 120, no fields) and resets
    /// the dictionaries, as a decoder will on reading it. The templates must hold a Reset:
    /// SCP 1.1's, or the file's own template 120 if it is an empty one that resets.
    pub fn encode_reset(&mut self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let id = crate::template::RESET_ID;
        match self.templates.get(id) {
            Some(t) if t.reset && t.body.instrs.is_empty() => self.encode(
                &Message {
                    template_id: id,
                    fields: Vec::new(),
                },
                out,
            ),
            _ => Err(CodecError::new(ErrorKind::UnknownTemplate(id), 0)),
        }
    }

    /// Appends the encoding of `msg` to `out`. On error `out` is left as it was, but the
    /// dictionaries may have moved on: reset before encoding more.
    pub fn encode(&mut self, msg: &Message, out: &mut Vec<u8>) -> Result<(), CodecError> {
        let start = out.len();
        let r = self.state.message(&self.templates, msg, out, true);
        if r.is_err() {
            out.truncate(start);
            self.state.bits.clear();
        }
        r.map_err(|e| *e)
    }
}

impl State_ {
    fn message(&mut self, ts: &Templates, msg: &Message, out: &mut Vec<u8>, top: bool) -> Res<()> {
        let Some(t) = ts.get(msg.template_id) else {
            return fail(ErrorKind::UnknownTemplate(msg.template_id));
        };
        let send_tid = self.last_tid != Some(t.id);
        self.last_tid = Some(t.id);
        if top && t.reset {
            self.dict.reset();
            // The next message sends its template id: the spec resets every dictionary
            // entry, the template id's copy among them (§6.3.1, §10), so a strict decoder
            // holds none after this message. Decoders that keep it (this one, mFAST) read
            // the explicit id as well.
            self.last_tid = None;
        }
        let at = out.len();
        let reserve = (t.body.max_bits + 1).div_ceil(7) as usize;
        out.resize(at + reserve, 0);
        let base = self.bits.len();
        self.bits.push(send_tid);
        if send_tid {
            put_u64(out, t.id as u64);
        }
        self.fields(ts, &t.body.instrs, &msg.fields, out)
            .map_err(|e| e.in_template(&t.name))?;
        patch_pmap(out, at, reserve, &self.bits[base..]);
        self.bits.truncate(base);
        Ok(())
    }

    fn fields(
        &mut self,
        ts: &Templates,
        instrs: &[Instr],
        fields: &[Option<Value>],
        out: &mut Vec<u8>,
    ) -> Res<()> {
        if instrs.len() != fields.len() {
            return fail(ErrorKind::TypeMismatch);
        }
        for (instr, v) in instrs.iter().zip(fields) {
            let r = match self.specialised(instr, v.as_ref(), out) {
                Ok(true) => Ok(()),
                Ok(false) => self.instr(ts, instr, v.as_ref(), out),
                Err(e) => Err(e),
            };
            if let Err(e) = r {
                return Err(e.in_field(&instr.name));
            }
        }
        Ok(())
    }

    fn nested(
        &mut self,
        ts: &Templates,
        body: &Segment,
        fields: &[Option<Value>],
        out: &mut Vec<u8>,
    ) -> Res<()> {
        let at = out.len();
        let reserve = if body.has_pmap {
            body.max_bits.div_ceil(7).max(1) as usize
        } else {
            0
        };
        out.resize(at + reserve, 0);
        let base = self.bits.len();
        self.fields(ts, &body.instrs, fields, out)?;
        if body.has_pmap {
            patch_pmap(out, at, reserve, &self.bits[base..]);
        }
        self.bits.truncate(base);
        Ok(())
    }

    fn instr(
        &mut self,
        ts: &Templates,
        instr: &Instr,
        v: Option<&Value>,
        out: &mut Vec<u8>,
    ) -> Res<()> {
        match &instr.kind {
            Kind::Scalar(s) => {
                let v = v.map(|v| scalar_value(s.ty, v)).transpose()?;
                self.scalar(s, v, out)
            }
            Kind::SplitDecimal { exponent, mantissa } => {
                let d = match v {
                    None => None,
                    Some(Value::Decimal(d)) => Some(*d),
                    Some(_) => return fail(ErrorKind::TypeMismatch),
                };
                let e = d.map(|d| Sv::Int(d.exponent as i64 as u64));
                if d.is_some_and(|d| !(-63..=63).contains(&d.exponent)) {
                    return fail(ErrorKind::ExponentRange(d.map_or(0, |d| d.exponent) as i64));
                }
                self.scalar(exponent, e, out)?;
                match d {
                    Some(d) => self.scalar(mantissa, Some(Sv::Int(d.mantissa as u64)), out),
                    None => Ok(()),
                }
            }
            Kind::Sequence { length, body, .. } => {
                let items = match v {
                    None => None,
                    Some(Value::Sequence(items)) => Some(items),
                    Some(_) => return fail(ErrorKind::TypeMismatch),
                };
                self.scalar(length, items.map(|i| Sv::Int(i.len() as u64)), out)?;
                for item in items.into_iter().flatten() {
                    self.nested(ts, body, item, out)?;
                }
                Ok(())
            }
            Kind::Group(body) => {
                let fields = match v {
                    None if instr.optional => {
                        self.bits.push(false);
                        return Ok(());
                    }
                    Some(Value::Group(f)) => f,
                    None => return fail(ErrorKind::NoValueGiven),
                    Some(_) => return fail(ErrorKind::TypeMismatch),
                };
                if instr.optional {
                    self.bits.push(true);
                }
                self.nested(ts, body, fields, out)
            }
            Kind::DynamicRef => match v {
                Some(Value::Message(m)) => self.message(ts, m, out, false),
                _ => fail(ErrorKind::TypeMismatch),
            },
        }
    }

    fn get(&self, s: &Scalar) -> Sv<'_> {
        let slot = self.dict.slot(s.slot);
        match s.ty {
            FieldType::Int(_) => Sv::Int(slot.int),
            FieldType::Decimal => Sv::Dec(Decimal::new(slot.int as i64 as i32, slot.mantissa)),
            _ => Sv::Bytes(&slot.bytes),
        }
    }

    fn set(&mut self, s: &Scalar, v: Option<Sv>) {
        if s.typed_entry {
            self.dict.set_type(s.slot, s.ty);
        }
        match v {
            None => self.dict.set_empty(s.slot),
            Some(Sv::Int(i)) => self.dict.set_int(s.slot, i),
            Some(Sv::Dec(d)) => self.dict.set_decimal(s.slot, d.exponent, d.mantissa),
            Some(Sv::Bytes(b)) => self.dict.set_bytes(s.slot, b),
        }
    }

    fn scalar(&mut self, s: &Scalar, v: Option<Sv>, out: &mut Vec<u8>) -> Res<()> {
        // A mandatory field needs a value, a mandatory constant included (spec Appendix
        // 3.2.1: an absent input is an error).
        if v.is_none() && !s.optional {
            return fail(ErrorKind::NoValueGiven);
        }
        match s.op {
            Op::None => write(out, s.ty, s.optional, v),
            Op::Constant => {
                let init = initial(s);
                if v.is_some() && v != init {
                    return fail(ErrorKind::ConstantMismatch);
                }
                if s.optional {
                    self.bits.push(v.is_some());
                }
                Ok(())
            }
            Op::Default => {
                let omit = v == initial(s);
                self.bits.push(!omit);
                if omit {
                    Ok(())
                } else {
                    write(out, s.ty, s.optional, v)
                }
            }
            Op::Copy | Op::Increment | Op::Tail => {
                let state = self.dict.state(s.slot);
                // An entry of another type: the decoder reads it (D4) for a 0 bit, and
                // for a tail's base; copy and increment send the value instead.
                let foreign = s.typed_entry && self.dict.holds_other_type(s.slot, s.ty);
                if foreign && s.op == Op::Tail && v.is_some() {
                    return fail(ErrorKind::TypeMismatch);
                }
                // What the decoder makes of a 0 bit; None where it would be an error.
                let implied = match state {
                    _ if foreign => None,
                    State::Assigned => Some(Some(match (s.op, self.get(s), s.ty) {
                        (Op::Increment, Sv::Int(p), FieldType::Int(it)) => Sv::Int(it.increment(p)),
                        (_, p, _) => p,
                    })),
                    State::Undefined => match initial(s) {
                        Some(i) => Some(Some(i)),
                        None => s.optional.then_some(None),
                    },
                    State::Empty => s.optional.then_some(None),
                };
                let omit = implied == Some(v);
                self.bits.push(!omit);
                if omit {
                    if state != State::Assigned || s.op == Op::Increment {
                        self.set(s, v);
                    }
                    return Ok(());
                }
                match (s.op, v) {
                    (Op::Tail, Some(Sv::Bytes(b))) => self.tail(s, state, b, out)?,
                    _ => write(out, s.ty, s.optional, v)?,
                }
                self.set(s, v);
                Ok(())
            }
            Op::Delta => self.delta(s, v, out),
        }
    }

    /// The base value delta and tail start from when the entry is not assigned.
    fn base<'a>(&'a self, s: &'a Scalar, state: State) -> Res<Sv<'a>> {
        Ok(match state {
            State::Assigned => self.get(s),
            State::Undefined => initial(s).unwrap_or(match s.ty {
                FieldType::Int(_) => Sv::Int(0),
                FieldType::Decimal => Sv::Dec(Decimal::new(0, 0)),
                _ => Sv::Bytes(&[]),
            }),
            State::Empty => return fail(ErrorKind::EmptyPrevious),
        })
    }

    fn tail(&mut self, s: &Scalar, state: State, v: &[u8], out: &mut Vec<u8>) -> Res<()> {
        let base = match state {
            State::Assigned => self.base(s, state)?,
            _ => self.base(s, State::Undefined)?,
        };
        let Sv::Bytes(base) = base else {
            return fail(ErrorKind::TypeMismatch);
        };
        let tail = if v.len() > base.len() {
            v
        } else if v.len() == base.len() {
            let common = base.iter().zip(v).take_while(|(a, b)| a == b).count();
            &v[common..]
        } else {
            // A tail can only keep or grow the length.
            return fail(ErrorKind::ConstantMismatch);
        };
        write(out, s.ty, s.optional, Some(Sv::Bytes(tail)))
    }

    fn delta(&mut self, s: &Scalar, v: Option<Sv>, out: &mut Vec<u8>) -> Res<()> {
        let Some(v) = v else {
            out.push(0x80);
            return Ok(());
        };
        let state = self.dict.state(s.slot);
        if s.typed_entry && self.dict.holds_other_type(s.slot, s.ty) {
            return fail(ErrorKind::TypeMismatch);
        }
        let put_len = |out: &mut Vec<u8>, d: i128| match i64::try_from(d) {
            Ok(d) if s.optional => put_nullable_i64(out, Some(d)),
            Ok(d) => put_i64(out, d),
            // Wider than i64 (spec §6.3.7.1 note).
            Err(_) => put_wide_delta(out, d, s.optional),
        };
        match (self.base(s, state)?, v) {
            (Sv::Int(b), Sv::Int(n)) => {
                let FieldType::Int(it) = s.ty else {
                    return fail(ErrorKind::TypeMismatch);
                };
                let (b, n) = if it.signed() {
                    (b as i64 as i128, n as i64 as i128)
                } else {
                    (b as i128, n as i128)
                };
                put_len(out, n - b);
            }
            (Sv::Dec(b), Sv::Dec(n)) => {
                put_len(out, n.exponent as i128 - b.exponent as i128);
                let dm = n.mantissa as i128 - b.mantissa as i128;
                match i64::try_from(dm) {
                    Ok(dm) => put_i64(out, dm),
                    Err(_) => put_wide_delta(out, dm, false),
                }
            }
            (Sv::Bytes(b), Sv::Bytes(n)) => {
                let prefix = b.iter().zip(n).take_while(|(x, y)| x == y).count();
                let suffix = b
                    .iter()
                    .rev()
                    .zip(n.iter().rev())
                    .take_while(|(x, y)| x == y)
                    .count();
                // Remove from the back and append, or from the front and prepend: whichever
                // sends fewer bytes (ties go to the back).
                let (sub, part) = if n.len() - suffix.min(n.len()) < n.len() - prefix {
                    let keep = suffix.min(b.len()).min(n.len());
                    (-((b.len() - keep) as i64) - 1, &n[..n.len() - keep])
                } else {
                    ((b.len() - prefix) as i64, &n[prefix..])
                };
                put_len(out, sub as i128);
                write(out, s.ty, false, Some(Sv::Bytes(part)))?;
            }
            _ => return fail(ErrorKind::TypeMismatch),
        }
        self.set(s, Some(v));
        Ok(())
    }
}

/// Writes a value in the field's wire form, nullable if `nullable`.
fn write(out: &mut Vec<u8>, ty: FieldType, nullable: bool, v: Option<Sv>) -> Res<()> {
    match (ty, v) {
        (FieldType::Int(it), v) => {
            let v = v.map(|v| match v {
                Sv::Int(i) => Ok(i),
                _ => fail(ErrorKind::TypeMismatch),
            });
            let v = v.transpose()?;
            match (it.signed(), nullable) {
                (true, true) => put_nullable_i64(out, v.map(|i| i as i64)),
                (false, true) => put_nullable_u64(out, v),
                (true, false) => put_i64(out, v.map_or(0, |i| i as i64)),
                (false, false) => put_u64(out, v.unwrap_or(0)),
            }
        }
        (FieldType::Decimal, None) => out.push(0x80),
        (FieldType::Decimal, Some(Sv::Dec(d))) => {
            if nullable {
                put_nullable_i64(out, Some(d.exponent as i64));
            } else {
                put_i64(out, d.exponent as i64);
            }
            put_i64(out, d.mantissa);
        }
        (FieldType::Ascii, v) => {
            let b = match v {
                None => None,
                Some(Sv::Bytes(b)) => Some(b),
                Some(_) => return fail(ErrorKind::TypeMismatch),
            };
            put_ascii(out, b, nullable);
        }
        (FieldType::Unicode | FieldType::Bytes, None) => out.push(0x80),
        (FieldType::Unicode | FieldType::Bytes, Some(Sv::Bytes(b))) => {
            if nullable {
                put_nullable_u64(out, Some(b.len() as u64));
            } else {
                put_u64(out, b.len() as u64);
            }
            out.extend_from_slice(b);
        }
        _ => return fail(ErrorKind::TypeMismatch),
    }
    Ok(())
}
