//! The general path: every instruction, by its type and operator, read from the compiled
//! tree. The decoder's specialised arms (`fast.rs`) cover the common combinations; this
//! covers the rest, and is the reference they must agree with.

use super::fast::read_decimal;
use super::{fail, Res, Src, State_};
use crate::dictionary::{Dictionary, State};
use crate::error::ErrorKind;
use crate::handler::{FieldValue, Handler};
use crate::template::{FieldType, Initial, Instr, IntType, Kind, Op, Scalar, Segment, Templates};
use crate::value::Decimal;
use crate::wire::{Pmap, Reader};

impl State_ {
    /// Decodes any instruction.
    pub(super) fn instr<H: Handler>(
        &mut self,
        ts: &Templates,
        r: &mut Reader,
        instr: &Instr,
        pmap: &mut Pmap,
        h: &mut H,
        depth: u32,
    ) -> Res<()> {
        match &instr.kind {
            Kind::Scalar(s) => match s.ty {
                FieldType::Int(it) => match self.int(r, s, it, pmap)? {
                    Some(v) if it.signed() => h.value(instr, FieldValue::Int(v as i64)),
                    Some(v) => h.value(instr, FieldValue::UInt(v)),
                    None => h.absent(instr),
                },
                FieldType::Decimal => match self.decimal(r, s, pmap)? {
                    Some(d) => h.value(instr, FieldValue::Decimal(d)),
                    None => h.absent(instr),
                },
                ty => {
                    let at = r.pos;
                    let src = self.string(r, s, pmap)?;
                    self.emit_string(instr, s, ty, src, at, h)?;
                }
            },
            Kind::SplitDecimal { exponent, mantissa } => {
                let at = r.pos;
                let Some(e) = self.int(r, exponent, IntType::I32, pmap)? else {
                    h.absent(instr);
                    return Ok(());
                };
                let e = e as i64;
                if !(-63..=63).contains(&e) {
                    return fail(ErrorKind::ExponentRange(e), at);
                }
                let Some(m) = self.int(r, mantissa, IntType::I64, pmap)? else {
                    return fail(ErrorKind::MissingValue, r.pos);
                };
                h.value(instr, FieldValue::Decimal(Decimal::new(e as i32, m as i64)));
            }
            Kind::Sequence { length, body, .. } => {
                let at = r.pos;
                let len = self.int(r, length, IntType::U32, pmap)?;
                self.sequence(ts, r, instr, body, len, at, h, depth)?;
            }
            Kind::Group(body) => {
                if instr.optional && !pmap.next(r.buf) {
                    h.absent(instr);
                    return Ok(());
                }
                h.begin_group(instr);
                self.nested(ts, r, body, h, depth)?;
                h.end_group();
            }
            Kind::DynamicRef => {
                if depth >= self.opts.max_depth {
                    return fail(ErrorKind::TooDeep(self.opts.max_depth), r.pos);
                }
                self.message(ts, r, h, depth + 1)?;
            }
        }
        Ok(())
    }

    /// Hands a string field's value to the handler: from the scratch space, the dictionary or
    /// the initial value, checked against the length limit (and UTF-8 for unicode).
    #[inline]
    pub(super) fn emit_string<H: Handler>(
        &mut self,
        instr: &Instr,
        s: &Scalar,
        ty: FieldType,
        src: Option<Src>,
        at: usize,
        h: &mut H,
    ) -> Res<()> {
        let Some(src) = src else {
            h.absent(instr);
            return Ok(());
        };
        let bytes: &[u8] = match src {
            Src::Scratch => &self.scratch,
            Src::Slot(i) => &self.dict.slot(i).bytes,
            Src::Init => match &s.initial {
                Some(Initial::Bytes(b)) => b,
                _ => &[],
            },
        };
        if bytes.len() > self.opts.max_string_len {
            return fail(ErrorKind::LengthTooLong(bytes.len() as u64), at);
        }
        let v = match ty {
            FieldType::Ascii => FieldValue::Ascii(bytes),
            FieldType::Unicode => match std::str::from_utf8(bytes) {
                Ok(s) => FieldValue::Unicode(s),
                Err(_) => return fail(ErrorKind::InvalidUtf8, at),
            },
            _ => FieldValue::Bytes(bytes),
        };
        h.value(instr, v);
        Ok(())
    }

    /// A sequence's elements, once its length is known (None: the sequence is absent).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(super) fn sequence<H: Handler>(
        &mut self,
        ts: &Templates,
        r: &mut Reader,
        instr: &Instr,
        body: &Segment,
        len: Option<u64>,
        at: usize,
        h: &mut H,
        depth: u32,
    ) -> Res<()> {
        let Some(len) = len else {
            h.absent(instr);
            return Ok(());
        };
        if len > self.opts.max_sequence_len as u64 {
            return fail(ErrorKind::SequenceTooLong(len), at);
        }
        // Each element with a presence map takes at least one byte, so a length beyond the
        // input means the message is cut short; say so before anything is allocated.
        if body.has_pmap && len > r.remaining() as u64 {
            return fail(ErrorKind::Truncated, r.buf.len());
        }
        h.begin_sequence(instr, len as u32);
        for i in 0..len as u32 {
            h.begin_element(i);
            self.nested(ts, r, body, h, depth)?;
            h.end_element();
        }
        h.end_sequence();
        Ok(())
    }

    /// Reads an integer of the field's type from the stream, nullable if optional.
    #[inline(always)]
    fn read_int(r: &mut Reader, it: IntType, optional: bool) -> Res<Option<u64>> {
        let at = r.pos;
        if it.signed() {
            let v = if optional {
                r.nullable_i64()?
            } else {
                Some(r.i64()?)
            };
            if let Some(v) = v {
                if it != IntType::I64 && ((v as i128) < it.min() || (v as i128) > it.max()) {
                    return fail(ErrorKind::IntegerOverflow, at);
                }
            }
            Ok(v.map(|v| v as u64))
        } else {
            let v = if optional {
                r.nullable_u64()?
            } else {
                Some(r.u64()?)
            };
            if let Some(v) = v {
                if it != IntType::U64 && v as i128 > it.max() {
                    return fail(ErrorKind::IntegerOverflow, at);
                }
            }
            Ok(v)
        }
    }

    /// The value for "not in the stream" under copy, increment and tail (spec §6.3.5-8).
    #[inline]
    pub(super) fn dict_value(&mut self, s: &Scalar, at: usize) -> Res<Option<()>> {
        match self.dict.state(s.slot) {
            State::Assigned => Ok(Some(())),
            State::Undefined => match &s.initial {
                Some(init) => {
                    self.dict.set_initial(s.slot, init);
                    Ok(Some(()))
                }
                None if s.optional => {
                    self.dict.set_empty(s.slot);
                    Ok(None)
                }
                None if s.op == Op::Tail => fail(ErrorKind::EmptyPrevious, at),
                None => fail(ErrorKind::MissingValue, at),
            },
            State::Empty if s.optional => Ok(None),
            // Tail names D7 here where copy and increment name D6.
            State::Empty if s.op == Op::Tail => fail(ErrorKind::BadSubtraction(0), at),
            State::Empty => fail(ErrorKind::EmptyPrevious, at),
        }
    }

    #[inline]
    fn int(
        &mut self,
        r: &mut Reader,
        s: &Scalar,
        it: IntType,
        pmap: &mut Pmap,
    ) -> Res<Option<u64>> {
        let init = || match s.initial {
            Some(Initial::Int(v)) => Some(v),
            _ => None,
        };
        match s.op {
            Op::None => Self::read_int(r, it, s.optional),
            Op::Constant => Ok(if s.optional && !pmap.next(r.buf) {
                None
            } else {
                init()
            }),
            Op::Default => {
                if pmap.next(r.buf) {
                    Self::read_int(r, it, s.optional)
                } else {
                    Ok(init())
                }
            }
            Op::Copy | Op::Increment => {
                if pmap.next(r.buf) {
                    let v = Self::read_int(r, it, s.optional)?;
                    match v {
                        Some(v) => self.dict.set_int(s.slot, v),
                        None => self.dict.set_empty(s.slot),
                    }
                    return Ok(v);
                }
                let assigned = self.dict.state(s.slot) == State::Assigned;
                if self.dict_value(s, r.pos)?.is_none() {
                    return Ok(None);
                }
                let mut v = self.dict.slot(s.slot).int;
                if s.op == Op::Increment && assigned {
                    v = it.increment(v);
                    self.dict.set_int(s.slot, v);
                }
                Ok(Some(v))
            }
            Op::Delta => {
                let at = r.pos;
                let d = if s.optional {
                    r.nullable_i64()?
                } else {
                    Some(r.i64()?)
                };
                let Some(d) = d else { return Ok(None) };
                let base = match self.dict.state(s.slot) {
                    State::Assigned => self.dict.slot(s.slot).int,
                    State::Undefined => init().unwrap_or(0),
                    State::Empty => return fail(ErrorKind::EmptyPrevious, at),
                };
                let base = if it.signed() {
                    base as i64 as i128
                } else {
                    base as i128
                };
                let v = base + d as i128;
                if v < it.min() || v > it.max() {
                    return fail(ErrorKind::DeltaOverflow, at);
                }
                let bits = if it.signed() {
                    v as i64 as u64
                } else {
                    v as u64
                };
                self.dict.set_int(s.slot, bits);
                Ok(Some(bits))
            }
            Op::Tail => fail(ErrorKind::TypeMismatch, r.pos),
        }
    }

    fn decimal(&mut self, r: &mut Reader, s: &Scalar, pmap: &mut Pmap) -> Res<Option<Decimal>> {
        let init = || match s.initial {
            Some(Initial::Decimal { exponent, mantissa }) => Some(Decimal::new(exponent, mantissa)),
            _ => None,
        };
        let slot_value = |d: &Dictionary| {
            let sl = d.slot(s.slot);
            Decimal::new(sl.int as i64 as i32, sl.mantissa)
        };
        match s.op {
            Op::None => read_decimal_opt(r, s.optional),
            Op::Constant => Ok(if s.optional && !pmap.next(r.buf) {
                None
            } else {
                init()
            }),
            Op::Default => {
                if pmap.next(r.buf) {
                    read_decimal_opt(r, s.optional)
                } else {
                    Ok(init())
                }
            }
            Op::Copy => {
                if pmap.next(r.buf) {
                    let v = read_decimal_opt(r, s.optional)?;
                    match v {
                        Some(d) => self.dict.set_decimal(s.slot, d.exponent, d.mantissa),
                        None => self.dict.set_empty(s.slot),
                    }
                    return Ok(v);
                }
                Ok(self.dict_value(s, r.pos)?.map(|_| slot_value(&self.dict)))
            }
            Op::Delta => {
                let at = r.pos;
                let de = if s.optional {
                    r.nullable_i64()?
                } else {
                    Some(r.i64()?)
                };
                let Some(de) = de else { return Ok(None) };
                let dm = r.i64()?;
                let base = match self.dict.state(s.slot) {
                    State::Assigned => slot_value(&self.dict),
                    State::Undefined => init().unwrap_or(Decimal::new(0, 0)),
                    State::Empty => return fail(ErrorKind::EmptyPrevious, at),
                };
                let d = add_decimal_delta(base, de, dm, at)?;
                self.dict.set_decimal(s.slot, d.exponent, d.mantissa);
                Ok(Some(d))
            }
            Op::Increment | Op::Tail => fail(ErrorKind::TypeMismatch, r.pos),
        }
    }

    fn string(&mut self, r: &mut Reader, s: &Scalar, pmap: &mut Pmap) -> Res<Option<Src>> {
        self.string_as(r, s, s.op, s.optional, s.ty == FieldType::Ascii, pmap)
    }

    /// A string under `op`: given as arguments so the specialised arms, calling with
    /// constants, get the branches folded away.
    #[inline(always)]
    pub(super) fn string_as(
        &mut self,
        r: &mut Reader,
        s: &Scalar,
        op: Op,
        optional: bool,
        ascii: bool,
        pmap: &mut Pmap,
    ) -> Res<Option<Src>> {
        let has_init = s.initial.is_some();
        match op {
            Op::None => {
                Ok(read_string(r, ascii, optional, &mut self.scratch)?.then_some(Src::Scratch))
            }
            Op::Constant => Ok((!optional || pmap.next(r.buf)).then_some(Src::Init)),
            Op::Default => {
                if pmap.next(r.buf) {
                    Ok(read_string(r, ascii, optional, &mut self.scratch)?.then_some(Src::Scratch))
                } else {
                    Ok(has_init.then_some(Src::Init))
                }
            }
            Op::Copy => {
                if pmap.next(r.buf) {
                    let present =
                        read_string(r, ascii, optional, &mut self.dict.assign(s.slot).bytes)?;
                    if !present {
                        self.dict.set_empty(s.slot);
                    }
                    return Ok(present.then_some(Src::Slot(s.slot)));
                }
                Ok(self.dict_value(s, r.pos)?.map(|_| Src::Slot(s.slot)))
            }
            Op::Tail => {
                if !pmap.next(r.buf) {
                    return Ok(self.dict_value(s, r.pos)?.map(|_| Src::Slot(s.slot)));
                }
                if !read_string(r, ascii, optional, &mut self.scratch)? {
                    self.dict.set_empty(s.slot);
                    return Ok(None);
                }
                if self.dict.state(s.slot) != State::Assigned {
                    self.set_base(s);
                }
                let base = &mut self.dict.assign(s.slot).bytes;
                let tail = &self.scratch;
                if tail.len() >= base.len() {
                    base.clear();
                } else {
                    base.truncate(base.len() - tail.len());
                }
                base.extend_from_slice(tail);
                Ok(Some(Src::Slot(s.slot)))
            }
            Op::Delta => {
                let at = r.pos;
                let sub = if optional {
                    r.nullable_i64()?
                } else {
                    Some(r.i64()?)
                };
                let Some(sub) = sub else { return Ok(None) };
                read_string(r, ascii, false, &mut self.scratch)?;
                match self.dict.state(s.slot) {
                    State::Assigned => {}
                    State::Undefined => self.set_base(s),
                    State::Empty => return fail(ErrorKind::EmptyPrevious, at),
                }
                if sub > i32::MAX as i64 || sub < i32::MIN as i64 {
                    return fail(ErrorKind::BadSubtraction(sub), at);
                }
                let base = &mut self.dict.assign(s.slot).bytes;
                let (front, n) = if sub < 0 {
                    (true, (-sub - 1) as usize)
                } else {
                    (false, sub as usize)
                };
                if n > base.len() {
                    return fail(ErrorKind::BadSubtraction(sub), at);
                }
                if front {
                    base.drain(..n);
                    base.splice(0..0, self.scratch.iter().copied());
                } else {
                    base.truncate(base.len() - n);
                    base.extend_from_slice(&self.scratch);
                }
                Ok(Some(Src::Slot(s.slot)))
            }
            Op::Increment => fail(ErrorKind::TypeMismatch, r.pos),
        }
    }

    /// Sets the slot to the base value used when the entry is not assigned: the initial
    /// value or the empty string.
    fn set_base(&mut self, s: &Scalar) {
        match &s.initial {
            Some(Initial::Bytes(b)) => self.dict.set_bytes(s.slot, b),
            _ => self.dict.set_bytes(s.slot, &[]),
        }
    }
}

/// Reads a string value into `out`: an ASCII stop-bit string or a length-prefixed byte
/// vector (unicode strings are byte vectors on the wire). Returns false for NULL.
pub(super) fn read_string(
    r: &mut Reader,
    ascii: bool,
    nullable: bool,
    out: &mut Vec<u8>,
) -> Res<bool> {
    out.clear();
    if !ascii {
        let len = if nullable {
            r.nullable_u64()?
        } else {
            Some(r.u64()?)
        };
        let Some(len) = len else { return Ok(false) };
        out.extend_from_slice(r.bytes(len)?);
        return Ok(true);
    }
    let at = r.pos;
    let mut e = r.entity()?;
    // Spec §10.6.3: a nullable string may carry one extra zero preamble; without it, an
    // entity value of zero (0x80) is NULL.
    if nullable {
        if e == [0x80] {
            return Ok(false);
        }
        if e[0] == 0 {
            e = &e[1..];
            // "A" behind the nullable preamble alone: the preamble was not needed.
            if r.strict && e[0] & 0x7f != 0 {
                return fail(ErrorKind::OverlongString, at);
            }
        }
    }
    // The non-nullable reading: a zero preamble is removed; what remains is the string.
    if e[0] & 0x7f == 0 {
        if e.len() == 1 {
            return Ok(true);
        }
        e = &e[1..];
        // Bits left that do not start with seven zeros: overlong (R9), but readable.
        if r.strict && e[0] & 0x7f != 0 {
            return fail(ErrorKind::OverlongString, at);
        }
    }
    out.extend_from_slice(e);
    if let Some(last) = out.last_mut() {
        *last &= 0x7f;
    }
    Ok(true)
}

/// A decimal from the stream, nullable if `optional`.
fn read_decimal_opt(r: &mut Reader, optional: bool) -> Res<Option<Decimal>> {
    if optional {
        read_decimal::<true>(r)
    } else {
        read_decimal::<false>(r)
    }
}

/// A decimal delta (spec §6.3.7.1): exponent and mantissa deltas added to the base, the
/// exponent kept within [-63, 63] and the mantissa within 64 bits.
#[inline]
pub(super) fn add_decimal_delta(base: Decimal, de: i64, dm: i64, at: usize) -> Res<Decimal> {
    let e = base.exponent as i64 + de;
    if !(-63..=63).contains(&e) {
        return fail(ErrorKind::ExponentRange(e), at);
    }
    let Some(m) = base.mantissa.checked_add(dm) else {
        return fail(ErrorKind::MantissaRange, at);
    };
    Ok(Decimal::new(e as i32, m))
}
