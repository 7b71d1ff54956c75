//! The template XML parser on arbitrary bytes, read as a template file is (the encoding it
//! names): an error or templates, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(xml) = fastfeed_codec::template::template_text(data) {
        if let Ok(ts) = fastfeed_codec::parse_templates(&xml) {
            // Whatever parses must also decode without panicking.
            let mut dec = fastfeed_codec::Decoder::new(ts);
            let _ = dec.decode(data, &mut ());
        }
    }
});
