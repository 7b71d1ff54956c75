use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use fastfeed_codec::template::{FieldType, Initial, Instr, Kind, Op, Segment};
use fastfeed_codec::{Decimal, Decoder, Encoder, Fields, Message, Templates, Value};
use fastfeed_sim::{GenConfig, COMPLEX_TEMPLATES, SIMPLE_TEMPLATES};

use crate::*;

/// Counts this thread's allocations, to check steady-state conversion does not allocate.
struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

pub(crate) fn allocs() -> u64 {
    ALLOCS.with(|c| c.get())
}

fn u(v: u64) -> Value {
    Value::UInt(v)
}

fn a(s: &str) -> Value {
    Value::Ascii(s.into())
}

/// Fields of `seg` set by name, mandatory constants filled in (the encoder requires them);
/// the rest absent.
fn fields(seg: &Segment, set: Vec<(&str, Value)>) -> Fields {
    let mut f: Fields = seg.instrs.iter().map(constant).collect();
    for (name, v) in set {
        let i = seg.instrs.iter().position(|i| i.name == name).unwrap();
        f[i] = Some(v);
    }
    f
}

fn constant(i: &Instr) -> Option<Value> {
    match &i.kind {
        Kind::Scalar(s) if s.op == Op::Constant && !s.optional => match (s.ty, &s.initial) {
            (FieldType::Int(_), Some(Initial::Int(v))) => Some(u(*v)),
            (FieldType::Ascii, Some(Initial::Bytes(b))) => Some(a(std::str::from_utf8(b).ok()?)),
            _ => None,
        },
        _ => None,
    }
}

fn seq_body<'a>(t: &'a Templates, id: u32, name: &str) -> &'a Segment {
    let instr = t
        .get(id)
        .unwrap()
        .body
        .instrs
        .iter()
        .find(|i| i.name == name);
    match &instr.unwrap().kind {
        Kind::Sequence { body, .. } => body,
        _ => panic!("{name} is not a sequence"),
    }
}

/// Encodes `msgs` as one stream and converts each back.
fn convert(t: &Arc<Templates>, msgs: &[(u32, Fields)]) -> (Vec<Vec<Record>>, Converter) {
    let mut enc = Encoder::new(t.clone());
    let mut buf = Vec::new();
    for (id, f) in msgs {
        let m = Message {
            template_id: *id,
            fields: f.clone(),
        };
        enc.encode(&m, &mut buf).unwrap();
    }
    let mut dec = Decoder::new(t.clone());
    let mut conv = Converter::new(t);
    let (mut pos, mut all, mut out) = (0, Vec::new(), Vec::new());
    while pos < buf.len() {
        pos += conv.decode(&mut dec, &buf[pos..], &mut out).unwrap();
        all.push(out.clone());
    }
    (all, conv)
}

fn simple_fields(t: &Templates, id: u32, extra: Vec<(&str, Value)>) -> Fields {
    let mut set = vec![
        ("SequenceNumber", u(41)),
        ("Timestamp", u(34_200_123)),
        ("OrderId", u(1_000_007)),
        ("ExchangeId", u(3)),
        ("SecurityId", u(250)),
        ("SecurityType", u(2)),
        ("SessionId", u(1)),
    ];
    set.extend(extra);
    fields(&t.get(id).unwrap().body, set)
}

#[test]
fn simple_messages_convert_field_for_field() {
    let t = fastfeed_codec::parse_templates(SIMPLE_TEMPLATES).unwrap();
    let vp = || vec![("Volume", u(500)), ("Price", u(12_345))];
    let side = |mut v: Vec<(&'static str, Value)>| {
        v.push(("Side", u(2)));
        v
    };
    let msgs = vec![
        (1, simple_fields(&t, 1, vp())),
        (2, simple_fields(&t, 2, side(vp()))),
        (3, simple_fields(&t, 3, side(vp()))),
        (4, simple_fields(&t, 4, side(vec![]))),
        (99, fields(&t.get(99).unwrap().body, vec![])),
    ];
    let (recs, conv) = convert(&t, &msgs);
    let q = Quote {
        sequence_number: 41,
        timestamp: 34_200_123,
        order_id: 1_000_007,
        volume: 500,
        price: 12_345,
        message_type: 11,
        security_id: 250,
        exchange_id: 3,
        security_type: 2,
        session_id: 1,
        _pad: 0,
    };
    assert_eq!(recs[0], vec![Record::Quote(q)]);
    let n = New {
        sequence_number: 41,
        timestamp: 34_200_123,
        order_id: 1_000_007,
        volume: 500,
        price: 12_345,
        side: 2,
        message_type: 12,
        security_id: 250,
        exchange_id: 3,
        security_type: 2,
        session_id: 1,
    };
    assert_eq!(recs[1], vec![Record::New(n)]);
    let c = Change {
        message_type: 13,
        ..Change::default()
    };
    let Record::Change(got) = recs[2][0] else {
        panic!("{:?}", recs[2])
    };
    assert_eq!(
        (got.message_type, got.side, got.volume, got.price),
        (c.message_type, 2, 500, 12_345)
    );
    let r = Remove {
        sequence_number: 41,
        timestamp: 34_200_123,
        order_id: 1_000_007,
        side: 2,
        message_type: 14,
        security_id: 250,
        exchange_id: 3,
        security_type: 2,
        session_id: 1,
    };
    assert_eq!(recs[3], vec![Record::Remove(r)]);
    assert_eq!(recs[4], vec![Record::Done]);
    assert!(conv.done());
    let names: Vec<_> = recs.iter().map(|r| r[0].type_name()).collect();
    assert_eq!(names, ["quote", "new", "change", "remove", "done"]);
    assert_eq!(recs[0][0].security_id(), 250);
}

fn md_entry(t: &Templates, sid: u64, px: i64, trade: bool) -> Fields {
    let body = seq_body(t, 1, "MDEntries");
    let mut set = vec![
        ("MDUpdateAction", u(1)),
        ("MDEntryType", a(if trade { "2" } else { "0" })),
        ("SecurityID", u(sid)),
        ("RptSeq", u(px as u64)),
        ("MDEntryPx", Value::Decimal(Decimal::new(-2, px))),
        ("MDEntryTime", u(93_000_000)),
        ("MDEntrySize", Value::Int(-5)),
    ];
    if trade {
        set.push(("NetChgPrevDay", Value::Decimal(Decimal::new(-2, -75))));
        set.push(("TradeCondition", a("E")));
        set.push(("AggressorSide", u(1)));
    } else {
        set.push(("MDPriceLevel", u(2)));
    }
    fields(body, set)
}

fn market_data(t: &Templates, entries: Vec<Fields>) -> (u32, Fields) {
    let set = vec![
        ("MsgSeqNum", u(7)),
        ("SendingTime", u(93_000_500)),
        ("TradeDate", u(20_240_102)),
        ("MDEntries", Value::Sequence(entries)),
    ];
    (1, fields(&t.get(1).unwrap().body, set))
}

#[test]
fn market_data_splits_per_security_in_order() {
    let t = fastfeed_codec::parse_templates(COMPLEX_TEMPLATES).unwrap();
    let e = |sid, px, trade| md_entry(&t, sid, px, trade);
    let msg = market_data(
        &t,
        vec![
            e(7, 100, false),
            e(9, 200, true),
            e(7, 101, true),
            e(3, 300, false),
            e(9, 201, false),
        ],
    );
    let (recs, _) = convert(&t, &[msg]);
    let recs = &recs[0];
    let got: Vec<(u32, Vec<i64>)> = recs
        .iter()
        .map(|r| match r {
            Record::MarketData(m) => {
                assert_eq!(
                    (m.msg_seq_num, m.sending_time, m.trade_date),
                    (7, 93_000_500, 20_240_102)
                );
                assert_eq!((m.part, m.parts), (0, 1));
                assert!(m.entries[m.entry_count as usize..]
                    .iter()
                    .all(|e| *e == MdEntry::default()));
                (
                    m.security_id,
                    m.entries().iter().map(|e| e.md_entry_px.mantissa).collect(),
                )
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        got,
        vec![(7, vec![100, 101]), (9, vec![200, 201]), (3, vec![300])]
    );
    let Record::MarketData(m9) = recs[1] else {
        unreachable!()
    };
    let trade = m9.entries[0];
    assert_eq!(trade.md_entry_type.as_str(), "2");
    assert_eq!(trade.md_entry_px, Dec::new(200, -2));
    assert_eq!(trade.net_chg_prev_day.to_f64(), -0.75);
    assert_eq!(trade.trade_condition.as_bytes(), b"E");
    assert_eq!(
        (trade.md_entry_size, trade.aggressor_side, trade.rpt_seq),
        (-5, 1, 200)
    );
    assert_eq!(
        (trade.security_id_source, trade.md_entry_time),
        (9, 93_000_000)
    );
    assert!(trade.has(MdEntry::NET_CHG_PREV_DAY) && trade.has(MdEntry::AGGRESSOR_SIDE));
    assert!(!trade.has(MdEntry::OPEN_CLOSE_SETTLE_FLAG) && !trade.has(MdEntry::QUOTE_CONDITION));
    let quote = m9.entries[1];
    assert!(!quote.has(MdEntry::NET_CHG_PREV_DAY) && quote.net_chg_prev_day == Dec::default());
    assert_eq!(quote.md_price_level, 2);
    // Absent in the message means absent on the wire, default operator or not.
    assert!(!quote.has(MdEntry::TRADING_SESSION_ID) && quote.trading_session_id.len == 0);
}

#[test]
fn a_security_with_many_entries_takes_several_records() {
    let t = fastfeed_codec::parse_templates(COMPLEX_TEMPLATES).unwrap();
    let entries = (0..19)
        .map(|i| md_entry(&t, if i == 4 { 2 } else { 1 }, i, false))
        .collect();
    let (recs, conv) = convert(&t, &[market_data(&t, entries)]);
    let parts: Vec<(u32, u16, u16, u32)> = recs[0]
        .iter()
        .map(|r| match r {
            Record::MarketData(m) => (m.security_id, m.part, m.parts, m.entry_count),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        parts,
        vec![(1, 0, 3, 8), (1, 1, 3, 8), (1, 2, 3, 2), (2, 0, 1, 1)]
    );
    assert_eq!(conv.stats().extra_parts, 2);
    // The last part's unused slots are zero, not the part before's: a byte wire sends the
    // record up to its wire_len and the reader puts zeros back.
    let Record::MarketData(last) = recs[0][2] else {
        unreachable!()
    };
    assert!(last.entries[2..].iter().all(|e| *e == MdEntry::default()));
    let bytes = zerocopy::IntoBytes::as_bytes(&last);
    let used = fastfeed_bus::Record::wire_len(&last);
    assert_eq!(used, 24 + 2 * size_of::<MdEntry>());
    assert!(bytes[used..].iter().all(|&b| b == 0));
}

#[test]
fn quote_request_splits_per_security() {
    let t = fastfeed_codec::parse_templates(COMPLEX_TEMPLATES).unwrap();
    let body = seq_body(&t, 2, "RelatedSym");
    let sym = |sid: u64, qty: Option<u64>| {
        let mut set = vec![
            ("Symbol", a(&format!("SEC{sid}"))),
            ("SecurityID", u(sid)),
            ("TransactTime", u(5)),
            ("QuoteType", u(0)),
            ("Side", u(1)),
        ];
        if let Some(q) = qty {
            set.push(("OrderQty", u(q)));
        }
        fields(body, set)
    };
    let set = vec![
        ("MsgSeqNum", u(8)),
        ("SendingTime", u(6)),
        ("QuoteReqID", a("QR1")),
        (
            "RelatedSym",
            Value::Sequence(vec![sym(4, Some(10)), sym(5, None), sym(4, Some(30))]),
        ),
    ];
    let (recs, _) = convert(&t, &[(2, fields(&t.get(2).unwrap().body, set))]);
    assert_eq!(recs[0].len(), 2);
    let Record::QuoteRequest(q4) = recs[0][0] else {
        panic!()
    };
    let Record::QuoteRequest(q5) = recs[0][1] else {
        panic!()
    };
    assert_eq!((q4.security_id, q4.entry_count, q4.msg_seq_num), (4, 2, 8));
    assert_eq!(q4.quote_req_id.as_str(), "QR1");
    assert_eq!(
        q4.entries().iter().map(|e| e.order_qty).collect::<Vec<_>>(),
        [10, 30]
    );
    assert_eq!(q4.entries[0].symbol.as_str(), "SEC4");
    // Side equals its default, so it is left off the wire and restored by the decoder.
    assert_eq!(
        (q5.entries[0].side, q5.entries[0].security_id_source),
        (1, 8)
    );
    assert!(!q5.entries[0].has(RelatedSym::ORDER_QTY) && q5.entries[0].has(RelatedSym::SIDE));
    assert_eq!(recs[0][1].type_name(), "quoterequest");
}

/// Converts every packet of a generated stream; returns records per message.
fn convert_generated(cfg: &GenConfig) -> (Vec<Message>, Vec<Vec<Record>>, Converter, u64) {
    let g = fastfeed_sim::generate(cfg).unwrap();
    let mut file = Vec::new();
    fastfeed_sim::write_len32le(g.packets.iter().map(|p| &p[..]), &mut file).unwrap();
    let t = cfg.kind.templates();
    let mut dec = Decoder::new(t.clone());
    let mut conv = Converter::new(&t);
    let (mut all, mut out) = (Vec::new(), Vec::with_capacity(64));
    let mut steady_allocs = 0;
    for (i, p) in fastfeed_packet::len32le_packets(&file)
        .map(|p| p.map(|p| p.bytes))
        .enumerate()
    {
        let p = p.unwrap();
        dec.reset();
        let mut pos = 4;
        while pos < p.len() {
            let before = allocs();
            pos += conv.decode(&mut dec, &p[pos..], &mut out).unwrap();
            if i >= 10 {
                steady_allocs += allocs() - before;
            }
            all.push(out.clone());
        }
    }
    (g.messages_kept, all, conv, steady_allocs)
}

#[test]
fn generated_simple_stream_gives_one_record_per_message() {
    let cfg = GenConfig {
        count: 2000,
        keep_messages: true,
        ..GenConfig::simple()
    };
    let (msgs, recs, conv, steady_allocs) = convert_generated(&cfg);
    assert_eq!(recs.len(), 2001);
    for (m, r) in msgs.iter().zip(&recs) {
        assert_eq!(r.len(), 1);
        let want = ["quote", "new", "change", "remove"].get(m.template_id as usize - 1);
        assert_eq!(want.copied().unwrap_or("done"), r[0].type_name());
    }
    assert!(conv.done());
    assert_eq!(steady_allocs, 0, "conversion allocates in steady state");
}

#[test]
fn generated_complex_stream_splits_into_per_security_records() {
    let cfg = GenConfig {
        count: 3000,
        keep_messages: true,
        ..GenConfig::complex()
    };
    let (msgs, recs, conv, steady_allocs) = convert_generated(&cfg);
    for (m, r) in msgs.iter().zip(&recs) {
        // (sequence position, SecurityID position in an element) per template.
        let (seq, sid) = match m.template_id {
            1 => (6, 5),
            2 => (6, 2),
            _ => {
                assert_eq!(r, &vec![Record::Done]);
                continue;
            }
        };
        let Some(Value::Sequence(entries)) = &m.fields[seq] else {
            panic!()
        };
        let mut want: Vec<u32> = Vec::new();
        for e in entries {
            let Some(Value::UInt(id)) = e[sid] else {
                panic!()
            };
            if !want.contains(&(id as u32)) {
                want.push(id as u32);
            }
        }
        let (mut got, mut total) = (Vec::new(), 0);
        for rec in r {
            let (part, count) = match rec {
                Record::MarketData(m) => (m.part, m.entry_count),
                Record::QuoteRequest(q) => (q.part, q.entry_count),
                other => panic!("{other:?}"),
            };
            if part == 0 {
                got.push(rec.security_id());
            }
            total += count as usize;
        }
        assert_eq!(got, want);
        assert_eq!(total, entries.len());
    }
    let records: usize = recs.iter().map(Vec::len).sum();
    assert!(
        records > 3000 * 3 / 2,
        "{records} records from 3000 messages"
    );
    assert!(conv.done());
    assert_eq!(conv.stats().unknown, 0);
    assert_eq!(steady_allocs, 0, "conversion allocates in steady state");
}

#[test]
fn groups_and_unknown_templates_do_not_shift_fields() {
    let xml = r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
      <template name="Quote" id="1">
        <uInt32 name="SequenceNumber"/>
        <group name="Extra"><uInt32 name="Price"/><uInt32 name="Volume"/></group>
        <sequence name="More"><length name="NoMore"/><uInt32 name="OrderId"/></sequence>
        <uInt32 name="Price"/>
        <uInt32 name="SecurityId"/>
      </template>
      <template name="Other" id="5"><uInt32 name="Price"/></template>
    </templates>"#;
    let t = fastfeed_codec::parse_templates(xml).unwrap();
    let body = &t.get(1).unwrap().body;
    let more = seq_body(&t, 1, "More");
    let set = vec![
        ("SequenceNumber", u(1)),
        ("Extra", Value::Group(vec![Some(u(999)), Some(u(998))])),
        (
            "More",
            Value::Sequence(vec![fields(more, vec![("OrderId", u(997))])]),
        ),
        ("Price", u(42)),
        ("SecurityId", u(7)),
    ];
    let other = fields(&t.get(5).unwrap().body, vec![("Price", u(1))]);
    let (recs, conv) = convert(&t, &[(1, fields(body, set)), (5, other)]);
    let Record::Quote(q) = recs[0][0] else {
        panic!()
    };
    assert_eq!(
        (q.sequence_number, q.price, q.security_id, q.order_id),
        (1, 42, 7, 0)
    );
    assert!(recs[1].is_empty());
    assert_eq!(conv.stats().unknown, 1);
    assert!(!conv.done());
}
