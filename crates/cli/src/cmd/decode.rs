//! `fastfeed decode`: FAST bytes to JSON Lines.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use fastfeed_codec::{DecodeOptions, Decoder, MessageBuilder};
use fastfeed_packet::{PacketDecoder, PacketOptions};

use crate::{input, FramingArgs};

#[derive(Args)]
pub struct DecodeArgs {
    #[command(flatten)]
    pub framing: FramingArgs,
    /// Reject the spec's reportable errors R6-R9 (overlong encodings).
    #[arg(long)]
    pub strict: bool,
    /// The FAST data file.
    pub input: PathBuf,
}

pub fn run(a: DecodeArgs) -> Result<ExitCode> {
    let templates = input::templates(&a.framing.templates)?;
    let data = input::bytes(&a.input)?;
    let opts = DecodeOptions {
        strict: a.strict,
        ..Default::default()
    };
    let mut pd = PacketDecoder::new(
        Decoder::with_options(templates.clone(), opts),
        PacketOptions {
            skip_header: a.framing.skip_header,
            reset_each_packet: a.framing.reset_each_packet,
        },
    );
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut builder = MessageBuilder::new();
    let (mut packets, mut messages, mut errors) = (0usize, 0usize, 0usize);
    let mut write_err = None;
    for packet in a.framing.framing.packets(&data) {
        let packet = match packet {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: {e}");
                errors += 1;
                break;
            }
        };
        packets += 1;
        let r = pd.decode_packet(&packet, &mut builder, |b, _| {
            if let Some(m) = b.take() {
                messages += 1;
                let line = fastfeed_json::to_json(&m, &templates);
                if let Err(e) = writeln!(out, "{line}") {
                    write_err.get_or_insert(e);
                }
            }
        });
        if let Some(e) = write_err.take() {
            // A closed pipe (`| head`) is a normal way to stop.
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                return Ok(ExitCode::SUCCESS);
            }
            return Err(e.into());
        }
        if let Err(e) = r {
            errors += 1;
            eprintln!("error: {e}");
        }
    }
    out.flush().ok();
    eprintln!("decoded {messages} messages in {packets} packets, {errors} errors");
    Ok(if errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
