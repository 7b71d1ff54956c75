//! One template's table from a `len32le` capture on many cores. Where every packet resets
//! the dictionaries (`reset_each_packet`), a run of whole packets decodes on its own: the
//! input is cut into blocks of packets, each block is decoded and encoded (its Parquet
//! column chunks, or its Arrow batches) by whichever worker is free, and the blocks are
//! written in input order, a Parquet row group each. Decoding and encoding, not the disk,
//! are what a conversion waits on, and both now take every core.

use std::fs::File;
use std::io::{self, BufWriter, Cursor, Read};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver};
use std::sync::{Condvar, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use fastfeed_codec::template::Template;
use fastfeed_codec::Decoder;
use fastfeed_packet::{Framing, PacketOptions, StreamDecoder};
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnChunk, ArrowRowGroupWriterFactory};
use parquet::arrow::ArrowWriter;

use crate::reader::{OnError, Skipped};
use crate::write::{parquet_properties, FileFormat, Written, WrittenFile};
use crate::{BatchReader, TableBuilder, TableError, TableOptions, KEPT_ERRORS};

/// Input bytes per block: a few hundred thousand rows of a typical feed, a row group each.
pub const BLOCK_BYTES: usize = 4 << 20;

/// How the blocks of a parallel conversion are decoded.
pub struct ParallelTable<'a> {
    /// The template whose messages become rows.
    pub template: &'a Template,
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

/// A run of whole `len32le` packets and where it lies in the input.
struct Block {
    seq: usize,
    /// Input offset of its first byte, and the index of its first packet.
    base: usize,
    first_packet: usize,
    bytes: Vec<u8>,
}

/// Cuts a `len32le` input into blocks of about `block_bytes`, at packet boundaries. A
/// broken frame (a length over the limit, a cut packet at the end) closes the last block
/// right after it, where its decoder reports it as a whole-file decode would: nothing after
/// a broken frame can be located.
struct Blocks<R> {
    input: R,
    carry: Vec<u8>,
    base: usize,
    packets: usize,
    seq: usize,
    max_packet: usize,
    block_bytes: usize,
    eof: bool,
    done: bool,
}

impl<R: Read> Blocks<R> {
    fn new(input: R, max_packet: usize, block_bytes: usize) -> Self {
        Blocks {
            block_bytes: block_bytes.max(1),
            input,
            carry: Vec::new(),
            base: 0,
            packets: 0,
            seq: 0,
            max_packet,
            eof: false,
            done: false,
        }
    }

    /// Reads until `buf` holds `want` bytes or the input ends.
    fn fill(&mut self, buf: &mut Vec<u8>, want: usize) -> io::Result<()> {
        while !self.eof && buf.len() < want {
            let need = (want - buf.len()) as u64;
            let got = (&mut self.input).take(need).read_to_end(buf)? as u64;
            self.eof = got < need;
        }
        Ok(())
    }

    fn next_block(&mut self) -> io::Result<Option<Block>> {
        if self.done {
            return Ok(None);
        }
        let mut buf = std::mem::take(&mut self.carry);
        self.fill(&mut buf, self.block_bytes)?;
        let (mut pos, mut packets) = (0, 0);
        let cut = loop {
            let Some(prefix) = buf.get(pos..pos + 4) else {
                // Under four bytes left: the next block's start, or a cut length at the end.
                if self.eof {
                    break buf.len();
                }
                if pos > 0 {
                    break pos;
                }
                self.fill(&mut buf, 4)?; // Blocks of under four bytes.
                continue;
            };
            let len = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize;
            if len > self.max_packet {
                self.done = true;
                break pos + 4;
            }
            let end = pos + 4 + len;
            if end > buf.len() {
                if self.eof {
                    break buf.len(); // A packet cut by the end of the input.
                }
                if pos > 0 {
                    break pos;
                }
                self.fill(&mut buf, end)?; // One packet longer than a block.
                continue;
            }
            pos = end;
            packets += 1;
        };
        self.carry = buf.split_off(cut);
        self.done |= self.eof && self.carry.is_empty();
        if buf.is_empty() {
            self.done = true;
            return Ok(None);
        }
        let block = Block {
            seq: self.seq,
            base: self.base,
            first_packet: self.packets,
            bytes: buf,
        };
        self.seq += 1;
        self.base += cut;
        self.packets += packets;
        Ok(Some(block))
    }
}

/// A block, decoded and encoded.
enum Encoded {
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
enum Sink {
    Parquet(Box<parquet::file::writer::SerializedFileWriter<BufWriter<File>>>),
    Arrow(Box<arrow_ipc::writer::FileWriter<BufWriter<File>>>),
}

impl Sink {
    fn append(&mut self, encoded: Encoded) -> Result<(), TableError> {
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
            _ => unreachable!("a block is encoded for its file's format"),
        }
        Ok(())
    }

    fn finish(self) -> Result<(), TableError> {
        match self {
            Sink::Parquet(w) => {
                w.close()?;
            }
            Sink::Arrow(mut w) => w.finish()?,
        }
        Ok(())
    }
}

/// How far the writer has got, so the reader stays at most a window of blocks ahead of it
/// (memory stays bounded when one block is slow), and whether the conversion has failed.
struct Progress {
    written: Mutex<usize>,
    moved: Condvar,
    failed: AtomicBool,
}

impl Progress {
    /// Waits until block `seq` may be handed out; false once the conversion has failed.
    fn admit(&self, seq: usize, window: usize) -> bool {
        let mut written = self.written.lock().expect("not poisoned");
        while seq >= *written + window && !self.failed.load(Ordering::Relaxed) {
            written = self.moved.wait(written).expect("not poisoned");
        }
        !self.failed.load(Ordering::Relaxed)
    }

    fn advance(&self, to: usize) {
        *self.written.lock().expect("not poisoned") = to;
        self.moved.notify_all();
    }

    fn fail(&self) {
        self.failed.store(true, Ordering::Relaxed);
        let _guard = self.written.lock().expect("not poisoned");
        self.moved.notify_all();
    }
}

/// Writes one template's table from `input` (`len32le`, every packet resetting the
/// dictionaries) with `cfg.threads` workers, to `path`. The table's schema (its decimal
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
    mut progress: impl FnMut(usize),
) -> Result<Option<Written>, TableError> {
    let mut blocks = Blocks::new(input, cfg.max_packet, cfg.block_bytes);
    let Some(first) = blocks.next_block()? else {
        return Ok(None);
    };
    let Some(opts) = learn_scales(cfg, &first)? else {
        return Ok(None);
    };
    let schema = TableBuilder::new(cfg.template, &opts)?.schema();
    let (sink, factory) = match format {
        FileFormat::Parquet => {
            let file = BufWriter::new(File::create(path)?);
            let props = parquet_properties(&schema)?;
            let (w, factory) = ArrowWriter::try_new(file, schema.clone(), Some(props))?
                .into_serialized_writer()?;
            (Sink::Parquet(Box::new(w)), Some(factory))
        }
        FileFormat::Arrow => {
            let file = BufWriter::new(File::create(path)?);
            let w = arrow_ipc::writer::FileWriter::try_new(file, &schema)?;
            (Sink::Arrow(Box::new(w)), None)
        }
    };
    let threads = cfg.threads.max(1);
    let window = 2 * threads;
    let state = Progress {
        written: Mutex::new(0),
        moved: Condvar::new(),
        failed: AtomicBool::new(false),
    };
    let worker = Worker {
        cfg,
        opts: &opts,
        schema: &schema,
        factory: factory.as_ref(),
    };
    let (job_tx, job_rx) = sync_channel::<Block>(threads);
    let job_rx = Mutex::new(job_rx);
    let (tally, sink) = std::thread::scope(|s| -> Result<_, TableError> {
        let (done_tx, done_rx) = channel();
        for i in 0..threads {
            let (job_rx, done_tx, worker) = (&job_rx, done_tx.clone(), &worker);
            std::thread::Builder::new()
                .name(format!("table worker {i}"))
                .spawn_scoped(s, move || loop {
                    let job = job_rx.lock().expect("not poisoned").recv();
                    let Ok(block) = job else { break };
                    let seq = block.seq;
                    // A panic would leave a hole the writer waits on for ever: it becomes
                    // this block's error instead.
                    let converted =
                        std::panic::catch_unwind(AssertUnwindSafe(|| worker.convert(block)))
                            .unwrap_or_else(|_| {
                                Err(TableError::Io(io::Error::other("a table worker panicked")))
                            });
                    if done_tx.send((seq, converted)).is_err() {
                        break;
                    }
                })?;
        }
        drop(done_tx);
        let state = &state;
        let writer = std::thread::Builder::new()
            .name("table writer".into())
            .spawn_scoped(s, move || {
                let r = write_in_order(sink, done_rx, state);
                if r.is_err() {
                    state.fail();
                }
                r
            })?;
        let mut next = Some(first);
        let read = loop {
            let Some(block) = next.take() else {
                break Ok(());
            };
            if !state.admit(block.seq, window) || job_tx.send(block).is_err() {
                break Ok(());
            }
            progress(blocks.base);
            match blocks.next_block() {
                Ok(b) => next = b,
                Err(e) => break Err(TableError::Io(e)),
            }
        };
        drop(job_tx);
        if read.is_err() {
            state.fail();
        }
        let written = writer.join().unwrap_or_else(|_| {
            Err(TableError::Io(io::Error::other(
                "the table writer thread panicked",
            )))
        });
        read?;
        let (tally, sink) = written?;
        if tally.blocks != blocks.seq {
            return Err(TableError::Io(io::Error::other(format!(
                "{} of {} blocks came back from the table workers",
                tally.blocks, blocks.seq
            ))));
        }
        Ok((tally, sink))
    })?;
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

/// The options with every decimal column's scale fixed as the first block's first batch
/// sets it; `None` when that block holds no row of the template.
fn learn_scales(
    cfg: &ParallelTable<'_>,
    first: &Block,
) -> Result<Option<TableOptions>, TableError> {
    let table = TableBuilder::new(cfg.template, &cfg.opts)?.batch_rows(cfg.batch_rows);
    let stream = block_stream(cfg, &first.bytes, first);
    let mut probe = BatchReader::new(stream, table, cfg.on_error)?;
    if probe.next_batch()?.is_none() {
        return Ok(None);
    }
    let mut opts = cfg.opts.clone();
    for (column, scale) in probe.table().scales() {
        opts.column_scales.entry(column).or_insert(scale);
    }
    Ok(Some(opts))
}

fn block_stream<'b>(
    cfg: &ParallelTable<'_>,
    bytes: &'b [u8],
    at: &Block,
) -> StreamDecoder<Cursor<&'b [u8]>> {
    StreamDecoder::new(
        Cursor::new(bytes),
        Framing::Len32Le,
        (cfg.new_decoder)(),
        cfg.packet,
    )
    .max_packet(cfg.max_packet)
    .starting_at(at.base, at.first_packet)
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
        let table = TableBuilder::new(cfg.template, self.opts)?.batch_rows(cfg.batch_rows);
        let stream = block_stream(cfg, &block.bytes, &block);
        let mut reader = BatchReader::new(stream, table, cfg.on_error)?;
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
    blocks: usize,
    rows: u64,
    messages: u64,
    packets: usize,
    skipped: Skipped,
}

/// Appends the converted blocks to the file in input order, holding those that finish
/// early. The first failed block (in input order) fails the conversion.
fn write_in_order(
    mut sink: Sink,
    done: Receiver<(usize, Result<Converted, TableError>)>,
    state: &Progress,
) -> Result<(Tally, Sink), TableError> {
    let mut held = std::collections::BTreeMap::new();
    let mut next = 0usize;
    let mut tally = Tally::default();
    for (seq, converted) in done {
        held.insert(seq, converted);
        while let Some(c) = held.remove(&next) {
            let c = c?;
            tally.rows += c.rows;
            tally.messages += c.messages;
            tally.packets += c.packets;
            tally.skipped.count += c.skipped.count;
            let room = KEPT_ERRORS - tally.skipped.first.len();
            tally
                .skipped
                .first
                .extend(c.skipped.first.into_iter().take(room));
            if c.rows > 0 {
                sink.append(c.encoded)?;
            }
            next += 1;
            tally.blocks = next;
            state.advance(next);
        }
    }
    Ok((tally, sink))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Any bytes at all: the blocks lay the input end to end from its start, each within
    /// its size unless one packet is longer, each whole packets but the last, and the input
    /// is read to its end unless a length over the limit broke the frame.
    fn check(input: &[u8], max_packet: usize, block_bytes: usize) {
        let mut blocks = Blocks::new(input, max_packet, block_bytes);
        let (mut at, mut packets) = (0, 0);
        let mut seen = Vec::new();
        while let Some(b) = blocks.next_block().unwrap() {
            assert_eq!((b.seq, b.base, b.first_packet), (seen.len(), at, packets));
            assert_eq!(&input[at..at + b.bytes.len()], &b.bytes[..]);
            let whole: Vec<_> = Framing::Len32Le.packets(&b.bytes).collect();
            let complete = whole.iter().take_while(|p| p.is_ok()).count();
            let longest = whole.iter().flatten().map(|p| p.bytes.len() + 4).max();
            assert!(b.bytes.len() <= block_bytes.max(longest.unwrap_or(0)) + 4);
            at += b.bytes.len();
            packets += complete;
            seen.push(complete == whole.len());
        }
        // Only the last block may hold a broken frame.
        if let Some((_, before)) = seen.split_last() {
            assert!(before.iter().all(|&whole| whole), "{seen:?}");
        }
        // A length over the limit, reached by walking the lengths from the start.
        let mut pos = 0;
        let broken = loop {
            let Some(prefix) = input.get(pos..pos + 4) else {
                break false;
            };
            let len = u32::from_le_bytes(prefix.try_into().unwrap()) as usize;
            if len > max_packet {
                break true;
            }
            pos += 4 + len;
        };
        if !broken {
            assert_eq!(at, input.len());
        }
    }

    proptest! {
        #[test]
        fn blocks_cut_any_input_at_packet_boundaries(
            input in proptest::collection::vec(any::<u8>(), 0..600),
            max_packet in 1usize..300,
            block_bytes in 1usize..100,
        ) {
            check(&input, max_packet, block_bytes);
        }

        #[test]
        fn blocks_cut_well_formed_input_at_packet_boundaries(
            packets in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..50), 0..40),
            block_bytes in 1usize..200,
        ) {
            let mut input = Vec::new();
            fastfeed_packet::write_len32le(packets.iter().map(|p| p.as_slice()), &mut input).unwrap();
            check(&input, 1000, block_bytes);
            let mut blocks = Blocks::new(&input[..], 1000, block_bytes);
            let mut n = 0;
            while let Some(b) = blocks.next_block().unwrap() {
                n += Framing::Len32Le.packets(&b.bytes).filter(|p| p.is_ok()).count();
            }
            prop_assert_eq!(n, packets.len());
        }
    }
}
