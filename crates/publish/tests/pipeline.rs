//! Publisher and subscriber together on the in-process bus, in two threads: every record
//! arrives, is echoed, and the counters reconcile on both ends; a second publisher on the
//! same feed is told apart.

use std::time::Duration;

use fastfeed_bus::{Bus, LocalBus, Securities, SubscriberQos};
use fastfeed_packet::len32le_packets;
use fastfeed_publish::{DecodingPublisher, PublisherOptions, RecordSubscriber};
use fastfeed_records::Record;
use fastfeed_sim::{GenConfig, Kind};

fn packets(kind: Kind, count: usize) -> Vec<Vec<u8>> {
    let config = GenConfig {
        count,
        max_packet: 512,
        ..match kind {
            Kind::Simple => GenConfig::simple(),
            Kind::Complex => GenConfig::complex(),
        }
    };
    let mut file = Vec::new();
    fastfeed_sim::generate_to(&config, &mut file).unwrap();
    len32le_packets(&file)
        .map(|p| p.unwrap().bytes.to_vec())
        .collect()
}

fn options() -> PublisherOptions {
    PublisherOptions {
        echo: true,
        first_seq: Some(1),
        ..PublisherOptions::default()
    }
}

/// Runs a `RecordSubscriber` on `bus` in a thread; returns its report and records.
fn subscribe(
    bus: LocalBus,
    securities: Securities,
) -> std::thread::JoinHandle<(fastfeed_publish::SubscriberReport, Vec<Record>)> {
    std::thread::spawn(move || {
        // Room for every record: a thread descheduled on a busy machine must not lose any.
        let qos = SubscriberQos {
            queue: 1 << 16,
            ..SubscriberQos::default()
        };
        let mut sub = RecordSubscriber::new(&bus, &securities, &qos, true).unwrap();
        let mut got = Vec::new();
        let report = sub.run(Duration::from_secs(20), |r| got.push(*r)).unwrap();
        (report, got)
    })
}

#[test]
fn every_record_arrives_and_is_echoed() {
    for kind in [Kind::Simple, Kind::Complex] {
        let bus = LocalBus::new("pipeline").unwrap();
        let sub = subscribe(bus.join(), Securities::All);
        let mut p = DecodingPublisher::new(&bus, kind.templates(), options()).unwrap();
        assert_eq!(
            p.wait_for_subscribers(1, Duration::from_secs(20)).unwrap(),
            1
        );
        for packet in packets(kind, 2000) {
            p.on_packet(&packet).unwrap();
        }
        assert!(p.counters.done);
        p.finish(Duration::from_secs(20)).unwrap();
        let (report, got) = sub.join().unwrap();

        let records = p.counters.records;
        assert!(records >= 2000, "{kind:?}: {records}");
        assert!(report.complete, "{kind:?}: {report:?}");
        assert_eq!((report.received, report.missed), (records, 0));
        assert_eq!(got.len() as u64, records);
        assert_eq!((p.counters.echoes, p.counters.echoes_other), (records, 0));
        assert_eq!(p.round_trip.count(), records);
        // One process, one clock: the subscriber timed every record's way from the publisher.
        let w = report.one_way.expect("a publisher on this host's clock");
        assert_eq!(w.count, records, "{kind:?}");
        assert!(0 < w.p50_ns && w.p50_ns <= w.p99_ns && w.p99_ns <= w.max_ns);
        for t in &report.per_type {
            let published = p
                .published()
                .iter()
                .find(|(n, _)| *n == t.type_name)
                .unwrap()
                .1;
            assert_eq!(t.published, Some(published), "{}", t.type_name);
            assert_eq!(t.received, published);
        }
    }
}

#[test]
fn a_filtered_subscriber_accounts_for_every_record() {
    let bus = LocalBus::new("filtered").unwrap();
    let sub = subscribe(bus.join(), Securities::Only(vec![1, 2]));
    let mut p = DecodingPublisher::new(&bus, Kind::Simple.templates(), options()).unwrap();
    p.wait_for_subscribers(1, Duration::from_secs(20)).unwrap();
    for packet in packets(Kind::Simple, 2000) {
        p.on_packet(&packet).unwrap();
    }
    p.finish(Duration::from_secs(5)).unwrap();
    let (report, got) = sub.join().unwrap();
    assert!(report.complete);
    assert!(!got.is_empty() && got.iter().all(|r| [1, 2].contains(&r.security_id())));
    assert!(report.filtered_out > 0);
    assert_eq!(report.received + report.filtered_out, p.counters.records);
    assert_eq!(p.counters.echoes, report.received);
}

/// Two publishers on one feed: each times only the echoes answering it, and the subscriber
/// does not call the mixture complete.
#[test]
fn echoes_go_to_their_publisher() {
    let bus = LocalBus::new("two").unwrap();
    let other = bus.join();
    let sub = subscribe(bus.join(), Securities::All);
    let mut p = DecodingPublisher::new(&bus, Kind::Simple.templates(), options()).unwrap();
    let mut q = DecodingPublisher::new(&other, Kind::Simple.templates(), options()).unwrap();
    p.wait_for_subscribers(1, Duration::from_secs(20)).unwrap();
    let packets = packets(Kind::Simple, 500);
    // The other publisher sends only the first packet, and no Done.
    q.on_packet(&packets[0]).unwrap();
    for packet in &packets {
        p.on_packet(packet).unwrap();
    }
    p.finish(Duration::from_secs(5)).unwrap();
    let (report, _) = sub.join().unwrap();
    assert!(report.done_seen && !report.complete, "{report:?}");
    let mut publishers = report.publishers.clone();
    publishers.sort();
    let mut ids = vec![bus.id(), other.id()];
    ids.sort();
    assert_eq!(publishers, ids);
    q.poll_echoes().unwrap();
    let (mine, theirs) = (p.counters.records, q.counters.records);
    assert_eq!(report.received, mine + theirs);
    assert_eq!((p.counters.echoes, p.counters.echoes_other), (mine, theirs));
    assert_eq!((q.counters.echoes, q.counters.echoes_other), (theirs, mine));
}

/// A publisher that wants no echoes gets none: the subscriber learns it from the publisher's
/// announcement, whatever its own echo setting.
#[test]
fn a_publisher_without_echo_gets_no_echoes() {
    let bus = LocalBus::new("no-echo").unwrap();
    let sub = subscribe(bus.join(), Securities::All);
    let opts = PublisherOptions {
        echo: false,
        ..options()
    };
    let mut p = DecodingPublisher::new(&bus, Kind::Simple.templates(), opts).unwrap();
    p.wait_for_subscribers(1, Duration::from_secs(20)).unwrap();
    // Listens to the echo channel as a publisher that wanted echoes would.
    let echoes = fastfeed_bus::Bus::echo_receiver(&bus).unwrap();
    for packet in packets(Kind::Simple, 500) {
        p.on_packet(&packet).unwrap();
    }
    p.finish(Duration::from_secs(5)).unwrap();
    let (report, _) = sub.join().unwrap();
    assert!(report.complete, "{report:?}");
    assert_eq!(report.received, p.counters.records);
    assert_eq!(report.echoed, 0);
    assert_eq!(p.counters.echoes, 0);
    assert!(fastfeed_bus::Receiver::try_recv(&echoes).unwrap().is_none());
}

/// A publisher started on a feed that already has one learns it came second.
#[test]
fn a_second_publisher_learns_it_is_second() {
    let bus = LocalBus::new("second").unwrap();
    let other = bus.join();
    let mut first = DecodingPublisher::new(&bus, Kind::Simple.templates(), options()).unwrap();
    let mut second = DecodingPublisher::new(&other, Kind::Simple.templates(), options()).unwrap();
    assert_eq!(second.older_publisher(), None);
    // The first hears the second's announcement and answers it.
    first.poll_control().unwrap();
    assert_eq!(first.counters.other_publishers, 1);
    assert_eq!(first.older_publisher(), None);
    assert_eq!(
        second.wait_alone(Duration::from_millis(500)).unwrap(),
        Some(bus.id())
    );
}

/// A publisher whose clock is another host's (its `CLOCK` says so): the subscriber receives
/// its records but does not time their way, which `sent_ns` on another clock cannot tell.
#[test]
fn records_on_another_hosts_clock_are_not_timed() {
    use fastfeed_bus::{clock_id, now_ns, Control, Publisher, PublisherQos, Receiver, Sender};
    use fastfeed_records::Quote;
    let bus = LocalBus::new("clock").unwrap();
    let sub = subscribe(bus.join(), Securities::All);
    let control = bus.control_sender().unwrap();
    let heard = bus.control_receiver().unwrap();
    let hello = heard
        .recv_timeout(Duration::from_secs(20))
        .unwrap()
        .expect("the subscriber's hello");
    assert_eq!(hello.kind, Control::HELLO);
    assert_ne!(clock_id(), 0, "Linux gives its boot id");
    let id = bus.id();
    control
        .send(Control::new(Control::PUBLISHER, id, 0, now_ns()))
        .unwrap();
    control
        .send(Control::new(Control::CLOCK, id, 0, clock_id() ^ 1))
        .unwrap();
    let mut quotes = bus.publisher::<Quote>(&PublisherQos::default()).unwrap();
    for security_id in 1..=100 {
        quotes
            .publish(&Quote {
                security_id,
                ..Quote::default()
            })
            .unwrap();
    }
    let tag = <Quote as fastfeed_bus::Record>::type_tag();
    control
        .send(Control::new(Control::DONE, id, tag, 100))
        .unwrap();
    control.send(Control::new(Control::DONE, id, 0, 0)).unwrap();
    let (report, got) = sub.join().unwrap();
    assert_eq!((report.received, got.len()), (100, 100), "{report:?}");
    assert!(report.done_seen, "{report:?}");
    assert_eq!(report.one_way, None);
}
