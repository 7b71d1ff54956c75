//! Spec rules a corpus never exercises, found by an independent differential check (issue
//! 13): each test is named after the rule it guards and checks the decoder on the spec's
//! bytes and, where it applies, the encoder's output for the same messages.

mod common;

use std::sync::Arc;

use common::hex;
use fastfeed_codec::{
    parse_templates, Decimal, Decoder, Encoder, ErrorKind, Message, SpecCode, Templates, Value,
};

const NS: &str = "http://www.fixprotocol.org/ns/fast/td/1.1";

fn templates(body: &str) -> Arc<Templates> {
    parse_templates(&format!(r#"<templates xmlns="{NS}">{body}</templates>"#))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn msg(template_id: u32, fields: Vec<Option<Value>>) -> Message {
    Message {
        template_id,
        fields,
    }
}

fn u(v: u64) -> Option<Value> {
    Some(Value::UInt(v))
}

fn i(v: i64) -> Option<Value> {
    Some(Value::Int(v))
}

fn d(exponent: i32, mantissa: i64) -> Option<Value> {
    Some(Value::Decimal(Decimal::new(exponent, mantissa)))
}

/// Decodes `bytes` as one stream: every message, every byte.
fn decode(ts: &Arc<Templates>, bytes: &[u8]) -> Vec<Message> {
    common::decode_all(&mut Decoder::new(ts.clone()), bytes)
}

/// The stream's messages decode from `bytes`, and encode to exactly `bytes`.
fn both_ways(ts: &Arc<Templates>, bytes: &str, msgs: &[Message]) {
    let bytes = hex(bytes);
    assert_eq!(decode(ts, &bytes), msgs, "decoded");
    assert_eq!(common::encode_all(ts, msgs), bytes, "encoded");
}

// 1. Deltas wider than int64 (spec §6.3.7.1 note, §6.3.7.2, §10.6.1, §10.7.1).

#[test]
fn integer_delta_wider_than_int64_reaches_uint64_max() {
    let ts =
        templates(r#"<template name="T" id="1"><uInt64 name="A"><delta/></uInt64></template>"#);
    both_ways(
        &ts,
        "C0 81 01 7F 7F 7F 7F 7F 7F 7F 7F FF",
        &[msg(1, vec![u(u64::MAX)])],
    );
}

#[test]
fn integer_delta_wider_than_int64_goes_from_int64_max_to_min() {
    let ts = templates(r#"<template name="T" id="1"><int64 name="A"><delta/></int64></template>"#);
    // i64::MAX from the base 0, then the delta -(2^64 - 1): ten bytes, 0x7E on top.
    both_ways(
        &ts,
        "C0 81 00 7F 7F 7F 7F 7F 7F 7F 7F FF  80 7E 00 00 00 00 00 00 00 00 81",
        &[msg(1, vec![i(i64::MAX)]), msg(1, vec![i(i64::MIN)])],
    );
}

#[test]
fn nullable_integer_delta_of_two_to_the_63() {
    let ts = templates(
        r#"<template name="T" id="1"><uInt64 name="A" presence="optional"><delta/></uInt64></template>"#,
    );
    // The delta 2^63 is 2^63 + 1 on the wire (nullable), then a NULL delta.
    both_ways(
        &ts,
        "C0 81 01 00 00 00 00 00 00 00 00 81  80 80",
        &[msg(1, vec![u(1 << 63)]), msg(1, vec![None])],
    );
}

#[test]
fn decimal_mantissa_delta_wider_than_int64() {
    let ts =
        templates(r#"<template name="T" id="1"><decimal name="A"><delta/></decimal></template>"#);
    // Mantissa i64::MIN from the base 0, then the mantissa delta 2^64 - 1.
    both_ways(
        &ts,
        "C0 81 80 7F 00 00 00 00 00 00 00 00 80  80 80 01 7F 7F 7F 7F 7F 7F 7F 7F FF",
        &[msg(1, vec![d(0, i64::MIN)]), msg(1, vec![d(0, i64::MAX)])],
    );
}

#[test]
fn split_decimal_mantissa_delta_wider_than_int64() {
    let ts = templates(
        r#"<template name="T" id="1"><decimal name="A" presence="optional">
             <exponent><default value="-2"/></exponent><mantissa><delta/></mantissa>
           </decimal></template>"#,
    );
    both_ways(
        &ts,
        "C0 81 7F 00 00 00 00 00 00 00 00 80  80 01 7F 7F 7F 7F 7F 7F 7F 7F FF",
        &[msg(1, vec![d(-2, i64::MIN)]), msg(1, vec![d(-2, i64::MAX)])],
    );
}

#[test]
fn delta_result_out_of_range_is_still_r4() {
    let ts =
        templates(r#"<template name="T" id="1"><uInt32 name="A"><delta/></uInt32></template>"#);
    let mut dec = Decoder::new(ts.clone());
    let e = dec
        .decode_message(&hex("C0 81 01 7F 7F 7F 7F 7F 7F 7F 7F FF"))
        .unwrap_err();
    assert_eq!(
        (e.kind.clone(), e.code()),
        (ErrorKind::DeltaOverflow, Some(SpecCode::R4))
    );
    // A delta beyond any integer the decoder holds: out of range too, never a panic.
    let mut bytes = hex("C0 81");
    bytes.extend([0x01; 30]);
    bytes.push(0xFF);
    let e = Decoder::new(ts).decode_message(&bytes).unwrap_err();
    assert_eq!(e.code(), Some(SpecCode::R4), "{e}");
}

// 2. A static reference's fields take their dictionary from their own XML ancestry
// (spec §6.3.1, §6.4): `templateRef` has no dictionary attribute.

const STATIC_REF: &str = r#"
  <template name="A" id="1" dictionary="template"><templateRef name="B"/></template>
  <template name="B" id="2"><uInt32 name="X"><OP/></uInt32></template>"#;

#[test]
fn static_reference_keeps_the_referred_templates_dictionary() {
    let ts = templates(&STATIC_REF.replace("<OP/>", "<copy/>"));
    both_ways(
        &ts,
        "E0 82 85 C0 81",
        &[msg(2, vec![u(5)]), msg(1, vec![u(5)])],
    );
    let ts = templates(&STATIC_REF.replace("<OP/>", "<delta/>"));
    both_ways(
        &ts,
        "C0 82 85 C0 81 82",
        &[msg(2, vec![u(5)]), msg(1, vec![u(7)])],
    );
}

// 3. A decimal's individual operators are keyed by generated names unique to the decimal
// (spec §6.2.2), never by the decimal's own name.

#[test]
fn split_decimal_keys_never_collide_with_a_field_of_its_name() {
    let ts = templates(
        r#"<template name="A" id="1"><int32 name="P"><copy/></int32></template>
           <template name="B" id="2"><decimal name="P">
             <exponent><copy value="-2"/></exponent><mantissa><copy/></mantissa>
           </decimal></template>"#,
    );
    both_ways(
        &ts,
        "E0 81 87 D0 82 85",
        &[msg(1, vec![i(7)]), msg(2, vec![d(-2, 5)])],
    );
}

// 4. A sequence's implicit length name never collides with an explicit field name (§6.2.5).

#[test]
fn implicit_sequence_length_name_never_collides() {
    let ts = templates(
        r#"<template name="A" id="1"><uInt32 name="S.length"><copy/></uInt32></template>
           <template name="B" id="2"><sequence name="S"><length><copy value="0"/></length>
             <uInt32 name="E"/></sequence></template>"#,
    );
    both_ways(
        &ts,
        "E0 81 82 C0 82",
        &[
            msg(1, vec![u(2)]),
            msg(2, vec![Some(Value::Sequence(vec![]))]),
        ],
    );
}

// 5. An operator reading an entry whose value has another type is a dynamic error D4 (§6.3.1).

const TYPED: &str = r#"
  <template name="A" id="1"><uInt32 name="X"><copy/></uInt32></template>
  <template name="B" id="2"><int32 name="X"><copy value="9"/></int32></template>"#;

#[test]
fn entry_of_another_type_is_d4() {
    let ts = templates(TYPED);
    let mut dec = Decoder::new(ts.clone());
    dec.decode_message(&hex("E0 81 85")).unwrap();
    let e = dec.decode_message(&hex("C0 82")).unwrap_err();
    assert_eq!(
        (e.kind.clone(), e.code()),
        (ErrorKind::TypeMismatch, Some(SpecCode::D4))
    );
    assert_eq!(e.field.as_deref(), Some("X"));
    // A value in the stream replaces the entry without reading it: no error, and the
    // entry now holds an int32 that B can copy.
    let mut dec = Decoder::new(ts.clone());
    let got = common::decode_all(&mut dec, &hex("E0 81 85 E0 82 89 80"));
    assert_eq!(
        got,
        [msg(1, vec![u(5)]), msg(2, vec![i(9)]), msg(2, vec![i(9)])]
    );
    // The encoder never leaves out a value the decoder would have to read as another type.
    both_ways(
        &ts,
        "E0 81 85 E0 82 89 80",
        &[msg(1, vec![u(5)]), msg(2, vec![i(9)]), msg(2, vec![i(9)])],
    );
    // Where the decoder must read the entry (a delta's base), the encoder says D4 too.
    let ts = templates(
        r#"<template name="A" id="1"><uInt32 name="X"><copy/></uInt32></template>
           <template name="B" id="2"><int32 name="X"><delta/></int32></template>"#,
    );
    let mut enc = Encoder::new(ts.clone());
    let mut out = Vec::new();
    enc.encode(&msg(1, vec![u(5)]), &mut out).unwrap();
    let e = enc.encode(&msg(2, vec![i(1)]), &mut out).unwrap_err();
    assert_eq!(e.code(), Some(SpecCode::D4));
    let mut dec = Decoder::new(ts);
    dec.decode_message(&hex("E0 81 85")).unwrap();
    let e = dec.decode_message(&hex("C0 82 81")).unwrap_err();
    assert_eq!(e.code(), Some(SpecCode::D4));
}

#[test]
fn entries_of_one_type_shared_by_two_templates_stay_shared() {
    let ts = templates(
        r#"<template name="A" id="1"><uInt32 name="X"><copy/></uInt32></template>
           <template name="B" id="2"><uInt32 name="X"><increment/></uInt32></template>"#,
    );
    both_ways(
        &ts,
        "E0 81 85 C0 82",
        &[msg(1, vec![u(5)]), msg(2, vec![u(6)])],
    );
}

// 6. Template names are namespace-qualified (spec §7): `templateNs`.

#[test]
fn template_names_are_qualified_by_template_ns() {
    let ts = templates(
        r#"<template name="T" templateNs="urn:a" id="1" dictionary="template">
             <uInt32 name="X"><copy/></uInt32></template>
           <template name="T" templateNs="urn:b" id="2" dictionary="template">
             <uInt32 name="X"><copy value="3"/></uInt32><string name="Y"/></template>
           <template name="C" id="3" templateNs="urn:b"><templateRef name="T"/></template>
           <template name="D" id="4"><templateRef name="T" templateNs="urn:a"/></template>"#,
    );
    assert_eq!(ts.iter().filter(|t| !t.session).count(), 4);
    // C refers to urn:b's T (the nearest templateNs); D to urn:a's.
    assert_eq!(ts.get(3).unwrap().body.instrs.len(), 2);
    assert_eq!(ts.get(4).unwrap().body.instrs.len(), 1);
    // Each T has its own template dictionary: X of urn:b starts at its initial value.
    let got = decode(&ts, &hex("E0 81 85 C0 82 C1"));
    assert_eq!(
        got,
        [
            msg(1, vec![u(5)]),
            msg(2, vec![u(3), Some(Value::Ascii("A".into()))])
        ]
    );
    // The same qualified name twice: both templates decode by their ids (names are not a
    // message's key), but a static reference to that name cannot be told apart.
    let twice = format!(
        r#"<templates xmlns="{NS}" templateNs="urn:a"><template name="T" id="1"/>
             <template name="T" id="2"/></templates>"#
    );
    assert_eq!(parse_templates(&twice).unwrap().get(2).unwrap().name, "T");
    let e = parse_templates(&format!(
        r#"<templates xmlns="{NS}" templateNs="urn:a"><template name="T" id="1"/>
             <template name="T" id="2"/><template name="R" id="3"><templateRef name="T"/>
             </template></templates>"#
    ))
    .unwrap_err();
    assert_eq!(e.code, SpecCode::S1);
}

// 7. The specification's own example (§4) declares FAST 1.0's template namespace.

#[test]
fn the_fast_1_0_namespace_of_the_specs_example_is_read() {
    // The example as printed, with straight quotes and an id to decode it by.
    let xml = r#"<templates xmlns="http://www.fixprotocol.org/ns/template-definition"
            templateNs="http://www.fixprotocol.org/ns/templates/sample"
            ns="http://www.fixprotocol.org/ns/fix">
          <template name="MDRefreshSample" id="1">
            <typeRef name="MarketDataIncrementalRefresh"/>
            <string name="BeginString" id="8"> <constant value="FIX4.4"/> </string>
            <string name="MessageType" id="35"> <constant value="X"/> </string>
            <string name="SenderCompID" id="49"> <copy/> </string>
            <uInt32 name="MsgSeqNum" id="34"> <increment/> </uInt32>
            <sequence name="MDEntries">
              <length name="NoMDEntries" id="268"/>
              <uInt32 name="MDUpdateAction" id="279"> <copy/> </uInt32>
              <decimal name="MDEntryPx" id="270"> <delta/> </decimal>
            </sequence>
          </template>
          <x:note xmlns:x="urn:example:other"/>
        </templates>"#;
    let ts = parse_templates(xml).unwrap_or_else(|e| panic!("{e}"));
    let t = ts
        .by_name("MDRefreshSample")
        .expect("the example's template");
    assert_eq!((t.id, t.body.instrs.len()), (1, 5));
    // Template id 1, SenderCompID "A", MsgSeqNum 7, one entry: action 0, price 12 * 10^-1.
    let got = decode(&ts, &hex("F0 81 C1 87 81 C0 80 FF 8C"));
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].fields[2], Some(Value::Ascii("A".into())));
    assert_eq!(got[0].fields[3], u(7));
}

/// FAST 1.1's URI as exchanges' files spell it (another case; the Shanghai Stock Exchange's
/// "FIXprotocal") is read as FAST's; another namespace's elements are still left out.
#[test]
fn variant_spellings_of_the_fast_namespace_are_read() {
    for ns in [
        "http://www.FIXprotocal.org/ns/FAST/td/1.1",
        "http://www.fixprotocol.org/ns/FAST/td/1.1",
    ] {
        let xml = format!(
            r#"<templates xmlns="{ns}"><template name="T" id="1"><uInt32 name="A"/></template>
               <x:template xmlns:x="urn:example:other/ns/fast/td/1.0" name="X" id="2"/></templates>"#
        );
        let ts = parse_templates(&xml).unwrap_or_else(|e| panic!("{ns}: {e}"));
        assert_eq!(ts.by_name("T").map(|t| t.id), Some(1), "{ns}");
        assert!(ts.by_name("X").is_none(), "{ns}");
        assert_eq!(decode(&ts, &hex("C0 81 85"))[0].fields[0], u(5));
    }
}

/// A document type declaration, as validating tools write, is read past (entity bombs are
/// refused: `malformed.rs`).
#[test]
fn a_doctype_is_read_past() {
    let xml = format!(
        r#"<?xml version="1.0"?>
        <!DOCTYPE templates SYSTEM "fast.dtd" [ <!ENTITY one "1"> ]>
        <templates xmlns="{NS}"><template name="T" id="&one;"><uInt32 name="A"/></template></templates>"#
    );
    let ts = parse_templates(&xml).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ts.by_name("T").map(|t| t.id), Some(1));
}

// Minor points.

#[test]
fn first_message_without_template_id_is_d5() {
    // The template identifier is a copy field (spec §10.3): undefined, no initial value.
    let ts = templates(r#"<template name="T" id="1"><uInt32 name="A"/></template>"#);
    let e = Decoder::new(ts).decode_message(&hex("80 85")).unwrap_err();
    assert_eq!(
        (e.kind.clone(), e.code()),
        (ErrorKind::NoTemplateId, Some(SpecCode::D5))
    );
}

#[test]
fn initial_values_that_do_not_convert_are_s3() {
    for field in [
        r#"<uInt32 name="A"><copy value="-1"/></uInt32>"#,
        r#"<uInt32 name="A"><copy value="4294967296"/></uInt32>"#,
        r#"<int32 name="A"><default value="+5"/></int32>"#,
        r#"<int64 name="A"><constant value="9223372036854775808"/></int64>"#,
        r#"<string name="A"><constant value="é"/></string>"#,
        r#"<decimal name="A"><default value="1e3"/></decimal>"#,
        r#"<decimal name="A"><default value="1."/></decimal>"#,
        r#"<decimal name="A"><default value="."/></decimal>"#,
        r#"<decimal name="A"><default value="1.5.2"/></decimal>"#,
        r#"<decimal name="A"><default value="99999999999999999999"/></decimal>"#,
        r#"<decimal name="A"><default value="9223372036854775808"/></decimal>"#,
        r#"<decimal name="A"><default value="10000000000000000000000000000000000000000000000000000000000000000"/></decimal>"#,
        r#"<decimal name="A"><default value="0.0000000000000000000000000000000000000000000000000000000000000001"/></decimal>"#,
        r#"<byteVector name="A"><default value="0g"/></byteVector>"#,
    ] {
        let e = parse_templates(&format!(
            r#"<templates xmlns="{NS}"><template name="T" id="1">{field}</template></templates>"#
        ))
        .unwrap_err();
        assert_eq!(e.code, SpecCode::S3, "{field}: {e}");
    }
    // What 8.1.1 and 8.1.2 allow, whitespace trimmed.
    for (value, want) in [
        (" 1.5\t", Decimal::new(-1, 15)),
        (".1", Decimal::new(-1, 1)),
        ("-0.1", Decimal::new(-1, -1)),
        ("12000", Decimal::new(3, 12)),
        ("-0", Decimal::new(0, 0)),
        ("0.000", Decimal::new(0, 0)),
        // Normalized before the range is judged (6.3.2): trailing zeros go to the exponent.
        (
            "9223372036854775807000000000000000000000000000000000000000000000",
            Decimal::new(45, i64::MAX),
        ),
        ("-1000000000000000000000", Decimal::new(21, -1)),
        ("1.0000000000000000000000", Decimal::new(0, 1)),
        ("00120.0500", Decimal::new(-2, 12005)),
        ("-9223372036854775808", Decimal::new(0, i64::MIN)),
    ] {
        let ts = templates(&format!(
            r#"<template name="T" id="1"><decimal name="A"><default value="{value}"/></decimal></template>"#
        ));
        let (m, _) = Decoder::new(ts)
            .decode_message(&hex("C0 81"))
            .unwrap_or_else(|e| {
                panic!("{value:?}: {e}");
            });
        assert_eq!(m.fields[0], Some(Value::Decimal(want)), "{value:?}");
    }
}
