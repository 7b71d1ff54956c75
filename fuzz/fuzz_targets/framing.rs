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
        let mut end = 0;
        for p in framing.packets(data) {
            let p = match p {
                Ok(p) => p,
                Err(e) => {
                    assert!(e.skipped(data.len()) <= data.len());
                    continue;
                }
            };
            total += p.bytes.len();
            assert!(p.offset >= end && p.offset + p.bytes.len() <= data.len());
            end = p.offset + p.bytes.len();
            if let Err(e) = pd.decode_packet(&p, &mut (), |_, _| {}) {
                assert!(e.file_offset <= data.len());
            }
            // Resynchronising: every message and every skip lies inside the packet.
            let mut covered = 0;
            let sum = pd.decode_resync(
                &p,
                &mut (),
                |_, at, len| {
                    assert!(at + len <= p.bytes.len());
                    covered += len;
                },
                |r| {
                    assert!(r.error.file_offset <= data.len());
                    assert!(r.resumed_at.is_none_or(|at| at < end));
                },
            );
            assert!(covered + sum.skipped <= p.bytes.len());
        }
        assert!(total <= data.len());
    }
});
