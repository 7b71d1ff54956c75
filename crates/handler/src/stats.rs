//! A channel's counters: every packet, message, update and state transition lands in one.

use fastfeed_feed::ArbiterStats;

/// One stale period of one instrument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StalePeriod {
    /// SecurityID.
    pub security: u64,
    /// When it went stale (the time passed in), ns.
    pub from_ns: u64,
    /// When it was live again, ns.
    pub to_ns: u64,
    /// Incremental messages processed on the channel meanwhile.
    pub messages: u64,
}

/// Counters of one channel.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChannelStats {
    /// Incremental packets by line: A, B.
    pub packets: [u64; 2],
    /// Packets of the snapshot line taken while joined.
    pub snapshot_packets: u64,
    /// Snapshot-line packets that arrived while not joined (ignored).
    pub snapshot_ignored: u64,
    /// Packets rejected: too short for their header, or not decoding (by line A, B,
    /// snapshot). A rejected copy leaves the other line's copy a chance.
    pub rejected: [u64; 3],
    /// Of the rejected packets, those numbered too far ahead to be this channel's.
    pub foreign: u64,
    /// Packets without any MsgSeqNum (processed without arbitration).
    pub unsequenced: u64,
    /// Incremental messages processed, and of them heartbeats.
    pub messages: u64,
    /// Heartbeats.
    pub heartbeats: u64,
    /// Book updates applied.
    pub updates: u64,
    /// Trades handed on.
    pub trades: u64,
    /// Updates older than the instrument's RptSeq (already applied): skipped.
    pub old_updates: u64,
    /// Updates that the book could not apply (it disagrees with the feed): the instrument
    /// goes stale.
    pub book_errors: u64,
    /// Updates, snapshots, definitions and statuses that name no instrument (dropped).
    pub no_instrument: u64,
    /// MD entries with an MDUpdateAction the profile does not know (their RptSeq counts,
    /// the book is not changed), as decoded: a packet decoded from both lines counts twice.
    pub unknown_actions: u64,
    /// MD entries without an MDEntryType (not applied), as decoded.
    pub no_entry_type: u64,
    /// Gaps in the packet sequence opened (either line may still fill them).
    pub gaps_opened: u64,
    /// Gaps the other line filled in time.
    pub gaps_filled: u64,
    /// Gaps neither line filled within the timeout (or past the holding limit).
    pub gaps_timed_out: u64,
    /// Packets held back behind a gap, then released in order.
    pub held: u64,
    /// Gaps in an instrument's RptSeq (it went stale).
    pub rpt_gaps: u64,
    /// Instruments that went stale (RptSeq gap, book error, lost packet without RptSeq).
    pub went_stale: u64,
    /// Increments queued for instruments waiting for a snapshot.
    pub queued: u64,
    /// Queued increments dropped past the queue limit.
    pub queue_dropped: u64,
    /// Snapshots applied (an instrument synchronized or recovered).
    pub snapshots_applied: u64,
    /// Snapshots too old for an instrument's queue (its next one is awaited).
    pub snapshots_too_old: u64,
    /// Snapshot messages that were a fragment of an instrument's snapshot.
    pub snapshot_fragments: u64,
    /// Fragments dropped: one with no open snapshot to continue, and each open snapshot
    /// given up part-way (a fragment that did not follow it, a packet of the snapshot line
    /// that did not decode, a sequence reset, the line left or joined, the entry cap).
    pub snapshot_fragments_dropped: u64,
    /// Snapshots of live instruments compared with their book at the same RptSeq.
    pub snapshot_checks: u64,
    /// Of those, books that differed (the snapshot was applied instead).
    pub snapshot_mismatches: u64,
    /// Instruments synchronized by their first snapshot.
    pub synced: u64,
    /// Recoveries: stale instruments made live again by a snapshot.
    pub recoveries: u64,
    /// Times the snapshot line was joined and left.
    pub snapshot_joins: u64,
    /// Times the snapshot line was left.
    pub snapshot_leaves: u64,
    /// Sequence resets honoured (incremental lines).
    pub sequence_resets: u64,
    /// Sequence resets on the snapshot line (a new snapshot cycle).
    pub snapshot_cycles: u64,
    /// Trading status messages, definitions.
    pub statuses: u64,
    /// Instrument definitions.
    pub definitions: u64,
    /// Stale periods ended, their total and longest length, ns.
    pub stale_periods: u64,
    /// Sum of stale period lengths, ns.
    pub stale_ns_total: u64,
    /// The longest stale period, ns.
    pub stale_ns_max: u64,
    /// Times each incremental line (A, B) fell silent: no packet for the channel's
    /// `line_silence_ms` while the other line took packets.
    pub silences: [u64; 2],
    /// Time each line spent silent, ns: from its last packet before a silence to its next
    /// (or to the end of the input).
    pub silent_ns: [u64; 2],
    /// Datagrams the kernel dropped for each line's socket (A, B, snapshot: every time it
    /// was joined), mostly a full receive buffer: a loss the packet sequence alone shows as
    /// a network gap. Live only; the socket layer fills them in.
    pub kernel_drops: [u64; 3],
    /// Arbitration counters.
    pub arbiter: ArbiterStats,
}

impl ChannelStats {
    /// Every counter by name, for reports (`a.`/`b.` prefix the lines' arbitration counters,
    /// `channel.` the merged sequence's).
    pub fn fields(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = vec![
            ("packets_a".into(), self.packets[0]),
            ("packets_b".into(), self.packets[1]),
            ("snapshot_packets".into(), self.snapshot_packets),
            ("snapshot_ignored".into(), self.snapshot_ignored),
            ("rejected_a".into(), self.rejected[0]),
            ("rejected_b".into(), self.rejected[1]),
            ("rejected_snapshot".into(), self.rejected[2]),
            ("foreign".into(), self.foreign),
            ("unsequenced".into(), self.unsequenced),
            ("messages".into(), self.messages),
            ("heartbeats".into(), self.heartbeats),
            ("updates".into(), self.updates),
            ("trades".into(), self.trades),
            ("old_updates".into(), self.old_updates),
            ("book_errors".into(), self.book_errors),
            ("no_instrument".into(), self.no_instrument),
            ("unknown_actions".into(), self.unknown_actions),
            ("no_entry_type".into(), self.no_entry_type),
            ("gaps_opened".into(), self.gaps_opened),
            ("gaps_filled".into(), self.gaps_filled),
            ("gaps_timed_out".into(), self.gaps_timed_out),
            ("held".into(), self.held),
            ("rpt_gaps".into(), self.rpt_gaps),
            ("went_stale".into(), self.went_stale),
            ("queued".into(), self.queued),
            ("queue_dropped".into(), self.queue_dropped),
            ("snapshots_applied".into(), self.snapshots_applied),
            ("snapshots_too_old".into(), self.snapshots_too_old),
            ("snapshot_fragments".into(), self.snapshot_fragments),
            (
                "snapshot_fragments_dropped".into(),
                self.snapshot_fragments_dropped,
            ),
            ("snapshot_checks".into(), self.snapshot_checks),
            ("snapshot_mismatches".into(), self.snapshot_mismatches),
            ("synced".into(), self.synced),
            ("recoveries".into(), self.recoveries),
            ("snapshot_joins".into(), self.snapshot_joins),
            ("snapshot_leaves".into(), self.snapshot_leaves),
            ("sequence_resets".into(), self.sequence_resets),
            ("snapshot_cycles".into(), self.snapshot_cycles),
            ("statuses".into(), self.statuses),
            ("definitions".into(), self.definitions),
            ("stale_periods".into(), self.stale_periods),
            ("stale_ns_total".into(), self.stale_ns_total),
            ("stale_ns_max".into(), self.stale_ns_max),
            ("silences_a".into(), self.silences[0]),
            ("silences_b".into(), self.silences[1]),
            ("silent_ns_a".into(), self.silent_ns[0]),
            ("silent_ns_b".into(), self.silent_ns[1]),
            ("kernel_drops_a".into(), self.kernel_drops[0]),
            ("kernel_drops_b".into(), self.kernel_drops[1]),
            ("kernel_drops_snapshot".into(), self.kernel_drops[2]),
        ];
        let c = &self.arbiter.channel;
        v.extend([
            ("channel.accepted".into(), c.accepted),
            ("channel.gaps".into(), c.gaps),
            ("channel.gap_packets".into(), c.gap_packets),
            ("channel.late".into(), c.late),
            ("channel.duplicates".into(), c.duplicates),
            ("channel.missing".into(), c.missing),
            ("channel.resets".into(), self.arbiter.resets),
        ]);
        for (name, l) in [("a", &self.arbiter.a), ("b", &self.arbiter.b)] {
            v.extend([
                (format!("{name}.packets"), l.packets),
                (format!("{name}.first"), l.first),
                (format!("{name}.duplicates"), l.duplicates),
                (format!("{name}.stale"), l.stale),
                (format!("{name}.old_epoch"), l.old_epoch),
                (format!("{name}.lost"), l.lost),
                (format!("{name}.behind"), l.behind),
                (format!("{name}.behind_ns_mean"), l.behind_ns_mean()),
                (format!("{name}.behind_ns_max"), l.behind_ns_max),
                (format!("{name}.behind_packets_max"), l.behind_packets_max),
            ]);
        }
        v
    }
}
