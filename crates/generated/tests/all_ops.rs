//! Every field type, presence and operator (`templates/conformance/all.xml`): random message
//! streams encoded by the interpreter decode to the same values with the generated decoder,
//! and the generated encoder gives the same bytes and the same errors.

mod common;

use common::{agree, Layout, STREAM};
use fastfeed_codec::template::{FieldType, Initial, Instr, Kind, Op, Scalar};
use fastfeed_codec::{Decimal, DecodeOptions, Encoder, Message, Templates, Value};
use fastfeed_generated::all_ops as g;

generated!(AllOps, fastfeed_generated::all_ops);

fn strict() -> DecodeOptions {
    DecodeOptions {
        strict: true,
        ..Default::default()
    }
}

/// Values likely to exercise every path: initial values and repeats (so fields are left
/// out), small and extreme values, absent optional fields.
struct Gen(fastrand::Rng);

impl Gen {
    fn int(&mut self, _s: &Scalar, lo: i128, hi: i128) -> i128 {
        // Extremes under delta too: a delta wider than 64 bits (int64 MAX -> MIN, uInt64
        // 0 -> MAX) is written and read in full by both encoders and decoders.
        match self.0.u8(0..5) {
            0 => self.0.i128(lo.max(-2)..=hi.min(5)),
            1 => lo,
            2 => hi,
            // Any width, so entities of every length from one byte to ten come up alike.
            3 => {
                let m = 1i128 << self.0.u32(1..64);
                self.0.i128((-m).max(lo)..=(m - 1).min(hi))
            }
            _ => self.0.i128(lo..=hi),
        }
    }

    fn text(&mut self, chars: &[char], len: std::ops::Range<usize>) -> String {
        let n = self.0.usize(len);
        (0..n).map(|_| chars[self.0.usize(..chars.len())]).collect()
    }

    fn scalar(&mut self, s: &Scalar) -> Value {
        if let Some(init) = &s.initial {
            if s.op == Op::Constant || self.0.u8(0..3) == 0 {
                return initial(s, init);
            }
        }
        match s.ty {
            FieldType::Int(it) => {
                let v = self.int(s, it.min(), it.max());
                if it.signed() {
                    Value::Int(v as i64)
                } else {
                    Value::UInt(v as u64)
                }
            }
            FieldType::Decimal => Value::Decimal(Decimal::new(
                self.0.i32(-63..=63),
                if self.0.bool() {
                    self.0.i64(-3..10)
                } else {
                    self.0.i64(-(1 << 62)..(1 << 62))
                },
            )),
            FieldType::Ascii if s.op == Op::Tail => {
                Value::Ascii(self.text(&['a', 'b', 'c', 'd'], 4..5))
            }
            FieldType::Ascii => {
                let all: Vec<char> = (0u8..128).map(char::from).collect();
                Value::Ascii(self.text(&all, 0..7))
            }
            FieldType::Unicode if s.op == Op::Tail => {
                Value::Unicode(self.text(&['w', 'x', 'y', 'z'], 4..5))
            }
            FieldType::Unicode => Value::Unicode(self.text(&['a', 'é', '€', '\0', '𝄞'], 0..6)),
            FieldType::Bytes if s.op == Op::Tail => {
                Value::Bytes((0..3).map(|_| self.0.u8(0..4)).collect())
            }
            FieldType::Bytes => {
                Value::Bytes((0..self.0.usize(0..6)).map(|_| self.0.u8(..)).collect())
            }
        }
    }

    fn fields(&mut self, ts: &Templates, instrs: &[Instr]) -> Vec<Option<Value>> {
        instrs.iter().map(|i| self.field(ts, i)).collect()
    }

    fn field(&mut self, ts: &Templates, i: &Instr) -> Option<Value> {
        if i.optional && self.0.u8(0..4) == 0 {
            return None;
        }
        Some(match &i.kind {
            Kind::Scalar(s) => self.scalar(s),
            Kind::SplitDecimal { exponent, .. } => {
                let e = match (&exponent.initial, self.0.bool()) {
                    (Some(Initial::Int(e)), true) => *e as i64 as i32,
                    _ => self.0.i32(-63..=63),
                };
                Value::Decimal(Decimal::new(e, self.0.i64(-(1 << 62)..(1 << 62))))
            }
            Kind::Sequence { length, body, .. } => {
                let n = match (&length.op, &length.initial) {
                    (Op::Constant, Some(Initial::Int(n))) => *n as usize,
                    _ => self.0.usize(0..4),
                };
                Value::Sequence((0..n).map(|_| self.fields(ts, &body.instrs)).collect())
            }
            Kind::Group(body) => Value::Group(self.fields(ts, &body.instrs)),
            Kind::DynamicRef => {
                let inner = ts.get(2).expect("template 2");
                Value::Message(Box::new(Message {
                    template_id: 2,
                    fields: self.fields(ts, &inner.body.instrs),
                }))
            }
        })
    }
}

fn initial(s: &Scalar, init: &Initial) -> Value {
    match (init, s.ty) {
        (Initial::Int(v), FieldType::Int(it)) if it.signed() => Value::Int(*v as i64),
        (Initial::Int(v), _) => Value::UInt(*v),
        (Initial::Decimal { exponent, mantissa }, _) => {
            Value::Decimal(Decimal::new(*exponent, *mantissa))
        }
        (Initial::Bytes(b), FieldType::Bytes) => Value::Bytes(b.to_vec()),
        (Initial::Bytes(b), FieldType::Unicode) => {
            Value::Unicode(String::from_utf8(b.to_vec()).expect("UTF-8"))
        }
        (Initial::Bytes(b), _) => Value::Ascii(String::from_utf8(b.to_vec()).expect("ASCII")),
    }
}

#[test]
fn random_streams_agree() {
    let ts = <AllOps as common::Generated>::templates();
    let mut gen = Gen(fastrand::Rng::with_seed(0x5eed));
    let mut messages = 0;
    for round in 0..400 {
        let n = gen.0.usize(1..6);
        let mut enc = Encoder::new(ts.clone());
        let mut bytes = Vec::new();
        for _ in 0..n {
            let id = match gen.0.u8(0..10) {
                0 => 2,
                1 => 3,
                2 => 4,
                // Templates that begin alike, one after another in any order.
                n @ 3..=5 => n as u32 + 2,
                _ => 1,
            };
            let t = ts.get(id).expect("template");
            let m = Message {
                template_id: id,
                fields: gen.fields(&ts, &t.body.instrs),
            };
            enc.encode(&m, &mut bytes)
                .unwrap_or_else(|e| panic!("round {round}: {m:?}: {e}"));
        }
        for l in [
            STREAM,
            Layout {
                opts: strict,
                ..STREAM
            },
        ] {
            let out = agree::<AllOps>(&[&bytes], l, true);
            assert_eq!(out.len(), n, "round {round}");
            assert!(out.iter().all(Result::is_ok), "round {round}");
        }
        messages += n;
    }
    assert!(messages > 1000);
}

/// The first message of a random stream as generated structs.
fn sample() -> g::All<'static> {
    let ts = <AllOps as common::Generated>::templates();
    let mut gen = Gen(fastrand::Rng::with_seed(7));
    let t = ts.get(1).expect("template");
    let m = Message {
        template_id: 1,
        fields: gen.fields(&ts, &t.body.instrs),
    };
    let mut bytes = Vec::new();
    Encoder::new(ts).encode(&m, &mut bytes).unwrap();
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    match g::Decoder::new().decode_message(bytes).unwrap().0 {
        g::Message::All(a) => a,
        other => panic!("{other:?}"),
    }
}

/// Values an encoder must refuse: the same error from both, and nothing written.
#[test]
fn encoder_errors_agree() {
    let ts = <AllOps as common::Generated>::templates();
    type Spoil = Box<dyn Fn(&mut g::All<'static>)>;
    let bad: Vec<(&str, Spoil)> = vec![
        ("constant", Box::new(|a| a.u_const = 8)),
        (
            "optional constant",
            Box::new(|a| a.s_const_o = fp_ascii("nope")),
        ),
        ("decimal exponent", Box::new(|a| a.d = Decimal::new(64, 1))),
        (
            "split decimal exponent",
            Box::new(|a| a.d_split = Decimal::new(-64, 1)),
        ),
        (
            "shorter tail",
            Box::new(|a| a.s_tail = fastfeed_codec::primitives::AsciiBuf::new("ab").unwrap()),
        ),
        ("dynamic reference", Box::new(|a| a.template_ref = None)),
    ];
    for (what, spoil) in bad {
        let mut a = sample();
        spoil(&mut a);
        let mut ours = vec![1, 2, 3];
        let e1 = g::Encoder::new().encode_all(&a, &mut ours).expect_err(what);
        assert_eq!(ours, [1, 2, 3], "{what}: output left as it was");
        let mut theirs = Vec::new();
        let e2 = Encoder::new(ts.clone())
            .encode(&a.to_message_or_typemismatch(), &mut theirs)
            .expect_err(what);
        assert_eq!(e1, e2, "{what}");
    }
}

fn fp_ascii(s: &'static str) -> Option<fastfeed_codec::primitives::Ascii<'static>> {
    fastfeed_codec::primitives::Ascii::new(s)
}

/// The interpreter's message for a struct; a missing dynamic reference becomes a value of
/// the wrong type, as the interpreter's encoder would see it.
trait ToMessage {
    fn to_message_or_typemismatch(&self) -> Message;
}

impl ToMessage for g::All<'_> {
    fn to_message_or_typemismatch(&self) -> Message {
        let mut m = self.to_message();
        if self.template_ref.is_none() {
            *m.fields.last_mut().unwrap() = Some(Value::UInt(0));
        }
        m
    }
}

/// Found by `fuzz/fuzz_targets/generated.rs`: a stream whose string delta (`SDelta`) has a
/// subtraction length past 64 bits. The interpreter named it D7 (a subtraction length out of
/// the int32 range), the generated decoder D2 (an integer overflow); both now say D7.
#[test]
fn a_subtraction_length_past_64_bits_is_d7_in_both() {
    let hex: String = [
        "75492e747d0200000000b481e9cd0bf67b02048d818000430d66414080808080",
        "c080b1810eff175724c721fe0e0fe4868280819189808c8080808080c0f8e0ca",
        "3200000061787878787878787878787878787878787878787878787878787878",
        "7878787878787878787878787878787878787878787878787878787878787878",
        "7878787878787878787878787878787878787878787878787878787878787878",
        "78787878787878787878781b86b1175724c721fe0e0fe48684808147455ab605",
        "feffffffffffffffff7a26ba998380055994c9fd8000c083b4b182fe7a699800",
        "00b182fe7a69ca8dff82",
    ]
    .concat();
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let strict_stream = Layout {
        opts: strict,
        ..STREAM
    };
    let out = agree::<AllOps>(&[&bytes], strict_stream, false);
    let last = out.last().unwrap().as_ref().unwrap_err();
    assert_eq!(
        last.kind,
        fastfeed_codec::ErrorKind::BadSubtraction(i64::MAX)
    );
    assert_eq!(last.field.as_deref(), Some("SDelta"));
}
