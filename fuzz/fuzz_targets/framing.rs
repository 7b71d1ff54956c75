//! The packet framing readers (in memory and streaming) and the per-packet decode loop on
//! arbitrary files.
#![no_main]

use std::sync::{Arc, OnceLock};

use fastfeed_codec::{Decoder, Templates};
use fastfeed_packet::{
    block_packets, len32le_packets, Framing, FramingError, PacketDecoder, PacketOptions,
    PacketReader, StreamError,
};
use libfuzzer_sys::fuzz_target;

fn templates() -> &'static Arc<Templates> {
    static T: OnceLock<Arc<Templates>> = OnceLock::new();
    T.get_or_init(|| {
        fastfeed_codec::parse_templates(include_str!("../../crates/sim/templates/complex.xml"))
            .unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    for framing in [Framing::Raw, Framing::Len32Le, Framing::Block] {
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
    streamed(data);
});

/// The streaming packet reader: `len32le` and blocks give the packets the in-memory reader
/// gives up to the first error (past blocks of size zero, which both pass over); a raw
/// stream's packets lie end to end within the input.
fn streamed(data: &[u8]) {
    let mut r = PacketReader::len32le(data).max_packet(1 << 12);
    for want in len32le_packets(data) {
        match (want, r.next_packet()) {
            (Ok(w), Ok(Some(g))) => assert_eq!(w, g),
            (_, Ok(Some(g))) => panic!("a packet the in-memory reader refused: {g:?}"),
            _ => break,
        }
    }
    let mut r = PacketReader::block(data).max_packet(1 << 12);
    for want in block_packets(data) {
        match (want, r.next_packet()) {
            (Ok(w), Ok(Some(g))) => assert_eq!(w, g),
            (
                Err(w @ FramingError::ZeroBlock { .. }),
                Err(StreamError::Framing(g @ FramingError::ZeroBlock { .. })),
            ) => assert_eq!(w, g),
            (_, Ok(Some(g))) => panic!("a block the in-memory reader refused: {g:?}"),
            _ => break,
        }
    }
    let mut r = PacketReader::raw(data, Decoder::new(templates().clone()))
        .raw_window(64)
        .max_packet(1 << 12);
    let mut end = 0;
    while let Ok(Some(p)) = r.next_packet() {
        assert_eq!(p.offset, end);
        end += p.bytes.len();
        assert_eq!(p.bytes, &data[p.offset..end]);
    }
    assert!(r.position() <= data.len());
}
