use std::sync::Arc;

use fastfeed_codec::{Decimal, Decoder, Encoder, Message, Templates, Value};

use crate::read::parse_price;
use crate::write::put_decimal;
use crate::*;

const XML: &str = r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
  <template name="Incr" id="7">
    <string name="MsgType" id="35"><constant value="X"/></string>
    <uInt32 name="MsgSeqNum" id="34"><increment/></uInt32>
    <string name="Text" id="58" presence="optional"/>
    <sequence name="MDEntries">
      <length name="NoMDEntries" id="268"/>
      <uInt32 name="MDUpdateAction" id="279"><copy/></uInt32>
      <decimal name="MDEntryPx" id="270" presence="optional"/>
      <int64 name="MDEntrySize" id="271" presence="optional"><delta/></int64>
    </sequence>
  </template>
  <template name="Plain" id="9">
    <uInt32 name="A" id="100"/>
    <group name="G" presence="optional"><string name="B" id="101"/></group>
  </template>
  <template name="Untagged" id="11">
    <string name="MsgType" id="35"><constant value="Y"/></string>
    <uInt32 name="NoTag"/>
  </template>
</templates>"#;

fn templates() -> Arc<Templates> {
    fastfeed_codec::parse_templates(XML).unwrap()
}

fn entry(action: u64, px: Option<(i32, i64)>, size: Option<i64>) -> Vec<Option<Value>> {
    vec![
        Some(Value::UInt(action)),
        px.map(|(e, m)| Value::Decimal(Decimal::new(e, m))),
        size.map(Value::Int),
    ]
}

fn incr() -> Message {
    Message {
        template_id: 7,
        fields: vec![
            Some(Value::Ascii("X".into())),
            Some(Value::UInt(12)),
            None,
            Some(Value::Sequence(vec![
                entry(1, Some((-2, 942755)), Some(-5)),
                entry(0, Some((2, 338)), None),
                entry(0, None, Some(7)),
            ])),
        ],
    }
}

/// FAST bytes of `msgs`, then each message as FIX text.
fn to_fix(msgs: &[Message], opts: &FixOptions) -> Vec<String> {
    let ts = templates();
    let mut enc = Encoder::new(ts.clone());
    let mut fast = Vec::new();
    for m in msgs {
        enc.encode(m, &mut fast).unwrap();
    }
    let mut dec = Decoder::new(ts.clone());
    let mut w = FixWriter::new(&ts, opts);
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < fast.len() {
        pos += dec.decode(&fast[pos..], &mut w).unwrap();
        let text = w.finish().unwrap().unwrap();
        out.push(String::from_utf8(text.to_vec()).unwrap());
    }
    out
}

fn pipe() -> FixOptions {
    FixOptions {
        sep: b'|',
        ..FixOptions::default()
    }
}

#[test]
fn writes_header_body_counts_and_trailer() {
    let text = &to_fix(&[incr()], &pipe())[0];
    let body = "35=X|34=12|268=3|279=1|270=9427.55|271=-5|279=0|270=33800|279=0|271=7|";
    let expect = format!("8=FIXT.1.1|9={}|{body}", body.len());
    assert!(text.starts_with(&expect), "{text}");
    // The checksum is that of the SOH form.
    let soh = text.replace('|', "\u{1}");
    let sum: u32 = soh.as_bytes()[..soh.len() - 7]
        .iter()
        .map(|&b| b as u32)
        .sum();
    assert!(text.ends_with(&format!("10={:03}|", sum % 256)), "{text}");
    // Read back, with either separator, it is the same message.
    let r = FixReader::new(templates(), &pipe());
    let (m, used) = r.read(text.as_bytes()).unwrap();
    assert_eq!((m, used), (incr(), text.len()));
    let (m, _) = r.read(soh.as_bytes()).unwrap();
    assert_eq!(m, incr());
}

#[test]
fn begin_string_is_configurable() {
    let opts = FixOptions {
        begin_string: "FIX.4.4".into(),
        ..pipe()
    };
    assert!(to_fix(&[incr()], &opts)[0].starts_with("8=FIX.4.4|9="));
}

#[test]
fn templates_without_msg_type_get_a_user_one_or_the_mapped_one() {
    let m = Message {
        template_id: 9,
        fields: vec![
            Some(Value::UInt(5)),
            Some(Value::Group(vec![Some(Value::Ascii("b".into()))])),
        ],
    };
    let text = &to_fix(std::slice::from_ref(&m), &pipe())[0];
    assert!(text.contains("|35=U9|100=5|101=b|"), "{text}");
    let mapped = FixOptions {
        msg_types: vec![(9, "U42".into())],
        ..pipe()
    };
    let text = &to_fix(std::slice::from_ref(&m), &mapped)[0];
    assert!(text.contains("|35=U42|100=5|101=b|"), "{text}");
    let back = FixReader::new(templates(), &mapped).read(text.as_bytes());
    assert_eq!(back.unwrap().0, m);
    // An absent optional group is left out and reads back absent.
    let bare = Message {
        template_id: 9,
        fields: vec![Some(Value::UInt(5)), None],
    };
    let text = &to_fix(std::slice::from_ref(&bare), &pipe())[0];
    let back = FixReader::new(templates(), &pipe()).read(text.as_bytes());
    assert_eq!(back.unwrap().0, bare);
}

#[test]
fn a_field_without_an_id_is_an_error_naming_it_or_is_skipped_and_counted() {
    let ts = templates();
    let m = Message {
        template_id: 11,
        fields: vec![Some(Value::Ascii("Y".into())), Some(Value::UInt(3))],
    };
    let mut fast = Vec::new();
    Encoder::new(ts.clone()).encode(&m, &mut fast).unwrap();
    let mut w = FixWriter::new(&ts, &FixOptions::default());
    Decoder::new(ts.clone()).decode(&fast, &mut w).unwrap();
    let e = w.finish().unwrap_err();
    assert!(
        matches!(&e, FixError::Untagged { field, template } if field == "NoTag" && template == "Untagged"),
        "{e}"
    );
    assert_eq!(w.counts().refused, 1);
    let skip = FixOptions {
        skip_untagged: true,
        ..pipe()
    };
    let mut w = FixWriter::new(&ts, &skip);
    Decoder::new(ts.clone()).decode(&fast, &mut w).unwrap();
    let text = String::from_utf8(w.finish().unwrap().unwrap().to_vec()).unwrap();
    assert!(text.starts_with("8=FIXT.1.1|9=5|35=Y|10="), "{text}");
    assert_eq!(w.counts().skipped_fields, 1);
}

#[test]
fn prices_are_exact_and_read_back() {
    for (e, m, s) in [
        (-2, 942755, "9427.55"),
        (-3, 50, "0.050"),
        (-1, -5, "-0.5"),
        (2, 338, "33800"),
        (0, 0, "0"),
        (0, -7, "-7"),
        (-4, 12000, "1.2000"),
    ] {
        let mut out = Vec::new();
        put_decimal(&mut out, Decimal::new(e, m));
        assert_eq!(std::str::from_utf8(&out).unwrap(), s);
        // Without an exponent hint, whole numbers take the shortest mantissa.
        let back = parse_price(s.as_bytes(), None).unwrap();
        assert_eq!(back, Decimal::new(e, m), "{s}");
    }
    // An exponent of zero in the template keeps whole numbers whole.
    assert_eq!(parse_price(b"30", Some(0)), Some(Decimal::new(0, 30)));
    assert_eq!(parse_price(b"300", Some(2)), Some(Decimal::new(2, 3)));
    assert_eq!(parse_price(b"310", Some(2)), Some(Decimal::new(0, 310)));
    for bad in ["", "-", "1e3", "1.2.3", "+1", ".5", "9223372036854775808"] {
        assert_eq!(parse_price(bad.as_bytes(), None), None, "{bad}");
    }
}

fn read_err(text: &str) -> FixError {
    FixReader::new(templates(), &pipe())
        .read(text.as_bytes())
        .unwrap_err()
}

/// `text` with BodyLength and CheckSum made right.
fn framed(body: &str) -> String {
    let head = format!("8=FIXT.1.1|9={}|{body}", body.len());
    let sum: u32 = head
        .bytes()
        .map(|b| if b == b'|' { 1 } else { b as u32 })
        .sum();
    format!("{head}10={:03}|", sum % 256)
}

#[test]
fn bad_input_gives_typed_errors() {
    let good = framed("35=X|34=1|268=1|279=1|");
    assert!(FixReader::new(templates(), &pipe())
        .read(good.as_bytes())
        .is_ok());
    // A wrong checksum.
    let bad_sum = good.replace(&good[good.len() - 4..], "000|");
    assert!(matches!(read_err(&bad_sum), FixError::CheckSum { declared, .. } if declared == "000"));
    // A MsgType no template has.
    let e = read_err(&framed("35=Q|34=1|"));
    assert!(
        matches!(&e, FixError::UnknownMsgType { msg_type, at: 16 } if msg_type == "Q"),
        "{e}"
    );
    // Truncated anywhere: never a panic, always an error.
    for cut in 0..good.len() {
        let e = read_err(&good[..cut]);
        assert!(
            matches!(
                e,
                FixError::Truncated { .. } | FixError::NoBodyLength { .. }
            ),
            "cut at {cut}: {e}"
        );
    }
    // A wrong BodyLength.
    let long = good.replacen("9=22|", "9=19|", 1);
    assert!(
        matches!(
            read_err(&long),
            FixError::BodyLength {
                declared: 19,
                actual: 22,
                ..
            }
        ),
        "{}",
        read_err(&long)
    );
    assert!(matches!(
        read_err("garbage"),
        FixError::NoBeginString { at: 0 }
    ));
    // Body errors, with the position of the field.
    let e = read_err(&framed("35=X|34=x|268=0|"));
    assert!(
        matches!(
            &e,
            FixError::BadValue {
                tag: 34,
                at: 21,
                ..
            }
        ),
        "{e}"
    );
    let e = read_err(&framed("35=X|268=0|"));
    assert!(
        matches!(&e, FixError::Missing { field, .. } if field == "MsgSeqNum"),
        "{e}"
    );
    let e = read_err(&framed("35=X|34=1|268=2|279=1|"));
    assert!(
        matches!(
            &e,
            FixError::Count {
                declared: 2,
                found: 1,
                ..
            }
        ),
        "{e}"
    );
    let e = read_err(&framed("35=X|34=1|268=0|999=1|"));
    assert!(
        matches!(&e, FixError::UnexpectedTag { tag: 999, .. }),
        "{e}"
    );
    let e = read_err(&framed("34=1|"));
    assert!(matches!(&e, FixError::NoMsgType { .. }), "{e}");
    let e = read_err(&framed("35=X|34=1|268=4000000000|"));
    assert!(matches!(&e, FixError::Count { .. }), "{e}");
    let e = read_err(&framed("35=X|x=1|"));
    assert!(matches!(&e, FixError::BadField { .. }), "{e}");
}

#[test]
fn damaged_messages_never_panic() {
    let good = framed("35=X|34=1|58=hi|268=2|279=1|270=1.5|271=-2|279=0|");
    let r = FixReader::new(templates(), &pipe());
    let mut rng = 0x9e3779b97f4a7c15u64;
    for _ in 0..20_000 {
        let mut b = good.clone().into_bytes();
        for _ in 0..1 + (rng % 3) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let at = (rng % b.len() as u64) as usize;
            b[at] = b"0123456789=|X-.\x01"[(rng >> 40) as usize % 16];
        }
        let _ = r.read(&b);
    }
}

#[test]
fn out_of_order_top_level_fields_are_taken() {
    let text = framed("35=X|268=0|34=3|");
    let (m, _) = FixReader::new(templates(), &pipe())
        .read(text.as_bytes())
        .unwrap();
    assert_eq!(m.fields[1], Some(Value::UInt(3)));
}

#[test]
fn values_holding_the_separator_cannot_be_written() {
    let mut m = incr();
    m.fields[2] = Some(Value::Ascii("a|b".into()));
    let ts = templates();
    let mut fast = Vec::new();
    Encoder::new(ts.clone()).encode(&m, &mut fast).unwrap();
    let mut w = FixWriter::new(&ts, &pipe());
    Decoder::new(ts.clone()).decode(&fast, &mut w).unwrap();
    assert!(matches!(
        w.finish(),
        Err(FixError::SeparatorInValue { field, .. }) if field == "Text"
    ));
}
