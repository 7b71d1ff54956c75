//! fastfeed-fix: decoded FAST messages as FIX tag=value and back.
//!
//! Tags come from the templates' `id` attributes; a sequence's count is its `<length>`'s id
//! (the NoXXX tag). A message is written `8=BeginString 9=BodyLength 35=MsgType`, then
//! the template's fields in template order (its own 35 field moves to the header), then
//! `10=CheckSum`. BeginString defaults to `FIXT.1.1`: FIX 5.0 and later messages travel
//! under the FIXT.1.1 session layer, with ApplVerID (1128) naming the application version,
//! which FAST templates for FIX 5.0 feeds carry themselves. The separator is SOH or `|`; the
//! checksum is always that of the SOH form, so swapping `|` for SOH gives a valid message.
//!
//! Values: integers in decimal; decimals as FIX prices, exact (no exponent notation:
//! positive exponents become trailing zeros); strings and byte vectors as they are (one that
//! holds the separator or SOH cannot be written). A present empty string is `tag=`. An
//! optional field that is absent is left out; a present sequence with no elements is
//! `NoXXX=0`. Groups are written flat.
//!
//! MsgType (35) is the template's constant 35 field, or its 35 field's value; a template
//! without one gets `U<template id>` (FIX leaves MsgTypes starting with U to users) unless
//! [`FixOptions::msg_types`] names one. Reading back, the template is the one whose MsgType
//! matches. FAST session control messages (Reset, and empty resetting templates) have no
//! FIX form: they are counted, not written.
//!
//! What a round trip cannot carry, and so where FAST -> FIX -> FAST may differ: a whole
//! number read back as a decimal gets its exponent by the rule of [`FixReader`] (trailing
//! zeros into the exponent unless the template gives the exponent an initial value of zero
//! or more); an optional group whose fields are all absent reads back absent.

mod convert;
mod error;
mod plan;
mod read;
mod report;
mod text;
mod write;

pub use convert::{Converter, Step, StepError, Verified};
pub use error::FixError;
pub use read::FixReader;
pub use report::{ratio, Report, Sizes};
pub use write::{FixWriter, WriteCounts};

/// The FIX field separator.
pub const SOH: u8 = 0x01;

/// The default BeginString (8).
pub const DEFAULT_BEGIN_STRING: &str = "FIXT.1.1";

/// How messages are written and read.
#[derive(Debug, Clone)]
pub struct FixOptions {
    /// BeginString (8).
    pub begin_string: String,
    /// SOH or `|`.
    pub sep: u8,
    /// Leave out fields that have no tag (counted in [`WriteCounts::skipped_fields`])
    /// instead of refusing their template. Such messages no longer read back.
    pub skip_untagged: bool,
    /// MsgType (35) for templates that have no 35 field: (template id, MsgType).
    pub msg_types: Vec<(u32, String)>,
}

impl Default for FixOptions {
    fn default() -> Self {
        FixOptions {
            begin_string: DEFAULT_BEGIN_STRING.to_owned(),
            sep: SOH,
            skip_untagged: false,
            msg_types: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests;
