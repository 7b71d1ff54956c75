//! fastfeed-events: decoded FAST messages to normalized market-data events, by the FIX tag
//! numbers in the templates' `id` attributes (35 MsgType, 34 MsgSeqNum, 268 NoMDEntries,
//! 279 MDUpdateAction, 269 MDEntryType, 270 MDEntryPx, 271 MDEntrySize, 48 SecurityID
//! (or, in templates without one, 55 Symbol with 336 TradingSessionID: [`symbol_security`]),
//! 83 RptSeq, 1023 MDPriceLevel, 264 MarketDepth, 278 MDEntryID, 346 NumberOfOrders,
//! 369 LastMsgSeqNumProcessed, 326 SecurityTradingStatus, 36 NewSeqNo, ...), so one handler
//! serves every FIX-based FAST feed. A [`Profile`] says where a venue departs from FIX.
//!
//! The [`Normalizer`] is a codec [`fastfeed_codec::Handler`]: tags are resolved once per
//! template into tables, and the events of the messages decoded go into a reused [`Batch`],
//! so steady-state normalizing does not allocate.
//!
//! ```
//! use fastfeed_events::{Event, MsgKind, Normalizer, Profile};
//! let xml = r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
//!   <template name="Inc" id="1"><string name="MsgType" id="35"><constant value="X"/></string>
//!     <uInt32 name="MsgSeqNum" id="34"/>
//!     <sequence name="MDEntries"><length name="NoMDEntries" id="268"/>
//!       <uInt32 name="MDUpdateAction" id="279"/><string name="MDEntryType" id="269"/>
//!       <uInt64 name="SecurityID" id="48"/><uInt32 name="RptSeq" id="83"/>
//!       <decimal name="MDEntryPx" id="270"/><int64 name="MDEntrySize" id="271"/>
//!     </sequence></template></templates>"#;
//! let templates = fastfeed_codec::parse_templates(xml).unwrap();
//! let mut n = Normalizer::new(&templates, Profile::fix());
//! let mut dec = fastfeed_codec::Decoder::new(templates);
//! // pmap, template 1, MsgSeqNum 7, one entry: new, bid, security 42, RptSeq 9, 101.5 x 3
//! let bytes = [0xc0, 0x81, 0x87, 0x81, 0x80, 0xb0, 0xaa, 0x89, 0xff, 0x07, 0xf7, 0x83];
//! dec.decode(&bytes, &mut n).unwrap();
//! let m = n.batch().messages[0];
//! assert_eq!((m.kind, m.msg_seq_num), (MsgKind::Incremental, Some(7)));
//! let Event::Book(u) = n.batch().events[0] else { panic!() };
//! assert_eq!((u.security, u.rpt_seq, u.entry.size), (42, Some(9), 3));
//! assert_eq!(u.entry.price.unwrap().to_string(), "101.5");
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod event;
mod instrument;
mod map;
mod normalize;
mod profile;

pub use event::{
    Action, BookEntry, BookUpdate, Definition, Event, MsgKind, Side, SnapshotHeader, Symbol, Trade,
};
pub use instrument::{symbol_security, SYMBOL_KEYED};
pub use normalize::{
    Batch, MessageInfo, NormalizeStats, Normalizer, BATCH_EVENTS, BATCH_MESSAGES, NO_SECURITY,
};
pub use profile::{BookKind, EntryKind, Profile, PROFILES};
