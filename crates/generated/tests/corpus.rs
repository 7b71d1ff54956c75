//! Every corpus file, and the simulator's data, decodes with the generated code to exactly
//! what the interpreter gives, and the generated encoders give the interpreter's bytes.

mod common;

use common::{agree, len32le, shared_bytes, Layout, STREAM};
use fastfeed_codec::DecodeOptions;

generated!(MfastComplex, fastfeed_generated::mfast_complex);
generated!(Moex, fastfeed_generated::moex);
generated!(Fpl, fastfeed_generated::openfast_fpl);
generated!(SimSimple, fastfeed_generated::sim_simple);
generated!(SimComplex, fastfeed_generated::sim_complex);
generated!(SimOpra, fastfeed_generated::sim_opra);

#[test]
fn mfast_complex30000() {
    let data = shared_bytes("corpus/mfast-complex/complex30000.dat");
    let packets = len32le(&data);
    let out = agree::<MfastComplex>(&packets, STREAM, true);
    assert_eq!(out.len(), 30_001);
    assert!(out.iter().all(Result::is_ok));
}

#[test]
fn moex_feeds() {
    for (file, count) in [
        ("increment_a.dat", 16_202),
        ("increment_b.dat", 16_176),
        ("snapshot.dat", 18_628),
    ] {
        let data = shared_bytes(&format!("corpus/moex-forts-2013/{file}"));
        let out = agree::<Moex>(&[&data], STREAM, true);
        assert!(out.iter().all(Result::is_ok), "{file}");
        assert_eq!(out.len(), count, "{file}");
    }
}

#[test]
fn openfast_fpl_sample() {
    let data = shared_bytes("corpus/openfast-fpl/messages.fast");
    let out = agree::<Fpl>(&[&data], STREAM, true);
    assert_eq!(out.len(), 3);
    assert!(out.iter().all(Result::is_ok));
}

fn simulated(kind: fastfeed_sim::Kind, count: usize) -> Vec<Vec<u8>> {
    let cfg = fastfeed_sim::GenConfig {
        count,
        ..fastfeed_sim::GenConfig::for_kind(kind)
    };
    fastfeed_sim::generate(&cfg).unwrap().packets
}

const SIM: Layout = Layout {
    skip: fastfeed_sim::PACKET_HEADER_LEN,
    reset: true,
    opts: DecodeOptions::default,
};

#[test]
fn simulator_data() {
    let packets = simulated(fastfeed_sim::Kind::Simple, 5_000);
    let refs: Vec<&[u8]> = packets.iter().map(Vec::as_slice).collect();
    let out = agree::<SimSimple>(&refs, SIM, true);
    assert_eq!(out.len(), 5_001);
    let packets = simulated(fastfeed_sim::Kind::Complex, 3_000);
    let refs: Vec<&[u8]> = packets.iter().map(Vec::as_slice).collect();
    let out = agree::<SimComplex>(&refs, SIM, true);
    assert_eq!(out.len(), 3_001);
    let opra = fastfeed_sim::generate_opra(&fastfeed_sim::OpraConfig {
        count: 5_000,
        channels: 4,
        ..Default::default()
    })
    .unwrap();
    let refs: Vec<&[u8]> = opra.packets.iter().map(Vec::as_slice).collect();
    let layout = Layout {
        skip: fastfeed_sim::CHANNEL_HEADER_LEN,
        ..SIM
    };
    let out = agree::<SimOpra>(&refs, layout, true);
    assert_eq!(out.len(), 5_004);
    assert!(out.iter().all(Result::is_ok));
}

/// The module keeps its template file byte for byte (MOEX's has CRLF line ends), so tools can
/// find the generated decoder of a template file by its text.
#[test]
fn templates_xml_is_the_file() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/templates");
    let moex = std::fs::read_to_string(format!("{dir}/moex/templates.xml")).unwrap();
    assert!(moex.contains("\r\n"));
    assert_eq!(fastfeed_generated::moex::TEMPLATES_XML, moex);
    let xml = std::fs::read_to_string(format!("{dir}/mfast/example.xml")).unwrap();
    assert!(fastfeed_generated::decoder_for(&xml).is_some());
    assert!(fastfeed_generated::decoder_for(&(xml + " ")).is_none());
}
