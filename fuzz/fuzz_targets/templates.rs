//! The template XML parser on arbitrary bytes, read as a template file is (the encoding it
//! names): an error or templates, never a panic. The templates that a file with errors still
//! gives (spec §4: an error discards its own template) must decode as soundly as a clean
//! file's.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(xml) = fastfeed_codec::template::template_text(data) {
        let checked = fastfeed_codec::template::check(&xml);
        let strict = fastfeed_codec::parse_templates(&xml);
        // The strict entry point fails exactly where the check found errors.
        assert_eq!(strict.is_err(), !checked.errors.is_empty());
        // Whatever compiles must also decode without panicking.
        let mut dec = fastfeed_codec::Decoder::new(Arc::new(checked.templates));
        let _ = dec.decode(data, &mut ());
    }
});
