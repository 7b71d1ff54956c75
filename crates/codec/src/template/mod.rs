//! Templates: parsed from XML and compiled into the flat program the codec walks.

mod model;
mod xml;

pub use model::*;
pub use xml::parse;
