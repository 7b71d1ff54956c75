//! Bad input gets the same typed errors from the generated decoders as from the interpreter:
//! the same kind, byte offset, template and field, after the same messages. Real messages
//! are cut short at every byte and have bytes changed, in lenient and strict mode.

mod common;

use common::{agree, len32le, shared_bytes, Layout, STREAM};
use fastfeed_codec::{DecodeOptions, ErrorKind};

generated!(MfastComplex, fastfeed_generated::mfast_complex);
generated!(Moex, fastfeed_generated::moex);
generated!(Fpl, fastfeed_generated::openfast_fpl);
generated!(SimSimple, fastfeed_generated::sim_simple);

fn strict() -> DecodeOptions {
    DecodeOptions {
        strict: true,
        ..Default::default()
    }
}

/// Tight limits, so the length checks fire too.
fn tight() -> DecodeOptions {
    DecodeOptions {
        strict: false,
        max_sequence_len: 2,
        max_string_len: 3,
        max_depth: 1,
    }
}

const LAYOUTS: [Layout; 3] = [
    STREAM,
    Layout {
        opts: strict,
        ..STREAM
    },
    Layout {
        opts: tight,
        ..STREAM
    },
];

/// Every cut and a few byte values at every position of `bytes`, through `check`.
fn damage(bytes: &[u8], mut check: impl FnMut(&[u8])) {
    for cut in 0..bytes.len() {
        check(&bytes[..cut]);
    }
    for i in 0..bytes.len() {
        for v in [
            0x00,
            0x7f,
            0x80,
            0xff,
            bytes[i] ^ 0x80,
            bytes[i] ^ 0x40,
            bytes[i] ^ 0x01,
        ] {
            let mut b = bytes.to_vec();
            b[i] = v;
            check(&b);
        }
    }
}

#[test]
fn mfast_messages_damaged() {
    let data = shared_bytes("corpus/mfast-complex/complex30000.dat");
    let packets = len32le(&data);
    let mut errors = 0;
    // A Done, MarketData messages of 2 and 3 entries, and a QuoteRequest.
    let qr = packets
        .iter()
        .position(|p| p[1] == 0x82)
        .expect("a QuoteRequest");
    for p in [0, 1, 2, qr, packets.len() - 1] {
        damage(packets[p], |b| {
            for l in LAYOUTS {
                let out = agree::<MfastComplex>(&[b], l, false);
                errors += out.iter().filter(|o| o.is_err()).count();
            }
        });
    }
    assert!(errors > 1000, "damage found errors: {errors}");
}

#[test]
fn moex_stream_damaged() {
    let data = shared_bytes("corpus/moex-forts-2013/increment_a.dat");
    // The first messages of the stream, dictionaries running from one to the next.
    let bytes = &data[..400];
    let mut errors = 0;
    damage(bytes, |b| {
        for l in LAYOUTS {
            let out = agree::<Moex>(&[b], l, false);
            errors += out.iter().filter(|o| o.is_err()).count();
        }
    });
    assert!(errors > 1000, "damage found errors: {errors}");
    let snapshot = shared_bytes("corpus/moex-forts-2013/snapshot.dat");
    damage(&snapshot[..300], |b| {
        agree::<Moex>(&[b], STREAM, false);
    });
}

/// Found by the `generated` fuzz target: a MOEX message whose MDEntryDate delta (a nullable
/// int64 on the wire) is the nullable maximum, 2^63, behind 91 zero bytes. Strict, that is
/// R6 (overlong) for the generated decoder and, since the fix, for the interpreter too (it
/// took the value and then failed the sum with DeltaOverflow); lenient, both fail the sum.
#[test]
fn overlong_nullable_maximum_as_a_delta() {
    let mut b = hex("c0f8e0ca1d3ba723611b32190e30b584d881b017551cc721fe0d66e486838081011afb8d");
    b.extend([0; 91]);
    b.push(0x01);
    b.extend([0; 8]);
    b.push(0x80);
    let kinds = last_errors(&b);
    assert_eq!(kinds[0], ErrorKind::DeltaOverflow);
    assert_eq!(kinds[1], ErrorKind::OverlongInteger);
}

/// The fuzzer again, after the fix above: a snapshot's MDEntrySize delta past 128 bits behind
/// three zero bytes. The 128-bit read saturated before its R6 check, so the generated decoder
/// said DeltaOverflow where the interpreter (its nullable read now checking R6 first) said
/// OverlongInteger. Strict, R6 now comes before the range in every integer read.
#[test]
fn overlong_delta_past_128_bits() {
    // The fuzzer's stream as it found it; the delta starts at byte 31.
    let b = hex(concat!(
        "c0f8e0cb903ba7b1230028ffff01c0f8e0ca1d3b79a76361034b9e8c83818700",
        "00003d0000000000000000000000000000000000000000000000000000ffffff",
        "ffffff0042fe0d1cc794fe0d6083810d003f000764ffff3bffff26ffff02e852",
        "525252ca1d3ba72361034b9e8a838187ffffffffffff0042e0ca525b52525252",
        "5252525252d3",
    ));
    assert_eq!(last_errors(&b)[1], ErrorKind::OverlongInteger);
}

/// The error that ends a MOEX stream, in each layout, both decoders agreeing on it.
fn last_errors(b: &[u8]) -> Vec<ErrorKind> {
    LAYOUTS
        .iter()
        .map(|&l| {
            agree::<Moex>(&[b], l, false)
                .pop()
                .unwrap()
                .unwrap_err()
                .kind
        })
        .collect()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn fpl_sample_damaged() {
    let data = shared_bytes("corpus/openfast-fpl/messages.fast");
    damage(&data, |b| {
        for l in LAYOUTS {
            agree::<Fpl>(&[b], l, false);
        }
    });
}

/// The simulator's simple data, whose messages are read with the stop-bit mask
/// (`fp::Stops`); the cuts put the end of the input at every byte of the mask's window.
#[test]
fn simple_packet_damaged() {
    let cfg = fastfeed_sim::GenConfig {
        count: 200,
        ..fastfeed_sim::GenConfig::for_kind(fastfeed_sim::Kind::Simple)
    };
    let packets = fastfeed_sim::generate(&cfg).unwrap().packets;
    let p = &packets[1][fastfeed_sim::PACKET_HEADER_LEN..];
    let mut errors = 0;
    damage(&p[..200], |b| {
        for l in LAYOUTS {
            let out = agree::<SimSimple>(&[b], l, false);
            errors += out.iter().filter(|o| o.is_err()).count();
        }
    });
    assert!(errors > 1000, "damage found errors: {errors}");
}
