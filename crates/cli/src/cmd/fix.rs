//! `fastfeed fix`: FAST data as FIX tag=value (decode), FIX back to FAST (encode), and the
//! FAST slides' compression table (report).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use fastfeed_codec::{DecodeOptions, Decoder, Encoder, Templates};
use fastfeed_fix::{
    ratio, Converter, FixOptions, FixReader, Report, Sizes, Step, StepError, Verified, SOH,
};
use fastfeed_packet::{Framing, Packet};

use crate::hint::{self, Heads};
use crate::out::outln;
use crate::{input, FramingArgs};

#[derive(Subcommand)]
pub enum FixCmd {
    /// FAST data to FIX tag=value, one message a line.
    Decode(DecodeArgs),
    /// FIX tag=value back to FAST, the template chosen by MsgType (35).
    Encode(EncodeArgs),
    /// The FAST slides' table: FIX size against FAST size per message, in all and per
    /// template.
    Report(ReportArgs),
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Sep {
    /// The FIX separator, byte 0x01.
    Soh,
    /// `|`, for reading.
    Pipe,
}

/// How FIX is written and read; shared by the three commands.
#[derive(Args, Clone)]
pub struct FixArgs {
    /// The field separator.
    #[arg(long, value_enum, default_value = "soh")]
    pub sep: Sep,
    /// BeginString (8). FIXT.1.1 carries FIX 5.0 and later (ApplVerID 1128 names the
    /// version); FIX.4.4 and older name the version themselves.
    #[arg(long, value_name = "V", default_value = fastfeed_fix::DEFAULT_BEGIN_STRING)]
    pub fix_version: String,
    /// Leave out fields that have no id (no FIX tag), counting them, instead of refusing
    /// their templates' messages. Such messages do not read back.
    #[arg(long)]
    pub skip_untagged: bool,
    /// MsgType (35) for a template without a 35 field (by default U<template id>),
    /// comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "TEMPLATE=VALUE")]
    pub msg_type: Vec<String>,
}

impl FixArgs {
    fn options(&self, templates: &Templates) -> Result<FixOptions> {
        let msg_types = self
            .msg_type
            .iter()
            .map(|s| {
                let (t, v) = s
                    .split_once('=')
                    .ok_or_else(|| anyhow!("--msg-type {s}: expected TEMPLATE=VALUE"))?;
                let t = templates
                    .lookup(t)
                    .map_err(|e| anyhow!("--msg-type {s}: {e}"))?;
                if v.is_empty() || v.bytes().any(|b| b == SOH || b == b'|' || b == b'=') {
                    bail!("--msg-type {s}: not a MsgType value");
                }
                Ok((t.id, v.to_owned()))
            })
            .collect::<Result<_>>()?;
        Ok(FixOptions {
            begin_string: self.fix_version.clone(),
            sep: match self.sep {
                Sep::Soh => SOH,
                Sep::Pipe => b'|',
            },
            skip_untagged: self.skip_untagged,
            msg_types,
        })
    }
}

#[derive(Args)]
pub struct DecodeArgs {
    #[command(flatten)]
    pub framing: FramingArgs,
    #[command(flatten)]
    pub fix: FixArgs,
    /// Write the FIX messages to this file instead of standard output.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// Write nothing: time FAST -> FIX over the file held in memory, this many passes,
    /// on one core, against decoding alone.
    #[arg(long, value_name = "PASSES", num_args = 0..=1, default_missing_value = "11")]
    pub bench: Option<usize>,
    /// Errors printed one by one; those past it are counted.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub max_errors: usize,
    /// The FAST data file; `-` reads standard input.
    pub input: PathBuf,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScpReset {
    /// No Reset messages.
    None,
    /// One at the start of the stream (of each packet with len32le or block).
    Start,
    /// One before every message, as the Moscow Exchange sends them.
    Each,
}

#[derive(Args)]
pub struct EncodeArgs {
    /// Template XML file.
    #[arg(short = 't', long)]
    pub templates: PathBuf,
    #[command(flatten)]
    pub fix: FixArgs,
    /// raw: one stream; len32le: each message as its own length-prefixed packet; block:
    /// each message as its own block (the spec's stop-bit block size before it).
    #[arg(long, default_value = "raw")]
    pub framing: Framing,
    /// Reset the dictionaries before each packet (len32le, block), as a decoder with
    /// --reset-each-packet expects.
    #[arg(long)]
    pub reset_each_packet: bool,
    /// FAST Session Control Protocol Reset messages (template 120) to write.
    #[arg(long, value_enum, default_value = "none")]
    pub scp_reset: ScpReset,
    /// Output file.
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// The FIX messages (SOH or `|` separated, one after the other; line breaks between
    /// them are skipped).
    pub input: PathBuf,
}

#[derive(Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub framing: FramingArgs,
    #[command(flatten)]
    pub fix: FixArgs,
    /// Also read every FIX message back, encode it and compare with its FAST bytes.
    #[arg(long)]
    pub verify: bool,
    /// The FAST data files.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
}

pub fn run(cmd: FixCmd) -> Result<ExitCode> {
    match cmd {
        FixCmd::Decode(a) => decode(a),
        FixCmd::Encode(a) => encode(a),
        FixCmd::Report(a) => report(a),
    }
}

/// What went wrong, printed up to a limit and counted.
/// Errors as they come, the first `max` printed, the rest counted; and the first packets,
/// for the hint when most fail.
struct Errors {
    max: usize,
    total: usize,
    heads: Heads,
}

impl Errors {
    fn note(&mut self, what: std::fmt::Arguments) {
        self.total += 1;
        if self.total <= self.max {
            eprintln!("error: {what}");
        }
    }

    fn finish(&self) {
        if self.total > self.max {
            eprintln!("... and {} more errors", self.total - self.max);
        }
    }

    /// A packet header to try, where `messages` is none or most packets failed.
    fn hint(&self, fa: &FramingArgs, templates: &Arc<Templates>, messages: u64) {
        if !self.heads.wants_hint(self.total, messages as usize) {
            return;
        }
        let opts = DecodeOptions::default();
        if let Some(h) = hint::packet_header(fa, &self.heads, templates, &opts) {
            eprintln!("{} errors: {h}", self.total);
        }
    }
}

/// One converted message: its template, and whether it was written as FIX (or is a FAST
/// session control message).
#[derive(Clone, Copy)]
struct Msg {
    template_id: u32,
    fix: bool,
}

/// Walks every message of every packet of the input at `path` through `conv`, calling
/// `each` with the message and its FAST bytes; refused and undecodable messages go to
/// `errors`. A capture is read a run of records at a time, other inputs whole.
fn walk(
    fa: &FramingArgs,
    path: &Path,
    conv: &mut Converter,
    errors: &mut Errors,
    mut each: impl FnMut(&mut Converter, Msg, &[u8]),
) -> Result<()> {
    let data = match input::open(fa, path)? {
        input::Opened::Capture(c) => {
            input::stream_capture(c, fa.udp, |packet| {
                walk_packet(fa, packet, conv, errors, &mut each);
                None::<()>
            })?;
            return Ok(());
        }
        input::Opened::Whole(data) => data,
    };
    let mut spill = Vec::new();
    for packet in input::packets(fa, &data, &mut spill)? {
        match packet {
            Ok(p) => walk_packet(fa, p, conv, errors, &mut each),
            Err(e) => errors.note(format_args!("{e}")),
        }
    }
    Ok(())
}

/// [`walk`] over one packet.
fn walk_packet(
    fa: &FramingArgs,
    packet: Packet<'_>,
    conv: &mut Converter,
    errors: &mut Errors,
    each: &mut impl FnMut(&mut Converter, Msg, &[u8]),
) {
    if fa.reset_each_packet {
        conv.reset();
    }
    errors.heads.add(packet.bytes);
    let bytes = packet.bytes;
    let mut pos = fa.skip_header.min(bytes.len());
    while pos < bytes.len() {
        let step = conv.step(&bytes[pos..]).map(|s| match s {
            Step::Fix {
                template_id,
                fast_len,
                ..
            } => (
                Msg {
                    template_id,
                    fix: true,
                },
                fast_len,
            ),
            Step::Session {
                template_id,
                fast_len,
            } => (
                Msg {
                    template_id,
                    fix: false,
                },
                fast_len,
            ),
        });
        match step {
            Ok((m, len)) => {
                each(conv, m, &bytes[pos..pos + len]);
                pos += len;
            }
            Err(StepError::Fix { error, len }) => {
                errors.note(format_args!(
                    "packet {} byte {}: {error}",
                    packet.index,
                    packet.offset + pos
                ));
                pos += len;
            }
            Err(StepError::Decode(e)) => {
                errors.note(format_args!(
                    "packet {} byte {}: {e}; the packet's last {} bytes skipped",
                    packet.index,
                    packet.offset + pos,
                    bytes.len() - pos
                ));
                break;
            }
        }
    }
}

fn decode(a: DecodeArgs) -> Result<ExitCode> {
    let templates = input::templates(&a.framing.templates, !a.framing.no_scp)?;
    let opts = a.fix.options(&templates)?;
    if let Some(passes) = a.bench {
        let data = input::bytes_or_stdin(&a.input)?;
        return bench(&a.framing, templates, &opts, &data, passes.max(1));
    }
    let mut out: Box<dyn Write> = match &a.output {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let mut conv = Converter::new(templates.clone(), &opts, DecodeOptions::default());
    let mut errors = Errors {
        max: a.max_errors,
        total: 0,
        heads: Heads::default(),
    };
    let mut failed = None;
    walk(&a.framing, &a.input, &mut conv, &mut errors, |c, m, _| {
        if let (true, Some(text), None) = (m.fix, c.writer().last_text(), &failed) {
            if let Err(e) = out.write_all(text).and_then(|_| out.write_all(b"\n")) {
                failed = Some(e);
            }
        }
    })?;
    match failed.map_or_else(|| out.flush(), Err) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
        r => r.context("writing the FIX messages")?,
    }
    errors.finish();
    let c = conv.writer().counts();
    eprintln!(
        "wrote {} FIX messages; {} FAST session control messages have no FIX form; {} messages refused, {} errors; {} untagged field values left out",
        c.messages, c.session, c.refused, errors.total, c.skipped_fields
    );
    errors.hint(&a.framing, &templates, c.messages + c.session);
    Ok(if errors.total == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Times FAST -> FIX over the whole file, and decoding alone beside it.
fn bench(
    fa: &FramingArgs,
    templates: Arc<Templates>,
    opts: &FixOptions,
    data: &[u8],
    passes: usize,
) -> Result<ExitCode> {
    let mut spill = Vec::new();
    let packets: Vec<&[u8]> = input::packets(fa, data, &mut spill)?
        .into_iter()
        .map(|p| p.map(|p| &p.bytes[fa.skip_header.min(p.bytes.len())..]))
        .collect::<Result<_, _>>()?;
    let mut writer = fastfeed_fix::FixWriter::new(&templates, opts);
    let mut decoder = Decoder::new(templates.clone());
    let mut convert = |dec: &mut Decoder, fix: bool| -> Result<(u64, u64)> {
        let (mut msgs, mut fix_bytes) = (0u64, 0u64);
        dec.reset();
        for p in &packets {
            if fa.reset_each_packet {
                dec.reset();
            }
            let mut pos = 0;
            while pos < p.len() {
                pos += if fix {
                    let n = dec.decode(&p[pos..], &mut writer)?;
                    if let Some(t) = writer.finish()? {
                        fix_bytes += t.len() as u64;
                    }
                    n
                } else {
                    dec.decode(&p[pos..], &mut ())?
                };
                msgs += 1;
            }
        }
        Ok((msgs, fix_bytes))
    };
    let mut best = [f64::MAX; 2];
    let mut counts = (0, 0);
    for _ in 0..passes {
        for (k, fix) in [(0, false), (1, true)] {
            let t0 = fastfeed_stats::thread_cpu_seconds();
            counts = convert(&mut decoder, fix)?;
            best[k] = best[k].min(fastfeed_stats::thread_cpu_seconds() - t0);
        }
    }
    let (msgs, fix_bytes) = counts;
    let per = |s: f64| s * 1e9 / msgs.max(1) as f64;
    let fast_bytes: usize = packets.iter().map(|p| p.len()).sum();
    outln!(
        "{msgs} FAST messages ({} written as FIX), {fast_bytes} bytes of FAST -> {fix_bytes} bytes of FIX; best of {passes} passes, one thread, its CPU time",
        writer.counts().messages / passes as u64
    );
    outln!(
        "decode only:  {:8.1} ns/msg  {:6.2} M msg/s  {:7.1} MB/s FAST in",
        per(best[0]),
        msgs as f64 / best[0] / 1e6,
        fast_bytes as f64 / best[0] / 1e6
    );
    outln!(
        "FAST -> FIX:  {:8.1} ns/msg  {:6.2} M msg/s  {:7.1} MB/s FIX out",
        per(best[1]),
        msgs as f64 / best[1] / 1e6,
        fix_bytes as f64 / best[1] / 1e6
    );
    Ok(ExitCode::SUCCESS)
}

fn encode(a: EncodeArgs) -> Result<ExitCode> {
    let templates = input::templates(&a.templates, true)?;
    let opts = a.fix.options(&templates)?;
    let reader = FixReader::new(templates.clone(), &opts);
    let data = input::bytes(&a.input)?;
    let mut encoder = Encoder::new(templates);
    let (mut out, mut msg) = (Vec::new(), Vec::new());
    let mut pos = 0;
    let mut count = 0usize;
    loop {
        while pos < data.len() && data[pos].is_ascii_whitespace() {
            pos += 1;
        }
        if pos == data.len() {
            break;
        }
        let (m, used) = reader.read(&data[pos..]).map_err(|e| {
            anyhow!(
                "{}: message {} (starting at byte {pos}): {e}",
                a.input.display(),
                count + 1
            )
        })?;
        msg.clear();
        let framed = a.framing.is_framed();
        if framed && a.reset_each_packet {
            encoder.reset();
        }
        let reset = match a.scp_reset {
            ScpReset::None => false,
            ScpReset::Start => framed || count == 0,
            ScpReset::Each => true,
        };
        if reset {
            encoder
                .encode_reset(&mut msg)
                .map_err(|e| anyhow!("--scp-reset: {e}: the templates have no Reset"))?;
        }
        encoder.encode(&m, &mut msg).map_err(|e| {
            anyhow!(
                "{}: message {} (starting at byte {pos}): {e}",
                a.input.display(),
                count + 1
            )
        })?;
        a.framing.append_packet(&msg, &mut out);
        pos += used;
        count += 1;
    }
    std::fs::write(&a.output, &out).with_context(|| format!("writing {}", a.output.display()))?;
    eprintln!("encoded {count} messages, {} bytes", out.len());
    Ok(ExitCode::SUCCESS)
}

fn report(a: ReportArgs) -> Result<ExitCode> {
    let templates = input::templates(&a.framing.templates, !a.framing.no_scp)?;
    let opts = a.fix.options(&templates)?;
    let mut rep = Report::default();
    let mut errors = Errors {
        max: 10,
        total: 0,
        heads: Heads::default(),
    };
    let (mut session, mut session_bytes) = (0u64, 0u64);
    let (mut identical, mut differs) = (0u64, Vec::new());
    for path in &a.inputs {
        let mut conv = Converter::new(templates.clone(), &opts, DecodeOptions::default());
        walk(&a.framing, path, &mut conv, &mut errors, |c, m, fast| {
            if m.fix {
                let fix_len = c.writer().last_text().map_or(0, <[u8]>::len);
                rep.add(m.template_id, fix_len, fast.len());
            } else {
                session += 1;
                session_bytes += fast.len() as u64;
            }
            if a.verify {
                match c.verify(fast) {
                    Verified::Identical => identical += 1,
                    v => differs.push(format!("{}: {v:?}", path.display())),
                }
            }
        })?;
    }
    errors.finish();
    errors.hint(&a.framing, &templates, rep.all.messages + session);
    print_report(&rep, &templates)?;
    outln!(
        "FAST session control messages (no FIX form, not in the table): {session}, {session_bytes} bytes; messages refused or undecodable: {}",
        errors.total
    );
    if a.verify {
        outln!(
            "round trip FAST -> FIX -> FAST: {identical} of {} messages byte-identical",
            identical + differs.len() as u64
        );
        for d in differs.iter().take(5) {
            outln!("  differs: {d}");
        }
    }
    Ok(if errors.total == 0 && differs.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_report(rep: &Report, templates: &Templates) -> Result<()> {
    outln!(
        "{:<38} {:>9} {:>9} {:>8} {:>9} {:>16} {:>16} {:>16}",
        "template",
        "messages",
        "FIX avg",
        "FIX peak",
        "FAST avg",
        "compression avg",
        "peak",
        "min"
    );
    let row = |name: String, s: &Sizes| -> Result<()> {
        // No message: no rate (not 100% saved, not an infinite ratio).
        let pct = |r: f64| match s.messages {
            0 => "-".to_string(),
            _ => format!("{:.1}% / {:.2}", r * 100.0, ratio(r)),
        };
        outln!(
            "{:<38} {:>9} {:>9.1} {:>8} {:>9.1} {:>16} {:>16} {:>16}",
            name,
            s.messages,
            s.fix_avg(),
            s.fix_peak,
            s.fast_avg(),
            pct(s.rate_avg()),
            pct(s.rate_max),
            pct(s.rate_min)
        );
        Ok(())
    };
    for (id, s) in &rep.per_template {
        let name = templates.get(*id).map_or("?", |t| t.name.as_str());
        row(format!("{name} ({id})"), s)?;
    }
    row("all".into(), &rep.all)
}
