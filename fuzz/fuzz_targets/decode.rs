//! The decoder on outside bytes, with every template set of the corpus and the simulator and
//! the conformance set (see `common`): the first input byte picks the set, the rest is a
//! stream decoded message by message, in strict and lenient mode. Must never panic, hang or
//! allocate without bound.
#![no_main]

mod common;

use fastfeed_codec::{DecodeOptions, Decoder, MessageBuilder};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let ts = common::set(pick);
    for strict in [false, true] {
        let mut dec = Decoder::with_options(
            ts.clone(),
            DecodeOptions {
                strict,
                ..Default::default()
            },
        );
        let mut b = MessageBuilder::new();
        let mut pos = 0;
        while pos < bytes.len() {
            match dec.decode(&bytes[pos..], &mut b) {
                Ok(n) => {
                    assert!(n > 0 && pos + n <= bytes.len());
                    pos += n;
                }
                Err(e) => {
                    assert!(
                        e.offset <= bytes.len() - pos,
                        "error offset inside the input"
                    );
                    break;
                }
            }
        }
    }
});
