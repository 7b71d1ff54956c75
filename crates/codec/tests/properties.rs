//! Property tests: arbitrary bytes never panic the decoder, and arbitrary values of a
//! template that uses every field type and operator survive encode -> decode -> encode.

mod common;

use std::sync::Arc;

use fastfeed_codec::template::{FieldType, Initial, Instr, IntType, Kind, Op, Scalar};
use fastfeed_codec::{
    parse_templates, Decimal, DecodeOptions, Decoder, Encoder, Message, MessageBuilder, Templates,
    Value,
};
use proptest::prelude::*;

const NS: &str = "http://www.fixprotocol.org/ns/fast/td/1.1";

/// Every field type, presence and operator, sequences, groups and a dynamic reference.
const ALL: &str = r#"
<template name="Inner" id="2"><uInt32 name="X"><copy/></uInt32><string name="Y" presence="optional"/></template>
<template name="All" id="1">
  <uInt32 name="U32"/> <uInt32 name="U32o" presence="optional"/>
  <int32 name="I32"/> <int32 name="I32o" presence="optional"/>
  <uInt64 name="U64"/> <uInt64 name="U64o" presence="optional"/>
  <int64 name="I64"/> <int64 name="I64o" presence="optional"/>
  <uInt32 name="UConst"><constant value="7"/></uInt32>
  <int64 name="IConstO" presence="optional"><constant value="-7"/></int64>
  <uInt32 name="UDef"><default value="3"/></uInt32>
  <int32 name="IDefO" presence="optional"><default/></int32>
  <uInt64 name="UCopy"><copy/></uInt64>
  <int32 name="ICopyO" presence="optional"><copy value="5"/></int32>
  <uInt32 name="UInc"><increment value="1"/></uInt32>
  <int64 name="IIncO" presence="optional"><increment/></int64>
  <int32 name="IDelta"><delta/></int32>
  <uInt32 name="UDeltaO" presence="optional"><delta value="100"/></uInt32>
  <int64 name="I64Delta"><delta/></int64>
  <uInt64 name="U64DeltaO" presence="optional"><delta/></uInt64>
  <decimal name="D"/> <decimal name="Do" presence="optional"/>
  <decimal name="DConst"><constant value="1.25"/></decimal>
  <decimal name="DDefO" presence="optional"><default value="100"/></decimal>
  <decimal name="DCopy"><copy/></decimal>
  <decimal name="DDeltaO" presence="optional"><delta value="12000"/></decimal>
  <decimal name="DSplit"><exponent><copy value="-2"/></exponent><mantissa><delta/></mantissa></decimal>
  <decimal name="DSplitO" presence="optional"><exponent><default value="-3"/></exponent><mantissa><increment/></mantissa></decimal>
  <string name="S"/> <string name="So" presence="optional"/>
  <string name="SConst"><constant value="FIX"/></string>
  <string name="SDefO" presence="optional"><default value="abc"/></string>
  <string name="SCopy"><copy/></string> <string name="SCopyO" presence="optional"><copy/></string>
  <string name="SDelta"><delta/></string>
  <string name="SDeltaO" presence="optional"><delta value="base"/></string>
  <string name="STail"><tail value="abcd"/></string>
  <string name="STailO" presence="optional"><tail/></string>
  <string name="Uni" charset="unicode"/>
  <string name="UniCopyO" charset="unicode" presence="optional"><copy/></string>
  <string name="UniDelta" charset="unicode"><delta/></string>
  <string name="UniTailO" charset="unicode" presence="optional"><tail value="wxyz"/></string>
  <byteVector name="B"/> <byteVector name="BO" presence="optional"/>
  <byteVector name="BCopy"><copy/></byteVector>
  <byteVector name="BDeltaO" presence="optional"><delta/></byteVector>
  <byteVector name="BTail"><tail/></byteVector>
  <byteVector name="BDefO" presence="optional"><default value="0a0b"/></byteVector>
  <sequence name="Seq"><length name="SeqLen"><copy/></length>
    <uInt32 name="E1"><increment/></uInt32>
    <string name="E2" presence="optional"><copy/></string>
    <decimal name="E3"/>
  </sequence>
  <sequence name="SeqO" presence="optional"><int32 name="F1"/></sequence>
  <group name="G" presence="optional">
    <uInt32 name="G1"><copy/></uInt32>
    <group name="GG"><string name="G2"/></group>
  </group>
  <group name="H"><int32 name="H1"/></group>
  <templateRef/>
</template>"#;

fn all_templates() -> Arc<Templates> {
    parse_templates(&format!(r#"<templates xmlns="{NS}">{ALL}</templates>"#)).unwrap()
}

fn int_value(it: IntType, v: i128) -> Value {
    if it.signed() {
        Value::Int(v as i64)
    } else {
        Value::UInt(v as u64)
    }
}

fn initial_value(sc: &Scalar) -> Value {
    match (&sc.initial, sc.ty) {
        (Some(Initial::Int(v)), FieldType::Int(it)) if it.signed() => Value::Int(*v as i64),
        (Some(Initial::Int(v)), _) => Value::UInt(*v),
        (Some(Initial::Decimal { exponent, mantissa }), _) => {
            Value::Decimal(Decimal::new(*exponent, *mantissa))
        }
        (Some(Initial::Bytes(b)), FieldType::Bytes) => Value::Bytes(b.to_vec()),
        (Some(Initial::Bytes(b)), FieldType::Unicode) => {
            Value::Unicode(String::from_utf8(b.to_vec()).unwrap())
        }
        (Some(Initial::Bytes(b)), _) => Value::Ascii(String::from_utf8(b.to_vec()).unwrap()),
        (None, _) => panic!("no initial value"),
    }
}

/// Values for one scalar: repeats and initial values are likely, so the operators' "leave
/// it out" paths run, and so are extremes.
fn scalar_strategy(sc: &Scalar) -> BoxedStrategy<Value> {
    let present: BoxedStrategy<Value> = match sc.ty {
        FieldType::Int(it) => {
            let (mut lo, mut hi) = (it.min(), it.max());
            if sc.op == Op::Delta {
                // A delta between two 64-bit values must itself fit 64 bits.
                lo = lo.max(-(1 << 62));
                hi = hi.min((1 << 62) - 1);
            }
            prop_oneof![
                (lo.max(-2)..=hi.min(5)).prop_map(move |v| int_value(it, v)),
                (lo..=hi).prop_map(move |v| int_value(it, v)),
                Just(int_value(it, lo)),
                Just(int_value(it, hi)),
            ]
            .boxed()
        }
        FieldType::Decimal => (
            prop_oneof![Just(-2i32), -63..=63i32],
            prop_oneof![-3..10i64, -(1i64 << 62)..(1i64 << 62)],
        )
            .prop_map(|(e, m)| Value::Decimal(Decimal::new(e, m)))
            .boxed(),
        FieldType::Ascii if sc.op == Op::Tail => "[a-d]{4}".prop_map(Value::Ascii).boxed(),
        FieldType::Ascii => prop_oneof!["[\\x00-\\x7f]{0,6}", Just("abc".to_owned())]
            .prop_map(Value::Ascii)
            .boxed(),
        FieldType::Unicode if sc.op == Op::Tail => "[w-z]{4}".prop_map(Value::Unicode).boxed(),
        FieldType::Unicode => prop_oneof!["\\PC{0,5}", Just("é€".to_owned())]
            .prop_map(Value::Unicode)
            .boxed(),
        FieldType::Bytes if sc.op == Op::Tail => prop::collection::vec(0u8..4, 3)
            .prop_map(Value::Bytes)
            .boxed(),
        FieldType::Bytes => prop::collection::vec(any::<u8>(), 0..6)
            .prop_map(Value::Bytes)
            .boxed(),
    };
    match (&sc.initial, sc.op) {
        (_, Op::Constant) => Just(initial_value(sc)).boxed(),
        (Some(_), _) => prop_oneof![Just(initial_value(sc)), present].boxed(),
        (None, _) => present,
    }
}

fn optional<T: std::fmt::Debug + Clone + 'static>(
    opt: bool,
    s: BoxedStrategy<T>,
) -> BoxedStrategy<Option<T>> {
    if opt {
        prop::option::weighted(0.75, s).boxed()
    } else {
        s.prop_map(Some).boxed()
    }
}

fn fields_strategy(ts: &Templates, instrs: &[Instr]) -> Vec<BoxedStrategy<Option<Value>>> {
    instrs.iter().map(|i| instr_strategy(ts, i)).collect()
}

fn instr_strategy(ts: &Templates, instr: &Instr) -> BoxedStrategy<Option<Value>> {
    match &instr.kind {
        Kind::Scalar(sc) => optional(instr.optional, scalar_strategy(sc)),
        Kind::SplitDecimal { exponent, .. } => {
            let exp = if exponent.initial.is_some() {
                prop_oneof![Just(-2i32), Just(-3i32), -63..=63i32].boxed()
            } else {
                (-63..=63i32).boxed()
            };
            let d = (exp, prop_oneof![0..5i64, -(1i64 << 62)..(1i64 << 62)])
                .prop_map(|(e, m)| Value::Decimal(Decimal::new(e, m)))
                .boxed();
            optional(instr.optional, d)
        }
        Kind::Sequence { body, .. } => {
            let elems = prop::collection::vec(fields_strategy(ts, &body.instrs), 0..4)
                .prop_map(Value::Sequence)
                .boxed();
            optional(instr.optional, elems)
        }
        Kind::Group(body) => {
            let g = fields_strategy(ts, &body.instrs)
                .prop_map(Value::Group)
                .boxed();
            optional(instr.optional, g)
        }
        Kind::DynamicRef => {
            let inner = ts.get(2).unwrap();
            fields_strategy(ts, &inner.body.instrs)
                .prop_map(|fields| {
                    Some(Value::Message(Box::new(Message {
                        template_id: 2,
                        fields,
                    })))
                })
                .boxed()
        }
    }
}

fn message_strategy(ts: &Arc<Templates>) -> impl Strategy<Value = Message> {
    let t = ts.get(1).unwrap();
    fields_strategy(ts, &t.body.instrs).prop_map(|fields| Message {
        template_id: 1,
        fields,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// A stream of random messages encodes, decodes to the same messages, and the decoded
    /// messages encode to the same bytes again.
    #[test]
    fn every_type_and_operator_round_trips(
        msgs in prop::collection::vec(message_strategy(&all_templates()), 1..6)
    ) {
        let ts = all_templates();
        let mut enc = Encoder::new(ts.clone());
        let mut bytes = Vec::new();
        let mut ends = Vec::new();
        for m in &msgs {
            enc.encode(m, &mut bytes).unwrap_or_else(|e| panic!("{m:?}: {e}"));
            ends.push(bytes.len());
        }
        let mut dec = Decoder::with_options(ts.clone(), DecodeOptions { strict: true, ..Default::default() });
        let mut at = 0;
        let mut decoded = Vec::new();
        for (m, end) in msgs.iter().zip(&ends) {
            let (got, n) = dec.decode_message(&bytes[at..]).unwrap();
            prop_assert_eq!(&got, m);
            at += n;
            prop_assert_eq!(at, *end);
            decoded.push(got);
        }
        prop_assert_eq!(common::encode_all(&ts, &decoded), bytes);
    }
}

fn corpus_sets() -> Vec<Arc<Templates>> {
    let mut sets: Vec<Arc<Templates>> = [
        "corpus/moex-forts-2013/templates.xml",
        "corpus/mfast-complex/example.xml",
        "corpus/openfast-fpl/FASTTestTemplate.xml",
        "corpus/openfast-acceptance/templates.xml",
        "corpus/seed-templates/SimpleTemplates.xml",
        "corpus/seed-templates/ComplexTemplates.xml",
    ]
    .iter()
    .map(|p| parse_templates(&common::shared_text(p)).unwrap_or_else(|e| panic!("{p}: {e}")))
    .collect();
    sets.push(all_templates());
    sets
}

/// Decodes message after message until the input ends or an error; must not panic.
fn decode_stream(ts: &Arc<Templates>, bytes: &[u8], strict: bool) {
    let opts = DecodeOptions {
        strict,
        max_sequence_len: 1000,
        max_string_len: 1000,
        max_depth: 8,
    };
    let mut dec = Decoder::with_options(ts.clone(), opts);
    let mut at = 0;
    let mut b = MessageBuilder::new();
    while at < bytes.len() {
        match dec.decode(&bytes[at..], &mut b) {
            Ok(n) => {
                assert!(n > 0 && at + n <= bytes.len());
                assert!(b.take().is_some());
                at += n;
            }
            Err(e) => {
                assert!(e.offset <= bytes.len() - at, "{e}");
                let _ = e.to_string();
                break;
            }
        }
    }
    // The callback-only path over the same input.
    let _ = Decoder::new(ts.clone()).decode(bytes, &mut ());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Random bytes, after a plausible header (a presence map byte and a real template id) or
    /// none, never panic the decoder.
    #[test]
    fn random_bytes_never_panic(
        set in 0usize..7,
        pick in any::<prop::sample::Index>(),
        pmap in any::<u8>(),
        header in any::<bool>(),
        tail in prop::collection::vec(any::<u8>(), 0..300),
        strict in any::<bool>(),
    ) {
        let sets = SETS.with(|s| s.clone());
        let ts = &sets[set];
        let mut bytes = Vec::new();
        if header {
            let ids: Vec<u32> = ts.iter().map(|t| t.id).collect();
            let id = ids[pick.index(ids.len())];
            bytes.push(pmap | 0xC0);
            let mut groups = Vec::new();
            let mut v = id;
            loop {
                groups.push((v & 0x7f) as u8);
                v >>= 7;
                if v == 0 { break; }
            }
            groups.reverse();
            *groups.last_mut().unwrap() |= 0x80;
            bytes.extend(groups);
        }
        bytes.extend(tail);
        decode_stream(ts, &bytes, strict);
    }
}

thread_local! {
    static SETS: Vec<Arc<Templates>> = corpus_sets();
}

/// Real messages with one byte changed: the mutations land inside real structure, where
/// random bytes rarely reach.
#[test]
fn mutated_corpus_messages_never_panic() {
    let ts = parse_templates(&common::shared_text(
        "corpus/openfast-fpl/FASTTestTemplate.xml",
    ))
    .unwrap();
    let bytes = common::shared_bytes("corpus/openfast-fpl/messages.fast");
    for i in 0..bytes.len() {
        for v in [0x00, 0x7f, 0x80, 0xff, bytes[i] ^ 0x80, bytes[i] ^ 0x40] {
            let mut b = bytes.clone();
            b[i] = v;
            decode_stream(&ts, &b, false);
            decode_stream(&ts, &b, true);
        }
    }
}
