//! FIX -> FAST: reads one tag=value message (SOH or `|` separated), checks its BodyLength
//! and CheckSum, chooses the template by MsgType (35) and rebuilds the FAST message that
//! [`Encoder`](fastfeed_codec::Encoder) encodes.

use std::sync::Arc;

use fastfeed_codec::template::{FieldType, Initial, Instr, Kind, Op, Scalar};
use fastfeed_codec::{Decimal, Fields, Message, Templates, Value};

use crate::plan::{tag_of, Plans};
use crate::{FixError, FixOptions, SOH};

/// One `tag=value` of the body.
#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    tag: u32,
    value: &'a [u8],
    /// Where the field starts in the message.
    at: usize,
}

/// Reads FIX messages into FAST messages of a template set.
pub struct FixReader {
    templates: Arc<Templates>,
    plans: Plans,
}

impl FixReader {
    pub fn new(templates: Arc<Templates>, opts: &FixOptions) -> FixReader {
        let plans = Plans::new(&templates, opts);
        FixReader { templates, plans }
    }

    /// The message at the start of `input` and the bytes it takes (its BodyLength and
    /// trailer decide where it ends; what follows is not looked at).
    pub fn read(&self, input: &[u8]) -> Result<(Message, usize), FixError> {
        let framed = frame(input)?;
        let tokens = tokenize(input, framed.sep, framed.body_start, framed.body_end)?;
        let first = tokens.first().filter(|t| t.tag == 35);
        let Some(first) = first else {
            return Err(FixError::NoMsgType {
                at: framed.body_start,
            });
        };
        let candidates = self
            .plans
            .by_msg_type
            .get(first.value)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let mut first_err = None;
        for &id in candidates.iter().chain(&self.plans.open_msg_type) {
            match self.build(id, &tokens, framed.body_end) {
                Ok(m) => return Ok((m, framed.end)),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        Err(first_err.unwrap_or_else(|| FixError::UnknownMsgType {
            at: first.at,
            msg_type: String::from_utf8_lossy(first.value).into_owned(),
        }))
    }

    fn build(&self, id: u32, tokens: &[Token], end: usize) -> Result<Message, FixError> {
        let t = self
            .templates
            .get(id)
            .expect("plans come from these templates");
        let mut w = Walker {
            tokens,
            pos: 1,
            end,
            template: &t.name,
        };
        // The header's 35 fills the template's own 35 field, if it has one.
        let mut fields: Fields = vec![None; t.body.instrs.len()];
        if let Some(k) =
            t.body.instrs.iter().position(|i| {
                matches!(i.kind, Kind::Scalar(_)) && tag_of(i.id.as_deref()) == Some(35)
            })
        {
            fields[k] = Some(w.scalar(&t.body.instrs[k], &tokens[0])?);
        }
        let fields = w.segment(&t.body.instrs, fields, true)?;
        if let Some(extra) = tokens.get(w.pos) {
            return Err(FixError::UnexpectedTag {
                at: extra.at,
                tag: extra.tag,
                template: t.name.clone(),
            });
        }
        Ok(Message {
            template_id: id,
            fields,
        })
    }
}

/// Where a message's parts lie.
struct Framed {
    sep: u8,
    body_start: usize,
    /// Where `10=` starts.
    body_end: usize,
    /// Past the trailer's separator.
    end: usize,
}

fn truncated(at: usize, needed: usize) -> FixError {
    FixError::Truncated { at, needed }
}

fn frame(input: &[u8]) -> Result<Framed, FixError> {
    if !input.starts_with(b"8=") {
        if b"8=".starts_with(input) {
            return Err(truncated(input.len(), 0));
        }
        return Err(FixError::NoBeginString { at: 0 });
    }
    let sep_at = input
        .iter()
        .position(|&b| b == SOH || b == b'|')
        .ok_or_else(|| truncated(input.len(), 0))?;
    let sep = input[sep_at];
    let len_at = sep_at + 1;
    let rest = &input[len_at..];
    if !rest.starts_with(b"9=") {
        if b"9=".starts_with(rest) {
            return Err(truncated(input.len(), 0));
        }
        return Err(FixError::NoBodyLength { at: len_at });
    }
    let digits_end = rest
        .iter()
        .position(|&b| b == sep)
        .ok_or_else(|| truncated(input.len(), 0))?;
    let digits = &rest[2..digits_end];
    if digits.is_empty() || digits.len() > 9 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(FixError::NoBodyLength { at: len_at });
    }
    let declared: usize = std::str::from_utf8(digits)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(FixError::NoBodyLength { at: len_at })?;
    let body_start = len_at + digits_end + 1;
    let body_end = body_start + declared;
    // The trailer is `10=NNN<sep>`: 7 bytes.
    let ok = input.len() >= body_end + 7
        && input[body_end - 1] == sep
        && input[body_end..].starts_with(b"10=");
    if !ok {
        // Where the trailer really is tells a wrong length from a short message.
        let mut pat = vec![sep];
        pat.extend_from_slice(b"10=");
        let found = input[body_start.saturating_sub(1)..]
            .windows(4)
            .position(|w| w == pat.as_slice())
            .map(|p| p + body_start);
        return Err(match found {
            Some(trailer) if trailer + 7 <= input.len() && trailer != body_end => {
                FixError::BodyLength {
                    at: len_at,
                    declared,
                    actual: trailer - body_start,
                }
            }
            _ => truncated(input.len(), (body_end + 7).saturating_sub(input.len())),
        });
    }
    let trailer = &input[body_end + 3..body_end + 7];
    if trailer[3] != sep || !trailer[..3].iter().all(u8::is_ascii_digit) {
        return Err(FixError::BadField {
            at: body_end,
            found: String::from_utf8_lossy(&input[body_end..body_end + 7]).into_owned(),
        });
    }
    // The sum of the SOH-separated message, whatever the separator.
    let sum = input[..body_end].iter().fold(0u32, |a, &b| {
        a + if b == sep { SOH as u32 } else { b as u32 }
    });
    let computed = (sum % 256) as u8;
    let declared = &trailer[..3];
    let d = (declared[0] - b'0') as u32 * 100 + (declared[1] - b'0') as u32 * 10;
    if d + (declared[2] - b'0') as u32 != computed as u32 {
        return Err(FixError::CheckSum {
            at: body_end,
            declared: String::from_utf8_lossy(declared).into_owned(),
            computed,
        });
    }
    Ok(Framed {
        sep,
        body_start,
        body_end,
        end: body_end + 7,
    })
}

fn tokenize(input: &[u8], sep: u8, start: usize, end: usize) -> Result<Vec<Token<'_>>, FixError> {
    let mut out = Vec::new();
    let mut at = start;
    while at < end {
        let field_end = at
            + input[at..end]
                .iter()
                .position(|&b| b == sep)
                .unwrap_or(end - at);
        let field = &input[at..field_end];
        let bad = || FixError::BadField {
            at,
            found: String::from_utf8_lossy(field).into_owned(),
        };
        let eq = field.iter().position(|&b| b == b'=').ok_or_else(bad)?;
        let tag = std::str::from_utf8(&field[..eq])
            .ok()
            .and_then(|s| tag_of(Some(s)))
            .ok_or_else(bad)?;
        out.push(Token {
            tag,
            value: &field[eq + 1..],
            at,
        });
        at = field_end + 1;
    }
    Ok(out)
}

/// Whether a token with `tag` can start `i`'s value: its own tag, a sequence's count, or
/// any field of a group (groups are flat in FIX).
fn starts(i: &Instr, tag: u32) -> bool {
    match &i.kind {
        Kind::Scalar(_) | Kind::SplitDecimal { .. } => tag_of(i.id.as_deref()) == Some(tag),
        Kind::Sequence { length_id, .. } => tag_of(length_id.as_deref()) == Some(tag),
        Kind::Group(body) => body.instrs.iter().any(|j| starts(j, tag)),
        Kind::DynamicRef => false,
    }
}

/// Walks the template over the body's tokens.
struct Walker<'a, 'b> {
    tokens: &'b [Token<'a>],
    pos: usize,
    /// Where the body ends: the position of errors about what is missing.
    end: usize,
    template: &'b str,
}

impl Walker<'_, '_> {
    fn at(&self) -> usize {
        self.tokens.get(self.pos).map_or(self.end, |t| t.at)
    }

    /// The fields of one segment. Fields are matched in template order; a tag that no
    /// later field of the segment has ends a group or sequence element. At the top level
    /// a field out of order is still taken.
    fn segment(
        &mut self,
        instrs: &[Instr],
        mut fields: Fields,
        top: bool,
    ) -> Result<Fields, FixError> {
        let mut cur = 0;
        while let Some(tok) = self.tokens.get(self.pos).copied() {
            let fits = |j: &usize| fields[*j].is_none() && starts(&instrs[*j], tok.tag);
            let j = match (cur..instrs.len()).find(fits) {
                Some(j) => j,
                None if top => (0..cur).find(fits).ok_or_else(|| FixError::UnexpectedTag {
                    at: tok.at,
                    tag: tok.tag,
                    template: self.template.to_owned(),
                })?,
                None => break,
            };
            fields[j] = Some(self.value(&instrs[j])?);
            cur = j + 1;
        }
        for (f, i) in fields.iter_mut().zip(instrs) {
            if f.is_none() && !i.optional {
                *f = Some(self.missing(i)?);
            }
        }
        Ok(fields)
    }

    /// A mandatory field that the text leaves out: its constant, or an error.
    fn missing(&self, i: &Instr) -> Result<Value, FixError> {
        if let Kind::Scalar(s) = &i.kind {
            if s.op == Op::Constant {
                if let Some(v) = s
                    .initial
                    .as_ref()
                    .and_then(|init| initial_value(s.ty, init))
                {
                    return Ok(v);
                }
            }
        }
        let tag = match &i.kind {
            Kind::Sequence { length_id, .. } => length_id.clone(),
            _ => i.id.clone(),
        };
        Err(FixError::Missing {
            at: self.at(),
            template: self.template.to_owned(),
            field: i.name.clone(),
            tag: tag.unwrap_or_default(),
        })
    }

    fn value(&mut self, i: &Instr) -> Result<Value, FixError> {
        match &i.kind {
            Kind::Scalar(_) | Kind::SplitDecimal { .. } => {
                let tok = self.tokens[self.pos];
                self.pos += 1;
                self.scalar(i, &tok)
            }
            Kind::Sequence {
                length_name, body, ..
            } => {
                let tok = self.tokens[self.pos];
                self.pos += 1;
                let count = parse_uint(tok.value)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| bad(&tok, length_name, "not a count"))?;
                // An element that must have a field ends the loop below where the fields
                // run out; all-optional ones could be empty, so a count far past what is
                // left is damage, not data to allocate for.
                let left = self.tokens.len() - self.pos;
                let needs_field = body.instrs.iter().any(|j| !j.optional);
                if !needs_field && count as usize > left + 1024 {
                    return Err(self.count_err(&tok, length_name, count, 0));
                }
                let mut items = Vec::with_capacity((count as usize).min(left + 1));
                for n in 0..count {
                    let before = self.pos;
                    if needs_field
                        && self
                            .tokens
                            .get(self.pos)
                            .is_none_or(|t| !body.instrs.iter().any(|j| starts(j, t.tag)))
                    {
                        return Err(self.count_err(&tok, length_name, count, n));
                    }
                    let f = self.segment(&body.instrs, vec![None; body.instrs.len()], false)?;
                    debug_assert!(self.pos >= before);
                    items.push(f);
                }
                Ok(Value::Sequence(items))
            }
            Kind::Group(body) => Ok(Value::Group(self.segment(
                &body.instrs,
                vec![None; body.instrs.len()],
                false,
            )?)),
            // Refused when the templates were planned; never matched by `starts`.
            Kind::DynamicRef => Err(FixError::DynamicRef {
                template: self.template.to_owned(),
                field: i.name.clone(),
            }),
        }
    }

    fn count_err(&self, tok: &Token, field: &str, declared: u32, found: u32) -> FixError {
        FixError::Count {
            at: self.at(),
            tag: tok.tag,
            field: field.to_owned(),
            declared,
            found,
        }
    }

    fn scalar(&self, i: &Instr, tok: &Token) -> Result<Value, FixError> {
        let (ty, exp_hint, constant) = match &i.kind {
            Kind::Scalar(s) => (s.ty, exponent_hint(s), constant_of(s)),
            Kind::SplitDecimal { exponent, .. } => (
                FieldType::Decimal,
                match &exponent.initial {
                    Some(Initial::Int(e)) => Some(*e as i64),
                    _ => None,
                },
                None,
            ),
            _ => unreachable!("scalar() is called for scalar fields"),
        };
        let v = parse_value(ty, tok.value, exp_hint).map_err(|why| bad(tok, &i.name, why))?;
        if let Some(c) = constant {
            if c != v {
                return Err(bad(tok, &i.name, "differs from the template's constant"));
            }
        }
        Ok(v)
    }
}

fn bad(tok: &Token, field: &str, why: &str) -> FixError {
    FixError::BadValue {
        at: tok.at,
        tag: tok.tag,
        field: field.to_owned(),
        why: why.to_owned(),
    }
}

fn constant_of(s: &Scalar) -> Option<Value> {
    if s.op != Op::Constant {
        return None;
    }
    initial_value(s.ty, s.initial.as_ref()?)
}

fn exponent_hint(s: &Scalar) -> Option<i64> {
    match (&s.ty, &s.initial) {
        (FieldType::Decimal, Some(Initial::Decimal { exponent, .. })) => Some(*exponent as i64),
        _ => None,
    }
}

fn initial_value(ty: FieldType, init: &Initial) -> Option<Value> {
    Some(match (ty, init) {
        (FieldType::Int(it), Initial::Int(bits)) if it.signed() => Value::Int(*bits as i64),
        (FieldType::Int(_), Initial::Int(bits)) => Value::UInt(*bits),
        (FieldType::Decimal, Initial::Decimal { exponent, mantissa }) => {
            Value::Decimal(Decimal::new(*exponent, *mantissa))
        }
        (FieldType::Ascii, Initial::Bytes(b)) => Value::Ascii(String::from_utf8(b.to_vec()).ok()?),
        (FieldType::Unicode, Initial::Bytes(b)) => {
            Value::Unicode(String::from_utf8(b.to_vec()).ok()?)
        }
        (FieldType::Bytes, Initial::Bytes(b)) => Value::Bytes(b.to_vec()),
        _ => return None,
    })
}

fn parse_uint(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 20 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

fn parse_value(ty: FieldType, b: &[u8], exp_hint: Option<i64>) -> Result<Value, &'static str> {
    Ok(match ty {
        FieldType::Int(it) if it.signed() => {
            let (neg, digits) = match b.strip_prefix(b"-") {
                Some(d) => (true, d),
                None => (false, b),
            };
            let m = parse_uint(digits).ok_or("not an integer")? as i128;
            let v = if neg { -m } else { m };
            if v < it.min() || v > it.max() {
                return Err("out of the field type's range");
            }
            Value::Int(v as i64)
        }
        FieldType::Int(it) => {
            let v = parse_uint(b).ok_or("not an unsigned integer")?;
            if v as i128 > it.max() {
                return Err("out of the field type's range");
            }
            Value::UInt(v)
        }
        FieldType::Decimal => Value::Decimal(parse_price(b, exp_hint).ok_or("not a FIX price")?),
        FieldType::Ascii if b.is_ascii() => {
            Value::Ascii(String::from_utf8(b.to_vec()).map_err(|_| "not ASCII")?)
        }
        FieldType::Ascii => return Err("not ASCII"),
        FieldType::Unicode => {
            Value::Unicode(String::from_utf8(b.to_vec()).map_err(|_| "not UTF-8")?)
        }
        FieldType::Bytes => Value::Bytes(b.to_vec()),
    })
}

/// A FIX price back to a FAST decimal. The digits after the point give the exponent, so
/// `0.50` is (-2, 50). A whole number is ambiguous (`33800` may have been (0, 33800) or
/// (2, 338)): where the template gives the exponent an initial value of zero or more, that
/// exponent is used if it divides out; otherwise the trailing zeros go into the exponent
/// (the shortest mantissa, as exchanges that normalize their decimals send them).
pub(crate) fn parse_price(b: &[u8], exp_hint: Option<i64>) -> Option<Decimal> {
    let (neg, rest) = match b.strip_prefix(b"-") {
        Some(r) => (true, r),
        None => (false, b),
    };
    let (int, frac) = match rest.iter().position(|&c| c == b'.') {
        Some(p) => (&rest[..p], &rest[p + 1..]),
        None => (rest, &b""[..]),
    };
    let all_digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    if int.is_empty() || !all_digits(int) || !all_digits(frac) || frac.len() > 63 {
        return None;
    }
    let mut m: i128 = 0;
    for &c in int.iter().chain(frac) {
        m = m * 10 + (c - b'0') as i128;
        if m > i64::MAX as i128 + 1 {
            return None;
        }
    }
    let mut m = if neg { -m } else { m };
    let mut e = -(frac.len() as i32);
    if frac.is_empty() && m != 0 {
        let want = match exp_hint {
            Some(h) if h >= 0 => h.min(63) as i32,
            Some(_) => 0,
            None => 63,
        };
        while e < want && m % 10 == 0 {
            m /= 10;
            e += 1;
        }
        if exp_hint.is_some_and(|h| h >= 0 && e != want) {
            // The hinted exponent does not divide out: keep the plain integer.
            m *= 10i128.pow(e as u32);
            e = 0;
        }
    }
    let m = i64::try_from(m).ok()?;
    Some(Decimal::new(e, m))
}
