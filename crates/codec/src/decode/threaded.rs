//! Threaded dispatch: each field's arm is its own function and ends by calling the next
//! field's arm through a table. Every arm thus has an indirect call of its own, which the
//! branch predictor learns per predecessor (what follows a copied SecurityID, say), where
//! one shared `match` jump mispredicts whenever the field order branches. A chain runs at
//! most `CHAIN` fields before returning to the loop, so the stack stays bounded even where
//! the compiler does not turn the calls into jumps (debug builds).

use std::marker::PhantomData;

use super::{Res, State_};
use crate::error::Locate;
use crate::handler::Handler;
use crate::template::{Code, Instr, Templates};
use crate::wire::{Pmap, Reader};

/// Fields decoded per chain of calls.
const CHAIN: usize = 32;

/// What the arms of one segment share.
pub(super) struct Run<'s, 'b, H> {
    pub ts: &'s Templates,
    pub r: &'s mut Reader<'b>,
    /// The segment's instructions up to where this chain stops.
    instrs: &'s [Instr],
    pub pmap: &'s mut Pmap,
    pub h: &'s mut H,
    pub depth: u32,
    /// The field that failed, for the error's location (written only on an error).
    cur: usize,
}

/// An arm: the field's index in the segment and its instruction, looked up once by the
/// arm before it.
type Step<H> = for<'s, 'b> fn(&mut State_, &mut Run<'s, 'b, H>, usize, &'s Instr) -> Res<()>;

struct Table<H>(PhantomData<H>);

macro_rules! table {
    ($($c:literal)*) => {
        impl<H: Handler> Table<H> {
            // One step per code: a count that differs from `Code::ALL` fails to compile.
            const STEPS: [Step<H>; Code::ALL.len()] = [$(step::<H, $c>),*];
        }
    };
}
table!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
       32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49);

/// The arm for code `C`, then on to the next field.
fn step<'s, H: Handler, const C: u8>(
    st: &mut State_,
    run: &mut Run<'s, '_, H>,
    i: usize,
    instr: &'s Instr,
) -> Res<()> {
    let decoded = st.dispatch(
        Code::ALL[C as usize],
        run.ts,
        run.r,
        instr,
        run.pmap,
        run.h,
        run.depth,
    );
    if let Err(e) = decoded {
        run.cur = i;
        return Err(e);
    }
    next(st, run, i + 1)
}

/// On to field `i`, unless the chain ends before it. The one bounds test gives the arm its
/// instruction: the arm neither looks it up again nor records where it is (12 instructions
/// of dispatch a field before, about 6 now).
#[inline(always)]
fn next<H: Handler>(st: &mut State_, run: &mut Run<'_, '_, H>, i: usize) -> Res<()> {
    let instrs = run.instrs;
    match instrs.get(i) {
        Some(instr) => Table::<H>::STEPS[instr.compiled.code as usize](st, run, i, instr),
        None => Ok(()),
    }
}

impl State_ {
    /// Decodes the instructions of one segment.
    pub(super) fn run_segment<H: Handler>(
        &mut self,
        ts: &Templates,
        r: &mut Reader,
        instrs: &[Instr],
        pmap: &mut Pmap,
        h: &mut H,
        depth: u32,
    ) -> Res<()> {
        let mut run = Run {
            ts,
            r,
            instrs: &[],
            pmap,
            h,
            depth,
            cur: 0,
        };
        let mut start = 0;
        while start < instrs.len() {
            let end = (start + CHAIN).min(instrs.len());
            run.instrs = &instrs[..end];
            if let Err(e) = next(self, &mut run, start) {
                // A wide delta is decoded again by the general path, and the chain goes on
                // after it; any other error ends the segment.
                let instr = &instrs[run.cur];
                let (r, pmap, h) = (&mut *run.r, &mut *run.pmap, &mut *run.h);
                self.retry_wide(ts, r, instr, pmap, h, depth, e)
                    .map_err(|e| e.in_field(&instr.name))?;
                start = run.cur + 1;
                continue;
            }
            start = end;
        }
        Ok(())
    }
}
