//! The decoder's callbacks to normalized events: a [`Normalizer`] is a codec [`Handler`]
//! that appends each decoded message's events to a reused [`Batch`]. Tags are resolved once
//! per template ([`crate::map`]); a callback counts positions and matches small enums.

use fastfeed_codec::template::Instr;
use fastfeed_codec::{Decimal, FieldValue, Handler, Template, Templates};

use crate::event::*;
use crate::instrument::{entry_id_text, key, value_hash};
use crate::map::{Elem, TemplateMap, Top};
use crate::profile::{EntryKind, Profile};

mod handler;

/// Security id of an entry that named none (and whose message named none either).
pub const NO_SECURITY: u64 = u64::MAX;

/// One decoded message: its kind, header and the range of its events in the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageInfo {
    /// What the message is.
    pub kind: MsgKind,
    /// Its template.
    pub template_id: u32,
    /// MsgSeqNum (34).
    pub msg_seq_num: Option<u64>,
    /// SendingTime (52), as the venue writes it.
    pub sending_time: Option<u64>,
    /// Its events: `Batch::events[events.0..events.1]`.
    pub events: (u32, u32),
}

/// The events of the messages decoded since the last [`Batch::clear`] (a packet's, say).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    /// The messages, in order.
    pub messages: Vec<MessageInfo>,
    /// Their events, in order.
    pub events: Vec<Event>,
}

impl Batch {
    /// An empty batch with room for `messages` messages and `events` events.
    pub fn with_capacity(messages: usize, events: usize) -> Batch {
        Batch {
            messages: Vec::with_capacity(messages),
            events: Vec::with_capacity(events),
        }
    }

    /// Empties the batch, keeping its buffers.
    pub fn clear(&mut self) {
        self.messages.clear();
        self.events.clear();
    }

    /// The events of one message.
    #[inline]
    pub fn events_of(&self, m: &MessageInfo) -> &[Event] {
        &self.events[m.events.0 as usize..m.events.1 as usize]
    }

    /// The first and last MsgSeqNum of the batch's messages, if any carry one.
    pub fn seq_span(&self) -> Option<(u64, u64)> {
        let mut it = self.messages.iter().filter_map(|m| m.msg_seq_num);
        let first = it.next()?;
        Some((first, it.next_back().unwrap_or(first)))
    }
}

/// Counters over the normalizer's life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NormalizeStats {
    /// Messages decoded.
    pub messages: u64,
    /// MD entries seen.
    pub entries: u64,
    /// Messages of templates without a known kind (no events).
    pub other_messages: u64,
    /// Entries whose MDUpdateAction the profile does not know (kept as
    /// [`Event::Other`], so their RptSeq still counts).
    pub unknown_actions: u64,
    /// Entries without an MDEntryType.
    pub no_entry_type: u64,
    /// Entries without a SecurityID, in a message without one.
    pub no_security: u64,
    /// Symbols cut to [`Symbol::MAX`] bytes.
    pub symbols_cut: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct TopScratch {
    msg_seq_num: Option<u64>,
    sending_time: Option<u64>,
    security: Option<u64>,
    symbol: Symbol,
    /// The symbol and the TradingSessionID hashed, for instruments named by them.
    symbol_hash: Option<u64>,
    session: Option<u64>,
    rpt_seq: Option<u64>,
    last_processed: Option<u64>,
    tot_num_reports: Option<u32>,
    last_fragment: Option<u64>,
    route_first: Option<u64>,
    new_seq: Option<u64>,
    trading_status: Option<u32>,
    session_status: Option<u32>,
    depth: Option<u32>,
    tick: Option<Decimal>,
}

#[derive(Debug, Clone, Copy, Default)]
struct EntryScratch {
    action: Option<u64>,
    entry_type: Option<u8>,
    security: Option<u64>,
    symbol_hash: Option<u64>,
    session: Option<u64>,
    rpt_seq: Option<u64>,
    price: Option<Decimal>,
    size: Option<i64>,
    level: Option<u32>,
    depth: Option<u32>,
    entry_id: Option<u64>,
    orders: Option<u32>,
    aggressor: Option<u64>,
}

/// Room a batch starts with: a packet of 64 messages or 1,024 events never grows it.
pub const BATCH_MESSAGES: usize = 64;
/// See [`BATCH_MESSAGES`].
pub const BATCH_EVENTS: usize = 1024;

const NO_MAP: u16 = u16::MAX;
const DENSE_LIMIT: u32 = 4096;

/// Turns decoded messages into normalized events. Give it to
/// [`fastfeed_codec::Decoder::decode`]; read the events from [`Normalizer::batch`].
pub struct Normalizer {
    profile: Profile,
    maps: Vec<TemplateMap>,
    /// Template id -> index into `maps`, for ids below [`DENSE_LIMIT`].
    dense: Vec<u16>,
    sparse: Vec<(u32, u16)>,
    cur: Option<usize>,
    tid: u32,
    pos: usize,
    /// Inside the element of a top-level sequence: its index.
    seq: Option<u8>,
    /// That sequence's element roles (copied in at its start: one indirection per field),
    /// whether it holds the MD entries, and the message's kind.
    elem_roles: Vec<Elem>,
    in_md: bool,
    kind: MsgKind,
    elem_pos: usize,
    skip: u32,
    top: TopScratch,
    entry: EntryScratch,
    msg_start: u32,
    batch: Batch,
    stats: NormalizeStats,
}

impl Normalizer {
    /// Resolves every template of `templates` under `profile`.
    pub fn new(templates: &Templates, profile: Profile) -> Normalizer {
        let mut maps = Vec::new();
        let mut dense = Vec::new();
        let mut sparse = Vec::new();
        for t in templates.iter() {
            let i = maps.len() as u16;
            maps.push(TemplateMap::new(t, &profile));
            if t.id < DENSE_LIMIT {
                if dense.len() <= t.id as usize {
                    dense.resize(t.id as usize + 1, NO_MAP);
                }
                dense[t.id as usize] = i;
            } else {
                sparse.push((t.id, i));
            }
        }
        Normalizer {
            profile,
            maps,
            dense,
            sparse,
            cur: None,
            tid: 0,
            pos: 0,
            seq: None,
            elem_roles: Vec::with_capacity(64),
            in_md: false,
            kind: MsgKind::Other,
            elem_pos: 0,
            skip: 0,
            top: TopScratch::default(),
            entry: EntryScratch::default(),
            msg_start: 0,
            // Room for large messages up front; a larger one grows the buffers once.
            batch: Batch::with_capacity(BATCH_MESSAGES, BATCH_EVENTS),
            stats: NormalizeStats::default(),
        }
    }

    /// The profile in use.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The kind a template's messages are.
    pub fn kind_of(&self, template_id: u32) -> Option<MsgKind> {
        self.map_index(template_id).map(|i| self.maps[i].kind)
    }

    /// Events of the messages decoded since the last [`Normalizer::clear`].
    pub fn batch(&self) -> &Batch {
        &self.batch
    }

    /// Swaps the batch with `other` (an empty one, say): the events leave without a copy,
    /// and both buffers keep their capacity.
    pub fn swap_batch(&mut self, other: &mut Batch) {
        std::mem::swap(&mut self.batch, other);
    }

    /// Empties the batch (at the start of each packet, say).
    pub fn clear(&mut self) {
        self.batch.clear();
    }

    /// Drops the events of a message whose decoding failed part-way (its `end_message`
    /// never came): the batch then holds only whole messages.
    pub fn discard_partial(&mut self) {
        let end = self
            .batch
            .messages
            .last()
            .map_or(0, |m| m.events.1 as usize);
        self.batch.events.truncate(end);
        self.cur = None;
    }

    /// Counters.
    pub fn stats(&self) -> NormalizeStats {
        self.stats
    }

    fn map_index(&self, id: u32) -> Option<usize> {
        match self.dense.get(id as usize) {
            Some(&i) if i != NO_MAP => Some(i as usize),
            Some(_) => None,
            None => self
                .sparse
                .iter()
                .find(|&&(t, _)| t == id)
                .map(|&(_, i)| i as usize),
        }
    }

    #[inline(always)]
    fn top_value(&mut self, role: Top, v: FieldValue<'_>) {
        let t = &mut self.top;
        match role {
            Top::Skip | Top::Seq(_) => {}
            Top::MsgSeqNum => t.msg_seq_num = uint(v),
            Top::SendingTime => t.sending_time = uint(v),
            Top::SecurityId => t.security = uint(v),
            Top::Symbol => {
                if !t.symbol.set(bytes(&v)) {
                    self.stats.symbols_cut += 1;
                }
                // Needed only where no SecurityID names the instrument (and one sent
                // before the symbol spares the hashing).
                if t.security.is_none() {
                    t.symbol_hash = value_hash(&v);
                }
            }
            Top::Session => t.session = value_hash(&v),
            Top::RptSeq => t.rpt_seq = uint(v),
            Top::LastMsgSeqNumProcessed => t.last_processed = uint(v),
            Top::TotNumReports => t.tot_num_reports = uint(v).map(clamp32),
            Top::LastFragment => t.last_fragment = uint(v),
            Top::RouteFirst => t.route_first = uint(v),
            Top::NewSeqNo => t.new_seq = uint(v),
            Top::TradingStatus => t.trading_status = uint(v).map(clamp32),
            Top::SessionStatus => t.session_status = uint(v).map(clamp32),
            Top::MarketDepth => t.depth = max_depth(t.depth, uint(v)),
            Top::MinPriceIncrement => t.tick = decimal(v),
        }
    }

    #[inline(always)]
    fn elem_value(&mut self, role: Elem, v: FieldValue<'_>) {
        let e = &mut self.entry;
        match role {
            Elem::Skip => {}
            Elem::Action => e.action = uint(v),
            Elem::EntryType => e.entry_type = entry_type(v),
            Elem::SecurityId => e.security = uint(v),
            Elem::Symbol if e.security.is_none() => e.symbol_hash = value_hash(&v),
            Elem::Symbol => {}
            Elem::Session if e.security.is_none() => e.session = value_hash(&v),
            Elem::Session => {}
            Elem::RptSeq => e.rpt_seq = uint(v),
            Elem::Price => e.price = decimal(v),
            Elem::Size => e.size = int(v),
            Elem::Level => e.level = uint(v).map(clamp32),
            Elem::Depth => e.depth = uint(v).map(clamp32),
            Elem::EntryId => e.entry_id = uint(v).or_else(|| entry_id_text(bytes(&v))),
            Elem::Orders => e.orders = uint(v).map(clamp32),
            Elem::Aggressor => e.aggressor = uint(v),
        }
    }

    /// Completes one MD entry into an event.
    fn finish_entry(&mut self, kind: MsgKind, md: bool) {
        // `begin_element` clears the scratch for the next entry.
        let e = self.entry;
        if !md {
            // A definition's feed types: only their depth matters.
            self.top.depth = max_depth(self.top.depth, e.depth.map(u64::from));
            return;
        }
        self.stats.entries += 1;
        let entry_kind = match e.entry_type {
            Some(t) => self.profile.entry_kind(t),
            None => {
                self.stats.no_entry_type += 1;
                EntryKind::Other
            }
        };
        let book_entry = |side| BookEntry {
            side,
            price: e.price,
            size: e.size.unwrap_or(0),
            orders: e.orders,
            level: e.level,
            order_id: e.entry_id,
        };
        let event = if kind == MsgKind::Snapshot {
            // MarketDepth may come per entry (MOEX) rather than per message.
            self.top.depth = max_depth(self.top.depth, e.depth.map(u64::from));
            match entry_kind.side() {
                Some(side) => Event::SnapshotEntry(book_entry(side)),
                // An empty-book marker, a trade or statistics: not part of the book.
                None => return,
            }
        } else {
            // The entry's own SecurityID, else its symbol (with its session, or the
            // message's); else the message's instrument, filled in at its end.
            let security = e
                .security
                .or_else(|| Some(key(e.symbol_hash?, e.session.or(self.top.session))))
                .unwrap_or(NO_SECURITY);
            let rpt_seq = e.rpt_seq;
            let action = e
                .action
                .map_or(Some(Action::New), |a| self.profile.action(a));
            match (entry_kind, action) {
                (EntryKind::Bid | EntryKind::Offer, Some(action)) => Event::Book(BookUpdate {
                    security,
                    rpt_seq,
                    action,
                    depth: e.depth,
                    entry: book_entry(entry_kind.side().expect("a side")),
                }),
                (EntryKind::Bid | EntryKind::Offer, None) => {
                    self.stats.unknown_actions += 1;
                    Event::Other { security, rpt_seq }
                }
                (EntryKind::Trade, _) => Event::Trade(Trade {
                    security,
                    rpt_seq,
                    price: e.price,
                    size: e.size.unwrap_or(0),
                    aggressor: match e.aggressor {
                        Some(1) => Some(Side::Bid),
                        Some(2) => Some(Side::Offer),
                        _ => None,
                    },
                }),
                (EntryKind::EmptyBook, _) => Event::EmptyBook { security, rpt_seq },
                (EntryKind::Other, _) => Event::Other { security, rpt_seq },
            }
        };
        self.batch.events.push(event);
    }

    fn finish_message(&mut self, m: usize) {
        let kind = self.maps[m].kind;
        let mut t = self.top;
        // A message that names its instrument by symbol only.
        if t.security.is_none() && self.maps[m].symbol_keyed {
            t.security = t.symbol_hash.map(|s| key(s, t.session));
        }
        let start = self.msg_start as usize;
        match kind {
            MsgKind::Incremental => {
                for ev in &mut self.batch.events[start..] {
                    let sec = match ev {
                        Event::Book(u) => &mut u.security,
                        Event::Trade(x) => &mut x.security,
                        Event::EmptyBook { security, .. } | Event::Other { security, .. } => {
                            security
                        }
                        _ => continue,
                    };
                    if *sec == NO_SECURITY {
                        match t.security {
                            Some(s) => *sec = s,
                            None => self.stats.no_security += 1,
                        }
                    }
                }
            }
            MsgKind::Snapshot => {
                self.batch.events[start] = Event::SnapshotBegin(SnapshotHeader {
                    security: t.security.unwrap_or(NO_SECURITY),
                    rpt_seq: t.rpt_seq,
                    last_msg_seq_processed: t.last_processed,
                    tot_num_reports: t.tot_num_reports,
                    depth: t.depth,
                    first_fragment: t.route_first.map(|v| v == 1),
                    last_fragment: t.last_fragment.map(|v| v == 1),
                    flags_declared: self.maps[m].fragment_flags,
                });
                if t.security.is_none() {
                    self.stats.no_security += 1;
                }
                self.batch.events.push(Event::SnapshotEnd);
            }
            MsgKind::Definition => self.batch.events.push(Event::Definition(Definition {
                security: t.security.unwrap_or(NO_SECURITY),
                symbol: t.symbol,
                depth: t.depth,
                tick: t.tick,
                status: t.trading_status,
            })),
            MsgKind::SecurityStatus => {
                if let Some(status) = t.trading_status {
                    self.batch.events.push(Event::Status {
                        security: Some(t.security.unwrap_or(NO_SECURITY)),
                        status,
                    });
                }
            }
            MsgKind::SessionStatus => {
                if let Some(status) = t.session_status {
                    self.batch.events.push(Event::Status {
                        security: None,
                        status,
                    });
                }
            }
            MsgKind::SequenceReset => {
                if let Some(new_seq) = t.new_seq {
                    self.batch.events.push(Event::SequenceReset { new_seq });
                }
            }
            MsgKind::Heartbeat => self.batch.events.push(Event::Heartbeat),
            MsgKind::Reset | MsgKind::Other => self.stats.other_messages += 1,
        }
    }

    fn advance(&mut self) {
        if self.seq.is_some() {
            self.elem_pos += 1;
        } else {
            self.pos += 1;
        }
    }

    fn end_nested(&mut self) {
        if self.skip > 0 {
            self.skip -= 1;
            if self.skip == 0 {
                self.advance();
            }
        }
    }
}

#[inline]
fn uint(v: FieldValue<'_>) -> Option<u64> {
    match v {
        FieldValue::UInt(u) => Some(u),
        FieldValue::Int(i) => u64::try_from(i).ok(),
        FieldValue::Decimal(d) if d.exponent == 0 => u64::try_from(d.mantissa).ok(),
        _ => None,
    }
}

#[inline]
fn int(v: FieldValue<'_>) -> Option<i64> {
    match v {
        FieldValue::Int(i) => Some(i),
        FieldValue::UInt(u) => i64::try_from(u).ok(),
        // Sizes sent as decimals: whole units.
        FieldValue::Decimal(d) if d.exponent >= 0 => 10i64
            .checked_pow(d.exponent as u32)?
            .checked_mul(d.mantissa),
        FieldValue::Decimal(d) => Some(d.mantissa / 10i64.checked_pow((-d.exponent) as u32)?),
        _ => None,
    }
}

#[inline]
fn decimal(v: FieldValue<'_>) -> Option<Decimal> {
    match v {
        FieldValue::Decimal(d) => Some(d),
        FieldValue::Int(i) => Some(Decimal::new(0, i)),
        FieldValue::UInt(u) => i64::try_from(u).ok().map(|m| Decimal::new(0, m)),
        _ => None,
    }
}

#[inline]
fn entry_type(v: FieldValue<'_>) -> Option<u8> {
    match v {
        FieldValue::Ascii(b) | FieldValue::Bytes(b) => b.first().copied(),
        FieldValue::Unicode(s) => s.as_bytes().first().copied(),
        // A numeric MDEntryType: its digit.
        FieldValue::UInt(u) if u < 10 => Some(b'0' + u as u8),
        FieldValue::Int(i) if (0..10).contains(&i) => Some(b'0' + i as u8),
        _ => None,
    }
}

fn bytes<'a>(v: &FieldValue<'a>) -> &'a [u8] {
    match *v {
        FieldValue::Ascii(b) | FieldValue::Bytes(b) => b,
        FieldValue::Unicode(s) => s.as_bytes(),
        _ => &[],
    }
}

fn clamp32(v: u64) -> u32 {
    v.min(u32::MAX as u64) as u32
}

fn max_depth(cur: Option<u32>, v: Option<u64>) -> Option<u32> {
    match (cur, v.map(clamp32)) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}
