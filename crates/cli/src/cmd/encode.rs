//! `fastfeed encode`: JSON Lines back to FAST bytes.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use fastfeed_codec::Encoder;
use fastfeed_packet::Framing;

use crate::input;

#[derive(Args)]
pub struct EncodeArgs {
    /// Template XML file.
    #[arg(short = 't', long)]
    pub templates: PathBuf,
    /// raw: one stream; len32le: each message as its own length-prefixed packet.
    #[arg(long, default_value = "raw")]
    pub framing: Framing,
    /// Reset the dictionaries before each packet (len32le), as a decoder with
    /// --reset-each-packet expects.
    #[arg(long)]
    pub reset_each_packet: bool,
    /// Output file (standard output if not given).
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// JSON Lines input (standard input if not given).
    pub input: Option<PathBuf>,
}

pub fn run(a: EncodeArgs) -> Result<ExitCode> {
    let templates = input::templates(&a.templates)?;
    let reader: Box<dyn BufRead> = match &a.input {
        Some(p) => Box::new(BufReader::new(
            std::fs::File::open(p).with_context(|| format!("opening {}", p.display()))?,
        )),
        None => Box::new(std::io::stdin().lock()),
    };
    let mut encoder = Encoder::new(templates.clone());
    let mut out = Vec::new();
    let mut msg_bytes = Vec::new();
    let mut count = 0usize;
    for (n, line) in reader.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let json: serde_json::Value =
            serde_json::from_str(&line).with_context(|| format!("line {}: not JSON", n + 1))?;
        let msg = fastfeed_json::from_json(&json, &templates)
            .with_context(|| format!("line {}", n + 1))?;
        msg_bytes.clear();
        if a.framing == Framing::Len32Le && a.reset_each_packet {
            encoder.reset();
        }
        if let Err(e) = encoder.encode(&msg, &mut msg_bytes) {
            bail!("line {}: {e}", n + 1);
        }
        if a.framing == Framing::Len32Le {
            out.extend_from_slice(&(msg_bytes.len() as u32).to_le_bytes());
        }
        out.extend_from_slice(&msg_bytes);
        count += 1;
    }
    match &a.output {
        Some(p) => std::fs::write(p, &out).with_context(|| format!("writing {}", p.display()))?,
        None => std::io::stdout().lock().write_all(&out)?,
    }
    eprintln!("encoded {count} messages, {} bytes", out.len());
    Ok(ExitCode::SUCCESS)
}
