//! LAYOUT.md in code: every record's size, alignment and field offsets, so that a change to
//! a struct is noticed here, and in the document and the record's `LAYOUT_VERSION` with it.

use std::mem::{align_of, offset_of, size_of};

use zerocopy::IntoBytes;

use crate::*;

/// Asserts `offset_of!` for each (field, offset) of a struct.
macro_rules! offsets {
    ($ty:ty { $($field:ident: $off:expr),* $(,)? }) => {
        $(assert_eq!(offset_of!($ty, $field), $off, "{}::{}", stringify!($ty), stringify!($field));)*
    };
}

#[test]
fn sizes_and_versions() {
    let table: [(usize, usize, u16); 8] = [
        (
            size_of::<Quote>(),
            align_of::<Quote>(),
            Quote::LAYOUT_VERSION,
        ),
        (size_of::<New>(), align_of::<New>(), New::LAYOUT_VERSION),
        (
            size_of::<Change>(),
            align_of::<Change>(),
            Change::LAYOUT_VERSION,
        ),
        (
            size_of::<Remove>(),
            align_of::<Remove>(),
            Remove::LAYOUT_VERSION,
        ),
        (
            size_of::<MarketData>(),
            align_of::<MarketData>(),
            MarketData::LAYOUT_VERSION,
        ),
        (
            size_of::<QuoteRequest>(),
            align_of::<QuoteRequest>(),
            QuoteRequest::LAYOUT_VERSION,
        ),
        (
            size_of::<OptionQuote>(),
            align_of::<OptionQuote>(),
            OptionQuote::LAYOUT_VERSION,
        ),
        (
            size_of::<OptionTrade>(),
            align_of::<OptionTrade>(),
            OptionTrade::LAYOUT_VERSION,
        ),
    ];
    assert_eq!(
        table,
        [
            (28, 4, 1),
            (28, 4, 1),
            (28, 4, 1),
            (20, 4, 1),
            (920, 8, 1),
            (252, 4, 1),
            (64, 8, 1),
            (48, 8, 1),
        ]
    );
    assert_eq!((size_of::<Dec>(), size_of::<MdEntry>()), (16, 112));
    assert_eq!((size_of::<RelatedSym>(), size_of::<Str<23>>()), (52, 24));
}

#[test]
fn simple_offsets() {
    offsets!(Quote {
        sequence_number: 0,
        timestamp: 4,
        order_id: 8,
        volume: 12,
        price: 16,
        message_type: 20,
        security_id: 22,
        exchange_id: 24,
        security_type: 25,
        session_id: 26,
        _pad: 27
    });
    offsets!(New {
        volume: 12,
        price: 16,
        message_type: 20,
        security_id: 22,
        side: 27
    });
    offsets!(Change {
        volume: 12,
        price: 16,
        message_type: 20,
        security_id: 22,
        side: 27
    });
    offsets!(Remove {
        order_id: 8,
        message_type: 12,
        security_id: 14,
        exchange_id: 16,
        security_type: 17,
        session_id: 18,
        side: 19
    });
}

#[test]
fn complex_offsets() {
    offsets!(Dec {
        mantissa: 0,
        exponent: 8,
        _pad: 12
    });
    offsets!(MarketData {
        security_id: 0,
        msg_seq_num: 4,
        sending_time: 8,
        trade_date: 12,
        entry_count: 16,
        part: 20,
        parts: 22,
        entries: 24
    });
    offsets!(MdEntry {
        md_entry_px: 0,
        net_chg_prev_day: 16,
        md_update_action: 32,
        md_price_level: 36,
        open_close_settle_flag: 40,
        security_id_source: 44,
        security_id: 48,
        rpt_seq: 52,
        md_entry_time: 56,
        md_entry_size: 60,
        number_of_orders: 64,
        trade_volume: 68,
        aggressor_side: 72,
        present: 76,
        md_entry_type: 80,
        trading_session_id: 84,
        tick_direction: 88,
        match_event_indicator: 92,
        trade_condition: 96,
        quote_condition: 104
    });
    offsets!(QuoteRequest {
        security_id: 0,
        msg_seq_num: 4,
        sending_time: 8,
        entry_count: 12,
        part: 16,
        parts: 18,
        quote_req_id: 20,
        entries: 44
    });
    offsets!(RelatedSym {
        security_id_source: 0,
        security_id: 4,
        order_qty: 8,
        side: 12,
        transact_time: 16,
        quote_type: 20,
        present: 24,
        symbol: 28
    });
}

#[test]
fn option_offsets() {
    offsets!(OptionQuote {
        series_id: 0,
        msg_seq_num: 4,
        time: 8,
        participant: 12,
        bid_size: 16,
        ask_size: 20,
        channel: 24,
        _pad: 28,
        bid: 32,
        ask: 48
    });
    offsets!(OptionTrade {
        series_id: 0,
        msg_seq_num: 4,
        time: 8,
        participant: 12,
        volume: 16,
        condition: 20,
        channel: 24,
        present: 28,
        price: 32
    });
    let t = OptionTrade {
        series_id: 0x0403_0201,
        price: Dec::new(-5, -2),
        ..OptionTrade::default()
    };
    let b = t.as_bytes();
    assert_eq!(&b[0..4], &[1, 2, 3, 4]);
    assert_eq!(&b[32..40], &(-5i64).to_le_bytes());
    assert_eq!(&b[40..44], &(-2i32).to_le_bytes());
}

/// The bytes are little-endian at the documented offsets, strings length-prefixed.
#[test]
fn bytes_are_little_endian_at_the_offsets() {
    let q = Quote {
        sequence_number: 0x0403_0201,
        price: 0x0807_0605,
        security_id: 0x0a09,
        ..Quote::default()
    };
    let b = q.as_bytes();
    assert_eq!(&b[0..4], &[1, 2, 3, 4]);
    assert_eq!(&b[16..20], &[5, 6, 7, 8]);
    assert_eq!(&b[22..24], &[9, 10]);
    let mut md = MarketData::default();
    md.entries[1].md_entry_px = Dec::new(-2, -3);
    md.entries[1].md_entry_type.set(b"2");
    let b = md.as_bytes();
    let e1 = 24 + 112;
    assert_eq!(&b[e1..e1 + 8], &(-2i64).to_le_bytes());
    assert_eq!(&b[e1 + 8..e1 + 12], &(-3i32).to_le_bytes());
    assert_eq!(&b[e1 + 80..e1 + 84], &[1, b'2', 0, 0]);
}
