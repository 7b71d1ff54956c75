//! The general path's strings: a string field under any operator (spec §6.3), read from the
//! stream into the decoder's scratch space or its dictionary entry.

use super::{fail, Res, Src, State_};
use crate::dictionary::State;
use crate::error::ErrorKind;
use crate::primitives::subtraction_overflow;
use crate::template::{FieldType, Op, Scalar};
use crate::wire::{Pmap, Reader};

impl State_ {
    pub(super) fn string(
        &mut self,
        r: &mut Reader,
        s: &Scalar,
        pmap: &mut Pmap,
    ) -> Res<Option<Src>> {
        let v = self.string_as(r, s, s.op, s.optional, s.ty == FieldType::Ascii, pmap);
        self.retype(s, v)
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
                self.read_state(s, r.pos)?;
                Ok(self.dict_value(s, r.pos)?.map(|_| Src::Slot(s.slot)))
            }
            Op::Tail => {
                if !pmap.next(r.buf) {
                    self.read_state(s, r.pos)?;
                    return Ok(self.dict_value(s, r.pos)?.map(|_| Src::Slot(s.slot)));
                }
                if !read_string(r, ascii, optional, &mut self.scratch)? {
                    self.dict.set_empty(s.slot);
                    return Ok(None);
                }
                if self.read_state(s, r.pos)? != State::Assigned {
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
                    r.nullable_i64()
                } else {
                    r.i64().map(Some)
                };
                let Some(sub) = sub.map_err(|e| subtraction_overflow(e, at))? else {
                    return Ok(None);
                };
                // A subtraction length must be an int32 (spec §6.3.7.3, D7).
                if sub > i32::MAX as i64 || sub < i32::MIN as i64 {
                    return fail(ErrorKind::BadSubtraction(sub), at);
                }
                read_string(r, ascii, false, &mut self.scratch)?;
                match self.read_state(s, at)? {
                    State::Assigned => {}
                    State::Undefined => self.set_base(s),
                    State::Empty => return fail(ErrorKind::EmptyPrevious, at),
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
}

/// Reads a string value into `out`: an ASCII stop-bit string or a length-prefixed byte
/// vector (unicode strings are byte vectors on the wire). Returns false for NULL. Inlined
/// into the string arms, as a profile-guided build does (see BENCHMARKS.md).
#[inline]
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
