//! The FAST 1.1 specification's Appendix 3 examples, as restated in
//! `shared/spec/appendix3-vectors.md`, checked both ways: the bytes decode to the value, and the
//! value encodes to bytes that decode back to it (exactly the spec's bytes where they are the
//! shortest form).

mod common;

use std::sync::Arc;

use common::hex;
use fastfeed_codec::{
    parse_templates, Decimal, DecodeOptions, Decoder, Encoder, ErrorKind, Message, SpecCode,
    Templates, Value,
};

const NS: &str = "http://www.fixprotocol.org/ns/fast/td/1.1";

fn u(v: u64) -> Option<Value> {
    Some(Value::UInt(v))
}
fn i(v: i64) -> Option<Value> {
    Some(Value::Int(v))
}
fn d(exponent: i32, mantissa: i64) -> Option<Value> {
    Some(Value::Decimal(Decimal::new(exponent, mantissa)))
}
fn s(v: &str) -> Option<Value> {
    Some(Value::Ascii(v.to_owned()))
}
fn b(v: &[u8]) -> Option<Value> {
    Some(Value::Bytes(v.to_vec()))
}

/// A template set with one template, id 1, holding `field`.
fn single(field: &str) -> Arc<Templates> {
    parse_templates(&format!(
        r#"<templates xmlns="{NS}"><template name="T" id="1">{field}</template></templates>"#
    ))
    .unwrap()
}

/// The §"Conventions" framing: pmap (with the field's bit in bit 1 if it uses one), TID 1,
/// then the field's bytes.
fn wrap(bit: Option<bool>, field: &str) -> Vec<u8> {
    let mut out = vec![if bit == Some(true) { 0xE0 } else { 0xC0 }, 0x81];
    out.extend(hex(field));
    out
}

/// Checks one stream of messages of template `tid`, each with a single field: decoding the
/// concatenated `wire` gives `values`, message by message and every byte used; encoding the
/// values gives bytes that decode back to them, and when `canonical` exactly `wire`.
fn stream(ts: &Arc<Templates>, tid: u32, steps: &[(Option<Value>, Vec<u8>)], canonical: bool) {
    let msgs: Vec<Message> = steps
        .iter()
        .map(|(v, _)| Message {
            template_id: tid,
            fields: vec![v.clone()],
        })
        .collect();
    let mut dec = Decoder::new(ts.clone());
    for (k, ((_, bytes), want)) in steps.iter().zip(&msgs).enumerate() {
        let (got, used) = dec
            .decode_message(bytes)
            .unwrap_or_else(|e| panic!("tid {tid} message {k} {bytes:02X?}: {e}"));
        assert_eq!(&got, want, "tid {tid} message {k} {bytes:02X?}");
        assert_eq!(used, bytes.len(), "tid {tid} message {k}: bytes used");
    }
    let mut enc = Encoder::new(ts.clone());
    let mut dec = Decoder::new(ts.clone());
    for (k, ((_, bytes), m)) in steps.iter().zip(&msgs).enumerate() {
        let mut out = Vec::new();
        enc.encode(m, &mut out)
            .unwrap_or_else(|e| panic!("tid {tid} encode {k}: {e}"));
        if canonical {
            assert_eq!(out, *bytes, "tid {tid} message {k}: encoder output");
        }
        let (back, used) = dec.decode_message(&out).unwrap();
        assert_eq!(&back, m, "tid {tid} message {k}: re-decoded");
        assert_eq!(used, out.len());
    }
}

/// One single-field vector of §1 in the §"Conventions" framing, canonical.
fn vector(field_xml: &str, value: Option<Value>, bit: Option<bool>, field_hex: &str) {
    stream(
        &single(field_xml),
        1,
        &[(value, wrap(bit, field_hex))],
        true,
    );
}

#[test]
fn signed_integers_3_1() {
    let opt = r#"<int32 id="1" name="Value" presence="optional"/>"#;
    let mand = r#"<int32 id="1" name="Value"/>"#;
    vector(opt, i(942755), None, "39 45 A4");
    vector(mand, i(942755), None, "39 45 A3");
    vector(opt, i(-942755), None, "46 3A DD");
    vector(mand, i(-7942755), None, "7C 1B 1B 9D");
    vector(mand, i(8193), None, "00 40 81");
    // Erratum: the spec prints 73 3F FF; its binary row is 7F 3F FF.
    vector(mand, i(-8193), None, "7F 3F FF");
    let mut dec = Decoder::new(single(mand));
    let (m, _) = dec.decode_message(&wrap(None, "73 3F FF")).unwrap();
    assert_eq!(m.fields[0], i(-204801), "the printed erratum bytes");
}

#[test]
fn unsigned_integers_3_1() {
    let opt = r#"<uInt32 id="1" name="Value" presence="optional"/>"#;
    let mand = r#"<uInt32 id="1" name="Value"/>"#;
    vector(opt, None, None, "80");
    vector(opt, u(0), None, "81");
    vector(opt, u(1), None, "82");
    vector(opt, u(942755), None, "39 45 A4");
    vector(mand, u(0), None, "80");
    vector(mand, u(1), None, "81");
    vector(mand, u(942755), None, "39 45 A3");
}

#[test]
fn ascii_strings_3_1() {
    let opt = r#"<string id="1" name="Value" presence="optional"/>"#;
    let mand = r#"<string id="1" name="Value"/>"#;
    vector(opt, None, None, "80");
    vector(opt, s("ABC"), None, "41 42 C3");
    vector(opt, s(""), None, "00 80");
    vector(mand, s("ABC"), None, "41 42 C3");
    vector(mand, s(""), None, "80");
}

/// The zero-preamble table of spec §10.6.3.
#[test]
fn ascii_zero_preambles_10_6_3() {
    let opt = r#"<string id="1" name="Value" presence="optional"/>"#;
    let mand = r#"<string id="1" name="Value"/>"#;
    vector(mand, s("\0"), None, "00 80");
    vector(opt, s("\0"), None, "00 00 80");
    // A string that starts with NUL keeps its preamble: "\0A" is not the overlong "A".
    vector(mand, s("\0A"), None, "00 00 C1");
    vector(opt, s("\0A"), None, "00 00 00 C1");
    vector(mand, s("\0\0"), None, "00 00 80");
    // Overlong forms: "A" with a redundant preamble. Accepted by default, R9 when strict.
    for (xml, field) in [(mand, "00 C1"), (opt, "00 C1"), (opt, "00 00 C1")] {
        let ts = single(xml);
        let bytes = wrap(None, field);
        let (m, n) = Decoder::new(ts.clone()).decode_message(&bytes).unwrap();
        assert_eq!((m.fields[0].clone(), n), (s("A"), bytes.len()), "{field}");
        let strict = DecodeOptions {
            strict: true,
            ..Default::default()
        };
        let e = Decoder::with_options(ts, strict)
            .decode_message(&bytes)
            .unwrap_err();
        assert_eq!(e.code(), Some(SpecCode::R9), "{field}: {e}");
    }
}

#[test]
fn byte_vectors_3_1() {
    let opt = r#"<byteVector id="1" name="Value" presence="optional"/>"#;
    let mand = r#"<byteVector id="1" name="Value"/>"#;
    vector(opt, None, None, "80");
    vector(opt, b(b"ABC"), None, "84 41 42 43");
    vector(opt, b(b""), None, "81");
    vector(mand, b(b"ABC"), None, "83 41 42 43");
    vector(mand, b(b""), None, "80");
}

#[test]
fn decimals_3_1() {
    let mand = r#"<decimal id="1" name="Value"/>"#;
    let opt = r#"<decimal id="1" name="Value" presence="optional"/>"#;
    vector(mand, d(2, 942755), None, "82 39 45 A3");
    // Not normalised: the same number with another scale keeps its scale.
    vector(mand, d(1, 9427550), None, "81 04 3F 34 DE");
    vector(opt, d(2, 942755), None, "83 39 45 A3");
    vector(mand, d(-2, 942755), None, "FE 39 45 A3");
    vector(opt, d(-2, -942755), None, "FE 46 3A DD");
    let copy = r#"<decimal id="1" name="Value" presence="optional"><copy/></decimal>"#;
    vector(copy, d(-2, 942755), Some(true), "FE 39 45 A3");
    let split = r#"<decimal id="1" name="Value" presence="optional">
        <exponent><copy/></exponent><mantissa><delta/></mantissa></decimal>"#;
    vector(split, d(-2, 942755), Some(true), "FE 39 45 A3");
    // Erratum: the spec prints 73 3F FF for the mantissa of -8.193.
    vector(opt, d(-3, -8193), None, "FD 7F 3F FF");
}

/// The templates of §4 (rs-fastlib's spec.xml ids), plus ids 5-8 for §2.1-2.2.
fn spec_templates() -> Arc<Templates> {
    let t = |id: u32, body: &str| format!(r#"<template name="T{id}" id="{id}">{body}</template>"#);
    let xml = [
        t(1, r#"<decimal name="Value"/>"#),
        t(2, r#"<decimal name="Value" presence="optional"/>"#),
        t(3, r#"<decimal name="Value" presence="optional"><copy/></decimal>"#),
        t(
            4,
            r#"<decimal name="Value" presence="optional"><exponent><copy/></exponent><mantissa><delta/></mantissa></decimal>"#,
        ),
        t(5, r#"<uInt32 name="Flag"><constant value="0"/></uInt32>"#),
        t(6, r#"<uInt32 name="Flag" presence="optional"><constant value="0"/></uInt32>"#),
        t(7, r#"<uInt32 name="Flag"><default value="0"/></uInt32>"#),
        t(8, r#"<uInt32 name="Flag" presence="optional"><default/></uInt32>"#),
        t(9, r#"<string name="Flag"><copy/></string>"#),
        t(10, r#"<string name="Flag" presence="optional"><copy/></string>"#),
        t(11, r#"<uInt32 name="Flag"><increment value="1"/></uInt32>"#),
        t(12, r#"<int32 name="Price"><delta/></int32>"#),
        t(13, r#"<decimal name="Price"><delta/></decimal>"#),
        t(14, r#"<decimal name="Price"><delta value="12000"/></decimal>"#),
        t(15, r#"<string name="Security"><delta/></string>"#),
        t(
            16,
            r#"<decimal name="Value" presence="optional"><exponent><copy/></exponent><mantissa><copy/></mantissa></decimal>"#,
        ),
    ]
    .concat();
    parse_templates(&format!(
        r#"<templates xmlns="{NS}" dictionary="template">{xml}</templates>"#
    ))
    .unwrap()
}

fn steps(list: &[(Option<Value>, &str)]) -> Vec<(Option<Value>, Vec<u8>)> {
    list.iter().map(|(v, h)| (v.clone(), hex(h))).collect()
}

#[test]
fn whole_message_decimals_4() {
    let ts = spec_templates();
    let one = [
        (d(2, 942755), "C0 81 82 39 45 A3"),
        (d(1, 9427550), "C0 81 81 04 3F 34 DE"),
        (d(-2, 942755), "C0 81 FE 39 45 A3"),
    ];
    // Each of these starts with a TID, so each is a stream of its own.
    for step in one {
        stream(&ts, 1, &steps(&[step]), true);
    }
    for step in [
        (d(2, 942755), "C0 82 83 39 45 A3"),
        (d(-2, -942755), "C0 82 FE 46 3A DD"),
        (d(-3, -8193), "C0 82 FD 7F 3F FF"),
    ] {
        stream(&ts, 2, &steps(&[step]), true);
    }
    stream(
        &ts,
        3,
        &steps(&[(d(-2, 942755), "E0 83 FE 39 45 A3")]),
        true,
    );
    stream(
        &ts,
        4,
        &steps(&[(d(-2, 942755), "E0 84 FE 39 45 A3")]),
        true,
    );
}

#[test]
fn constant_3_2_1() {
    let ts = spec_templates();
    stream(&ts, 5, &steps(&[(u(0), "C0 85"), (u(0), "80")]), true);
    stream(
        &ts,
        6,
        &steps(&[(u(0), "E0 86"), (None, "80"), (u(0), "A0")]),
        true,
    );
    // Encoding anything but the constant, or nothing for a mandatory constant, is an error.
    for v in [u(99), None] {
        let m = Message {
            template_id: 5,
            fields: vec![v.clone()],
        };
        let mut out = Vec::new();
        let e = Encoder::new(ts.clone()).encode(&m, &mut out).unwrap_err();
        assert!(out.is_empty());
        assert!(
            matches!(
                e.kind,
                ErrorKind::ConstantMismatch | ErrorKind::NoValueGiven
            ),
            "{v:?}: {e}"
        );
    }
}

#[test]
fn default_3_2_2() {
    let ts = spec_templates();
    stream(
        &ts,
        7,
        &steps(&[(u(0), "C0 87"), (u(1), "A0 81"), (u(0), "80")]),
        true,
    );
    stream(
        &ts,
        8,
        &steps(&[(None, "C0 88"), (u(5), "A0 86"), (None, "80")]),
        true,
    );
}

#[test]
fn copy_3_2_3() {
    let ts = spec_templates();
    stream(
        &ts,
        9,
        &steps(&[
            (s("CME"), "E0 89 43 4D C5"),
            (s("CME"), "80"),
            (s("ISE"), "A0 49 53 C5"),
        ]),
        true,
    );
    // rs-fastlib's sequence for the optional field: the shortest form throughout.
    stream(
        &ts,
        10,
        &steps(&[
            (None, "C0 8A"),
            (s("CME"), "A0 43 4D C5"),
            (None, "A0 80"),
            (s("CME"), "A0 43 4D C5"),
        ]),
        true,
    );
    // The spec's own form sends a NULL the decoder could have inferred: valid, one byte
    // longer. A decoder accepts it; the encoder sends the shorter form.
    let spec_form = steps(&[(None, "E0 8A 80"), (None, "80"), (s("CME"), "A0 43 4D C5")]);
    stream(&ts, 10, &spec_form, false);
    let msgs: Vec<Message> = spec_form
        .iter()
        .map(|(v, _)| Message {
            template_id: 10,
            fields: vec![v.clone()],
        })
        .collect();
    assert_eq!(common::encode_all(&ts, &msgs), hex("C0 8A 80 A0 43 4D C5"));
}

#[test]
fn increment_3_2_4() {
    let ts = spec_templates();
    let list = [(u(1), "C0 8B"), (u(2), "80"), (u(4), "A0 84"), (u(5), "80")];
    stream(&ts, 11, &steps(&list), true);
}

#[test]
fn delta_3_2_5() {
    let ts = spec_templates();
    let ints = [
        (i(942755), "C0 8C 39 45 A3"),
        (i(942750), "80 FB"),
        (i(942745), "80 FB"),
        (i(942745), "80 80"),
    ];
    stream(&ts, 12, &steps(&ints), true);
    let decimals = [
        (d(-2, 942755), "C0 8D FE 39 45 A3"),
        (d(-2, 942751), "80 80 FC"),
        (d(-2, 942746), "80 80 FB"),
    ];
    stream(&ts, 13, &steps(&decimals), true);
    // The initial value 12000 is normalised to (3, 12).
    let init = [
        (d(1, 1210), "C0 8E FE 09 AE"),
        (d(1, 1215), "80 80 85"),
        (d(1, 1220), "80 80 85"),
    ];
    stream(&ts, 14, &steps(&init), true);
    // Strings, including the "negative zero" -1 that prepends without removing.
    let strings = [
        (s("GEH6"), "C0 8F 80 47 45 48 B6"),
        (s("GEM6"), "80 82 4D B6"),
        (s("ESM6"), "80 FD 45 D3"),
        (s("RSESM6"), "80 FF 52 D3"),
    ];
    stream(&ts, 15, &steps(&strings), true);
}

#[test]
fn several_pmap_slots_3_2_6() {
    let ts = spec_templates();
    // Erratum: the spec prints the first mantissa as 39 45 A4 (that is 9427.56).
    let spec_values = [
        (d(-2, 942755), "F0 90 FE 39 45 A3"),
        (d(-2, 942760), "90 39 45 A8"),
        (None, "A0 80"),
    ];
    stream(&ts, 16, &steps(&spec_values), true);
    let rs_fastlib = [
        (d(-2, 942755), "F0 90 FE 39 45 A3"),
        (d(-2, 942761), "90 39 45 A9"),
        (None, "A0 80"),
    ];
    stream(&ts, 16, &steps(&rs_fastlib), true);
    let (m, _) = Decoder::new(ts)
        .decode_message(&hex("F0 90 FE 39 45 A4"))
        .unwrap();
    assert_eq!(m.fields[0], d(-2, 942756), "the printed erratum bytes");
}

#[test]
fn pmap_bit_rules_3_3_1() {
    use fastfeed_codec::template::Kind;
    // (operator, mandatory uses a bit, optional uses a bit)
    let table = [
        ("", false, false),
        (r#"<constant value="1"/>"#, false, true),
        (r#"<copy value="1"/>"#, true, true),
        (r#"<default value="1"/>"#, true, true),
        (r#"<increment value="1"/>"#, true, true),
        ("<delta/>", false, false),
    ];
    for (op, mand, opt) in table {
        for (presence, want) in [("mandatory", mand), ("optional", opt)] {
            let ts = single(&format!(
                r#"<uInt32 name="V" presence="{presence}">{op}</uInt32>"#
            ));
            let t = ts.get(1).unwrap();
            let Kind::Scalar(sc) = &t.body.instrs[0].kind else {
                panic!("scalar")
            };
            assert_eq!(sc.uses_bit(), want, "{op} {presence}");
        }
    }
    for presence in ["mandatory", "optional"] {
        let ts = single(&format!(
            r#"<string name="V" presence="{presence}"><tail value="a"/></string>"#
        ));
        assert!(
            ts.get(1).unwrap().body.instrs[0].uses_bit(),
            "tail {presence}"
        );
    }
}

#[test]
fn stop_bit_edge_cases_3() {
    let i64f = r#"<int64 name="V"/>"#;
    let i32f = r#"<int32 name="V"/>"#;
    vector(i64f, i(64), None, "00 C0");
    vector(i64f, i(-64), None, "C0");
    vector(i64f, i(-1), None, "FF");
    vector(i32f, i(i32::MIN as i64), None, "78 00 00 00 80");
    vector(i32f, i(i32::MAX as i64), None, "07 7F 7F 7F FF");
    vector(i64f, i(i64::MAX), None, "00 7F 7F 7F 7F 7F 7F 7F 7F FF");
    vector(i64f, i(i64::MIN), None, "7F 00 00 00 00 00 00 00 00 80");
    vector(
        r#"<uInt32 name="V"/>"#,
        u(u32::MAX as u64),
        None,
        "0F 7F 7F 7F FF",
    );
    vector(
        r#"<uInt64 name="V"/>"#,
        u(u64::MAX),
        None,
        "01 7F 7F 7F 7F 7F 7F 7F 7F FF",
    );
    let nullable = r#"<int32 name="V" presence="optional"/>"#;
    vector(nullable, i(-1), None, "FF");
    vector(nullable, None, None, "80");
    // Spec §10.6.1's note: nullable uInt32 max is 4294967296 on the wire.
    let nu32 = r#"<uInt32 name="V" presence="optional"/>"#;
    vector(nu32, u(u32::MAX as u64), None, "10 00 00 00 80");
}
