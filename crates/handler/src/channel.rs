//! One channel's state machine: packets of lines A and B are decoded (each line with its own
//! dictionaries), arbitrated (first copy wins), held back behind a gap until the other line
//! fills it or the gap times out, and their events applied to the instruments' books; the
//! snapshot line is joined while an instrument waits for a snapshot, and left when none
//! does. No sockets and no clock: packets and the time come in as arguments.

use std::collections::HashSet;
use std::sync::Arc;

use fastfeed_codec::{Decoder, Templates};
use fastfeed_events::{
    Batch, Definition, Event, MsgKind, Normalizer, Profile, BATCH_EVENTS, BATCH_MESSAGES,
    NO_SECURITY,
};
use fastfeed_feed::config::PacketHeader;
use fastfeed_feed::{Arbiter, Arbitration, Line, SeqOutcome};

use crate::fragments::Fragments;
use crate::instruments::Instruments;
use crate::output::{BookView, Output};
use crate::settings::{ChannelSettings, LineId};
use crate::silence::Silence;
use crate::stats::{ChannelStats, StalePeriod};

/// Recent first copies kept to recognize the other line's byte-identical copy.
const RECENT: usize = 256;

/// A first copy: its bytes and numbers, and the line it came on.
#[derive(Default)]
struct Recent {
    hash: u64,
    bytes: Vec<u8>,
    first: u64,
    last: u64,
    line: Option<Line>,
}

/// A fast hash of a packet's bytes, eight at a time (a match is confirmed byte for byte).
#[inline]
fn packet_hash(b: &[u8]) -> u64 {
    let mut h = b.len() as u64;
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    }
    for &x in chunks.remainder() {
        h = (h ^ x as u64).wrapping_mul(0x100_0000_01b3);
    }
    h ^ (h >> 31)
}

/// The bytes a message of each resetting, empty template encodes to (a FAST Reset: its
/// presence map and template id). A packet starting with one decodes on its own.
fn reset_prefixes(templates: &Templates) -> Vec<Vec<u8>> {
    templates
        .iter()
        .filter(|t| t.reset && t.body.instrs.is_empty())
        .map(|t| {
            let mut v = vec![0xc0];
            fastfeed_codec::primitives::put::put_u64(&mut v, u64::from(t.id));
            v
        })
        .collect()
}

/// A packet held back behind a gap: its numbers and its events.
struct Held {
    first: u64,
    batch: Batch,
}

/// One channel.
pub struct Channel {
    settings: ChannelSettings,
    normalizer: Normalizer,
    decoders: [Decoder; 3],
    arbiter: Arbiter,
    instruments: Instruments,
    held: Vec<Held>,
    pool: Vec<Batch>,
    recent: Vec<Recent>,
    resets: Vec<Vec<u8>>,
    /// When the oldest open gap opened.
    gap_since: Option<u64>,
    /// Numbers below this were given up on (a gap timed out past them).
    given_up_below: u64,
    /// Some update came without RptSeq: a lost packet makes every book stale.
    rptless: bool,
    joined: bool,
    /// The first join lasts a whole snapshot cycle, so every instrument gets its book.
    startup: bool,
    cycle_seen: bool,
    snap_seen: HashSet<u64>,
    fragments: Fragments,
    silence: Silence,
    stats: ChannelStats,
}

impl Channel {
    /// A channel decoding with `templates`, normalizing under `profile`.
    pub fn new(templates: Arc<Templates>, profile: Profile, settings: ChannelSettings) -> Channel {
        let kind = profile.book;
        let resets = reset_prefixes(&templates);
        let normalizer = Normalizer::new(&templates, profile);
        let decoder = || Decoder::new(templates.clone());
        let mut stats = ChannelStats::default();
        let joined = settings.snapshot_line;
        stats.snapshot_joins = joined as u64;
        let (settings_line_b, silence_ns) = (settings.line_b, settings.line_silence_ns);
        Channel {
            instruments: Instruments::new(kind, settings.max_queue, settings.snapshot_line),
            settings,
            normalizer,
            decoders: [decoder(), decoder(), decoder()],
            arbiter: Arbiter::new(None),
            held: Vec::new(),
            pool: Vec::new(),
            // Room for an Ethernet datagram each, so keeping copies does not allocate.
            recent: (0..RECENT)
                .map(|_| Recent {
                    bytes: Vec::with_capacity(1536),
                    ..Recent::default()
                })
                .collect(),
            resets,
            gap_since: None,
            given_up_below: 0,
            rptless: false,
            joined,
            startup: true,
            cycle_seen: false,
            snap_seen: HashSet::new(),
            fragments: Fragments::default(),
            silence: Silence::new(if settings_line_b { silence_ns } else { 0 }),
            stats,
        }
    }

    /// Whether the snapshot line should be joined now.
    pub fn wants_snapshots(&self) -> bool {
        self.joined
    }

    /// Counters, arbitration included.
    pub fn stats(&self) -> ChannelStats {
        let mut s = self.stats.clone();
        s.arbiter = self.arbiter.stats();
        let n = self.normalizer.stats();
        (s.unknown_actions, s.no_entry_type) = (n.unknown_actions, n.no_entry_type);
        (s.silences, s.silent_ns) = (self.silence.silences, self.silence.silent_ns);
        s
    }

    /// Datagrams the kernel dropped for `line`'s socket (the socket layer reports them).
    pub fn add_kernel_drops(&mut self, line: LineId, drops: u64) {
        self.stats.kernel_drops[line.index()] += drops;
    }

    /// Which incremental lines (A, B) are silent now: no packet for `line_silence_ms`
    /// while the other line took packets.
    pub fn silent_lines(&self) -> [bool; 2] {
        self.silence.silent()
    }

    /// Instruments known, and of them those stale or waiting for their first snapshot.
    pub fn instrument_counts(&self) -> (usize, usize) {
        self.instruments.counts()
    }

    /// Stale periods that ended (the first 4096).
    pub fn stale_periods(&self) -> &[StalePeriod] {
        &self.instruments.periods
    }

    /// An instrument's book.
    pub fn book(&self, security: u64) -> Option<BookView<'_>> {
        self.instruments.view(security)
    }

    /// Every instrument's security id.
    pub fn securities(&self) -> impl Iterator<Item = u64> + '_ {
        self.instruments.securities()
    }

    /// Packets held behind a gap now.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// One packet from a line, received at `now_ns`.
    pub fn on_packet<O: Output>(&mut self, line: LineId, bytes: &[u8], now_ns: u64, out: &mut O) {
        match line {
            LineId::Snapshot => self.on_snapshot_packet(bytes, now_ns, out),
            LineId::A => self.on_increment(Line::A, bytes, now_ns, out),
            LineId::B => self.on_increment(Line::B, bytes, now_ns, out),
        }
        self.check_gap(now_ns, out);
    }

    /// Time passes: a gap past its timeout is given up.
    pub fn on_tick<O: Output>(&mut self, now_ns: u64, out: &mut O) {
        self.check_gap(now_ns, out);
    }

    /// The input has ended: whatever is held is released as if its gap timed out.
    pub fn finish<O: Output>(&mut self, now_ns: u64, out: &mut O) {
        self.silence.finish(now_ns);
        if !self.held.is_empty() || self.gap_since.is_some() {
            self.give_up(now_ns, out);
        }
    }

    /// Decodes a packet of `line` into the normalizer's batch; false if it does not decode.
    fn decode(&mut self, line: LineId, body: &[u8]) -> bool {
        self.normalizer.clear();
        let dec = &mut self.decoders[line.index()];
        if self.settings.reset_each_packet {
            dec.reset();
        }
        let mut pos = 0;
        while pos < body.len() {
            match dec.decode(&body[pos..], &mut self.normalizer) {
                Ok(n) => pos += n,
                Err(_) => {
                    self.normalizer.discard_partial();
                    self.normalizer.clear();
                    self.stats.rejected[line.index()] += 1;
                    return false;
                }
            }
        }
        true
    }

    fn on_increment<O: Output>(&mut self, line: Line, bytes: &[u8], now_ns: u64, out: &mut O) {
        let id = match line {
            Line::A => LineId::A,
            Line::B => LineId::B,
        };
        self.stats.packets[id.index()] += 1;
        self.silence.packet(id.index(), now_ns);
        let header = self.settings.header;
        let prefix_seq = header.prefix_seq(bytes);
        if matches!(header, PacketHeader::Seq { .. }) && prefix_seq.is_none() {
            self.stats.rejected[id.index()] += 1;
            return;
        }
        // A copy already taken from the other line need not be decoded, when the packets
        // decode on their own.
        if let Some(seq) = prefix_seq {
            if self.settings.reset_each_packet && !self.arbiter.is_new(line, seq) {
                self.arbiter.on_packet(line, seq, seq, now_ns);
                return;
            }
        }
        // A packet that decodes on its own and is byte for byte a first copy the other
        // line delivered is arbitrated without decoding.
        let standalone = prefix_seq.is_none()
            && self.settings.line_b
            && (self.settings.reset_each_packet
                || self.resets.iter().any(|r| bytes.starts_with(r)));
        let hash = if standalone { packet_hash(bytes) } else { 0 };
        if standalone {
            let r = &self.recent[(hash as usize) % RECENT];
            if r.hash == hash && r.line == Some(line.other()) && r.bytes == bytes {
                let (first, last) = (r.first, r.last);
                // (A copy the sequence takes after all, past a reset say, is decoded.)
                if !self.arbiter.is_new(line, first) {
                    self.arbiter.on_packet(line, first, last, now_ns);
                    return;
                }
            }
        }
        if !self.decode(id, &bytes[header.prefix_len().min(bytes.len())..]) {
            return;
        }
        let batch = self.normalizer.batch();
        let span = match header {
            PacketHeader::Seq { .. } => prefix_seq.map(|s| (s, s)),
            PacketHeader::Template { id, .. } => batch
                .messages
                .iter()
                .find(|m| m.template_id == id)
                .and_then(|m| m.msg_seq_num)
                .map(|s| (s, s)),
            PacketHeader::None => batch.seq_span(),
        };
        let reset = batch.events.iter().find_map(|e| match e {
            Event::SequenceReset { new_seq } => Some(*new_seq),
            _ => None,
        });
        let Some((first, last)) = span else {
            self.stats.unsequenced += 1;
            self.process_current(now_ns, out);
            return;
        };
        if self
            .arbiter
            .expected()
            .is_some_and(|e| first > e.saturating_add(self.settings.max_jump))
        {
            self.stats.rejected[id.index()] += 1;
            self.stats.foreign += 1;
            return;
        }
        let verdict = self.arbiter.on_packet(line, first, last, now_ns);
        if let Some(new_seq) = reset {
            // Either line's copy of a reset moves that line to the new numbering; a reset
            // in a duplicate or stale packet (another channel's, say) does not.
            if matches!(verdict, Arbitration::Accept(_) | Arbitration::OldEpoch) {
                self.arbiter.reset(line, new_seq);
            }
        }
        let outcome = match verdict {
            Arbitration::Accept(o) => o,
            _ => return,
        };
        if standalone {
            let r = &mut self.recent[(hash as usize) % RECENT];
            r.hash = hash;
            r.bytes.clear();
            r.bytes.extend_from_slice(bytes);
            (r.first, r.last, r.line) = (first, last, Some(line));
        }
        match outcome {
            SeqOutcome::Gap { .. } => {
                self.stats.gaps_opened += 1;
                self.gap_since.get_or_insert(now_ns);
                self.hold(first);
            }
            SeqOutcome::Late if first >= self.given_up_below => {
                if self.first_missing().is_none_or(|m| first < m) {
                    self.process_current(now_ns, out);
                    self.release(now_ns, out);
                } else {
                    self.hold(first);
                }
            }
            _ if self.gap_since.is_some() => self.hold(first),
            _ => self.process_current(now_ns, out),
        }
    }

    /// The oldest number still missing that is not given up on.
    fn first_missing(&self) -> Option<u64> {
        let floor = self.given_up_below;
        self.arbiter
            .missing()
            .filter(|&(_, b)| b >= floor)
            .map(|(a, _)| a.max(floor))
            .next()
    }

    fn hold(&mut self, first: u64) {
        let batch = self.take_batch();
        self.held.push(Held { first, batch });
        self.stats.held += 1;
    }

    /// Processes the held packets that no longer wait for a missing one.
    fn release<O: Output>(&mut self, now_ns: u64, out: &mut O) {
        let missing = self.first_missing();
        self.held
            .sort_unstable_by_key(|h| std::cmp::Reverse(h.first));
        while let Some(h) = self.held.last() {
            if missing.is_some_and(|m| h.first > m) {
                break;
            }
            let h = self.held.pop().expect("a held packet");
            self.process(&h.batch, now_ns, out);
            self.pool.push(h.batch);
        }
        if missing.is_none() && self.gap_since.take().is_some() {
            self.stats.gaps_filled += 1;
        }
    }

    fn check_gap<O: Output>(&mut self, now_ns: u64, out: &mut O) {
        if let Some(since) = self.gap_since {
            if now_ns.saturating_sub(since) >= self.settings.gap_timeout_ns
                || self.held.len() > self.settings.max_held
            {
                self.give_up(now_ns, out);
            }
        }
    }

    /// Neither line filled the gap in time: what is missing is lost. The held packets go
    /// on in order; instruments with RptSeq find their own gaps, and without RptSeq every
    /// book goes stale.
    fn give_up<O: Output>(&mut self, now_ns: u64, out: &mut O) {
        self.stats.gaps_timed_out += 1;
        self.gap_since = None;
        if self.rptless {
            self.instruments.all_stale(now_ns, &mut self.stats);
        }
        self.held
            .sort_unstable_by_key(|h| std::cmp::Reverse(h.first));
        while let Some(h) = self.held.pop() {
            self.given_up_below = self.given_up_below.max(h.first);
            self.process(&h.batch, now_ns, out);
            self.pool.push(h.batch);
        }
        self.given_up_below = self
            .given_up_below
            .max(self.arbiter.expected().unwrap_or(0));
        self.join_if_needed();
    }

    fn process_current<O: Output>(&mut self, now_ns: u64, out: &mut O) {
        let batch = self.take_batch();
        self.process(&batch, now_ns, out);
        self.pool.push(batch);
    }

    /// The normalizer's batch, taken out (swapped with a pooled one, no copy) to be
    /// processed beside `self`.
    fn take_batch(&mut self) -> Batch {
        let mut b = self
            .pool
            .pop()
            .unwrap_or_else(|| Batch::with_capacity(BATCH_MESSAGES, BATCH_EVENTS));
        b.clear();
        self.normalizer.swap_batch(&mut b);
        b
    }

    /// Applies the events of one packet's messages.
    fn process<O: Output>(&mut self, batch: &Batch, now_ns: u64, out: &mut O) {
        let before = (self.stats.queued, self.stats.went_stale);
        for m in &batch.messages {
            let events = batch.events_of(m);
            match m.kind {
                MsgKind::Incremental => {
                    self.stats.messages += 1;
                    for ev in events {
                        let Some((sec, rpt)) = ev.instrument() else {
                            continue;
                        };
                        if sec == NO_SECURITY {
                            self.stats.no_instrument += 1;
                            continue;
                        }
                        self.rptless |= rpt.is_none();
                        self.instruments
                            .on_event(ev, m.msg_seq_num, now_ns, &mut self.stats, out);
                    }
                    self.instruments.end_message(out);
                }
                MsgKind::Heartbeat => self.stats.heartbeats += 1,
                MsgKind::SequenceReset => {
                    self.stats.sequence_resets += 1;
                    self.instruments.reset_rpt();
                }
                _ => self.side_events(events, out),
            }
        }
        if (self.stats.queued, self.stats.went_stale) != before {
            self.join_if_needed();
        }
    }

    /// Statuses and definitions, from any line.
    fn side_events<O: Output>(&mut self, events: &[Event], out: &mut O) {
        for ev in events {
            match ev {
                // Named no instrument (a symbol left out, say): nothing to hand on.
                Event::Status {
                    security: Some(NO_SECURITY),
                    ..
                }
                | Event::Definition(Definition {
                    security: NO_SECURITY,
                    ..
                }) => self.stats.no_instrument += 1,
                Event::Status { security, status } => {
                    self.stats.statuses += 1;
                    out.status(*security, *status);
                }
                Event::Definition(d) => {
                    self.stats.definitions += 1;
                    if d.depth.is_some() {
                        self.instruments.set_depth(d.security, d.depth);
                    }
                    out.definition(d);
                }
                _ => {}
            }
        }
    }

    fn join_if_needed(&mut self) {
        if !self.joined && self.settings.snapshot_line && self.instruments.need_snapshot() {
            self.joined = true;
            self.fragments.give_up(&mut self.stats);
            self.stats.snapshot_joins += 1;
        }
    }

    fn on_snapshot_packet<O: Output>(&mut self, bytes: &[u8], now_ns: u64, out: &mut O) {
        if !self.joined {
            self.stats.snapshot_ignored += 1;
            return;
        }
        self.stats.snapshot_packets += 1;
        let body = &bytes[self.settings.header.prefix_len().min(bytes.len())..];
        if !self.decode(LineId::Snapshot, body) {
            // A snapshot open across this packet lost its fragments in it.
            self.fragments.give_up(&mut self.stats);
            return;
        }
        let batch = self.take_batch();
        for m in &batch.messages {
            let events = batch.events_of(m);
            match (m.kind, events.first()) {
                (MsgKind::Snapshot, Some(Event::SnapshotBegin(h))) => {
                    let entries = &events[1..events.len().saturating_sub(1)];
                    let Some((h, entries)) =
                        self.fragments
                            .add(h, m.msg_seq_num, entries, &mut self.stats)
                    else {
                        continue;
                    };
                    // (The normalizer counted it too; here it must not become a book.)
                    if h.security == NO_SECURITY {
                        self.stats.no_instrument += 1;
                        continue;
                    }
                    let h = &h;
                    self.instruments
                        .on_snapshot(h, entries, now_ns, &mut self.stats, out);
                    if !self.snap_seen.insert(h.security) {
                        self.cycle_seen = true;
                    }
                }
                (MsgKind::SequenceReset, _) => {
                    self.stats.snapshot_cycles += 1;
                    self.fragments.sequence_reset(&mut self.stats);
                }
                _ => self.side_events(events, out),
            }
        }
        self.pool.push(batch);
        if !self.settings.verify
            && (self.cycle_seen || !self.startup)
            && !self.instruments.need_snapshot()
        {
            self.joined = false;
            self.startup = false;
            self.cycle_seen = false;
            self.snap_seen.clear();
            self.fragments.give_up(&mut self.stats);
            self.stats.snapshot_leaves += 1;
        }
    }
}
