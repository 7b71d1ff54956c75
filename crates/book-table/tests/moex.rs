//! The MOEX capture replayed into tables: every book change and its levels, as the
//! handler's own counters and books say.

use std::path::PathBuf;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, UInt64Type};
use arrow_array::Array;
use fastfeed_book_table::{replay, BookRows, TradeRows};

fn channels() -> Vec<fastfeed_handler::ChannelSetup> {
    let config = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../configs/moex-forts.toml");
    let feed = fastfeed_feed::FeedConfig::load(&config).unwrap();
    fastfeed_handler::setup(&feed).unwrap()
}

#[test]
fn every_book_change_is_a_row_with_its_levels() {
    let ch = channels();
    let mut rows = BookRows::new(3, None);
    let done = replay(&ch, &mut rows).unwrap();
    assert!(done.damage.is_empty());
    let (name, stats) = &done.channels[0];
    assert_eq!(
        (name.as_str(), stats.synced, stats.book_errors),
        ("FUT-BOOK-5", 11, 0)
    );
    let batch = rows.into_batch().unwrap();
    assert_eq!(batch.num_rows(), 12_461);
    assert_eq!(batch.num_columns(), 7 + 2 * 3 * 3);
    // Bids best first: each row's first level above its second.
    let (b1, b2) = (
        batch
            .column_by_name("bid_price_1")
            .unwrap()
            .as_primitive::<Decimal128Type>(),
        batch
            .column_by_name("bid_price_2")
            .unwrap()
            .as_primitive::<Decimal128Type>(),
    );
    let mut compared = 0;
    for i in 0..batch.num_rows() {
        if b1.is_valid(i) && b2.is_valid(i) {
            assert!(b1.value(i) > b2.value(i), "row {i}");
            compared += 1;
        }
    }
    assert!(compared > 10_000, "{compared}");
    // One instrument only.
    let mut one = BookRows::new(1, Some([49630790].into()));
    replay(&ch, &mut one).unwrap();
    let one = one.into_batch().unwrap();
    let sec = one
        .column_by_name("security")
        .unwrap()
        .as_primitive::<UInt64Type>();
    assert!(sec.values().iter().all(|&s| s == 49630790));
    assert_eq!(one.num_rows(), 2_831);
    // This channel carries no trades.
    let mut trades = TradeRows::new(None);
    replay(&ch, &mut trades).unwrap();
    assert_eq!(trades.into_batch().unwrap().num_rows(), 0);
}
