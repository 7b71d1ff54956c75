//! The normalized events: what a feed handler needs of a message, whatever the venue's
//! templates look like. Plain `Copy` values, so a packet's events live in one reused buffer.

use fastfeed_codec::Decimal;

/// What a message is, by its MsgType (35) or the profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MsgKind {
    /// MarketDataIncrementalRefresh (X): book updates and trades.
    Incremental,
    /// MarketDataSnapshotFullRefresh (W): one instrument's whole book.
    Snapshot,
    /// SecurityDefinition (d).
    Definition,
    /// SecurityStatus (f).
    SecurityStatus,
    /// TradingSessionStatus (h).
    SessionStatus,
    /// SequenceReset (4).
    SequenceReset,
    /// Heartbeat (0).
    Heartbeat,
    /// A FAST reset message (a template that resets the dictionaries and carries nothing).
    Reset,
    /// Anything else (news, logon, ...): decoded and counted, no events.
    Other,
}

/// Book side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// Bid (MDEntryType 0).
    Bid,
    /// Offer (MDEntryType 1).
    Offer,
}

/// MDUpdateAction (279).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// 0: a new level or order.
    New,
    /// 1: a change of a level or order.
    Change,
    /// 2: a level or order removed.
    Delete,
    /// 3: every level from the best through this one removed.
    DeleteThru,
    /// 4: every level from this one to the worst removed.
    DeleteFrom,
    /// 5: this level replaced, whatever was there.
    Overlay,
}

/// One side's entry in a book: a price level (with its position when the feed gives it)
/// or, in an order book, one order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BookEntry {
    /// Bid or offer.
    pub side: Side,
    /// MDEntryPx (270).
    pub price: Option<Decimal>,
    /// MDEntrySize (271); 0 if absent.
    pub size: i64,
    /// NumberOfOrders (346).
    pub orders: Option<u32>,
    /// MDPriceLevel (1023), 1 = best.
    pub level: Option<u32>,
    /// MDEntryID (278): the order in an order book.
    pub order_id: Option<u64>,
}

/// An incremental book update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BookUpdate {
    /// SecurityID (48).
    pub security: u64,
    /// RptSeq (83): this instrument's update number.
    pub rpt_seq: Option<u64>,
    /// MDUpdateAction.
    pub action: Action,
    /// MarketDepth (264): how many levels the book keeps.
    pub depth: Option<u32>,
    /// The level or order.
    pub entry: BookEntry,
}

/// A trade (MDEntryType 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trade {
    /// SecurityID.
    pub security: u64,
    /// RptSeq.
    pub rpt_seq: Option<u64>,
    /// MDEntryPx.
    pub price: Option<Decimal>,
    /// MDEntrySize.
    pub size: i64,
    /// The aggressor's side (AggressorSide 5797: 1 buy, 2 sell), where given.
    pub aggressor: Option<Side>,
}

/// The header of a full-refresh snapshot of one instrument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SnapshotHeader {
    /// SecurityID.
    pub security: u64,
    /// RptSeq of the last update the snapshot includes.
    pub rpt_seq: Option<u64>,
    /// LastMsgSeqNumProcessed (369): the last incremental MsgSeqNum included.
    pub last_msg_seq_processed: Option<u64>,
    /// TotNumReports (911): instruments in one snapshot cycle.
    pub tot_num_reports: Option<u32>,
    /// MarketDepth of the book, where given.
    pub depth: Option<u32>,
    /// RouteFirst (7944) is 1, where sent: whether this message starts the instrument's
    /// snapshot. A venue that splits a large book over several messages (MOEX ASTS) flags
    /// the first and the last.
    pub first_fragment: Option<bool>,
    /// LastFragment (893) is 1, where sent: whether this message completes the snapshot.
    pub last_fragment: Option<bool>,
    /// The message's template declares RouteFirst or LastFragment: the venue flags the
    /// fragments of split snapshots, so a message without flags may be one of them (known
    /// from the first message on, before any flag has been seen).
    pub flags_declared: bool,
}

/// A short symbol kept inline (longer ones are cut, and counted).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Symbol {
    len: u8,
    bytes: [u8; Symbol::MAX],
}

impl Symbol {
    /// The longest symbol kept whole.
    pub const MAX: usize = 23;

    /// Stores `b`; false if it had to be cut.
    pub fn set(&mut self, b: &[u8]) -> bool {
        let n = b.len().min(Self::MAX);
        self.bytes[..n].copy_from_slice(&b[..n]);
        self.bytes[n..].fill(0);
        self.len = n as u8;
        n == b.len()
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

impl std::fmt::Debug for Symbol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

/// An instrument definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Definition {
    /// SecurityID.
    pub security: u64,
    /// Symbol (55).
    pub symbol: Symbol,
    /// The deepest MarketDepth (264) the definition gives (its feed types).
    pub depth: Option<u32>,
    /// MinPriceIncrement (969).
    pub tick: Option<Decimal>,
    /// SecurityTradingStatus (326).
    pub status: Option<u32>,
}

/// One normalized event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A book update.
    Book(BookUpdate),
    /// A trade.
    Trade(Trade),
    /// MDEntryType J in an incremental: the instrument's book is now empty.
    EmptyBook {
        /// SecurityID.
        security: u64,
        /// RptSeq.
        rpt_seq: Option<u64>,
    },
    /// An entry of a type the handler does not keep (statistics, say): it still takes
    /// its instrument's next RptSeq.
    Other {
        /// SecurityID.
        security: u64,
        /// RptSeq.
        rpt_seq: Option<u64>,
    },
    /// A snapshot starts; its entries follow, then [`Event::SnapshotEnd`].
    SnapshotBegin(SnapshotHeader),
    /// One level or order of the snapshot.
    SnapshotEntry(BookEntry),
    /// The snapshot of the preceding [`Event::SnapshotBegin`] is complete.
    SnapshotEnd,
    /// An instrument definition.
    Definition(Definition),
    /// Trading status: of an instrument (SecurityTradingStatus 326) or, with no security,
    /// of the session (TradSesStatus 340).
    Status {
        /// SecurityID, if about one instrument.
        security: Option<u64>,
        /// The status value as the venue numbers it.
        status: u32,
    },
    /// The sender's sequence restarts: the next message is `new_seq` (NewSeqNo 36).
    SequenceReset {
        /// The next MsgSeqNum.
        new_seq: u64,
    },
    /// A heartbeat.
    Heartbeat,
}

impl Event {
    /// The instrument an incremental event is about, and its RptSeq.
    #[inline]
    pub fn instrument(&self) -> Option<(u64, Option<u64>)> {
        match *self {
            Event::Book(u) => Some((u.security, u.rpt_seq)),
            Event::Trade(t) => Some((t.security, t.rpt_seq)),
            Event::EmptyBook { security, rpt_seq } | Event::Other { security, rpt_seq } => {
                Some((security, rpt_seq))
            }
            _ => None,
        }
    }
}
