//! Record batches to files, batch by batch: Parquet (snappy-compressed, a row group every
//! [`ROW_GROUP_ROWS`] rows) or the Arrow IPC file format.

use std::fs::File;
use std::io::{BufWriter, Read};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use fastfeed_packet::StreamDecoder;
use parquet::arrow::{ArrowSchemaConverter, ArrowWriter};
use parquet::basic::{Compression, ConvertedType, Encoding, Type as PhysicalType};
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use crate::reader::{OnError, Skipped};
use crate::{BatchReader, TableError, TableSet};

/// Rows per Parquet row group: the writer holds one row group's encoded pages in memory.
pub const ROW_GROUP_ROWS: usize = 256 * 1024;

/// A table file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    Parquet,
    /// The Arrow IPC file format (Feather v2).
    Arrow,
}

impl FileFormat {
    pub fn extension(self) -> &'static str {
        match self {
            FileFormat::Parquet => "parquet",
            FileFormat::Arrow => "arrow",
        }
    }
}

impl FromStr for FileFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "parquet" => Ok(FileFormat::Parquet),
            "arrow" | "ipc" | "feather" => Ok(FileFormat::Arrow),
            _ => Err(format!("unknown table format {s:?} (parquet or arrow)")),
        }
    }
}

/// One table file being written.
pub enum TableWriter {
    Parquet(Box<ArrowWriter<BufWriter<File>>>),
    Arrow(Box<arrow_ipc::writer::FileWriter<BufWriter<File>>>),
}

impl TableWriter {
    pub fn create(path: &Path, schema: SchemaRef, format: FileFormat) -> Result<Self, TableError> {
        let file = BufWriter::new(File::create(path)?);
        Ok(match format {
            FileFormat::Parquet => {
                let props = parquet_properties(&schema)?;
                TableWriter::Parquet(Box::new(ArrowWriter::try_new(file, schema, Some(props))?))
            }
            FileFormat::Arrow => TableWriter::Arrow(Box::new(
                arrow_ipc::writer::FileWriter::try_new(file, &schema)?,
            )),
        })
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), TableError> {
        match self {
            TableWriter::Parquet(w) => w.write(batch)?,
            TableWriter::Arrow(w) => w.write(batch)?,
        }
        Ok(())
    }

    pub fn finish(self) -> Result<(), TableError> {
        match self {
            TableWriter::Parquet(w) => {
                w.close()?;
            }
            TableWriter::Arrow(mut w) => w.finish()?,
        }
        Ok(())
    }
}

/// Parquet's settings for a table of this schema: snappy, row groups of [`ROW_GROUP_ROWS`],
/// integers delta-coded, no statistics on decimals.
pub(crate) fn parquet_properties(schema: &SchemaRef) -> Result<WriterProperties, TableError> {
    let mut props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS));
    // Measured: with statistics on its decimal128 columns the writer's memory
    // grows by about 2 MB per row group for the whole file (430 MB at 1.1 GB of
    // input, 66 MB without); the other columns keep theirs.
    let descr = ArrowSchemaConverter::new().convert(schema)?;
    for col in descr.columns() {
        // Integers (sequence numbers, times, sizes, counts) are delta-coded, not
        // dictionary-coded: most are nearly all distinct, and hashing each into a
        // dictionary cost time for nothing. Measured on 104 MB of the simulator's
        // complex data (4.6 M entry rows): 1.05-1.09 s instead of 1.33-1.37, and
        // 43.0 MB of file instead of 72.8. Strings and decimals keep their
        // dictionaries (without them: no faster, and a bigger file).
        if matches!(
            col.physical_type(),
            PhysicalType::INT32 | PhysicalType::INT64
        ) {
            props = props
                .set_column_dictionary_enabled(col.path().clone(), false)
                .set_column_encoding(col.path().clone(), Encoding::DELTA_BINARY_PACKED);
        }
        if col.converted_type() == ConvertedType::DECIMAL {
            props =
                props.set_column_statistics_enabled(col.path().clone(), EnabledStatistics::None);
        }
    }
    Ok(props.build())
}

/// What a conversion wrote.
#[derive(Debug, Default)]
pub struct Written {
    /// Each file with its template name, rows and messages.
    pub files: Vec<WrittenFile>,
    /// Templates whose messages were not written, and why.
    pub not_written: Vec<String>,
    pub skipped: Skipped,
    pub packets: usize,
    pub bytes: usize,
}

#[derive(Debug)]
pub struct WrittenFile {
    pub path: PathBuf,
    pub template: String,
    pub rows: u64,
    pub messages: u64,
}

/// Writes one template's table to `path`, batch by batch. `progress` gets the input bytes
/// consumed after each batch.
pub fn write_table<R: Read>(
    mut reader: BatchReader<R>,
    template: &str,
    path: &Path,
    format: FileFormat,
    mut progress: impl FnMut(usize),
) -> Result<Written, TableError> {
    let mut writer = TableWriter::create(path, reader.table().schema(), format)?;
    let (writer, rows) = pipelined(
        move |batches| {
            let mut rows = 0u64;
            for (_, batch) in batches {
                rows += batch.num_rows() as u64;
                writer.write(&batch)?;
            }
            Ok((writer, rows))
        },
        |tx| {
            while let Some(batch) = reader.next_batch()? {
                if tx.send((0, batch)).is_err() {
                    break; // The writer failed: its error is the one returned.
                }
                progress(reader.stream().position());
            }
            Ok(())
        },
    )?;
    writer.finish()?;
    let stream = reader.stream();
    let (packets, bytes) = (stream.packets(), stream.position());
    let messages = reader.table().messages();
    let skipped = reader.take_skipped();
    Ok(Written {
        files: vec![WrittenFile {
            path: path.to_owned(),
            template: template.to_owned(),
            rows,
            messages,
        }],
        not_written: Vec::new(),
        skipped,
        packets,
        bytes,
    })
}

/// Writes a table per template into the directory `dir` (`<template name>.<format>`), in
/// one pass over the stream. Templates without messages get no file.
pub fn write_tables<R: Read>(
    mut stream: StreamDecoder<R>,
    mut set: TableSet,
    dir: &Path,
    format: FileFormat,
    on_error: OnError,
    mut progress: impl FnMut(usize),
) -> Result<Written, TableError> {
    std::fs::create_dir_all(dir)?;
    let paths: Vec<PathBuf> = set
        .tables()
        .iter()
        .map(|t| dir.join(file_name(t.name(), format)))
        .collect();
    let mut skipped = Skipped::default();
    let (writers, rows) = pipelined(
        |batches| {
            let mut writers: Vec<Option<TableWriter>> = paths.iter().map(|_| None).collect();
            let mut rows = vec![0u64; writers.len()];
            for (i, batch) in batches {
                if batch.num_columns() == 0 {
                    // A template without fields (a reset message) has nothing to write.
                    continue;
                }
                let w = match &mut writers[i] {
                    Some(w) => w,
                    none => none.insert(TableWriter::create(&paths[i], batch.schema(), format)?),
                };
                rows[i] += batch.num_rows() as u64;
                w.write(&batch)?;
            }
            Ok((writers, rows))
        },
        |tx| {
            let send = |b| tx.send(b).is_ok();
            loop {
                let more = set.fill(&mut stream, on_error, &mut skipped)?;
                while let Some(b) = set.finish_full()? {
                    if !send(b) {
                        return Ok(()); // The writer failed: its error is the one returned.
                    }
                }
                progress(stream.position());
                if !more {
                    break;
                }
            }
            for b in set.finish_all()? {
                if !send(b) {
                    break;
                }
            }
            Ok(())
        },
    )?;
    let mut out = Written {
        skipped,
        packets: stream.packets(),
        bytes: stream.position(),
        not_written: set.unsupported.iter().map(|e| e.to_string()).collect(),
        ..Default::default()
    };
    for (i, w) in writers.into_iter().enumerate() {
        let t = &set.tables()[i];
        match w {
            Some(w) => {
                w.finish()?;
                out.files.push(WrittenFile {
                    path: dir.join(file_name(t.name(), format)),
                    template: t.name().to_owned(),
                    rows: rows[i],
                    messages: t.messages(),
                });
            }
            None if t.messages() > 0 => out.not_written.push(format!(
                "template {}: {} messages, no fields to write",
                t.name(),
                t.messages()
            )),
            None => {}
        }
    }
    Ok(out)
}

/// Batches between the decoding thread and the writing one: enough to keep both busy, and
/// a bound on the memory between them.
const BATCHES_IN_FLIGHT: usize = 2;

/// Runs `write` on a thread of its own over the batches `produce` sends it (with their
/// table's index), so decoding the next batch overlaps encoding this one (Parquet's encoding
/// takes longer than decoding). Returns what `write` returns; its error comes first, as a
/// failed writer is why `produce` stopped.
fn pipelined<T: Send>(
    write: impl FnOnce(Receiver<(usize, RecordBatch)>) -> Result<T, TableError> + Send,
    produce: impl FnOnce(&SyncSender<(usize, RecordBatch)>) -> Result<(), TableError>,
) -> Result<T, TableError> {
    std::thread::scope(|s| {
        let (tx, rx) = sync_channel(BATCHES_IN_FLIGHT);
        let writer = std::thread::Builder::new()
            .name("table writer".into())
            .spawn_scoped(s, move || write(rx))?;
        let produced = produce(&tx);
        drop(tx);
        let written = writer.join().unwrap_or_else(|_| {
            Err(TableError::Io(std::io::Error::other(
                "the table writer thread panicked",
            )))
        })?;
        produced.map(|()| written)
    })
}

/// A file name from a template name: characters unsafe in paths become `_`.
pub(crate) fn file_name(template: &str, format: FileFormat) -> String {
    let safe: String = template
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}.{}", format.extension())
}
