//! Dictionaries (spec §6.3.1, §7): which operators share a previous value, and resets.

mod common;

use common::hex;
use fastfeed_codec::{parse_templates, Decoder, SpecCode, Value};

const NS: &str = "http://www.fixprotocol.org/ns/fast/td/1.1";

fn u(v: u64) -> Option<Value> {
    Some(Value::UInt(v))
}

/// Spec §6.3.1 and §7: operators share an entry iff dictionary and key (a namespace-qualified
/// name) are the same.
#[test]
fn dictionary_scopes_and_keys_6_3_1() {
    let ts = parse_templates(&format!(
        r#"<templates xmlns="{NS}">
          <template name="A" id="1"><uInt32 name="X"><copy/></uInt32></template>
          <template name="B" id="2"><uInt32 name="X"><copy/></uInt32></template>
          <template name="C" id="3" dictionary="template"><uInt32 name="X"><copy/></uInt32></template>
          <template name="D" id="4" ns="urn:other"><uInt32 name="X"><copy/></uInt32></template>
          <template name="E" id="5"><uInt32 name="Y"><copy key="X"/></uInt32></template>
          <template name="F" id="6"><uInt32 name="X"><copy dictionary="mine"/></uInt32></template>
        </templates>"#
    ))
    .unwrap();
    // Template A sets the global X to 5; then each template's X is left out of the stream.
    for (tid, want) in [(2, Some(5)), (3, None), (4, None), (5, Some(5)), (6, None)] {
        let mut dec = Decoder::new(ts.clone());
        dec.decode_message(&hex("E0 81 85")).unwrap();
        let got = dec.decode_message(&[0xC0, 0x80 | tid as u8]);
        match want {
            Some(v) => assert_eq!(got.unwrap().0.fields[0], u(v), "template {tid}"),
            // Undefined, no initial value, mandatory: ERR D5.
            None => assert_eq!(
                got.unwrap_err().code(),
                Some(SpecCode::D5),
                "template {tid}"
            ),
        }
    }
    // A reset makes every entry undefined again.
    let mut dec = Decoder::new(ts.clone());
    dec.decode_message(&hex("E0 81 85")).unwrap();
    dec.reset();
    let e = dec.decode_message(&hex("C0 82")).unwrap_err();
    assert_eq!(e.code(), Some(SpecCode::D5));
}
