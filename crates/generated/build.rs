//! Generates a decoder and encoder for each template set, as any user of fastfeed-codegen
//! would from a build script.

fn main() {
    let sets = [
        ("templates/mfast/example.xml", "mfast_complex"),
        ("templates/moex/templates.xml", "moex"),
        (
            "templates/openfast-fpl/FASTTestTemplate.xml",
            "openfast_fpl",
        ),
        ("templates/seed/SimpleTemplates.xml", "seed_simple"),
        ("templates/seed/ComplexTemplates.xml", "seed_complex"),
        ("../sim/templates/simple.xml", "sim_simple"),
        ("templates/conformance/all.xml", "all_ops"),
        ("../sim/templates/complex.xml", "sim_complex"),
        ("../sim/templates/opra.xml", "sim_opra"),
    ];
    let b = fastfeed_codegen::Builder::new();
    for (path, name) in sets {
        if let Err(e) = b.compile_as(path, name) {
            panic!("{path}: {e}");
        }
    }
}
