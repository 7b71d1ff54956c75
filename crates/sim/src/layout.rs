//! Field positions by name, resolved once per template so generators fill messages by index.

use fastfeed_codec::template::{FieldType, Initial, Instr, Kind, Op, Segment};
use fastfeed_codec::{Decimal, Fields, Message, Templates, Value};

use crate::SimError;

/// One segment's field positions and a prototype with its mandatory constants filled in
/// (the decoder reports constants, so generated messages carry them to compare equal).
pub(crate) struct Layout {
    template: String,
    template_id: u32,
    names: Vec<String>,
    proto: Fields,
    segment: Segment,
}

impl Layout {
    pub fn of_template(templates: &Templates, id: u32) -> Result<Layout, SimError> {
        let t = templates
            .get(id)
            .ok_or_else(|| SimError::Config(format!("no template with id {id}")))?;
        Ok(Layout::new(&t.name, id, &t.body))
    }

    fn new(template: &str, template_id: u32, segment: &Segment) -> Layout {
        Layout {
            template: template.to_owned(),
            template_id,
            names: segment.instrs.iter().map(|i| i.name.clone()).collect(),
            proto: segment.instrs.iter().map(constant).collect(),
            segment: segment.clone(),
        }
    }

    /// The position of field `name`.
    pub fn idx(&self, name: &'static str) -> Result<usize, SimError> {
        self.names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| SimError::MissingField {
                template: self.template.clone(),
                field: name,
            })
    }

    /// The element layout of sequence `name`, and its position.
    pub fn sequence(&self, name: &'static str) -> Result<(usize, Layout), SimError> {
        let i = self.idx(name)?;
        match &self.segment.instrs[i].kind {
            Kind::Sequence { body, .. } => Ok((i, Layout::new(&self.template, 0, body))),
            _ => Err(SimError::MissingField {
                template: self.template.clone(),
                field: name,
            }),
        }
    }

    pub fn fields(&self) -> Fields {
        self.proto.clone()
    }

    pub fn message(&self) -> Message {
        Message {
            template_id: self.template_id,
            fields: self.fields(),
        }
    }
}

/// The value the decoder reports for a mandatory constant field.
fn constant(instr: &Instr) -> Option<Value> {
    let Kind::Scalar(s) = &instr.kind else {
        return None;
    };
    if s.op != Op::Constant || s.optional {
        return None;
    }
    Some(match (s.ty, s.initial.as_ref()?) {
        (FieldType::Int(it), Initial::Int(v)) if it.signed() => Value::Int(*v as i64),
        (FieldType::Int(_), Initial::Int(v)) => Value::UInt(*v),
        (_, Initial::Decimal { exponent, mantissa }) => {
            Value::Decimal(Decimal::new(*exponent, *mantissa))
        }
        (FieldType::Ascii, Initial::Bytes(b)) => Value::Ascii(String::from_utf8_lossy(b).into()),
        (FieldType::Unicode, Initial::Bytes(b)) => {
            Value::Unicode(String::from_utf8_lossy(b).into())
        }
        (_, Initial::Bytes(b)) => Value::Bytes(b.to_vec()),
        _ => return None,
    })
}
