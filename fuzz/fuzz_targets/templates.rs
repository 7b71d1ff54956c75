//! The template XML parser on arbitrary text: an error or templates, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(xml) = std::str::from_utf8(data) {
        if let Ok(ts) = fastfeed_codec::parse_templates(xml) {
            // Whatever parses must also decode without panicking.
            let mut dec = fastfeed_codec::Decoder::new(ts);
            let _ = dec.decode(data, &mut ());
        }
    }
});
