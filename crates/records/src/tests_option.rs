//! The OPRA-like feed through the converter: every OptionQuote and OptionTrade the simulator
//! generates becomes one record equal to it field for field, carrying its packet's channel;
//! the other templates give none.

use fastfeed_codec::{Decoder, Message, Templates, Value};
use fastfeed_sim::{generate_opra, opra_templates, packet_channel, OpraConfig, CHANNEL_HEADER_LEN};

use crate::tests::allocs;
use crate::*;

/// Field `name` of `m` (None when absent or not in its template).
fn field<'a>(t: &Templates, m: &'a Message, name: &str) -> Option<&'a Value> {
    let body = &t.get(m.template_id).unwrap().body.instrs;
    let i = body.iter().position(|i| i.name == name)?;
    m.fields[i].as_ref()
}

fn uint(t: &Templates, m: &Message, name: &str) -> u32 {
    match field(t, m, name) {
        Some(Value::UInt(v)) => *v as u32,
        other => panic!("{name}: {other:?}"),
    }
}

fn price(t: &Templates, m: &Message, name: &str) -> Dec {
    match field(t, m, name) {
        Some(Value::Decimal(d)) => (*d).into(),
        other => panic!("{name}: {other:?}"),
    }
}

/// The records a generated message should give, built from its fields by name.
fn expected(t: &Templates, m: &Message, channel: u16) -> Vec<Record> {
    let name = t.get(m.template_id).unwrap().name.as_str();
    let u = |n| uint(t, m, n);
    match name {
        "OptionQuote" => vec![Record::OptionQuote(OptionQuote {
            series_id: u("SeriesId"),
            msg_seq_num: u("MsgSeqNum"),
            time: u("Time"),
            participant: u("Participant"),
            bid_size: u("BidSize"),
            ask_size: u("AskSize"),
            channel: channel as u32,
            _pad: 0,
            bid: price(t, m, "BidPrice"),
            ask: price(t, m, "AskPrice"),
        })],
        "OptionTrade" => {
            let condition = field(t, m, "TradeCondition").map(|_| u("TradeCondition"));
            vec![Record::OptionTrade(OptionTrade {
                series_id: u("SeriesId"),
                msg_seq_num: u("MsgSeqNum"),
                time: u("Time"),
                participant: u("Participant"),
                volume: u("TradeVolume"),
                condition: condition.unwrap_or(0),
                channel: channel as u32,
                present: condition.map_or(0, |_| OptionTrade::CONDITION),
                price: price(t, m, "TradePrice"),
            })]
        }
        "Done" => vec![Record::Done],
        _ => vec![],
    }
}

#[test]
fn generated_opra_messages_give_one_option_record_each() {
    let channels = 5;
    let g = generate_opra(&OpraConfig {
        count: 30_000,
        channels,
        keep_messages: true,
        ..OpraConfig::default()
    })
    .unwrap();
    let t = opra_templates();
    let mut dec = Decoder::new(t.clone());
    let mut conv = Converter::new(&t);
    // Per channel, the records of each message in order: channels are separate streams,
    // interleaved by packet, so they are compared channel by channel.
    let mut got: Vec<Vec<Vec<Record>>> = vec![Vec::new(); channels as usize];
    let mut out = Vec::with_capacity(64);
    let mut steady_allocs = 0;
    for (i, p) in g.packets.iter().enumerate() {
        let c = packet_channel(p).unwrap();
        conv.set_channel(c as u32);
        // Every packet starts with fresh dictionaries.
        dec.reset();
        let mut pos = CHANNEL_HEADER_LEN;
        while pos < p.len() {
            let before = allocs();
            pos += conv.decode(&mut dec, &p[pos..], &mut out).unwrap();
            if i >= 2 * channels as usize {
                steady_allocs += allocs() - before;
            }
            got[c as usize].push(out.clone());
        }
    }
    let mut want: Vec<Vec<Vec<Record>>> = vec![Vec::new(); channels as usize];
    let (mut quotes, mut trades, mut with_condition, mut other) = (0u64, 0u64, 0, 0u64);
    for (c, m) in &g.messages_kept {
        let r = expected(&t, m, *c);
        match r.first() {
            Some(Record::OptionQuote(_)) => quotes += 1,
            Some(Record::OptionTrade(x)) => {
                trades += 1;
                with_condition += x.has(OptionTrade::CONDITION) as u32;
            }
            Some(_) => {}
            None => other += 1,
        }
        want[*c as usize].push(r);
    }
    for c in 0..channels as usize {
        assert_eq!(got[c].len(), want[c].len(), "channel {c}: messages");
        for (k, (g, w)) in got[c].iter().zip(&want[c]).enumerate() {
            assert_eq!(g, w, "channel {c}, message {k}");
        }
    }
    // Both kinds of trade, and every template, were in the data.
    assert!(
        quotes > 20_000 && trades > 500 && other > 500,
        "{quotes} {trades} {other}"
    );
    assert!(with_condition > 0 && (with_condition as u64) < trades);
    let n = g.messages_kept.len() as u64;
    assert_eq!(
        conv.stats(),
        ConvertStats {
            messages: n,
            records: quotes + trades + channels as u64,
            unknown: other,
            truncated: 0,
            extra_parts: 0,
        }
    );
    assert!(conv.done());
    assert_eq!(steady_allocs, 0, "conversion allocates in steady state");
}

#[test]
fn option_records_default_to_channel_zero_and_filter_by_series() {
    let g = generate_opra(&OpraConfig {
        count: 500,
        channels: 1,
        ..OpraConfig::default()
    })
    .unwrap();
    let t = opra_templates();
    let mut dec = Decoder::new(t.clone());
    let mut conv = Converter::new(&t);
    let (mut out, mut seen) = (Vec::new(), 0);
    let p = &g.packets[0];
    let mut pos = CHANNEL_HEADER_LEN;
    while pos < p.len() {
        pos += conv.decode(&mut dec, &p[pos..], &mut out).unwrap();
        for r in &out {
            let (channel, series) = match r {
                Record::OptionQuote(q) => (q.channel, q.series_id),
                Record::OptionTrade(x) => (x.channel, x.series_id),
                _ => continue,
            };
            assert_eq!(channel, 0, "no set_channel: channel 0");
            assert_eq!(r.security_id(), series);
            assert!(["optionquote", "optiontrade"].contains(&r.type_name()));
            seen += 1;
        }
    }
    assert!(seen > 0);
    assert!(Record::TYPE_NAMES.contains(&"optionquote"));
    assert!(Record::TYPE_NAMES.contains(&"optiontrade"));
}
