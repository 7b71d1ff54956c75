//! fastfeed-codec: a FAST 1.1 codec (FIX Adapted for STreaming). Templates come from XML
//! ([`template::parse`]); a [`Decoder`] turns bytes into fields for a [`Handler`] or into an
//! owned [`Message`]; an [`Encoder`] turns messages back into the shortest encoding.
//! No I/O: framing, sockets and files belong to other crates.

mod decode;
mod dictionary;
mod encode;
mod error;
mod handler;
pub mod template;
mod value;
mod wire;

pub use decode::{DecodeOptions, Decoder};
pub use encode::Encoder;
pub use error::{CodecError, ErrorKind, SpecCode, TemplateError};
pub use handler::{FieldValue, Handler, MessageBuilder};
pub use template::{Template, Templates};
pub use value::{Decimal, Fields, Message, Value};

/// Parses template XML into shareable compiled templates.
pub fn parse_templates(xml: &str) -> Result<std::sync::Arc<Templates>, TemplateError> {
    template::parse(xml).map(std::sync::Arc::new)
}

/// The transfer-encoding primitives on their own, for benchmarks and fuzzing. Not a stable
/// interface: applications decode whole messages.
#[doc(hidden)]
pub mod primitives {
    use crate::wire::Reader;
    use crate::{CodecError, Decimal};

    fn at<T>(
        buf: &[u8],
        pos: &mut usize,
        f: impl FnOnce(&mut Reader) -> Result<T, Box<CodecError>>,
    ) -> Result<T, CodecError> {
        let mut r = Reader::new(buf, false);
        r.pos = *pos;
        let v = f(&mut r).map_err(|e| *e)?;
        *pos = r.pos;
        Ok(v)
    }

    /// A stop-bit unsigned integer at `*pos`; advances `pos`.
    pub fn u64(buf: &[u8], pos: &mut usize) -> Result<u64, CodecError> {
        at(buf, pos, |r| r.u64())
    }

    /// A stop-bit signed integer.
    pub fn i64(buf: &[u8], pos: &mut usize) -> Result<i64, CodecError> {
        at(buf, pos, |r| r.i64())
    }

    /// A nullable unsigned integer.
    pub fn nullable_u64(buf: &[u8], pos: &mut usize) -> Result<Option<u64>, CodecError> {
        at(buf, pos, |r| r.nullable_u64())
    }

    /// A presence map, then the number of set bits among its first `take` bits, walked
    /// bit by bit as the decoder does.
    pub fn pmap(buf: &[u8], pos: &mut usize, take: u32) -> Result<u32, CodecError> {
        at(buf, pos, |r| {
            let mut p = r.pmap()?;
            Ok((0..take).filter(|_| p.next(buf)).count() as u32)
        })
    }

    /// An ASCII string into `out`; false for NULL.
    pub fn ascii(
        buf: &[u8],
        pos: &mut usize,
        nullable: bool,
        out: &mut Vec<u8>,
    ) -> Result<bool, CodecError> {
        at(buf, pos, |r| crate::decode::read_ascii(r, nullable, out))
    }

    /// A decimal: exponent then mantissa, both stop-bit signed integers.
    pub fn decimal(buf: &[u8], pos: &mut usize) -> Result<Decimal, CodecError> {
        at(buf, pos, |r| {
            let e = r.i64()?;
            Ok(Decimal::new(e as i32, r.i64()?))
        })
    }
}
