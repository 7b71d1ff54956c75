//! Venue profiles: where a venue departs from FIX. A profile is a few small tables
//! (MDUpdateAction values, MDEntryType values, message kinds of templates, the book kind);
//! everything else is read by FIX tag number.

use std::collections::HashMap;

use fastfeed_feed::config::ProfileOverrides;

use crate::event::{Action, MsgKind, Side};

/// What an MDEntryType value stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A bid level or order.
    Bid,
    /// An offer level or order.
    Offer,
    /// A trade.
    Trade,
    /// The book is empty (J).
    EmptyBook,
    /// Kept out of books (statistics, implied prices, ...), but it takes an RptSeq.
    Other,
}

impl EntryKind {
    pub(crate) fn side(self) -> Option<Side> {
        match self {
            EntryKind::Bid => Some(Side::Bid),
            EntryKind::Offer => Some(Side::Offer),
            _ => None,
        }
    }
}

/// How books are keyed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BookKind {
    /// By each entry: MDPriceLevel if given, else MDEntryID, else the price.
    Auto,
    /// Price-level book, positions from MDPriceLevel (1 = best).
    Level,
    /// Levels found by MDEntryPx.
    Price,
    /// Orders by MDEntryID, aggregated into levels by price.
    Order,
}

/// A venue profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// Its name in configurations.
    pub name: String,
    actions: [Option<Action>; 16],
    entry_kinds: [EntryKind; 128],
    /// How books are keyed.
    pub book: BookKind,
    msg_types: Vec<(Vec<u8>, MsgKind)>,
    /// Message kinds of template ids, over the MsgType constants.
    pub template_kinds: HashMap<u32, MsgKind>,
}

/// The profile names [`Profile::by_name`] knows.
pub const PROFILES: [&str; 3] = ["fix", "moex-forts", "cme"];

impl Profile {
    /// FIX as written: MDUpdateAction 0-5 new, change, delete, delete thru, delete from,
    /// overlay; MDEntryType 0 bid, 1 offer, 2 trade, J empty book, others kept out of books;
    /// message kinds from MsgType (35) constants X, W, d, f, h, 4, 0.
    pub fn fix() -> Profile {
        let mut entry_kinds = [EntryKind::Other; 128];
        entry_kinds[b'0' as usize] = EntryKind::Bid;
        entry_kinds[b'1' as usize] = EntryKind::Offer;
        entry_kinds[b'2' as usize] = EntryKind::Trade;
        entry_kinds[b'J' as usize] = EntryKind::EmptyBook;
        let mut actions = [None; 16];
        for (i, a) in [
            Action::New,
            Action::Change,
            Action::Delete,
            Action::DeleteThru,
            Action::DeleteFrom,
            Action::Overlay,
        ]
        .into_iter()
        .enumerate()
        {
            actions[i] = Some(a);
        }
        let msg_types = [
            ("X", MsgKind::Incremental),
            ("W", MsgKind::Snapshot),
            ("d", MsgKind::Definition),
            ("f", MsgKind::SecurityStatus),
            ("h", MsgKind::SessionStatus),
            ("4", MsgKind::SequenceReset),
            ("0", MsgKind::Heartbeat),
        ]
        .into_iter()
        .map(|(t, k)| (t.as_bytes().to_vec(), k))
        .collect();
        Profile {
            name: "fix".into(),
            actions,
            entry_kinds,
            book: BookKind::Auto,
            msg_types,
            template_kinds: HashMap::new(),
        }
    }

    /// Moscow Exchange FORTS (FAST, 2013 onwards): FIX numbering of actions and entry
    /// types; price-level books (MDPriceLevel, MarketDepth per entry) on the BOOK feeds and
    /// order books (MDEntryID) on the ORDERS-LOG feeds, so books are keyed per entry; the
    /// snapshot channel loops over the instruments and restarts its MsgSeqNum with a
    /// SequenceReset every cycle; every packet starts with a FAST Reset (template 120).
    /// Departure from FIX: MDUpdateAction only 0-2 (3-5 are not MOEX actions and are
    /// rejected); MDEntryType J marks an empty book in snapshots.
    pub fn moex_forts() -> Profile {
        let mut p = Profile::fix();
        p.name = "moex-forts".into();
        for a in &mut p.actions[3..] {
            *a = None;
        }
        p
    }

    /// CME FAST (the pre-MDP3 market data platform): MDUpdateAction 0-5 as FIX (overlay
    /// included); price-level books by MDPriceLevel with depth from the SecurityDefinition's
    /// MDFeedTypes; MDEntryType E and F are implied prices (a separate implied book, kept
    /// out of the outright book here), J an empty book. Packets carry a 4-byte big-endian
    /// sequence number and a sub-channel byte before the message (configured as the
    /// channel's packet header).
    pub fn cme() -> Profile {
        let mut p = Profile::fix();
        p.name = "cme".into();
        p.book = BookKind::Level;
        p
    }

    /// A shipped profile by name.
    pub fn by_name(name: &str) -> Option<Profile> {
        match name {
            "fix" => Some(Profile::fix()),
            "moex-forts" => Some(Profile::moex_forts()),
            "cme" => Some(Profile::cme()),
            _ => None,
        }
    }

    /// Applies a configuration's overrides.
    pub fn with_overrides(mut self, o: &ProfileOverrides) -> Result<Profile, String> {
        for (value, name) in &o.actions {
            let v: usize = value
                .parse()
                .ok()
                .filter(|&v: &usize| v < 16)
                .ok_or_else(|| format!("MDUpdateAction {value:?} is not 0..15"))?;
            self.actions[v] = match name.as_str() {
                "new" => Some(Action::New),
                "change" => Some(Action::Change),
                "delete" => Some(Action::Delete),
                "delete-thru" => Some(Action::DeleteThru),
                "delete-from" => Some(Action::DeleteFrom),
                "overlay" => Some(Action::Overlay),
                "none" => None,
                n => return Err(format!("unknown action {n:?}")),
            };
        }
        for (value, name) in &o.entry_types {
            let &[b] = value.as_bytes() else {
                return Err(format!("MDEntryType {value:?} is not one character"));
            };
            let kind = match name.as_str() {
                "bid" => EntryKind::Bid,
                "offer" => EntryKind::Offer,
                "trade" => EntryKind::Trade,
                "empty-book" => EntryKind::EmptyBook,
                "ignore" => EntryKind::Other,
                n => return Err(format!("unknown entry kind {n:?}")),
            };
            *self
                .entry_kinds
                .get_mut(b as usize)
                .ok_or_else(|| format!("MDEntryType {value:?} is not ASCII"))? = kind;
        }
        if let Some(b) = &o.book {
            self.book = match b.as_str() {
                "auto" => BookKind::Auto,
                "level" => BookKind::Level,
                "price" => BookKind::Price,
                "order" => BookKind::Order,
                n => return Err(format!("unknown book kind {n:?}")),
            };
        }
        for (id, kind) in &o.templates {
            let id: u32 = id
                .parse()
                .map_err(|_| format!("template id {id:?} is not a number"))?;
            let kind = match kind.as_str() {
                "incremental" => MsgKind::Incremental,
                "snapshot" => MsgKind::Snapshot,
                "definition" => MsgKind::Definition,
                "status" => MsgKind::SecurityStatus,
                "session-status" => MsgKind::SessionStatus,
                "sequence-reset" => MsgKind::SequenceReset,
                "heartbeat" => MsgKind::Heartbeat,
                "ignore" => MsgKind::Other,
                n => return Err(format!("unknown message kind {n:?}")),
            };
            self.template_kinds.insert(id, kind);
        }
        Ok(self)
    }

    /// The action of an MDUpdateAction value.
    #[inline]
    pub fn action(&self, value: u64) -> Option<Action> {
        self.actions.get(value as usize).copied().flatten()
    }

    /// The kind of an MDEntryType (its first byte).
    #[inline]
    pub fn entry_kind(&self, value: u8) -> EntryKind {
        self.entry_kinds
            .get(value as usize)
            .copied()
            .unwrap_or(EntryKind::Other)
    }

    /// The message kind of a MsgType value.
    pub fn msg_kind(&self, msg_type: &[u8]) -> Option<MsgKind> {
        self.msg_types
            .iter()
            .find(|(t, _)| t == msg_type)
            .map(|&(_, k)| k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_profiles_and_overrides() {
        let fix = Profile::fix();
        assert_eq!(fix.action(0), Some(Action::New));
        assert_eq!(fix.action(5), Some(Action::Overlay));
        assert_eq!(fix.action(9), None);
        assert_eq!(fix.entry_kind(b'1'), EntryKind::Offer);
        assert_eq!(fix.entry_kind(b'J'), EntryKind::EmptyBook);
        assert_eq!(fix.entry_kind(0xff), EntryKind::Other);
        assert_eq!(fix.msg_kind(b"W"), Some(MsgKind::Snapshot));
        let moex = Profile::by_name("moex-forts").unwrap();
        assert_eq!(moex.action(2), Some(Action::Delete));
        assert_eq!(moex.action(5), None);
        let cme = Profile::by_name("cme").unwrap();
        assert_eq!(cme.book, BookKind::Level);
        assert_eq!(cme.entry_kind(b'E'), EntryKind::Other);
        assert!(Profile::by_name("nyse").is_none());

        let mut o = ProfileOverrides::default();
        o.actions.insert("7".into(), "overlay".into());
        o.entry_types.insert("E".into(), "bid".into());
        o.book = Some("order".into());
        o.templates.insert("12".into(), "snapshot".into());
        let p = Profile::fix().with_overrides(&o).unwrap();
        assert_eq!(p.action(7), Some(Action::Overlay));
        assert_eq!(p.entry_kind(b'E'), EntryKind::Bid);
        assert_eq!(p.book, BookKind::Order);
        assert_eq!(p.template_kinds.get(&12), Some(&MsgKind::Snapshot));
        o.actions.insert("x".into(), "new".into());
        assert!(Profile::fix().with_overrides(&o).is_err());
    }
}
