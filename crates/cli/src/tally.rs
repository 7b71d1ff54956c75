//! Per-template statistics (messages, bytes, errors), printed at the end of `decode` and
//! `bench`, so a user sees what a file holds and where its errors are.

use std::collections::BTreeMap;
use std::io::Write;

use fastfeed_codec::{CodecError, ErrorKind, Templates};

/// Which template a row counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    /// A template of the file.
    Known(u32),
    /// An id the data uses and the template file lacks.
    Unknown(u32),
    /// An error before any template id was read.
    NoTemplate,
}

#[derive(Debug, Clone, Copy, Default)]
struct Row {
    messages: u64,
    bytes: u64,
    errors: u64,
}

/// Counts per template.
#[derive(Debug, Default)]
pub struct Tally {
    rows: BTreeMap<Key, Row>,
}

impl Tally {
    pub fn message(&mut self, template_id: u32, bytes: usize) {
        let row = self.rows.entry(Key::Known(template_id)).or_default();
        row.messages += 1;
        row.bytes += bytes as u64;
    }

    /// An error, counted against the template it happened in.
    pub fn error(&mut self, e: &CodecError, templates: &Templates) {
        let key = match (&e.kind, &e.template) {
            (ErrorKind::UnknownTemplate(id), _) => Key::Unknown(*id),
            (_, Some(name)) => templates
                .by_name(name)
                .map_or(Key::NoTemplate, |t| Key::Known(t.id)),
            (_, None) => Key::NoTemplate,
        };
        self.rows.entry(key).or_default().errors += 1;
    }

    /// Template ids the data used that the template file lacks, most frequent first.
    pub fn unknown_ids(&self) -> Vec<u32> {
        let mut v: Vec<(u64, u32)> = self
            .rows
            .iter()
            .filter_map(|(k, r)| match k {
                Key::Unknown(id) => Some((r.errors, *id)),
                _ => None,
            })
            .collect();
        v.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        v.into_iter().map(|(_, id)| id).collect()
    }

    pub fn print(&self, templates: &Templates, out: &mut impl Write) -> std::io::Result<()> {
        writeln!(
            out,
            "{:>10} {:<34} {:>10} {:>12} {:>8}",
            "template", "name", "messages", "bytes", "errors"
        )?;
        for (key, r) in &self.rows {
            let (id, name) = match key {
                Key::Known(id) => (
                    id.to_string(),
                    templates.get(*id).map_or("?", |t| &t.name).to_owned(),
                ),
                Key::Unknown(id) => (id.to_string(), "(not in the template file)".into()),
                Key::NoTemplate => ("-".into(), "(before a template id)".into()),
            };
            writeln!(
                out,
                "{id:>10} {name:<34} {:>10} {:>12} {:>8}",
                r.messages, r.bytes, r.errors
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_by_template_and_unknown_ids() {
        let ts = fastfeed_codec::parse_templates(fastfeed_sim::SIMPLE_TEMPLATES).unwrap();
        let mut t = Tally::default();
        t.message(1, 10);
        t.message(1, 12);
        t.error(&CodecError::new(ErrorKind::UnknownTemplate(7), 0), &ts);
        t.error(&CodecError::new(ErrorKind::UnknownTemplate(9), 0), &ts);
        t.error(&CodecError::new(ErrorKind::UnknownTemplate(9), 0), &ts);
        t.error(&CodecError::new(ErrorKind::Truncated, 3), &ts);
        assert_eq!(t.unknown_ids(), vec![9, 7]);
        let mut out = Vec::new();
        t.print(&ts, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(
            lines[1].contains("Quote") && lines[1].contains(" 2 ") && lines[1].contains(" 22 ")
        );
        assert!(
            lines[3].contains("not in the template file") && lines[3].trim_end().ends_with('2')
        );
        assert!(lines[4].contains("before a template id"));
    }
}
