//! The CME-labelled conformance suite of OpenFAST .NET
//! (`shared/corpus/cme-conformance-xml/SampleXmlTest.xml`): 21 tests, each an inline template,
//! input bits and the expected messages in OpenFAST's text form.

mod common;

use std::sync::Arc;

use fastfeed_codec::template::{Instr, Kind};
use fastfeed_codec::{parse_templates, Decimal, Decoder, Message, Templates, Value};

const TD_NS: &str = "http://www.fixprotocol.org/ns/fast/td/1.1";

/// An expected value in OpenFAST's text form: a scalar's text (empty for absent) or a
/// sequence of `[name -> {fields}]` elements.
#[derive(Debug)]
enum Text {
    Scalar(String),
    Seq(Vec<(String, Vec<Text>)>),
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }
    fn expect(&mut self, tok: &str) {
        self.ws();
        assert!(
            self.s[self.pos..].starts_with(tok.as_bytes()),
            "expected {tok:?} at {:?}",
            String::from_utf8_lossy(&self.s[self.pos..])
        );
        self.pos += tok.len();
    }
    fn peek(&mut self) -> u8 {
        self.ws();
        self.s[self.pos]
    }
    /// `name -> {a, b, ...}`
    fn record(&mut self) -> (String, Vec<Text>) {
        self.ws();
        let start = self.pos;
        while self.s[self.pos] != b'-' {
            self.pos += 1;
        }
        let name = String::from_utf8_lossy(&self.s[start..self.pos])
            .trim()
            .to_owned();
        self.expect("->");
        self.expect("{");
        let mut fields = Vec::new();
        while self.peek() != b'}' {
            fields.push(self.value());
            self.expect(",");
        }
        self.expect("}");
        (name, fields)
    }
    fn value(&mut self) -> Text {
        if self.peek() == b'[' {
            self.pos += 1;
            let mut items = Vec::new();
            while self.peek() != b']' {
                self.expect("[");
                items.push(self.record());
                self.expect("]");
            }
            self.pos += 1;
            return Text::Seq(items);
        }
        let start = self.pos;
        while !matches!(self.s[self.pos], b',' | b'}') {
            self.pos += 1;
        }
        Text::Scalar(
            String::from_utf8_lossy(&self.s[start..self.pos])
                .trim()
                .to_owned(),
        )
    }
}

/// Numeric equality of decimals: 10.5 as (-1, 105) equals "10.50" as (-2, 1050).
fn same_number(a: Decimal, b: Decimal) -> bool {
    fn norm(d: Decimal) -> (i32, i64) {
        let (mut e, mut m) = (d.exponent, d.mantissa);
        if m == 0 {
            return (0, 0);
        }
        while m % 10 == 0 {
            m /= 10;
            e += 1;
        }
        (e, m)
    }
    norm(a) == norm(b)
}

fn check_fields(ctx: &str, instrs: &[Instr], got: &[Option<Value>], want: &[Text]) {
    assert_eq!(got.len(), want.len(), "{ctx}: field count");
    for ((instr, g), w) in instrs.iter().zip(got).zip(want) {
        let ctx = format!("{ctx}.{}", instr.name);
        match (g, w) {
            (None, Text::Scalar(t)) => {
                assert!(t.is_empty() && instr.optional, "{ctx}: absent, want {t:?}")
            }
            (Some(Value::Sequence(items)), Text::Seq(want_items)) => {
                let Kind::Sequence { body, .. } = &instr.kind else {
                    panic!("{ctx}: not a sequence")
                };
                assert_eq!(items.len(), want_items.len(), "{ctx}: length");
                for (k, (item, (name, fields))) in items.iter().zip(want_items).enumerate() {
                    assert_eq!(name, &instr.name, "{ctx}[{k}]: element name");
                    check_fields(&format!("{ctx}[{k}]"), &body.instrs, item, fields);
                }
            }
            (Some(v), Text::Scalar(t)) => {
                let ok = match v {
                    Value::UInt(n) => t.parse::<u64>().ok() == Some(*n),
                    Value::Int(n) => t.parse::<i64>().ok() == Some(*n),
                    Value::Decimal(dv) => Decimal::parse(t).is_some_and(|x| same_number(*dv, x)),
                    // An empty text is an empty string only where the field cannot be absent.
                    Value::Ascii(s) | Value::Unicode(s) => {
                        s == t && !(t.is_empty() && instr.optional)
                    }
                    _ => false,
                };
                assert!(ok, "{ctx}: got {v:?}, want {t:?}");
            }
            (g, w) => panic!("{ctx}: got {g:?}, want {w:?}"),
        }
    }
}

fn child<'a, 'i>(n: roxmltree::Node<'a, 'i>, tag: &str) -> Option<roxmltree::Node<'a, 'i>> {
    n.children()
        .find(|c| c.is_element() && c.tag_name().name() == tag)
}

struct Case {
    name: String,
    decode_only: bool,
    templates: Arc<Templates>,
    input: Vec<u8>,
    expected: Vec<String>,
}

fn cases() -> Vec<Case> {
    let text = common::shared_text("corpus/cme-conformance-xml/SampleXmlTest.xml");
    let text = text.trim_start_matches('\u{feff}');
    let doc = roxmltree::Document::parse(text).unwrap();
    doc.root_element()
        .children()
        .filter(|n| n.is_element() && n.tag_name().name() == "test")
        .map(|test| {
            let name = test.attribute("name").unwrap().to_owned();
            // Each <template> declares the FAST namespace itself; wrap them in a document.
            let tds = child(test, "templates").expect("td:templates");
            let inner: String = tds
                .children()
                .filter(|c| c.is_element())
                .map(|c| &text[c.range()])
                .collect();
            let xml = format!(r#"<templates xmlns="{TD_NS}">{inner}</templates>"#);
            let templates = parse_templates(&xml).unwrap_or_else(|e| panic!("{name}: {e}"));
            let bits = child(test, "binstr").unwrap().text().unwrap_or("");
            let input = bits
                .split_whitespace()
                .map(|b| u8::from_str_radix(b, 2).unwrap())
                .collect();
            let expected = child(test, "data")
                .map(|d| {
                    d.children()
                        .filter(|m| m.is_element() && m.tag_name().name() == "message")
                        .map(|m| m.text().unwrap_or("").trim().to_owned())
                        .collect()
                })
                .unwrap_or_default();
            Case {
                name,
                decode_only: test.attribute("action") == Some("decode"),
                templates,
                input,
                expected,
            }
        })
        .collect()
}

fn check_message(ctx: &str, ts: &Templates, m: &Message, text: &str) {
    let mut p = Parser {
        s: text.as_bytes(),
        pos: 0,
    };
    let (tname, fields) = p.record();
    p.ws();
    assert_eq!(p.pos, text.len(), "{ctx}: trailing text");
    let t = ts.get(m.template_id).unwrap();
    assert_eq!(tname, t.name, "{ctx}: template name");
    // OpenFAST's text form starts with the template id.
    let (tid, fields) = fields.split_first().unwrap();
    assert!(
        matches!(tid, Text::Scalar(s) if s.parse() == Ok(m.template_id)),
        "{ctx}: {tid:?}"
    );
    check_fields(ctx, &t.body.instrs, &m.fields, fields);
}

#[test]
fn corpus_shape() {
    let cases = cases();
    assert_eq!(cases.len(), 21);
    let with_data: Vec<_> = cases.iter().filter(|c| !c.expected.is_empty()).collect();
    assert_eq!(with_data.len(), 18);
    assert_eq!(
        with_data.iter().map(|c| c.expected.len()).sum::<usize>(),
        85
    );
    let decode_only: Vec<_> = cases
        .iter()
        .filter(|c| c.decode_only)
        .map(|c| &c.name[..])
        .collect();
    assert_eq!(
        decode_only,
        [
            "CME_OptionalConstant",
            "CME_OptionalCopy",
            "CME_OptionalIncrement"
        ]
    );
    assert!(cases.iter().all(|c| c.decode_only == c.expected.is_empty()));
}

#[test]
fn all_85_expected_messages_match() {
    let mut matched = 0;
    for case in cases().iter().filter(|c| !c.decode_only) {
        let mut dec = Decoder::new(case.templates.clone());
        let msgs = common::decode_all(&mut dec, &case.input);
        assert_eq!(
            msgs.len(),
            case.expected.len(),
            "{}: message count",
            case.name
        );
        for (k, (m, text)) in msgs.iter().zip(&case.expected).enumerate() {
            check_message(&format!("{}#{k}", case.name), &case.templates, m, text);
            matched += 1;
        }
    }
    assert_eq!(matched, 85);
}

#[test]
fn decode_only_tests_use_every_byte() {
    for case in cases().iter().filter(|c| c.decode_only) {
        let mut dec = Decoder::new(case.templates.clone());
        let msgs = common::decode_all(&mut dec, &case.input);
        assert!(!msgs.is_empty(), "{}", case.name);
    }
}

/// Every decoded stream re-encodes to a stream no longer than the input that decodes to the
/// same messages.
#[test]
fn re_encoding_round_trips() {
    for case in cases() {
        let msgs = common::decode_all(&mut Decoder::new(case.templates.clone()), &case.input);
        let out = common::encode_all(&case.templates, &msgs);
        assert!(
            out.len() <= case.input.len(),
            "{}: {} > {}",
            case.name,
            out.len(),
            case.input.len()
        );
        let back = common::decode_all(&mut Decoder::new(case.templates.clone()), &out);
        assert_eq!(back, msgs, "{}", case.name);
    }
}
