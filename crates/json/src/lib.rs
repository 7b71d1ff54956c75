//! FAST messages as JSON objects and back: `{"templateId":1,"templateName":"MarketData",
//! "MsgSeqNum":7,...}`. Fields appear by name in template order; absent optional fields are
//! left out. Decimals are JSON numbers written exactly (`9427.55`, `942755e+2`: the digits after
//! the point give the exponent), never through binary floating point; byte vectors are hex
//! strings; sequences are arrays of objects; groups are objects; a dynamic template
//! reference is a nested message object under the key `templateRef`. A FAST Session Control
//! Protocol message that the codec knows without the template file (Reset, Hello, Alert)
//! says so: `"scp":"1.1"`. Reading back, a key
//! that names no field of the template is an error unless [`ReadOptions`] allow it: a
//! misspelt field would otherwise vanish from the encoding unnoticed.

use std::str::FromStr;

use fastfeed_codec::template::{FieldType, Instr, Kind, Template};
use fastfeed_codec::{Decimal, Fields, Message, Templates, Value};
use serde_json::{Map, Number, Value as Json};

pub const TEMPLATE_ID: &str = "templateId";
pub const TEMPLATE_NAME: &str = "templateName";
/// Marks a message of the Session Control Protocol templates the codec knows by itself.
pub const SESSION_CONTROL: &str = "scp";

#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    #[error("message object has no {TEMPLATE_ID} or {TEMPLATE_NAME}")]
    NoTemplate,
    /// The object names a template (`templateId 999`, `templateName "X"`) the file lacks,
    /// or a name that several of its templates share.
    #[error("message object's {0}")]
    UnknownTemplate(String),
    #[error("field {field}: {problem}")]
    Field { field: String, problem: String },
    #[error("expected a JSON object")]
    NotAnObject,
    #[error("unknown field {field:?}: template {template} has no such field")]
    UnknownField { field: String, template: String },
}

/// How [`from_json_with`] reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// Ignore keys that name no field of the template (else they are errors).
    pub allow_unknown_fields: bool,
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
            if t.session {
                obj.insert(SESSION_CONTROL.into(), Json::from("1.1"));
            }
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

/// Reads a message back from its JSON form; keys that name no field are errors.
pub fn from_json(json: &Json, templates: &Templates) -> Result<Message, JsonError> {
    from_json_with(json, templates, ReadOptions::default())
}

/// Reads a message back from its JSON form.
pub fn from_json_with(
    json: &Json,
    templates: &Templates,
    opts: ReadOptions,
) -> Result<Message, JsonError> {
    let obj = json.as_object().ok_or(JsonError::NotAnObject)?;
    let template = find_template(obj, templates)?;
    let r = Reader {
        templates,
        opts,
        template: &template.name,
    };
    Ok(Message {
        template_id: template.id,
        fields: r.fields(obj, &template.body.instrs, "")?,
    })
}

fn find_template<'t>(
    obj: &Map<String, Json>,
    templates: &'t Templates,
) -> Result<&'t Template, JsonError> {
    let id = obj.get(TEMPLATE_ID).and_then(Json::as_u64);
    let name = obj.get(TEMPLATE_NAME).and_then(Json::as_str);
    match (id, name) {
        (Some(id), _) => u32::try_from(id)
            .ok()
            .and_then(|id| templates.get(id))
            .ok_or_else(|| {
                JsonError::UnknownTemplate(format!(
                    "{TEMPLATE_ID} {id} is not in the template file"
                ))
            }),
        (None, Some(name)) => templates
            .lookup(name)
            .map_err(|e| JsonError::UnknownTemplate(format!("{TEMPLATE_NAME}: {e}"))),
        (None, None) => Err(JsonError::NoTemplate),
    }
}

/// Reads the fields of one message.
struct Reader<'a> {
    templates: &'a Templates,
    opts: ReadOptions,
    template: &'a str,
}

impl Reader<'_> {
    /// The fields of `instrs` from `obj`; `path` names `obj` within the message in errors.
    fn fields(
        &self,
        obj: &Map<String, Json>,
        instrs: &[Instr],
        path: &str,
    ) -> Result<Fields, JsonError> {
        if !self.opts.allow_unknown_fields {
            let top = path.is_empty();
            let known = |k: &str| {
                instrs.iter().any(|i| i.name == k)
                    || (top && (k == TEMPLATE_ID || k == TEMPLATE_NAME || k == SESSION_CONTROL))
            };
            if let Some(k) = obj.keys().find(|k| !known(k)) {
                return Err(JsonError::UnknownField {
                    field: format!("{path}{k}"),
                    template: self.template.to_owned(),
                });
            }
        }
        instrs
            .iter()
            .map(|instr| match obj.get(&instr.name) {
                // A mandatory constant is never in the stream: its value is the template's,
                // so a message written by hand may leave it out.
                None => Ok(instr.constant_value()),
                Some(Json::Null) => Ok(None),
                Some(j) => self.value(instr, j, path).map(Some),
            })
            .collect()
    }

    fn value(&self, instr: &Instr, j: &Json, path: &str) -> Result<Value, JsonError> {
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
                    .enumerate()
                    .map(|(n, item)| {
                        let o = item
                            .as_object()
                            .ok_or_else(|| field_err(name, "expected objects in the array"))?;
                        self.fields(o, &body.instrs, &format!("{path}{name}[{n}]."))
                    })
                    .collect::<Result<_, _>>()?;
                Ok(Value::Sequence(items))
            }
            Kind::Group(body) => {
                let o = j
                    .as_object()
                    .ok_or_else(|| field_err(name, "expected an object"))?;
                Ok(Value::Group(self.fields(
                    o,
                    &body.instrs,
                    &format!("{path}{name}."),
                )?))
            }
            Kind::DynamicRef => Ok(Value::Message(Box::new(from_json_with(
                j,
                self.templates,
                self.opts,
            )?))),
        }
    }
}

/// How a field type is named in the template XML.
fn type_name(ty: FieldType) -> &'static str {
    match ty {
        FieldType::Int(it) => it.name(),
        FieldType::Decimal => "decimal",
        FieldType::Ascii => "ASCII string",
        FieldType::Unicode => "unicode string",
        FieldType::Bytes => "byteVector (a hex string)",
    }
}

fn scalar(name: &str, ty: FieldType, j: &Json) -> Result<Value, JsonError> {
    let bad = || field_err(name, format!("{j} is not a valid {}", type_name(ty)));
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

    /// A message naming a template the file lacks is told which, apart from one naming none.
    #[test]
    fn unknown_templates_are_named() {
        let ts = fastfeed_codec::parse_templates(XML).unwrap();
        let err = |text: &str| {
            from_json(&serde_json::from_str(text).unwrap(), &ts)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(r#"{"templateId":999}"#),
            "message object's templateId 999 is not in the template file"
        );
        assert_eq!(
            err(r#"{"templateId":99999999999}"#),
            "message object's templateId 99999999999 is not in the template file"
        );
        assert_eq!(
            err(r#"{"templateName":"Nope"}"#),
            "message object's templateName: no template named \"Nope\""
        );
        assert_eq!(
            err(r#"{"A":1}"#),
            "message object has no templateId or templateName"
        );
        // A templateId that is not a number leaves the choice to the name.
        assert!(from_json(
            &serde_json::from_str(
                r#"{"templateId":"x","templateName":"T","A":1,"Px":1,"S":"","Raw":"","Legs":[]}"#
            )
            .unwrap(),
            &ts
        )
        .is_ok());
    }

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
    fn session_control_messages_say_so_and_read_back() {
        let ts = fastfeed_codec::parse_templates(XML).unwrap();
        let reset = Message {
            template_id: 120,
            fields: vec![],
        };
        let text = to_json(&reset, &ts).to_string();
        assert_eq!(
            text,
            r#"{"templateId":120,"templateName":"Reset","scp":"1.1"}"#
        );
        assert_eq!(
            from_json(&serde_json::from_str(&text).unwrap(), &ts).unwrap(),
            reset
        );
        // A message of the file's own templates carries no marker.
        let own =
            serde_json::json!({"templateId": 7, "A": 1, "Px": 1, "S": "", "Raw": "", "Legs": []});
        let t = to_json(&from_json(&own, &ts).unwrap(), &ts);
        assert!(t.get(SESSION_CONTROL).is_none());
    }

    #[test]
    fn positive_exponents_print_as_json_exponents() {
        let ts = fastfeed_codec::parse_templates(XML).unwrap();
        let mut fields: Fields = vec![None; 7];
        fields[0] = Some(Value::UInt(1));
        fields[2] = Some(Value::Decimal(Decimal::new(1, 13331)));
        let msg = Message {
            template_id: 7,
            fields,
        };
        let text = to_json(&msg, &ts).to_string();
        assert!(text.contains(r#""Px":13331e+1"#), "{text}");
        let back = from_json(&serde_json::from_str(&text).unwrap(), &ts).unwrap();
        assert_eq!(back.fields[2], Some(Value::Decimal(Decimal::new(1, 13331))));
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
        let e = from_json(
            &serde_json::from_str(r#"{"templateId":7,"A":-1}"#).unwrap(),
            &ts,
        );
        assert_eq!(
            e.unwrap_err().to_string(),
            "field A: -1 is not a valid uInt32"
        );
    }

    #[test]
    fn unknown_fields_are_errors_unless_allowed() {
        let ts = fastfeed_codec::parse_templates(XML).unwrap();
        let allow = ReadOptions {
            allow_unknown_fields: true,
        };
        for (text, field) in [
            (r#"{"templateId":7,"A":1,"Pxx":2}"#, "Pxx"),
            (
                r#"{"templateId":7,"Legs":[{"Leg":1},{"Lge":2}]}"#,
                "Legs[1].Lge",
            ),
            (r#"{"templateId":7,"G":{"Inner":"x","Outer":1}}"#, "G.Outer"),
            (
                r#"{"templateName":"T","Legs":[{"templateId":7}]}"#,
                "Legs[0].templateId",
            ),
        ] {
            let j = serde_json::from_str(text).unwrap();
            match from_json(&j, &ts) {
                Err(JsonError::UnknownField { field: f, template }) => {
                    assert_eq!((f.as_str(), template.as_str()), (field, "T"), "{text}")
                }
                other => panic!("{text}: {other:?}"),
            }
            assert!(from_json_with(&j, &ts, allow).is_ok(), "{text}");
        }
    }

    /// A mandatory constant left out of the JSON takes its template value; an optional one
    /// left out is absent, and a wrong value stays the encoder's error.
    #[test]
    fn mandatory_constants_may_be_left_out() {
        let ts = fastfeed_codec::parse_templates(
            r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
              <template name="H" id="6">
                <string name="V"><constant value="9"/></string>
                <int32 name="N"><constant value="-3"/></int32>
                <decimal name="D"><constant value="1.50"/></decimal>
                <string name="U" charset="unicode"><constant value="é"/></string>
                <byteVector name="B"><constant value="0aff"/></byteVector>
                <uInt32 name="O" presence="optional"><constant value="7"/></uInt32>
                <uInt32 name="Seq"/>
              </template></templates>"#,
        )
        .unwrap();
        let short = from_json(
            &serde_json::from_str(r#"{"templateId":6,"Seq":1}"#).unwrap(),
            &ts,
        )
        .unwrap();
        assert_eq!(
            short.fields,
            [
                Some(Value::Ascii("9".into())),
                Some(Value::Int(-3)),
                Some(Value::Decimal(Decimal::new(-1, 15))),
                Some(Value::Unicode("é".into())),
                Some(Value::Bytes(vec![0x0a, 0xff])),
                None,
                Some(Value::UInt(1)),
            ]
        );
        let full = r#"{"templateId":6,"V":"9","N":-3,"D":"1.5","U":"é","B":"0aff","Seq":1}"#;
        let full = from_json(&serde_json::from_str(full).unwrap(), &ts).unwrap();
        let mut enc = fastfeed_codec::Encoder::new(ts.clone());
        let (mut a, mut b) = (Vec::new(), Vec::new());
        enc.encode(&short, &mut a).unwrap();
        enc.reset();
        enc.encode(&full, &mut b).unwrap();
        assert_eq!(a, b);
        let wrong = r#"{"templateId":6,"V":"8","Seq":1}"#;
        let wrong = from_json(&serde_json::from_str(wrong).unwrap(), &ts).unwrap();
        assert!(enc.encode(&wrong, &mut Vec::new()).is_err());
    }
}
