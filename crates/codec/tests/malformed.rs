//! Bad input gets typed errors with the spec's codes, never a panic or a runaway allocation.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use common::hex;
use fastfeed_codec::{
    parse_templates, DecodeOptions, Decoder, ErrorKind, MessageBuilder, SpecCode, Templates,
};

/// Counts the bytes each thread allocates, so a test can bound what one decode allocates.
struct Counting;

thread_local! {
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator unchanged; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATED.try_with(|a| a.set(a.get() + layout.size()));
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocated() -> usize {
    ALLOCATED.with(|a| a.get())
}

const NS: &str = "http://www.fixprotocol.org/ns/fast/td/1.1";

fn templates(body: &str) -> Arc<Templates> {
    parse_templates(&format!(r#"<templates xmlns="{NS}">{body}</templates>"#)).unwrap()
}

fn strict() -> DecodeOptions {
    DecodeOptions {
        strict: true,
        ..Default::default()
    }
}

fn decode_err(ts: &Arc<Templates>, opts: DecodeOptions, bytes: &str) -> fastfeed_codec::CodecError {
    Decoder::with_options(ts.clone(), opts)
        .decode_message(&hex(bytes))
        .expect_err(bytes)
}

/// Every proper prefix of every message of a stream is `Truncated`. `setup` brings a fresh
/// decoder to the dictionary state the message starts from.
fn prefixes_truncate(
    ts: &Arc<Templates>,
    messages: &[&[u8]],
    setup: &dyn Fn(&mut Decoder, usize),
) -> usize {
    let mut checked = 0;
    for (k, msg) in messages.iter().enumerate() {
        for cut in 0..msg.len() {
            let mut dec = Decoder::new(ts.clone());
            setup(&mut dec, k);
            let e = dec
                .decode_message(&msg[..cut])
                .expect_err("a prefix is not a message");
            assert_eq!(
                e.kind,
                ErrorKind::Truncated,
                "message {k} cut at {cut}: {e}"
            );
            checked += 1;
        }
    }
    checked
}

/// Splits a stream into its messages' byte ranges.
fn split<'a>(ts: &Arc<Templates>, mut bytes: &'a [u8], max: usize) -> Vec<&'a [u8]> {
    let mut dec = Decoder::new(ts.clone());
    let mut out = Vec::new();
    while !bytes.is_empty() && out.len() < max {
        let (_, n) = dec.decode_message(bytes).unwrap();
        out.push(&bytes[..n]);
        bytes = &bytes[n..];
    }
    out
}

#[test]
fn every_prefix_of_the_fpl_sample_is_truncated() {
    let ts = parse_templates(&common::shared_text(
        "corpus/openfast-fpl/FASTTestTemplate.xml",
    ))
    .unwrap();
    let bytes = common::shared_bytes("corpus/openfast-fpl/messages.fast");
    let msgs = split(&ts, &bytes, usize::MAX);
    let replay = msgs.clone();
    let n = prefixes_truncate(&ts, &msgs, &|dec, k| {
        for m in &replay[..k] {
            dec.decode_message(m).unwrap();
        }
    });
    assert_eq!(n, 119);
}

#[test]
fn every_prefix_of_moex_messages_is_truncated() {
    let ts = parse_templates(&common::shared_text("corpus/moex-forts-2013/templates.xml")).unwrap();
    for file in ["increment_a.dat", "snapshot.dat"] {
        let bytes = common::shared_bytes(&format!("corpus/moex-forts-2013/{file}"));
        // Every packet is a Reset (C0 F8) and one message: the message starts from reset
        // dictionaries, whatever came before.
        let msgs: Vec<&[u8]> = split(&ts, &bytes, 400)
            .into_iter()
            .filter(|m| *m != [0xC0, 0xF8])
            .collect();
        assert!(msgs.len() >= 150, "{file}");
        let n = prefixes_truncate(&ts, &msgs, &|dec, _| {
            dec.decode_message(&[0xC0, 0xF8]).unwrap();
        });
        assert!(n > 1000, "{file}: {n}");
    }
}

#[test]
fn every_prefix_of_mfast_messages_is_truncated() {
    let ts = parse_templates(&common::shared_text("corpus/mfast-complex/example.xml")).unwrap();
    let data = common::shared_bytes("corpus/mfast-complex/complex30000.dat");
    let mut msgs = Vec::new();
    let mut at = 0;
    while msgs.len() < 40 {
        let len = u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        msgs.push(&data[at + 4..at + 4 + len]);
        at += 4 + len;
    }
    let replay = msgs.clone();
    prefixes_truncate(&ts, &msgs, &|dec, k| {
        for m in &replay[..k] {
            dec.decode_message(m).unwrap();
        }
    });
}

#[test]
fn overlong_integers_and_pmaps_are_reportable() {
    let ts =
        templates(r#"<template name="T" id="1"><uInt32 name="A"/><int32 name="B"/></template>"#);
    for (bytes, code, value) in [
        ("C0 81 00 81 81", SpecCode::R6, (1, 1)), // overlong unsigned
        ("C0 81 81 00 81", SpecCode::R6, (1, 1)), // overlong signed
        ("C0 81 81 7F FF", SpecCode::R6, (1, -1)), // overlong negative
        ("C0 00 81 81 81", SpecCode::R6, (1, 1)), // overlong template id
        ("40 80 81 81 81", SpecCode::R7, (1, 1)), // overlong presence map
        ("E0 81 81 81", SpecCode::R8, (1, 1)),    // a pmap bit no field uses
    ] {
        let (m, n) = Decoder::new(ts.clone())
            .decode_message(&hex(bytes))
            .unwrap();
        assert_eq!(n, hex(bytes).len(), "{bytes}");
        assert_eq!(
            m.fields,
            [
                Some(fastfeed_codec::Value::UInt(value.0)),
                Some(fastfeed_codec::Value::Int(value.1))
            ],
            "{bytes}"
        );
        let e = decode_err(&ts, strict(), bytes);
        assert_eq!(e.code(), Some(code), "{bytes}: {e}");
    }
    // Not overlong: 64 needs its leading zero byte, -65 its 0x7F.
    let ok = "C0 81 81 00 C0";
    Decoder::with_options(ts.clone(), strict())
        .decode_message(&hex(ok))
        .unwrap();
    let ok = "C0 81 81 7F BF";
    Decoder::with_options(ts, strict())
        .decode_message(&hex(ok))
        .unwrap();
}

#[test]
fn integers_that_do_not_fit_are_d2() {
    let ts = templates(
        r#"<template name="T" id="1"><uInt32 name="A"/></template>
           <template name="U" id="2"><uInt64 name="A"/></template>
           <template name="S" id="3"><int32 name="A" presence="optional"/></template>"#,
    );
    for bytes in [
        "C0 81 10 00 00 00 80",                   // 2^32 in a uInt32
        "C0 82 02 00 00 00 00 00 00 00 00 80",    // 2^64 in a uInt64
        "C0 82 7F 7F 7F 7F 7F 7F 7F 7F 7F 7F FF", // 77 bits
        "C0 83 08 00 00 00 81",                   // 2^31 (nullable) in an int32
    ] {
        let e = decode_err(&ts, DecodeOptions::default(), bytes);
        assert_eq!(e.code(), Some(SpecCode::D2), "{bytes}: {e}");
    }
}

#[test]
fn huge_sequence_lengths_fail_without_allocating() {
    let ts = templates(
        r#"<template name="T" id="1">
             <sequence name="S"><uInt32 name="A"><copy/></uInt32></sequence></template>
           <template name="P" id="2">
             <sequence name="S"><uInt32 name="A"/></sequence></template>"#,
    );
    let before = allocated();
    // 2^32 - 1 elements: over the limit.
    let e = decode_err(&ts, DecodeOptions::default(), "C0 81 0F 7F 7F 7F FF 80 80");
    assert_eq!(e.kind, ErrorKind::SequenceTooLong(u32::MAX as u64));
    // 60,000 elements of at least a byte each, in a 6-byte packet: cut short.
    let e = decode_err(&ts, DecodeOptions::default(), "C0 81 03 53 E0 80");
    assert_eq!(e.kind, ErrorKind::Truncated);
    // Elements without a presence map: the decoder runs out of input.
    let mut b = MessageBuilder::new();
    let e = Decoder::new(ts.clone())
        .decode(&hex("C0 82 03 53 E0 81 82"), &mut b)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Truncated);
    let used = allocated() - before;
    assert!(used < 256 << 10, "allocated {used} bytes");
}

#[test]
fn unknown_template_ids_are_d9() {
    let ts = templates(r#"<template name="T" id="1"><uInt32 name="A"/></template>"#);
    let e = decode_err(&ts, DecodeOptions::default(), "C0 82 81");
    assert_eq!(
        (e.kind.clone(), e.code()),
        (ErrorKind::UnknownTemplate(2), Some(SpecCode::D9))
    );
    // No template id in the first message of a stream, and none to copy: the template
    // identifier is a copy field (spec §10.3), so that is D5, not D9.
    let e = decode_err(&ts, DecodeOptions::default(), "80 81");
    assert_eq!(e.code(), Some(SpecCode::D5));
}

#[test]
fn invalid_utf8_is_r2() {
    let ts = templates(
        r#"<template name="T" id="1"><string name="A" charset="unicode"/></template>
           <template name="D" id="2"><string name="A" charset="unicode"><delta/></string></template>"#,
    );
    let e = decode_err(&ts, DecodeOptions::default(), "C0 81 82 C3 28");
    assert_eq!(e.code(), Some(SpecCode::R2), "{e}");
    assert_eq!(e.field.as_deref(), Some("A"));
    // A delta may split a UTF-8 sequence; the combined value must be whole. "é" is C3 A9.
    let mut dec = Decoder::new(ts.clone());
    let e = dec.decode_message(&hex("C0 82 80 81 C3")).unwrap_err();
    assert_eq!(e.code(), Some(SpecCode::R2), "{e}");
}

#[test]
fn decimal_exponents_out_of_range_are_r1() {
    let ts = templates(
        r#"<template name="T" id="1"><decimal name="A"/></template>
           <template name="D" id="2"><decimal name="A"><delta/></decimal></template>
           <template name="S" id="3"><decimal name="A"><exponent/><mantissa/></decimal></template>"#,
    );
    for bytes in [
        "C0 81 00 C0 81", // 64
        "C0 81 7F BF 81", // -65
        "C0 82 00 C0 81", // delta 0 + 64
        "C0 83 00 C0 81", // separate exponent 64
    ] {
        let e = decode_err(&ts, DecodeOptions::default(), bytes);
        assert_eq!(e.code(), Some(SpecCode::R1), "{bytes}: {e}");
    }
    // 63 and -63 are in range.
    for bytes in ["C0 81 BF 81", "C0 81 C1 81"] {
        Decoder::new(ts.clone())
            .decode_message(&hex(bytes))
            .unwrap();
    }
}

#[test]
fn dynamic_template_refs_nest_only_so_deep() {
    let ts = templates(
        r#"<template name="Nest" id="1"><uInt32 name="A"/><templateRef/></template>
           <template name="Leaf" id="2"><uInt32 name="A"/></template>"#,
    );
    let nested = |depth: usize| {
        let mut b = Vec::new();
        for _ in 0..depth {
            b.extend([0xC0, 0x81, 0x81]);
        }
        b.extend([0xC0, 0x82, 0x81]);
        b
    };
    let ok = nested(10);
    assert_eq!(
        Decoder::new(ts.clone()).decode_message(&ok).unwrap().1,
        ok.len()
    );
    let e = Decoder::new(ts.clone())
        .decode_message(&nested(1000))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::TooDeep(16));
    let opts = DecodeOptions {
        max_depth: 4,
        ..Default::default()
    };
    let e = Decoder::with_options(ts, opts)
        .decode_message(&nested(10))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::TooDeep(4));
}

/// A templates document whose one template holds `xml`.
fn in_template(xml: &str) -> String {
    format!(r#"<templates xmlns="{NS}"><template name="A" id="1">{xml}</template></templates>"#)
}

fn template_err(xml: &str) -> fastfeed_codec::TemplateError {
    parse_templates(xml).expect_err(xml)
}

#[test]
fn bad_template_xml_is_rejected() {
    let cycle = format!(
        r#"<templates xmlns="{NS}">
             <template name="A" id="1"><templateRef name="B"/></template>
             <template name="B" id="2"><uInt32 name="x"/><templateRef name="A"/></template>
           </templates>"#
    );
    let e = template_err(&cycle);
    assert!(e.message.contains("cycle"), "{e}");
    let self_ref = format!(
        r#"<templates xmlns="{NS}"><template name="A" id="1"><templateRef name="A"/></template></templates>"#
    );
    template_err(&self_ref);

    let unknown = format!(
        r#"<templates xmlns="{NS}"><template name="A" id="1"><uInt33 name="x"/></template></templates>"#
    );
    let e = template_err(&unknown);
    assert_eq!(e.code, SpecCode::S1, "{e}");
    assert_eq!(e.line, 1);

    let unknown_op = format!(
        r#"<templates xmlns="{NS}"><template name="A" id="1"><uInt32 name="x"><copyy/></uInt32></template></templates>"#
    );
    assert_eq!(template_err(&unknown_op).code, SpecCode::S1);

    let dup = format!(
        r#"<templates xmlns="{NS}">
             <template name="A" id="7"><uInt32 name="x"/></template>
             <template name="B" id="7"><uInt32 name="y"/></template></templates>"#
    );
    let e = template_err(&dup);
    assert!(e.message.contains('7'), "{e}");
    assert_eq!(e.line, 3);

    // S2: an operator on a type it does not apply to. S4/S5: missing initial values.
    for (xml, code) in [
        (r#"<string name="x"><increment/></string>"#, SpecCode::S2),
        (r#"<uInt32 name="x"><tail/></uInt32>"#, SpecCode::S2),
        (r#"<uInt32 name="x"><constant/></uInt32>"#, SpecCode::S4),
        (r#"<uInt32 name="x"><default/></uInt32>"#, SpecCode::S5),
    ] {
        let doc = in_template(xml);
        assert_eq!(template_err(&doc).code, code, "{xml}");
    }

    // S1: what the schema allows once, or in one place, given twice or elsewhere. Each used
    // to be taken (the first operator, the first length wherever it stood) without a word.
    for (xml, says) in [
        (
            r#"<uInt32 name="x"><copy/><delta/></uInt32>"#,
            "second operator <delta>",
        ),
        (
            r#"<string name="x" charset="unicode"><length name="n"/><copy/><tail/></string>"#,
            "second operator <tail>",
        ),
        (
            r#"<decimal name="x"><exponent><copy/></exponent><copy/></decimal>"#,
            "<copy> beside",
        ),
        (
            r#"<decimal name="x"><mantissa/><mantissa><delta/></mantissa></decimal>"#,
            "second <mantissa>",
        ),
        (
            r#"<decimal name="x"><exponent><copy/><default/></exponent></decimal>"#,
            "\"x.exponent\" has a second operator",
        ),
        (
            r#"<sequence name="s"><uInt32 name="a"/><length name="n"/></sequence>"#,
            "after <uInt32>",
        ),
        (
            r#"<sequence name="s"><length name="n"/><length name="m"/></sequence>"#,
            "second <length>",
        ),
        (
            r#"<sequence name="s"><length name="n"><copy/><increment/></length></sequence>"#,
            "second operator <increment>",
        ),
        (
            r#"<group name="g"><length name="n"/><uInt32 name="a"/></group>"#,
            "<length> belongs",
        ),
        (
            r#"<group name="g"><typeRef name="A"/><typeRef name="B"/></group>"#,
            "<typeRef> comes once",
        ),
        (
            r#"<uInt32 name="a"/><typeRef name="A"/>"#,
            "<typeRef> comes once",
        ),
        (
            r#"<uInt32 name="x"><copy><delta/></copy></uInt32>"#,
            "operators take attributes only",
        ),
    ] {
        let doc = in_template(xml);
        let e = template_err(&doc);
        assert_eq!(e.code, SpecCode::S1, "{xml}: {e}");
        assert!(e.message.contains(says), "{xml}: {e}");
    }
    // What the schema does allow: a typeRef before the length or the fields, an operator for
    // each decimal part.
    for xml in [
        r#"<typeRef name="T"/><group name="g"><typeRef name="G"/><uInt32 name="a"/></group>"#,
        r#"<sequence name="s"><typeRef name="T"/><length name="n"><copy/></length><uInt32 name="a"/></sequence>"#,
        r#"<decimal name="x"><exponent><copy/></exponent><mantissa><delta/></mantissa></decimal>"#,
        r#"<byteVector name="b"><length name="l"/><tail/></byteVector>"#,
    ] {
        let doc = in_template(xml);
        parse_templates(&doc).unwrap_or_else(|e| panic!("{xml}: {e}"));
    }

    // A document type declaration is allowed (validating tools write one), but not entities
    // that expand without bound: ten levels of ten, 10^10 "lol"s.
    let mut laughs = String::from(r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY a0 "lol">"#);
    for i in 1..10 {
        let p = i - 1;
        laughs += &format!("<!ENTITY a{i} \"{}\">", format!("&a{p};").repeat(10));
    }
    laughs += &format!(
        r#"]><templates xmlns="{NS}"><template name="&a9;" id="1"><uInt32 name="x"/></template></templates>"#
    );
    let e = template_err(&laughs);
    assert_eq!(e.code, SpecCode::S1, "{e}");
    assert!(template_err("<templates").message.contains("XML"));
}
