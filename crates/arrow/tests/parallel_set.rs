//! The parallel conversion of every template (a file per template in a directory) against
//! the sequential one: the same files, rows and counts, whatever the number of workers and
//! the size of the blocks, and the same decimal scales where blocks disagree.

use std::path::Path;
use std::sync::Arc;

use fastfeed_arrow::{
    with_scale_retry, write_tables, write_tables_parallel, FileFormat, OnError, ParallelTables,
    TableError, TableOptions, TableSet, Written,
};
use fastfeed_codec::{Decoder, Templates};
use fastfeed_packet::{Framing, StreamDecoder};

mod common;
use common::*;

fn sequential(
    ts: &Arc<Templates>,
    opts: &TableOptions,
    data: &[u8],
    dir: &Path,
    format: FileFormat,
) -> Result<Written, TableError> {
    with_scale_retry(opts, |o| {
        let stream = StreamDecoder::new(data, Framing::Len32Le, Decoder::new(ts.clone()), RESET);
        let set = TableSet::new(ts, o, 1000)?;
        write_tables(stream, set, dir, format, OnError::Skip, |_| {})
    })
}

fn parallel_once(
    ts: &Arc<Templates>,
    opts: &TableOptions,
    data: &[u8],
    (threads, block_bytes): (usize, usize),
    dir: &Path,
    format: FileFormat,
) -> Result<Written, TableError> {
    let new_decoder = || Decoder::new(ts.clone());
    let cfg = ParallelTables {
        templates: ts,
        blocks: blocking(opts, &new_decoder, (threads, block_bytes)),
    };
    write_tables_parallel(data, &cfg, dir, format, |_| {})
}

fn parallel(
    ts: &Arc<Templates>,
    opts: &TableOptions,
    data: &[u8],
    shape: (usize, usize),
    dir: &Path,
    format: FileFormat,
) -> Result<Written, TableError> {
    with_scale_retry(opts, |o| parallel_once(ts, o, data, shape, dir, format))
}

/// The same files with the same rows, and the same counts.
fn same(a: &Written, b: &Written, format: FileFormat) {
    let files = |w: &Written| -> Vec<(String, u64, u64)> {
        let mut v: Vec<_> = w
            .files
            .iter()
            .map(|f| (f.template.clone(), f.rows, f.messages))
            .collect();
        v.sort();
        v
    };
    assert_eq!(files(a), files(b));
    for f in &a.files {
        let other = b.files.iter().find(|g| g.template == f.template).unwrap();
        assert_eq!(
            rows(&f.path, format),
            rows(&other.path, format),
            "{}",
            f.template
        );
    }
    assert_eq!((a.packets, a.bytes), (b.packets, b.bytes));
    assert_eq!(a.skipped.count, b.skipped.count);
    assert_eq!(a.not_written, b.not_written);
}

#[test]
fn every_template_on_any_number_of_workers_makes_the_sequential_files() {
    let (ts, data) = complex();
    let dir = scratch("set-equal");
    let opts = TableOptions {
        entries: Some("MDEntries".into()),
        ..Default::default()
    };
    for format in [FileFormat::Parquet, FileFormat::Arrow] {
        let want = sequential(&ts, &opts, &data, &dir.join("seq"), format).unwrap();
        assert!(want.files.len() >= 2, "{:?}", want.files);
        for shape in [(1, 64 << 10), (3, 64 << 10), (2, 1 << 20), (4, 3000)] {
            let out = dir.join(format!("par-{}-{}", shape.0, shape.1));
            let got = parallel(&ts, &opts, &data, shape, &out, format).unwrap();
            same(&got, &want, format);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn blocks_that_learn_different_scales_agree_on_the_wider_one() {
    // The first block holds only Other: Px's scale is learned by each later block, from its
    // first value: two digits in the early blocks, four in the last ones.
    let mut values: Vec<(i32, i64)> = (0..600).map(|i| (-2, 100 + i)).collect();
    values.extend((0..600).map(|i| (-4, 10_000 + i)));
    let (ts, data) = px_packets(400, &values);
    let dir = scratch("set-scale");
    let opts = TableOptions::default();
    let want = sequential(&ts, &opts, &data, &dir.join("seq"), FileFormat::Parquet).unwrap();
    let shape = (3, 1 << 10);
    let got = parallel(
        &ts,
        &opts,
        &data,
        shape,
        &dir.join("par"),
        FileFormat::Parquet,
    )
    .unwrap();
    same(&got, &want, FileFormat::Parquet);
    let px = rows(&dir.join("par/Px.parquet"), FileFormat::Parquet);
    assert_eq!(px.num_rows(), 1200);
    assert_eq!(
        px.schema().field(0).data_type(),
        &arrow_schema::DataType::Decimal128(38, 4)
    );

    // Once, without the retry: the disagreement, with the scale that holds both.
    let r = parallel_once(
        &ts,
        &opts,
        &data,
        shape,
        &dir.join("once"),
        FileFormat::Parquet,
    );
    assert!(
        matches!(
            r,
            Err(TableError::Decimal {
                scale: 2,
                needed: Some(4),
                ..
            })
        ),
        "{r:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_empty_input_writes_no_file() {
    let (ts, _) = px_packets(0, &[]);
    let dir = scratch("set-empty");
    let got = parallel(
        &ts,
        &TableOptions::default(),
        &[],
        (2, 256),
        &dir,
        FileFormat::Parquet,
    )
    .unwrap();
    assert!(got.files.is_empty());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}
