//! The encoder's specialised arms against its general path: every corpus message, encoded
//! as one stream both ways, must give the same bytes.

use crate::template::generic_copy;
use crate::{parse_templates, Decoder, Encoder, Message};

fn shared(rel: &str) -> Vec<u8> {
    let path = format!("{}/../../../shared/{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn decode_all(xml: &str, data: &[u8], len32le: bool, limit: usize) -> Vec<Message> {
    let mut d = Decoder::new(parse_templates(xml).unwrap());
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < data.len() && out.len() < limit {
        let (start, end) = if len32le {
            let n = u32::from_le_bytes(data[pos..pos + 4].try_into().unwrap()) as usize;
            (pos + 4, pos + 4 + n)
        } else {
            (pos, data.len())
        };
        let (m, n) = d.decode_message(&data[start..end]).unwrap();
        out.push(m);
        pos = if len32le { end } else { start + n };
    }
    out
}

fn same_bytes(xml: &str, messages: &[Message]) {
    let fast = parse_templates(xml).unwrap();
    let mut a = Encoder::new(fast.clone());
    let mut b = Encoder::new(generic_copy(&fast));
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for m in messages {
        assert_eq!(a.encode(m, &mut x).is_ok(), b.encode(m, &mut y).is_ok());
    }
    assert!(x == y, "the specialised encoding differs");
    assert!(!x.is_empty());
}

#[test]
fn corpus_specialised_encoding_equals_generic() {
    let mfast = String::from_utf8(shared("corpus/mfast-complex/example.xml")).unwrap();
    let data = shared("corpus/mfast-complex/complex30000.dat");
    same_bytes(&mfast, &decode_all(&mfast, &data, true, 3_000));
    let moex = String::from_utf8(shared("corpus/moex-forts-2013/templates.xml")).unwrap();
    for file in ["increment_a.dat", "snapshot.dat"] {
        let data = shared(&format!("corpus/moex-forts-2013/{file}"));
        same_bytes(&moex, &decode_all(&moex, &data, false, usize::MAX));
    }
}

#[test]
fn mismatched_values_fail_alike() {
    // Wrong types, out-of-range values and missing mandatory values: both paths refuse.
    use crate::Value;
    let xml = r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
      <template name="T" id="1"><uInt8 name="a"><copy/></uInt8><int32 name="b"><delta/></int32>
        <uInt32 name="c"><constant value="3"/></uInt32></template></templates>"#;
    let fast = parse_templates(xml).unwrap();
    let generic = generic_copy(&fast);
    let cases = [
        [
            Some(Value::UInt(300)),
            Some(Value::Int(1)),
            Some(Value::UInt(3)),
        ],
        [
            Some(Value::Int(-1)),
            Some(Value::Int(1)),
            Some(Value::UInt(3)),
        ],
        [Some(Value::UInt(1)), None, Some(Value::UInt(3))],
        [
            Some(Value::UInt(1)),
            Some(Value::Int(1)),
            Some(Value::UInt(4)),
        ],
        [
            Some(Value::Ascii("x".into())),
            Some(Value::Int(1)),
            Some(Value::UInt(3)),
        ],
        [
            Some(Value::UInt(1)),
            Some(Value::Int(-5)),
            Some(Value::UInt(3)),
        ],
    ];
    for fields in cases {
        let m = Message {
            template_id: 1,
            fields: fields.to_vec(),
        };
        let (mut x, mut y) = (Vec::new(), Vec::new());
        let a = Encoder::new(fast.clone())
            .encode(&m, &mut x)
            .map_err(|e| e.kind);
        let b = Encoder::new(generic.clone())
            .encode(&m, &mut y)
            .map_err(|e| e.kind);
        assert_eq!(a, b, "{m:?}");
        assert_eq!(x, y);
    }
}
