//! Decoders and encoders generated at build time by `fastfeed-codegen` (see `build.rs`), one
//! module per template set: the simulator's, and those of the third-party corpus (their
//! licences beside them in `templates/`). Each module has a struct per template, sequence
//! and group, `Message`, `Messages`, `Decoder`, `Encoder` and `TEMPLATES_XML`.
//!
//! ```
//! use fastfeed_generated::mfast_complex::{Decoder, MessageKind, Messages};
//! // A MarketData message: presence map, template id 1, three sequence... (see the tests).
//! let mut dec = Decoder::new();
//! let mut out = Messages::default();
//! let err = dec.decode(&[0xc0, 0x81], &mut out).unwrap_err();
//! assert_eq!(err.kind, fastfeed_codec::ErrorKind::Truncated);
//! # let _ = MessageKind::MarketData;
//! ```

macro_rules! generated {
    ($($(#[$doc:meta])* $name:ident,)*) => {$(
        $(#[$doc])*
        pub mod $name {
            include!(concat!(env!("OUT_DIR"), "/", stringify!($name), ".rs"));
        }
    )*};
}

generated! {
    /// mFAST's benchmark templates (`example.xml`, for `complex30000.dat`).
    mfast_complex,
    /// The Moscow Exchange FORTS templates of 2013.
    moex,
    /// The FIX Trading Community's FAST sample (OpenFAST).
    openfast_fpl,
    /// The seed paper's simple (ARCA-like) templates.
    seed_simple,
    /// The seed paper's complex (CME-like) templates.
    seed_complex,
    /// Every field type, presence and operator (a test template set).
    all_ops,
    /// The simulator's simple data set.
    sim_simple,
    /// The simulator's complex data set.
    sim_complex,
    /// The simulator's OPRA-like data set.
    sim_opra,
}

/// A generated decoder behind one interface, for tools that pick one for a template file at
/// run time (`fastfeed bench --generated`): decodes whole packets into one reused
/// [`Messages`](mfast_complex::Messages) value.
pub trait PacketDecoder<'d> {
    /// Decodes every message of `packet` after `skip` header bytes (resetting the
    /// dictionaries first if `reset`); returns how many there were.
    fn decode_packet(
        &mut self,
        packet: &'d [u8],
        skip: usize,
        reset: bool,
    ) -> Result<u64, fastfeed_codec::CodecError>;
}

macro_rules! sets {
    ($($name:ident,)*) => {
        /// The generated modules by name, with their template XML.
        pub const SETS: &[(&str, &str)] = &[$((stringify!($name), $name::TEMPLATES_XML),)*];

        /// The generated decoder of the module generated from exactly this template XML.
        pub fn decoder_for<'d>(xml: &str) -> Option<Box<dyn PacketDecoder<'d> + Send + 'd>> {
            $(
                if xml == $name::TEMPLATES_XML {
                    return Some(Box::new(($name::Decoder::new(), $name::Messages::default())));
                }
            )*
            None
        }

        $(
            impl<'d> PacketDecoder<'d> for ($name::Decoder, $name::Messages<'d>) {
                fn decode_packet(
                    &mut self,
                    packet: &'d [u8],
                    skip: usize,
                    reset: bool,
                ) -> Result<u64, fastfeed_codec::CodecError> {
                    if reset {
                        self.0.reset();
                    }
                    let body = &packet[skip.min(packet.len())..];
                    let n = self.0.decode_each(body, &mut self.1, |_, _, _| {})?;
                    Ok(n as u64)
                }
            }
        )*
    };
}

sets! {
    mfast_complex, moex, openfast_fpl, seed_simple, seed_complex,
    all_ops, sim_simple, sim_complex, sim_opra,
}
