//! Loading templates and data files, with errors that name the file.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use fastfeed_codec::Templates;

pub fn templates(path: &Path) -> Result<Arc<Templates>> {
    let xml =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    fastfeed_codec::parse_templates(&xml).map_err(|e| anyhow::anyhow!("{}:{e}", path.display()))
}

pub fn bytes(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}
