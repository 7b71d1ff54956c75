//! The general path: every instruction, by its type and operator, read from the compiled
//! tree (strings in `strings.rs`). The decoder's specialised arms (`fast.rs`) cover the common
//! combinations; this covers the rest, and is the reference they must agree with.

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
    /// The caller has checked the entry's type (`read_state`) where it must.
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

    /// The state of a field's entry as its operator reads it: a value of another type is
    /// a dynamic error (spec §6.3.1, D4). Only entries that fields of different types share
    /// are checked; no other entry can hold another type.
    #[inline(always)]
    pub(super) fn read_state(&self, s: &Scalar, at: usize) -> Res<State> {
        if s.typed_entry {
            return self.typed_state(s, at);
        }
        Ok(self.dict.state(s.slot))
    }

    #[cold]
    #[inline(never)]
    fn typed_state(&self, s: &Scalar, at: usize) -> Res<State> {
        if self.dict.holds_other_type(s.slot, s.ty) {
            return fail(ErrorKind::TypeMismatch, at);
        }
        Ok(self.dict.state(s.slot))
    }

    /// After an operator read or wrote a shared entry, the entry holds this field's type.
    /// (A NULL delta leaves the entry alone.)
    pub(super) fn retype<T>(&mut self, s: &Scalar, v: Res<Option<T>>) -> Res<Option<T>> {
        if s.typed_entry && (s.op != Op::Delta || matches!(v, Ok(Some(_)))) {
            self.dict.set_type(s.slot, s.ty);
        }
        v
    }

    fn int(
        &mut self,
        r: &mut Reader,
        s: &Scalar,
        it: IntType,
        pmap: &mut Pmap,
    ) -> Res<Option<u64>> {
        let v = self.int_value(r, s, it, pmap);
        self.retype(s, v)
    }

    #[inline]
    fn int_value(
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
                let assigned = self.read_state(s, r.pos)? == State::Assigned;
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
                    r.nullable_i64().map(|d| d.map(i128::from))
                } else {
                    r.i64().map(|d| Some(d as i128))
                };
                let d = match d {
                    Ok(d) => d,
                    Err(e) => wide_delta(r, at, s.optional, e)?,
                };
                let Some(d) = d else { return Ok(None) };
                let base = match self.read_state(s, at)? {
                    State::Assigned => self.dict.slot(s.slot).int,
                    State::Undefined => init().unwrap_or(0),
                    State::Empty => return fail(ErrorKind::EmptyPrevious, at),
                };
                let (lo, hi) = (it.min() as i64, it.max() as u64);
                let bits = add_int_delta(base, d, it.signed(), lo, hi, at)?;
                self.dict.set_int(s.slot, bits);
                Ok(Some(bits))
            }
            Op::Tail => fail(ErrorKind::TypeMismatch, r.pos),
        }
    }

    fn decimal(&mut self, r: &mut Reader, s: &Scalar, pmap: &mut Pmap) -> Res<Option<Decimal>> {
        let v = self.decimal_value(r, s, pmap);
        self.retype(s, v)
    }

    fn decimal_value(
        &mut self,
        r: &mut Reader,
        s: &Scalar,
        pmap: &mut Pmap,
    ) -> Res<Option<Decimal>> {
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
                self.read_state(s, r.pos)?;
                Ok(self.dict_value(s, r.pos)?.map(|_| slot_value(&self.dict)))
            }
            Op::Delta => {
                let at = r.pos;
                let de = if s.optional {
                    r.nullable_i64()
                } else {
                    r.i64().map(Some)
                };
                let wide = |st: &mut Self, r: &mut Reader, e| {
                    st.wide_decimal_delta(r, s.slot, init(), s.optional, at, e, Some(s))
                };
                let de = match de {
                    Ok(Some(de)) => de,
                    Ok(None) => return Ok(None),
                    Err(e) => return wide(self, r, e),
                };
                let dm = match r.i64() {
                    Ok(dm) => dm,
                    Err(e) => return wide(self, r, e),
                };
                let base = match self.read_state(s, at)? {
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

    /// A delta wider than 64 bits (spec §6.3.7.1 note) fails the narrow read of the
    /// specialised delta arms with IntegerOverflow at the field's start: the field is decoded
    /// again, from there, by the general path, which reads deltas in 128 bits. Other errors
    /// pass. Only an error leads here, so the arms stay as they were.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn retry_wide<H: Handler>(
        &mut self,
        ts: &Templates,
        r: &mut Reader,
        instr: &Instr,
        pmap: &mut Pmap,
        h: &mut H,
        depth: u32,
        e: Box<crate::CodecError>,
    ) -> Res<()> {
        use crate::template::Code::*;
        if e.kind != ErrorKind::IntegerOverflow {
            return Err(e);
        }
        match instr.compiled.code {
            // No presence-map bit, and no dictionary entry touched before the delta.
            UDeltaM | UDeltaO | IDeltaM | IDeltaO | DDeltaM | DDeltaO => {}
            // The exponent's default took one bit.
            SplitDefaultDeltaM | SplitDefaultDeltaO => pmap.unread(r.buf),
            _ => return Err(e),
        }
        r.pos = e.offset;
        self.instr(ts, r, instr, pmap, h, depth)
    }

    /// A decimal delta (at `at`) one of whose parts did not fit `i64` (`e`): read again in
    /// 128 bits, the wide path. `typed` is the field where its entry's type is checked.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn wide_decimal_delta(
        &mut self,
        r: &mut Reader,
        slot: u32,
        init: Option<Decimal>,
        nullable: bool,
        at: usize,
        e: Box<crate::CodecError>,
        typed: Option<&Scalar>,
    ) -> Res<Option<Decimal>> {
        let Some(de) = wide_delta(r, at, nullable, e)? else {
            return Ok(None);
        };
        let dm = r.wide_i128()?;
        if let Some(s) = typed {
            self.read_state(s, at)?;
        }
        let base = match self.dict.state(slot) {
            State::Assigned => {
                let sl = self.dict.slot(slot);
                Decimal::new(sl.int as i64 as i32, sl.mantissa)
            }
            State::Undefined => init.unwrap_or(Decimal::new(0, 0)),
            State::Empty => return fail(ErrorKind::EmptyPrevious, at),
        };
        let exponent = (base.exponent as i128).saturating_add(de);
        if !(-63..=63).contains(&exponent) {
            let shown = exponent.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
            return fail(ErrorKind::ExponentRange(shown), at);
        }
        let Ok(m) = i64::try_from((base.mantissa as i128).saturating_add(dm)) else {
            return fail(ErrorKind::MantissaRange, at);
        };
        self.dict.set_decimal(slot, exponent as i32, m);
        Ok(Some(Decimal::new(exponent as i32, m)))
    }

    /// Sets the slot to the base value used when the entry is not assigned: the initial
    /// value or the empty string.
    pub(super) fn set_base(&mut self, s: &Scalar) {
        match &s.initial {
            Some(Initial::Bytes(b)) => self.dict.set_bytes(s.slot, b),
            _ => self.dict.set_bytes(s.slot, &[]),
        }
    }
}

/// A decimal from the stream, nullable if `optional`.
fn read_decimal_opt(r: &mut Reader, optional: bool) -> Res<Option<Decimal>> {
    if optional {
        read_decimal::<true>(r)
    } else {
        read_decimal::<false>(r)
    }
}

/// A delta that did not fit `i64` (`e` says why the narrow read failed), read again as up to
/// 128 bits from `at` (spec §6.3.7.1 note); None for NULL. Off the hot path: the narrow
/// read's error branch is the only way here.
#[cold]
#[inline(never)]
pub(super) fn wide_delta(
    r: &mut Reader,
    at: usize,
    nullable: bool,
    e: Box<crate::CodecError>,
) -> Res<Option<i128>> {
    if e.kind != ErrorKind::IntegerOverflow {
        return Err(e);
    }
    r.pos = at;
    Ok(match r.wide_i128()? {
        0 if nullable => None,
        d if nullable && d > 0 => Some(d - 1),
        d => Some(d),
    })
}

/// An integer delta's sum with its base, range-checked in 128 bits: the wide path.
pub(super) fn add_int_delta(
    base: u64,
    d: i128,
    signed: bool,
    lo: i64,
    hi: u64,
    at: usize,
) -> Res<u64> {
    let base = if signed {
        base as i64 as i128
    } else {
        base as i128
    };
    let v = base.saturating_add(d);
    if v < lo as i128 || v > hi as i128 {
        return fail(ErrorKind::DeltaOverflow, at);
    }
    Ok(if signed { v as i64 as u64 } else { v as u64 })
}

/// A decimal delta (spec §6.3.7.1): exponent and mantissa deltas added to the base, the
/// exponent kept within [-63, 63] and the mantissa within 64 bits.
#[inline]
pub(super) fn add_decimal_delta(base: Decimal, de: i64, dm: i64, at: usize) -> Res<Decimal> {
    let e = (base.exponent as i64).saturating_add(de);
    if !(-63..=63).contains(&e) {
        return fail(ErrorKind::ExponentRange(e), at);
    }
    let Some(m) = base.mantissa.checked_add(dm) else {
        return fail(ErrorKind::MantissaRange, at);
    };
    Ok(Decimal::new(e as i32, m))
}
