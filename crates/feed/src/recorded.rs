//! The configuration of a recording: the feed's own configuration with every line's capture
//! pointed at the pcap its channel was recorded to, so that the recording is handled or
//! replayed with one command (`handle --record DIR` writes it as `DIR/feed.toml`).

use std::path::{Path, PathBuf};

use toml::{Table, Value};

use crate::config::{ConfigError, FeedConfig};

/// `text`, a feed's configuration read from a file in `base`, with each channel's lines
/// taking their datagrams from `recording(channel)` (a pcap, or its parts in order: each
/// line picks its group's datagrams) and every path made absolute, so that the result may
/// live anywhere. What is not a path or a capture is kept as it was; the comments are not.
pub fn recorded_config(
    text: &str,
    base: &Path,
    recording: impl Fn(&str) -> Vec<PathBuf>,
) -> Result<String, ConfigError> {
    // Checked as a configuration first: a file that `handle` would refuse gets its error.
    FeedConfig::parse(text, base)?;
    let mut doc: Table = toml::from_str(text).map_err(|e| ConfigError::Parse {
        path: PathBuf::new(),
        message: e.to_string(),
    })?;
    absolute(&mut doc, "templates", base);
    let channels = doc.get_mut("channel").and_then(Value::as_array_mut);
    for ch in channels
        .into_iter()
        .flatten()
        .filter_map(Value::as_table_mut)
    {
        absolute(ch, "templates", base);
        let name = ch.get("name").and_then(Value::as_str).unwrap_or_default();
        let parts = recording(name);
        let path = |p: &PathBuf| Value::from(p.to_string_lossy().into_owned());
        let (first, continued) = match parts.split_first() {
            Some((first, rest)) => (path(first), rest.iter().map(path).collect::<Vec<_>>()),
            None => continue,
        };
        for line in ["a", "b", "snapshot"] {
            let Some(line) = ch.get_mut(line).and_then(Value::as_table_mut) else {
                continue;
            };
            line.insert("capture".into(), first.clone());
            match &continued {
                c if c.is_empty() => line.remove("continued"),
                c => line.insert("continued".into(), Value::Array(c.clone())),
            };
            line.insert("format".into(), "pcap".into());
            // The recording's frames go to the line's group, whatever the capture used.
            line.remove("udp");
        }
    }
    toml::to_string(&doc).map_err(|e| ConfigError::Invalid {
        path: PathBuf::new(),
        message: e.to_string(),
    })
}

/// `table[key]`, a path relative to `base`, made absolute.
fn absolute(table: &mut Table, key: &str, base: &Path) {
    if let Some(Value::String(p)) = table.get_mut(key) {
        let path = Path::new(p.as_str());
        if path.is_relative() {
            let joined = base.join(path);
            // Without `..` where the file is there to resolve it.
            *p = (joined
                .canonicalize()
                .or_else(|_| std::path::absolute(&joined)))
            .unwrap_or(joined)
            .to_string_lossy()
            .into_owned();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CaptureFormat;

    const FEED: &str = r#"
feed = "moex"
profile = "moex-forts"
templates = "templates.xml"

[[channel]]
name = "FUT-BOOK-5"
gap_timeout_ms = 20
a = { group = "239.195.1.40:16040", capture = "increment_a.dat", format = "raw" }
b = { group = "239.195.1.168:16168", source = "10.0.0.9", capture = "b.pcap", udp = "10.1.1.1:9" }

[[channel]]
name = "OPT/BOOK"
templates = "/abs/opt.xml"
a = { group = "239.195.1.50:16050" }
snapshot = { group = "239.195.1.51:16051", capture = "snap.dat" }
"#;

    #[test]
    fn every_line_takes_its_channels_recording_and_paths_stay_true() {
        let text = recorded_config(FEED, Path::new("/cfg"), |c| match c {
            "OPT/BOOK" => ["", ".2", ".3"]
                .map(|n| PathBuf::from(format!("/rec/OPT_BOOK{n}.pcap")))
                .to_vec(),
            _ => vec![PathBuf::from(format!("/rec/{c}.pcap"))],
        })
        .unwrap();
        let c = FeedConfig::parse(&text, Path::new("/elsewhere")).unwrap();
        assert_eq!(c.templates, Some(PathBuf::from("/cfg/templates.xml")));
        let (fut, opt) = (&c.channels[0], &c.channels[1]);
        assert_eq!(fut.gap_timeout_ms, 20);
        let b = fut.b.as_ref().unwrap();
        for line in [&fut.a, b] {
            assert_eq!(line.capture, Some(PathBuf::from("/rec/FUT-BOOK-5.pcap")));
            assert_eq!(line.format, Some(CaptureFormat::Pcap));
            assert_eq!(line.udp, None);
            assert!(line.continued.is_empty());
        }
        assert_eq!(b.source, Some("10.0.0.9".parse().unwrap()));
        assert_eq!(
            b.capture_selector(),
            Some("239.195.1.168:16168".parse().unwrap())
        );
        assert_eq!(opt.templates, Some(PathBuf::from("/abs/opt.xml")));
        let snap = opt.snapshot.as_ref().unwrap();
        assert_eq!(snap.capture, Some(PathBuf::from("/rec/OPT_BOOK.pcap")));
        assert_eq!(opt.a.capture, Some(PathBuf::from("/rec/OPT_BOOK.pcap")));
        let parts = ["/rec/OPT_BOOK.2.pcap", "/rec/OPT_BOOK.3.pcap"].map(PathBuf::from);
        assert_eq!(
            (&snap.continued[..], &opt.a.continued[..]),
            (&parts[..], &parts[..])
        );
    }

    #[test]
    fn a_configuration_handle_refuses_is_refused_here() {
        let no_templates =
            "feed = \"x\"\n[[channel]]\nname = \"C\"\na = { group = \"239.1.1.1:1\" }\n";
        let e = recorded_config(no_templates, Path::new("/"), |_| vec!["r.pcap".into()]);
        assert!(matches!(e, Err(ConfigError::Invalid { .. })), "{e:?}");
    }
}
