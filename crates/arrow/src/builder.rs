//! The decoder's [`Handler`] that fills the columns of one template's table, field by field,
//! with no message tree in between.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::{Schema, SchemaRef};
use fastfeed_codec::template::{Instr, Template};
use fastfeed_codec::{FieldValue, Handler};

use crate::column::{self, Column};
use crate::plan::{Plan, Slot, TableOptions, NO_COLUMN};
use crate::TableError;

/// Rows per record batch by default: big enough that per-batch costs vanish, small enough
/// that a batch of wide rows stays in the tens of megabytes.
pub const DEFAULT_BATCH_ROWS: usize = 65_536;

/// Where the handler is in the plan: the slots of a segment and the next one of them.
#[derive(Debug, Clone, Copy)]
struct Frame {
    /// The segment's slots are `plan.slots[start..end]`; the next is `pos`.
    start: usize,
    end: usize,
    pos: usize,
    /// For a list: its column.
    list: Option<usize>,
    /// Elements begun in this sequence.
    count: u32,
}

impl Frame {
    /// No segment: every callback finds no slot.
    const NONE: Frame = Frame {
        start: 0,
        end: 0,
        pos: 0,
        list: None,
        count: 0,
    };

    fn new((start, end): (usize, usize), list: Option<usize>) -> Frame {
        Frame {
            start,
            end,
            pos: start,
            list,
            count: 0,
        }
    }
}

/// Builds the record batches of one template's messages, as the decoder calls it. Messages
/// of other templates are passed over (and counted).
///
/// Decimal columns are decimal128(38, scale). The scale is the template's when it fixes the
/// exponent (a constant), the caller's when given ([`TableOptions`]), and otherwise the most
/// fraction digits of any value in the first batch. A later value is converted exactly or
/// not at all: one with more fraction digits than its column's scale (or too many digits for
/// 38) fails the batch with [`TableError::Decimal`], which names the scale that would hold
/// it; no value is ever rounded.
pub struct TableBuilder {
    template_id: u32,
    name: String,
    plan: Plan,
    cols: Vec<Column>,
    /// The segment being filled, kept out of `stack` (the enclosing ones) so a value's slot
    /// is one load away.
    cur: Frame,
    stack: Vec<Frame>,
    /// Nesting depth of callbacks being ignored (another template, a left-out sequence).
    /// While it is above 0, `cur` is [`Frame::NONE`], so values find no slot without a test
    /// of their own.
    skip: u32,
    /// Rows committed (whole messages); the columns may hold more of a message in progress.
    rows: usize,
    /// Entries of the message in progress.
    entries: usize,
    messages: u64,
    other_messages: u64,
    batch_rows: usize,
    /// Whether the columns have room for a batch (done at the first message, so tables that
    /// get none reserve nothing).
    reserved: bool,
    schema: Option<SchemaRef>,
}

impl TableBuilder {
    pub fn new(template: &Template, opts: &TableOptions) -> Result<TableBuilder, TableError> {
        let plan = Plan::new(template, opts)?;
        let cols = plan.columns.iter().map(|c| Column::new(c.ty)).collect();
        Ok(TableBuilder {
            template_id: template.id,
            name: template.name.clone(),
            plan,
            cols,
            cur: Frame::NONE,
            stack: Vec::with_capacity(8),
            skip: 0,
            rows: 0,
            entries: 0,
            messages: 0,
            other_messages: 0,
            batch_rows: DEFAULT_BATCH_ROWS,
            reserved: false,
            schema: None,
        })
    }

    /// Sets the rows per batch (at least 1). A message's entries are never split, so a batch
    /// can pass this by one message's entries.
    pub fn batch_rows(mut self, rows: usize) -> Self {
        self.batch_rows = rows.max(1);
        self
    }

    pub fn template_id(&self) -> u32 {
        self.template_id
    }

    /// The table's name: its template's, unless [`TableBuilder::named`] gave another.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Names the table otherwise than its template (in a set where templates share a name:
    /// [`fastfeed_codec::Templates::unique_name`]).
    pub fn named(mut self, name: String) -> Self {
        self.name = name;
        self
    }

    /// Rows held, not yet in a batch.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Whether a batch's worth of rows is held.
    pub fn is_full(&self) -> bool {
        self.rows >= self.batch_rows
    }

    /// Messages of this template taken so far.
    pub fn messages(&self) -> u64 {
        self.messages
    }

    /// Messages of other templates passed over.
    pub fn other_messages(&self) -> u64 {
        self.other_messages
    }

    /// The schema: with the decimal scales fixed once the first batch is out, the template's
    /// (or 0 where learned) before.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone().unwrap_or_else(|| {
            Arc::new(Schema::new(column::fields_with(
                &self.plan,
                &self.cols,
                &self.plan.top,
            )))
        })
    }

    /// The scale of each decimal column that has one by now (fixed, or learned from the
    /// first batch), by column name, as [`TableOptions::column_scales`] takes them: a table
    /// built with these has this one's schema from its first batch on.
    pub fn scales(&self) -> HashMap<String, i8> {
        self.plan
            .columns
            .iter()
            .zip(&self.cols)
            .filter_map(|(spec, col)| Some((spec.name.clone(), col.scale?)))
            .collect()
    }

    /// Drops the fields of a message that failed to decode: its rows never appear.
    pub fn rollback(&mut self) {
        self.cur = Frame::NONE;
        self.stack.clear();
        self.skip = 0;
        self.entries = 0;
        for &c in &self.plan.top {
            truncate(&self.plan, &mut self.cols, c, self.rows);
        }
    }

    /// The rows held as a record batch (none when no rows are held).
    pub fn finish(&mut self) -> Result<Option<RecordBatch>, TableError> {
        if self.rows == 0 {
            return Ok(None);
        }
        self.rollback();
        let arrays = self
            .plan
            .top
            .iter()
            .map(|&c| column::finish(&self.plan, &mut self.cols, c, self.rows))
            .collect::<Result<Vec<_>, _>>()?;
        let schema = self.schema.get_or_insert_with(|| {
            Arc::new(Schema::new(column::fields_with(
                &self.plan,
                &self.cols,
                &self.plan.top,
            )))
        });
        let opts = RecordBatchOptions::new().with_row_count(Some(self.rows));
        let batch = RecordBatch::try_new_with_options(schema.clone(), arrays, &opts)?;
        self.rows = 0;
        Ok(Some(batch))
    }

    /// Advances to the next slot of the current segment and returns its index.
    #[inline(always)]
    fn next_pos(&mut self) -> Option<usize> {
        let pos = self.cur.pos;
        if pos >= self.cur.end {
            return None;
        }
        self.cur.pos = pos + 1;
        Some(pos)
    }

    /// Advances to the next slot of the current segment and returns it.
    #[inline(always)]
    fn next_slot(&mut self) -> Option<&Slot> {
        let pos = self.next_pos()?;
        self.plan.slots.get(pos)
    }

    /// Enters segment `seg`: the current one is saved until its end.
    fn enter(&mut self, seg: usize, list: Option<usize>) {
        self.stack.push(self.cur);
        self.cur = Frame::new(self.plan.segments[seg], list);
    }

    /// Leaves the current segment for the one that encloses it.
    fn leave(&mut self) -> Frame {
        let f = self.cur;
        self.cur = self.stack.pop().unwrap_or(Frame::NONE);
        f
    }

    /// Starts (or nests deeper in) callbacks to ignore.
    fn skip_begin(&mut self) {
        if self.skip == 0 {
            self.stack.push(self.cur);
            self.cur = Frame::NONE;
        }
        self.skip += 1;
    }

    /// Ends one level of ignored callbacks; false when none are being ignored.
    fn skip_end(&mut self) -> bool {
        match self.skip {
            0 => false,
            1 => {
                self.skip = 0;
                self.cur = self.stack.pop().unwrap_or(Frame::NONE);
                true
            }
            _ => {
                self.skip -= 1;
                true
            }
        }
    }

    /// An absent field that is not a scalar: a group's columns all null.
    #[cold]
    fn absent_group(&mut self, pos: usize) {
        if let Some(Slot::Group { nulls, .. }) = self.plan.slots.get(pos) {
            for &c in nulls {
                self.cols[c].push_null();
            }
        }
    }
}

/// Cuts column `c` back to `len` values, and a list's children to where those values end.
fn truncate(plan: &Plan, cols: &mut [Column], c: usize, len: usize) {
    let end = cols[c].truncate(len);
    for &k in &plan.columns[c].children {
        truncate(plan, cols, k, end);
    }
}

impl Handler for TableBuilder {
    fn begin_message(&mut self, template: &Template) {
        self.stack.clear();
        self.entries = 0;
        if template.id != self.template_id {
            self.cur = Frame::NONE;
            self.skip = 1;
            return;
        }
        self.skip = 0;
        self.cur = Frame::new(self.plan.segments[0], None);
        if !self.reserved {
            self.reserved = true;
            // A batch's rows at once: growing by doubling instead copies every column's
            // values about once more. The room is only touched as it fills. A message's
            // entries can pass the batch's end.
            for c in &mut self.cols {
                c.reserve(self.batch_rows + 64);
            }
        }
    }

    fn end_message(&mut self) {
        if self.skip > 0 {
            self.skip = 0;
            self.other_messages += 1;
            return;
        }
        self.cur = Frame::NONE;
        self.stack.clear();
        self.messages += 1;
        if !self.plan.entries {
            self.rows += 1;
            return;
        }
        // The message's fields were taken once; each entry row gets them.
        let n = self.entries;
        for &c in &self.plan.repeated {
            if n == 0 {
                self.cols[c].truncate(self.rows);
            } else {
                self.cols[c].repeat_last(n - 1);
            }
        }
        self.rows += n;
    }

    // Inlined into each of the decoder's field arms, so the column type's dispatch below is
    // a branch of that arm's own, which the predictor learns per field kind, not one shared
    // jump that mispredicts whenever the type changes from field to field. A slot that takes
    // no value has NO_COLUMN, which no column has: looking the column up is the only test.
    #[inline(always)]
    fn value(&mut self, _: &Instr, value: FieldValue<'_>) {
        if let Some(pos) = self.next_pos() {
            let c = self
                .plan
                .value_column
                .get(pos)
                .copied()
                .unwrap_or(NO_COLUMN);
            if let Some(col) = self.cols.get_mut(c as usize) {
                col.push(value);
            }
        }
    }

    #[inline(always)]
    fn absent(&mut self, _: &Instr) {
        if let Some(pos) = self.next_pos() {
            let c = self.plan.null_column.get(pos).copied().unwrap_or(NO_COLUMN);
            match self.cols.get_mut(c as usize) {
                Some(col) => col.push_null(),
                None => self.absent_group(pos),
            }
        }
    }

    fn begin_sequence(&mut self, _: &Instr, _len: u32) {
        // While skipping, `cur` has no slots: this nests one level deeper.
        match self.next_slot() {
            Some(&Slot::List { column, body }) => self.enter(body, Some(column)),
            Some(&Slot::Entries { body }) => self.enter(body, None),
            _ => self.skip_begin(),
        }
    }

    #[inline]
    fn begin_element(&mut self, _: u32) {
        if self.skip == 0 {
            self.cur.pos = self.cur.start;
            self.cur.count += 1;
        }
    }

    #[inline]
    fn end_element(&mut self) {
        if self.skip == 0 && self.cur.list.is_none() {
            self.entries += 1;
        }
    }

    fn end_sequence(&mut self) {
        if self.skip_end() {
            return;
        }
        if let Frame {
            list: Some(c),
            count,
            ..
        } = self.leave()
        {
            let end = self.cols[c].list_end() + count as usize;
            self.cols[c].push_list(end);
        }
    }

    fn begin_group(&mut self, _: &Instr) {
        // While skipping, `cur` has no slots: this nests one level deeper.
        match self.next_slot() {
            Some(&Slot::Group { body, .. }) => self.enter(body, None),
            _ => self.skip_begin(),
        }
    }

    fn end_group(&mut self) {
        if !self.skip_end() {
            self.leave();
        }
    }

    fn begin_template_ref(&mut self, _: &Template) {
        // Templates with dynamic references have no table (see `Plan::new`).
        self.skip_begin();
    }

    fn end_template_ref(&mut self) {
        self.skip_end();
    }
}
