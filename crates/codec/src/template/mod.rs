//! Templates: parsed from XML and compiled into the flat program the codec walks.

mod code;
mod model;
mod session;
mod text;
mod xml;

pub(crate) use code::*;
pub use model::*;
pub use session::{ALERT_ID, HELLO_ID, RESET_ID, SCP_NS, SCP_XML};
pub use text::{template_text, TextError};
pub use xml::{check, check_with, parse, parse_with, Checked, Discarded, Note, ParseOptions};
