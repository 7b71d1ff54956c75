//! `fastfeed encode`: JSON Lines back to FAST bytes.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use fastfeed_codec::Encoder;
use fastfeed_json::{JsonError, ReadOptions};
use fastfeed_packet::Framing;

use crate::input;

#[derive(Args)]
pub struct EncodeArgs {
    /// Template XML file.
    #[arg(short = 't', long)]
    pub templates: PathBuf,
    /// raw: one stream; len32le: each message as its own length-prefixed packet; block:
    /// each message as its own block (the spec's stop-bit block size before it).
    #[arg(long, default_value = "raw")]
    pub framing: Framing,
    /// Reset the dictionaries before each packet (len32le, block), as a decoder with
    /// --reset-each-packet expects.
    #[arg(long)]
    pub reset_each_packet: bool,
    /// Know only the template file's templates: not the FAST Session Control Protocol 1.1
    /// messages it leaves out (Reset 120, Hello 16002, Alert 16003).
    #[arg(long)]
    pub no_scp: bool,
    /// Write a Session Control Protocol Reset message (template 120) at the start of each
    /// packet (len32le, block) or of the stream (raw), and reset the dictionaries, as venues do.
    #[arg(long)]
    pub scp_reset: bool,
    /// Output file (standard output if not given).
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// Ignore keys that name no field of the message's template (by default such a key is
    /// an error: a misspelt field would be left out of the encoding unnoticed).
    #[arg(long)]
    pub allow_unknown_fields: bool,
    /// JSON Lines input (standard input if not given, or `-`).
    pub input: Option<PathBuf>,
}

pub fn run(a: EncodeArgs) -> Result<ExitCode> {
    let templates = input::templates(&a.templates, !a.no_scp)?;
    let (mut reader, source): (Box<dyn BufRead>, String) = match &a.input {
        Some(p) if p.as_os_str() != "-" => (
            Box::new(BufReader::new(
                std::fs::File::open(p).with_context(|| format!("opening {}", p.display()))?,
            )),
            p.display().to_string(),
        ),
        _ => (
            Box::new(std::io::stdin().lock()),
            "standard input".to_owned(),
        ),
    };
    let opts = ReadOptions {
        allow_unknown_fields: a.allow_unknown_fields,
    };
    let mut encoder = Encoder::new(templates.clone());
    let mut out = Vec::new();
    let mut msg_bytes = Vec::new();
    let mut count = 0usize;
    let mut raw = Vec::new();
    for n in 1.. {
        raw.clear();
        if reader
            .read_until(b'\n', &mut raw)
            .with_context(|| format!("reading {source}"))?
            == 0
        {
            break;
        }
        let at = || format!("{source} line {n}");
        let line = std::str::from_utf8(&raw)
            .map_err(|e| anyhow!("{}: not valid UTF-8 at byte {}", at(), e.valid_up_to()))?;
        if line.trim().is_empty() {
            continue;
        }
        let json: serde_json::Value =
            serde_json::from_str(line).with_context(|| format!("{}: not JSON", at()))?;
        let msg = match fastfeed_json::from_json_with(&json, &templates, opts) {
            Ok(m) => m,
            Err(e @ JsonError::UnknownField { .. }) => {
                bail!("{}: {e} (--allow-unknown-fields ignores such keys)", at())
            }
            Err(e) => bail!("{}: {e}", at()),
        };
        msg_bytes.clear();
        let packet_start = a.framing.is_framed() || count == 0;
        if a.framing.is_framed() && a.reset_each_packet {
            encoder.reset();
        }
        if a.scp_reset && packet_start {
            encoder
                .encode_reset(&mut msg_bytes)
                .map_err(|e| anyhow!("--scp-reset: {e}: the templates have no Reset"))?;
        }
        if let Err(e) = encoder.encode(&msg, &mut msg_bytes) {
            bail!("{}: {e}", at());
        }
        a.framing.append_packet(&msg_bytes, &mut out);
        count += 1;
    }
    match &a.output {
        Some(p) => std::fs::write(p, &out).with_context(|| format!("writing {}", p.display()))?,
        None => std::io::stdout()
            .lock()
            .write_all(&out)
            .context("writing to standard output")?,
    }
    eprintln!("encoded {count} messages, {} bytes", out.len());
    Ok(ExitCode::SUCCESS)
}
