//! The real and reference captures of `../shared/corpus`: every figure the corpus README
//! states, reproduced, and decode -> encode -> decode round trips.

use std::collections::HashMap;
use std::sync::Arc;

use fastfeed_codec::{Decoder, Encoder, Message, Templates, Value};
use fastfeed_packet::{len32le_packets, Framing, PacketDecoder, PacketOptions};

fn corpus(path: &str) -> Vec<u8> {
    let p = format!(
        "{}/../../../shared/corpus/{path}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn templates(path: &str) -> Arc<Templates> {
    fastfeed_codec::parse_templates(&String::from_utf8(corpus(path)).unwrap()).unwrap()
}

/// Decodes a whole buffer as one stream (the raw framing); panics on any error.
fn decode_stream(ts: &Arc<Templates>, data: &[u8]) -> Vec<Message> {
    let mut dec = Decoder::new(ts.clone());
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let (m, n) = dec
            .decode_message(&data[pos..])
            .unwrap_or_else(|e| panic!("at {pos}: {e}"));
        out.push(m);
        pos += n;
    }
    out
}

/// The value of a top-level or sequence-element field by name.
fn get<'m>(
    ts: &Templates,
    template_id: u32,
    fields: &'m [Option<Value>],
    name: &str,
) -> Option<&'m Value> {
    let t = ts.get(template_id).unwrap();
    let i = t.body.instrs.iter().position(|i| i.name == name)?;
    fields[i].as_ref()
}

fn uint(v: Option<&Value>) -> u64 {
    match v {
        Some(Value::UInt(u)) => *u,
        other => panic!("not an unsigned integer: {other:?}"),
    }
}

/// (MsgSeqNum, entries as (SecurityID, RptSeq)) of each incremental refresh.
fn increments(ts: &Templates, msgs: &[Message]) -> Vec<(u64, Vec<(u64, u64)>)> {
    let t = ts.by_name("DefaultIncrementalRefreshMessage").unwrap();
    let seq_instr = t
        .body
        .instrs
        .iter()
        .find(|i| i.name == "MDEntries")
        .unwrap();
    let fastfeed_codec::template::Kind::Sequence { body, .. } = &seq_instr.kind else {
        panic!()
    };
    let sec_i = body
        .instrs
        .iter()
        .position(|i| i.name == "SecurityID")
        .unwrap();
    let rpt_i = body.instrs.iter().position(|i| i.name == "RptSeq").unwrap();
    msgs.iter()
        .filter(|m| m.template_id == t.id)
        .map(|m| {
            let seq = uint(get(ts, m.template_id, &m.fields, "MsgSeqNum"));
            let Some(Value::Sequence(items)) = get(ts, m.template_id, &m.fields, "MDEntries")
            else {
                panic!()
            };
            let entries = items
                .iter()
                .map(|e| (uint(e[sec_i].as_ref()), uint(e[rpt_i].as_ref())))
                .collect();
            (seq, entries)
        })
        .collect()
}

#[test]
fn moex_increment_a_counts_sequence_and_rptseq() {
    let ts = templates("moex-forts-2013/templates.xml");
    let msgs = decode_stream(&ts, &corpus("moex-forts-2013/increment_a.dat"));
    assert_eq!(msgs.len(), 16_202);
    assert_eq!(
        msgs.iter().filter(|m| m.template_id == 120).count(),
        8_101,
        "one Reset per packet"
    );
    let inc = increments(&ts, &msgs);
    let seqs: Vec<u64> = inc.iter().map(|(s, _)| *s).collect();
    assert_eq!(seqs.first(), Some(&482_727));
    assert_eq!(seqs.last(), Some(&490_827));
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "MsgSeqNum has no gap"
    );
    let mut last: HashMap<u64, u64> = HashMap::new();
    let mut entries = 0;
    for (_, es) in &inc {
        for &(sec, rpt) in es {
            entries += 1;
            if let Some(prev) = last.insert(sec, rpt) {
                assert_eq!(rpt, prev + 1, "RptSeq of security {sec}");
            }
        }
    }
    assert_eq!(entries, 22_104);
}

#[test]
fn moex_feeds_a_and_b_agree_where_they_overlap() {
    let ts = templates("moex-forts-2013/templates.xml");
    let a = decode_stream(&ts, &corpus("moex-forts-2013/increment_a.dat"));
    let b = decode_stream(&ts, &corpus("moex-forts-2013/increment_b.dat"));
    assert_eq!(b.iter().filter(|m| m.template_id == 120).count(), 8_088);
    let by_seq = |msgs: &[Message]| -> HashMap<u64, Message> {
        msgs.iter()
            .filter(|m| m.template_id != 120)
            .map(|m| {
                (
                    uint(get(&ts, m.template_id, &m.fields, "MsgSeqNum")),
                    m.clone(),
                )
            })
            .collect()
    };
    let (a, b) = (by_seq(&a), by_seq(&b));
    let common: Vec<&u64> = a.keys().filter(|k| b.contains_key(k)).collect();
    assert_eq!(common.len(), 8_077);
    for k in common {
        assert_eq!(a[k], b[k], "MsgSeqNum {k}");
    }
}

#[test]
fn moex_snapshot_counts() {
    let ts = templates("moex-forts-2013/templates.xml");
    let msgs = decode_stream(&ts, &corpus("moex-forts-2013/snapshot.dat"));
    assert_eq!(msgs.len(), 18_628);
    let count = |name: &str| {
        msgs.iter()
            .filter(|m| m.template_id == ts.by_name(name).unwrap().id)
            .count()
    };
    assert_eq!(count("Reset"), 9_314);
    assert_eq!(count("DefaultSnapshotMessage"), 7_848);
    assert_eq!(count("TradingSessionStatus"), 733);
    assert_eq!(count("SequenceReset"), 733);
}

/// Re-encodes a stream message by message, resetting where the source reset (template 120
/// carries reset="Y" in its template, so the encoder does it by itself).
fn reencode(ts: &Arc<Templates>, msgs: &[Message]) -> Vec<u8> {
    let mut enc = Encoder::new(ts.clone());
    let mut out = Vec::new();
    for m in msgs {
        enc.encode(m, &mut out).unwrap();
    }
    out
}

#[test]
fn moex_round_trips_byte_for_byte() {
    let ts = templates("moex-forts-2013/templates.xml");
    for file in ["increment_a.dat", "increment_b.dat", "snapshot.dat"] {
        let data = corpus(&format!("moex-forts-2013/{file}"));
        let msgs = decode_stream(&ts, &data);
        let again = reencode(&ts, &msgs);
        assert_eq!(
            decode_stream(&ts, &again),
            msgs,
            "{file}: decode(encode(m)) == m"
        );
        assert_eq!(
            again, data,
            "{file}: the exchange's encoder is canonical, so is ours"
        );
    }
}

#[test]
fn mfast_complex_all_messages() {
    let ts = templates("mfast-complex/example.xml");
    let data = corpus("mfast-complex/complex30000.dat");
    assert_eq!(data.len(), 2_116_196);
    let mut pd = PacketDecoder::new(Decoder::new(ts.clone()), PacketOptions::default());
    let mut b = fastfeed_codec::MessageBuilder::new();
    let mut msgs = Vec::new();
    let mut payload = 0;
    for p in Framing::Len32Le.packets(&data) {
        let p = p.unwrap();
        payload += p.bytes.len();
        let n = pd
            .decode_packet(&p, &mut b, |b, _| msgs.extend(b.take()))
            .unwrap();
        assert_eq!(n, 1, "one message per record");
    }
    assert_eq!(payload, 1_996_192);
    assert_eq!(msgs.len(), 30_001);
    let count = |id| msgs.iter().filter(|m| m.template_id == id).count();
    assert_eq!((count(1), count(2), count(99)), (29_700, 300, 1));
    // reset="Y" honoured: the first entry prices of successive MarketData messages run
    // 26, 27, 28 ... rather than accumulating deltas (26, 53, ...).
    let prices: Vec<String> = msgs
        .iter()
        .filter(|m| m.template_id == 1)
        .take(3)
        .map(|m| match get(&ts, 1, &m.fields, "MDEntries") {
            Some(Value::Sequence(items)) => format!("{:?}", items[0][7]),
            _ => panic!(),
        })
        .collect();
    assert_eq!(
        prices,
        ["26", "27", "28"].map(|p| format!(
            "{:?}",
            Some(Value::Decimal(fastfeed_codec::Decimal::parse(p).unwrap()))
        ))
    );
}

#[test]
fn mfast_complex_round_trips() {
    let ts = templates("mfast-complex/example.xml");
    let data = corpus("mfast-complex/complex30000.dat");
    let mut dec = Decoder::new(ts.clone());
    let mut enc = Encoder::new(ts.clone());
    let mut check = Decoder::new(ts.clone());
    let (mut identical, mut total) = (0, 0);
    for p in len32le_packets(&data) {
        let p = p.unwrap();
        let (m, _) = dec.decode_message(p.bytes).unwrap();
        let mut out = Vec::new();
        enc.encode(&m, &mut out).unwrap();
        assert_eq!(check.decode_message(&out).unwrap().0, m);
        identical += (out == p.bytes) as usize;
        total += 1;
        // mFAST sends the template id in every message where a copy would do; with the
        // id forced out (a reset before each message) the bytes are the source's exactly.
        let mut fresh = Encoder::new(ts.clone());
        let mut forced = Vec::new();
        fresh.encode(&m, &mut forced).unwrap();
        assert_eq!(forced, p.bytes, "message {total}");
    }
    eprintln!(
        "mfast-complex: {identical} of {total} messages re-encode byte-identically as a stream"
    );
    assert_eq!(total, 30_001);
}

#[test]
fn moex_raw_captures_split_into_packets_at_each_reset() {
    let ts = templates("moex-forts-2013/templates.xml");
    let mut dec = fastfeed_codec::Decoder::new(ts.clone());
    for (file, packets) in [
        ("increment_a.dat", 8_101),
        ("increment_b.dat", 8_088),
        ("snapshot.dat", 9_314),
    ] {
        let data = corpus(&format!("moex-forts-2013/{file}"));
        let split = fastfeed_packet::split_at_resets(&mut dec, &data).unwrap();
        assert_eq!(split.len(), packets, "{file}");
        // Every packet starts with the Reset message (C0 F8) and they tile the file.
        assert!(split.iter().all(|p| p.bytes.starts_with(&[0xc0, 0xf8])));
        assert_eq!(
            split.iter().map(|p| p.bytes.len()).sum::<usize>(),
            data.len()
        );
    }
    // A cut inside a message is an error located at the cut packet.
    let data = corpus("moex-forts-2013/increment_a.dat");
    let err = fastfeed_packet::split_at_resets(&mut dec, &data[..1000]).unwrap_err();
    assert!(err.file_offset <= 1000 && err.packet > 0, "{err}");
}
