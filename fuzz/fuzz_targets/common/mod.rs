//! The template sets the fuzz targets pick from by an input byte: every corpus and simulator
//! set, and the conformance set with every operator on every type.

use std::sync::{Arc, OnceLock};

use fastfeed_codec::Templates;

const SETS: [&str; 10] = [
    include_str!("../../../../shared/corpus/mfast-complex/example.xml"),
    include_str!("../../../../shared/corpus/moex-forts-2013/templates.xml"),
    include_str!("../../../../shared/corpus/openfast-fpl/FASTTestTemplate.xml"),
    include_str!("../../../../shared/corpus/openfast-fpl/mdIncrementalRefreshTemplate.xml"),
    include_str!("../../../../shared/corpus/openfast-acceptance/templates.xml"),
    include_str!("../../../../shared/corpus/seed-templates/ComplexTemplates.xml"),
    include_str!("../../../crates/sim/templates/simple.xml"),
    include_str!("../../../crates/sim/templates/complex.xml"),
    include_str!("../../../../shared/corpus/seed-templates/SimpleTemplates.xml"),
    include_str!("../../../crates/generated/templates/conformance/all.xml"),
];

/// The set input byte `pick` chooses, parsed once.
pub fn set(pick: u8) -> &'static Arc<Templates> {
    static S: OnceLock<Vec<Arc<Templates>>> = OnceLock::new();
    let sets = S.get_or_init(|| {
        SETS.iter()
            .map(|x| fastfeed_codec::parse_templates(x).expect("corpus templates parse"))
            .collect()
    });
    &sets[pick as usize % sets.len()]
}
