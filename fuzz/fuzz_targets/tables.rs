//! Arrow tables (what Python's `read_table` and `decode --format parquet` build) from outside
//! bytes: the first input byte picks the template set (see `common`), the second the template,
//! whether its rows are messages or the entries of one of its sequences, and a small batch
//! size, so batches end often and mid-stream. Messages that fail to decode are rolled back, as
//! the readers do. Must never panic, hang or allocate without bound, and every batch has the
//! rows the builder said it held.
#![no_main]

mod common;

use fastfeed_arrow::{TableBuilder, TableOptions};
use fastfeed_codec::template::{Kind, Segment};
use fastfeed_codec::Decoder;
use libfuzzer_sys::fuzz_target;

/// The names of a segment's sequences, with `Group.` before those inside groups.
fn sequences(seg: &Segment, prefix: &str, out: &mut Vec<String>) {
    for i in &seg.instrs {
        match &i.kind {
            Kind::Sequence { .. } => out.push(format!("{prefix}{}", i.name)),
            Kind::Group(body) => sequences(body, &format!("{prefix}{}.", i.name), out),
            _ => {}
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let [pick, shape, bytes @ ..] = data else {
        return;
    };
    let ts = common::set(*pick);
    let templates: Vec<_> = ts.iter().filter(|t| !t.session).collect();
    let Some(t) = templates.get((*shape & 0x0f) as usize % templates.len().max(1)) else {
        return;
    };
    let mut seqs = Vec::new();
    sequences(&t.body, "", &mut seqs);
    let entries = match (shape >> 4) & 3 {
        0 => None,
        k => seqs.get(k as usize - 1).cloned(),
    };
    let opts = TableOptions {
        entries,
        ..Default::default()
    };
    // A template this table cannot hold (a dynamic reference) is refused, not a panic.
    let Ok(builder) = TableBuilder::new(t, &opts) else {
        return;
    };
    let mut b = builder.batch_rows(1 + (shape >> 6) as usize * 5);
    let mut dec = Decoder::new(ts.clone());
    let mut pos = 0;
    while pos < bytes.len() {
        match dec.decode(&bytes[pos..], &mut b) {
            Ok(n) => {
                assert!(n > 0 && pos + n <= bytes.len());
                pos += n;
            }
            Err(_) => {
                // The readers drop the message and go on after the next byte.
                b.rollback();
                dec.reset();
                pos += 1;
            }
        }
        if b.is_full() {
            finish(&mut b);
        }
    }
    finish(&mut b);
});

/// A batch of the rows held, or a typed error (a decimal its column's scale cannot hold).
fn finish(b: &mut TableBuilder) {
    let rows = b.rows();
    match b.finish() {
        Ok(Some(batch)) => assert_eq!(batch.num_rows(), rows),
        Ok(None) => assert_eq!(rows, 0),
        Err(_) => {}
    }
}
