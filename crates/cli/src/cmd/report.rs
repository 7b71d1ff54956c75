//! `--report-json`: every counter of the publisher's and the subscriber's reports as JSON,
//! for scripts and tests to check against what was sent.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use fastfeed_bus::Bus;
use fastfeed_publish::{DecodingPublisher, PacketHeader, Rejection, SubscriberReport};
use serde_json::{json, Map, Value};

/// The publisher's counters. Reconciled: `packets.received = accepted + duplicates + stale`,
/// `accepted = decoded + rejected`; `missing_ranges` are the packets never received.
pub fn publisher<B: Bus>(p: &DecodingPublisher<B>, elapsed: Duration) -> Value {
    let c = &p.counters;
    let s = &c.packets;
    let published: Map<String, Value> = p
        .published()
        .into_iter()
        .map(|(t, n)| (t.to_string(), n.into()))
        .collect();
    json!({
        "packets": {
            "received": s.received,
            "accepted": s.accepted,
            "duplicates": s.duplicates,
            "late": s.late,
            "stale": s.stale,
            "decoded": c.packets_decoded,
            "rejected": c.packets_rejected,
            "short": c.packets_short,
            "foreign": c.packets_foreign,
            "gaps": s.gaps,
            "gap_packets": s.gap_packets,
            "missing": s.missing,
            "given_up": s.given_up,
        },
        "missing_ranges": missing_ranges(p),
        "rejected": c.errors.iter().map(rejection).collect::<Vec<_>>(),
        "rejected_not_listed": c.packets_rejected - c.errors.len() as u64,
        "messages": c.messages,
        "records": c.records,
        "published": published,
        "echoes": c.echoes,
        "echoes_other": c.echoes_other,
        "done": c.done,
        "subscribers_seen": c.subscribers_seen,
        "subscribers_left": c.subscribers_left,
        "subscribers_silent": c.subscribers_silent,
        "other_publishers": c.other_publishers,
        "first_to_last_packet_ms": elapsed.as_secs_f64() * 1e3,
        "control_send_max_ms": p.control_send_max.as_secs_f64() * 1e3,
        "stages_us": {
            "in_socket": stage(&p.in_socket),
            "decode": stage(&p.decode),
            "publish": stage(&p.publish),
            "round_trip": stage(&p.round_trip),
        },
    })
}

/// The packets never received: `[first, last]` on a single stream, `[channel, first, last]`
/// when packets carry channel numbers.
fn missing_ranges<B: Bus>(p: &DecodingPublisher<B>) -> Vec<Value> {
    let by_channel = p.header() == PacketHeader::SequenceChannel;
    p.missing_ranges()
        .into_iter()
        .map(|(c, a, b)| {
            if by_channel {
                json!([c, a, b])
            } else {
                json!([a, b])
            }
        })
        .collect()
}

/// A stage's distribution in microseconds, and its total time in milliseconds: what a test
/// bounds (a publisher held up by one subscriber shows in its publish time).
fn stage(s: &fastfeed_stats::Stage) -> Value {
    let us = |ns: u64| ns as f64 / 1e3;
    json!({
        "count": s.count(),
        "p50": us(s.percentile_ns(50.0)),
        "p99": us(s.percentile_ns(99.0)),
        "p99_9": us(s.percentile_ns(99.9)),
        "max": us(s.max_ns()),
        "total_ms": s.mean_ns() * s.count() as f64 / 1e6,
    })
}

fn rejection(r: &Rejection) -> Value {
    json!({
        "packet": r.packet,
        "byte": r.byte,
        "kind": format!("{:?}", r.error.kind),
        "code": r.error.code().map(|c| c.to_string()),
        "message": r.to_string(),
    })
}

/// The subscriber's counters, per record type and in total. When `complete`, for each type
/// `received + filtered_out + missed = published`.
pub fn subscriber(r: &SubscriberReport) -> Value {
    let per_type: Map<String, Value> = r
        .per_type
        .iter()
        .map(|t| {
            let v = json!({
                "received": t.received,
                "filtered_out": t.filtered_out,
                "missed": t.missed,
                "gaps": t.gaps,
                "rejected": t.rejected,
                "snapshot": t.snapshot,
                "duplicates": t.duplicates,
                "published": t.published,
            });
            (t.type_name.to_string(), v)
        })
        .collect();
    json!({
        "received": r.received,
        "filtered_out": r.filtered_out,
        "missed": r.missed,
        "rejected": r.rejected,
        "snapshot": r.snapshot,
        "echoed": r.echoed,
        "done_seen": r.done_seen,
        "complete": r.complete,
        "publishers": r.publishers,
        "mixed": r.mixed,
        "interrupted": r.interrupted,
        "one_way_ns": r.one_way.map(|w| json!({
            "count": w.count,
            "p50": w.p50_ns,
            "p90": w.p90_ns,
            "p99": w.p99_ns,
            "p99_9": w.p999_ns,
            "max": w.max_ns,
        })),
        "per_type": per_type,
    })
}

pub fn write(path: &Path, report: &Value) -> Result<()> {
    let mut text = serde_json::to_string_pretty(report)?;
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
