//! Rust names from template names: snake_case fields, CamelCase types, keywords and clashes
//! avoided.

use std::collections::HashSet;

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use",
    "where", "while", "abstract", "become", "box", "do", "final", "gen", "macro", "override",
    "priv", "try", "typeof", "unsized", "virtual", "yield",
];

/// Words of a name: split at non-alphanumerics and at case changes (`MDEntryPx` -> MD,
/// Entry, Px; `NoMDEntries` -> No, MD, Entries).
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in name.split(|c: char| !c.is_ascii_alphanumeric()) {
        let chars: Vec<char> = part.chars().collect();
        let mut cur = String::new();
        for (i, &c) in chars.iter().enumerate() {
            let prev = i.checked_sub(1).map(|j| chars[j]);
            let next = chars.get(i + 1).copied();
            let boundary = c.is_ascii_uppercase()
                && prev.is_some_and(|p| {
                    p.is_ascii_lowercase()
                        || p.is_ascii_digit()
                        || (p.is_ascii_uppercase() && next.is_some_and(|n| n.is_ascii_lowercase()))
                });
            if boundary && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            cur.push(c);
        }
        if !cur.is_empty() {
            out.push(cur);
        }
    }
    out
}

/// A snake_case identifier for a field.
pub(crate) fn snake(name: &str) -> String {
    let mut s = words(name)
        .iter()
        .map(|w| w.to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join("_");
    if s.is_empty() {
        s = "field".into();
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert_str(0, "f_");
    }
    if KEYWORDS.contains(&s.as_str()) {
        s.push('_');
    }
    s
}

/// A CamelCase identifier for a type.
pub(crate) fn camel(name: &str) -> String {
    let mut s: String = words(name)
        .iter()
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
                None => String::new(),
            }
        })
        .collect();
    if s.is_empty() {
        s = "Unnamed".into();
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, 'T');
    }
    if s == "Self" {
        s.push_str("Type");
    }
    s
}

/// Hands out names unique within one scope: a clash gets a number.
#[derive(Default)]
pub(crate) struct Scope {
    used: HashSet<String>,
}

impl Scope {
    pub fn with(reserved: &[&str]) -> Scope {
        Scope {
            used: reserved.iter().map(|s| s.to_string()).collect(),
        }
    }

    pub fn unique(&mut self, base: String) -> String {
        if self.used.insert(base.clone()) {
            return base;
        }
        let sep = if base.ends_with(|c: char| c.is_ascii_digit()) {
            "_"
        } else {
            ""
        };
        (2..)
            .map(|i| format!("{base}{sep}{i}"))
            .find(|n| self.used.insert(n.clone()))
            .expect("an unused name")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_as_rust() {
        assert_eq!(snake("MDEntries"), "md_entries");
        assert_eq!(snake("NoMDEntries"), "no_md_entries");
        assert_eq!(snake("ApplVerID"), "appl_ver_id");
        assert_eq!(snake("SecurityIDSource"), "security_id_source");
        assert_eq!(snake("MDEntryPx"), "md_entry_px");
        assert_eq!(snake("type"), "type_");
        assert_eq!(snake("Self"), "self_");
        assert_eq!(snake("268"), "f_268");
        assert_eq!(snake("a.b-c"), "a_b_c");
        assert_eq!(snake("..."), "field");
        assert_eq!(camel("MarketData"), "MarketData");
        assert_eq!(camel("market-data.x"), "MarketDataX");
        assert_eq!(camel("MDEntries"), "MDEntries");
        assert_eq!(camel("1x"), "T1x");
        let mut s = Scope::with(&["Message"]);
        assert_eq!(s.unique("Message".into()), "Message2");
        assert_eq!(s.unique("a1".into()), "a1");
        assert_eq!(s.unique("a1".into()), "a1_2");
    }
}
