//! `handle --record DIR`: the recording's configuration, `DIR/feed.toml` (the feed's own,
//! every line's capture its channel's pcap and the parts that continue it), written as the
//! recording starts and again as a channel's recording goes on in a new part
//! (`--record-split`), so that a recording cut short is taken back as far as it went.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};

use super::handle_live::record_file;

/// What `DIR/feed.toml` is made from, and each channel's parts so far.
pub struct RecordedConfig {
    config: PathBuf,
    text: String,
    dir: PathBuf,
    /// Channel -> the parts after its first file, in order.
    parts: Mutex<BTreeMap<String, Vec<PathBuf>>>,
}

impl RecordedConfig {
    /// Reads the feed's configuration and writes `DIR/feed.toml` for the first files.
    pub fn start(config: &Path, dir: &Path) -> Result<RecordedConfig> {
        let text = std::fs::read_to_string(config)
            .with_context(|| format!("reading {}", config.display()))?;
        let r = RecordedConfig {
            config: config.to_path_buf(),
            text,
            dir: std::path::absolute(dir)?,
            parts: Mutex::new(BTreeMap::new()),
        };
        r.write()?;
        Ok(r)
    }

    /// Where it is written.
    pub fn path(&self) -> PathBuf {
        self.dir.join("feed.toml")
    }

    /// A channel's recording went on in `part`: written again with it.
    pub fn part_opened(&self, channel: &str, part: &Path) {
        let mut parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
        parts
            .entry(channel.to_string())
            .or_default()
            .push(part.to_path_buf());
        drop(parts);
        if let Err(e) = self.write() {
            // The recording goes on; the configuration says less than it has.
            eprintln!("fastfeed handle: {e:#}");
        }
    }

    fn write(&self) -> Result<()> {
        let parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
        let base = self.config.parent().unwrap_or(Path::new(""));
        let files = |c: &str| {
            let first = self.dir.join(record_file(c));
            let rest = parts.get(c).into_iter().flatten().cloned();
            std::iter::once(first).chain(rest).collect()
        };
        let recorded = fastfeed_feed::recorded_config(&self.text, base, files)
            .with_context(|| format!("{}", self.config.display()))?;
        let header = format!(
            "# The configuration of a recording by `fastfeed handle --record`: {}, with every\n\
             # line's capture the pcap its channel was recorded to (and its parts, in order).\n\n",
            self.config.display()
        );
        // Whole or not at all: written beside it, then renamed over it.
        let path = self.path();
        let next = self.dir.join(".feed.toml.new");
        std::fs::write(&next, header + &recorded)
            .and_then(|()| std::fs::rename(&next, &path))
            .with_context(|| format!("writing {}", path.display()))
    }
}
