//! Instruments named by Symbol (55) and TradingSessionID (336) instead of a SecurityID, as
//! the Moscow Exchange's ASTS markets send them: templates of that shape (written here), the
//! messages encoded by the codec, and the events they give.

use fastfeed_codec::{Decimal, Decoder, Encoder, Message, Value};
use fastfeed_events::{symbol_security, Action, Event, MsgKind, Normalizer, Profile, Side};

const XML: &str = r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
  <template name="X-OLR" id="10">
    <string name="MessageType" id="35"><constant value="X"/></string>
    <uInt32 name="MsgSeqNum" id="34"/>
    <sequence name="GroupMDEntries"><length name="NoMDEntries" id="268"/>
      <uInt32 name="MDUpdateAction" id="279"/>
      <string name="MDEntryType" id="269"/>
      <string name="MDEntryID" id="278" presence="optional"/>
      <string name="Symbol" id="55" presence="optional"><copy/></string>
      <int32 name="RptSeq" id="83" presence="optional"/>
      <decimal name="MDEntryPx" id="270" presence="optional"/>
      <decimal name="MDEntrySize" id="271" presence="optional"/>
      <string name="TradingSessionID" id="336" presence="optional"><copy/></string>
    </sequence>
  </template>
  <template name="W-OLS" id="11">
    <string name="MessageType" id="35"><constant value="W"/></string>
    <uInt32 name="MsgSeqNum" id="34"/>
    <int32 name="RptSeq" id="83"/>
    <string name="TradingSessionID" id="336" presence="optional"/>
    <string name="Symbol" id="55"/>
    <uInt32 name="LastFragment" id="893" presence="optional"/>
    <sequence name="GroupMDEntries"><length name="NoMDEntries" id="268"/>
      <string name="MDEntryType" id="269"/>
      <string name="MDEntryID" id="278" presence="optional"/>
      <decimal name="MDEntryPx" id="270" presence="optional"/>
      <decimal name="MDEntrySize" id="271" presence="optional"/>
    </sequence>
  </template>
  <template name="X-Both" id="12">
    <string name="MessageType" id="35"><constant value="X"/></string>
    <uInt32 name="MsgSeqNum" id="34"/>
    <sequence name="Entries"><length name="NoMDEntries" id="268"/>
      <uInt32 name="MDUpdateAction" id="279"/>
      <string name="MDEntryType" id="269"/>
      <uInt64 name="SecurityID" id="48" presence="optional"/>
      <string name="Symbol" id="55" presence="optional"/>
      <uInt32 name="RptSeq" id="83"/>
    </sequence>
  </template>
</templates>"#;

fn a(s: &str) -> Option<Value> {
    Some(Value::Ascii(s.into()))
}

fn dec(s: &str) -> Option<Value> {
    Some(Value::Decimal(Decimal::parse(s).unwrap()))
}

/// Each message's kind and events, and how many entries named no instrument.
fn normalize_counted(msgs: &[Message]) -> (Vec<(MsgKind, Vec<Event>)>, u64) {
    let ts = fastfeed_codec::parse_templates(XML).unwrap();
    let mut enc = Encoder::new(ts.clone());
    let mut n = Normalizer::new(&ts, Profile::fix());
    let mut d = Decoder::new(ts);
    let mut out = Vec::new();
    for m in msgs {
        let mut bytes = Vec::new();
        enc.encode(m, &mut bytes).unwrap();
        n.clear();
        d.decode(&bytes, &mut n).unwrap();
        let info = n.batch().messages[0];
        out.push((info.kind, n.batch().events_of(&info).to_vec()));
    }
    (out, n.stats().no_security)
}

fn normalize(msgs: &[Message]) -> Vec<(MsgKind, Vec<Event>)> {
    let (out, no_security) = normalize_counted(msgs);
    assert_eq!(no_security, 0);
    out
}

#[test]
fn orders_named_by_symbol_and_session_share_one_instrument_with_their_snapshot() {
    let entry = |action: u64, side: &str, id: &str, sym: &str, rpt: i64, px: &str, sess: &str| {
        Value::Sequence(vec![vec![
            Some(Value::UInt(action)),
            a(side),
            a(id),
            a(sym),
            Some(Value::Int(rpt)),
            dec(px),
            dec("1000"),
            a(sess),
        ]])
    };
    let inc = |seq: u64, entries: Vec<Value>| Message {
        template_id: 10,
        fields: vec![
            a("X"),
            Some(Value::UInt(seq)),
            Some(Value::Sequence(
                entries
                    .into_iter()
                    .flat_map(|e| match e {
                        Value::Sequence(v) => v,
                        _ => unreachable!(),
                    })
                    .collect(),
            )),
        ],
    };
    let usd = symbol_security("USD000UTSTOM", Some("CETS"));
    let eur = symbol_security("EUR_RUB__TOM", Some("CETS"));
    let usd_other_session = symbol_security("USD000UTSTOM", Some("CNGD"));
    let msgs = [
        inc(
            1,
            vec![
                entry(0, "0", "1001", "USD000UTSTOM", 5, "90.5", "CETS"),
                entry(0, "1", "1002", "EUR_RUB__TOM", 7, "98.25", "CETS"),
                entry(0, "0", "1003", "USD000UTSTOM", 3, "90.4", "CNGD"),
            ],
        ),
        Message {
            template_id: 11,
            fields: vec![
                a("W"),
                Some(Value::UInt(2)),
                Some(Value::Int(5)),
                a("CETS"),
                a("USD000UTSTOM"),
                None,
                Some(Value::Sequence(vec![vec![
                    a("0"),
                    a("1001"),
                    dec("90.5"),
                    dec("1000"),
                ]])),
            ],
        },
    ];
    let got = normalize(&msgs);
    let books: Vec<_> = got[0]
        .1
        .iter()
        .map(|e| match e {
            Event::Book(u) => (
                u.security,
                u.rpt_seq,
                u.action,
                u.entry.side,
                u.entry.order_id,
            ),
            e => panic!("{e:?}"),
        })
        .collect();
    assert_eq!(
        books,
        [
            (usd, Some(5), Action::New, Side::Bid, Some(1001)),
            (eur, Some(7), Action::New, Side::Offer, Some(1002)),
            (
                usd_other_session,
                Some(3),
                Action::New,
                Side::Bid,
                Some(1003)
            ),
        ]
    );
    assert_eq!(got[1].0, MsgKind::Snapshot);
    match got[1].1[0] {
        // The template declares LastFragment (left out here): fragments are flagged.
        Event::SnapshotBegin(h) => assert_eq!(
            (h.security, h.rpt_seq, h.last_fragment, h.flags_declared),
            (usd, Some(5), None, true)
        ),
        e => panic!("{e:?}"),
    }
}

/// A template with a numeric SecurityID names instruments by it alone: an entry whose
/// SecurityID is null names none, whatever its Symbol (as before symbols named instruments).
#[test]
fn where_a_template_has_a_security_id_symbols_name_nothing() {
    let msg = Message {
        template_id: 12,
        fields: vec![
            a("X"),
            Some(Value::UInt(1)),
            Some(Value::Sequence(vec![
                vec![
                    Some(Value::UInt(0)),
                    a("0"),
                    Some(Value::UInt(42)),
                    a("RIM3"),
                    Some(Value::UInt(1)),
                ],
                vec![
                    Some(Value::UInt(0)),
                    a("1"),
                    None,
                    a("RIM3"),
                    Some(Value::UInt(2)),
                ],
            ])),
        ],
    };
    let (got, no_security) = normalize_counted(&[msg]);
    assert_eq!(no_security, 1);
    let secs: Vec<u64> = got[0]
        .1
        .iter()
        .map(|e| match e {
            Event::Book(u) => u.security,
            e => panic!("{e:?}"),
        })
        .collect();
    assert_eq!(secs, [42, fastfeed_events::NO_SECURITY]);
}

/// An empty Symbol names no instrument (the entry takes the message's, else none, counted),
/// and an empty TradingSessionID is no session: neither makes up an instrument of its own.
#[test]
fn empty_symbols_and_sessions_name_nothing() {
    let entry = |sym: &str, sess: &str| {
        vec![
            Some(Value::UInt(0)),
            a("0"),
            None,
            a(sym),
            Some(Value::Int(1)),
            dec("90.5"),
            dec("1000"),
            a(sess),
        ]
    };
    let msgs = [
        Message {
            template_id: 10,
            fields: vec![
                a("X"),
                Some(Value::UInt(1)),
                Some(Value::Sequence(vec![
                    entry("", "CETS"),
                    entry("USD000UTSTOM", ""),
                ])),
            ],
        },
        Message {
            template_id: 11,
            fields: vec![
                a("W"),
                Some(Value::UInt(2)),
                Some(Value::Int(5)),
                a("CETS"),
                a(""),
                None,
                Some(Value::Sequence(vec![])),
            ],
        },
    ];
    let (got, no_security) = normalize_counted(&msgs);
    let secs: Vec<u64> = got[0]
        .1
        .iter()
        .map(|e| match e {
            Event::Book(u) => u.security,
            e => panic!("{e:?}"),
        })
        .collect();
    assert_eq!(
        secs,
        [
            fastfeed_events::NO_SECURITY,
            symbol_security("USD000UTSTOM", None)
        ]
    );
    assert_eq!(
        symbol_security("USD000UTSTOM", Some("")),
        symbol_security("USD000UTSTOM", None)
    );
    match got[1].1[0] {
        Event::SnapshotBegin(h) => assert_eq!(h.security, fastfeed_events::NO_SECURITY),
        e => panic!("{e:?}"),
    }
    assert_eq!(no_security, 2);
}
