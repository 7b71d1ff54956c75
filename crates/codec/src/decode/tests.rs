//! The specialised arms against the general path: the same templates with every dispatch
//! code forced to `Generic` must decode every corpus message, and thousands of damaged ones,
//! to the same messages, byte counts and errors.

use std::sync::Arc;

use super::{DecodeOptions, Decoder};
use crate::template::{generic_copy, Templates};
use crate::test_rng::{xorshift, ASCII_FORMS};
use crate::{parse_templates, ErrorKind, Message};

fn shared(rel: &str) -> Vec<u8> {
    let path = format!("{}/../../../shared/{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

type Outcome = Vec<Result<(Message, usize), (ErrorKind, usize)>>;

/// Decodes a stream message by message until the end or the first error.
fn run(ts: &Arc<Templates>, strict: bool, bytes: &[u8]) -> Outcome {
    let mut d = Decoder::with_options(
        ts.clone(),
        DecodeOptions {
            strict,
            ..Default::default()
        },
    );
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        match d.decode_message(&bytes[pos..]) {
            Ok((m, n)) => {
                out.push(Ok((m, n)));
                pos += n;
            }
            Err(e) => {
                out.push(Err((e.kind, e.offset)));
                break;
            }
        }
    }
    out
}

/// Decodes each stream both ways, and `damaged` damaged copies of it; returns the messages
/// the intact streams gave (strict and lenient runs counted apiece).
fn compare(xml: &str, streams: &[Vec<u8>], damaged: usize) -> usize {
    let fast = parse_templates(xml).unwrap();
    let generic = generic_copy(&fast);
    let mut rng = xorshift(7);
    let mut messages = 0;
    for s in streams {
        for strict in [false, true] {
            let a = run(&fast, strict, s);
            assert_eq!(a, run(&generic, strict, s), "stream of {} bytes", s.len());
            messages += a.iter().filter(|r| r.is_ok()).count();
        }
        // Damaged copies: one byte changed, or cut short.
        for _ in 0..damaged {
            let mut d = s.clone();
            let i = (rng() as usize) % d.len();
            d[i] ^= (rng() as u8) | 1;
            if rng().is_multiple_of(4) {
                d.truncate(i + 1);
            }
            assert_eq!(run(&fast, false, &d), run(&generic, false, &d));
        }
    }
    messages
}

#[test]
fn mfast_complex_specialised_equals_generic() {
    let data = shared("corpus/mfast-complex/complex30000.dat");
    // len32le: take the first 400 messages, each its own stream (reset="Y" anyway).
    let mut streams = Vec::new();
    let mut pos = 0;
    while pos + 4 <= data.len() && streams.len() < 400 {
        let n = u32::from_le_bytes(data[pos..pos + 4].try_into().unwrap()) as usize;
        streams.push(data[pos + 4..pos + 4 + n].to_vec());
        pos += 4 + n;
    }
    let xml = String::from_utf8(shared("corpus/mfast-complex/example.xml")).unwrap();
    assert_eq!(compare(&xml, &streams, 100), 800);
}

#[test]
fn moex_specialised_equals_generic() {
    let xml = String::from_utf8(shared("corpus/moex-forts-2013/templates.xml")).unwrap();
    for file in ["increment_a.dat", "snapshot.dat"] {
        let data = shared(&format!("corpus/moex-forts-2013/{file}"));
        // Whole file as one stream: every packet opens with a Reset message.
        let streams: Vec<Vec<u8>> = data.chunks(4096).take(20).map(<[u8]>::to_vec).collect();
        assert!(
            compare(&xml, std::slice::from_ref(&data), 0) > 10_000,
            "{file}"
        );
        compare(&xml, &streams, 100);
    }
}

#[test]
fn openfast_fpl_specialised_equals_generic() {
    let xml = String::from_utf8(shared("corpus/openfast-fpl/FASTTestTemplate.xml")).unwrap();
    let data = shared("corpus/openfast-fpl/messages.fast");
    assert_eq!(compare(&xml, &[data], 500), 6);
}

#[test]
fn every_operator_specialised_equals_generic() {
    // Random bytes through a template using every class, operator and presence.
    let xml = r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
      <template name="All" id="1">
        <uInt32 name="a"/><uInt32 name="b" presence="optional"/>
        <int64 name="c"><copy value="-3"/></int64><int32 name="d" presence="optional"><copy/></int32>
        <uInt16 name="e"><increment value="65534"/></uInt16><int8 name="f" presence="optional"><increment/></int8>
        <uInt64 name="g"><delta/></uInt64><int32 name="h" presence="optional"><delta value="5"/></int32>
        <uInt32 name="i" presence="optional"><constant value="4"/></uInt32><int32 name="j"><default value="-1"/></int32>
        <decimal name="k"><copy value="1.5"/></decimal><decimal name="l" presence="optional"><delta/></decimal>
        <decimal name="m" presence="optional"><default/></decimal><decimal name="n"/>
        <decimal name="o" presence="optional"><exponent><default value="-2"/></exponent><mantissa><delta/></mantissa></decimal>
        <string name="p"><copy value="x"/></string><string name="q" presence="optional"><tail/></string>
        <string name="r"><delta value="abcdefgh"/></string><string name="s" presence="optional"><default value="z"/></string>
        <string name="t" presence="optional"/><string name="u"><constant value="K"/></string>
        <sequence name="v"><length name="vn"/><uInt32 name="w"><increment value="1"/></uInt32>
          <string name="x" presence="optional"><copy/></string></sequence>
      </template>
    </templates>"#;
    let mut rng = xorshift(99);
    let streams: Vec<Vec<u8>> = (0..300)
        .map(|_| {
            // A presence map of random bits (template id present), the id, then noise.
            let pmap = [
                (rng() as u8 & 0x3f) | 0x40,
                rng() as u8 & 0x7f,
                rng() as u8 & 0x7f,
                rng() as u8 | 0x80,
            ];
            // Mostly small one-byte values, so that whole messages decode now and then.
            let noise = (0..96).map(|_| match rng() % 20 {
                0 => rng() as u8 & 0x7f,
                _ => (rng() as u8 & 0x03) | 0x80,
            });
            pmap.into_iter().chain([0x81]).chain(noise).collect()
        })
        .collect();
    let decoded = compare(xml, &streams, 10);
    assert!(decoded > 500, "{decoded} random messages decoded");
}

#[test]
fn long_threaded_segment_crosses_chain_ends() {
    // 100 fields of mixed kinds: threaded dispatch, cut into chains of 32.
    let kinds = [
        r#"<uInt32 name="u{i}"><copy/></uInt32>"#,
        r#"<int64 name="i{i}" presence="optional"><delta/></int64>"#,
        r#"<string name="s{i}"><default value="d"/></string>"#,
        r#"<decimal name="d{i}" presence="optional"/>"#,
        r#"<uInt64 name="n{i}"><increment value="7"/></uInt64>"#,
    ];
    let fields: String = (0..100)
        .map(|i| kinds[i % kinds.len()].replace("{i}", &i.to_string()))
        .collect();
    let xml = format!(
        r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
        <template name="Long" id="5">{fields}</template></templates>"#
    );
    let ts = parse_templates(&xml).unwrap();
    assert!(ts.get(5).unwrap().body.threaded);
    use crate::{Decimal, Encoder, Value};
    let message = |k: u64| Message {
        template_id: 5,
        fields: (0..100u64)
            .map(|i| match i % 5 {
                0 => Some(Value::UInt(i * k)),
                1 if (i + k).is_multiple_of(3) => None,
                1 => Some(Value::Int(-(i as i64) * k as i64)),
                2 => Some(Value::Ascii(if k.is_multiple_of(2) {
                    "d".into()
                } else {
                    format!("x{i}")
                })),
                3 => Some(Value::Decimal(Decimal::new(-2, (i * k) as i64))),
                _ => Some(Value::UInt(7 + k)),
            })
            .collect(),
    };
    let mut enc = Encoder::new(ts.clone());
    let mut bytes = Vec::new();
    let sent: Vec<Message> = (0..20).map(message).collect();
    for m in &sent {
        enc.encode(m, &mut bytes).unwrap();
    }
    let got = run(&ts, true, &bytes);
    assert_eq!(got, run(&generic_copy(&ts), true, &bytes));
    let decoded: Vec<Message> = got.into_iter().map(|r| r.unwrap().0).collect();
    assert_eq!(decoded, sent);
}

#[test]
fn threaded_error_names_its_field_past_the_first_chain() {
    // An arm records its place only when it fails: the error must still name the field, in
    // a chain after the first. Encoded with field 69 as a uInt64, decoded with it a uInt32.
    let xml = |wide: &str| {
        let fields: String = (0..100)
            .map(|i| match i % 3 {
                0 if i == 69 => format!(r#"<{wide} name="u{i}"><copy/></{wide}>"#),
                0 => format!(r#"<uInt32 name="u{i}"><copy/></uInt32>"#),
                1 => format!(r#"<int64 name="i{i}" presence="optional"><delta/></int64>"#),
                _ => format!(r#"<string name="s{i}"><default value="d"/></string>"#),
            })
            .collect();
        format!(
            r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
            <template name="Long" id="5">{fields}</template></templates>"#
        )
    };
    let (wide, narrow) = (
        parse_templates(&xml("uInt64")).unwrap(),
        parse_templates(&xml("uInt32")).unwrap(),
    );
    assert!(narrow.get(5).unwrap().body.threaded);
    use crate::{Encoder, Value};
    let message = Message {
        template_id: 5,
        fields: (0..100u64)
            .map(|i| match i % 3 {
                0 if i == 69 => Some(Value::UInt(1 << 40)),
                0 => Some(Value::UInt(i)),
                1 => Some(Value::Int(-(i as i64))),
                _ => Some(Value::Ascii("x".into())),
            })
            .collect(),
    };
    let mut bytes = Vec::new();
    Encoder::new(wide).encode(&message, &mut bytes).unwrap();
    for ts in [narrow.clone(), generic_copy(&narrow)] {
        let e = Decoder::new(ts).decode_message(&bytes).unwrap_err();
        assert_eq!(e.kind, ErrorKind::IntegerOverflow, "{e}");
        assert_eq!(e.field.as_deref(), Some("u69"), "{e}");
        assert_eq!(e.template.as_deref(), Some("Long"), "{e}");
    }
}

#[test]
fn wide_deltas_specialised_equals_generic() {
    // Deltas wider than 64 bits make the specialised arms fail their narrow read, and the
    // general path decodes the field again: in a plain segment and in a threaded one (the
    // same fields among others of varied kinds), the values must come out whole.
    use crate::{Decimal, Encoder, Value};
    let wide = r#"<uInt64 name="a"><delta/></uInt64>
        <int64 name="b" presence="optional"><delta/></int64>
        <decimal name="c"><delta/></decimal>
        <decimal name="d" presence="optional"><exponent><default value="-2"/></exponent><mantissa><delta/></mantissa></decimal>"#;
    let varied = r#"<uInt32 name="e"><copy/></uInt32><string name="f"/><int32 name="g"><increment value="1"/></int32>
        <decimal name="h" presence="optional"/><string name="i"><default value="x"/></string>
        <uInt32 name="j" presence="optional"/><int64 name="k"><copy/></int64><string name="l"><copy/></string>"#;
    let xml = format!(
        r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
        <template name="Plain" id="1">{wide}</template>
        <template name="Threaded" id="2">{varied}{wide}{varied}</template></templates>"#
    );
    let ts = parse_templates(&xml).unwrap();
    assert!(!ts.get(1).unwrap().body.threaded && ts.get(2).unwrap().body.threaded);
    let wide_values = |k: usize| -> Vec<Option<Value>> {
        let (lo, hi) = (k.is_multiple_of(2), !k.is_multiple_of(2));
        vec![
            Some(Value::UInt(if lo { 0 } else { u64::MAX })),
            Some(Value::Int(if hi { i64::MIN } else { i64::MAX })),
            Some(Value::Decimal(Decimal::new(
                0,
                if lo { i64::MIN } else { i64::MAX },
            ))),
            Some(Value::Decimal(Decimal::new(
                -2,
                if hi { i64::MIN } else { i64::MAX },
            ))),
        ]
    };
    let varied_values = |k: usize| -> Vec<Option<Value>> {
        vec![
            Some(Value::UInt(k as u64)),
            Some(Value::Ascii("s".into())),
            Some(Value::Int(1 + k as i64)),
            None,
            Some(Value::Ascii("x".into())),
            Some(Value::UInt(3)),
            Some(Value::Int(-(k as i64))),
            Some(Value::Ascii("c".into())),
        ]
    };
    let sent: Vec<Message> = (0..8)
        .map(|k| match k % 2 {
            0 => Message {
                template_id: 1,
                fields: wide_values(k),
            },
            _ => Message {
                template_id: 2,
                fields: [varied_values(k), wide_values(k), varied_values(k + 1)].concat(),
            },
        })
        .collect();
    let mut enc = Encoder::new(ts.clone());
    let mut bytes = Vec::new();
    for m in &sent {
        enc.encode(m, &mut bytes).unwrap();
    }
    let got = run(&ts, false, &bytes);
    assert_eq!(got, run(&generic_copy(&ts), false, &bytes));
    let decoded: Vec<Message> = got.into_iter().map(|r| r.unwrap().0).collect();
    assert_eq!(decoded, sent);
    // And the damaged copies decode the same both ways.
    compare(&xml, &[bytes], 300);
}

#[test]
fn strings_at_the_end_of_the_input_specialised_equals_generic() {
    // ASCII fields last in a message, so their bytes end the input: the specialised arms read
    // what is left zero-padded, the generic ones byte by byte. Every form of a string (one
    // byte, several, NULL and the empty string, zero preambles, overlong ones), cut at every
    // length.
    let xml = r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
      <template name="T" id="1">
        <string name="a"/><string name="b" presence="optional"/>
        <string name="c"><copy/></string><string name="d" presence="optional"><copy/></string>
        <string name="e"><default value="e"/></string><string name="f" presence="optional"><default/></string>
      </template>
    </templates>"#;
    let mut rng = xorshift(5);
    let mut streams = Vec::new();
    for _ in 0..400 {
        // Every field present (pmap bits for c..f set), the template id, six strings.
        let mut s = vec![0xff, 0x81];
        for _ in 0..6 {
            s.extend_from_slice(ASCII_FORMS[rng() as usize % ASCII_FORMS.len()]);
        }
        for cut in 3..=s.len() {
            streams.push(s[..cut].to_vec());
        }
    }
    let decoded = compare(xml, &streams, 0);
    assert!(decoded > 100, "{decoded} messages decoded");
}
