//! Templates: parsed from XML and compiled into the flat program the codec walks.

mod code;
mod model;
mod xml;

pub(crate) use code::*;
pub use model::*;
pub use xml::parse;
