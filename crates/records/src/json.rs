//! A record as a JSON object, for `subscribe --print` and `--dump` (JSON Lines): the type
//! under `"type"`, then its fields; MarketData and QuoteRequest entries by their template
//! field names, absent optional fields left out (so is an OptionTrade's `condition` when the
//! message had none: `present` is not written, the key's presence says it); the rest in layout
//! order, padding left out; decimals as exact JSON numbers (`13331e+1`, as `decode` writes
//! them), never through binary floating point.

use std::str::FromStr;

use serde_json::{json, Map, Number, Value};

use crate::{
    Dec, MarketData, MdEntry, OptionQuote, OptionTrade, QuoteRequest, Record, RelatedSym, Str,
};

fn dec(d: Dec) -> Value {
    // arbitrary_precision keeps the digits as written: mantissa and exponent, exactly.
    let digits = match d.exponent {
        0 => d.mantissa.to_string(),
        e => format!("{}e{e}", d.mantissa),
    };
    Number::from_str(&digits)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

fn text<const N: usize>(s: &Str<N>) -> Value {
    Value::String(s.as_str().into_owned())
}

macro_rules! simple_json {
    ($r:expr, $type_name:expr, $($field:ident),*) => {{
        let r = $r;
        json!({
            "type": $type_name,
            "sequence_number": r.sequence_number,
            "timestamp": r.timestamp,
            "order_id": r.order_id,
            "message_type": r.message_type,
            "security_id": r.security_id,
            "exchange_id": r.exchange_id,
            "security_type": r.security_type,
            "session_id": r.session_id,
            $(stringify!($field): r.$field,)*
        })
    }};
}

/// The fields whose bit is set in `present`, by name.
fn present(names: &[&str], present: u32, values: Vec<Value>) -> Value {
    let mut m = Map::new();
    for (i, (name, v)) in names.iter().zip(values).enumerate() {
        if present & (1 << i) != 0 {
            m.insert((*name).to_string(), v);
        }
    }
    Value::Object(m)
}

fn md_entry(e: &MdEntry) -> Value {
    let values = vec![
        e.md_update_action.into(),
        e.md_price_level.into(),
        text(&e.md_entry_type),
        e.open_close_settle_flag.into(),
        e.security_id_source.into(),
        e.security_id.into(),
        e.rpt_seq.into(),
        dec(e.md_entry_px),
        e.md_entry_time.into(),
        e.md_entry_size.into(),
        e.number_of_orders.into(),
        text(&e.trading_session_id),
        dec(e.net_chg_prev_day),
        e.trade_volume.into(),
        text(&e.trade_condition),
        text(&e.tick_direction),
        text(&e.quote_condition),
        e.aggressor_side.into(),
        text(&e.match_event_indicator),
    ];
    present(&MdEntry::FIELDS, e.present, values)
}

fn related_sym(e: &RelatedSym) -> Value {
    let values = vec![
        text(&e.symbol),
        e.security_id_source.into(),
        e.security_id.into(),
        e.order_qty.into(),
        e.side.into(),
        e.transact_time.into(),
        e.quote_type.into(),
    ];
    present(&RelatedSym::FIELDS, e.present, values)
}

fn market_data(r: &MarketData) -> Value {
    json!({
        "type": "marketdata",
        "security_id": r.security_id,
        "msg_seq_num": r.msg_seq_num,
        "sending_time": r.sending_time,
        "trade_date": r.trade_date,
        "part": r.part,
        "parts": r.parts,
        "MDEntries": r.entries().iter().map(md_entry).collect::<Vec<_>>(),
    })
}

fn quote_request(r: &QuoteRequest) -> Value {
    json!({
        "type": "quoterequest",
        "security_id": r.security_id,
        "msg_seq_num": r.msg_seq_num,
        "sending_time": r.sending_time,
        "quote_req_id": text(&r.quote_req_id),
        "part": r.part,
        "parts": r.parts,
        "RelatedSym": r.entries().iter().map(related_sym).collect::<Vec<_>>(),
    })
}

fn option_quote(r: &OptionQuote) -> Value {
    json!({
        "type": "optionquote",
        "series_id": r.series_id,
        "msg_seq_num": r.msg_seq_num,
        "time": r.time,
        "participant": r.participant,
        "bid_size": r.bid_size,
        "ask_size": r.ask_size,
        "channel": r.channel,
        "bid": dec(r.bid),
        "ask": dec(r.ask),
    })
}

fn option_trade(r: &OptionTrade) -> Value {
    let mut v = json!({
        "type": "optiontrade",
        "series_id": r.series_id,
        "msg_seq_num": r.msg_seq_num,
        "time": r.time,
        "participant": r.participant,
        "volume": r.volume,
    });
    let m = v.as_object_mut().expect("an object");
    if r.has(OptionTrade::CONDITION) {
        m.insert("condition".into(), r.condition.into());
    }
    m.insert("channel".into(), r.channel.into());
    m.insert("price".into(), dec(r.price));
    v
}

impl Record {
    /// The record as a JSON object (see the module's documentation).
    pub fn to_json(&self) -> Value {
        match self {
            Record::Quote(r) => simple_json!(r, "quote", volume, price),
            Record::New(r) => simple_json!(r, "new", volume, price, side),
            Record::Change(r) => simple_json!(r, "change", volume, price, side),
            Record::Remove(r) => simple_json!(r, "remove", side),
            Record::MarketData(r) => market_data(r),
            Record::QuoteRequest(r) => quote_request(r),
            Record::OptionQuote(r) => option_quote(r),
            Record::OptionTrade(r) => option_trade(r),
            Record::Done => json!({ "type": "done" }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Quote;

    #[test]
    fn a_quote_is_plain_json() {
        let q = Quote {
            sequence_number: 7,
            price: 100,
            security_id: 3,
            ..Quote::default()
        };
        let v = Record::Quote(q).to_json();
        assert_eq!(v["type"], "quote");
        assert_eq!(v["price"], 100);
        assert_eq!(v["security_id"], 3);
        assert!(v.get("_pad").is_none());
        assert!(!v.to_string().contains("Quote {"));
    }

    #[test]
    fn entries_keep_exact_decimals_and_leave_absent_fields_out() {
        let mut md = MarketData {
            security_id: 9,
            entry_count: 1,
            parts: 1,
            ..MarketData::default()
        };
        md.entries[0].md_entry_px = Dec::new(13331, 1);
        md.entries[0].present = 1 << 7;
        let v = Record::MarketData(md).to_json();
        assert_eq!(v["MDEntries"].as_array().unwrap().len(), 1);
        assert_eq!(v["MDEntries"][0].to_string(), r#"{"MDEntryPx":13331e+1}"#);
    }

    #[test]
    fn option_records_write_every_field_with_exact_prices() {
        let q = OptionQuote {
            series_id: 70_001,
            msg_seq_num: 12,
            time: 34_200_001,
            participant: 3,
            bid_size: 10,
            ask_size: 20,
            channel: 5,
            _pad: 0,
            bid: Dec::new(125, -2),
            ask: Dec::new(130, -2),
        };
        assert_eq!(
            Record::OptionQuote(q).to_json().to_string(),
            r#"{"type":"optionquote","series_id":70001,"msg_seq_num":12,"time":34200001,"participant":3,"bid_size":10,"ask_size":20,"channel":5,"bid":125e-2,"ask":130e-2}"#
        );
        let mut t = OptionTrade {
            series_id: 70_002,
            msg_seq_num: 13,
            time: 34_200_002,
            participant: 4,
            volume: 7,
            condition: 2,
            channel: 5,
            present: OptionTrade::CONDITION,
            price: Dec::new(1005, -2),
        };
        assert_eq!(
            Record::OptionTrade(t).to_json().to_string(),
            r#"{"type":"optiontrade","series_id":70002,"msg_seq_num":13,"time":34200002,"participant":4,"volume":7,"condition":2,"channel":5,"price":1005e-2}"#
        );
        // An absent TradeCondition is left out, as absent entry fields are.
        (t.condition, t.present) = (0, 0);
        let v = Record::OptionTrade(t).to_json();
        assert!(v.get("condition").is_none() && v.get("present").is_none());
        assert_eq!(v["channel"], 5);
    }
}
