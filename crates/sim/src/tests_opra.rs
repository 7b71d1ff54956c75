//! The OPRA-like data set: every packet decodes alone to the messages generated, the
//! channels are separate streams, and the mix is mostly small quotes.

use std::collections::{HashMap, HashSet};

use fastfeed_codec::{Decoder, Message, Value};

use super::opra::{HEARTBEAT, OPEN_INTEREST, QUOTE, STATUS, TRADE};
use super::*;

fn cfg(count: usize, channels: u16) -> OpraConfig {
    OpraConfig {
        count,
        channels,
        keep_messages: true,
        ..OpraConfig::default()
    }
}

/// Decodes every packet with a fresh decoder; checks each channel's packet sequence runs
/// 1, 2, 3, ...; returns the messages per channel.
fn decode_all(g: &OpraGenerated, channels: u16) -> Vec<Vec<Message>> {
    let templates = opra_templates();
    let mut out = vec![Vec::new(); channels as usize];
    let mut next_seq = vec![1u32; channels as usize];
    for p in &g.packets {
        let seq = u32::from_le_bytes(p[..4].try_into().unwrap());
        let c = packet_channel(p).unwrap() as usize;
        assert_eq!(
            seq, next_seq[c],
            "channel {c}: packet sequence numbers run 1, 2, ..."
        );
        next_seq[c] += 1;
        let mut dec = Decoder::new(templates.clone());
        let mut pos = CHANNEL_HEADER_LEN;
        while pos < p.len() {
            let (m, used) = dec.decode_message(&p[pos..]).expect("packet decodes alone");
            pos += used;
            out[c].push(m);
        }
    }
    out
}

fn field(m: &Message, name: &str) -> Option<u64> {
    let t = opra_templates();
    let body = &t.get(m.template_id).unwrap().body.instrs;
    let i = body.iter().position(|i| i.name == name)?;
    match &m.fields[i] {
        Some(Value::UInt(v)) => Some(*v),
        _ => None,
    }
}

#[test]
fn templates_parse_and_every_packet_decodes_alone_to_what_was_generated() {
    for (channels, max_packet) in [(24, 1000), (3, 200), (1, 1500)] {
        let g = generate_opra(&OpraConfig {
            max_packet,
            ..cfg(5000, channels)
        })
        .unwrap();
        assert!(g.packets.iter().all(|p| p.len() <= max_packet));
        assert!(g.packets.iter().all(|p| p.len() > CHANNEL_HEADER_LEN));
        let decoded = decode_all(&g, channels);
        let mut want = vec![Vec::new(); channels as usize];
        for (c, m) in &g.messages_kept {
            want[*c as usize].push(m.clone());
        }
        assert_eq!(
            decoded, want,
            "{channels} channels, packets of {max_packet}"
        );
        assert_eq!(g.messages, 5000 + channels as usize);
        for (c, msgs) in decoded.iter().enumerate() {
            assert_eq!(msgs.last().unwrap().template_id, DONE_TEMPLATE_ID, "{c}");
            assert_eq!(g.per_channel[c].messages, msgs.len());
        }
        let packets: usize = g.per_channel.iter().map(|c| c.packets).sum();
        assert_eq!(packets, g.packets.len());
        let bytes: usize = g.packets.iter().map(|p| p.len() - CHANNEL_HEADER_LEN).sum();
        assert_eq!(bytes, g.message_bytes);
    }
}

#[test]
fn each_channel_numbers_its_own_messages_and_serves_its_own_underlyings() {
    let g = generate_opra(&cfg(20_000, 24)).unwrap();
    let mut seq = vec![0u64; 24];
    let mut series_channel: HashMap<u64, u16> = HashMap::new();
    let mut busy = HashSet::new();
    for (c, m) in &g.messages_kept {
        if m.template_id == DONE_TEMPLATE_ID {
            continue;
        }
        let s = field(m, "MsgSeqNum").unwrap();
        assert_eq!(
            s,
            seq[*c as usize] + 1,
            "channel {c}: MsgSeqNum rises by one"
        );
        seq[*c as usize] = s;
        busy.insert(*c);
        if let Some(series) = field(m, "SeriesId") {
            // A series (and so its underlying) stays on one channel.
            assert_eq!(*series_channel.entry(series).or_insert(*c), *c);
        }
    }
    assert_eq!(busy.len(), 24, "every channel carries traffic");
    let most = *seq.iter().max().unwrap() as f64;
    let least = *seq.iter().min().unwrap() as f64;
    assert!(least > 0.0 && most / least < 20.0, "{seq:?}");
}

#[test]
fn quotes_dominate_and_are_small() {
    let g = generate_opra(&cfg(50_000, 24)).unwrap();
    let mut n: HashMap<u32, usize> = HashMap::new();
    for (_, m) in &g.messages_kept[..50_000] {
        *n.entry(m.template_id).or_default() += 1;
    }
    let share = |t| n.get(&t).copied().unwrap_or(0) as f64 / 50_000.0;
    assert!((0.85..0.95).contains(&share(QUOTE)), "{n:?}");
    assert!((0.03..0.08).contains(&share(TRADE)), "{n:?}");
    assert!((0.015..0.05).contains(&share(OPEN_INTEREST)), "{n:?}");
    assert!((0.004..0.02).contains(&share(STATUS)), "{n:?}");
    assert!((0.004..0.02).contains(&share(HEARTBEAT)), "{n:?}");
    // OPRA's FAST operators pay: a message takes a dozen bytes or so, a packet holds many.
    let per_msg = g.message_bytes as f64 / g.messages as f64;
    assert!(
        (4.0..16.0).contains(&per_msg),
        "{per_msg} bytes per message"
    );
    let per_packet = g.messages as f64 / g.packets.len() as f64;
    assert!(per_packet > 50.0, "{per_packet} messages per packet");
    // Bursts walk consecutive series: most quotes follow one for the next series.
    let quotes: Vec<u64> = g.messages_kept[..50_000]
        .iter()
        .filter(|(_, m)| m.template_id == QUOTE)
        .map(|(_, m)| field(m, "SeriesId").unwrap())
        .collect();
    let runs = quotes.windows(2).filter(|w| w[1] == w[0] + 1).count();
    assert!(runs * 2 > quotes.len(), "{runs} of {}", quotes.len());
}

#[test]
fn same_seed_same_bytes_and_bad_config_is_an_error() {
    let a = generate_opra(&cfg(3000, 4)).unwrap();
    let b = generate_opra(&cfg(3000, 4)).unwrap();
    let c = generate_opra(&OpraConfig {
        seed: 2,
        ..cfg(3000, 4)
    })
    .unwrap();
    assert_eq!(a.packets, b.packets);
    assert_ne!(a.packets, c.packets);
    for bad in [
        cfg(10, 0),
        OpraConfig {
            max_packet: 6,
            ..cfg(10, 2)
        },
        OpraConfig {
            underlyings: 3,
            ..cfg(10, 4)
        },
    ] {
        assert!(matches!(generate_opra(&bad), Err(SimError::Config(_))));
    }
}

#[test]
fn generate_to_writes_the_same_packets_in_len32le() {
    let c = OpraConfig {
        keep_messages: false,
        ..cfg(4000, 5)
    };
    let g = generate_opra(&c).unwrap();
    let mut file = Vec::new();
    let (s, per_channel) = generate_opra_to(&c, &mut file).unwrap();
    assert_eq!((s.packets, s.messages), (g.packets.len(), 4005));
    assert_eq!(per_channel, g.per_channel);
    assert_eq!(s.bytes_written, file.len());
    let back: Vec<&[u8]> = fastfeed_packet::len32le_packets(&file)
        .map(|p| p.unwrap().bytes)
        .collect();
    assert_eq!(back, g.packets.iter().map(|p| &p[..]).collect::<Vec<_>>());
}
