//! What the parallel-conversion tests share: the corpus data, scratch folders, the options
//! of a parallel conversion, reading a table file back, and Px price packets.
#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use fastfeed_arrow::{Blocking, FileFormat, OnError, TableOptions};
use fastfeed_codec::{Decoder, Message, Templates, Value};
use fastfeed_packet::{write_len32le, PacketOptions};

pub fn corpus(path: &str) -> Vec<u8> {
    let p = format!(
        "{}/../../../shared/corpus/{path}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

pub fn complex() -> (Arc<Templates>, Vec<u8>) {
    let xml = String::from_utf8(corpus("mfast-complex/example.xml")).unwrap();
    let ts = fastfeed_codec::parse_templates(&xml).unwrap();
    (ts, corpus("mfast-complex/complex30000.dat"))
}

pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fastfeed-parallel-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub const RESET: PacketOptions = PacketOptions {
    skip_header: 0,
    reset_each_packet: true,
};

/// A parallel conversion's options: `threads` workers, blocks of `block_bytes`, batches of
/// 1,000 rows, bad packets skipped.
pub fn blocking<'a>(
    opts: &TableOptions,
    new_decoder: &'a (dyn Fn() -> Decoder + Sync),
    (threads, block_bytes): (usize, usize),
) -> Blocking<'a> {
    Blocking {
        opts: opts.clone(),
        batch_rows: 1000,
        on_error: OnError::Skip,
        new_decoder,
        packet: RESET,
        max_packet: fastfeed_packet::DEFAULT_MAX_PACKET,
        threads,
        block_bytes,
    }
}

pub fn read_back(path: &Path, format: FileFormat) -> Vec<RecordBatch> {
    let file = std::fs::File::open(path).unwrap();
    match format {
        FileFormat::Parquet => {
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
                .unwrap()
                .build()
                .unwrap()
                .map(|b| b.unwrap())
                .collect()
        }
        FileFormat::Arrow => arrow_ipc::reader::FileReader::try_new(file, None)
            .unwrap()
            .map(|b| b.unwrap())
            .collect(),
    }
}

/// All the rows of a file as one batch, so files cut into batches differently compare.
pub fn rows(path: &Path, format: FileFormat) -> RecordBatch {
    let batches = read_back(path, format);
    arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap()
}

pub const PX: &str = r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
  <template name="Px" id="1"><decimal name="Px"/></template>
  <template name="Other" id="2"><uInt32 name="N"/></template></templates>"#;

/// A `len32le` stream of one-message packets: `others` packets of template Other, then a
/// Px for each (exponent, mantissa).
pub fn px_packets(others: usize, values: &[(i32, i64)]) -> (Arc<Templates>, Vec<u8>) {
    let ts = fastfeed_codec::parse_templates(PX).unwrap();
    let mut packets = Vec::new();
    let other = (0..others).map(|i| Message {
        template_id: 2,
        fields: vec![Some(Value::UInt(i as u64))],
    });
    let px = values.iter().map(|&(e, m)| Message {
        template_id: 1,
        fields: vec![Some(Value::Decimal(fastfeed_codec::Decimal::new(e, m)))],
    });
    for msg in other.chain(px) {
        let mut enc = fastfeed_codec::Encoder::new(ts.clone());
        let mut out = Vec::new();
        enc.encode(&msg, &mut out).unwrap();
        packets.push(out);
    }
    let mut out = Vec::new();
    write_len32le(packets.iter().map(|p| p.as_slice()), &mut out).unwrap();
    (ts, out)
}
