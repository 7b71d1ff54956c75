//! The decoder: walks a compiled template over the input, applying operators against the
//! dictionary, and hands each field to a [`Handler`].

use std::sync::Arc;

mod fast;
pub(crate) use fast::read_ascii;
mod generic;
mod strings;
#[cfg(test)]
mod tests;
mod threaded;

use crate::dictionary::Dictionary;
use crate::error::{CodecError, ErrorKind, Locate};
use crate::handler::{Handler, MessageBuilder};
use crate::template::{Segment, Templates};
use crate::value::Message;
use crate::wire::{Pmap, Reader};

/// Limits and strictness. The defaults accept what real feeds send and bound what a hostile
/// packet can make the decoder do.
#[derive(Debug, Clone)]
pub struct DecodeOptions {
    /// Reject reportable errors R6-R9 (overlong integers, presence maps, strings and presence
    /// maps with unused set bits). Off by default, as the spec allows.
    pub strict: bool,
    /// Most elements one sequence may have.
    pub max_sequence_len: u32,
    /// Longest string or byte vector a field may hold, after delta or tail are applied.
    pub max_string_len: usize,
    /// Deepest nesting of dynamic template references.
    pub max_depth: u32,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            strict: false,
            max_sequence_len: 65_536,
            max_string_len: 65_536,
            max_depth: 16,
        }
    }
}

/// Decodes messages of one stream. Keeps the dictionaries between messages; call
/// [`reset`](Decoder::reset) where the feed says they restart (a packet boundary, say).
pub struct Decoder {
    templates: Arc<Templates>,
    state: State_,
}

struct State_ {
    dict: Dictionary,
    scratch: Vec<u8>,
    last_tid: Option<u32>,
    opts: DecodeOptions,
}

/// Errors travel boxed inside the decoder: a thin `Result` keeps the hot path's return
/// values in registers.
type Res<T> = Result<T, Box<CodecError>>;

#[inline(always)]
fn fail<T>(kind: ErrorKind, at: usize) -> Res<T> {
    Err(crate::primitives::error(kind, at))
}

impl Decoder {
    pub fn new(templates: Arc<Templates>) -> Self {
        Self::with_options(templates, DecodeOptions::default())
    }

    pub fn with_options(templates: Arc<Templates>, opts: DecodeOptions) -> Self {
        let dict = Dictionary::new(templates.slot_count);
        Decoder {
            templates,
            state: State_ {
                dict,
                scratch: Vec::new(),
                last_tid: None,
                opts,
            },
        }
    }

    pub fn templates(&self) -> &Arc<Templates> {
        &self.templates
    }

    /// Resets every dictionary entry to undefined, and forgets the last template id.
    pub fn reset(&mut self) {
        self.state.dict.reset();
        self.state.last_tid = None;
    }

    /// Decodes one message from the start of `buf`, calling `handler` for each field.
    /// Returns the number of bytes the message took. Error offsets count from `buf`'s start.
    pub fn decode<H: Handler>(&mut self, buf: &[u8], handler: &mut H) -> Result<usize, CodecError> {
        let mut r = Reader::new(buf, self.state.opts.strict);
        r.max_len = self.state.opts.max_string_len;
        self.state
            .message(&self.templates, &mut r, handler, 0)
            .map_err(|e| *e)?;
        Ok(r.pos)
    }

    /// Decodes one message into an owned value.
    pub fn decode_message(&mut self, buf: &[u8]) -> Result<(Message, usize), CodecError> {
        let mut b = MessageBuilder::new();
        let n = self.decode(buf, &mut b)?;
        let m = b
            .take()
            .ok_or_else(|| CodecError::new(ErrorKind::Truncated, n))?;
        Ok((m, n))
    }
}

enum Src {
    Scratch,
    Slot(u32),
    Init,
}

impl State_ {
    fn message<H: Handler>(
        &mut self,
        ts: &Templates,
        r: &mut Reader,
        h: &mut H,
        depth: u32,
    ) -> Res<()> {
        let mut pmap = r.pmap()?;
        let at = r.pos;
        let tid = if pmap.next(r.buf) {
            let v = r.u64()?;
            let v = u32::try_from(v).or_else(|_| fail(ErrorKind::IntegerOverflow, at))?;
            self.last_tid = Some(v);
            v
        } else {
            match self.last_tid {
                Some(t) => t,
                None => return fail(ErrorKind::NoTemplateId, at),
            }
        };
        let Some(t) = ts.get(tid) else {
            return fail(ErrorKind::UnknownTemplate(tid), at);
        };
        if depth == 0 {
            if t.reset {
                self.dict.reset();
                self.last_tid = Some(tid);
            }
            h.begin_message(t);
        } else {
            h.begin_template_ref(t);
        }
        self.segment(ts, r, &t.body, &mut pmap, h, depth)
            .map_err(|e| e.in_template(&t.name))?;
        if r.strict && pmap.has_unused_bits(r.buf) {
            return Err(Box::new(
                CodecError::new(ErrorKind::PresenceMapTooLong, at).in_template(&t.name),
            ));
        }
        if depth == 0 {
            h.end_message();
        } else {
            h.end_template_ref();
        }
        Ok(())
    }

    /// Inlined into `message` and `nested`, as a profile-guided build does.
    #[inline]
    fn segment<H: Handler>(
        &mut self,
        ts: &Templates,
        r: &mut Reader,
        seg: &Segment,
        pmap: &mut Pmap,
        h: &mut H,
        depth: u32,
    ) -> Res<()> {
        if seg.threaded {
            return self.run_segment(ts, r, &seg.instrs, pmap, h, depth);
        }
        // Few changes of kind: one shared jump predicts well, and the loop keeps the reader
        // and presence map in registers. A field that fails on a wide delta is decoded again
        // by the general path, and the loop goes on after it.
        for instr in &seg.instrs {
            let code = instr.compiled.code;
            if let Err(e) = self.dispatch(code, ts, r, instr, pmap, h, depth) {
                self.retry_wide(ts, r, instr, pmap, h, depth, e)
                    .map_err(|e| e.in_field(&instr.name))?;
            }
        }
        Ok(())
    }

    /// A nested segment (group or sequence element) with its own presence map if it has one.
    fn nested<H: Handler>(
        &mut self,
        ts: &Templates,
        r: &mut Reader,
        body: &Segment,
        h: &mut H,
        depth: u32,
    ) -> Res<()> {
        let at = r.pos;
        let mut p = if body.has_pmap {
            r.pmap()?
        } else {
            Pmap::empty()
        };
        self.segment(ts, r, body, &mut p, h, depth)?;
        if r.strict && body.has_pmap && p.has_unused_bits(r.buf) {
            return fail(ErrorKind::PresenceMapTooLong, at);
        }
        Ok(())
    }
}
