//! The FAST Session Control Protocol 1.1 messages the codec knows without the template file
//! (issue 13): Reset (120), Hello (16002), Alert (16003).

mod common;

use common::hex;
use fastfeed_codec::template::{parse_with, ParseOptions, HELLO_ID, RESET_ID};
use fastfeed_codec::{parse_templates, Decoder, Encoder, ErrorKind, Message, SpecCode, Value};

const NS: &str = "http://www.fixprotocol.org/ns/fast/td/1.1";

/// An EMDI-like feed's templates, without template 120: a packet header, then data whose
/// field is copied from message to message.
const FEED: &str = r#"
  <template name="PacketHeader" id="1"><uInt32 name="PacketSeqNum"/></template>
  <template name="Data" id="2"><uInt32 name="X"><copy/></uInt32></template>"#;

fn feed() -> String {
    format!(r#"<templates xmlns="{NS}">{FEED}</templates>"#)
}

fn msg(template_id: u32, fields: Vec<Option<Value>>) -> Message {
    Message {
        template_id,
        fields,
    }
}

#[test]
fn packet_header_then_reset_then_messages_decode_without_template_120() {
    let ts = parse_templates(&feed()).unwrap();
    let reset = ts.get(RESET_ID).expect("SCP's Reset is known");
    assert!(reset.session && reset.reset && reset.body.instrs.is_empty());
    // PacketHeader 7, Reset, Data X=5, Data X copied.
    let bytes = hex("C0 81 87  C0 F8  E0 82 85  80");
    let got = common::decode_all(&mut Decoder::new(ts), &bytes);
    assert_eq!(
        got,
        [
            msg(1, vec![Some(Value::UInt(7))]),
            msg(RESET_ID, vec![]),
            msg(2, vec![Some(Value::UInt(5))]),
            msg(2, vec![Some(Value::UInt(5))]),
        ]
    );
}

#[test]
fn reset_makes_every_dictionary_entry_undefined() {
    let ts = parse_templates(&feed()).unwrap();
    let mut dec = Decoder::new(ts);
    dec.decode_message(&hex("E0 82 85")).unwrap();
    dec.decode_message(&hex("C0 F8")).unwrap();
    // X left out after the Reset: its entry is undefined, and it has no initial value.
    let e = dec.decode_message(&hex("C0 82")).unwrap_err();
    assert_eq!(
        (e.kind.clone(), e.code()),
        (ErrorKind::MissingValue, Some(SpecCode::D5))
    );
}

#[test]
fn encoder_emits_a_reset_on_request_and_resets_itself() {
    let ts = parse_templates(&feed()).unwrap();
    let mut enc = Encoder::new(ts.clone());
    let mut out = Vec::new();
    enc.encode(&msg(2, vec![Some(Value::UInt(5))]), &mut out)
        .unwrap();
    enc.encode_reset(&mut out).unwrap();
    // After the Reset, X=5 must be sent again: the decoder forgot it too.
    enc.encode(&msg(2, vec![Some(Value::UInt(5))]), &mut out)
        .unwrap();
    assert_eq!(out, hex("E0 82 85  C0 F8  E0 82 85"));
    assert_eq!(
        common::decode_all(&mut Decoder::new(ts.clone()), &out).len(),
        3
    );
    // The message after a Reset sends its template id, even a second Reset: the reset
    // made the template id's entry undefined too (a strict decoder holds none).
    out.clear();
    enc.encode_reset(&mut out).unwrap();
    enc.encode_reset(&mut out).unwrap();
    enc.encode(&msg(2, vec![Some(Value::UInt(5))]), &mut out)
        .unwrap();
    enc.encode(&msg(2, vec![Some(Value::UInt(5))]), &mut out)
        .unwrap();
    assert_eq!(out, hex("C0 F8  C0 F8  E0 82 85  80"));
    assert_eq!(common::decode_all(&mut Decoder::new(ts), &out).len(), 4);
}

#[test]
fn hello_and_alert_decode_and_encode() {
    let ts = parse_templates(&feed()).unwrap();
    let hello = msg(HELLO_ID, vec![Some(Value::Ascii("fastfeed".into())), None]);
    let alert = msg(
        16003,
        vec![
            Some(Value::UInt(2)),
            Some(Value::UInt(14)),
            Some(Value::UInt(9)),
            Some(Value::Ascii("Protocol Error".into())),
        ],
    );
    let bytes = common::encode_all(&ts, &[hello.clone(), alert.clone()]);
    // Hello: template id 16002 (7D 82), the name, a NULL vendor id.
    assert_eq!(bytes[..3], hex("C0 7D 82"));
    assert_eq!(
        common::decode_all(&mut Decoder::new(ts.clone()), &bytes),
        [hello, alert]
    );
    assert_eq!(ts.get(HELLO_ID).unwrap().name, "Hello");
    assert_eq!(ts.get(16003).unwrap().name, "Alert");
}

#[test]
fn the_template_files_own_id_takes_precedence() {
    let xml = format!(
        r#"<templates xmlns="{NS}">{FEED}
           <template name="Heartbeat" id="120"><uInt32 name="Seq"/></template></templates>"#
    );
    let ts = parse_templates(&xml).unwrap();
    let t = ts.get(RESET_ID).unwrap();
    assert!(!t.session && !t.reset && t.name == "Heartbeat");
    assert_eq!(ts.iter().filter(|t| t.id == RESET_ID).count(), 1);
    let (m, _) = Decoder::new(ts).decode_message(&hex("C0 F8 83")).unwrap();
    assert_eq!(m, msg(RESET_ID, vec![Some(Value::UInt(3))]));
}

#[test]
fn session_control_can_be_turned_off() {
    let off = ParseOptions {
        session_control: false,
    };
    let ts = std::sync::Arc::new(parse_with(&feed(), off).unwrap());
    assert!(ts.get(RESET_ID).is_none() && ts.iter().all(|t| !t.session));
    let e = Decoder::new(ts.clone())
        .decode_message(&hex("C0 F8"))
        .unwrap_err();
    assert_eq!(e.code(), Some(SpecCode::D9));
    assert!(Encoder::new(ts).encode_reset(&mut Vec::new()).is_err());
}

#[test]
fn scp_reset_attribute_resets() {
    // MOEX and mFAST write SCP 1.1's attribute, in its namespace.
    let xml = format!(
        r#"<templates xmlns="{NS}" xmlns:scp="http://www.fixprotocol.org/ns/fast/scp/1.1">
           <template name="R" id="9" scp:reset="yes"/></templates>"#
    );
    assert!(parse_templates(&xml).unwrap().get(9).unwrap().reset);
}
