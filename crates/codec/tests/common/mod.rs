//! Shared helpers for the conformance tests: field lookup by name, hex, corpus paths.
#![allow(dead_code)]

use std::sync::Arc;

use fastfeed_codec::template::{Instr, Kind};
use fastfeed_codec::{Decoder, Encoder, Message, Templates, Value};

/// A file of the shared third-party corpus, read as text.
pub fn shared_text(rel: &str) -> String {
    let path = format!("{}/../../../shared/{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A file of the shared third-party corpus, read as bytes.
pub fn shared_bytes(rel: &str) -> Vec<u8> {
    let path = format!("{}/../../../shared/{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Hex digits (whitespace allowed) to bytes.
pub fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    assert!(digits.len().is_multiple_of(2), "odd hex: {s}");
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

/// Looks a field up by name among `instrs`, descending into groups. `Some(None)` is a field
/// that exists but is absent; `None` is no such field here.
pub fn lookup<'a>(
    fields: &'a [Option<Value>],
    instrs: &[Instr],
    name: &str,
) -> Option<Option<&'a Value>> {
    assert_eq!(
        fields.len(),
        instrs.len(),
        "fields do not match the instructions"
    );
    for (instr, v) in instrs.iter().zip(fields) {
        if instr.name == name {
            return Some(v.as_ref());
        }
        if let (Kind::Group(body), Some(Value::Group(inner))) = (&instr.kind, v) {
            if let Some(found) = lookup(inner, &body.instrs, name) {
                return Some(found);
            }
        }
    }
    None
}

/// The value of the named field of a message (searching through groups); `None` if absent.
/// Panics if the template has no such field.
pub fn field<'a>(msg: &'a Message, templates: &Templates, name: &str) -> Option<&'a Value> {
    let t = templates
        .get(msg.template_id)
        .unwrap_or_else(|| panic!("no template {}", msg.template_id));
    lookup(&msg.fields, &t.body.instrs, name)
        .unwrap_or_else(|| panic!("template {} has no field {name}", t.name))
}

/// The instructions of a sequence field's elements, by the sequence's name (searching groups).
pub fn sequence_body<'a>(instrs: &'a [Instr], name: &str) -> Option<&'a [Instr]> {
    for instr in instrs {
        match &instr.kind {
            Kind::Sequence { body, .. } if instr.name == name => return Some(&body.instrs),
            Kind::Group(body) => {
                if let Some(b) = sequence_body(&body.instrs, name) {
                    return Some(b);
                }
            }
            _ => {}
        }
    }
    None
}

/// Decodes a whole buffer message by message, asserting every byte is consumed.
pub fn decode_all(dec: &mut Decoder, mut bytes: &[u8]) -> Vec<Message> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let (m, n) = dec
            .decode_message(bytes)
            .unwrap_or_else(|e| panic!("message {}: {e}", out.len()));
        assert!(n > 0);
        out.push(m);
        bytes = &bytes[n..];
    }
    out
}

/// Encodes messages in one stream with a fresh encoder.
pub fn encode_all(templates: &Arc<Templates>, msgs: &[Message]) -> Vec<u8> {
    let mut enc = Encoder::new(templates.clone());
    let mut out = Vec::new();
    for m in msgs {
        enc.encode(m, &mut out)
            .unwrap_or_else(|e| panic!("encode {m:?}: {e}"));
    }
    out
}
