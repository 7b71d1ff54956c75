//! fastfeed-codec: a FAST 1.1 codec (FIX Adapted for STreaming). Templates come from XML
//! ([`template::parse`]); a [`Decoder`] turns bytes into fields for a [`Handler`] or into an
//! owned [`Message`]; an [`Encoder`] turns messages back into the shortest encoding.
//! No I/O: framing, sockets and files belong to other crates.

mod decode;
mod dictionary;
mod encode;
mod error;
mod groups;
mod handler;
pub mod primitives;
pub mod template;
#[cfg(test)]
mod test_rng;
mod value;
mod wire;

pub use decode::{DecodeOptions, Decoder};
pub use encode::Encoder;
pub use error::{CodecError, ErrorKind, SpecCode, TemplateError};
pub use groups::fast_pext;
pub use handler::{FieldValue, Handler, MessageBuilder};
pub use template::{Template, Templates};
pub use value::{Decimal, Fields, Message, Value};

/// Parses template XML into shareable compiled templates.
pub fn parse_templates(xml: &str) -> Result<std::sync::Arc<Templates>, TemplateError> {
    template::parse(xml).map(std::sync::Arc::new)
}
