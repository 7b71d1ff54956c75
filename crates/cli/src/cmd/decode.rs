//! `fastfeed decode`: FAST bytes to JSON Lines.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use fastfeed_codec::{DecodeOptions, Decoder, Message, MessageBuilder, Templates};
use fastfeed_packet::{FramingError, Packet, PacketDecoder, PacketOptions, PacketSummary};

use super::table;
use crate::hint::{self, Heads};
use crate::tally::Tally;
use crate::{input, FramingArgs};

#[derive(Args)]
pub struct DecodeArgs {
    #[command(flatten)]
    pub framing: FramingArgs,
    /// Reject the spec's reportable errors R6-R9 (overlong encodings).
    #[arg(long)]
    pub strict: bool,
    /// Write the JSON Lines to this file instead of standard output.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// Write only the messages of these templates (ids or names, comma-separated); the
    /// others are still decoded and counted.
    #[arg(long, value_delimiter = ',', value_name = "ID|NAME")]
    pub only: Vec<String>,
    /// Write no messages: only the per-template statistics.
    #[arg(long)]
    pub count: bool,
    /// Errors printed one by one; those past it are counted.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub max_errors: usize,
    /// The FAST data file; `-` reads standard input.
    pub input: PathBuf,
    /// Output: JSON Lines, or table files (see the table options; -o names the file or
    /// directory).
    #[arg(long, value_enum, default_value = "json")]
    pub format: table::Format,
    /// With a table format: the template whose table to write into the file -o names.
    #[arg(long)]
    pub template: Option<String>,
    #[command(flatten)]
    pub table: table::TableArgs,
}

pub fn run(a: DecodeArgs) -> Result<ExitCode> {
    if a.format != table::Format::Json {
        return table::run(
            a.format,
            &a.framing,
            a.strict,
            &a.input,
            a.output.as_deref(),
            a.template.as_deref(),
            &a.table,
        );
    }
    table::json_takes_no_template(a.template.as_deref())?;
    let templates = input::templates(&a.framing.templates, !a.framing.no_scp)?;
    let only = Filter::new(&a.only, &templates, &a.framing.templates)?;
    // A capture (a file or standard input) is read a run of records at a time, whatever its
    // size; other inputs whole (a raw stream resynchronises at Reset messages anywhere in it).
    let (capture, data) = match input::open(&a.framing, &a.input)? {
        input::Opened::Capture(c) => (Some(c), Vec::new()),
        input::Opened::Whole(data) => (None, data),
    };
    // A capture on standard input may be live (`tcpdump -w - | fastfeed decode ... -`): each
    // packet's lines go out as it is decoded.
    let live = capture.is_some() && a.input.as_os_str() == "-";
    let out: Box<dyn Write> = match (&a.output, a.count) {
        (_, true) => Box::new(std::io::sink()),
        (Some(p), _) => {
            Box::new(std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?)
        }
        (None, _) => Box::new(std::io::stdout().lock()),
    };
    let mut sink = JsonLines {
        out: BufWriter::new(out),
        failed: None,
    };
    let opts = DecodeOptions {
        strict: a.strict,
        ..Default::default()
    };
    let mut pd = PacketDecoder::new(
        Decoder::with_options(templates.clone(), opts.clone()),
        PacketOptions {
            skip_header: a.framing.skip_header,
            reset_each_packet: a.framing.reset_each_packet,
        },
    );
    let mut builder = MessageBuilder::new();
    // Both callbacks below count into it.
    let tally = std::cell::RefCell::new(Tally::default());
    let mut errors = ErrorLog::new(a.max_errors);
    let mut sum = PacketSummary::default();
    let mut packets = 0usize;
    // The first packets (short ones), for the hint.
    let mut heads = Heads::default();
    // One packet through the decoder; Some(exit) ends the run (a closed pipe, a failed write).
    let mut take = |packet: Result<Packet<'_>, FramingError>| -> Option<Result<ExitCode>> {
        let packet = match packet {
            Ok(p) => p,
            Err(e) => {
                errors.framing(&e, data.len());
                return None;
            }
        };
        packets += 1;
        heads.add(packet.bytes);
        sum += pd.decode_resync(
            &packet,
            &mut builder,
            |b, _, len| {
                let Some(m) = b.take() else { return };
                tally.borrow_mut().message(m.template_id, len);
                // --count formats nothing: the lines would only go to a sink.
                if !a.count && only.wants(m.template_id) {
                    sink.write(&m, &templates);
                }
            },
            |r| {
                tally.borrow_mut().error(&r.error.error, &templates);
                errors.decode(r);
            },
        );
        if live && sink.failed.is_none() {
            if let Err(e) = sink.out.flush() {
                sink.failed = Some(e);
            }
        }
        let e = sink.failed.take()?;
        // A closed pipe (`| head`) is a normal way to stop.
        Some(match e.kind() {
            std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
            _ => Err(anyhow::Error::new(e).context("writing the messages")),
        })
    };
    if let Some(c) = capture {
        if let Some(exit) = input::stream_capture(c, a.framing.udp, |p| take(Ok(p)))? {
            return exit;
        }
    } else {
        let mut spill = Vec::new();
        for packet in input::packets(&a.framing, &data, &mut spill)? {
            if let Some(exit) = take(packet) {
                return exit;
            }
        }
    }
    match sink.out.flush() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            return Err(anyhow::Error::new(e).context("writing the messages"))
        }
        _ => {}
    }
    errors.finish();
    let tally = tally.into_inner();
    let mut err = std::io::stderr().lock();
    tally.print(&templates, &mut err)?;
    writeln!(
        err,
        "decoded {} messages in {packets} packets, {} errors",
        sum.messages, errors.total
    )?;
    let skipped = sum.skipped + errors.framing_skipped;
    if skipped > 0 {
        write!(err, "skipped {skipped} bytes after errors")?;
        if sum.resyncs > 0 {
            write!(err, ", resuming {} times at a Reset message", sum.resyncs)?;
        }
        writeln!(err)?;
    }
    if heads.wants_hint(errors.total, sum.messages) {
        let what = match sum.messages {
            0 => "no message decoded".to_string(),
            _ => format!("{} errors in {packets} packets", errors.total),
        };
        let h = hint::hint(&a.framing, &data, &heads, &tally, &templates, &opts);
        writeln!(err, "{what}: {h}")?;
    }
    Ok(if errors.total == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The messages as JSON Lines; the first write error is kept for the caller.
struct JsonLines<W: Write> {
    out: W,
    failed: Option<std::io::Error>,
}

impl<W: Write> JsonLines<W> {
    fn write(&mut self, m: &Message, templates: &Templates) {
        if self.failed.is_none() {
            let line = fastfeed_json::to_json(m, templates);
            if let Err(e) = writeln!(self.out, "{line}") {
                self.failed = Some(e);
            }
        }
    }
}

/// `--only`: the template ids to write, or all.
struct Filter(Option<Vec<u32>>);

impl Filter {
    fn new(only: &[String], templates: &Templates, file: &std::path::Path) -> Result<Self> {
        if only.is_empty() {
            return Ok(Filter(None));
        }
        let ids = only
            .iter()
            .map(|s| {
                templates
                    .lookup(s)
                    .map(|t| t.id)
                    .map_err(|e| anyhow::anyhow!("--only {s}: {e} in {}", file.display()))
            })
            .collect::<Result<_>>()?;
        Ok(Filter(Some(ids)))
    }

    fn wants(&self, id: u32) -> bool {
        self.0.as_ref().is_none_or(|ids| ids.contains(&id))
    }
}

/// Errors as they come, the first `max` printed, the rest counted.
struct ErrorLog {
    max: usize,
    total: usize,
    framing_skipped: usize,
}

impl ErrorLog {
    fn new(max: usize) -> Self {
        ErrorLog {
            max,
            total: 0,
            framing_skipped: 0,
        }
    }

    fn print(&mut self, line: std::fmt::Arguments) {
        self.total += 1;
        if self.total <= self.max {
            eprintln!("error: {line}");
        }
    }

    fn framing(&mut self, e: &fastfeed_packet::FramingError, input_len: usize) {
        self.framing_skipped += e.skipped(input_len);
        self.print(format_args!("{e}"));
    }

    fn decode(&mut self, r: &fastfeed_packet::Recovery) {
        match r.resumed_at {
            Some(at) => self.print(format_args!(
                "{}; skipped {} bytes, resumed at byte {at}",
                r.error, r.skipped
            )),
            None if r.skipped > 0 => self.print(format_args!(
                "{}; the packet's last {} bytes skipped",
                r.error, r.skipped
            )),
            None => self.print(format_args!("{}", r.error)),
        }
    }

    fn finish(&self) {
        if self.total > self.max {
            eprintln!(
                "... and {} more errors (--max-errors {} shows the first {})",
                self.total - self.max,
                self.max,
                self.max
            );
        }
    }
}
