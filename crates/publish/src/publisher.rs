//! The decoding publisher: packets in; per-packet sequence check, decode with the
//! dictionaries reset, conversion to records, publication; echoes back for the round trip.

use std::time::{Duration, Instant};

use fastfeed_bus::{now_ns, Bus, BusError, Control, Echo, Receiver, Sender};
use fastfeed_codec::{CodecError, Decoder, Handler, Templates};
use fastfeed_records::{Converter, Record};
use fastfeed_stats::Stage;

use crate::channels::{Admit, Channels, PacketHeader};
use crate::counters::{PublisherCounters, PublisherOptions, Rejection, MAX_ERRORS_KEPT};
use crate::peers::{Peers, Rival};
use crate::{RecordPublishers, HEARTBEAT};

pub struct DecodingPublisher<B: Bus> {
    decoder: Decoder,
    converter: Converter,
    channels: Channels,
    opts: PublisherOptions,
    pubs: Option<RecordPublishers<B>>,
    control_tx: B::Sender<Control>,
    control_rx: B::Receiver<Control>,
    echo_rx: Option<B::Receiver<Echo>>,
    /// The bus's publisher id: our envelopes carry it, and so do the echoes answering them.
    id: u32,
    feed: String,
    /// The records of the last message decoded.
    records: Vec<Record>,
    /// The records of the packet being decoded, published once all of it decoded.
    pending: Vec<Record>,
    pub counters: PublisherCounters,
    /// Each packet's wait in its socket, from the kernel's receive timestamp to its read:
    /// recorded by the caller, which owns the socket.
    pub in_socket: Stage,
    pub decode: Stage,
    pub publish: Stage,
    pub round_trip: Stage,
    /// The longest a control message (announcement, Done) took to send: a link that cannot
    /// take it must not hold the publisher (the Zenoh backend drops it for that link).
    pub control_send_max: Duration,
    peers: Peers,
    /// When this publisher started ([`now_ns`]): of two on one feed, the later one yields.
    started_ns: u64,
    last_announce: Option<Instant>,
    first_packet: Option<Instant>,
    last_packet: Option<Instant>,
}

/// [`take_echoes`] on the publisher's own fields; a macro, not a method, so that it borrows
/// only those fields while `publish_pending` holds `self.pubs`.
macro_rules! take_echoes {
    ($p:ident) => {
        take_echoes(
            &$p.echo_rx,
            $p.id,
            &mut $p.round_trip,
            &mut $p.counters,
            $p.opts.warmup,
        )
    };
}

/// How long `finish` waits for more echoes once they stopped coming.
const ECHO_QUIET: Duration = Duration::from_millis(500);
/// The Done message's template id in the simulator's template sets.
const DONE_TEMPLATE_ID: u32 = 99;

/// What a fully decoded packet held.
#[derive(Debug, Default)]
struct PacketOutcome {
    messages: u64,
    done: bool,
}

/// The empty builder: keeps only the template id, to see the Done message.
struct LastTemplate(u32);

impl Handler for LastTemplate {
    fn begin_message(&mut self, t: &fastfeed_codec::Template) {
        self.0 = t.id;
    }
}

impl<B: Bus> DecodingPublisher<B> {
    pub fn new(
        bus: &B,
        templates: std::sync::Arc<Templates>,
        opts: PublisherOptions,
    ) -> Result<Self, BusError> {
        let decode_name = if opts.empty_builder {
            "decode (empty builder) /msg"
        } else {
            "decode+convert /msg"
        };
        let mut p = DecodingPublisher {
            converter: Converter::new(&templates),
            decoder: Decoder::new(templates),
            channels: match &opts.channels {
                Some(list) => Channels::of(list, opts.first_seq),
                None => Channels::single(opts.first_seq),
            },
            pubs: if opts.empty_builder {
                None
            } else {
                Some(RecordPublishers::new(bus, &opts.qos)?)
            },
            control_tx: bus.control_sender()?,
            control_rx: bus.control_receiver()?,
            echo_rx: if opts.echo {
                Some(bus.echo_receiver()?)
            } else {
                None
            },
            id: bus.id(),
            feed: bus.feed().to_string(),
            records: Vec::with_capacity(64),
            pending: Vec::with_capacity(256),
            counters: PublisherCounters::default(),
            in_socket: Stage::new("in socket /packet"),
            decode: Stage::new(decode_name),
            publish: Stage::new("publish /record"),
            round_trip: Stage::new("round trip /record"),
            peers: Peers::default(),
            started_ns: now_ns(),
            last_announce: None,
            control_send_max: Duration::ZERO,
            first_packet: None,
            last_packet: None,
            opts,
        };
        p.announce()?;
        Ok(p)
    }

    /// Tells the feed this publisher is on it, whether it wants echoes, and which clock its
    /// `sent_ns` are on.
    fn announce(&mut self) -> Result<(), BusError> {
        let kind = if self.opts.echo {
            Control::PUBLISHER_ECHO
        } else {
            Control::PUBLISHER
        };
        let t = Instant::now();
        let g = self.opts.group;
        self.control_tx
            .send(Control::new(kind, self.id, g.size, self.started_ns).in_group(g.id))?;
        let clock = fastfeed_bus::clock_id();
        if clock != 0 {
            self.control_tx
                .send(Control::new(Control::CLOCK, self.id, 0, clock).in_group(g.id))?;
        }
        self.control_send_max = self.control_send_max.max(t.elapsed());
        self.last_announce = Some(Instant::now());
        Ok(())
    }

    /// Takes the control messages queued: subscribers' HELLO (answered with an announcement,
    /// so they know whether to echo) and BYE, other publishers; announces itself now and
    /// then, and reports subscribers gone silent.
    pub fn poll_control(&mut self) -> Result<(), BusError> {
        let now = Instant::now();
        let mut answer = false;
        while let Some(c) = self.control_rx.try_recv()? {
            match c.kind {
                Control::HELLO if self.peers.hello(c.sender, now) => {
                    self.counters.subscribers_seen += 1;
                    answer = true;
                }
                Control::BYE => {
                    self.peers.bye(c.sender);
                    self.counters.subscribers_left += 1;
                }
                Control::PUBLISHER | Control::PUBLISHER_ECHO | Control::DONE
                    if c.sender != self.id && !self.is_partner(c.group) =>
                {
                    let started = if c.kind == Control::DONE {
                        u64::MAX
                    } else {
                        c.count
                    };
                    if let Some(r) = self.peers.rival(c.sender, started) {
                        answer = true;
                        self.on_rival(r);
                    }
                }
                _ => {}
            }
        }
        for id in self.peers.newly_silent(now) {
            self.counters.subscribers_silent += 1;
            eprintln!(
                "subscriber {id} not heard from for {} s and no bye: it died or is stuck",
                crate::peers::SILENT_AFTER.as_secs()
            );
        }
        let due = self
            .last_announce
            .is_none_or(|t| now.duration_since(t) >= HEARTBEAT);
        if answer || due {
            self.announce()?;
        }
        Ok(())
    }

    /// Whether a publisher of `group` is one of this publisher's group.
    fn is_partner(&self, group: u32) -> bool {
        group != 0 && group == self.opts.group.id
    }

    fn on_rival(&mut self, r: Rival) {
        self.counters.other_publishers = self.peers.rivals.len() as u64;
        if r.started_ns != u64::MAX && !r.is_older_than(self.id, self.started_ns) {
            eprintln!(
                "another publisher (id {}) came onto feed {:?}: it is told this one was \
                 first and should stop; its echoes are counted apart",
                r.id, self.feed
            );
        }
    }

    /// Another publisher that was on the feed before this one, if one was heard of.
    pub fn older_publisher(&self) -> Option<u32> {
        self.peers
            .rivals
            .iter()
            .find(|r| r.is_older_than(self.id, self.started_ns))
            .map(|r| r.id)
    }

    /// Listens on the control channel for `window` (a few announcement periods) and
    /// returns another publisher that was on the feed first, if any: the caller should
    /// then not publish, or subscribers would get both feeds mixed.
    pub fn wait_alone(&mut self, window: Duration) -> Result<Option<u32>, BusError> {
        let deadline = Instant::now() + window;
        self.announce()?;
        while Instant::now() < deadline {
            self.poll_control()?;
            if let Some(id) = self.older_publisher() {
                return Ok(Some(id));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(self.older_publisher())
    }

    /// Subscribers that said hello so far and are still heard from.
    pub fn subscribers(&mut self) -> Result<usize, BusError> {
        self.poll_control()?;
        Ok(self.peers.active())
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
    /// Done message has been seen, in this packet or an earlier one.
    ///
    /// A packet is published whole or not at all, so everything reconciles on packets: the
    /// records published are exactly those of the decoded packets, and a rejected packet is
    /// lost like a missing one instead of half delivered. Its sequence number counts as
    /// received, though: a later copy of it is a duplicate.
    pub fn on_packet(&mut self, packet: &[u8]) -> Result<bool, BusError> {
        let now = Instant::now();
        self.first_packet.get_or_insert(now);
        self.last_packet = Some(now);
        // Before publishing: a subscriber that just said hello learns whether to echo.
        self.poll_control()?;
        let admitted = self.channels.admit(packet);
        self.counters.packets = self.channels.counters();
        let (seq, line) = match admitted {
            Admit::Decode { seq, line, channel } => {
                self.converter.set_channel(channel as u32);
                (seq, line)
            }
            Admit::Short => {
                self.counters.packets_short += 1;
                return Ok(self.counters.done);
            }
            Admit::Foreign(_) => {
                self.counters.packets_foreign += 1;
                return Ok(self.counters.done);
            }
            Admit::Skip => return Ok(self.counters.done),
        };
        match self.decode_packet(packet) {
            Ok(outcome) => {
                self.publish_pending()?;
                self.counters.packets_decoded += 1;
                self.counters.messages += outcome.messages;
                if outcome.done {
                    self.channels.set_done(line);
                    self.counters.done = self.channels.all_done();
                }
            }
            Err(error) => self.reject(Rejection {
                packet: seq,
                byte: error.offset,
                error,
            }),
        }
        take_echoes!(self)?;
        Ok(self.counters.done)
    }

    /// Decodes every message of the packet, with the dictionaries reset, into `pending`.
    /// The error's offset is made relative to the packet start.
    fn decode_packet(&mut self, packet: &[u8]) -> Result<PacketOutcome, CodecError> {
        self.decoder.reset();
        self.pending.clear();
        let mut outcome = PacketOutcome::default();
        let mut pos = self.channels.header().bytes();
        // One clock read per message, the end of one the start of the next: clock reads
        // were a quarter of the publisher's time at five per message (perf, OPRA-like data).
        let mut t0 = Instant::now();
        while pos < packet.len() {
            let (n, done) = self.decode_message(&packet[pos..]).map_err(|mut e| {
                e.offset += pos;
                e
            })?;
            let t1 = Instant::now();
            self.decode.record((t1 - t0).as_nanos() as u64);
            t0 = t1;
            outcome.messages += 1;
            outcome.done |= done;
            pos += n;
        }
        Ok(outcome)
    }

    /// Decodes one message, appending its records to `pending`; returns the bytes used and
    /// whether it was the Done message.
    fn decode_message(&mut self, buf: &[u8]) -> Result<(usize, bool), CodecError> {
        if self.opts.empty_builder {
            let mut t = LastTemplate(0);
            let n = self.decoder.decode(buf, &mut t)?;
            return Ok((n, t.0 == DONE_TEMPLATE_ID));
        }
        let n = self
            .converter
            .decode(&mut self.decoder, buf, &mut self.records)?;
        let mut done = false;
        for r in &self.records {
            match r {
                Record::Done => done = true,
                r => self.pending.push(*r),
            }
        }
        Ok((n, done))
    }

    /// Publishes the records of a decoded packet, taking echoes in between so their round
    /// trip is not inflated by the rest of the packet.
    fn publish_pending(&mut self) -> Result<(), BusError> {
        let Some(pubs) = self.pubs.as_mut() else {
            return Ok(());
        };
        // As in decode_packet, one clock read per record where no echo is taken between.
        let mut t = Instant::now();
        for r in &self.pending {
            pubs.publish(r)?;
            let t1 = Instant::now();
            self.publish.record((t1 - t).as_nanos() as u64);
            t = t1;
            if self.echo_rx.is_some() {
                take_echoes!(self)?;
                t = Instant::now();
            }
        }
        self.counters.records += self.pending.len() as u64;
        Ok(())
    }

    fn reject(&mut self, rejection: Rejection) {
        self.counters.packets_rejected += 1;
        if self.counters.errors.len() < MAX_ERRORS_KEPT {
            self.counters.errors.push(rejection);
        }
    }

    /// Takes queued echoes and records their round trip; takes control messages too.
    pub fn poll_echoes(&mut self) -> Result<(), BusError> {
        self.poll_control()?;
        take_echoes!(self)
    }

    /// Spins taking echoes until each active subscriber echoed every record published so
    /// far, or none came for `quiet`: the round trip is measured by a process that is
    /// awake, and the caller may then block on its socket instead of spinning between
    /// packets (a filtered or slow subscriber ends the spin by going quiet).
    pub fn await_echoes(&mut self, quiet: Duration) -> Result<(), BusError> {
        if self.echo_rx.is_none() {
            return Ok(());
        }
        let want = self.counters.records * self.peers.active() as u64;
        let mut last = Instant::now();
        while self.counters.echoes < want && last.elapsed() < quiet {
            let before = self.counters.echoes;
            take_echoes!(self)?;
            if self.counters.echoes > before {
                last = Instant::now();
            } else {
                // Yield, not spin: on a crowded machine the subscriber may need this core.
                std::thread::yield_now();
            }
        }
        Ok(())
    }

    /// Sends the Done token and, with echo on, collects echoes until every record came
    /// back from each subscriber, no echo came for a while, or `timeout` passes. A
    /// subscriber that is stuck, or lost records to its full queue, never echoes them all:
    /// waiting for it would hold the publisher for as long as it is stuck.
    pub fn finish(&mut self, timeout: Duration) -> Result<(), BusError> {
        self.send_done()?;
        let want = self.counters.records * self.peers.active().max(1) as u64;
        let deadline = Instant::now() + timeout;
        let mut last_echo = Instant::now();
        while self.opts.echo
            && self.counters.echoes < want
            && Instant::now() < deadline
            && last_echo.elapsed() < ECHO_QUIET
        {
            let before = self.counters.echoes;
            self.poll_echoes()?;
            if self.counters.echoes > before {
                last_echo = Instant::now();
            }
            std::thread::yield_now();
        }
        Ok(())
    }

    /// After [`finish`](Self::finish): waits until every subscriber that said hello said
    /// bye (it had the Done and every record it would get) or `timeout` passes, sending the
    /// Done again now and then; returns how many never said bye. A silent one is waited for
    /// too: a host cut off for a while comes back on a new session once Zenoh notices the
    /// old one is gone, and only then can it get the Done. A Zenoh session closed at exit
    /// drops what its links still queue, so a publisher on Zenoh waits here before it exits.
    pub fn wait_for_byes(&mut self, timeout: Duration) -> Result<usize, BusError> {
        let deadline = Instant::now() + timeout;
        let mut last_done = Instant::now();
        while self.peers.not_left() > 0 && Instant::now() < deadline {
            self.poll_control()?;
            // Again now and then: a link that was congested may have dropped it.
            if last_done.elapsed() >= HEARTBEAT {
                self.send_done()?;
                last_done = Instant::now();
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(self.peers.not_left())
    }

    fn send_done(&mut self) -> Result<(), BusError> {
        let t = Instant::now();
        if let Some(pubs) = &self.pubs {
            pubs.send_done(&self.control_tx, self.id, self.opts.group.id)?;
        }
        self.control_send_max = self.control_send_max.max(t.elapsed());
        Ok(())
    }

    /// Records published per type.
    pub fn published(&self) -> Vec<(&'static str, u64)> {
        self.pubs
            .as_ref()
            .map(|p| p.published())
            .unwrap_or_default()
    }

    /// Echoes not timed at the start ([`PublisherOptions::warmup`]).
    pub fn warmup(&self) -> u64 {
        self.opts.warmup
    }

    /// Time from the first to the last packet.
    pub fn elapsed(&self) -> Duration {
        match (self.first_packet, self.last_packet) {
            (Some(a), Some(b)) => b - a,
            _ => Duration::ZERO,
        }
    }

    /// Packets never received, as (channel, first, last); channel 0 for a single stream.
    pub fn missing_ranges(&self) -> Vec<(u16, u64, u64)> {
        self.channels.missing_ranges()
    }

    /// What starts each packet: [`PacketHeader::SequenceChannel`] when the publisher takes
    /// channels.
    pub fn header(&self) -> PacketHeader {
        self.channels.header()
    }

    /// When the first and the last packet came, if any did.
    pub fn first_last_packet(&self) -> Option<(Instant, Instant)> {
        self.first_packet.zip(self.last_packet)
    }

    /// The channels taken (`[0]` for a single stream), and those whose Done has not come.
    pub fn channels(&self) -> (Vec<u16>, Vec<u16>) {
        (self.channels.numbers(), self.channels.not_done())
    }
}

/// Takes queued echoes; records the round trip of each answering publisher `id` in `stage`
/// and counts it, and counts the others apart.
fn take_echoes<R: Receiver<Echo>>(
    rx: &Option<R>,
    id: u32,
    stage: &mut Stage,
    counters: &mut PublisherCounters,
    warmup: u64,
) -> Result<(), BusError> {
    if let Some(rx) = rx {
        while let Some(e) = rx.try_recv()? {
            if e.publisher == id {
                if counters.echoes >= warmup {
                    stage.record(now_ns().saturating_sub(e.sent_ns));
                }
                counters.echoes += 1;
            } else {
                counters.echoes_other += 1;
            }
        }
    }
    Ok(())
}
