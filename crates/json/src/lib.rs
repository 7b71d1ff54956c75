//! FAST messages as JSON objects and back: `{"templateId":1,"templateName":"MarketData",
//! "MsgSeqNum":7,...}`. Fields appear by name in template order; absent optional fields are
//! left out. Decimals are JSON numbers written exactly (`9427.55`, `942755e2`: the digits after
//! the point give the exponent), never through binary floating point; byte vectors are hex
//! strings; sequences are arrays of objects; groups are objects; a dynamic template
//! reference is a nested message object under the key `templateRef`.

use std::str::FromStr;

use fastfeed_codec::template::{FieldType, Instr, Kind, Template};
use fastfeed_codec::{Decimal, Fields, Message, Templates, Value};
use serde_json::{Map, Number, Value as Json};

pub const TEMPLATE_ID: &str = "templateId";
pub const TEMPLATE_NAME: &str = "templateName";

#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    #[error("message object has no known {TEMPLATE_ID} or {TEMPLATE_NAME}")]
    NoTemplate,
    #[error("field {field}: {problem}")]
    Field { field: String, problem: String },
    #[error("expected a JSON object")]
    NotAnObject,
}

fn field_err(field: &str, problem: impl Into<String>) -> JsonError {
    JsonError::Field {
        field: field.to_owned(),
        problem: problem.into(),
    }
}

/// The JSON form of a message. `templates` must hold its template.
pub fn to_json(msg: &Message, templates: &Templates) -> Json {
    let mut obj = Map::new();
    obj.insert(TEMPLATE_ID.into(), Json::from(msg.template_id));
    match templates.get(msg.template_id) {
        Some(t) => {
            obj.insert(TEMPLATE_NAME.into(), Json::from(t.name.clone()));
            put_fields(&mut obj, &t.body.instrs, &msg.fields, templates);
        }
        None => {
            obj.insert("error".into(), Json::from("unknown template"));
        }
    }
    Json::Object(obj)
}

fn put_fields(
    obj: &mut Map<String, Json>,
    instrs: &[Instr],
    fields: &Fields,
    templates: &Templates,
) {
    for (instr, v) in instrs.iter().zip(fields) {
        if let Some(v) = v {
            obj.insert(instr.name.clone(), value_json(instr, v, templates));
        }
    }
}

fn value_json(instr: &Instr, v: &Value, templates: &Templates) -> Json {
    match v {
        Value::UInt(u) => Json::from(*u),
        Value::Int(i) => Json::from(*i),
        Value::Decimal(d) => decimal_json(*d),
        Value::Ascii(s) | Value::Unicode(s) => Json::from(s.clone()),
        Value::Bytes(b) => Json::from(hex(b)),
        Value::Sequence(items) => {
            let Kind::Sequence { body, .. } = &instr.kind else {
                return Json::Null;
            };
            Json::Array(
                items
                    .iter()
                    .map(|f| {
                        let mut o = Map::new();
                        put_fields(&mut o, &body.instrs, f, templates);
                        Json::Object(o)
                    })
                    .collect(),
            )
        }
        Value::Group(f) => {
            let Kind::Group(body) = &instr.kind else {
                return Json::Null;
            };
            let mut o = Map::new();
            put_fields(&mut o, &body.instrs, f, templates);
            Json::Object(o)
        }
        Value::Message(m) => to_json(m, templates),
    }
}

fn decimal_json(d: Decimal) -> Json {
    // Display gives valid JSON number text, so this parse cannot fail.
    Number::from_str(&d.to_string())
        .map(Json::Number)
        .unwrap_or(Json::Null)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Reads a message back from its JSON form.
pub fn from_json(json: &Json, templates: &Templates) -> Result<Message, JsonError> {
    let obj = json.as_object().ok_or(JsonError::NotAnObject)?;
    let template = find_template(obj, templates).ok_or(JsonError::NoTemplate)?;
    Ok(Message {
        template_id: template.id,
        fields: read_fields(obj, &template.body.instrs, templates)?,
    })
}

fn find_template<'t>(obj: &Map<String, Json>, templates: &'t Templates) -> Option<&'t Template> {
    match obj.get(TEMPLATE_ID).and_then(Json::as_u64) {
        Some(id) => templates.get(u32::try_from(id).ok()?),
        None => templates.by_name(obj.get(TEMPLATE_NAME)?.as_str()?),
    }
}

fn read_fields(
    obj: &Map<String, Json>,
    instrs: &[Instr],
    templates: &Templates,
) -> Result<Fields, JsonError> {
    instrs
        .iter()
        .map(|instr| match obj.get(&instr.name) {
            None | Some(Json::Null) => Ok(None),
            Some(j) => read_value(instr, j, templates).map(Some),
        })
        .collect()
}

fn read_value(instr: &Instr, j: &Json, templates: &Templates) -> Result<Value, JsonError> {
    let name = &instr.name;
    match &instr.kind {
        Kind::Scalar(s) => scalar(name, s.ty, j),
        Kind::SplitDecimal { .. } => scalar(name, FieldType::Decimal, j),
        Kind::Sequence { body, .. } => {
            let items = j
                .as_array()
                .ok_or_else(|| field_err(name, "expected an array"))?;
            let items = items
                .iter()
                .map(|item| {
                    let o = item
                        .as_object()
                        .ok_or_else(|| field_err(name, "expected objects in the array"))?;
                    read_fields(o, &body.instrs, templates)
                })
                .collect::<Result<_, _>>()?;
            Ok(Value::Sequence(items))
        }
        Kind::Group(body) => {
            let o = j
                .as_object()
                .ok_or_else(|| field_err(name, "expected an object"))?;
            Ok(Value::Group(read_fields(o, &body.instrs, templates)?))
        }
        Kind::DynamicRef => Ok(Value::Message(Box::new(from_json(j, templates)?))),
    }
}

fn scalar(name: &str, ty: FieldType, j: &Json) -> Result<Value, JsonError> {
    let bad = || field_err(name, format!("{j} is not a valid {ty:?}"));
    Ok(match ty {
        FieldType::Int(it) if it.signed() => Value::Int(j.as_i64().ok_or_else(bad)?),
        FieldType::Int(_) => Value::UInt(j.as_u64().ok_or_else(bad)?),
        FieldType::Decimal => {
            let text = match j {
                Json::Number(n) => n.to_string(),
                Json::String(s) => s.clone(),
                _ => return Err(bad()),
            };
            Value::Decimal(Decimal::parse(&text).ok_or_else(bad)?)
        }
        FieldType::Ascii => Value::Ascii(j.as_str().ok_or_else(bad)?.to_owned()),
        FieldType::Unicode => Value::Unicode(j.as_str().ok_or_else(bad)?.to_owned()),
        FieldType::Bytes => Value::Bytes(unhex(j.as_str().ok_or_else(bad)?).ok_or_else(bad)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const XML: &str = r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
      <template name="T" id="7">
        <uInt32 name="A"/><int64 name="B" presence="optional"/><decimal name="Px"/>
        <string name="S"/><byteVector name="Raw"/>
        <sequence name="Legs"><length name="NoLegs"/><uInt32 name="Leg"/></sequence>
        <group name="G" presence="optional"><string name="Inner" charset="unicode"/></group>
      </template></templates>"#;

    #[test]
    fn json_round_trip_is_exact() {
        let ts = fastfeed_codec::parse_templates(XML).unwrap();
        let msg = Message {
            template_id: 7,
            fields: vec![
                Some(Value::UInt(u64::from(u32::MAX))),
                None,
                Some(Value::Decimal(Decimal::new(-3, 9427550))),
                Some(Value::Ascii("ABC".into())),
                Some(Value::Bytes(vec![0, 0xff])),
                Some(Value::Sequence(vec![
                    vec![Some(Value::UInt(1))],
                    vec![Some(Value::UInt(2))],
                ])),
                Some(Value::Group(vec![Some(Value::Unicode("é".into()))])),
            ],
        };
        let j = to_json(&msg, &ts);
        let text = j.to_string();
        assert_eq!(
            text,
            r#"{"templateId":7,"templateName":"T","A":4294967295,"Px":9427.550,"S":"ABC","Raw":"00ff","Legs":[{"Leg":1},{"Leg":2}],"G":{"Inner":"é"}}"#
        );
        let back = from_json(&serde_json::from_str(&text).unwrap(), &ts).unwrap();
        assert_eq!(back, msg);
    }

    #[test]
    fn bad_values_are_errors() {
        let ts = fastfeed_codec::parse_templates(XML).unwrap();
        for bad in [
            r#"{"templateId":7,"A":-1}"#,
            r#"{"templateId":7,"Raw":"zz"}"#,
            r#"{"templateId":8}"#,
            r#"[1]"#,
        ] {
            assert!(
                from_json(&serde_json::from_str(bad).unwrap(), &ts).is_err(),
                "{bad}"
            );
        }
    }
}
