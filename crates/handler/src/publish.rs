//! The handler's outputs as bus records: each book change as a [`BookUpdate`] and a
//! [`TopOfBook`], trades as [`TradeRecord`]s, statuses as [`StatusRecord`]s, on topics
//! `fastfeed/<feed>/{book,top,trade,status}/<security>`, over any [`Bus`] backend.

use fastfeed_book::Level;
use fastfeed_bus::{Bus, BusError, Publisher, PublisherQos};
use fastfeed_events::{Side, Trade};
use fastfeed_records::feed::{
    state, BookLevel, BookUpdate, StatusRecord, TopOfBook, TradeRecord, BOOK_LEVELS,
};
use fastfeed_records::Dec;

use crate::output::{BookState, BookView, Output};

/// Publishes a channel's outputs.
pub struct BusOutput<B: Bus> {
    book: B::Publisher<BookUpdate>,
    top: B::Publisher<TopOfBook>,
    trade: B::Publisher<TradeRecord>,
    status: B::Publisher<StatusRecord>,
    /// Records published.
    pub published: u64,
    /// Records the bus refused (counted, not retried).
    pub errors: u64,
}

fn level(l: &Level) -> BookLevel {
    BookLevel {
        price: l.price.into(),
        size: l.size,
        orders: l.orders.unwrap_or(0),
        _pad: 0,
    }
}

fn state_of(s: BookState) -> u8 {
    match s {
        BookState::Unknown => state::UNKNOWN,
        BookState::Live => state::LIVE,
        BookState::Stale => state::STALE,
    }
}

impl<B: Bus> BusOutput<B> {
    /// Opens the four publishers on `bus`.
    pub fn new(bus: &B) -> Result<BusOutput<B>, BusError> {
        let qos = PublisherQos::default();
        Ok(BusOutput {
            book: bus.publisher(&qos)?,
            top: bus.publisher(&qos)?,
            trade: bus.publisher(&qos)?,
            status: bus.publisher(&qos)?,
            published: 0,
            errors: 0,
        })
    }

    fn count(&mut self, r: Result<u64, BusError>) {
        match r {
            Ok(_) => self.published += 1,
            Err(_) => self.errors += 1,
        }
    }
}

impl<B: Bus> Output for BusOutput<B> {
    fn book(&mut self, v: &BookView<'_>) {
        let mut u = BookUpdate {
            security: v.security,
            rpt_seq: v.rpt_seq.unwrap_or(0),
            msg_seq_num: v.msg_seq_num.unwrap_or(0),
            bid_levels: v.book.bids().len().min(u16::MAX as usize) as u16,
            offer_levels: v.book.offers().len().min(u16::MAX as usize) as u16,
            state: state_of(v.state),
            from_snapshot: v.from_snapshot as u8,
            ..BookUpdate::default()
        };
        for (slot, l) in u.bids.iter_mut().zip(v.book.bids()).take(BOOK_LEVELS) {
            *slot = level(l);
        }
        for (slot, l) in u.offers.iter_mut().zip(v.book.offers()).take(BOOK_LEVELS) {
            *slot = level(l);
        }
        let r = self.book.publish(&u);
        self.count(r);
        let top = TopOfBook {
            security: u.security,
            rpt_seq: u.rpt_seq,
            msg_seq_num: u.msg_seq_num,
            bid: u.bids[0],
            offer: u.offers[0],
            has_bid: (u.bid_levels > 0) as u8,
            has_offer: (u.offer_levels > 0) as u8,
            state: u.state,
            _pad: [0; 5],
        };
        let r = self.top.publish(&top);
        self.count(r);
    }

    fn trade(&mut self, t: &Trade, msg_seq_num: Option<u64>) {
        let r = TradeRecord {
            security: t.security,
            rpt_seq: t.rpt_seq.unwrap_or(0),
            msg_seq_num: msg_seq_num.unwrap_or(0),
            price: t.price.map(Dec::from).unwrap_or_default(),
            size: t.size,
            aggressor: match t.aggressor {
                None => 0,
                Some(Side::Bid) => 1,
                Some(Side::Offer) => 2,
            },
            _pad: [0; 7],
        };
        let r = self.trade.publish(&r);
        self.count(r);
    }

    fn status(&mut self, security: Option<u64>, status: u32) {
        let r = StatusRecord {
            security: security.unwrap_or(0),
            status,
            scope: if security.is_some() { 1 } else { 2 },
            _pad: [0; 3],
        };
        let r = self.status.publish(&r);
        self.count(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fastfeed_bus::{LocalBus, Securities, Subscriber, SubscriberQos};
    use fastfeed_codec::Decimal;
    use fastfeed_events::{Action, BookEntry, BookKind};

    #[test]
    fn book_changes_trades_and_statuses_become_records() {
        let bus = LocalBus::new("feedtest").unwrap();
        let qos = SubscriberQos::default();
        let mut books = bus.subscriber::<BookUpdate>(Securities::All, &qos).unwrap();
        let mut tops = bus.subscriber::<TopOfBook>(Securities::All, &qos).unwrap();
        let mut trades = bus
            .subscriber::<TradeRecord>(Securities::All, &qos)
            .unwrap();
        let mut statuses = bus
            .subscriber::<StatusRecord>(Securities::All, &qos)
            .unwrap();
        let mut out = BusOutput::new(&bus).unwrap();
        let mut book = fastfeed_book::Book::new(Some(5));
        let entry = |side, px| BookEntry {
            side,
            price: Some(Decimal::new(-1, px)),
            size: 3,
            orders: Some(2),
            level: Some(1),
            order_id: None,
        };
        book.apply(BookKind::Level, Action::New, &entry(Side::Bid, 995))
            .unwrap();
        book.apply(BookKind::Level, Action::New, &entry(Side::Offer, 1005))
            .unwrap();
        out.book(&BookView {
            security: 49_630_790,
            rpt_seq: Some(7),
            msg_seq_num: Some(100),
            state: BookState::Live,
            book: &book,
            from_snapshot: false,
        });
        out.trade(
            &Trade {
                security: 49_630_790,
                rpt_seq: Some(8),
                price: Some(Decimal::new(0, 100)),
                size: 4,
                aggressor: Some(Side::Offer),
            },
            Some(101),
        );
        out.status(None, 2);
        let b = books.try_recv().unwrap().unwrap().record;
        assert_eq!((b.security, b.rpt_seq, b.msg_seq_num), (49_630_790, 7, 100));
        assert_eq!((b.bid_levels, b.offer_levels, b.state), (1, 1, state::LIVE));
        assert_eq!(b.bids[0].price, Dec::new(995, -1));
        assert_eq!((b.offers[0].size, b.offers[0].orders), (3, 2));
        let t = tops.try_recv().unwrap().unwrap().record;
        assert_eq!((t.has_bid, t.has_offer), (1, 1));
        assert_eq!(t.offer.price, Dec::new(1005, -1));
        let tr = trades.try_recv().unwrap().unwrap().record;
        assert_eq!((tr.size, tr.aggressor, tr.msg_seq_num), (4, 2, 101));
        let s = statuses.try_recv().unwrap().unwrap().record;
        assert_eq!((s.security, s.status, s.scope), (0, 2, 2));
        assert_eq!((out.published, out.errors), (4, 0));
    }
}
