//! The decoding publisher's packet accounting, in process on the in-process bus: what a run
//! of good, torn, late, duplicate and short packets does to its counters and to what it
//! publishes.

use fastfeed_bus::LocalBus;
use fastfeed_codec::ErrorKind;
use fastfeed_packet::len32le_packets;
use fastfeed_publish::{DecodingPublisher, PublisherOptions};
use fastfeed_sim::{GenConfig, Kind};

/// The first packets of a simple data set.
fn packets() -> Vec<Vec<u8>> {
    let config = GenConfig {
        count: 200,
        max_packet: 256,
        ..GenConfig::simple()
    };
    let mut file = Vec::new();
    fastfeed_sim::generate_to(&config, &mut file).unwrap();
    len32le_packets(&file)
        .map(|p| p.unwrap().bytes.to_vec())
        .collect()
}

fn publisher(test: &str) -> (LocalBus, DecodingPublisher<LocalBus>) {
    let bus = LocalBus::new(test).unwrap();
    let opts = PublisherOptions {
        first_seq: Some(1),
        ..PublisherOptions::default()
    };
    let p = DecodingPublisher::new(&bus, Kind::Simple.templates(), opts).unwrap();
    (bus, p)
}

#[test]
fn a_torn_packet_publishes_nothing_and_the_counters_reconcile() {
    let packets = packets();
    assert!(packets.len() >= 4);
    // Torn in its last message: the messages before it decode, but must not be published.
    let mut torn = packets[2].clone();
    let end = torn.len() - 3;
    torn[end..].fill(0);
    let (_bus, mut p) = publisher("torn");
    for packet in [&packets[0], &torn, &packets[1], &packets[1], &vec![1, 2, 3]] {
        assert!(!p.on_packet(packet).unwrap(), "no Done yet");
    }
    let c = &p.counters;
    let s = &c.packets;
    assert_eq!((s.received, s.accepted, s.duplicates), (4, 3, 1));
    assert_eq!((s.gaps, s.late, s.missing), (1, 1, 0));
    assert_eq!(
        (c.packets_decoded, c.packets_rejected, c.packets_short),
        (2, 1, 1)
    );
    let e = &c.errors[0];
    assert_eq!((e.packet, e.byte), (3, torn.len()));
    assert_eq!(e.error.kind, ErrorKind::Truncated);

    // What packets 1 and 2 alone publish.
    let (_bus2, mut whole) = publisher("whole");
    whole.on_packet(&packets[0]).unwrap();
    whole.on_packet(&packets[1]).unwrap();
    assert!(whole.counters.records > 0);
    assert_eq!(c.records, whole.counters.records, "none of the torn packet");
    assert_eq!(c.messages, whole.counters.messages);
    assert_eq!(p.published(), whole.published());
}

#[test]
fn done_counts_only_from_a_whole_packet() {
    let packets = packets();
    let last = packets.last().unwrap();
    let mut torn = last.clone();
    let end = torn.len() - 1;
    torn[end] = 0; // the Done message's last byte loses its stop bit
    let (_bus, mut p) = publisher("done");
    assert!(!p.on_packet(&torn).unwrap());
    assert!(!p.counters.done);
    assert_eq!(p.counters.packets_rejected, 1);
    // The rejected packet's sequence number was taken: a good copy is a duplicate.
    assert!(!p.on_packet(last).unwrap());
    assert_eq!(p.counters.packets.duplicates, 1);
    let (_bus2, mut whole) = publisher("done-whole");
    assert!(whole.on_packet(last).unwrap());
}
