//! `fastfeed templates check FILE`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use fastfeed_codec::template::{Instr, Kind};

#[derive(Subcommand)]
pub enum TemplatesCmd {
    /// Report errors with line and column, or list the templates.
    Check { file: PathBuf },
}

pub fn run(cmd: TemplatesCmd) -> Result<ExitCode> {
    let TemplatesCmd::Check { file } = cmd;
    let xml = std::fs::read_to_string(&file)?;
    match fastfeed_codec::parse_templates(&xml) {
        Err(e) => {
            eprintln!("{}:{e}", file.display());
            Ok(ExitCode::from(1))
        }
        Ok(ts) => {
            println!(
                "{}: {} templates, {} dictionary entries",
                file.display(),
                ts.len(),
                ts.dictionary_slots()
            );
            for t in ts.iter() {
                let reset = if t.reset { ", resets dictionaries" } else { "" };
                println!(
                    "  {:>5} {:<32} {} fields, presence map up to {} bits{reset}",
                    t.id,
                    t.name,
                    count(&t.body.instrs),
                    t.body.max_bits + 1
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn count(instrs: &[Instr]) -> usize {
    instrs
        .iter()
        .map(|i| match &i.kind {
            Kind::Sequence { body, .. } | Kind::Group(body) => 1 + count(&body.instrs),
            _ => 1,
        })
        .sum()
}
