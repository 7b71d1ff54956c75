//! What a channel hands on: book changes, trades, statuses, definitions. An [`Output`] gets
//! them by callback; the bus publisher, the `book` command's printer and the tests are
//! outputs.

use fastfeed_book::Book;
use fastfeed_events::{Definition, Trade};

/// Whether an instrument's book can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BookState {
    /// Never synchronized: waiting for its first snapshot.
    Unknown,
    /// Built from a snapshot and every increment since.
    Live,
    /// An update was lost: waiting for a snapshot, increments queued.
    Stale,
}

impl BookState {
    /// `live`, `stale` or `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            BookState::Unknown => "unknown",
            BookState::Live => "live",
            BookState::Stale => "stale",
        }
    }
}

/// One instrument's book after a change.
#[derive(Debug, Clone, Copy)]
pub struct BookView<'a> {
    /// SecurityID.
    pub security: u64,
    /// RptSeq of the last update applied (or of the snapshot).
    pub rpt_seq: Option<u64>,
    /// MsgSeqNum of the message that changed it (LastMsgSeqNumProcessed for a snapshot).
    pub msg_seq_num: Option<u64>,
    /// Live or stale.
    pub state: BookState,
    /// The book.
    pub book: &'a Book,
    /// Whether this change is a snapshot being applied (else incremental updates).
    pub from_snapshot: bool,
}

/// Receives what a channel produces. Every method has an empty default.
#[allow(unused_variables)]
pub trait Output {
    /// An instrument's book changed: after each message that touched it, after a snapshot,
    /// and when it goes stale.
    fn book(&mut self, view: &BookView<'_>) {}
    /// A trade.
    fn trade(&mut self, trade: &Trade, msg_seq_num: Option<u64>) {}
    /// Trading status of an instrument, or of the session (`security` `None`).
    fn status(&mut self, security: Option<u64>, status: u32) {}
    /// An instrument definition.
    fn definition(&mut self, definition: &Definition) {}
}

impl Output for () {}

impl<O: Output + ?Sized> Output for &mut O {
    fn book(&mut self, view: &BookView<'_>) {
        (**self).book(view)
    }
    fn trade(&mut self, trade: &Trade, msg_seq_num: Option<u64>) {
        (**self).trade(trade, msg_seq_num)
    }
    fn status(&mut self, security: Option<u64>, status: u32) {
        (**self).status(security, status)
    }
    fn definition(&mut self, definition: &Definition) {
        (**self).definition(definition)
    }
}
