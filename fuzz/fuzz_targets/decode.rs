//! The decoder on outside bytes, with every template set of the corpus and the simulator:
//! the first input byte picks the set, the rest is a stream decoded message by message, in
//! strict and lenient mode. Must never panic, hang or allocate without bound.
#![no_main]

use std::sync::{Arc, OnceLock};

use fastfeed_codec::{DecodeOptions, Decoder, MessageBuilder, Templates};
use libfuzzer_sys::fuzz_target;

const SETS: [&str; 9] = [
    include_str!("../../../shared/corpus/mfast-complex/example.xml"),
    include_str!("../../../shared/corpus/moex-forts-2013/templates.xml"),
    include_str!("../../../shared/corpus/openfast-fpl/FASTTestTemplate.xml"),
    include_str!("../../../shared/corpus/openfast-fpl/mdIncrementalRefreshTemplate.xml"),
    include_str!("../../../shared/corpus/openfast-acceptance/templates.xml"),
    include_str!("../../../shared/corpus/seed-templates/ComplexTemplates.xml"),
    include_str!("../../crates/sim/templates/simple.xml"),
    include_str!("../../crates/sim/templates/complex.xml"),
    include_str!("../../../shared/corpus/seed-templates/SimpleTemplates.xml"),
];

fn sets() -> &'static Vec<Arc<Templates>> {
    static S: OnceLock<Vec<Arc<Templates>>> = OnceLock::new();
    S.get_or_init(|| {
        SETS.iter()
            .map(|x| fastfeed_codec::parse_templates(x).expect("corpus templates parse"))
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let ts = &sets()[pick as usize % SETS.len()];
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
