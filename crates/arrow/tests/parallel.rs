//! The parallel conversion against the sequential one: the same rows, counts and errors
//! (located in the whole input), whatever the number of workers, and the same file bytes
//! for any number of workers.

use std::path::Path;
use std::sync::Arc;

use fastfeed_arrow::{
    collect_table_parallel, with_scale_retry, write_table, write_table_parallel, BatchReader,
    FileFormat, OnError, ParallelTable, TableBuilder, TableError, TableOptions, Written,
};
use fastfeed_codec::{Decoder, Templates};
use fastfeed_packet::{write_len32le, Framing, StreamDecoder};

mod common;
use common::*;

/// What a conversion makes: a template's table from data of these templates.
struct Case<'a> {
    ts: &'a Arc<Templates>,
    template: &'a str,
    opts: TableOptions,
}

/// complex30000's MarketData entries.
fn md(ts: &Arc<Templates>) -> Case<'_> {
    Case {
        ts,
        template: "MarketData",
        opts: TableOptions {
            entries: Some("MDEntries".into()),
            ..Default::default()
        },
    }
}

/// The Px template's table.
fn px(ts: &Arc<Templates>) -> Case<'_> {
    Case {
        ts,
        template: "Px",
        opts: TableOptions::default(),
    }
}

/// The sequential conversion, as `decode --format` runs it with one thread.
fn sequential(
    c: &Case,
    data: &[u8],
    path: &Path,
    format: FileFormat,
) -> Result<Written, TableError> {
    let (ts, template) = (c.ts, c.template);
    with_scale_retry(&c.opts, |o| {
        let stream = StreamDecoder::new(data, Framing::Len32Le, Decoder::new(ts.clone()), RESET);
        let t = TableBuilder::new(ts.by_name(template).unwrap(), o)?.batch_rows(1000);
        write_table(
            BatchReader::new(stream, t, OnError::Skip)?,
            template,
            path,
            format,
            |_| {},
        )
    })
}

/// The parallel conversion with `threads` workers and blocks of `block_bytes`, once.
fn parallel_once(
    c: &Case,
    data: &[u8],
    (threads, block_bytes): (usize, usize),
    path: &Path,
    format: FileFormat,
) -> Result<Option<Written>, TableError> {
    let ts = c.ts;
    let new_decoder = || Decoder::new(ts.clone());
    let cfg = ParallelTable {
        template: ts.by_name(c.template).unwrap(),
        blocks: blocking(&c.opts, &new_decoder, (threads, block_bytes)),
    };
    write_table_parallel(data, &cfg, path, format, |_| {})
}

/// The parallel conversion, run again with a wider scale where one is needed.
fn parallel(
    c: &Case,
    data: &[u8],
    shape: (usize, usize),
    path: &Path,
    format: FileFormat,
) -> Result<Option<Written>, TableError> {
    with_scale_retry(&c.opts, |o| {
        let c = Case {
            opts: o.clone(),
            ..*c
        };
        parallel_once(&c, data, shape, path, format)
    })
}

fn row_groups(path: &Path) -> usize {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let r = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    r.metadata().num_row_groups()
}

fn same_report(a: &Written, b: &Written) {
    assert_eq!(a.files[0].rows, b.files[0].rows);
    assert_eq!(a.files[0].messages, b.files[0].messages);
    assert_eq!((a.packets, a.bytes), (b.packets, b.bytes));
    assert_eq!(a.skipped.count, b.skipped.count);
    let text =
        |w: &Written| -> Vec<String> { w.skipped.first.iter().map(|e| e.to_string()).collect() };
    assert_eq!(text(a), text(b));
}

#[test]
fn blocks_on_any_number_of_workers_make_the_sequential_table() {
    let (ts, data) = complex();
    let dir = scratch("equal");
    for format in [FileFormat::Parquet, FileFormat::Arrow] {
        let ext = format.extension();
        let seq_path = dir.join(format!("seq.{ext}"));
        let want = sequential(&md(&ts), &data, &seq_path, format).unwrap();
        assert_eq!(want.files[0].rows, 89_700);
        let mut first_bytes = None;
        for threads in [1, 2, 3] {
            let path = dir.join(format!("par{threads}.{ext}"));
            // 64 KiB blocks: about 31 of complex30000's 2 MB, so workers finish out of order.
            let got = parallel(&md(&ts), &data, (threads, 64 << 10), &path, format)
                .unwrap()
                .expect("the first block has rows");
            same_report(&got, &want);
            assert_eq!(
                rows(&path, format),
                rows(&seq_path, format),
                "{threads} {ext}"
            );
            let bytes = std::fs::read(&path).unwrap();
            match &first_bytes {
                None => first_bytes = Some(bytes),
                Some(b) => assert!(*b == bytes, "{threads} workers wrote another {ext} file"),
            }
        }
        if format == FileFormat::Parquet {
            // A row group per block.
            assert_eq!(
                row_groups(&dir.join("par2.parquet")),
                data.len().div_ceil(64 << 10)
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_table_collected_in_memory_holds_the_files_rows() {
    let (ts, data) = complex();
    let dir = scratch("collect");
    let path = dir.join("seq.arrow");
    let want = sequential(&md(&ts), &data, &path, FileFormat::Arrow).unwrap();
    let new_decoder = || Decoder::new(ts.clone());
    let cfg = ParallelTable {
        template: ts.by_name("MarketData").unwrap(),
        blocks: blocking(&md(&ts).opts, &new_decoder, (3, 64 << 10)),
    };
    let got = collect_table_parallel(&data[..], &cfg, |_| {})
        .unwrap()
        .unwrap();
    assert_eq!(
        (got.rows, got.messages, got.packets, got.skipped.count),
        (89_700, want.files[0].messages, want.packets, 0)
    );
    let all = arrow_select::concat::concat_batches(&got.schema, &got.batches).unwrap();
    assert_eq!(all, rows(&path, FileFormat::Arrow));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// complex30000's first `take` packets with the second half of packets `tear` zeroed (no
/// stop bit there, so each fails to decode), then `tail` bytes of one more packet, cut.
fn damaged(data: &[u8], take: usize, tear: &[usize], tail: usize) -> Vec<u8> {
    let mut packets: Vec<Vec<u8>> = Framing::Len32Le
        .packets(data)
        .take(take + 1)
        .map(|p| p.unwrap().bytes.to_vec())
        .collect();
    let last = packets.pop().unwrap();
    for &i in tear {
        let n = packets[i].len();
        packets[i][n / 2..].fill(0);
    }
    let mut out = Vec::new();
    write_len32le(packets.iter().map(|p| p.as_slice()), &mut out).unwrap();
    out.extend((last.len() as u32).to_le_bytes());
    out.extend(&last[..tail.min(last.len() - 1)]);
    out
}

#[test]
fn damaged_packets_and_a_cut_end_are_the_same_errors_at_the_same_places() {
    let (ts, data) = complex();
    let dir = scratch("damaged");
    let bad = damaged(&data, 3000, &[3, 700, 701, 1500, 2999], 10);
    let want = sequential(
        &md(&ts),
        &bad,
        &dir.join("seq.parquet"),
        FileFormat::Parquet,
    )
    .unwrap();
    // Five torn packets and the cut one.
    assert_eq!(want.skipped.count, 6);
    for threads in [1, 3] {
        let path = dir.join(format!("par{threads}.parquet"));
        let got = parallel(
            &md(&ts),
            &bad,
            (threads, 8 << 10),
            &path,
            FileFormat::Parquet,
        )
        .unwrap()
        .unwrap();
        same_report(&got, &want);
        assert_eq!(
            rows(&path, FileFormat::Parquet),
            rows(&dir.join("seq.parquet"), FileFormat::Parquet)
        );
    }

    // A length over the limit ends the input there, as it does a sequential decode.
    let mut broken = data[..50_000].to_vec();
    let at = Framing::Len32Le
        .packets(&broken)
        .nth(400)
        .unwrap()
        .unwrap()
        .offset
        - 4;
    broken[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let want = sequential(
        &md(&ts),
        &broken,
        &dir.join("seq2.parquet"),
        FileFormat::Parquet,
    )
    .unwrap();
    let got = parallel(
        &md(&ts),
        &broken,
        (2, 4 << 10),
        &dir.join("par.parquet"),
        FileFormat::Parquet,
    )
    .unwrap()
    .unwrap();
    assert_eq!(want.skipped.count, 1);
    assert_eq!(got.files[0].rows, want.files[0].rows);
    assert_eq!(got.packets, want.packets);
    assert_eq!(
        got.skipped.first[0].to_string(),
        want.skipped.first[0].to_string()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_later_block_that_needs_a_wider_scale_widens_the_whole_file() {
    // 2,000 prices with two fraction digits, then one with five, far past the first block.
    let mut values: Vec<(i32, i64)> = (0..2000).map(|i| (-2, 100 + i)).collect();
    values.push((-5, 123_456));
    values.extend((0..500).map(|i| (-1, i)));
    let (ts, data) = px_packets(0, &values);
    let dir = scratch("scale");
    let seq = dir.join("seq.parquet");
    sequential(&px(&ts), &data, &seq, FileFormat::Parquet).unwrap();
    let par = dir.join("par.parquet");
    let w = parallel(&px(&ts), &data, (2, 1 << 10), &par, FileFormat::Parquet)
        .unwrap()
        .unwrap();
    assert_eq!(w.files[0].rows, 2501);
    let (a, b) = (
        rows(&par, FileFormat::Parquet),
        rows(&seq, FileFormat::Parquet),
    );
    assert_eq!(a, b);
    assert_eq!(
        a.schema().field(0).data_type(),
        &arrow_schema::DataType::Decimal128(38, 5)
    );

    // Without the retry the conversion fails with the scale that would hold the value.
    let r = parallel_once(&px(&ts), &data, (2, 1 << 10), &par, FileFormat::Parquet);
    assert!(
        matches!(
            r,
            Err(TableError::Decimal {
                scale: 2,
                needed: Some(5),
                ..
            })
        ),
        "{r:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_first_block_without_the_template_leaves_it_to_the_sequential_conversion() {
    let (ts, data) = px_packets(300, &[(-2, 5), (-2, 6)]);
    let dir = scratch("none");
    let path = dir.join("px.parquet");
    let r = parallel(&px(&ts), &data, (2, 256), &path, FileFormat::Parquet).unwrap();
    assert!(r.is_none());
    assert!(!path.exists());
    // An empty input too.
    let r = parallel(&px(&ts), &[], (2, 256), &path, FileFormat::Parquet).unwrap();
    assert!(r.is_none());
    std::fs::remove_dir_all(&dir).unwrap();
}
