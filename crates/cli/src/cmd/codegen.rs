//! `fastfeed codegen TEMPLATES.xml -o DIR`: the generated decoder and encoder as a Rust file,
//! for projects that do not use a build script.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use clap::Args;

use crate::out::outln;

#[derive(Args)]
pub struct CodegenArgs {
    /// Template XML file.
    pub templates: PathBuf,
    /// Directory to write `<name>.rs` into.
    #[arg(short = 'o', long)]
    pub out_dir: PathBuf,
    /// File name (without `.rs`); the template file's stem by default.
    #[arg(long)]
    pub name: Option<String>,
    /// Do not read the fields that templates begin with alike before the dispatch on the
    /// template id (a feed dominated by one template decodes a little faster without it).
    #[arg(long)]
    pub no_common_prefix: bool,
}

pub fn run(a: CodegenArgs) -> Result<ExitCode> {
    std::fs::create_dir_all(&a.out_dir)
        .map_err(|e| anyhow!("creating {}: {e}", a.out_dir.display()))?;
    let b = fastfeed_codegen::Builder::new()
        .out_dir(&a.out_dir)
        .common_prefix(!a.no_common_prefix);
    let out = match &a.name {
        Some(n) => b.compile_as(&a.templates, n),
        None => b.compile(&a.templates),
    }
    .map_err(|e| anyhow!("{}: {e}", a.templates.display()))?;
    outln!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}
