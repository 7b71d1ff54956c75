//! Record batches from a stream: the decoder feeds a [`TableBuilder`] (or a [`TableSet`] for
//! every template at once) a packet at a time, and a batch comes out whenever one is full.

use std::collections::HashMap;
use std::io::Read;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use fastfeed_codec::template::{Instr, Template};
use fastfeed_codec::{FieldValue, Handler, Templates};
use fastfeed_packet::{StreamDecoder, StreamError};

use crate::{TableBuilder, TableError, TableOptions};

/// What a decode error does to a conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// The conversion fails with the error.
    #[default]
    Stop,
    /// The bad message's fields are dropped, the error counted and kept (the first
    /// [`KEPT_ERRORS`]), and decoding goes on where the framing allows.
    Skip,
}

/// How many skipped errors a conversion keeps to show.
pub const KEPT_ERRORS: usize = 100;

/// The decode errors a conversion skipped.
#[derive(Debug, Default)]
pub struct Skipped {
    pub count: u64,
    pub first: Vec<StreamError>,
}

impl Skipped {
    fn take(&mut self, e: StreamError, on_error: OnError) -> Result<(), TableError> {
        if on_error == OnError::Stop {
            return Err(e.into());
        }
        self.count += 1;
        if self.first.len() < KEPT_ERRORS {
            self.first.push(e);
        }
        Ok(())
    }

    /// Adds another part's skips: their counts, and their first errors while room is left.
    pub(crate) fn add(&mut self, other: Skipped) {
        self.count += other.count;
        let room = KEPT_ERRORS - self.first.len();
        self.first.extend(other.first.into_iter().take(room));
    }
}

/// Decodes until `full` says a batch is ready or the input ends. False at the end.
fn fill<R: Read, H: Handler>(
    stream: &mut StreamDecoder<R>,
    handler: &mut H,
    on_error: OnError,
    skipped: &mut Skipped,
    rollback: impl Fn(&mut H),
    full: impl Fn(&H) -> bool,
) -> Result<bool, TableError> {
    while !full(handler) {
        match stream.next_step(handler, |h| !full(h)) {
            None => return Ok(false),
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                rollback(handler);
                skipped.take(e, on_error)?;
            }
        }
    }
    Ok(true)
}

/// The batches of one template's table from a stream. The first batch is decoded when the
/// reader is made, so the schema (the decimal scales learned from it) is known before any
/// batch is read, as Arrow's reader interface wants.
pub struct BatchReader<R> {
    stream: StreamDecoder<R>,
    table: TableBuilder,
    on_error: OnError,
    skipped: Skipped,
    first: Option<RecordBatch>,
    done: bool,
}

impl<R: Read> BatchReader<R> {
    pub fn new(
        stream: StreamDecoder<R>,
        table: TableBuilder,
        on_error: OnError,
    ) -> Result<Self, TableError> {
        let mut r = BatchReader {
            stream,
            table,
            on_error,
            skipped: Skipped::default(),
            first: None,
            done: false,
        };
        r.first = r.decode_batch()?;
        Ok(r)
    }

    fn decode_batch(&mut self) -> Result<Option<RecordBatch>, TableError> {
        if self.done {
            return Ok(None);
        }
        let more = fill(
            &mut self.stream,
            &mut self.table,
            self.on_error,
            &mut self.skipped,
            TableBuilder::rollback,
            TableBuilder::is_full,
        );
        match more {
            Ok(more) => {
                self.done = !more;
                self.table.finish()
            }
            Err(e) => {
                self.done = true;
                Err(e)
            }
        }
    }

    /// The next batch, `None` at the end.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>, TableError> {
        match self.first.take() {
            Some(b) => Ok(Some(b)),
            None => self.decode_batch(),
        }
    }

    pub fn table(&self) -> &TableBuilder {
        &self.table
    }

    pub fn skipped(&self) -> &Skipped {
        &self.skipped
    }

    /// The skipped errors, leaving none.
    pub fn take_skipped(&mut self) -> Skipped {
        std::mem::take(&mut self.skipped)
    }

    pub fn stream(&self) -> &StreamDecoder<R> {
        &self.stream
    }
}

impl<R: Read> Iterator for BatchReader<R> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch()
            .map_err(|e| ArrowError::ExternalError(Box::new(e)))
            .transpose()
    }
}

impl<R: Read> RecordBatchReader for BatchReader<R> {
    fn schema(&self) -> SchemaRef {
        self.table.schema()
    }
}

/// A table for every template of a set, filled in one pass: the handler passes each
/// message's fields to its template's builder.
pub struct TableSet {
    tables: Vec<TableBuilder>,
    by_id: HashMap<u32, usize>,
    current: Option<usize>,
    /// Templates that cannot be tables, and why.
    pub unsupported: Vec<TableError>,
}

impl TableSet {
    /// Tables for every template. With `opts.entries`, templates that have that sequence
    /// get a row per entry, the others a row per message.
    pub fn new(
        templates: &Templates,
        opts: &TableOptions,
        batch_rows: usize,
    ) -> Result<TableSet, TableError> {
        let mut set = TableSet {
            tables: Vec::new(),
            by_id: HashMap::new(),
            current: None,
            unsupported: Vec::new(),
        };
        let by_message = TableOptions {
            entries: None,
            ..opts.clone()
        };
        for t in templates.iter() {
            let built = TableBuilder::new(t, opts).or_else(|e| match e {
                TableError::NoSequence { .. } => TableBuilder::new(t, &by_message),
                e => Err(e),
            });
            match built {
                Ok(b) => {
                    set.by_id.insert(t.id, set.tables.len());
                    let name = templates.unique_name(t).into_owned();
                    set.tables.push(b.batch_rows(batch_rows).named(name));
                }
                Err(e @ TableError::Schema(_)) => set.unsupported.push(e),
                Err(e) => return Err(e),
            }
        }
        Ok(set)
    }

    pub fn tables(&self) -> &[TableBuilder] {
        &self.tables
    }

    /// The batch of the table that is full, if one is.
    pub fn finish_full(&mut self) -> Result<Option<(usize, RecordBatch)>, TableError> {
        match self.tables.iter().position(TableBuilder::is_full) {
            Some(i) => Ok(self.tables[i].finish()?.map(|b| (i, b))),
            None => Ok(None),
        }
    }

    /// The last batch of every table that holds rows.
    pub fn finish_all(&mut self) -> Result<Vec<(usize, RecordBatch)>, TableError> {
        let mut out = Vec::new();
        for (i, t) in self.tables.iter_mut().enumerate() {
            if let Some(b) = t.finish()? {
                out.push((i, b));
            }
        }
        Ok(out)
    }

    fn rollback(&mut self) {
        if let Some(i) = self.current.take() {
            self.tables[i].rollback();
        }
    }

    /// Decodes until a table is full or the input ends; false at the end.
    pub fn fill<R: Read>(
        &mut self,
        stream: &mut StreamDecoder<R>,
        on_error: OnError,
        skipped: &mut Skipped,
    ) -> Result<bool, TableError> {
        fill(stream, self, on_error, skipped, TableSet::rollback, |s| {
            s.tables.iter().any(TableBuilder::is_full)
        })
    }

    #[inline]
    fn cur(&mut self) -> Option<&mut TableBuilder> {
        self.current.map(|i| &mut self.tables[i])
    }
}

impl Handler for TableSet {
    fn begin_message(&mut self, template: &Template) {
        self.current = self.by_id.get(&template.id).copied();
        if let Some(t) = self.cur() {
            t.begin_message(template)
        }
    }
    fn end_message(&mut self) {
        if let Some(t) = self.cur() {
            t.end_message()
        }
        self.current = None;
    }
    #[inline(always)]
    fn value(&mut self, field: &Instr, value: FieldValue<'_>) {
        if let Some(t) = self.cur() {
            t.value(field, value)
        }
    }
    #[inline(always)]
    fn absent(&mut self, field: &Instr) {
        if let Some(t) = self.cur() {
            t.absent(field)
        }
    }
    fn begin_sequence(&mut self, field: &Instr, len: u32) {
        if let Some(t) = self.cur() {
            t.begin_sequence(field, len)
        }
    }
    fn begin_element(&mut self, index: u32) {
        if let Some(t) = self.cur() {
            t.begin_element(index)
        }
    }
    fn end_element(&mut self) {
        if let Some(t) = self.cur() {
            t.end_element()
        }
    }
    fn end_sequence(&mut self) {
        if let Some(t) = self.cur() {
            t.end_sequence()
        }
    }
    fn begin_group(&mut self, field: &Instr) {
        if let Some(t) = self.cur() {
            t.begin_group(field)
        }
    }
    fn end_group(&mut self) {
        if let Some(t) = self.cur() {
            t.end_group()
        }
    }
    fn begin_template_ref(&mut self, template: &Template) {
        if let Some(t) = self.cur() {
            t.begin_template_ref(template)
        }
    }
    fn end_template_ref(&mut self) {
        if let Some(t) = self.cur() {
            t.end_template_ref()
        }
    }
}
