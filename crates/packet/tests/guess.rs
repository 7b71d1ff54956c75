//! The packet header guessed from the first packets: the corpus's packets behind headers of
//! several lengths.

use fastfeed_codec::DecodeOptions;
use fastfeed_packet::{guess_header, len32le_packets, PacketOptions};

fn corpus(path: &str) -> Vec<u8> {
    let p = format!(
        "{}/../../../shared/corpus/{path}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn the_header_in_front_of_the_messages_is_found() {
    let xml = String::from_utf8(corpus("mfast-complex/example.xml")).unwrap();
    let ts = fastfeed_codec::parse_templates(&xml).unwrap();
    let framed = corpus("mfast-complex/complex30000.dat");
    let bodies: Vec<&[u8]> = len32le_packets(&framed)
        .take(32)
        .map(|p| p.unwrap().bytes)
        .collect();
    let opts = DecodeOptions::default();
    for header in [0usize, 3, 7, 12, 16] {
        let packets: Vec<Vec<u8>> = bodies
            .iter()
            .enumerate()
            .map(|(i, b)| [&(i as u128 * 0x0101_0101).to_le_bytes()[..header], b].concat())
            .collect();
        let packets: Vec<&[u8]> = packets.iter().map(Vec::as_slice).collect();
        let none = PacketOptions::default();
        let g = guess_header(&ts, &packets, none, &opts);
        if header == 0 {
            // The options given already decode every packet: nothing better to say.
            assert_eq!(g, None);
            continue;
        }
        let g = g.unwrap_or_else(|| panic!("header {header}: no guess"));
        assert_eq!(g.options.skip_header, header);
        assert!(g.options.reset_each_packet);
        assert_eq!((g.whole, g.tried), (32, 32));
        assert!(g.to_string().starts_with(&format!(
            "--skip-header {header} --reset-each-packet (32 of 32"
        )));
        // Given the right options, there is nothing to add.
        let right = PacketOptions {
            skip_header: header,
            reset_each_packet: true,
        };
        assert_eq!(guess_header(&ts, &packets, right, &opts), None);
    }
    // One packet says nothing.
    assert_eq!(
        guess_header(&ts, &bodies[..1], PacketOptions::default(), &opts),
        None
    );
}
