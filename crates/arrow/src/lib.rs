//! fastfeed-arrow: decoded FAST messages as Arrow record batches, one table per template,
//! typed from the template, filled through the decoder's callback [`Handler`] interface (no
//! message trees in between), and streamed to Parquet or Arrow IPC files in bounded memory.
//!
//! Types: `uInt8..64` and `int8..64` are Arrow's unsigned and signed integers of the same
//! width, `decimal` is decimal128(38, scale) (see [`TableBuilder`] for the scale), ASCII and
//! unicode strings are `utf8`, byte vectors `binary`; optional fields (and the fields of
//! optional groups) are nullable. Groups are flattened into `Group.Field` columns. Rows are
//! messages, with each sequence a list of structs, or the entries of one sequence
//! ([`TableOptions::entries`]) with their message's fields repeated on each.
//!
//! ```no_run
//! use fastfeed_arrow::{BatchReader, OnError, TableBuilder, TableOptions};
//! use fastfeed_packet::{Framing, PacketOptions, StreamDecoder};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let templates = fastfeed_codec::parse_templates(&std::fs::read_to_string("example.xml")?)?;
//! let file = std::io::BufReader::new(std::fs::File::open("complex30000.dat")?);
//! let stream = StreamDecoder::new(file, Framing::Len32Le,
//!     fastfeed_codec::Decoder::new(templates.clone()), PacketOptions::default());
//! let opts = TableOptions { entries: Some("MDEntries".into()), ..Default::default() };
//! let table = TableBuilder::new(templates.by_name("MarketData").unwrap(), &opts)?;
//! for batch in BatchReader::new(stream, table, OnError::Stop)? {
//!     println!("{} rows", batch?.num_rows());
//! }
//! # Ok(()) }
//! ```
// Only `unchecked` holds unsafe code (with a fuzz target over it: `tables`).
#![deny(unsafe_code)]

mod blocks;
mod builder;
mod column;
mod parallel;
mod parallel_set;
mod plan;
mod pool;
mod reader;
mod unchecked;
mod write;

pub use builder::{TableBuilder, DEFAULT_BATCH_ROWS};
pub use parallel::{
    collect_table_parallel, default_threads, write_table_parallel, Blocking, CollectedTable,
    ParallelTable, BLOCK_BYTES,
};
pub use parallel_set::{
    collect_tables_parallel, write_tables_parallel, CollectedTables, ParallelTables,
};
pub use plan::TableOptions;
pub use reader::{BatchReader, OnError, Skipped, TableSet, KEPT_ERRORS};
pub use write::{
    write_table, write_tables, FileFormat, TableWriter, Written, WrittenFile, ROW_GROUP_ROWS,
};

use fastfeed_packet::StreamError;

/// Why a table could not be made or written.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// The template cannot be a table (a dynamic template reference), or the options do
    /// not fit it.
    #[error("{0}")]
    Schema(String),
    #[error("template {template} has no sequence {name:?}")]
    NoSequence { template: String, name: String },
    /// No template of that name (or id), or a name several share: why.
    #[error("{0}")]
    NoTemplate(String),
    /// A decimal that the column's decimal128 scale cannot hold exactly; `needed` is the
    /// scale that would, if one would.
    #[error("column {column}: decimal {value} does not fit decimal128(38, {scale}) exactly{}", needed.map(|s| format!("; scale {s} would hold it")).unwrap_or_default())]
    Decimal {
        column: String,
        value: String,
        scale: i8,
        needed: Option<i8>,
    },
    #[error(transparent)]
    Stream(#[from] StreamError),
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Runs a conversion again with a wider decimal scale for a column whose later values have
/// more fraction digits than the first batch's (see [`TableBuilder`]), so the result is
/// exact without fixing scales by hand. Each retry decodes from the start.
pub fn with_scale_retry<T>(
    opts: &TableOptions,
    mut convert: impl FnMut(&TableOptions) -> Result<T, TableError>,
) -> Result<T, TableError> {
    let mut opts = opts.clone();
    loop {
        match convert(&opts) {
            Err(TableError::Decimal {
                column,
                needed: Some(scale),
                ..
            }) if opts.column_scales.get(&column) != Some(&scale) => {
                opts.column_scales.insert(column, scale);
            }
            r => return r,
        }
    }
}
