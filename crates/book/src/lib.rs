//! fastfeed-book: books per instrument, built from normalized events. Price-level books
//! (MDPriceLevel, depth from MarketDepth), books by price, and order books (MDEntryID)
//! aggregated into levels; best bid and offer; exact decimal prices, no floating point.
//!
//! ```
//! use fastfeed_book::Book;
//! use fastfeed_codec::Decimal;
//! use fastfeed_events::{Action, BookEntry, BookKind, Side};
//! let mut book = Book::new(Some(5));
//! let bid = |level, px, size| BookEntry {
//!     side: Side::Bid, price: Some(Decimal::new(0, px)), size, orders: None,
//!     level: Some(level), order_id: None,
//! };
//! book.apply(BookKind::Level, Action::New, &bid(1, 100, 5)).unwrap();
//! book.apply(BookKind::Level, Action::New, &bid(1, 101, 2)).unwrap(); // pushes 100 to level 2
//! book.apply(BookKind::Level, Action::Delete, &bid(1, 101, 0)).unwrap();
//! assert_eq!(book.best_bid().unwrap().price, Decimal::new(0, 100));
//! assert!(book.apply(BookKind::Level, Action::Change, &bid(3, 99, 1)).is_err());
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod book;
mod price;

pub use book::{Book, BookError, Level};
pub use price::{cmp_price, same_price};
