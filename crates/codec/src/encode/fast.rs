//! The encoder's specialised arms for integers, ASCII strings and CME-style decimals, one
//! per dispatch code, mirroring the decoder's: the general operator logic instantiated per
//! (class, operator, presence). They must encode exactly as the general path does
//! (`tests.rs` compares them).

use super::{fail, Res, State_};
use crate::dictionary::State;
use crate::error::ErrorKind;
use crate::template::{
    Code, Initial, Instr, Kind, Operand, CONSTANT, COPY, DEFAULT, DELTA, INCREMENT, NONE,
};
use crate::value::Value;
use crate::wire::{
    put_ascii, put_i64, put_nullable_i64, put_nullable_u64, put_u64, put_wide_delta,
};

impl State_ {
    /// Encodes a field through its specialised arm; false if its code has none.
    #[inline(always)]
    pub(super) fn specialised(
        &mut self,
        instr: &Instr,
        v: Option<&Value>,
        out: &mut Vec<u8>,
    ) -> Res<bool> {
        use Code::*;
        let a = &instr.compiled.a;
        match instr.compiled.code {
            UNoneM => self.int::<false, NONE, false>(a, v, out)?,
            UNoneO => self.int::<false, NONE, true>(a, v, out)?,
            UConstM => self.int::<false, CONSTANT, false>(a, v, out)?,
            UConstO => self.int::<false, CONSTANT, true>(a, v, out)?,
            UDefaultM => self.int::<false, DEFAULT, false>(a, v, out)?,
            UDefaultO => self.int::<false, DEFAULT, true>(a, v, out)?,
            UCopyM => self.int::<false, COPY, false>(a, v, out)?,
            UCopyO => self.int::<false, COPY, true>(a, v, out)?,
            UIncrM => self.int::<false, INCREMENT, false>(a, v, out)?,
            UIncrO => self.int::<false, INCREMENT, true>(a, v, out)?,
            UDeltaM => self.int::<false, DELTA, false>(a, v, out)?,
            UDeltaO => self.int::<false, DELTA, true>(a, v, out)?,
            INoneM => self.int::<true, NONE, false>(a, v, out)?,
            INoneO => self.int::<true, NONE, true>(a, v, out)?,
            IConstM => self.int::<true, CONSTANT, false>(a, v, out)?,
            IConstO => self.int::<true, CONSTANT, true>(a, v, out)?,
            IDefaultM => self.int::<true, DEFAULT, false>(a, v, out)?,
            IDefaultO => self.int::<true, DEFAULT, true>(a, v, out)?,
            ICopyM => self.int::<true, COPY, false>(a, v, out)?,
            ICopyO => self.int::<true, COPY, true>(a, v, out)?,
            IIncrM => self.int::<true, INCREMENT, false>(a, v, out)?,
            IIncrO => self.int::<true, INCREMENT, true>(a, v, out)?,
            IDeltaM => self.int::<true, DELTA, false>(a, v, out)?,
            IDeltaO => self.int::<true, DELTA, true>(a, v, out)?,
            ANoneM => self.ascii::<NONE, false>(instr, v, out)?,
            ANoneO => self.ascii::<NONE, true>(instr, v, out)?,
            AConstM => self.ascii::<CONSTANT, false>(instr, v, out)?,
            AConstO => self.ascii::<CONSTANT, true>(instr, v, out)?,
            ADefaultM => self.ascii::<DEFAULT, false>(instr, v, out)?,
            ADefaultO => self.ascii::<DEFAULT, true>(instr, v, out)?,
            ACopyM => self.ascii::<COPY, false>(instr, v, out)?,
            ACopyO => self.ascii::<COPY, true>(instr, v, out)?,
            SplitDefaultDeltaM => self.split_default_delta::<false>(instr, v, out)?,
            SplitDefaultDeltaO => self.split_default_delta::<true>(instr, v, out)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// One integer field under operator `OP` (the mirror of the decoder's).
    #[inline(always)]
    fn int<const SIGNED: bool, const OP: u8, const OPT: bool>(
        &mut self,
        a: &Operand,
        v: Option<&Value>,
        out: &mut Vec<u8>,
    ) -> Res<()> {
        let v = match v {
            None if OPT => None,
            // A mandatory field needs a value, a mandatory constant included.
            None => return fail(ErrorKind::NoValueGiven),
            Some(v) => Some(bits::<SIGNED>(a, v)?),
        };
        self.int_bits::<SIGNED, OP, OPT>(a, v, out)
    }

    /// `int` once the value is the field's bits (a mandatory field's never `None`).
    #[inline(always)]
    fn int_bits<const SIGNED: bool, const OP: u8, const OPT: bool>(
        &mut self,
        a: &Operand,
        v: Option<u64>,
        out: &mut Vec<u8>,
    ) -> Res<()> {
        let init = a.has_init.then_some(a.init);
        match OP {
            NONE => write::<SIGNED, OPT>(out, v),
            CONSTANT => {
                if v.is_some() && v != init {
                    return fail(ErrorKind::ConstantMismatch);
                }
                if OPT {
                    self.bits.push(v.is_some());
                }
            }
            DEFAULT => {
                let omit = v == init;
                self.bits.push(!omit);
                if !omit {
                    write::<SIGNED, OPT>(out, v);
                }
            }
            COPY | INCREMENT => {
                let state = self.dict.state(a.slot);
                // What the decoder makes of a 0 bit; None where it would be an error.
                let implied = match state {
                    State::Assigned => {
                        let p = self.dict.slot(a.slot).int;
                        Some(Some(if OP == INCREMENT { a.increment(p) } else { p }))
                    }
                    State::Undefined if init.is_some() => Some(init),
                    State::Undefined | State::Empty => OPT.then_some(None),
                };
                let omit = implied == Some(v);
                self.bits.push(!omit);
                if !omit {
                    write::<SIGNED, OPT>(out, v);
                }
                if !omit || state != State::Assigned || OP == INCREMENT {
                    self.set_int(a.slot, v);
                }
            }
            _ => {
                // DELTA
                let Some(n) = v else {
                    out.push(0x80);
                    return Ok(());
                };
                let base = match self.dict.state(a.slot) {
                    State::Assigned => self.dict.slot(a.slot).int,
                    State::Undefined => a.init,
                    State::Empty => return fail(ErrorKind::EmptyPrevious),
                };
                let d = if SIGNED {
                    (n as i64 as i128) - (base as i64 as i128)
                } else {
                    n as i128 - base as i128
                };
                match i64::try_from(d) {
                    Ok(d) if OPT => put_nullable_i64(out, Some(d)),
                    Ok(d) => put_i64(out, d),
                    // Wider than i64 (spec §6.3.7.1 note): rare, out of line.
                    Err(_) => put_wide_delta(out, d, OPT),
                }
                self.dict.set_int(a.slot, n);
            }
        }
        Ok(())
    }

    /// An ASCII string under none, constant, default or copy.
    #[inline(always)]
    fn ascii<const OP: u8, const OPT: bool>(
        &mut self,
        instr: &Instr,
        v: Option<&Value>,
        out: &mut Vec<u8>,
    ) -> Res<()> {
        let Kind::Scalar(s) = &instr.kind else {
            return fail(ErrorKind::TypeMismatch);
        };
        let v: Option<&[u8]> = match v {
            None if OPT => None,
            None => return fail(ErrorKind::NoValueGiven),
            Some(Value::Ascii(x) | Value::Unicode(x)) if x.is_ascii() => Some(x.as_bytes()),
            Some(_) => return fail(ErrorKind::TypeMismatch),
        };
        let init = match &s.initial {
            Some(Initial::Bytes(b)) => Some(&b[..]),
            _ => None,
        };
        match OP {
            NONE => put_ascii(out, v, OPT),
            CONSTANT => {
                if v.is_some() && !same(v, init) {
                    return fail(ErrorKind::ConstantMismatch);
                }
                if OPT {
                    self.bits.push(v.is_some());
                }
            }
            DEFAULT => {
                let omit = same(v, init);
                self.bits.push(!omit);
                if !omit {
                    put_ascii(out, v, OPT);
                }
            }
            _ => {
                // COPY
                let slot = instr.compiled.a.slot;
                let state = self.dict.state(slot);
                let omit = match state {
                    State::Assigned => same(v, Some(&self.dict.slot(slot).bytes[..])),
                    State::Undefined if init.is_some() => same(v, init),
                    State::Undefined | State::Empty => OPT && v.is_none(),
                };
                self.bits.push(!omit);
                if !omit {
                    put_ascii(out, v, OPT);
                }
                if !omit || state != State::Assigned {
                    match v {
                        Some(b) => self.dict.set_bytes(slot, b),
                        None => self.dict.set_empty(slot),
                    }
                }
            }
        }
        Ok(())
    }

    /// A decimal with a default exponent and a delta mantissa.
    #[inline(always)]
    fn split_default_delta<const OPT: bool>(
        &mut self,
        instr: &Instr,
        v: Option<&Value>,
        out: &mut Vec<u8>,
    ) -> Res<()> {
        let c = &instr.compiled;
        let d = match v {
            None => None,
            Some(Value::Decimal(d)) => Some(*d),
            Some(_) => return fail(ErrorKind::TypeMismatch),
        };
        if let Some(d) = d {
            if !(-63..=63).contains(&d.exponent) {
                return fail(ErrorKind::ExponentRange(d.exponent as i64));
            }
        }
        // The exponent's range is checked above, and any mantissa fits its int64: the
        // bits go straight to the operators, with no `Value` made and dropped for each.
        match d {
            None if OPT => self.int_bits::<true, DEFAULT, OPT>(&c.a, None, out),
            None => fail(ErrorKind::NoValueGiven),
            Some(d) => {
                let exponent = d.exponent as i64 as u64;
                self.int_bits::<true, DEFAULT, OPT>(&c.a, Some(exponent), out)?;
                self.int_bits::<true, DELTA, false>(&c.b, Some(d.mantissa as u64), out)
            }
        }
    }

    fn set_int(&mut self, slot: u32, v: Option<u64>) {
        match v {
            Some(v) => self.dict.set_int(slot, v),
            None => self.dict.set_empty(slot),
        }
    }
}

/// Equal strings, compared in line when short: the strings compared here (a copy field's
/// last value, a constant's) are mostly a few bytes, where a call to `memcmp` cost more
/// than the compare (6% of the FPL sample's encoding).
#[inline(always)]
fn same(a: Option<&[u8]>, b: Option<&[u8]>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) if a.len() != b.len() => false,
        (Some(a), Some(b)) if a.len() <= 16 => a.iter().zip(b).all(|(x, y)| x == y),
        (Some(a), Some(b)) => a == b,
        (None, None) => true,
        _ => false,
    }
}

/// A message value as the field's integer bits, range-checked against its type.
#[inline(always)]
fn bits<const SIGNED: bool>(a: &Operand, v: &Value) -> Res<u64> {
    let fits = match *v {
        Value::UInt(u) => u <= a.hi,
        Value::Int(i) if SIGNED => i >= a.lo && i <= a.hi as i64,
        Value::Int(i) => i >= 0 && i as u64 <= a.hi,
        _ => return fail(ErrorKind::TypeMismatch),
    };
    if !fits {
        return fail(ErrorKind::IntegerOverflow);
    }
    Ok(match *v {
        Value::UInt(u) => u,
        Value::Int(i) => i as u64,
        _ => 0,
    })
}

#[inline(always)]
fn write<const SIGNED: bool, const OPT: bool>(out: &mut Vec<u8>, v: Option<u64>) {
    match (SIGNED, OPT) {
        (true, true) => put_nullable_i64(out, v.map(|i| i as i64)),
        (false, true) => put_nullable_u64(out, v),
        (true, false) => put_i64(out, v.map_or(0, |i| i as i64)),
        (false, false) => put_u64(out, v.unwrap_or(0)),
    }
}
