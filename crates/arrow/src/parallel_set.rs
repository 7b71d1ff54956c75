//! Every template's table from a `len32le` capture on many cores, a file per template in a
//! directory: what [`crate::write_tables`] writes, with blocks of packets decoded (and, for
//! Parquet, encoded into a row group per template) by whichever worker is free, and
//! appended in input order. A template's file is created at its first rows.
//!
//! Decimal scales are learned from the first block, as one pass learns them from a table's
//! first batch, and fixed for every block. A column the first block leaves open (its
//! template, or its values, came later) is learned by each block on its own; where two
//! blocks disagree the conversion fails with the wider scale, for
//! [`crate::with_scale_retry`] to fix and run again.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use fastfeed_codec::Templates;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnWriter, ArrowRowGroupWriterFactory};
use parquet::arrow::ArrowWriter;

use crate::blocks::{Block, Blocks};
use crate::parallel::{Blocking, Encoded, Sink};
use crate::pool::run_blocks;
use crate::reader::Skipped;
use crate::write::{file_name, parquet_properties, FileFormat, Written, WrittenFile};
use crate::{TableError, TableOptions, TableSet};

/// Every template's tables, decoded in blocks.
pub struct ParallelTables<'a> {
    pub templates: &'a Templates,
    pub blocks: Blocking<'a>,
}

/// One template's rows of one block.
struct Part {
    template: usize,
    schema: SchemaRef,
    scales: HashMap<String, i8>,
    encoded: Encoded,
    rows: u64,
}

/// A block, decoded into its templates' parts.
struct Converted {
    parts: Vec<Part>,
    /// Messages by template (those without fields to write too).
    messages: Vec<u64>,
    packets: usize,
    skipped: Skipped,
}

/// A template's file, once it has rows.
struct Out {
    sink: Sink,
    schema: SchemaRef,
    scales: HashMap<String, i8>,
    rows: u64,
}

/// Writes a table per template of `cfg.templates` from `input` (`len32le`, every packet
/// resetting the dictionaries) into `dir` (`<template name>.<format>`), with `cfg.blocks.threads`
/// workers. Templates without rows get no file, as with [`crate::write_tables`].
pub fn write_tables_parallel<R: Read>(
    input: R,
    cfg: &ParallelTables<'_>,
    dir: &Path,
    format: FileFormat,
    progress: impl FnMut(usize),
) -> Result<Written, TableError> {
    std::fs::create_dir_all(dir)?;
    let path = |name: &str| dir.join(file_name(name, format));
    let make = |name: &str, schema: &SchemaRef| Ok(Sink::create(&path(name), schema, format)?.0);
    let done = convert_all(input, cfg, format, make, progress)?;
    let mut written = Written {
        not_written: done.unsupported,
        skipped: done.skipped,
        packets: done.packets,
        bytes: done.bytes,
        ..Default::default()
    };
    for (i, out) in done.outs.into_iter().enumerate() {
        let name = &done.names[i];
        match out {
            Some(out) => {
                out.sink.finish()?;
                written.files.push(WrittenFile {
                    path: path(name),
                    template: name.clone(),
                    rows: out.rows,
                    messages: done.messages[i],
                });
            }
            None if done.messages[i] > 0 => written.not_written.push(format!(
                "template {name}: {} messages, no fields to write",
                done.messages[i]
            )),
            None => {}
        }
    }
    Ok(written)
}

/// Every template's table from `input`, as [`write_tables_parallel`] decodes them, held in
/// memory: (template name, batches, schema) for each template that has messages and
/// fields, and what was skipped.
pub fn collect_tables_parallel<R: Read>(
    input: R,
    cfg: &ParallelTables<'_>,
    progress: impl FnMut(usize),
) -> Result<CollectedTables, TableError> {
    let make = |_: &str, _: &SchemaRef| Ok(Sink::Collect(Vec::new()));
    let done = convert_all(input, cfg, FileFormat::Arrow, make, progress)?;
    let mut tables = Vec::new();
    for (i, out) in done.outs.into_iter().enumerate() {
        match out {
            Some(out) => tables.push((done.names[i].clone(), out.sink.finish()?, out.schema)),
            // Messages without a row (an empty sequence's, in a row per entry): an empty
            // table, as one pass gives.
            None if done.messages[i] > 0 => {
                let schema = done.empty[i].clone();
                if !schema.fields().is_empty() {
                    tables.push((done.names[i].clone(), Vec::new(), schema));
                }
            }
            None => {}
        }
    }
    Ok(CollectedTables {
        tables,
        skipped: done.skipped,
    })
}

/// Tables decoded in memory by [`collect_tables_parallel`].
pub struct CollectedTables {
    pub tables: Vec<(String, Vec<RecordBatch>, SchemaRef)>,
    pub skipped: Skipped,
}

/// What a conversion of every template gathered.
struct AllDone {
    names: Vec<String>,
    /// Each template's schema with no rows (for a table of none).
    empty: Vec<SchemaRef>,
    unsupported: Vec<String>,
    outs: Vec<Option<Out>>,
    messages: Vec<u64>,
    packets: usize,
    skipped: Skipped,
    bytes: usize,
}

/// Converts the blocks of `input` on the workers, encoded for `format`, and appends each
/// template's parts, in input order, to the sink `make` gives it at its first rows.
fn convert_all<R: Read>(
    input: R,
    cfg: &ParallelTables<'_>,
    format: FileFormat,
    mut make: impl FnMut(&str, &SchemaRef) -> Result<Sink, TableError> + Send,
    progress: impl FnMut(usize),
) -> Result<AllDone, TableError> {
    let probe = TableSet::new(cfg.templates, &cfg.blocks.opts, cfg.blocks.batch_rows)?;
    let names: Vec<String> = probe.tables().iter().map(|t| t.name().to_owned()).collect();
    let mut outs: Vec<Option<Out>> = names.iter().map(|_| None).collect();
    let mut messages = vec![0u64; names.len()];
    let (mut packets, mut skipped) = (0usize, Skipped::default());
    let mut blocks = Blocks::new(input, cfg.blocks.max_packet, cfg.blocks.block_bytes);
    let mut opts = cfg.blocks.opts.clone();
    if let Some(first) = blocks.next_block()? {
        opts = learn_scales(cfg, &first)?;
        let append = |c: Converted| {
            for (m, n) in messages.iter_mut().zip(&c.messages) {
                *m += n;
            }
            packets += c.packets;
            skipped.add(c.skipped);
            for part in c.parts {
                let out = match &mut outs[part.template] {
                    Some(out) => {
                        agree(out, &part)?;
                        out
                    }
                    none => none.insert(Out {
                        sink: make(&names[part.template], &part.schema)?,
                        schema: part.schema.clone(),
                        scales: part.scales.clone(),
                        rows: 0,
                    }),
                };
                out.rows += part.rows;
                out.sink.append(part.encoded)?;
            }
            Ok(())
        };
        let convert = |block| convert(cfg, &opts, format, block);
        run_blocks(
            &mut blocks,
            first,
            cfg.blocks.threads,
            &convert,
            append,
            progress,
        )?;
    }
    let empty = TableSet::new(cfg.templates, &opts, cfg.blocks.batch_rows)?
        .tables()
        .iter()
        .map(|t| t.schema())
        .collect();
    Ok(AllDone {
        names,
        empty,
        unsupported: probe.unsupported.iter().map(|e| e.to_string()).collect(),
        outs,
        messages,
        packets,
        skipped,
        bytes: blocks.base,
    })
}

/// The options with every decimal column's scale fixed as the first block's tables set it
/// (the widest where two templates' columns share a name).
fn learn_scales(cfg: &ParallelTables<'_>, first: &Block) -> Result<TableOptions, TableError> {
    let mut set = TableSet::new(cfg.templates, &cfg.blocks.opts, cfg.blocks.batch_rows)?;
    let mut stream = first.stream(
        cfg.blocks.new_decoder,
        cfg.blocks.packet,
        cfg.blocks.max_packet,
    );
    let mut skipped = Skipped::default();
    while set.fill(&mut stream, cfg.blocks.on_error, &mut skipped)? {
        while set.finish_full()?.is_some() {}
    }
    set.finish_all()?;
    let mut opts = cfg.blocks.opts.clone();
    for t in set.tables() {
        for (column, scale) in t.scales() {
            if !cfg.blocks.opts.column_scales.contains_key(&column) {
                let s = opts.column_scales.entry(column).or_insert(scale);
                *s = (*s).max(scale);
            }
        }
    }
    Ok(opts)
}

/// A later block's part must have its file's schema; where only a decimal scale differs,
/// the wider one is what a run again needs.
fn agree(out: &Out, part: &Part) -> Result<(), TableError> {
    if part.schema.fields() == out.schema.fields() {
        return Ok(());
    }
    for (column, &scale) in &part.scales {
        if let Some(&had) = out.scales.get(column) {
            if had != scale {
                return Err(TableError::Decimal {
                    column: column.clone(),
                    value: format!("(scale {scale} in one block, {had} in another)"),
                    scale: had.min(scale),
                    needed: Some(had.max(scale)),
                });
            }
        }
    }
    Err(TableError::Schema(format!(
        "template {}: blocks of the input give its table different schemas",
        part.template
    )))
}

/// A template's rows of the block being converted, as they are encoded.
struct Building {
    schema: SchemaRef,
    scales: HashMap<String, i8>,
    rows: u64,
    /// Parquet: the column writers (and the factory kept with them); Arrow: the batches.
    writers: Option<(ArrowRowGroupWriterFactory, Vec<ArrowColumnWriter>)>,
    batches: Vec<RecordBatch>,
}

impl Building {
    fn new(
        schema: SchemaRef,
        scales: HashMap<String, i8>,
        format: FileFormat,
        seq: usize,
    ) -> Result<Self, TableError> {
        let writers = match format {
            FileFormat::Parquet => {
                // Column chunks encoded for this schema append to any file of it.
                let props = parquet_properties(&schema)?;
                let (_, factory) =
                    ArrowWriter::try_new(std::io::sink(), schema.clone(), Some(props))?
                        .into_serialized_writer()?;
                let columns = factory.create_column_writers(seq)?;
                Some((factory, columns))
            }
            FileFormat::Arrow => None,
        };
        Ok(Building {
            schema,
            scales,
            rows: 0,
            writers,
            batches: Vec::new(),
        })
    }

    fn add(&mut self, batch: RecordBatch) -> Result<(), TableError> {
        if batch.schema().fields() != self.schema.fields() {
            return Err(TableError::Schema(
                "a table's batches within one block have different schemas".into(),
            ));
        }
        self.rows += batch.num_rows() as u64;
        match &mut self.writers {
            Some((_, writers)) => {
                let mut leaves = writers.iter_mut();
                for (field, array) in self.schema.fields().iter().zip(batch.columns()) {
                    for leaf in compute_leaves(field, array)? {
                        let w = leaves.next().expect("a writer per leaf column");
                        w.write(&leaf)?;
                    }
                }
            }
            None => self.batches.push(batch),
        }
        Ok(())
    }

    fn finish(self, template: usize) -> Result<Part, TableError> {
        let encoded = match self.writers {
            Some((_, writers)) => Encoded::Parquet(
                writers
                    .into_iter()
                    .map(|w| w.close())
                    .collect::<Result<_, _>>()?,
            ),
            None => Encoded::Arrow(self.batches),
        };
        Ok(Part {
            template,
            schema: self.schema,
            scales: self.scales,
            encoded,
            rows: self.rows,
        })
    }
}

/// Decodes a block into a table per template and encodes each template's rows.
fn convert(
    cfg: &ParallelTables<'_>,
    opts: &TableOptions,
    format: FileFormat,
    block: Block,
) -> Result<Converted, TableError> {
    let mut set = TableSet::new(cfg.templates, opts, cfg.blocks.batch_rows)?;
    let mut stream = block.stream(
        cfg.blocks.new_decoder,
        cfg.blocks.packet,
        cfg.blocks.max_packet,
    );
    let mut skipped = Skipped::default();
    let mut building: Vec<Option<Building>> = set.tables().iter().map(|_| None).collect();
    let mut add = |set: &TableSet, (i, batch): (usize, RecordBatch)| -> Result<(), TableError> {
        if batch.num_columns() == 0 {
            return Ok(()); // A template without fields (a reset message): nothing to write.
        }
        let b = match &mut building[i] {
            Some(b) => b,
            none => none.insert(Building::new(
                batch.schema(),
                set.tables()[i].scales(),
                format,
                block.seq,
            )?),
        };
        b.add(batch)
    };
    loop {
        let more = set.fill(&mut stream, cfg.blocks.on_error, &mut skipped)?;
        while let Some(b) = set.finish_full()? {
            add(&set, b)?;
        }
        if !more {
            break;
        }
    }
    for b in set.finish_all()? {
        add(&set, b)?;
    }
    let parts = building
        .into_iter()
        .enumerate()
        .filter_map(|(i, b)| b.map(|b| b.finish(i)))
        .collect::<Result<_, _>>()?;
    Ok(Converted {
        parts,
        messages: set.tables().iter().map(|t| t.messages()).collect(),
        packets: stream.packets() - block.first_packet,
        skipped,
    })
}
