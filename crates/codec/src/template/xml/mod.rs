//! Template XML (spec Appendix 1) to compiled [`Templates`]. One walk over the DOM: static
//! template references are inlined as they are met, dictionary keys become slot indices. The
//! templates and instructions are compiled in `compiler.rs`, their fields in `fields.rs`.

use roxmltree::Document;

use super::model::*;
use crate::error::{SpecCode, TemplateError};

mod compiler;
mod fields;

use compiler::{mark_typed_entries, Compiler};

const FAST_NS: &str = "http://www.fixprotocol.org/ns/fast/td/1.1";
/// FAST 1.0's template namespace, which the 1.1 specification's own example in §4 still uses
/// (and so do template files written from it): the same elements, read as FAST's.
const FAST_NS_1_0: &str = "http://www.fixprotocol.org/ns/template-definition";

/// Whether elements in namespace `ns` are FAST template elements (no namespace counts).
/// Exchanges' published files also spell FAST 1.1's URI in other cases, or with another host
/// (the Shanghai Stock Exchange's `http://www.FIXprotocal.org/ns/FAST/td/1.1`), and other
/// decoders (mFAST, QuickFAST) read them: a URI whose path is FAST's, in any case, is FAST's.
fn is_fast_ns(ns: Option<&str>) -> bool {
    const PATH: &str = "/ns/fast/td/1.1";
    match ns {
        None | Some("") | Some(FAST_NS) | Some(FAST_NS_1_0) => true,
        Some(u) => {
            u.len() >= PATH.len() && {
                let tail = &u.as_bytes()[u.len() - PATH.len()..];
                tail.eq_ignore_ascii_case(PATH.as_bytes())
            }
        }
    }
}
/// Hostile-input guards: template files of real exchanges are well under these.
const MAX_XML_BYTES: usize = 16 << 20;
const MAX_INSTRUCTIONS: usize = 200_000;
const MAX_NESTING: usize = 64;
/// XML nodes (elements, attributes' owners, text) a template document may have: a 16 MiB file
/// of short elements stays well under it; entity expansion cannot go past it.
const MAX_XML_NODES: u32 = 1 << 22;

/// How template documents are read.
#[derive(Debug, Clone, Copy)]
pub struct ParseOptions {
    /// Know the FAST Session Control Protocol 1.1 messages (Reset 120, Hello 16002, Alert
    /// 16003) without the template file; the file's own template of an id wins. On by
    /// default.
    pub session_control: bool,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            session_control: true,
        }
    }
}

/// Parses and compiles a template document; the first error found, if any (for a document
/// whose templates must all be sound; [`check`] keeps the templates without errors).
pub fn parse(xml: &str) -> Result<Templates, TemplateError> {
    parse_with(xml, ParseOptions::default())
}

/// [`parse`] with options.
pub fn parse_with(xml: &str, opts: ParseOptions) -> Result<Templates, TemplateError> {
    let checked = check_with(xml, opts);
    match checked.errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(checked.templates),
    }
}

/// What [`check`] found in a template document.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The templates compiled without error. A static error discards its own template, not
    /// the others (spec §4), nor a template that refers to it statically; a document that
    /// is not well-formed XML gives none.
    pub templates: Templates,
    /// Every error, in document order: each template is checked whatever the ones before
    /// it held (an error stops the check of its own template only).
    pub errors: Vec<TemplateError>,
    /// The templates with an id that the errors discarded, in document order.
    pub discarded: Vec<Discarded>,
    /// What is not an error but explains a file that yields fewer or other templates than
    /// it seems to hold: a template without an id (usable only through a static
    /// reference), an element outside the FAST namespace, a name two templates share.
    pub notes: Vec<Note>,
}

/// A template that a static error left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discarded {
    pub name: String,
    /// Its id, where it has a numeric one.
    pub id: Option<u32>,
}

/// Something [`check`] says about an element, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub line: u32,
    pub column: u32,
    pub why: String,
}

/// Parses and compiles a template document, collecting every error.
pub fn check(xml: &str) -> Checked {
    check_with(xml, ParseOptions::default())
}

/// [`check`] with options.
pub fn check_with(xml: &str, parse_opts: ParseOptions) -> Checked {
    let fail = |e| Checked {
        templates: Templates::new(Vec::new(), 0),
        errors: vec![e],
        discarded: Vec::new(),
        notes: Vec::new(),
    };
    if xml.len() > MAX_XML_BYTES {
        return fail(TemplateError {
            code: SpecCode::S1,
            message: format!("template file is larger than {MAX_XML_BYTES} bytes"),
            line: 1,
            column: 1,
        });
    }
    // A document type declaration (`<!DOCTYPE templates SYSTEM "fast.dtd">`, which tools
    // that validate write) is allowed: roxmltree reads no external DTD, refuses recursive
    // entities and stops a billion-laughs expansion, and the node limit bounds the rest.
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        nodes_limit: MAX_XML_NODES,
    };
    let doc = match Document::parse_with_options(xml, opts) {
        Ok(d) => d,
        Err(e) => {
            return fail(TemplateError {
                code: SpecCode::S1,
                message: format!("not well-formed XML: {e}"),
                line: e.pos().row,
                column: e.pos().col,
            })
        }
    };
    let mut c = Compiler::new(&doc);
    let mut list = c.run();
    // Entries that fields of different types share take the general path, which checks
    // the entry's type on every read.
    let shared: Vec<bool> = c.slot_types.iter().map(|&(_, mixed)| mixed).collect();
    if shared.contains(&true) {
        for t in &mut list {
            mark_typed_entries(&mut t.body, &shared);
        }
    }
    if parse_opts.session_control {
        super::session::add_missing(&mut list);
    }
    let slot_count = c.slots.len();
    let mut errors = c.errors;
    // A template used by static references reports its error at each use: once is enough.
    let mut seen = std::collections::HashSet::new();
    errors.retain(|e| seen.insert((e.line, e.column, e.message.clone())));
    Checked {
        templates: Templates::new(list, slot_count),
        errors,
        discarded: c.discarded,
        notes: c.notes,
    }
}
