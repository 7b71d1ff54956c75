//! One instrument's book: bids and offers as levels, best first. A price-level book is
//! addressed by MDPriceLevel (new inserts and pushes the worse levels down, delete pulls them
//! up, the book keeps MarketDepth levels); a book by price finds levels by MDEntryPx; an order
//! book keeps each order by MDEntryID and aggregates them into levels by price.

use std::cmp::Ordering;
use std::collections::HashMap;

use fastfeed_codec::Decimal;
use fastfeed_events::{Action, BookEntry, BookKind, Side};

use crate::price::{cmp_price, same_price};

/// One price level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Level {
    /// The price, exactly as the feed sent it.
    pub price: Decimal,
    /// Total size at the price.
    pub size: i64,
    /// Orders at the price (NumberOfOrders, or counted in an order book).
    pub orders: Option<u32>,
}

/// An update the book cannot apply as it stands: the book and the feed disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BookError {
    /// A level beyond the book's end (new: more than one past it).
    #[error("level {level} of a side with {len} levels")]
    LevelOutOfRange {
        /// MDPriceLevel.
        level: u32,
        /// Levels on that side.
        len: usize,
    },
    /// A price-level update without MDPriceLevel (or level 0).
    #[error("no MDPriceLevel")]
    NoLevel,
    /// An update that needs a price and has none.
    #[error("no MDEntryPx")]
    NoPrice,
    /// A change or delete of a price not in the book.
    #[error("price {0} not in the book")]
    PriceNotFound(Decimal),
    /// An order update without MDEntryID.
    #[error("no MDEntryID")]
    NoOrderId,
    /// A change or delete of an order not in the book.
    #[error("order {0} not in the book")]
    UnknownOrder(u64),
    /// An action the book kind has no meaning for (delete thru by price, say).
    #[error("{0:?} does not apply to this book")]
    Unsupported(Action),
}

#[derive(Debug, Clone, Copy)]
struct Order {
    side: Side,
    price: Decimal,
    size: i64,
}

/// One instrument's book.
#[derive(Debug, Clone, Default)]
pub struct Book {
    bids: Vec<Level>,
    offers: Vec<Level>,
    depth: Option<usize>,
    orders: HashMap<u64, Order>,
    /// A snapshot's levels until its end.
    pending: Vec<(Side, u32, Level)>,
}

impl Book {
    /// An empty book; `depth` levels per side are kept (all, if `None`).
    pub fn new(depth: Option<u32>) -> Book {
        Book {
            depth: depth.map(|d| d as usize),
            ..Book::default()
        }
    }

    /// Levels kept per side.
    pub fn depth(&self) -> Option<u32> {
        self.depth.map(|d| d as u32)
    }

    /// Sets the levels kept per side (MarketDepth).
    pub fn set_depth(&mut self, depth: Option<u32>) {
        self.depth = depth.map(|d| d as usize);
        if let Some(d) = self.depth {
            self.bids.truncate(d);
            self.offers.truncate(d);
        }
    }

    /// Bids, best (highest) first.
    pub fn bids(&self) -> &[Level] {
        &self.bids
    }

    /// Offers, best (lowest) first.
    pub fn offers(&self) -> &[Level] {
        &self.offers
    }

    /// One side's levels.
    pub fn side(&self, side: Side) -> &[Level] {
        match side {
            Side::Bid => &self.bids,
            Side::Offer => &self.offers,
        }
    }

    /// The best bid.
    pub fn best_bid(&self) -> Option<&Level> {
        self.bids.first()
    }

    /// The best offer.
    pub fn best_offer(&self) -> Option<&Level> {
        self.offers.first()
    }

    /// Whether both sides are empty.
    pub fn is_empty(&self) -> bool {
        self.bids.is_empty() && self.offers.is_empty()
    }

    /// Empties the book (keeping its buffers and depth).
    pub fn clear(&mut self) {
        self.bids.clear();
        self.offers.clear();
        self.orders.clear();
        self.pending.clear();
    }

    /// Whether two books have the same levels on both sides: the same prices (as numbers),
    /// sizes, and order counts where both give one.
    pub fn same_levels(&self, other: &Book) -> bool {
        fn side(a: &[Level], b: &[Level]) -> bool {
            a.len() == b.len()
                && a.iter().zip(b).all(|(x, y)| {
                    same_price(x.price, y.price)
                        && x.size == y.size
                        && (x.orders.is_none() || y.orders.is_none() || x.orders == y.orders)
                })
        }
        side(&self.bids, &other.bids) && side(&self.offers, &other.offers)
    }

    /// Applies an incremental update.
    pub fn apply(
        &mut self,
        kind: BookKind,
        action: Action,
        e: &BookEntry,
    ) -> Result<(), BookError> {
        match resolve(kind, e) {
            BookKind::Order => self.apply_order(action, e),
            BookKind::Price => self.apply_price(action, e),
            _ => self.apply_level(action, e),
        }
    }

    /// Adds one entry of a snapshot (clear the book at the snapshot's start; call
    /// [`Book::finish_snapshot`] after the last entry).
    pub fn snapshot_entry(&mut self, kind: BookKind, e: &BookEntry) -> Result<(), BookError> {
        match resolve(kind, e) {
            BookKind::Order => self.apply_order(Action::New, e),
            BookKind::Price => self.apply_price(Action::New, e),
            _ => {
                let price = e.price.ok_or(BookError::NoPrice)?;
                let level = e.level.filter(|&l| l > 0).ok_or(BookError::NoLevel)?;
                // Levels may come in any order: placed at the end, by number.
                self.pending.push((
                    e.side,
                    level,
                    Level {
                        price,
                        size: e.size,
                        orders: e.orders,
                    },
                ));
                Ok(())
            }
        }
    }

    /// Puts a snapshot's levels in place, in level order, and trims to depth.
    pub fn finish_snapshot(&mut self) {
        self.pending
            .sort_unstable_by_key(|&(side, level, _)| (side == Side::Offer, level));
        for i in 0..self.pending.len() {
            let (side, _, level) = self.pending[i];
            self.side_mut(side).push(level);
        }
        self.pending.clear();
        if let Some(d) = self.depth {
            self.bids.truncate(d);
            self.offers.truncate(d);
        }
    }

    fn side_mut(&mut self, side: Side) -> &mut Vec<Level> {
        match side {
            Side::Bid => &mut self.bids,
            Side::Offer => &mut self.offers,
        }
    }

    fn apply_level(&mut self, action: Action, e: &BookEntry) -> Result<(), BookError> {
        let depth = self.depth;
        let level = e.level.filter(|&l| l > 0).ok_or(BookError::NoLevel)?;
        let idx = level as usize - 1;
        let side = self.side_mut(e.side);
        let len = side.len();
        let out_of_range = BookError::LevelOutOfRange { level, len };
        let new_level = || -> Result<Level, BookError> {
            Ok(Level {
                price: e.price.ok_or(BookError::NoPrice)?,
                size: e.size,
                orders: e.orders,
            })
        };
        match action {
            Action::New => {
                if idx > len {
                    return Err(out_of_range);
                }
                side.insert(idx, new_level()?);
                if let Some(d) = depth {
                    side.truncate(d);
                }
            }
            Action::Change => *side.get_mut(idx).ok_or(out_of_range)? = new_level()?,
            Action::Overlay => match idx.cmp(&len) {
                Ordering::Less => side[idx] = new_level()?,
                Ordering::Equal => side.push(new_level()?),
                Ordering::Greater => return Err(out_of_range),
            },
            Action::Delete => {
                if idx >= len {
                    return Err(out_of_range);
                }
                side.remove(idx);
            }
            Action::DeleteThru => {
                side.drain(..(idx + 1).min(len));
            }
            Action::DeleteFrom => side.truncate(idx),
        }
        Ok(())
    }

    fn apply_price(&mut self, action: Action, e: &BookEntry) -> Result<(), BookError> {
        let price = e.price.ok_or(BookError::NoPrice)?;
        let side_id = e.side;
        let side = self.side_mut(side_id);
        let found = find(side, side_id, price);
        match (action, found) {
            (Action::New | Action::Change | Action::Overlay, Ok(i)) => {
                side[i].size = e.size;
                side[i].orders = e.orders;
            }
            (Action::New | Action::Overlay, Err(i)) => side.insert(
                i,
                Level {
                    price,
                    size: e.size,
                    orders: e.orders,
                },
            ),
            (Action::Delete, Ok(i)) => {
                side.remove(i);
            }
            (Action::Change | Action::Delete, Err(_)) => {
                return Err(BookError::PriceNotFound(price))
            }
            (a, _) => return Err(BookError::Unsupported(a)),
        }
        if let Some(d) = self.depth {
            self.side_mut(side_id).truncate(d);
        }
        Ok(())
    }

    fn apply_order(&mut self, action: Action, e: &BookEntry) -> Result<(), BookError> {
        let id = e.order_id.ok_or(BookError::NoOrderId)?;
        match action {
            Action::New | Action::Change | Action::Overlay => {
                let price = e.price.ok_or(BookError::NoPrice)?;
                let order = Order {
                    side: e.side,
                    price,
                    size: e.size,
                };
                let old = self.orders.insert(id, order);
                if action == Action::Change && old.is_none() {
                    self.orders.remove(&id);
                    return Err(BookError::UnknownOrder(id));
                }
                if let Some(old) = old {
                    self.aggregate(old, -1);
                }
                self.aggregate(order, 1);
            }
            Action::Delete => {
                let old = self.orders.remove(&id).ok_or(BookError::UnknownOrder(id))?;
                self.aggregate(old, -1);
            }
            a => return Err(BookError::Unsupported(a)),
        }
        Ok(())
    }

    /// Adds (`sign` 1) or takes away (-1) an order from its price level.
    fn aggregate(&mut self, o: Order, sign: i64) {
        let side = self.side_mut(o.side);
        match find(side, o.side, o.price) {
            Ok(i) => {
                let l = &mut side[i];
                l.size += sign * o.size;
                let n = l.orders.unwrap_or(0) as i64 + sign;
                l.orders = Some(n.max(0) as u32);
                if n <= 0 {
                    side.remove(i);
                }
            }
            Err(i) if sign > 0 => side.insert(
                i,
                Level {
                    price: o.price,
                    size: o.size,
                    orders: Some(1),
                },
            ),
            Err(_) => {}
        }
    }
}

/// The book kind for one entry: `Auto` picks by what the entry carries.
#[inline]
fn resolve(kind: BookKind, e: &BookEntry) -> BookKind {
    match kind {
        BookKind::Auto if e.level.is_some() => BookKind::Level,
        BookKind::Auto if e.order_id.is_some() => BookKind::Order,
        BookKind::Auto => BookKind::Price,
        k => k,
    }
}

/// Position of `price` on a side (bids descending, offers ascending), or where it goes.
fn find(side: &[Level], which: Side, price: Decimal) -> Result<usize, usize> {
    side.binary_search_by(|l| {
        let o = cmp_price(l.price, price);
        match which {
            Side::Bid => o.reverse(),
            Side::Offer => o,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(side: Side, level: Option<u32>, px: i64, size: i64, id: Option<u64>) -> BookEntry {
        BookEntry {
            side,
            price: Some(Decimal::new(0, px)),
            size,
            orders: None,
            level,
            order_id: id,
        }
    }

    fn prices(levels: &[Level]) -> Vec<(i64, i64)> {
        levels.iter().map(|l| (l.price.mantissa, l.size)).collect()
    }

    #[test]
    fn level_book_shifts_trims_and_deletes_ranges() {
        let mut b = Book::new(Some(3));
        let k = BookKind::Level;
        for (lvl, px) in [(1, 100), (1, 101), (1, 102), (1, 103)] {
            b.apply(k, Action::New, &entry(Side::Bid, Some(lvl), px, 1, None))
                .unwrap();
        }
        // Depth 3: 100 fell off the bottom.
        assert_eq!(prices(b.bids()), [(103, 1), (102, 1), (101, 1)]);
        b.apply(k, Action::Change, &entry(Side::Bid, Some(2), 102, 7, None))
            .unwrap();
        assert_eq!(prices(b.bids()), [(103, 1), (102, 7), (101, 1)]);
        assert_eq!(
            b.apply(k, Action::New, &entry(Side::Bid, Some(5), 1, 1, None)),
            Err(BookError::LevelOutOfRange { level: 5, len: 3 })
        );
        b.apply(
            k,
            Action::DeleteThru,
            &entry(Side::Bid, Some(2), 0, 0, None),
        )
        .unwrap();
        assert_eq!(prices(b.bids()), [(101, 1)]);
        b.apply(k, Action::Overlay, &entry(Side::Bid, Some(2), 99, 4, None))
            .unwrap();
        b.apply(
            k,
            Action::DeleteFrom,
            &entry(Side::Bid, Some(2), 0, 0, None),
        )
        .unwrap();
        assert_eq!(prices(b.bids()), [(101, 1)]);
        assert_eq!(
            b.apply(k, Action::Change, &entry(Side::Bid, Some(0), 1, 1, None)),
            Err(BookError::NoLevel)
        );
    }

    #[test]
    fn book_by_price_keeps_sides_sorted() {
        let mut b = Book::new(None);
        let k = BookKind::Price;
        for px in [101, 99, 100] {
            b.apply(k, Action::New, &entry(Side::Bid, None, px, 1, None))
                .unwrap();
            b.apply(k, Action::New, &entry(Side::Offer, None, px + 10, 1, None))
                .unwrap();
        }
        assert_eq!(prices(b.bids()), [(101, 1), (100, 1), (99, 1)]);
        assert_eq!(prices(b.offers()), [(109, 1), (110, 1), (111, 1)]);
        b.apply(k, Action::Change, &entry(Side::Offer, None, 110, 5, None))
            .unwrap();
        b.apply(k, Action::Delete, &entry(Side::Offer, None, 109, 0, None))
            .unwrap();
        assert_eq!(b.best_offer().unwrap().size, 5);
        assert!(b
            .apply(k, Action::Delete, &entry(Side::Offer, None, 1, 0, None))
            .is_err());
    }

    #[test]
    fn order_book_aggregates_orders_into_levels() {
        let mut b = Book::new(None);
        let k = BookKind::Auto;
        b.apply(k, Action::New, &entry(Side::Bid, None, 100, 3, Some(1)))
            .unwrap();
        b.apply(k, Action::New, &entry(Side::Bid, None, 100, 2, Some(2)))
            .unwrap();
        b.apply(k, Action::New, &entry(Side::Bid, None, 101, 1, Some(3)))
            .unwrap();
        assert_eq!(prices(b.bids()), [(101, 1), (100, 5)]);
        assert_eq!(b.bids()[1].orders, Some(2));
        // An order moves price.
        b.apply(k, Action::Change, &entry(Side::Bid, None, 101, 4, Some(2)))
            .unwrap();
        assert_eq!(prices(b.bids()), [(101, 5), (100, 3)]);
        b.apply(k, Action::Delete, &entry(Side::Bid, None, 0, 0, Some(1)))
            .unwrap();
        assert_eq!(prices(b.bids()), [(101, 5)]);
        assert_eq!(
            b.apply(k, Action::Delete, &entry(Side::Bid, None, 0, 0, Some(9))),
            Err(BookError::UnknownOrder(9))
        );
        assert_eq!(
            b.apply(k, Action::Change, &entry(Side::Bid, None, 5, 1, Some(8))),
            Err(BookError::UnknownOrder(8))
        );
        assert_eq!(b.bids().len(), 1);
    }

    #[test]
    fn snapshot_levels_in_any_order() {
        let mut b = Book::new(Some(2));
        for (side, lvl, px) in [
            (Side::Offer, 2, 12),
            (Side::Bid, 2, 9),
            (Side::Bid, 1, 10),
            (Side::Offer, 1, 11),
            (Side::Offer, 3, 13),
        ] {
            b.snapshot_entry(BookKind::Level, &entry(side, Some(lvl), px, 1, None))
                .unwrap();
        }
        b.finish_snapshot();
        assert_eq!(prices(b.bids()), [(10, 1), (9, 1)]);
        assert_eq!(prices(b.offers()), [(11, 1), (12, 1)]);
    }
}
