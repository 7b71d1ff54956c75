//! Name resolution, done once per template: which record field each instruction feeds, and
//! the setters that store a decoded value there.

use fastfeed_codec::template::{Instr, Kind};
use fastfeed_codec::{FieldValue, Template};

use crate::records::{Dec, MdEntry, RelatedSym};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    Quote,
    New,
    Change,
    Remove,
    MarketData,
    QuoteRequest,
    OptionQuote,
    OptionTrade,
    Done,
}

/// What a top-level instruction feeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Top {
    Skip,
    MessageType,
    SequenceNumber,
    Timestamp,
    OrderId,
    Volume,
    Price,
    ExchangeId,
    SecurityId,
    SecurityType,
    SessionId,
    Side,
    MsgSeqNum,
    SendingTime,
    TradeDate,
    QuoteReqId,
    /// The sequence split per security (MDEntries or RelatedSym).
    Entries,
    // The option templates' fields. MsgSeqNum, Time, Participant and SeriesId are shared by
    // both and kept in the converter's OptionQuote while a message is decoded.
    OptSeqNum,
    OptTime,
    Participant,
    SeriesId,
    BidPrice,
    BidSize,
    AskPrice,
    AskSize,
    TradePrice,
    TradeVolume,
    TradeCondition,
}

const TOP_NAMES: [(&str, Top); 15] = [
    ("MessageType", Top::MessageType),
    ("SequenceNumber", Top::SequenceNumber),
    ("Timestamp", Top::Timestamp),
    ("OrderId", Top::OrderId),
    ("Volume", Top::Volume),
    ("Price", Top::Price),
    ("ExchangeId", Top::ExchangeId),
    ("SecurityId", Top::SecurityId),
    ("SecurityType", Top::SecurityType),
    ("SessionId", Top::SessionId),
    ("Side", Top::Side),
    ("MsgSeqNum", Top::MsgSeqNum),
    ("SendingTime", Top::SendingTime),
    ("TradeDate", Top::TradeDate),
    ("QuoteReqID", Top::QuoteReqId),
];

/// The option templates' names, apart from the others' so that their MsgSeqNum and the
/// like feed the option records.
const OPTION_NAMES: [(&str, Top); 11] = [
    ("MsgSeqNum", Top::OptSeqNum),
    ("Time", Top::OptTime),
    ("Participant", Top::Participant),
    ("SeriesId", Top::SeriesId),
    ("BidPrice", Top::BidPrice),
    ("BidSize", Top::BidSize),
    ("AskPrice", Top::AskPrice),
    ("AskSize", Top::AskSize),
    ("TradePrice", Top::TradePrice),
    ("TradeVolume", Top::TradeVolume),
    ("TradeCondition", Top::TradeCondition),
];

pub(crate) const NO_FIELD: u8 = u8::MAX;

pub(crate) struct Map {
    pub target: Target,
    pub top: Vec<Top>,
    /// Element instruction position -> index into `MdEntry::FIELDS` / `RelatedSym::FIELDS`.
    pub elem: Vec<u8>,
}

impl Map {
    pub fn new(t: &Template) -> Option<Map> {
        let (target, seq_name, fields): (_, _, &[&str]) = match t.name.as_str() {
            "Quote" => (Target::Quote, "", &[]),
            "New" => (Target::New, "", &[]),
            "Change" => (Target::Change, "", &[]),
            "Remove" => (Target::Remove, "", &[]),
            "MarketData" => (Target::MarketData, "MDEntries", &MdEntry::FIELDS),
            "QuoteRequest" => (Target::QuoteRequest, "RelatedSym", &RelatedSym::FIELDS),
            "OptionQuote" => (Target::OptionQuote, "", &[]),
            "OptionTrade" => (Target::OptionTrade, "", &[]),
            _ if t.name == "Done" || t.id == 99 => (Target::Done, "", &[]),
            _ => return None,
        };
        let names: &[(&str, Top)] = match target {
            Target::OptionQuote | Target::OptionTrade => &OPTION_NAMES,
            _ => &TOP_NAMES,
        };
        let mut elem = Vec::new();
        let top = t
            .body
            .instrs
            .iter()
            .map(|i| match &i.kind {
                Kind::Sequence { body, .. } if i.name == seq_name => {
                    elem = body.instrs.iter().map(|e| field_index(fields, e)).collect();
                    Top::Entries
                }
                Kind::Scalar(_) | Kind::SplitDecimal { .. } => names
                    .iter()
                    .find(|(n, _)| *n == i.name)
                    .map_or(Top::Skip, |(_, f)| *f),
                _ => Top::Skip,
            })
            .collect();
        Some(Map { target, top, elem })
    }
}

fn field_index(fields: &[&str], i: &Instr) -> u8 {
    fields
        .iter()
        .position(|n| *n == i.name)
        .map_or(NO_FIELD, |p| p as u8)
}

pub(crate) fn uint(v: FieldValue<'_>) -> u64 {
    match v {
        FieldValue::UInt(u) => u,
        FieldValue::Int(i) => i as u64,
        _ => 0,
    }
}

pub(crate) fn bytes<'a>(v: &FieldValue<'a>) -> &'a [u8] {
    match *v {
        FieldValue::Ascii(b) | FieldValue::Bytes(b) => b,
        FieldValue::Unicode(s) => s.as_bytes(),
        _ => &[],
    }
}

pub(crate) fn dec(v: FieldValue<'_>) -> Dec {
    match v {
        FieldValue::Decimal(d) => d.into(),
        FieldValue::Int(i) => Dec::new(i, 0),
        FieldValue::UInt(u) => Dec::new(u as i64, 0),
        _ => Dec::default(),
    }
}

/// Sets field `i` of `MdEntry::FIELDS`; false if a string was cut.
pub(crate) fn md_field(e: &mut MdEntry, i: u8, v: FieldValue<'_>) -> bool {
    e.present |= 1 << i;
    let u = || uint(v) as u32;
    match i {
        0 => e.md_update_action = u(),
        1 => e.md_price_level = u(),
        2 => return e.md_entry_type.set(bytes(&v)),
        3 => e.open_close_settle_flag = u(),
        4 => e.security_id_source = u(),
        5 => e.security_id = u(),
        6 => e.rpt_seq = u(),
        7 => e.md_entry_px = dec(v),
        8 => e.md_entry_time = u(),
        9 => e.md_entry_size = uint(v) as i32,
        10 => e.number_of_orders = u(),
        11 => return e.trading_session_id.set(bytes(&v)),
        12 => e.net_chg_prev_day = dec(v),
        13 => e.trade_volume = u(),
        14 => return e.trade_condition.set(bytes(&v)),
        15 => return e.tick_direction.set(bytes(&v)),
        16 => return e.quote_condition.set(bytes(&v)),
        17 => e.aggressor_side = u(),
        _ => return e.match_event_indicator.set(bytes(&v)),
    }
    true
}

/// Sets field `i` of `RelatedSym::FIELDS`; false if a string was cut.
pub(crate) fn rs_field(e: &mut RelatedSym, i: u8, v: FieldValue<'_>) -> bool {
    e.present |= 1 << i;
    let u = uint(v) as u32;
    match i {
        0 => return e.symbol.set(bytes(&v)),
        1 => e.security_id_source = u,
        2 => e.security_id = u,
        3 => e.order_qty = u,
        4 => e.side = u,
        5 => e.transact_time = u,
        _ => e.quote_type = u,
    }
    true
}
