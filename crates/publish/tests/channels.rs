//! A many-channel feed (the OPRA-like set) published by a group of publishers, one per
//! thread in the CLI, each taking some of the channels: partners on one feed, not rivals,
//! and a subscriber that waits for every member's Done.

use std::time::Duration;

use fastfeed_bus::{LocalBus, Securities, SubscriberQos};
use fastfeed_publish::{DecodingPublisher, Group, PublisherOptions, RecordSubscriber};
use fastfeed_records::Record;
use fastfeed_sim::{generate_opra, opra_templates, OpraConfig};

const CHANNELS: u16 = 6;

fn options(channels: Vec<u16>, group: Group) -> PublisherOptions {
    PublisherOptions {
        echo: true,
        first_seq: Some(1),
        channels: Some(channels),
        group,
        ..PublisherOptions::default()
    }
}

fn channel(packet: &[u8]) -> u16 {
    u16::from_le_bytes([packet[4], packet[5]])
}

#[test]
fn a_group_of_publishers_shares_a_feed() {
    let generated = generate_opra(&OpraConfig {
        count: 6_000,
        channels: CHANNELS,
        ..OpraConfig::default()
    })
    .unwrap();
    let bus = LocalBus::new("channels").unwrap();
    let (sub_bus, second_bus) = (bus.join(), bus.join());
    let sub = std::thread::spawn(move || {
        let qos = SubscriberQos {
            queue: 1 << 16,
            ..SubscriberQos::default()
        };
        let mut sub = RecordSubscriber::new(&sub_bus, &Securities::All, &qos, true).unwrap();
        let mut got = Vec::new();
        let report = sub.run(Duration::from_secs(20), |r| got.push(*r)).unwrap();
        (report, got)
    });
    let group = Group::new(2);
    let evens: Vec<u16> = (0..CHANNELS).filter(|c| c % 2 == 0).collect();
    let odds: Vec<u16> = (0..CHANNELS).filter(|c| c % 2 == 1).collect();
    let t = opra_templates();
    let mut a = DecodingPublisher::new(&bus, t.clone(), options(evens.clone(), group)).unwrap();
    let mut b = DecodingPublisher::new(&second_bus, t, options(odds, group)).unwrap();
    // Partners hear each other and are not rivals.
    assert_eq!(a.wait_alone(Duration::from_millis(300)).unwrap(), None);
    assert_eq!(b.wait_alone(Duration::from_millis(300)).unwrap(), None);
    assert_eq!(
        a.wait_for_subscribers(1, Duration::from_secs(10)).unwrap(),
        1
    );
    assert_eq!(
        b.wait_for_subscribers(1, Duration::from_secs(10)).unwrap(),
        1
    );

    // Each takes every packet (as from a shared wire): the other's channels count apart.
    for p in &generated.packets {
        a.on_packet(p).unwrap();
    }
    assert!(a.counters.done, "every even channel's Done");
    a.finish(Duration::from_secs(5)).unwrap();
    // The subscriber has one member's Done: it must wait for the other's records.
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !sub.is_finished(),
        "the subscriber ended at the first member's Done"
    );
    for p in &generated.packets {
        b.on_packet(p).unwrap();
    }
    assert!(b.counters.done);
    b.finish(Duration::from_secs(5)).unwrap();
    let (report, got) = sub.join().unwrap();

    let per_channel = |ch: &[u16]| -> u64 {
        generated
            .packets
            .iter()
            .filter(|p| ch.contains(&channel(p)))
            .count() as u64
    };
    assert_eq!(a.counters.packets_decoded, per_channel(&evens));
    assert_eq!(
        a.counters.packets_foreign,
        generated.packets.len() as u64 - per_channel(&evens)
    );
    assert_eq!(
        a.counters.messages + b.counters.messages,
        generated.messages as u64
    );
    for p in [&a, &b] {
        assert_eq!(p.counters.other_publishers, 0);
        assert_eq!(p.counters.packets.gaps, 0);
        assert_eq!(p.counters.echoes, p.counters.records);
    }
    let records = a.counters.records + b.counters.records;
    assert!(records > 5_000, "{records} records of 6,000 messages");
    assert!(report.complete, "{report:?}");
    assert!(!report.mixed);
    assert_eq!(report.publishers.len(), 2);
    assert_eq!(report.received, records);
    assert_eq!(got.len() as u64, records);
    // Each record carries the channel its packet came on; even ones came from `a`.
    let channels: std::collections::BTreeSet<u32> = got
        .iter()
        .filter_map(|r| match r {
            Record::OptionQuote(q) => Some(q.channel),
            _ => None,
        })
        .collect();
    assert_eq!(channels.len(), CHANNELS as usize, "{channels:?}");
}

#[test]
fn a_gap_is_counted_on_its_own_channel() {
    let generated = generate_opra(&OpraConfig {
        count: 3_000,
        channels: 2,
        ..OpraConfig::default()
    })
    .unwrap();
    let bus = LocalBus::new("channel-gap").unwrap();
    let opts = PublisherOptions {
        echo: false,
        ..options(vec![0, 1], Group::default())
    };
    let mut p = DecodingPublisher::new(&bus, opra_templates(), opts).unwrap();
    // Channel 1's second packet lost.
    let lost = generated
        .packets
        .iter()
        .position(|p| channel(p) == 1 && p[..4] == 2u32.to_le_bytes())
        .unwrap();
    for (i, pkt) in generated.packets.iter().enumerate() {
        if i != lost {
            p.on_packet(pkt).unwrap();
        }
    }
    assert!(p.counters.done);
    assert_eq!(p.missing_ranges(), vec![(1, 2, 2)]);
    let c = &p.counters.packets;
    assert_eq!(c.received, generated.packets.len() as u64 - 1);
    assert_eq!((c.gaps, c.missing), (1, 1));
}
