//! One template's table from a `len32le` capture on many cores. Where every packet resets
//! the dictionaries (`reset_each_packet`), a run of whole packets decodes on its own: the
//! input is cut into blocks of packets, each block is decoded and encoded (its Parquet
//! column chunks, or its Arrow batches) by whichever worker is free, and the blocks are
//! written in input order, a Parquet row group each. Decoding and encoding, not the disk,
//! are what a conversion waits on, and both now take every core.

use std::fs::File;
use std::io::{BufWriter, Read};
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use fastfeed_codec::template::Template;
use fastfeed_codec::Decoder;
use fastfeed_packet::PacketOptions;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnChunk, ArrowRowGroupWriterFactory};
use parquet::arrow::ArrowWriter;

use crate::blocks::{Block, Blocks};
use crate::pool::run_blocks;
use crate::reader::{OnError, Skipped};
use crate::write::{parquet_properties, FileFormat, Written, WrittenFile};
use crate::{BatchReader, TableBuilder, TableError, TableOptions};

/// Input bytes per block: a few hundred thousand rows of a typical feed, a row group each.
pub const BLOCK_BYTES: usize = 4 << 20;

/// Workers by default: one per core, at most 16. Each holds about 50-60 MB (a block, a
/// batch being built, one being encoded); past a dozen or so the disk, not the cores, sets
/// the pace.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(16))
}

/// How blocks of packets are decoded on workers, in either parallel conversion.
pub struct Blocking<'a> {
    pub opts: TableOptions,
    pub batch_rows: usize,
    pub on_error: OnError,
    /// A fresh decoder for each block (the dictionaries start empty at every packet).
    pub new_decoder: &'a (dyn Fn() -> Decoder + Sync),
    /// Must reset the dictionaries at each packet: the blocks are decoded independently.
    pub packet: PacketOptions,
    /// The longest packet accepted ([`fastfeed_packet::DEFAULT_MAX_PACKET`]).
    pub max_packet: usize,
    /// Workers decoding and encoding blocks.
    pub threads: usize,
    /// Input bytes per block ([`BLOCK_BYTES`]); a packet longer than this is a block.
    pub block_bytes: usize,
}

/// One template's table, decoded in blocks.
pub struct ParallelTable<'a> {
    /// The template whose messages become rows.
    pub template: &'a Template,
    pub blocks: Blocking<'a>,
}

/// A block, decoded and encoded.
pub(crate) enum Encoded {
    Parquet(Vec<ArrowColumnChunk>),
    Arrow(Vec<RecordBatch>),
}

struct Converted {
    encoded: Encoded,
    rows: u64,
    messages: u64,
    packets: usize,
    skipped: Skipped,
}

/// The file side: where blocks go, in order.
pub(crate) enum Sink {
    Parquet(Box<parquet::file::writer::SerializedFileWriter<BufWriter<File>>>),
    Arrow(Box<arrow_ipc::writer::FileWriter<BufWriter<File>>>),
    /// The batches themselves, for a table held in memory.
    Collect(Vec<RecordBatch>),
}

impl Sink {
    /// A file of `format` at `path` for tables of `schema`, and for Parquet the factory
    /// that encodes blocks' column chunks for it.
    pub(crate) fn create(
        path: &Path,
        schema: &SchemaRef,
        format: FileFormat,
    ) -> Result<(Sink, Option<ArrowRowGroupWriterFactory>), TableError> {
        let file = BufWriter::new(File::create(path)?);
        Ok(match format {
            FileFormat::Parquet => {
                let props = parquet_properties(schema)?;
                let (w, factory) = ArrowWriter::try_new(file, schema.clone(), Some(props))?
                    .into_serialized_writer()?;
                (Sink::Parquet(Box::new(w)), Some(factory))
            }
            FileFormat::Arrow => {
                let w = arrow_ipc::writer::FileWriter::try_new(file, schema)?;
                (Sink::Arrow(Box::new(w)), None)
            }
        })
    }

    pub(crate) fn append(&mut self, encoded: Encoded) -> Result<(), TableError> {
        match (self, encoded) {
            (Sink::Parquet(w), Encoded::Parquet(chunks)) => {
                let mut group = w.next_row_group()?;
                for chunk in chunks {
                    chunk.append_to_row_group(&mut group)?;
                }
                group.close()?;
            }
            (Sink::Arrow(w), Encoded::Arrow(batches)) => {
                for b in &batches {
                    w.write(b)?;
                }
            }
            (Sink::Collect(all), Encoded::Arrow(batches)) => all.extend(batches),
            _ => unreachable!("a block is encoded for its file's format"),
        }
        Ok(())
    }

    /// Closes a file; the batches of a table in memory.
    pub(crate) fn finish(self) -> Result<Vec<RecordBatch>, TableError> {
        match self {
            Sink::Parquet(w) => {
                w.close()?;
            }
            Sink::Arrow(mut w) => w.finish()?,
            Sink::Collect(batches) => return Ok(batches),
        }
        Ok(Vec::new())
    }
}

/// Writes one template's table from `input` (`len32le`, every packet resetting the
/// dictionaries) with `cfg.blocks.threads` workers, to `path`. The table's schema (its decimal
/// scales) is learned from the first block's first batch, as a sequential conversion learns
/// it from its first batch; a later value that needs a wider scale fails the conversion
/// with [`TableError::Decimal`], for [`crate::with_scale_retry`] to run it again.
///
/// Returns `Ok(None)` without writing anything when the first block holds no row of the
/// template, so no schema can be learned from it: the caller converts sequentially.
pub fn write_table_parallel<R: Read>(
    input: R,
    cfg: &ParallelTable<'_>,
    path: &Path,
    format: FileFormat,
    progress: impl FnMut(usize),
) -> Result<Option<Written>, TableError> {
    let mut blocks = Blocks::new(input, cfg.blocks.max_packet, cfg.blocks.block_bytes);
    let Some((first, opts, schema)) = start(&mut blocks, cfg)? else {
        return Ok(None);
    };
    let (sink, factory) = Sink::create(path, &schema, format)?;
    let worker = Worker {
        cfg,
        opts: &opts,
        schema: &schema,
        factory: factory.as_ref(),
    };
    let (tally, sink) = run(&mut blocks, first, &worker, sink, progress)?;
    sink.finish()?;
    Ok(Some(Written {
        files: vec![WrittenFile {
            path: path.to_owned(),
            template: cfg.template.name.clone(),
            rows: tally.rows,
            messages: tally.messages,
        }],
        not_written: Vec::new(),
        skipped: tally.skipped,
        packets: tally.packets,
        bytes: blocks.base,
    }))
}

/// One template's table from `input`, as [`write_table_parallel`] decodes it, held in
/// memory: the batches in input order and their schema. `Ok(None)` as there.
pub fn collect_table_parallel<R: Read>(
    input: R,
    cfg: &ParallelTable<'_>,
    progress: impl FnMut(usize),
) -> Result<Option<CollectedTable>, TableError> {
    let mut blocks = Blocks::new(input, cfg.blocks.max_packet, cfg.blocks.block_bytes);
    let Some((first, opts, schema)) = start(&mut blocks, cfg)? else {
        return Ok(None);
    };
    let worker = Worker {
        cfg,
        opts: &opts,
        schema: &schema,
        factory: None,
    };
    let (tally, sink) = run(
        &mut blocks,
        first,
        &worker,
        Sink::Collect(Vec::new()),
        progress,
    )?;
    Ok(Some(CollectedTable {
        batches: sink.finish()?,
        schema,
        skipped: tally.skipped,
        rows: tally.rows,
        messages: tally.messages,
        packets: tally.packets,
    }))
}

/// A table decoded in memory by [`collect_table_parallel`].
pub struct CollectedTable {
    pub batches: Vec<RecordBatch>,
    pub schema: SchemaRef,
    pub skipped: Skipped,
    pub rows: u64,
    pub messages: u64,
    pub packets: usize,
}

/// The first block, and the options and schema every block is decoded with; `None` when
/// the input is empty or its first block has no row to learn the schema from.
fn start<R: Read>(
    blocks: &mut Blocks<R>,
    cfg: &ParallelTable<'_>,
) -> Result<Option<(Block, TableOptions, SchemaRef)>, TableError> {
    let Some(first) = blocks.next_block()? else {
        return Ok(None);
    };
    let Some(opts) = learn_scales(cfg, &first)? else {
        return Ok(None);
    };
    let schema = TableBuilder::new(cfg.template, &opts)?.schema();
    Ok(Some((first, opts, schema)))
}

/// Hands the blocks to `cfg.blocks.threads` workers and their results, in input order, to `sink`.
fn run<R: Read>(
    blocks: &mut Blocks<R>,
    first: Block,
    worker: &Worker<'_>,
    mut sink: Sink,
    progress: impl FnMut(usize),
) -> Result<(Tally, Sink), TableError> {
    let mut tally = Tally::default();
    let append = |c: Converted| {
        tally.rows += c.rows;
        tally.messages += c.messages;
        tally.packets += c.packets;
        tally.skipped.add(c.skipped);
        if c.rows > 0 {
            sink.append(c.encoded)?;
        }
        Ok(())
    };
    let convert = |block| worker.convert(block);
    run_blocks(
        blocks,
        first,
        worker.cfg.blocks.threads,
        &convert,
        append,
        progress,
    )?;
    Ok((tally, sink))
}

/// The options with every decimal column's scale fixed as the first block's first batch
/// sets it; `None` when that block holds no row of the template.
fn learn_scales(
    cfg: &ParallelTable<'_>,
    first: &Block,
) -> Result<Option<TableOptions>, TableError> {
    let table =
        TableBuilder::new(cfg.template, &cfg.blocks.opts)?.batch_rows(cfg.blocks.batch_rows);
    let stream = first.stream(
        cfg.blocks.new_decoder,
        cfg.blocks.packet,
        cfg.blocks.max_packet,
    );
    let mut probe = BatchReader::new(stream, table, cfg.blocks.on_error)?;
    if probe.next_batch()?.is_none() {
        return Ok(None);
    }
    let mut opts = cfg.blocks.opts.clone();
    for (column, scale) in probe.table().scales() {
        opts.column_scales.entry(column).or_insert(scale);
    }
    Ok(Some(opts))
}

/// What every worker shares.
struct Worker<'a> {
    cfg: &'a ParallelTable<'a>,
    opts: &'a TableOptions,
    schema: &'a SchemaRef,
    factory: Option<&'a ArrowRowGroupWriterFactory>,
}

impl Worker<'_> {
    fn convert(&self, block: Block) -> Result<Converted, TableError> {
        let cfg = self.cfg;
        let table = TableBuilder::new(cfg.template, self.opts)?.batch_rows(cfg.blocks.batch_rows);
        let stream = block.stream(
            cfg.blocks.new_decoder,
            cfg.blocks.packet,
            cfg.blocks.max_packet,
        );
        let mut reader = BatchReader::new(stream, table, cfg.blocks.on_error)?;
        let mut columns = match self.factory {
            Some(f) => Some(f.create_column_writers(block.seq)?),
            None => None,
        };
        let mut batches = Vec::new();
        let mut rows = 0u64;
        while let Some(batch) = reader.next_batch()? {
            if batch.schema().fields() != self.schema.fields() {
                return Err(TableError::Schema(format!(
                    "a block starting at input byte {} has another schema than the first \
                     block's",
                    block.base
                )));
            }
            rows += batch.num_rows() as u64;
            match &mut columns {
                Some(writers) => {
                    let mut leaves = writers.iter_mut();
                    for (field, array) in self.schema.fields().iter().zip(batch.columns()) {
                        for leaf in compute_leaves(field, array)? {
                            let w = leaves.next().expect("a writer per leaf column");
                            w.write(&leaf)?;
                        }
                    }
                }
                None => batches.push(batch),
            }
        }
        let encoded = match columns {
            Some(writers) => Encoded::Parquet(
                writers
                    .into_iter()
                    .map(|w| w.close())
                    .collect::<Result<_, _>>()?,
            ),
            None => Encoded::Arrow(batches),
        };
        let packets = reader.stream().packets() - block.first_packet;
        let messages = reader.table().messages();
        Ok(Converted {
            encoded,
            rows,
            messages,
            packets,
            skipped: reader.take_skipped(),
        })
    }
}

/// The sums over the blocks written.
#[derive(Default)]
struct Tally {
    rows: u64,
    messages: u64,
    packets: usize,
    skipped: Skipped,
}
