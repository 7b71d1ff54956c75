//! The field-by-field interface: the decoder calls a [`Handler`] for every field as it is
//! decoded (QuickFAST's "message builder" idea), so an application can act on a field before
//! the message ends and pays for nothing it does not keep. [`MessageBuilder`] is the handler
//! that builds an owned [`Message`].

use crate::template::{Instr, Template};
use crate::value::{Decimal, Fields, Message, Value};

/// A field value as the decoder hands it over. Strings and byte vectors borrow from the
/// decoder (its dictionary or scratch space) and are valid for the call only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValue<'a> {
    UInt(u64),
    Int(i64),
    Decimal(Decimal),
    /// 7-bit ASCII bytes.
    Ascii(&'a [u8]),
    Unicode(&'a str),
    Bytes(&'a [u8]),
}

impl FieldValue<'_> {
    pub fn to_value(self) -> Value {
        match self {
            FieldValue::UInt(v) => Value::UInt(v),
            FieldValue::Int(v) => Value::Int(v),
            FieldValue::Decimal(d) => Value::Decimal(d),
            // 7-bit bytes are always valid UTF-8.
            FieldValue::Ascii(b) => Value::Ascii(String::from_utf8_lossy(b).into_owned()),
            FieldValue::Unicode(s) => Value::Unicode(s.to_owned()),
            FieldValue::Bytes(b) => Value::Bytes(b.to_vec()),
        }
    }
}

/// Receives a message field by field, in template order. Every instruction produces exactly
/// one call: `value`, `absent`, a sequence, a group or a template reference. All methods have
/// empty defaults, so `()` is the empty handler that only decodes.
#[allow(unused_variables)]
pub trait Handler {
    fn begin_message(&mut self, template: &Template) {}
    fn end_message(&mut self) {}
    fn value(&mut self, field: &Instr, value: FieldValue<'_>) {}
    fn absent(&mut self, field: &Instr) {}
    fn begin_sequence(&mut self, field: &Instr, len: u32) {}
    fn begin_element(&mut self, index: u32) {}
    fn end_element(&mut self) {}
    fn end_sequence(&mut self) {}
    fn begin_group(&mut self, field: &Instr) {}
    fn end_group(&mut self) {}
    /// A dynamic template reference starts a nested message.
    fn begin_template_ref(&mut self, template: &Template) {}
    fn end_template_ref(&mut self) {}
}

impl Handler for () {}

enum Frame {
    Fields(Fields),
    Sequence(Vec<Fields>),
    Nested(u32, Fields),
}

/// Builds an owned [`Message`] from the callbacks.
#[derive(Default)]
pub struct MessageBuilder {
    template_id: u32,
    stack: Vec<Frame>,
    done: Option<Message>,
}

impl MessageBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The message completed by the last decode, if any.
    pub fn take(&mut self) -> Option<Message> {
        self.done.take()
    }

    fn push(&mut self, v: Option<Value>) {
        match self.stack.last_mut() {
            Some(Frame::Fields(f)) | Some(Frame::Nested(_, f)) => f.push(v),
            // The decoder never emits a value directly inside a sequence frame.
            _ => debug_assert!(false, "value outside a field list"),
        }
    }
}

impl Handler for MessageBuilder {
    fn begin_message(&mut self, template: &Template) {
        self.stack.clear();
        self.template_id = template.id;
        self.stack.push(Frame::Fields(Vec::with_capacity(
            template.body.instrs.len(),
        )));
    }

    fn end_message(&mut self) {
        if let Some(Frame::Fields(fields)) = self.stack.pop() {
            self.done = Some(Message {
                template_id: self.template_id,
                fields,
            });
        }
    }

    fn value(&mut self, _: &Instr, value: FieldValue<'_>) {
        self.push(Some(value.to_value()));
    }

    fn absent(&mut self, _: &Instr) {
        self.push(None);
    }

    fn begin_sequence(&mut self, _: &Instr, len: u32) {
        self.stack
            .push(Frame::Sequence(Vec::with_capacity(len.min(1024) as usize)));
    }

    fn begin_element(&mut self, _: u32) {
        self.stack.push(Frame::Fields(Vec::new()));
    }

    fn end_element(&mut self) {
        if let Some(Frame::Fields(f)) = self.stack.pop() {
            if let Some(Frame::Sequence(items)) = self.stack.last_mut() {
                items.push(f);
            }
        }
    }

    fn end_sequence(&mut self) {
        if let Some(Frame::Sequence(items)) = self.stack.pop() {
            self.push(Some(Value::Sequence(items)));
        }
    }

    fn begin_group(&mut self, _: &Instr) {
        self.stack.push(Frame::Fields(Vec::new()));
    }

    fn end_group(&mut self) {
        if let Some(Frame::Fields(f)) = self.stack.pop() {
            self.push(Some(Value::Group(f)));
        }
    }

    fn begin_template_ref(&mut self, template: &Template) {
        self.stack.push(Frame::Nested(template.id, Vec::new()));
    }

    fn end_template_ref(&mut self) {
        if let Some(Frame::Nested(id, fields)) = self.stack.pop() {
            self.push(Some(Value::Message(Box::new(Message {
                template_id: id,
                fields,
            }))));
        }
    }
}
