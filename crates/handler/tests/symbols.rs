//! A channel whose instruments are named by Symbol (55) and TradingSessionID (336), as MOEX
//! ASTS names them: messages encoded here by the codec and handled by a [`Channel`].

use std::sync::Arc;

use fastfeed_codec::{Encoder, Message, Templates, Value};
use fastfeed_events::{symbol_security, Profile, NO_SECURITY};
use fastfeed_feed::config::PacketHeader;
use fastfeed_handler::{Channel, ChannelSettings, LineId};

const XML: &str = r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
  <template name="W-OBS" id="11">
    <string name="MessageType" id="35"><constant value="W"/></string>
    <uInt32 name="MsgSeqNum" id="34"/>
    <int32 name="RptSeq" id="83"/>
    <string name="TradingSessionID" id="336" presence="optional"/>
    <string name="Symbol" id="55" presence="optional"/>
    <sequence name="GroupMDEntries"><length name="NoMDEntries" id="268"/>
      <string name="MDEntryType" id="269"/>
      <decimal name="MDEntryPx" id="270" presence="optional"/>
      <decimal name="MDEntrySize" id="271" presence="optional"/>
    </sequence>
  </template>
  <template name="X-OBR" id="10">
    <string name="MessageType" id="35"><constant value="X"/></string>
    <uInt32 name="MsgSeqNum" id="34"/>
    <sequence name="GroupMDEntries"><length name="NoMDEntries" id="268"/>
      <uInt32 name="MDUpdateAction" id="279"/>
      <string name="MDEntryType" id="269" presence="optional"/>
      <string name="Symbol" id="55" presence="optional"/>
      <int32 name="RptSeq" id="83" presence="optional"/>
      <decimal name="MDEntryPx" id="270" presence="optional"/>
      <decimal name="MDEntrySize" id="271" presence="optional"/>
    </sequence>
  </template>
  <template name="d" id="12">
    <string name="MessageType" id="35"><constant value="d"/></string>
    <uInt32 name="MsgSeqNum" id="34"/>
    <string name="Symbol" id="55" presence="optional"/>
    <uInt32 name="MarketDepth" id="264" presence="optional"/>
  </template>
</templates>"#;

fn settings() -> ChannelSettings {
    ChannelSettings {
        header: PacketHeader::None,
        reset_each_packet: true,
        gap_timeout_ns: 20_000_000,
        max_held: 10_000,
        max_queue: 100_000,
        snapshot_line: true,
        line_b: false,
        max_jump: 1_000_000,
        verify: false,
        line_silence_ns: 1_000_000_000,
    }
}

fn a(s: &str) -> Option<Value> {
    Some(Value::Ascii(s.into()))
}

/// A one-message snapshot of the instrument `symbol` names (none where `None`).
fn snapshot(enc: &mut Encoder, seq: u64, symbol: Option<&str>) -> Vec<u8> {
    let msg = Message {
        template_id: 11,
        fields: vec![
            a("W"),
            Some(Value::UInt(seq)),
            Some(Value::Int(1)),
            a("CETS"),
            symbol.and_then(a),
            Some(Value::Sequence(vec![vec![a("0"), None, None]])),
        ],
    };
    let mut bytes = Vec::new();
    enc.reset();
    enc.encode(&msg, &mut bytes).unwrap();
    bytes
}

/// A snapshot that names no instrument (its Symbol left out) is counted and dropped: it
/// gives no book to an instrument numbered [`NO_SECURITY`].
#[test]
fn a_snapshot_naming_no_instrument_makes_no_book() {
    let ts: Arc<Templates> = fastfeed_codec::parse_templates(XML).unwrap();
    let mut enc = Encoder::new(ts.clone());
    let mut ch = Channel::new(ts, Profile::fix(), settings());
    for (k, symbol) in [None, Some("USD000UTSTOM")].into_iter().enumerate() {
        let bytes = snapshot(&mut enc, k as u64 + 1, symbol);
        ch.on_packet(LineId::Snapshot, &bytes, k as u64, &mut ());
    }
    let securities: Vec<u64> = ch.securities().collect();
    assert_eq!(
        securities,
        [symbol_security("USD000UTSTOM", Some("CETS"))],
        "{NO_SECURITY}"
    );
    let stats = ch.stats();
    assert_eq!((stats.no_instrument, stats.snapshots_applied), (1, 1));
}

/// A definition that names no instrument (its Symbol left out) gives no instrument a depth:
/// such an instrument would wait for a snapshot that never comes, holding the snapshot line.
#[test]
fn a_definition_naming_no_instrument_makes_none_wait() {
    let ts: Arc<Templates> = fastfeed_codec::parse_templates(XML).unwrap();
    let mut enc = Encoder::new(ts.clone());
    let mut settings = settings();
    settings.line_b = true;
    let mut ch = Channel::new(ts, Profile::fix(), settings);
    let msg = Message {
        template_id: 12,
        fields: vec![a("d"), Some(Value::UInt(1)), None, Some(Value::UInt(20))],
    };
    let mut bytes = Vec::new();
    enc.encode(&msg, &mut bytes).unwrap();
    ch.on_packet(LineId::A, &bytes, 0, &mut ());
    assert_eq!(ch.securities().count(), 0);
    assert_eq!(ch.instrument_counts(), (0, 0));
    assert_eq!(ch.stats().no_instrument, 1);
}

/// Entries the normalizer could not make updates of (an MDUpdateAction the profile does not
/// know, no MDEntryType) are counted in the channel's stats, as are entries naming no
/// instrument (an empty Symbol).
#[test]
fn entries_that_are_not_updates_are_counted() {
    let ts: Arc<Templates> = fastfeed_codec::parse_templates(XML).unwrap();
    let mut enc = Encoder::new(ts.clone());
    let mut ch = Channel::new(ts, Profile::fix(), settings());
    let entry = |action: u64, side: Option<&str>, sym: &str| {
        vec![
            Some(Value::UInt(action)),
            side.and_then(a),
            a(sym),
            Some(Value::Int(1)),
            None,
            None,
        ]
    };
    let msg = Message {
        template_id: 10,
        fields: vec![
            a("X"),
            Some(Value::UInt(1)),
            Some(Value::Sequence(vec![
                entry(99, Some("0"), "USD000UTSTOM"),
                entry(0, None, "EUR_RUB__TOM"),
                entry(0, Some("1"), ""),
            ])),
        ],
    };
    let mut bytes = Vec::new();
    enc.encode(&msg, &mut bytes).unwrap();
    ch.on_packet(LineId::A, &bytes, 0, &mut ());
    let s = ch.stats();
    assert_eq!(
        (s.unknown_actions, s.no_entry_type, s.no_instrument),
        (1, 1, 1)
    );
    let fields = s.fields();
    for name in ["unknown_actions", "no_entry_type"] {
        assert!(fields.contains(&(name.into(), 1)), "{name}: {fields:?}");
    }
}
