//! `fastfeed decode --format parquet|arrow`: FAST to table files through fastfeed-arrow,
//! streamed in record batches, with a progress bar on a terminal.

use std::fs::File;
use std::io::{BufReader, IsTerminal, Read};
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use fastfeed_arrow::{
    with_scale_retry, write_table, write_table_parallel, write_tables, write_tables_parallel,
    BatchReader, Blocking, FileFormat, OnError, ParallelTable, ParallelTables, TableBuilder,
    TableOptions, TableSet, Written,
};
use fastfeed_capture::{Len32Payloads, PayloadStats};
use fastfeed_codec::{DecodeOptions, Decoder, Templates};
use fastfeed_packet::{Framing, PacketOptions, StreamDecoder};
use indicatif::{ProgressBar, ProgressStyle};

use crate::hint::{self, Heads};
use crate::FramingArgs;

/// What `decode` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// JSON Lines on standard output.
    Json,
    /// Parquet files (snappy).
    Parquet,
    /// Arrow IPC files.
    Arrow,
}

/// How messages become table rows (`--format parquet|arrow`).
#[derive(Args, Debug)]
pub struct TableArgs {
    /// A row per entry of this sequence (MDEntries, say), with the message's fields repeated
    /// on each; without it a row per message, sequences as lists.
    #[arg(long)]
    pub entries: Option<String>,
    /// Rows per record batch (and per Parquet write).
    #[arg(long, default_value_t = fastfeed_arrow::DEFAULT_BATCH_ROWS)]
    pub batch_rows: usize,
    /// The scale of every decimal column; by default learned from the data, exactly.
    #[arg(long)]
    pub decimal_scale: Option<i8>,
    /// Workers decoding and encoding blocks of packets at once, with `--template` on a
    /// `len32le` file whose packets each reset the dictionaries (`--reset-each-packet`);
    /// 0: one per core, at most 16. Other inputs decode on one thread, with the file written
    /// on another.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// No progress bar.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// Decodes `input` into one table file (`template` given) or a directory of one file per
/// template.
pub fn run(
    format: Format,
    framing: &FramingArgs,
    strict: bool,
    input: &Path,
    output: Option<&Path>,
    template: Option<&str>,
    a: &TableArgs,
) -> Result<ExitCode> {
    let format = match format {
        Format::Parquet => FileFormat::Parquet,
        Format::Arrow => FileFormat::Arrow,
        Format::Json => unreachable!("JSON is decode's own"),
    };
    let Some(output) = output else {
        bail!(
            "--format {} writes files: give -o FILE (with --template) or -o DIR",
            format.extension()
        );
    };
    if input.as_os_str() == "-" {
        bail!(
            "--format {} reads a file, not standard input",
            format.extension()
        );
    }
    let templates = crate::input::templates(&framing.templates, !framing.no_scp)?;
    let size = std::fs::metadata(input)
        .with_context(|| format!("reading {}", input.display()))?
        .len();
    // A capture's UDP payloads reach the decoder as len32le packets, read a run at a time.
    let capture = matches!(framing.framing, crate::InputFraming::Pcap)
        || crate::input::is_capture_file(input)?;
    let stream_framing = match capture {
        true => Framing::Len32Le,
        false => framing.framing.framing(),
    };
    let capture_stats = Arc::new(Mutex::new(PayloadStats::default()));
    let bar = progress(size, a.quiet);
    let opts = TableOptions {
        entries: a.entries.clone(),
        decimal_scale: a.decimal_scale,
        ..Default::default()
    };
    let threads = match a.threads {
        0 => fastfeed_arrow::default_threads(),
        n => n,
    };
    let new_decoder = || {
        Decoder::with_options(
            templates.clone(),
            DecodeOptions {
                strict,
                ..Default::default()
            },
        )
    };
    let packet = PacketOptions {
        skip_header: framing.skip_header,
        reset_each_packet: framing.reset_each_packet,
    };
    let open = || -> Result<Box<dyn Read>> {
        let file = File::open(input).with_context(|| format!("reading {}", input.display()))?;
        let file = BufReader::with_capacity(1 << 20, file);
        if !capture {
            return Ok(Box::new(file));
        }
        let payloads = Len32Payloads::new(file, framing.udp)
            .with_context(|| format!("reading {}", input.display()))?;
        Ok(Box::new(payloads.counting_into(capture_stats.clone())))
    };
    // The bar counts file bytes: a capture's come from its reader, not the decoder's stream.
    let show = |pos: usize| {
        if let Some(b) = &bar {
            let file_pos = match capture {
                true => capture_stats.lock().expect("not poisoned").bytes,
                false => pos as u64,
            };
            b.set_position(file_pos);
        }
    };
    // Blocks of packets decode apart only where every packet starts from empty dictionaries.
    let blocks = threads > 1 && packet.reset_each_packet && stream_framing == Framing::Len32Le;
    let parallel = template.filter(|_| blocks);
    if a.threads > 1 && !blocks {
        eprintln!(
            "note: --threads {} needs packets (--framing len32le, or a capture) and \
             --reset-each-packet (blocks of packets decode apart only where each packet \
             starts from empty dictionaries): decoding on one thread",
            a.threads
        );
    }
    // An input that cannot be opened fails with its own error, kept aside from the table's.
    let opened = |failure: &mut Option<anyhow::Error>| {
        open().map_err(|e| {
            *failure = Some(e);
            fastfeed_arrow::TableError::Schema("input".into())
        })
    };
    let mut failure = None;
    let written = with_scale_retry(&opts, |opts| {
        let blocking = || Blocking {
            opts: opts.clone(),
            batch_rows: a.batch_rows,
            on_error: OnError::Skip,
            new_decoder: &new_decoder,
            packet,
            max_packet: fastfeed_packet::DEFAULT_MAX_PACKET,
            threads,
            block_bytes: fastfeed_arrow::BLOCK_BYTES,
        };
        if let Some(name) = parallel {
            let data = opened(&mut failure)?;
            let t = templates
                .lookup(name)
                .map_err(|e| fastfeed_arrow::TableError::NoTemplate(e.to_string()))?;
            let cfg = ParallelTable {
                template: t,
                blocks: blocking(),
            };
            if let Some(w) = write_table_parallel(data, &cfg, output, format, show)? {
                return Ok(w);
            }
            // No row in the first block to learn the schema from: one thread, from the start.
        }
        if template.is_none() && blocks {
            let cfg = ParallelTables {
                templates: &templates,
                blocks: blocking(),
            };
            return write_tables_parallel(opened(&mut failure)?, &cfg, output, format, show);
        }
        let data = opened(&mut failure)?;
        let stream = StreamDecoder::new(data, stream_framing, new_decoder(), packet);
        match template {
            Some(name) => {
                let t = table_builder(&templates, name, opts, a.batch_rows)?;
                let reader = BatchReader::new(stream, t, OnError::Skip)?;
                write_table(reader, name, output, format, show)
            }
            None => {
                let set = TableSet::new(&templates, opts, a.batch_rows)?;
                write_tables(stream, set, output, format, OnError::Skip, show)
            }
        }
    });
    let written = written.map(|mut w| {
        if capture {
            let stats = capture_stats.lock().expect("not poisoned");
            crate::input::report_capture(&stats);
            w.bytes = stats.bytes as usize; // The file's bytes, not the payloads'.
        }
        w
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    if let Some(e) = failure {
        return Err(e);
    }
    let written = written?;
    let code = report(&written)?;
    // Nothing written, or most packets failed: the packet header that makes the first
    // packets decode, read again from the start of the input.
    let errors = written.skipped.count as usize;
    let messages: u64 = written.files.iter().map(|f| f.messages).sum();
    if errors > 0 && (messages == 0 || 2 * errors >= written.packets) {
        let mut start = Vec::new();
        open()?
            .take(1 << 20)
            .read_to_end(&mut start)
            .with_context(|| format!("reading {}", input.display()))?;
        let mut heads = Heads::default();
        for p in stream_framing.packets(&start).map_while(Result::ok) {
            heads.add(p.bytes);
        }
        let opts = DecodeOptions {
            strict,
            ..Default::default()
        };
        if let Some(h) = hint::packet_header(framing, &heads, &templates, &opts) {
            eprintln!("{errors} errors: {h}");
        }
    }
    Ok(code)
}

/// `--template` picks a table; JSON output filters with `--only`.
pub fn json_takes_no_template(template: Option<&str>) -> Result<()> {
    if template.is_some() {
        bail!("--template goes with --format parquet or arrow (JSON filters with --only)");
    }
    Ok(())
}

fn table_builder(
    templates: &Arc<Templates>,
    name: &str,
    opts: &TableOptions,
    batch_rows: usize,
) -> Result<TableBuilder, fastfeed_arrow::TableError> {
    let t = templates
        .lookup(name)
        .map_err(|e| fastfeed_arrow::TableError::NoTemplate(e.to_string()))?;
    Ok(TableBuilder::new(t, opts)?.batch_rows(batch_rows))
}

/// A byte-count bar on standard error, only when it is a terminal.
fn progress(total: u64, quiet: bool) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
            .expect("a valid template"),
    );
    Some(bar)
}

fn report(w: &Written) -> Result<ExitCode> {
    for f in &w.files {
        eprintln!(
            "{}: {} rows from {} {} messages",
            f.path.display(),
            f.rows,
            f.messages,
            f.template
        );
    }
    for n in &w.not_written {
        eprintln!("not written: {n}");
    }
    for e in &w.skipped.first {
        eprintln!("error: {e}");
    }
    if w.skipped.count > w.skipped.first.len() as u64 {
        eprintln!(
            "... and {} more errors",
            w.skipped.count - w.skipped.first.len() as u64
        );
    }
    eprintln!(
        "decoded {} packets, {} bytes, {} errors",
        w.packets, w.bytes, w.skipped.count
    );
    Ok(if w.skipped.count == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
