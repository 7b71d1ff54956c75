//! Captures read two ways on arbitrary files: held whole (`Capture`) and streamed a run of
//! records at a time (`Len32Payloads`, the run size from the first byte). Neither panics,
//! both hand out the same payloads and the same counts, and the counts account for every
//! frame and every fragment.
#![no_main]

use std::io::Read;

use fastfeed_capture::{Capture, Len32Payloads};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&run, data)) = input.split_first() else {
        return;
    };
    let whole = Capture::open(data).ok().map(|c| {
        let mut it = c.datagrams();
        let mut out = Vec::new();
        for d in it.by_ref() {
            out.extend((d.payload.len() as u32).to_le_bytes());
            out.extend_from_slice(&d.payload);
        }
        let s = it.stats();
        let whole = s.datagrams - s.reassembled;
        let skipped = s.truncated + s.fragments + s.not_udp + s.bad_frames + s.unsupported_link;
        assert_eq!(s.frames, whole + skipped, "{s:?}");
        // Each datagram put together took two fragments at least; the rest were lost.
        assert!(2 * s.reassembled + s.fragments_lost <= s.fragments, "{s:?}");
        (out, s)
    });
    let streamed = Len32Payloads::new(data, None).ok().map(|p| {
        let p = p.run_bytes(1 + run as usize * 16);
        let stats = p.stats();
        let mut out = Vec::new();
        { p }.read_to_end(&mut out).expect("reading from memory");
        let s = *stats.lock().unwrap();
        assert!(s.bytes as usize <= data.len());
        (out, s.capture)
    });
    match (&whole, &streamed) {
        (Some(w), Some(s)) => {
            // The streaming reader refuses a record over its size limit where the whole-file
            // reader may read on: only then may they part, and only after the same prefix.
            if w != s {
                assert!(s.1.damaged_at.is_some(), "{w:?} / {s:?}");
                assert!(w.0.starts_with(&s.0));
            }
        }
        (None, None) => {}
        _ => panic!("one reader refused the header: {whole:?} / {streamed:?}"),
    }
});
