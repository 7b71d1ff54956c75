//! The specialised arms: one per [`Code`], each the general operator logic instantiated for
//! one (class, operator, presence) through const generics, so the compiler folds every test
//! on them away. They must decode exactly as the general path does; the conformance and
//! corpus tests run through both, and `tests.rs` compares them message by message.

use super::generic::add_decimal_delta;
use super::strings::read_string;
use super::{fail, Res, State_};
use crate::dictionary::State;
use crate::error::ErrorKind;
use crate::handler::{FieldValue, Handler};
use crate::template::{
    Code, Initial, Instr, Kind, Op, Operand, Templates, CONSTANT, COPY, DEFAULT, DELTA, INCREMENT,
    NONE,
};
use crate::value::Decimal;
use crate::wire::{Pmap, Reader};

impl State_ {
    /// Decodes one instruction through the arm of `code` (its own, or `Generic`).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn dispatch<H: Handler>(
        &mut self,
        code: Code,
        ts: &Templates,
        r: &mut Reader,
        instr: &Instr,
        pmap: &mut Pmap,
        h: &mut H,
        depth: u32,
    ) -> Res<()> {
        use Code::*;
        let a = &instr.compiled.a;
        macro_rules! uint {
            ($op:expr, $opt:expr) => {{
                let v = self.int_op::<false, { $op }, $opt>(r, a, pmap)?;
                emit_int::<false, H>(instr, v, h);
            }};
        }
        macro_rules! int {
            ($op:expr, $opt:expr) => {{
                let v = self.int_op::<true, { $op }, $opt>(r, a, pmap)?;
                emit_int::<true, H>(instr, v, h);
            }};
        }
        macro_rules! dec {
            ($op:expr, $opt:expr) => {{
                match self.decimal_op::<{ $op }, $opt>(r, a, pmap)? {
                    Some(d) => h.value(instr, FieldValue::Decimal(d)),
                    None => h.absent(instr),
                }
            }};
        }
        macro_rules! ascii {
            ($op:expr, $opt:expr) => {
                self.ascii_op::<{ $op }, $opt, H>(r, instr, pmap, h)?
            };
        }
        macro_rules! string {
            ($op:expr, $opt:expr) => {{
                let Kind::Scalar(s) = &instr.kind else {
                    return self.instr(ts, r, instr, pmap, h, depth);
                };
                let at = r.pos;
                let src = self.string_as(r, s, $op, $opt, true, pmap)?;
                self.emit_string(instr, s, s.ty, src, at, h)?;
            }};
        }
        match code {
            Generic => return self.instr(ts, r, instr, pmap, h, depth),
            UNoneM => uint!(NONE, false),
            UNoneO => uint!(NONE, true),
            UConstM => uint!(CONSTANT, false),
            UConstO => uint!(CONSTANT, true),
            UDefaultM => uint!(DEFAULT, false),
            UDefaultO => uint!(DEFAULT, true),
            UCopyM => uint!(COPY, false),
            UCopyO => uint!(COPY, true),
            UIncrM => uint!(INCREMENT, false),
            UIncrO => uint!(INCREMENT, true),
            UDeltaM => uint!(DELTA, false),
            UDeltaO => uint!(DELTA, true),
            INoneM => int!(NONE, false),
            INoneO => int!(NONE, true),
            IConstM => int!(CONSTANT, false),
            IConstO => int!(CONSTANT, true),
            IDefaultM => int!(DEFAULT, false),
            IDefaultO => int!(DEFAULT, true),
            ICopyM => int!(COPY, false),
            ICopyO => int!(COPY, true),
            IIncrM => int!(INCREMENT, false),
            IIncrO => int!(INCREMENT, true),
            IDeltaM => int!(DELTA, false),
            IDeltaO => int!(DELTA, true),
            DNoneM => dec!(NONE, false),
            DNoneO => dec!(NONE, true),
            DConstM => dec!(CONSTANT, false),
            DConstO => dec!(CONSTANT, true),
            DDefaultM => dec!(DEFAULT, false),
            DDefaultO => dec!(DEFAULT, true),
            DCopyM => dec!(COPY, false),
            DCopyO => dec!(COPY, true),
            DDeltaM => dec!(DELTA, false),
            DDeltaO => dec!(DELTA, true),
            SplitDefaultDeltaM => self.split_default_delta::<false, H>(r, instr, pmap, h)?,
            SplitDefaultDeltaO => self.split_default_delta::<true, H>(r, instr, pmap, h)?,
            ANoneM => ascii!(NONE, false),
            ANoneO => ascii!(NONE, true),
            AConstM => ascii!(CONSTANT, false),
            AConstO => ascii!(CONSTANT, true),
            ADefaultM => ascii!(DEFAULT, false),
            ADefaultO => ascii!(DEFAULT, true),
            ACopyM => ascii!(COPY, false),
            ACopyO => ascii!(COPY, true),
            ATailM => string!(Op::Tail, false),
            ATailO => string!(Op::Tail, true),
            ADeltaM => string!(Op::Delta, false),
            ADeltaO => string!(Op::Delta, true),
            SequencePlain => {
                let Kind::Sequence { body, .. } = &instr.kind else {
                    return self.instr(ts, r, instr, pmap, h, depth);
                };
                let at = r.pos;
                let len = read_int::<false, false>(r, a)?;
                self.sequence(ts, r, instr, body, len, at, h, depth)?;
            }
        }
        Ok(())
    }

    /// An ASCII string under none, constant, default or copy. Values come from the input
    /// through the scratch space, from the dictionary, or straight from the template.
    #[inline(always)]
    fn ascii_op<const OP: u8, const OPT: bool, H: Handler>(
        &mut self,
        r: &mut Reader,
        instr: &Instr,
        pmap: &mut Pmap,
        h: &mut H,
    ) -> Res<()> {
        let Kind::Scalar(s) = &instr.kind else {
            unreachable!("ascii codes are given to scalars only")
        };
        let at = r.pos;
        let value: &[u8] = match OP {
            NONE => {
                if !read_ascii(r, OPT, &mut self.scratch)? {
                    h.absent(instr);
                    return Ok(());
                }
                &self.scratch
            }
            CONSTANT | DEFAULT => {
                let present = if OP == CONSTANT {
                    !OPT || pmap.next(r.buf)
                } else {
                    pmap.next(r.buf)
                };
                if OP == DEFAULT && present {
                    if !read_ascii(r, OPT, &mut self.scratch)? {
                        h.absent(instr);
                        return Ok(());
                    }
                    &self.scratch
                } else if OP == CONSTANT && !present {
                    h.absent(instr);
                    return Ok(());
                } else {
                    match &s.initial {
                        Some(Initial::Bytes(b)) => b,
                        _ => {
                            h.absent(instr);
                            return Ok(());
                        }
                    }
                }
            }
            _ => {
                // COPY
                let slot = instr.compiled.a.slot;
                if pmap.next(r.buf) {
                    if !read_ascii(r, OPT, &mut self.dict.assign(slot).bytes)? {
                        self.dict.set_empty(slot);
                        h.absent(instr);
                        return Ok(());
                    }
                } else {
                    match self.dict.state(slot) {
                        State::Assigned => {}
                        // An optional field whose last value was NULL (MOEX: one in each
                        // entry), without the general lookup's call.
                        State::Empty if OPT => {
                            h.absent(instr);
                            return Ok(());
                        }
                        _ => {
                            if self.dict_value(s, at)?.is_none() {
                                h.absent(instr);
                                return Ok(());
                            }
                        }
                    }
                }
                &self.dict.slot(slot).bytes
            }
        };
        if value.len() > self.opts.max_string_len {
            return fail(ErrorKind::LengthTooLong(value.len() as u64), at);
        }
        h.value(instr, FieldValue::Ascii(value));
        Ok(())
    }

    /// An integer under operator `OP` (spec §6.3), as integer bits (signed ones as
    /// `i64 as u64`); None when absent.
    #[inline(always)]
    fn int_op<const SIGNED: bool, const OP: u8, const OPT: bool>(
        &mut self,
        r: &mut Reader,
        a: &Operand,
        pmap: &mut Pmap,
    ) -> Res<Option<u64>> {
        let init = a.has_init.then_some(a.init);
        match OP {
            NONE => read_int::<SIGNED, OPT>(r, a),
            CONSTANT => Ok(if OPT && !pmap.next(r.buf) { None } else { init }),
            DEFAULT => {
                if pmap.next(r.buf) {
                    read_int::<SIGNED, OPT>(r, a)
                } else {
                    Ok(init)
                }
            }
            COPY | INCREMENT => {
                if pmap.next(r.buf) {
                    let v = read_int::<SIGNED, OPT>(r, a)?;
                    match v {
                        Some(v) => self.dict.set_int(a.slot, v),
                        None => self.dict.set_empty(a.slot),
                    }
                    return Ok(v);
                }
                if self.dict.state(a.slot) == State::Assigned {
                    let mut v = self.dict.slot(a.slot).int;
                    if OP == INCREMENT {
                        v = a.increment(v);
                        self.dict.set_int(a.slot, v);
                    }
                    return Ok(Some(v));
                }
                self.unassigned(a, OPT, r.pos)
            }
            _ => {
                // DELTA
                let at = r.pos;
                // A delta wider than i64 fails here with IntegerOverflow at the field's
                // start, and the field is decoded again by the general path (`retry_wide`).
                let d = if OPT {
                    match r.nullable_i64()? {
                        Some(d) => d,
                        None => return Ok(None),
                    }
                } else {
                    r.i64()?
                };
                let base = match self.dict.state(a.slot) {
                    State::Assigned => self.dict.slot(a.slot).int,
                    State::Undefined => a.init,
                    State::Empty => return fail(ErrorKind::EmptyPrevious, at),
                };
                let v = if SIGNED {
                    (base as i64)
                        .checked_add(d)
                        .filter(|&v| v >= a.lo && v <= a.hi as i64)
                        .map(|v| v as u64)
                } else {
                    base.checked_add_signed(d).filter(|&v| v <= a.hi)
                };
                let Some(v) = v else {
                    return fail(ErrorKind::DeltaOverflow, at);
                };
                self.dict.set_int(a.slot, v);
                Ok(Some(v))
            }
        }
    }

    /// Copy and increment with the entry not assigned: the initial value, absent, or an
    /// error (spec §6.3.1: D5 with no initial value, D6 for an empty mandatory entry).
    fn unassigned(&mut self, a: &Operand, optional: bool, at: usize) -> Res<Option<u64>> {
        match self.dict.state(a.slot) {
            State::Undefined if a.has_init => {
                self.dict.set_int(a.slot, a.init);
                Ok(Some(a.init))
            }
            State::Undefined if optional => {
                self.dict.set_empty(a.slot);
                Ok(None)
            }
            State::Undefined => fail(ErrorKind::MissingValue, at),
            State::Empty if optional => Ok(None),
            _ => fail(ErrorKind::EmptyPrevious, at),
        }
    }

    /// A decimal with one operator on the (exponent, mantissa) pair (spec §6.3, §10.6.2).
    #[inline(always)]
    fn decimal_op<const OP: u8, const OPT: bool>(
        &mut self,
        r: &mut Reader,
        a: &Operand,
        pmap: &mut Pmap,
    ) -> Res<Option<Decimal>> {
        let init = a
            .has_init
            .then(|| Decimal::new(a.init as i64 as i32, a.init_mantissa));
        let slot_value = |s: &Self| {
            let sl = s.dict.slot(a.slot);
            Decimal::new(sl.int as i64 as i32, sl.mantissa)
        };
        match OP {
            NONE => read_decimal::<OPT>(r),
            CONSTANT => Ok(if OPT && !pmap.next(r.buf) { None } else { init }),
            DEFAULT => {
                if pmap.next(r.buf) {
                    read_decimal::<OPT>(r)
                } else {
                    Ok(init)
                }
            }
            COPY => {
                if pmap.next(r.buf) {
                    let v = read_decimal::<OPT>(r)?;
                    match v {
                        Some(d) => self.dict.set_decimal(a.slot, d.exponent, d.mantissa),
                        None => self.dict.set_empty(a.slot),
                    }
                    return Ok(v);
                }
                match self.dict.state(a.slot) {
                    State::Assigned => Ok(Some(slot_value(self))),
                    State::Undefined if a.has_init => {
                        self.dict
                            .set_decimal(a.slot, a.init as i64 as i32, a.init_mantissa);
                        Ok(init)
                    }
                    State::Undefined if OPT => {
                        self.dict.set_empty(a.slot);
                        Ok(None)
                    }
                    State::Undefined => fail(ErrorKind::MissingValue, r.pos),
                    State::Empty if OPT => Ok(None),
                    State::Empty => fail(ErrorKind::EmptyPrevious, r.pos),
                }
            }
            _ => {
                // DELTA
                let at = r.pos;
                // A part wider than i64 fails with IntegerOverflow, said at the field's
                // start, and the field is decoded again by the general path (`retry_wide`).
                let de = if OPT {
                    match r.nullable_i64()? {
                        Some(d) => d,
                        None => return Ok(None),
                    }
                } else {
                    r.i64()?
                };
                let dm = r.i64().map_err(|e| at_field_start(e, at))?;
                let base = match self.dict.state(a.slot) {
                    State::Assigned => slot_value(self),
                    State::Undefined => init.unwrap_or(Decimal::new(0, 0)),
                    State::Empty => return fail(ErrorKind::EmptyPrevious, at),
                };
                let d = add_decimal_delta(base, de, dm, at)?;
                self.dict.set_decimal(a.slot, d.exponent, d.mantissa);
                Ok(Some(d))
            }
        }
    }

    /// A decimal whose exponent has the default operator and whose mandatory mantissa has
    /// delta; the exponent carries the decimal's presence.
    #[inline(always)]
    fn split_default_delta<const OPT: bool, H: Handler>(
        &mut self,
        r: &mut Reader,
        instr: &Instr,
        pmap: &mut Pmap,
        h: &mut H,
    ) -> Res<()> {
        let c = &instr.compiled;
        let at = r.pos;
        let Some(e) = self.int_op::<true, DEFAULT, OPT>(r, &c.a, pmap)? else {
            h.absent(instr);
            return Ok(());
        };
        let e = e as i64;
        if !(-63..=63).contains(&e) {
            return fail(ErrorKind::ExponentRange(e), at);
        }
        // A wide mantissa delta: said at the field's start, for `retry_wide`.
        let m = self.int_op::<true, DELTA, false>(r, &c.b, pmap);
        let Some(m) = m.map_err(|e| at_field_start(e, at))? else {
            return fail(ErrorKind::MissingValue, r.pos);
        };
        h.value(instr, FieldValue::Decimal(Decimal::new(e as i32, m as i64)));
        Ok(())
    }
}

/// An integer too wide for 64 bits in the second part of a field is reported at the field's
/// start, where `retry_wide` decodes the field again; other errors keep their place.
#[inline(always)]
fn at_field_start(mut e: Box<crate::CodecError>, at: usize) -> Box<crate::CodecError> {
    if e.kind == ErrorKind::IntegerOverflow {
        e.offset = at;
    }
    e
}

#[inline(always)]
fn emit_int<const SIGNED: bool, H: Handler>(instr: &Instr, v: Option<u64>, h: &mut H) {
    match v {
        Some(v) if SIGNED => h.value(instr, FieldValue::Int(v as i64)),
        Some(v) => h.value(instr, FieldValue::UInt(v)),
        None => h.absent(instr),
    }
}

/// An integer from the stream, nullable if `OPT`, checked against the type's range.
#[inline(always)]
fn read_int<const SIGNED: bool, const OPT: bool>(r: &mut Reader, a: &Operand) -> Res<Option<u64>> {
    let at = r.pos;
    if SIGNED {
        let v = if OPT {
            match r.nullable_i64()? {
                Some(v) => v,
                None => return Ok(None),
            }
        } else {
            r.i64()?
        };
        if v < a.lo || v > a.hi as i64 {
            return fail(ErrorKind::IntegerOverflow, at);
        }
        Ok(Some(v as u64))
    } else {
        let v = if OPT {
            match r.nullable_u64()? {
                Some(v) => v,
                None => return Ok(None),
            }
        } else {
            r.u64()?
        };
        if v > a.hi {
            return fail(ErrorKind::IntegerOverflow, at);
        }
        Ok(Some(v))
    }
}

/// An ASCII string into `out`; false for NULL. Strings of up to 8 bytes that need no
/// preamble handling, and a lone stop bit, are found with one word load (the bytes left,
/// zero-padded, near the end of the input, where a message's last fields often are); the
/// rest take the general reader.
#[inline(always)]
pub(crate) fn read_ascii(r: &mut Reader, nullable: bool, out: &mut Vec<u8>) -> Res<bool> {
    let rest = r.buf.get(r.pos..).unwrap_or_default();
    let w = match rest.get(..8) {
        Some(c) => u64::from_le_bytes(c.try_into().expect("8 bytes")),
        None => padded(rest),
    };
    let stops = w & 0x8080_8080_8080_8080;
    // A first byte of seven zero bits is NULL or a preamble: the general reader knows.
    if stops != 0 && w & 0x7f != 0 {
        let n = (stops.trailing_zeros() / 8 + 1) as usize;
        let text = w & !(0x80 << (8 * (n - 1)));
        out.clear();
        // A fixed 8-byte copy, then trimmed: cheaper than a variable-length one.
        out.extend_from_slice(&text.to_le_bytes());
        out.truncate(n);
        r.pos += n;
        return Ok(true);
    }
    // A lone stop bit: NULL where nullable, else the empty string (spec §10.6.3).
    if w as u8 == 0x80 {
        out.clear();
        r.pos += 1;
        return Ok(!nullable);
    }
    read_string(r, true, nullable, out)
}

/// The last bytes of the input (fewer than 8) as a word, zero-padded: no stop bit in the
/// padding, so a string that runs past the end is left to the general reader to reject.
#[cold]
#[inline(never)]
fn padded(rest: &[u8]) -> u64 {
    // Two loads that overlap where they must: each byte lands in its place from both.
    let k = rest.len();
    match k {
        4..=7 => {
            let lo = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as u64;
            let hi = u32::from_le_bytes(rest[k - 4..].try_into().expect("4 bytes")) as u64;
            lo | hi << (8 * (k - 4))
        }
        2 | 3 => {
            let lo = u16::from_le_bytes(rest[..2].try_into().expect("2 bytes")) as u64;
            let hi = u16::from_le_bytes(rest[k - 2..].try_into().expect("2 bytes")) as u64;
            lo | hi << (8 * (k - 2))
        }
        1 => rest[0] as u64,
        // Never more than 7: the caller found no 8.
        _ => rest.iter().rev().fold(0, |w, &b| w << 8 | b as u64),
    }
}

#[inline(always)]
pub(super) fn read_decimal<const OPT: bool>(r: &mut Reader) -> Res<Option<Decimal>> {
    let at = r.pos;
    let e = if OPT {
        match r.nullable_i64()? {
            Some(e) => e,
            None => return Ok(None),
        }
    } else {
        r.i64()?
    };
    if !(-63..=63).contains(&e) {
        return fail(ErrorKind::ExponentRange(e), at);
    }
    Ok(Some(Decimal::new(e as i32, r.i64()?)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn padded_puts_each_byte_in_its_place() {
        for k in 0..8 {
            let rest: Vec<u8> = (0..k as u8).map(|i| 0x11 * (i + 1)).collect();
            let want = rest.iter().rev().fold(0u64, |w, &b| w << 8 | b as u64);
            assert_eq!(super::padded(&rest), want, "{k} bytes");
        }
    }
}
