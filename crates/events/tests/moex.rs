//! The MOEX FORTS capture normalized: every count the corpus README states, as events.

use std::collections::HashMap;

use fastfeed_codec::Decoder;
use fastfeed_events::{Action, Event, MsgKind, Normalizer, Profile, Side};

fn corpus(file: &str) -> Vec<u8> {
    let p = format!(
        "{}/../../../shared/corpus/moex-forts-2013/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// Each message's kind, MsgSeqNum and events.
type Messages = Vec<(MsgKind, Option<u64>, Vec<Event>)>;

fn normalize(file: &str) -> (Normalizer, Messages) {
    let xml = String::from_utf8(corpus("templates.xml")).unwrap();
    let ts = fastfeed_codec::parse_templates(&xml).unwrap();
    let mut n = Normalizer::new(&ts, Profile::moex_forts());
    let mut dec = Decoder::new(ts);
    let data = corpus(file);
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        n.clear();
        pos += dec.decode(&data[pos..], &mut n).unwrap();
        let b = n.batch();
        let m = b.messages[0];
        out.push((m.kind, m.msg_seq_num, b.events_of(&m).to_vec()));
    }
    (n, out)
}

#[test]
fn increments_of_line_a() {
    let (n, msgs) = normalize("increment_a.dat");
    let kinds = |k| msgs.iter().filter(|m| m.0 == k).count();
    assert_eq!(kinds(MsgKind::Reset), 8_101);
    assert_eq!(kinds(MsgKind::Incremental), 8_101);
    let seqs: Vec<u64> = msgs.iter().filter_map(|m| m.1).collect();
    assert_eq!(seqs, (482_727..=490_827).collect::<Vec<_>>());
    let updates: Vec<_> = msgs
        .iter()
        .flat_map(|m| &m.2)
        .map(|e| match e {
            Event::Book(u) => *u,
            e => panic!("{e:?}"),
        })
        .collect();
    assert_eq!(updates.len(), 22_104);
    assert_eq!(n.stats().entries, 22_104);
    let count = |a, s| {
        updates
            .iter()
            .filter(|u| u.action == a && u.entry.side == s)
            .count()
    };
    // From an independent decode of the same file (python over `fastfeed decode`).
    assert_eq!(count(Action::New, Side::Bid), 5_583);
    assert_eq!(count(Action::Change, Side::Bid), 5_196);
    assert_eq!(count(Action::Delete, Side::Bid), 2_989);
    assert_eq!(count(Action::New, Side::Offer), 2_699);
    assert_eq!(count(Action::Change, Side::Offer), 4_165);
    assert_eq!(count(Action::Delete, Side::Offer), 1_472);
    // RptSeq consecutive per SecurityID; every entry has a level, a price and depth 5.
    let mut last: HashMap<u64, u64> = HashMap::new();
    for u in &updates {
        let r = u.rpt_seq.unwrap();
        if let Some(prev) = last.insert(u.security, r) {
            assert_eq!(r, prev + 1, "security {}", u.security);
        }
        assert!(u.entry.level.is_some() && u.entry.price.is_some());
        assert_eq!(u.depth, Some(5));
    }
    assert_eq!(last.len(), 9);
}

#[test]
fn snapshots() {
    let (_, msgs) = normalize("snapshot.dat");
    let kinds = |k| msgs.iter().filter(|m| m.0 == k).count();
    assert_eq!(kinds(MsgKind::Reset), 9_314);
    assert_eq!(kinds(MsgKind::Snapshot), 7_848);
    assert_eq!(kinds(MsgKind::SessionStatus), 733);
    assert_eq!(kinds(MsgKind::SequenceReset), 733);
    let events: Vec<&Event> = msgs.iter().flat_map(|m| &m.2).collect();
    let begins: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::SnapshotBegin(h) => Some(*h),
            _ => None,
        })
        .collect();
    assert_eq!(begins.len(), 7_848);
    assert!(begins
        .iter()
        .all(|h| h.rpt_seq.is_some() && h.last_msg_seq_processed.is_some()));
    // FORTS 2013 never splits a snapshot: its template declares no fragment flags.
    assert!(begins.iter().all(|h| !h.flags_declared));
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::SnapshotEnd))
            .count(),
        7_848
    );
    // 55,417 entries, of which 8 are J (empty book) markers.
    let entries = events
        .iter()
        .filter(|e| matches!(e, Event::SnapshotEntry(_)))
        .count();
    assert_eq!(entries, 55_409);
    assert!(events.contains(&&Event::SequenceReset { new_seq: 1 }));
    assert!(events.contains(&&Event::Status {
        security: None,
        status: 2
    }));
}
