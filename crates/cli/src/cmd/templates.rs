//! `fastfeed templates check FILE...` and `fastfeed templates show simple|complex`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use fastfeed_codec::template::{Instr, Kind};

use super::generate::DataSet;

use crate::out::{out, outln};

#[derive(Subcommand)]
pub enum TemplatesCmd {
    /// Report every error with line, column and spec code, or list the templates.
    Check {
        /// Template XML files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print the simulator's template XML (the templates of `generate`, `publish` and
    /// `demo`; in the source tree: crates/sim/templates).
    Show {
        /// Which set.
        #[arg(value_enum)]
        data: DataSet,
    },
}

pub fn run(cmd: TemplatesCmd) -> Result<ExitCode> {
    match cmd {
        TemplatesCmd::Show { data } => {
            out!("{}", data.templates_xml());
            Ok(ExitCode::SUCCESS)
        }
        TemplatesCmd::Check { files } => {
            let mut ok = true;
            for file in &files {
                ok &= check(file)?;
            }
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}

/// Checks one file; false when it has errors or no template.
fn check(file: &std::path::Path) -> Result<bool> {
    let name = file.display();
    let xml = crate::input::text(file)?;
    let checked = fastfeed_codec::template::check(&xml);
    for e in &checked.errors {
        eprintln!("{name}:{e}");
    }
    for s in &checked.notes {
        eprintln!("{name}:{}:{}: note: {}", s.line, s.column, s.why);
    }
    let ts = checked.templates;
    let own = ts.iter().filter(|t| !t.session).count();
    if own == 0 {
        let why = if !checked.errors.is_empty() {
            "the errors above leave none"
        } else if checked.notes.is_empty() {
            "the file has no <template> element"
        } else {
            "see the notes above"
        };
        eprintln!("{name}: no template to decode with: {why}");
        return Ok(false);
    }
    if !checked.errors.is_empty() {
        let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        eprintln!(
            "{name}: {}, which discard {} (spec §4); the others below decode",
            plural(checked.errors.len(), "error"),
            plural(checked.discarded.len(), "template")
        );
    }
    outln!(
        "{name}: {own} templates, {} dictionary entries",
        ts.dictionary_slots()
    );
    for t in ts.iter().filter(|t| !t.session) {
        let reset = if t.reset { ", resets dictionaries" } else { "" };
        outln!(
            "  {:>5} {:<32} {} fields, presence map up to {} bits{reset}",
            t.id,
            t.name,
            count(&t.body.instrs),
            t.body.max_bits + 1
        );
    }
    let scp: Vec<String> = ts
        .iter()
        .filter(|t| t.session)
        .map(|t| format!("{} {}", t.id, t.name))
        .collect();
    if !scp.is_empty() {
        outln!(
            "  and, known without the file (FAST Session Control Protocol 1.1; --no-scp leaves \
             them out): {}",
            scp.join(", ")
        );
    }
    Ok(checked.errors.is_empty())
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
