use std::collections::{HashMap, HashSet};

use fastfeed_codec::{Decoder, Message, Value};

use super::*;

fn cfg(kind: Kind, count: usize) -> GenConfig {
    GenConfig {
        count,
        keep_messages: true,
        ..GenConfig::for_kind(kind)
    }
}

/// Decodes every packet with a fresh decoder; checks headers; returns all messages.
fn decode_all(kind: Kind, g: &Generated) -> Vec<Message> {
    let templates = kind.templates();
    let mut out = Vec::new();
    for (i, p) in g.packets.iter().enumerate() {
        let seq = u32::from_le_bytes(p[..4].try_into().unwrap());
        assert_eq!(
            seq as usize,
            i + 1,
            "packet sequence numbers run 1, 2, 3, ..."
        );
        let mut dec = Decoder::new(templates.clone());
        let mut pos = PACKET_HEADER_LEN;
        while pos < p.len() {
            let (m, used) = dec.decode_message(&p[pos..]).expect("packet decodes alone");
            pos += used;
            out.push(m);
        }
    }
    out
}

fn uint(m: &Message, i: usize) -> u64 {
    match &m.fields[i] {
        Some(Value::UInt(v)) => *v,
        other => panic!("field {i}: {other:?}"),
    }
}

fn seq_of(v: &Option<Value>) -> &Vec<Vec<Option<Value>>> {
    match v {
        Some(Value::Sequence(s)) => s,
        other => panic!("not a sequence: {other:?}"),
    }
}

#[test]
fn packets_fit_and_decode_alone_to_the_generated_messages() {
    for kind in [Kind::Simple, Kind::Complex] {
        for max_packet in [128, 1024, 1500] {
            let g = generate(&GenConfig {
                max_packet,
                ..cfg(kind, 3000)
            })
            .unwrap();
            assert!(g.packets.iter().all(|p| p.len() <= max_packet));
            assert!(g.packets.iter().all(|p| p.len() > PACKET_HEADER_LEN));
            let decoded = decode_all(kind, &g);
            assert_eq!(decoded.len(), 3001);
            assert_eq!(g.messages, 3001);
            assert_eq!(decoded, g.messages_kept, "{kind:?} {max_packet}");
            assert_eq!(decoded.last().unwrap().template_id, DONE_TEMPLATE_ID);
            let bytes: usize = g.packets.iter().map(|p| p.len() - 4).sum();
            assert_eq!(bytes, g.message_bytes);
        }
    }
}

#[test]
fn packets_hold_several_messages() {
    let g = generate(&cfg(Kind::Simple, 3000)).unwrap();
    assert!(g.packets.len() * 20 < 3000, "{} packets", g.packets.len());
}

#[test]
fn simple_kinds_come_in_equal_shares() {
    for (count, want) in [(1000, [250, 250, 250, 250]), (1003, [251, 251, 251, 250])] {
        let g = generate(&cfg(Kind::Simple, count)).unwrap();
        let mut n = [0; 4];
        for m in &g.messages_kept[..count] {
            n[m.template_id as usize - 1] += 1;
        }
        assert_eq!(n, want);
    }
}

#[test]
fn simple_orders_and_sequence_numbers_are_consistent() {
    for seed in 0..20 {
        let g = generate(&GenConfig {
            seed,
            ..cfg(Kind::Simple, 2000)
        })
        .unwrap();
        let t = Kind::Simple.templates();
        let mut live = HashSet::new();
        let mut created = HashSet::new();
        let (mut seq, mut ts, mut last_new) = (0, 0, 0);
        let mut per_sec = HashMap::new();
        for m in &g.messages_kept[..2000] {
            let body = &t.get(m.template_id).unwrap().body.instrs;
            let f = |name: &str| uint(m, body.iter().position(|i| i.name == name).unwrap());
            assert_eq!(f("SequenceNumber"), seq + 1);
            seq += 1;
            assert!(f("Timestamp") >= ts);
            ts = f("Timestamp");
            let id = f("OrderId");
            match m.template_id {
                2 => {
                    assert!(id > last_new, "order ids rise");
                    last_new = id;
                    assert!(live.insert(id) && created.insert(id));
                }
                3 => assert!(
                    live.contains(&id),
                    "seed {seed}: Change of unknown order {id}"
                ),
                4 => assert!(
                    live.remove(&id),
                    "seed {seed}: Remove of unknown order {id}"
                ),
                _ => {}
            }
            *per_sec.entry(f("SecurityId")).or_insert(0) += 1;
        }
        assert!(per_sec.len() > 250, "most of the 300 securities appear");
    }
}

#[test]
fn complex_entries_average_three_and_mix_securities() {
    let g = generate(&cfg(Kind::Complex, 10_000)).unwrap();
    let (mut entries, mut md, mut mixed, mut qr) = (0, 0, 0, 0);
    for (seq, m) in g.messages_kept[..10_000].iter().enumerate() {
        assert_eq!(uint(m, 3), seq as u64 + 1, "MsgSeqNum rises");
        match m.template_id {
            1 => {
                let e = seq_of(&m.fields[6]);
                md += 1;
                entries += e.len();
                let secs: HashSet<u64> = e.iter().map(|f| uint_of(&f[5])).collect();
                mixed += (secs.len() > 1) as usize;
            }
            2 => qr += 1,
            t => panic!("template {t}"),
        }
    }
    let avg = entries as f64 / md as f64;
    assert!((2.7..3.3).contains(&avg), "average {avg}");
    assert!(mixed * 3 > md, "{mixed} of {md} mixed");
    assert!((40..200).contains(&qr), "{qr} quote requests");
}

fn uint_of(v: &Option<Value>) -> u64 {
    match v {
        Some(Value::UInt(v)) => *v,
        other => panic!("{other:?}"),
    }
}

#[test]
fn complex_avg_entries_is_configurable_and_nosplit_keeps_one_security() {
    let g = generate(&GenConfig {
        avg_entries: 6.0,
        nosplit: true,
        ..cfg(Kind::Complex, 3000)
    })
    .unwrap();
    let mut entries = 0;
    let mut md = 0;
    for m in g.messages_kept.iter().filter(|m| m.template_id == 1) {
        let e = seq_of(&m.fields[6]);
        let secs: HashSet<u64> = e.iter().map(|f| uint_of(&f[5])).collect();
        assert_eq!(secs.len(), 1);
        entries += e.len();
        md += 1;
    }
    let avg = entries as f64 / md as f64;
    assert!((5.4..6.6).contains(&avg), "average {avg}");
}

#[test]
fn same_seed_same_bytes() {
    for kind in [Kind::Simple, Kind::Complex] {
        let a = generate(&cfg(kind, 500)).unwrap();
        let b = generate(&cfg(kind, 500)).unwrap();
        let c = generate(&GenConfig {
            seed: 2,
            ..cfg(kind, 500)
        })
        .unwrap();
        assert_eq!(a.packets, b.packets);
        assert_ne!(a.packets, c.packets);
    }
}

#[test]
fn generate_to_writes_len32le_that_reads_back() {
    let c = GenConfig {
        keep_messages: false,
        ..cfg(Kind::Complex, 1000)
    };
    let g = generate(&c).unwrap();
    let mut file = Vec::new();
    let s = generate_to(&c, &mut file).unwrap();
    assert_eq!((s.packets, s.messages), (g.packets.len(), 1001));
    assert_eq!(s.bytes_written, file.len());
    let mut again = Vec::new();
    write_len32le(g.packets.iter().map(|p| &p[..]), &mut again).unwrap();
    assert_eq!(file, again);
    let back: Vec<&[u8]> = fastfeed_packet::len32le_packets(&file)
        .map(|p| p.unwrap().bytes)
        .collect();
    assert_eq!(back, g.packets.iter().map(|p| &p[..]).collect::<Vec<_>>());
}

#[test]
fn oversized_message_and_bad_config_are_errors() {
    let e = generate(&GenConfig {
        max_packet: 10,
        ..cfg(Kind::Complex, 10)
    });
    assert!(
        matches!(e, Err(SimError::MessageTooLarge { index: 0, .. })),
        "{e:?}"
    );
    for bad in [
        GenConfig {
            securities: 0,
            ..GenConfig::simple()
        },
        GenConfig {
            securities: 70_000,
            ..GenConfig::simple()
        },
        GenConfig {
            avg_entries: 0.5,
            ..GenConfig::complex()
        },
        GenConfig {
            max_packet: 4,
            ..GenConfig::simple()
        },
    ] {
        assert!(matches!(generate(&bad), Err(SimError::Config(_))));
    }
}

#[test]
fn zero_count_gives_only_done() {
    let g = generate(&cfg(Kind::Simple, 0)).unwrap();
    assert_eq!(g.packets.len(), 1);
    assert_eq!(decode_all(Kind::Simple, &g).len(), 1);
}

#[test]
fn effective_average_entries_is_what_the_cut_leaves() {
    // An average of 10 is cut at 24 entries (a 1024-byte packet): 9.2 on average.
    let c = GenConfig {
        avg_entries: 10.0,
        ..cfg(Kind::Complex, 4000)
    };
    assert_eq!(c.max_entries(), 24);
    let expect = c.effective_avg_entries();
    assert!((9.1..9.3).contains(&expect), "{expect}");
    let g = generate(&c).unwrap();
    let lens: Vec<usize> = g
        .messages_kept
        .iter()
        .filter(|m| m.template_id == 1)
        .map(|m| seq_of(&m.fields[6]).len())
        .collect();
    let avg = lens.iter().sum::<usize>() as f64 / lens.len() as f64;
    assert!(
        (avg - expect).abs() < 0.4,
        "average {avg}, expected {expect}"
    );
    assert_eq!(lens.iter().max(), Some(&24));
}
