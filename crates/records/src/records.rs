//! The record types: the paper's `Simple.idl` and `Complex.idl` structs, without heap data.

use std::fmt;

use fastfeed_codec::Decimal;

use crate::option::{OptionQuote, OptionTrade};

/// Entries one [`MarketData`] record holds; a security with more entries in one message gets
/// several records (`part` 0..`parts`).
pub const MD_MAX_ENTRIES: usize = 8;
/// Entries one [`QuoteRequest`] record holds, split the same way.
pub const QR_MAX_ENTRIES: usize = 4;

/// Record types cross the bus: each names its topic type and the security it is about.
pub use fastfeed_bus::Record as RecordType;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// A string of at most `N` bytes, stored inline. Longer input is cut at `N` bytes.
#[repr(C)]
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, IntoBytes, FromBytes, Immutable, KnownLayout, Unaligned,
)]
pub struct Str<const N: usize> {
    pub len: u8,
    pub bytes: [u8; N],
}

impl<const N: usize> Str<N> {
    /// Stores `b`; returns false if it had to be cut.
    pub fn set(&mut self, b: &[u8]) -> bool {
        let n = b.len().min(N).min(u8::MAX as usize);
        self.bytes[..n].copy_from_slice(&b[..n]);
        // Zero the tail so equal strings compare equal byte for byte.
        self.bytes[n..].fill(0);
        self.len = n as u8;
        n == b.len()
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..(self.len as usize).min(N)]
    }

    /// The text, lossily if the bytes are not UTF-8.
    pub fn as_str(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.as_bytes())
    }
}

impl<const N: usize> Default for Str<N> {
    fn default() -> Self {
        Str {
            len: 0,
            bytes: [0; N],
        }
    }
}

impl<const N: usize> From<&str> for Str<N> {
    fn from(s: &str) -> Self {
        let mut out = Str::default();
        out.set(s.as_bytes());
        out
    }
}

impl<const N: usize> fmt::Debug for Str<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

/// A FAST decimal: `mantissa * 10^exponent`, exact.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Default, Hash, IntoBytes, FromBytes, Immutable, KnownLayout,
)]
pub struct Dec {
    pub mantissa: i64,
    pub exponent: i32,
    /// Zero.
    pub _pad: u32,
}

impl Dec {
    pub fn new(mantissa: i64, exponent: i32) -> Self {
        Dec {
            mantissa,
            exponent,
            _pad: 0,
        }
    }

    pub fn to_f64(self) -> f64 {
        self.mantissa as f64 * 10f64.powi(self.exponent)
    }
}

impl From<Decimal> for Dec {
    fn from(d: Decimal) -> Self {
        Dec::new(d.mantissa, d.exponent)
    }
}

/// The simple records: the fields all four share, the type's own 4-byte fields after the
/// 4-byte ones, its own bytes after the bytes; laid out so no padding falls between them
/// (Quote ends with an explicit pad byte). See LAYOUT.md.
macro_rules! simple_record {
    ($(#[$doc:meta])* $name:ident, $type_name:literal
        { $($(#[$wdoc:meta])* $wide:ident: $wty:ty),* }
        { $($(#[$ndoc:meta])* $narrow:ident: $nty:ty),* }) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Default, IntoBytes, FromBytes, Immutable, KnownLayout,
        )]
        pub struct $name {
            pub sequence_number: u32,
            pub timestamp: u32,
            pub order_id: u32,
            $($(#[$wdoc])* pub $wide: $wty,)*
            pub message_type: u16,
            pub security_id: u16,
            pub exchange_id: u8,
            pub security_type: u8,
            pub session_id: u8,
            $($(#[$ndoc])* pub $narrow: $nty,)*
        }

        impl RecordType for $name {
            const TYPE_NAME: &'static str = $type_name;
            const LAYOUT_VERSION: u16 = 1;
            fn security_id(&self) -> u32 {
                self.security_id as u32
            }
        }
    };
}

simple_record!(
    /// The simple Quote message (template 1, MessageType 11).
    Quote, "quote" { volume: u32, price: u32 } {
        /// Zero.
        _pad: u8
    }
);
simple_record!(
    /// The simple New order message (template 2, MessageType 12).
    New, "new" { volume: u32, price: u32 } { side: u8 }
);
simple_record!(
    /// The simple Change order message (template 3, MessageType 13).
    Change, "change" { volume: u32, price: u32 } { side: u8 }
);
simple_record!(
    /// The simple Remove order message (template 4, MessageType 14).
    Remove, "remove" {} { side: u8 }
);

/// One MDEntries element. `present` has bit `MdEntry::X` set for every field the message
/// carried; absent optional fields read as zero/empty.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Default, IntoBytes, FromBytes, Immutable, KnownLayout,
)]
pub struct MdEntry {
    pub md_entry_px: Dec,
    pub net_chg_prev_day: Dec,
    pub md_update_action: u32,
    pub md_price_level: u32,
    pub open_close_settle_flag: u32,
    pub security_id_source: u32,
    pub security_id: u32,
    pub rpt_seq: u32,
    pub md_entry_time: u32,
    pub md_entry_size: i32,
    pub number_of_orders: u32,
    pub trade_volume: u32,
    pub aggressor_side: u32,
    pub present: u32,
    pub md_entry_type: Str<3>,
    pub trading_session_id: Str<3>,
    pub tick_direction: Str<3>,
    pub match_event_indicator: Str<3>,
    pub trade_condition: Str<7>,
    pub quote_condition: Str<7>,
}

impl MdEntry {
    /// Template field names, in template order; a field's bit in `present` is its index.
    pub const FIELDS: [&'static str; 19] = [
        "MDUpdateAction",
        "MDPriceLevel",
        "MDEntryType",
        "OpenCloseSettleFlag",
        "SecurityIDSource",
        "SecurityID",
        "RptSeq",
        "MDEntryPx",
        "MDEntryTime",
        "MDEntrySize",
        "NumberOfOrders",
        "TradingSessionID",
        "NetChgPrevDay",
        "TradeVolume",
        "TradeCondition",
        "TickDirection",
        "QuoteCondition",
        "AggressorSide",
        "MatchEventIndicator",
    ];
    pub const PRICE_LEVEL: u32 = 1 << 1;
    pub const OPEN_CLOSE_SETTLE_FLAG: u32 = 1 << 3;
    pub const ENTRY_SIZE: u32 = 1 << 9;
    pub const NUMBER_OF_ORDERS: u32 = 1 << 10;
    pub const TRADING_SESSION_ID: u32 = 1 << 11;
    pub const NET_CHG_PREV_DAY: u32 = 1 << 12;
    pub const TRADE_VOLUME: u32 = 1 << 13;
    pub const TRADE_CONDITION: u32 = 1 << 14;
    pub const TICK_DIRECTION: u32 = 1 << 15;
    pub const QUOTE_CONDITION: u32 = 1 << 16;
    pub const AGGRESSOR_SIDE: u32 = 1 << 17;
    pub const MATCH_EVENT_INDICATOR: u32 = 1 << 18;

    /// Whether the field with bit `bit` was present.
    pub fn has(&self, bit: u32) -> bool {
        self.present & bit != 0
    }
}

/// The entries of one MarketData message for one security (the paper's per-security split).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Default, IntoBytes, FromBytes, Immutable, KnownLayout,
)]
pub struct MarketData {
    pub security_id: u32,
    pub msg_seq_num: u32,
    pub sending_time: u32,
    pub trade_date: u32,
    /// Valid entries in `entries`.
    pub entry_count: u32,
    /// This record's index among the `parts` records of this security in this message.
    pub part: u16,
    pub parts: u16,
    pub entries: [MdEntry; MD_MAX_ENTRIES],
}

impl MarketData {
    pub fn entries(&self) -> &[MdEntry] {
        &self.entries[..(self.entry_count as usize).min(MD_MAX_ENTRIES)]
    }
}

/// One RelatedSym element of a QuoteRequest.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Default, IntoBytes, FromBytes, Immutable, KnownLayout,
)]
pub struct RelatedSym {
    pub security_id_source: u32,
    pub security_id: u32,
    pub order_qty: u32,
    pub side: u32,
    pub transact_time: u32,
    pub quote_type: u32,
    pub present: u32,
    pub symbol: Str<23>,
}

impl RelatedSym {
    /// Template field names, in template order; a field's bit in `present` is its index.
    pub const FIELDS: [&'static str; 7] = [
        "Symbol",
        "SecurityIDSource",
        "SecurityID",
        "OrderQty",
        "Side",
        "TransactTime",
        "QuoteType",
    ];
    pub const ORDER_QTY: u32 = 1 << 3;
    pub const SIDE: u32 = 1 << 4;

    pub fn has(&self, bit: u32) -> bool {
        self.present & bit != 0
    }
}

/// The RelatedSym entries of one QuoteRequest message for one security.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Default, IntoBytes, FromBytes, Immutable, KnownLayout,
)]
pub struct QuoteRequest {
    pub security_id: u32,
    pub msg_seq_num: u32,
    pub sending_time: u32,
    pub entry_count: u32,
    pub part: u16,
    pub parts: u16,
    pub quote_req_id: Str<23>,
    pub entries: [RelatedSym; QR_MAX_ENTRIES],
}

impl QuoteRequest {
    pub fn entries(&self) -> &[RelatedSym] {
        &self.entries[..(self.entry_count as usize).min(QR_MAX_ENTRIES)]
    }
}

impl RecordType for MarketData {
    const TYPE_NAME: &'static str = "marketdata";
    const LAYOUT_VERSION: u16 = 1;
    fn security_id(&self) -> u32 {
        self.security_id
    }
    /// Up to the last valid entry: the converter leaves the other slots zero.
    fn wire_len(&self) -> usize {
        std::mem::offset_of!(MarketData, entries) + size_of_val(self.entries())
    }
}

impl RecordType for QuoteRequest {
    const TYPE_NAME: &'static str = "quoterequest";
    const LAYOUT_VERSION: u16 = 1;
    fn security_id(&self) -> u32 {
        self.security_id
    }
    /// Up to the last valid entry: the converter leaves the other slots zero.
    fn wire_len(&self) -> usize {
        std::mem::offset_of!(QuoteRequest, entries) + size_of_val(self.entries())
    }
}

/// Any record, or the end-of-stream marker (the Done message, template 99).
// Inline on purpose: records live in reused buffers and must not point to the heap.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    Quote(Quote),
    New(New),
    Change(Change),
    Remove(Remove),
    MarketData(MarketData),
    QuoteRequest(QuoteRequest),
    OptionQuote(OptionQuote),
    OptionTrade(OptionTrade),
    Done,
}

impl Record {
    /// Every type name, Done's ("done") last.
    pub const TYPE_NAMES: [&'static str; 9] = [
        Quote::TYPE_NAME,
        New::TYPE_NAME,
        Change::TYPE_NAME,
        Remove::TYPE_NAME,
        MarketData::TYPE_NAME,
        QuoteRequest::TYPE_NAME,
        OptionQuote::TYPE_NAME,
        OptionTrade::TYPE_NAME,
        "done",
    ];

    /// The security the record is about; 0 for Done.
    pub fn security_id(&self) -> u32 {
        match self {
            Record::Quote(r) => r.security_id(),
            Record::New(r) => r.security_id(),
            Record::Change(r) => r.security_id(),
            Record::Remove(r) => r.security_id(),
            Record::MarketData(r) => r.security_id,
            Record::QuoteRequest(r) => r.security_id,
            Record::OptionQuote(r) => r.series_id,
            Record::OptionTrade(r) => r.series_id,
            Record::Done => 0,
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Record::Quote(_) => Quote::TYPE_NAME,
            Record::New(_) => New::TYPE_NAME,
            Record::Change(_) => Change::TYPE_NAME,
            Record::Remove(_) => Remove::TYPE_NAME,
            Record::MarketData(_) => MarketData::TYPE_NAME,
            Record::QuoteRequest(_) => QuoteRequest::TYPE_NAME,
            Record::OptionQuote(_) => OptionQuote::TYPE_NAME,
            Record::OptionTrade(_) => OptionTrade::TYPE_NAME,
            Record::Done => "done",
        }
    }
}
