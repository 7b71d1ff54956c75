//! What a template file with errors, shared names or odd ids still gives (spec §4: a static
//! error discards the template where it occurred, not the others).

use std::sync::Arc;

use fastfeed_codec::template::{check, LookupError};
use fastfeed_codec::{parse_templates, Decoder, ErrorKind, SpecCode, Templates, Value};

const NS: &str = "http://www.fixprotocol.org/ns/fast/td/1.1";

fn doc(body: &str) -> String {
    format!(r#"<templates xmlns="{NS}">{body}</templates>"#)
}

fn ids(ts: &Templates) -> Vec<u32> {
    ts.iter().filter(|t| !t.session).map(|t| t.id).collect()
}

/// Decodes one message of `bytes`: its template id and first field.
fn first_field(ts: &Arc<Templates>, bytes: &[u8]) -> (u32, Option<Value>) {
    let (m, _) = Decoder::new(ts.clone()).decode_message(bytes).unwrap();
    (m.template_id, m.fields.into_iter().next().flatten())
}

#[test]
fn templates_may_share_a_name_and_decode_by_id() {
    // Shanghai's Level-2 file names two pairs of its templates alike, with other ids.
    let xml = doc(r#"
        <template name="Trade" id="1"><uInt32 name="Price"/></template>
        <template name="Trade" id="2"><uInt32 name="Qty"/></template>
        <template name="Quote" id="3"><uInt32 name="Bid"/></template>"#);
    let checked = check(&xml);
    assert!(checked.errors.is_empty(), "{:?}", checked.errors);
    assert_eq!(checked.notes.len(), 1, "{:?}", checked.notes);
    assert!(
        checked.notes[0].why.contains("\"Trade\""),
        "{:?}",
        checked.notes
    );
    assert_eq!(checked.notes[0].line, 3);
    let ts = Arc::new(checked.templates);
    assert_eq!(ids(&ts), [1, 2, 3]);
    // pmap (stop bit, template id bit), template id, the field.
    assert_eq!(
        first_field(&ts, &[0xc0, 0x81, 0x85]),
        (1, Some(Value::UInt(5)))
    );
    assert_eq!(
        first_field(&ts, &[0xc0, 0x82, 0x86]),
        (2, Some(Value::UInt(6)))
    );

    assert!(ts.by_name("Trade").is_none());
    assert_eq!(ts.by_name("Quote").map(|t| t.id), Some(3));
    assert_eq!(
        ts.lookup("Trade").unwrap_err(),
        LookupError::Shared {
            name: "Trade".into(),
            ids: vec![1, 2]
        }
    );
    assert_eq!(ts.lookup(" 2 ").map(|t| t.name.as_str()), Ok("Trade"));
    assert_eq!(ts.lookup("Quote").map(|t| t.id), Ok(3));
    assert_eq!(ts.lookup("9").unwrap_err(), LookupError::NoId(9));
    assert_eq!(
        ts.lookup("Nope").unwrap_err(),
        LookupError::NoName("Nope".into())
    );
    let unique: Vec<String> = ts
        .iter()
        .filter(|t| !t.session)
        .map(|t| ts.unique_name(t).into_owned())
        .collect();
    assert_eq!(unique, ["Trade-1", "Trade-2", "Quote"]);
}

#[test]
fn same_named_templates_keep_their_own_template_dictionaries() {
    let xml = doc(r#"
        <template name="T" id="1" dictionary="template"><uInt32 name="X"><copy/></uInt32></template>
        <template name="T" id="2" dictionary="template"><uInt32 name="X"><copy/></uInt32></template>"#);
    let ts = Arc::new(check(&xml).templates);
    let mut d = Decoder::new(ts);
    // Template 1 sets its X to 5 (pmap: template id and X present).
    let (m, _) = d.decode_message(&[0xe0, 0x81, 0x85]).unwrap();
    assert_eq!(m.fields[0], Some(Value::UInt(5)));
    // Template 2's X is absent from its pmap: its own entry is undefined, with no initial
    // value, so a mandatory field has none (D5); a shared entry would have given 5.
    let e = d.decode_message(&[0xc0, 0x82]).unwrap_err();
    assert_eq!(e.code(), Some(SpecCode::D5), "{e}");
}

#[test]
fn a_static_reference_to_a_shared_name_is_an_error_of_its_own_template() {
    let xml = doc(r#"
        <template name="Header"><uInt32 name="Seq"/></template>
        <template name="Header"><uInt64 name="Time"/></template>
        <template name="Msg" id="1"><templateRef name="Header"/><uInt32 name="A"/></template>
        <template name="Other" id="2"><uInt32 name="B"/></template>"#);
    let checked = check(&xml);
    assert_eq!(checked.errors.len(), 1, "{:?}", checked.errors);
    let e = &checked.errors[0];
    assert_eq!((e.code, e.line), (SpecCode::S1, 4), "{e}");
    assert!(e.message.contains("lines 2, 3"), "{e}");
    assert_eq!(ids(&checked.templates), [2]);
    assert_eq!(checked.discarded.len(), 1);
    assert_eq!(checked.discarded[0].name, "Msg");
    assert_eq!(checked.discarded[0].id, Some(1));
}

#[test]
fn a_static_error_discards_its_template_and_those_that_refer_to_it() {
    let xml = doc(r#"
        <template name="A" id="1"><uInt32 name="a"/></template>
        <template name="B" id="2"><uInt32 name="b"><constant/></uInt32></template>
        <template name="C" id="3"><templateRef name="B"/></template>
        <template name="D" id="4"><string name="d"><increment/></string></template>
        <template name="E" id="5"><uInt32 name="e"><copy/></uInt32></template>"#);
    let checked = check(&xml);
    let codes: Vec<(SpecCode, u32)> = checked.errors.iter().map(|e| (e.code, e.line)).collect();
    // B's error once (where B is and where C uses it, the same element), D's operator.
    assert_eq!(
        codes,
        [(SpecCode::S4, 3), (SpecCode::S2, 5)],
        "{:?}",
        checked.errors
    );
    assert_eq!(ids(&checked.templates), [1, 5]);
    let lost: Vec<Option<u32>> = checked.discarded.iter().map(|d| d.id).collect();
    assert_eq!(lost, [Some(2), Some(3), Some(4)]);
    // The strict entry point still refuses the file, with the first error.
    assert_eq!(parse_templates(&xml).unwrap_err().code, SpecCode::S4);
    // What is left decodes as it would alone.
    let ts = Arc::new(checked.templates);
    assert_eq!(
        first_field(&ts, &[0xe0, 0x85, 0x87]),
        (5, Some(Value::UInt(7)))
    );
    let e = Decoder::new(ts).decode_message(&[0xc0, 0x82]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnknownTemplate(2), "{e}");
}

#[test]
fn templates_without_a_usable_id_are_checked_too() {
    // Never referred to, so never compiled for a message: their errors are still said.
    let xml = doc(r#"
        <template name="Head"><u32 name="x"/></template>
        <template name="Tail"><uInt32 name="y"><copy value="abc"/></uInt32></template>
        <template name="Msg" id="1"><uInt32 name="a"/></template>"#);
    let checked = check(&xml);
    let codes: Vec<(SpecCode, u32)> = checked.errors.iter().map(|e| (e.code, e.line)).collect();
    assert_eq!(
        codes,
        [(SpecCode::S1, 2), (SpecCode::S3, 3)],
        "{:?}",
        checked.errors
    );
    assert_eq!(ids(&checked.templates), [1]);
    assert!(checked.discarded.is_empty());

    // A sound one leaves no dictionary entry behind when it is not used.
    let alone = doc(r#"<template name="Msg" id="1"><uInt32 name="a"><copy/></uInt32></template>"#);
    let with_unused = doc(r#"
        <template name="Head"><uInt32 name="h"><copy/></uInt32><uInt64 name="t"><delta/></uInt64></template>
        <template name="Msg" id="1"><uInt32 name="a"><copy/></uInt32></template>"#);
    let (a, b) = (check(&alone), check(&with_unused));
    assert!(a.errors.is_empty() && b.errors.is_empty(), "{:?}", b.errors);
    assert_eq!(
        a.templates.dictionary_slots(),
        b.templates.dictionary_slots()
    );

    // An id that is not a number is a template without an id (the schema's id is any
    // token): a note, and a static reference still reaches it.
    let token = doc(r#"
        <template name="Quote" id="S"><uInt32 name="q"/></template>
        <template name="Trade" id="2"><templateRef name="Quote"/><uInt32 name="b"/></template>"#);
    let checked = check(&token);
    assert!(checked.errors.is_empty(), "{:?}", checked.errors);
    assert!(
        checked
            .notes
            .iter()
            .any(|n| n.line == 2 && n.why.contains("\"S\"")),
        "{:?}",
        checked.notes
    );
    let ts = Arc::new(checked.templates);
    assert_eq!(ids(&ts), [2]);
    assert_eq!(
        first_field(&ts, &[0xc0, 0x82, 0x83, 0x84]),
        (2, Some(Value::UInt(3)))
    );
}
