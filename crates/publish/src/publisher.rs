//! The decoding publisher: packets in; per-packet sequence check, decode with the
//! dictionaries reset, conversion to records, publication; echoes back for the round trip.

use std::time::{Duration, Instant};

use fastfeed_bus::{
    now_ns, Bus, BusError, Control, ControlPublisher, ControlSubscriber, EchoSubscriber,
};
use fastfeed_codec::{Decoder, Handler, Templates};
use fastfeed_feed::{SeqCounters, SeqOutcome, SequenceTracker};
use fastfeed_records::{Converter, Record};
use fastfeed_stats::Stage;

use crate::{RecordPublishers, PACKET_HEADER_LEN};

#[derive(Debug, Clone, Default)]
pub struct PublisherOptions {
    /// Decode only (into an empty handler): times the decoder alone, publishes nothing.
    pub empty_builder: bool,
    /// Expect subscribers to echo every record back, and measure the round trip.
    pub echo: bool,
}

/// What happened to the packets and messages, reconciled: received = accepted +
/// duplicates + stale; accepted = decoded + rejected.
#[derive(Debug, Clone, Default)]
pub struct PublisherCounters {
    pub packets: SeqCounters,
    pub packets_decoded: u64,
    pub packets_rejected: u64,
    /// The first few decode errors, for the report.
    pub errors: Vec<String>,
    pub messages: u64,
    pub records: u64,
    pub echoes: u64,
    pub done: bool,
}

pub struct DecodingPublisher {
    decoder: Decoder,
    converter: Converter,
    tracker: SequenceTracker,
    opts: PublisherOptions,
    pubs: Option<RecordPublishers>,
    control_tx: ControlPublisher,
    control_rx: ControlSubscriber,
    echo_rx: Option<EchoSubscriber>,
    records: Vec<Record>,
    pub counters: PublisherCounters,
    pub decode: Stage,
    pub publish: Stage,
    pub round_trip: Stage,
    subscribers: Vec<u32>,
    first_packet: Option<Instant>,
    last_packet: Option<Instant>,
}

const MAX_ERRORS_KEPT: usize = 20;
/// The Done message's template id in the simulator's template sets.
const DONE_TEMPLATE_ID: u32 = 99;

/// The empty builder: keeps only the template id, to see the Done message.
struct LastTemplate(u32);

impl Handler for LastTemplate {
    fn begin_message(&mut self, t: &fastfeed_codec::Template) {
        self.0 = t.id;
    }
}

impl DecodingPublisher {
    pub fn new(
        bus: &Bus,
        templates: std::sync::Arc<Templates>,
        opts: PublisherOptions,
    ) -> Result<Self, BusError> {
        let decode_name = if opts.empty_builder {
            "decode (empty builder) /msg"
        } else {
            "decode+convert /msg"
        };
        Ok(DecodingPublisher {
            converter: Converter::new(&templates),
            decoder: Decoder::new(templates),
            tracker: SequenceTracker::default(),
            pubs: if opts.empty_builder {
                None
            } else {
                Some(RecordPublishers::new(bus)?)
            },
            control_tx: bus.control_publisher()?,
            control_rx: bus.control_subscriber()?,
            echo_rx: if opts.echo {
                Some(bus.echo_subscriber()?)
            } else {
                None
            },
            records: Vec::with_capacity(64),
            counters: PublisherCounters::default(),
            decode: Stage::new(decode_name),
            publish: Stage::new("publish /record"),
            round_trip: Stage::new("round trip /record"),
            subscribers: Vec::new(),
            first_packet: None,
            last_packet: None,
            opts,
        })
    }

    /// Distinct subscribers that said hello so far.
    pub fn subscribers(&mut self) -> Result<usize, BusError> {
        while let Some(c) = self.control_rx.try_recv()? {
            if c.kind == Control::HELLO && !self.subscribers.contains(&c.sender) {
                self.subscribers.push(c.sender);
            }
        }
        Ok(self.subscribers.len())
    }

    /// Waits until `n` subscribers said hello or `timeout` passes; returns how many did.
    pub fn wait_for_subscribers(&mut self, n: usize, timeout: Duration) -> Result<usize, BusError> {
        let deadline = Instant::now() + timeout;
        while self.subscribers()? < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.subscribers()
    }

    /// Handles one packet: a 4-byte sequence header then FAST messages. Returns whether the
    /// Done message was in it.
    pub fn on_packet(&mut self, packet: &[u8]) -> Result<bool, BusError> {
        let now = Instant::now();
        self.first_packet.get_or_insert(now);
        self.last_packet = Some(now);
        let Some(header) = packet.get(..PACKET_HEADER_LEN) else {
            self.reject("packet shorter than its header".into());
            return Ok(false);
        };
        let seq = u32::from_le_bytes(header.try_into().expect("4 bytes")) as u64;
        let outcome = self.tracker.on_packet(seq);
        self.counters.packets = self.tracker.counters();
        if !outcome.accept() {
            return Ok(false);
        }
        if let SeqOutcome::Gap { from, to } = outcome {
            eprintln!("gap: packets {from}..={to} missing");
        }
        self.decoder.reset();
        let mut pos = PACKET_HEADER_LEN;
        while pos < packet.len() {
            let t0 = Instant::now();
            let r = if self.opts.empty_builder {
                let mut t = LastTemplate(0);
                let r = self.decoder.decode(&packet[pos..], &mut t);
                self.counters.done |= t.0 == DONE_TEMPLATE_ID;
                r
            } else {
                self.converter
                    .decode(&mut self.decoder, &packet[pos..], &mut self.records)
            };
            let n = match r {
                Ok(n) => n,
                Err(e) => {
                    self.reject(format!("packet {seq} byte {}: {e}", pos + e.offset));
                    return Ok(false);
                }
            };
            self.decode.record(t0.elapsed().as_nanos() as u64);
            self.counters.messages += 1;
            pos += n;
            if let Some(pubs) = self.pubs.as_mut() {
                for r in &self.records {
                    if matches!(r, Record::Done) {
                        continue;
                    }
                    let t = Instant::now();
                    pubs.publish(r)?;
                    self.publish.record(t.elapsed().as_nanos() as u64);
                    self.counters.records += 1;
                }
            }
            self.poll_echoes()?;
        }
        self.counters.packets_decoded += 1;
        self.counters.done |= self.converter.done();
        Ok(self.counters.done)
    }

    fn reject(&mut self, msg: String) {
        self.counters.packets_rejected += 1;
        if self.counters.errors.len() < MAX_ERRORS_KEPT {
            self.counters.errors.push(msg);
        }
    }

    /// Takes queued echoes and records their round trip.
    pub fn poll_echoes(&mut self) -> Result<(), BusError> {
        if let Some(rx) = &self.echo_rx {
            while let Some(e) = rx.try_recv()? {
                self.round_trip.record(now_ns().saturating_sub(e.sent_ns));
                self.counters.echoes += 1;
            }
        }
        Ok(())
    }

    /// Sends the Done token and, with echo on, collects echoes until every record came
    /// back from each subscriber or `timeout` passes.
    pub fn finish(&mut self, timeout: Duration) -> Result<(), BusError> {
        if let Some(pubs) = &self.pubs {
            pubs.send_done(&self.control_tx, std::process::id())?;
        }
        let want = self.counters.records * self.subscribers.len().max(1) as u64;
        let deadline = Instant::now() + timeout;
        while self.opts.echo && self.counters.echoes < want && Instant::now() < deadline {
            self.poll_echoes()?;
            std::thread::yield_now();
        }
        Ok(())
    }

    /// Records published per type.
    pub fn published(&self) -> Vec<(&'static str, u64)> {
        self.pubs
            .as_ref()
            .map(|p| p.published())
            .unwrap_or_default()
    }

    /// Time from the first to the last packet.
    pub fn elapsed(&self) -> Duration {
        match (self.first_packet, self.last_packet) {
            (Some(a), Some(b)) => b - a,
            _ => Duration::ZERO,
        }
    }

    pub fn missing_ranges(&self) -> Vec<(u64, u64)> {
        self.tracker.missing_ranges().collect()
    }
}
