//! Running the interpreter and a generated module over the same packets, message by message,
//! so tests can compare what each decoded (or which error it found) and what each encoded.
#![allow(dead_code)]

use std::sync::Arc;

use fastfeed_codec::{CodecError, DecodeOptions, Decoder, Encoder, Message, Templates};

/// One message decoded (and the bytes it took), or the error that ended its packet.
pub type Outcome = Result<(Message, usize), CodecError>;

/// How a data set is laid out: packets, a header to skip in each, dictionaries reset per
/// packet or not.
#[derive(Clone, Copy)]
pub struct Layout {
    pub skip: usize,
    pub reset: bool,
    pub opts: fn() -> DecodeOptions,
}

pub const STREAM: Layout = Layout {
    skip: 0,
    reset: false,
    opts: DecodeOptions::default,
};

/// A file of the shared third-party corpus.
pub fn shared_bytes(rel: &str) -> Vec<u8> {
    let path = format!("{}/../../../shared/{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The records of a `len32le` buffer.
pub fn len32le(data: &[u8]) -> Vec<&[u8]> {
    fastfeed_packet::len32le_packets(data)
        .map(|p| p.expect("framing").bytes)
        .collect()
}

/// The interpreter's outcomes: each packet's messages until its end or first error.
pub fn interpret(ts: &Arc<Templates>, packets: &[&[u8]], l: Layout) -> Vec<Outcome> {
    let mut dec = Decoder::with_options(ts.clone(), (l.opts)());
    let mut out = Vec::new();
    for p in packets {
        if l.reset {
            dec.reset();
        }
        let mut pos = l.skip.min(p.len());
        while pos < p.len() {
            match dec.decode_message(&p[pos..]) {
                Ok((m, n)) => {
                    out.push(Ok((m, n)));
                    pos += n;
                }
                Err(e) => {
                    out.push(Err(e));
                    break;
                }
            }
        }
    }
    out
}

/// The interpreter's encoding of the messages, packet by packet as decoded.
pub fn interpret_encode(ts: &Arc<Templates>, packets: &[Vec<Message>], reset: bool) -> Vec<u8> {
    let mut enc = Encoder::new(ts.clone());
    let mut out = Vec::new();
    for p in packets {
        if reset {
            enc.reset();
        }
        for m in p {
            enc.encode(m, &mut out)
                .unwrap_or_else(|e| panic!("{m:?}: {e}"));
        }
    }
    out
}

/// What a generated module can be asked, the same for every module.
pub trait Generated {
    fn templates() -> Arc<Templates>;
    /// Decodes with `Decoder::decode` into one reused `Messages`.
    fn decode_in_place(packets: &[&[u8]], l: Layout) -> Vec<Outcome>;
    /// Decodes each packet with one `Decoder::decode_each` into one reused `Messages`.
    fn decode_each(packets: &[&[u8]], l: Layout) -> Vec<Outcome>;
    /// Decodes with `Decoder::decode_message` into new values.
    fn decode_new(packets: &[&[u8]], l: Layout) -> Vec<Outcome>;
    /// Decodes, then encodes each packet's messages with the generated encoder.
    fn reencode(packets: &[&[u8]], l: Layout) -> Vec<u8>;
}

#[macro_export]
macro_rules! generated {
    ($name:ident, $m:path) => {
        pub struct $name;

        impl $crate::common::Generated for $name {
            fn templates() -> std::sync::Arc<fastfeed_codec::Templates> {
                use $m as g;
                fastfeed_codec::parse_templates(g::TEMPLATES_XML).unwrap()
            }

            fn decode_in_place(
                packets: &[&[u8]],
                l: $crate::common::Layout,
            ) -> Vec<$crate::common::Outcome> {
                use $m as g;
                let mut dec = g::Decoder::with_options((l.opts)());
                let mut msgs = g::Messages::default();
                let mut out = Vec::new();
                for p in packets {
                    if l.reset {
                        dec.reset();
                    }
                    let mut pos = l.skip.min(p.len());
                    while pos < p.len() {
                        match dec.decode(&p[pos..], &mut msgs) {
                            Ok((kind, n)) => {
                                out.push(Ok((msgs.to_message(kind), n)));
                                pos += n;
                            }
                            Err(e) => {
                                out.push(Err(e));
                                break;
                            }
                        }
                    }
                }
                out
            }

            fn decode_each(
                packets: &[&[u8]],
                l: $crate::common::Layout,
            ) -> Vec<$crate::common::Outcome> {
                use $m as g;
                let mut dec = g::Decoder::with_options((l.opts)());
                let mut msgs = g::Messages::default();
                let mut out = Vec::new();
                for p in packets {
                    if l.reset {
                        dec.reset();
                    }
                    let body = &p[l.skip.min(p.len())..];
                    // Where the last message ended: each begins there.
                    let mut end = 0;
                    let mut n = 0;
                    let done = dec.decode_each(body, &mut msgs, |kind, m, range| {
                        assert_eq!(range.start, end, "messages follow one another");
                        end = range.end;
                        n += 1;
                        out.push(Ok((m.to_message(kind), range.len())));
                    });
                    match done {
                        Ok(count) => assert_eq!(count, n, "the count is the messages given"),
                        // The run's offsets count from the packet's body, a message's from
                        // its own start.
                        Err(mut e) => {
                            e.offset -= end;
                            out.push(Err(e));
                        }
                    }
                }
                out
            }

            fn decode_new(
                packets: &[&[u8]],
                l: $crate::common::Layout,
            ) -> Vec<$crate::common::Outcome> {
                use $m as g;
                let mut dec = g::Decoder::with_options((l.opts)());
                let mut out = Vec::new();
                for p in packets {
                    if l.reset {
                        dec.reset();
                    }
                    let mut pos = l.skip.min(p.len());
                    while pos < p.len() {
                        match dec.decode_message(&p[pos..]) {
                            Ok((m, n)) => {
                                assert_eq!(m.kind().id(), m.to_message().template_id);
                                out.push(Ok((m.to_message(), n)));
                                pos += n;
                            }
                            Err(e) => {
                                out.push(Err(e));
                                break;
                            }
                        }
                    }
                }
                out
            }

            fn reencode(packets: &[&[u8]], l: $crate::common::Layout) -> Vec<u8> {
                use $m as g;
                let mut dec = g::Decoder::with_options((l.opts)());
                let mut enc = g::Encoder::new();
                let mut out = Vec::new();
                for p in packets {
                    if l.reset {
                        dec.reset();
                        enc.reset();
                    }
                    let mut pos = l.skip.min(p.len());
                    while pos < p.len() {
                        let (m, n) = dec.decode_message(&p[pos..]).expect("decodes");
                        enc.encode(&m, &mut out)
                            .unwrap_or_else(|e| panic!("{m:?}: {e}"));
                        pos += n;
                    }
                }
                out
            }
        }
    };
}

/// Both decoders over the packets give the same messages, byte counts and errors; with
/// `encode`, both encoders give the same bytes for what was decoded. Returns the outcomes.
pub fn agree<G: Generated>(packets: &[&[u8]], l: Layout, encode: bool) -> Vec<Outcome> {
    let ts = G::templates();
    let want = interpret(&ts, packets, l);
    let got = G::decode_in_place(packets, l);
    compare(&want, &got, "decode into Messages");
    let got = G::decode_each(packets, l);
    compare(&want, &got, "decode_each");
    let got = G::decode_new(packets, l);
    compare(&want, &got, "decode_message");
    if encode {
        // Messages per packet, as decoded.
        let mut per_packet = Vec::new();
        let mut it = want.iter();
        for p in packets {
            let mut pos = l.skip.min(p.len());
            let mut msgs = Vec::new();
            while pos < p.len() {
                let (m, n) = it.next().unwrap().as_ref().expect("no errors to encode");
                msgs.push(m.clone());
                pos += n;
            }
            per_packet.push(msgs);
        }
        let a = interpret_encode(&ts, &per_packet, l.reset);
        let b = G::reencode(packets, l);
        assert!(
            a == b,
            "the encoders differ at byte {:?}",
            a.iter().zip(&b).position(|(x, y)| x != y)
        );
    }
    want
}

fn compare(want: &[Outcome], got: &[Outcome], how: &str) {
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        assert_eq!(w, g, "{how}: message {i}");
    }
    assert_eq!(want.len(), got.len(), "{how}: outcomes");
}
