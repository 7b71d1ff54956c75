//! The packet framing readers and the per-packet decode loop on arbitrary files.
#![no_main]

use std::sync::{Arc, OnceLock};

use fastfeed_codec::{Decoder, Templates};
use fastfeed_packet::{Framing, PacketDecoder, PacketOptions};
use libfuzzer_sys::fuzz_target;

fn templates() -> &'static Arc<Templates> {
    static T: OnceLock<Arc<Templates>> = OnceLock::new();
    T.get_or_init(|| {
        fastfeed_codec::parse_templates(include_str!("../../crates/sim/templates/complex.xml"))
            .unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    for framing in [Framing::Raw, Framing::Len32Le] {
        let mut pd = PacketDecoder::new(
            Decoder::new(templates().clone()),
            PacketOptions {
                skip_header: 4,
                reset_each_packet: true,
            },
        );
        let mut total = 0;
        for p in framing.packets(data) {
            let Ok(p) = p else { break };
            total += p.bytes.len();
            assert!(p.offset + p.bytes.len() <= data.len());
            if let Err(e) = pd.decode_packet(&p, &mut (), |_, _| {}) {
                assert!(e.file_offset <= data.len());
            }
        }
        assert!(total <= data.len());
    }
});
