//! `fastfeed decode`: FAST bytes to JSON Lines.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;
use fastfeed_codec::{DecodeOptions, Decoder, Message, MessageBuilder, Templates};
use fastfeed_packet::{FramingError, Packet, PacketDecoder, PacketOptions, PacketSummary};

use super::table;
use crate::tally::Tally;
use crate::{input, FramingArgs, InputFraming};

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
    let mut heads: Vec<Vec<u8>> = Vec::new();
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
        if heads.len() < HEADS && packet.bytes.len() <= HEAD_BYTES {
            heads.push(packet.bytes.to_vec());
        }
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
    // Nothing decoded, or most packets failed (a header left in front of the messages can
    // let a few decode by chance).
    if errors.total > 0 && (sum.messages == 0 || 2 * errors.total >= packets) {
        let what = match sum.messages {
            0 => "no message decoded".to_string(),
            _ => format!("{} errors in {packets} packets", errors.total),
        };
        let h = hint(&a.framing, &data, &heads, &tally, &templates, &opts);
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
                let t = match s.trim().parse::<u32>() {
                    Ok(id) => templates.get(id),
                    Err(_) => templates.by_name(s.trim()),
                };
                match t {
                    Some(t) => Ok(t.id),
                    None => bail!("--only {s}: no such template in {}", file.display()),
                }
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

/// Packets the hint looks at: the first ones of at most [`HEAD_BYTES`].
const HEADS: usize = 32;
const HEAD_BYTES: usize = 16 << 10;
/// Header lengths the hint tries in front of the messages.
const MAX_HEADER: usize = 16;

/// What to try when nothing decoded, or most packets failed.
fn hint(
    f: &FramingArgs,
    data: &[u8],
    heads: &[Vec<u8>],
    tally: &Tally,
    templates: &Arc<Templates>,
    opts: &DecodeOptions,
) -> String {
    let mut h = String::new();
    if f.framing == InputFraming::Raw && looks_len32le(data) {
        h += "the input looks length-prefixed: try --framing len32le";
    } else if f.framing == InputFraming::Raw && looks_blocks(data) {
        h += "the input looks like the spec's blocks (a stop-bit size before each): try --framing block";
    } else if f.framing == InputFraming::Len32le && !looks_len32le(data) {
        h += "the input is not length-prefixed records: try --framing raw";
    } else if f.framing == InputFraming::Block && block_chain(data).is_none() {
        h += "the input is not blocks whose sizes lead to its end: try --framing raw or len32le";
    } else if let Some(found) = header_hint(f, heads, templates, opts) {
        h += &found;
    } else {
        h += "wrong templates for this data?";
        let ids = tally.unknown_ids();
        if !ids.is_empty() {
            let list: Vec<String> = ids.iter().take(5).map(u32::to_string).collect();
            h += &format!(
                " The data uses template ids the file does not define: {}",
                list.join(", ")
            );
        }
    }
    h
}

/// Whether the first packets start with a 4-byte sequence number: one that never falls
/// and rises by at most one a packet (two lines' packets may alternate), read
/// little-endian or big-endian; its first value and whether it is big-endian.
/// A packet header to skip: the one with which the first packets decode whole, named as a
/// venue's sequence number where it is one (MOEX's four bytes little-endian, CME's four
/// big-endian then a sub-channel byte).
fn header_hint(
    f: &FramingArgs,
    heads: &[Vec<u8>],
    templates: &Arc<Templates>,
    opts: &DecodeOptions,
) -> Option<String> {
    let found = header_that_decodes(f, heads, templates, opts);
    let seq = sequence_header(heads).filter(|_| f.skip_header == 0);
    match (found, seq) {
        (Some((4, _, _, _)), Some((first, false))) | (None, Some((first, false))) => Some(format!(
            "packets start with a 4-byte little-endian sequence number ({first}, {}, ...), \
                 as MOEX's and `fastfeed generate`'s do: try --skip-header 4 --reset-each-packet",
            first + 1
        )),
        (Some((4 | 5, _, _, _)), Some((first, true))) | (None, Some((first, true))) => {
            Some(format!(
                "packets start with a 4-byte big-endian sequence number ({first}, {}, ...), as \
                 CME's do (then a sub-channel byte): try --skip-header 5 --reset-each-packet \
                 (or --skip-header 4)",
                first + 1
            ))
        }
        (Some((skip, reset, n, given)), _) => Some(format!(
            "the first packets decode with --skip-header {skip}{} ({n} of {} whole, against \
             {given} as given): try those",
            if reset { " --reset-each-packet" } else { "" },
            heads.len()
        )),
        (None, None) => None,
    }
}

/// The packet header length (0 to [`MAX_HEADER`] bytes) and dictionary reset with which the
/// most of the first packets decode whole, where the options given do worse: (header,
/// reset, packets whole, packets whole as given). A venue's header may be of any length (a
/// sequence number, a sending time, a channel, a count). Packets that decode whole under the
/// spec's reportable rules too count first: a header cut short can pass for the start of a
/// message (MOEX's sequence number less its first byte and a Reset message read as one
/// message with too long a presence map), and the strict rules see through that. Ties go to
/// the shorter header, then to the reset: where packets decode whole both ways, a feed that
/// resets each packet is read right only with it (a copy field left out for its initial
/// value), and one that does not reset loses nothing to it in these packets.
fn header_that_decodes(
    f: &FramingArgs,
    heads: &[Vec<u8>],
    templates: &Arc<Templates>,
    opts: &DecodeOptions,
) -> Option<(usize, bool, usize, usize)> {
    if f.framing == InputFraming::Raw || heads.len() < 2 {
        return None;
    }
    // Packets decoded whole with these options, under the strict rules and as asked.
    let whole = |skip_header: usize, reset_each_packet: bool| {
        let count = |strict: bool| {
            let opts = DecodeOptions {
                strict,
                ..opts.clone()
            };
            let mut pd = PacketDecoder::new(
                Decoder::with_options(templates.clone(), opts),
                PacketOptions {
                    skip_header,
                    reset_each_packet,
                },
            );
            let packets = heads.iter().enumerate().map(|(index, bytes)| Packet {
                index,
                offset: 0,
                bytes,
            });
            packets
                .filter(|p| pd.decode_packet(p, &mut (), |_, _| {}).is_ok_and(|n| n > 0))
                .count()
        };
        (count(true), count(opts.strict))
    };
    let given = whole(f.skip_header, f.reset_each_packet);
    let (n, skip, reset) = (0..=MAX_HEADER)
        .flat_map(|skip| [false, true].map(|reset| (whole(skip, reset), skip, reset)))
        .max_by_key(|&(n, skip, reset)| (n, std::cmp::Reverse(skip), reset))?;
    (n > given && 2 * n.1 >= heads.len()).then_some((skip, reset, n.1, given.1))
}

fn sequence_header(heads: &[Vec<u8>]) -> Option<(u32, bool)> {
    let words: Vec<[u8; 4]> = heads
        .iter()
        .filter_map(|h| h.get(..4)?.try_into().ok())
        .collect();
    if words.len() < 3 || words.len() < heads.len() {
        return None;
    }
    [false, true].into_iter().find_map(|be| {
        let n: Vec<u32> = words
            .iter()
            .map(|w| match be {
                true => u32::from_be_bytes(*w),
                false => u32::from_le_bytes(*w),
            })
            .collect();
        let steady = n.windows(2).all(|w| w[1] >= w[0] && w[1] - w[0] <= 1);
        (steady && n[n.len() - 1] > n[0]).then_some((n[0], be))
    })
}

/// Blocks whose stop-bit sizes lead from the first to exactly the end of the input, two
/// non-empty ones at least: a raw stream's bytes chain so only by chance.
fn looks_blocks(data: &[u8]) -> bool {
    block_chain(data).is_some_and(|n| n >= 2)
}

/// The non-empty blocks of `data`, if their sizes lead exactly to its end (an empty block is
/// an error, but the sizes still chain).
fn block_chain(data: &[u8]) -> Option<usize> {
    let mut n = 0;
    for b in fastfeed_packet::block_packets(data) {
        match b {
            Ok(_) => n += 1,
            Err(fastfeed_packet::FramingError::ZeroBlock { .. }) => {}
            Err(_) => return None,
        }
    }
    Some(n)
}

/// Whether `data` reads as at least two `len32le` records (or one that fills it).
fn looks_len32le(data: &[u8]) -> bool {
    let records = fastfeed_packet::len32le_packets(data)
        .take(2)
        .take_while(Result::is_ok)
        .count();
    records == 2 || (records == 1 && data.len() > 4)
}
