//! fastfeed-records: the paper's IDL structs as plain `#[repr(C)]` Rust records, and a
//! [`Converter`] that builds them straight from the FAST decoder's callbacks.
//!
//! Records are `Copy`, hold no pointers and keep strings in fixed arrays ([`Str`]); they have
//! no implicit padding, so their bytes are a fixed little-endian wire layout, documented in
//! `LAYOUT.md` beside this crate, that crosses any bus without serialization. Simple feeds give one record per message
//! ([`Quote`], [`New`], [`Change`], [`Remove`]); complex feeds are split per security, as in
//! the paper: one [`MarketData`] or [`QuoteRequest`] record for each security of a message.
//! The OPRA-like feed gives one [`OptionQuote`] or [`OptionTrade`] per message, keyed by series.

mod convert;
pub mod feed;
mod json;
#[cfg(test)]
mod layout;
mod map;
mod option;
mod records;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_option;

pub use convert::{ConvertStats, Converter};
pub use option::{OptionQuote, OptionTrade};
pub use records::{
    Change, Dec, MarketData, MdEntry, New, Quote, QuoteRequest, Record, RecordType, RelatedSym,
    Remove, Str, MD_MAX_ENTRIES, QR_MAX_ENTRIES,
};
