//! The generated decoders against the interpreter on outside bytes: the first byte picks a
//! template set and the mode, the rest is a stream. Both must decode the same messages with
//! the same byte counts, or stop at the same error (kind, offset, template, field); whatever
//! decoded must encode to the same bytes with the generated encoder as with the interpreter's.
//! The generated `decode_each` over the whole stream must give what `decode` gave message by
//! message.
#![no_main]

use std::sync::{Arc, OnceLock};

use fastfeed_codec::{CodecError, DecodeOptions, Decoder, Encoder, Message, Templates};
use fastfeed_generated as gen;
use libfuzzer_sys::fuzz_target;

type Outcome = Result<(Message, usize), CodecError>;

macro_rules! sets {
    ($($m:ident),*) => {
        const XML: &[&str] = &[$(gen::$m::TEMPLATES_XML),*];

        /// The generated module's outcomes, and its encoding of what it decoded.
        fn generated(set: usize, bytes: &[u8], opts: &DecodeOptions) -> (Vec<Outcome>, Vec<u8>) {
            let mut i = 0;
            $(
                if set == i {
                    let mut dec = gen::$m::Decoder::with_options(opts.clone());
                    let mut enc = gen::$m::Encoder::new();
                    let mut msgs = gen::$m::Messages::default();
                    let (mut out, mut encoded, mut pos) = (Vec::new(), Vec::new(), 0);
                    while pos < bytes.len() {
                        match dec.decode(&bytes[pos..], &mut msgs) {
                            Ok((kind, n)) => {
                                let m = msgs.take(kind);
                                enc.encode(&m, &mut encoded).expect("decoded messages encode");
                                out.push(Ok((m.to_message(), n)));
                                pos += n;
                            }
                            Err(e) => {
                                out.push(Err(e));
                                break;
                            }
                        }
                    }
                    // The whole stream in one `decode_each`: the same messages and error,
                    // its offset counted from the stream's start.
                    let mut dec = gen::$m::Decoder::with_options(opts.clone());
                    let mut each = Vec::new();
                    let mut end = 0;
                    let done = dec.decode_each(bytes, &mut msgs, |kind, m, range| {
                        assert_eq!(range.start, end, "messages follow one another");
                        end = range.end;
                        each.push(Ok((m.to_message(kind), range.len())));
                    });
                    if let Err(mut e) = done {
                        e.offset -= end;
                        each.push(Err(e));
                    }
                    assert_eq!(each, out, "decode_each against decode");
                    return (out, encoded);
                }
                i += 1;
            )*
            let _ = i;
            unreachable!("set {set}")
        }
    };
}

sets!(mfast_complex, moex, openfast_fpl, all_ops, sim_simple, sim_complex);

fn templates() -> &'static Vec<Arc<Templates>> {
    static S: OnceLock<Vec<Arc<Templates>>> = OnceLock::new();
    S.get_or_init(|| {
        XML.iter()
            .map(|x| fastfeed_codec::parse_templates(x).expect("templates parse"))
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let set = (pick & 0x3f) as usize % XML.len();
    let opts = DecodeOptions {
        strict: pick & 0x40 != 0,
        // Small limits now and then, so the limit checks are compared too.
        max_sequence_len: if pick & 0x80 != 0 { 3 } else { 1000 },
        max_string_len: if pick & 0x80 != 0 { 4 } else { 1000 },
        max_depth: if pick & 0x80 != 0 { 1 } else { 8 },
    };
    let ts = &templates()[set];
    let mut dec = Decoder::with_options(ts.clone(), opts.clone());
    let mut enc = Encoder::new(ts.clone());
    let (mut want, mut encoded, mut pos) = (Vec::new(), Vec::new(), 0);
    while pos < bytes.len() {
        match dec.decode_message(&bytes[pos..]) {
            Ok((m, n)) => {
                enc.encode(&m, &mut encoded).expect("decoded messages encode");
                want.push(Ok((m, n)));
                pos += n;
            }
            Err(e) => {
                want.push(Err(e));
                break;
            }
        }
    }
    let (got, got_encoded) = generated(set, bytes, &opts);
    assert_eq!(want, got);
    assert!(encoded == got_encoded, "the encoders differ");
});
