//! Records of the feed handler (`fastfeed handle --bus`): an instrument's book after each
//! change, its top of book, trades, and trading status. Plain data with explicit padding,
//! like every record here; prices exact ([`Dec`]). SecurityIDs are kept whole (`security`,
//! 64 bits); the bus filters on their low 32 bits.

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

use crate::records::{Dec, RecordType};

/// Levels per side a [`BookUpdate`] carries (deeper books are cut, and say so in
/// `bid_levels`/`offer_levels`, which count the whole side).
pub const BOOK_LEVELS: usize = 10;

/// Book states: [`BookUpdate::state`] and [`TopOfBook::state`].
pub mod state {
    /// Waiting for its first snapshot.
    pub const UNKNOWN: u8 = 0;
    /// Built from a snapshot and every update since.
    pub const LIVE: u8 = 1;
    /// An update was lost: waiting for a snapshot.
    pub const STALE: u8 = 2;
}

/// One price level.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Default, IntoBytes, FromBytes, Immutable, KnownLayout,
)]
pub struct BookLevel {
    pub price: Dec,
    pub size: i64,
    /// NumberOfOrders; 0 when the feed does not say.
    pub orders: u32,
    /// Zero.
    pub _pad: u32,
}

/// An instrument's book after a change (topic type `book`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, IntoBytes, FromBytes, Immutable, KnownLayout)]
pub struct BookUpdate {
    pub security: u64,
    /// RptSeq of the last update applied (0: none).
    pub rpt_seq: u64,
    /// MsgSeqNum of the message that changed it (LastMsgSeqNumProcessed after a snapshot).
    pub msg_seq_num: u64,
    /// Levels on each side (the records hold the best [`BOOK_LEVELS`]).
    pub bid_levels: u16,
    pub offer_levels: u16,
    /// A [`state`] value.
    pub state: u8,
    /// 1 if the change is a snapshot being applied.
    pub from_snapshot: u8,
    /// Zero.
    pub _pad: [u8; 2],
    pub bids: [BookLevel; BOOK_LEVELS],
    pub offers: [BookLevel; BOOK_LEVELS],
}

impl Default for BookUpdate {
    fn default() -> Self {
        BookUpdate::new_zeroed()
    }
}

/// The best bid and offer after a change (topic type `top`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Default, IntoBytes, FromBytes, Immutable, KnownLayout,
)]
pub struct TopOfBook {
    pub security: u64,
    pub rpt_seq: u64,
    pub msg_seq_num: u64,
    pub bid: BookLevel,
    pub offer: BookLevel,
    /// 1 if there is a bid, an offer.
    pub has_bid: u8,
    pub has_offer: u8,
    /// A [`state`] value.
    pub state: u8,
    /// Zero.
    pub _pad: [u8; 5],
}

/// A trade (topic type `trade`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Default, IntoBytes, FromBytes, Immutable, KnownLayout,
)]
pub struct TradeRecord {
    pub security: u64,
    pub rpt_seq: u64,
    pub msg_seq_num: u64,
    pub price: Dec,
    pub size: i64,
    /// 0 unknown, 1 the buyer, 2 the seller.
    pub aggressor: u8,
    /// Zero.
    pub _pad: [u8; 7],
}

/// Trading status of an instrument, or of the session (topic type `status`).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Default, IntoBytes, FromBytes, Immutable, KnownLayout,
)]
pub struct StatusRecord {
    /// 0 for the session.
    pub security: u64,
    /// The status as the venue numbers it (SecurityTradingStatus 326, TradSesStatus 340).
    pub status: u32,
    /// 1 an instrument's, 2 the session's.
    pub scope: u8,
    /// Zero.
    pub _pad: [u8; 3],
}

macro_rules! feed_record {
    ($t:ty, $name:literal) => {
        impl RecordType for $t {
            const TYPE_NAME: &'static str = $name;
            const LAYOUT_VERSION: u16 = 1;
            fn security_id(&self) -> u32 {
                self.security as u32
            }
        }
    };
}

feed_record!(BookUpdate, "book");
feed_record!(TopOfBook, "top");
feed_record!(TradeRecord, "trade");
feed_record!(StatusRecord, "status");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_have_no_hidden_padding() {
        // IntoBytes derives would not compile with implicit padding; the sizes are the
        // wire layout's.
        assert_eq!(std::mem::size_of::<BookLevel>(), 32);
        assert_eq!(std::mem::size_of::<BookUpdate>(), 32 + 2 * BOOK_LEVELS * 32);
        assert_eq!(std::mem::size_of::<TopOfBook>(), 24 + 64 + 8);
        assert_eq!(std::mem::size_of::<TradeRecord>(), 24 + 16 + 16);
        assert_eq!(std::mem::size_of::<StatusRecord>(), 16);
        let b = BookUpdate::default();
        assert!(b.as_bytes().iter().all(|&x| x == 0));
    }
}
