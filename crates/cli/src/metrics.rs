//! `handle --metrics ADDR`: the handler's counters for a monitoring system, in Prometheus's
//! text format over HTTP (`GET /metrics`), as each channel's thread left them at its last
//! second (and at its end). The threads only swap in a channel's values once a second; the
//! HTTP thread renders them when asked, off the hot path.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{anyhow, Result};

/// The latest values of every channel, served over HTTP.
pub struct Metrics {
    feed: String,
    started: Instant,
    /// Channel -> its (name, value) pairs, in the report's order.
    channels: Mutex<BTreeMap<String, Vec<(String, u64)>>>,
    /// Channel -> its lines' sockets (line, inode) now, whose kernel drops are read when
    /// asked.
    sockets: Mutex<BTreeMap<String, Vec<(&'static str, String)>>>,
}

impl Metrics {
    /// Listens on `addr` (`HOST:PORT`; port 0 picks one) and serves `/metrics` from a
    /// thread of its own for as long as the process runs; returns the metrics and where
    /// they are served.
    pub fn serve(addr: &str, feed: &str) -> Result<(Arc<Metrics>, String)> {
        let server =
            tiny_http::Server::http(addr).map_err(|e| anyhow!("serving metrics on {addr}: {e}"))?;
        let at = server.server_addr().to_string();
        let metrics = Arc::new(Metrics {
            feed: feed.to_string(),
            started: Instant::now(),
            channels: Mutex::new(BTreeMap::new()),
            sockets: Mutex::new(BTreeMap::new()),
        });
        let m = metrics.clone();
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                for request in server.incoming_requests() {
                    let response = match request.url() {
                        "/metrics" => tiny_http::Response::from_string(m.render()).with_header(
                            tiny_http::Header::from_bytes(
                                &b"Content-Type"[..],
                                &b"text/plain; version=0.0.4"[..],
                            )
                            .expect("a valid header"),
                        ),
                        _ => {
                            tiny_http::Response::from_string("see /metrics\n").with_status_code(404)
                        }
                    };
                    // A scraper that hung up gets nothing; the next one is served.
                    let _ = request.respond(response);
                }
            })?;
        Ok((metrics, at))
    }

    /// A channel's values now.
    pub fn set(&self, channel: &str, values: Vec<(String, u64)>) {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        channels.insert(channel.to_string(), values);
    }

    /// A channel's sockets now (line, inode), whose drops in the kernel (`/proc/net/udp`)
    /// each scrape reads: the handler's threads never read them while they run. Given again
    /// as the snapshot line is joined and left, so the line's socket of the moment is read.
    pub fn watch_sockets(&self, channel: &str, lines: Vec<(&'static str, String)>) {
        let mut sockets = self.sockets.lock().unwrap_or_else(|e| e.into_inner());
        sockets.insert(channel.to_string(), lines);
    }

    /// Prometheus's text exposition: one family per counter, a sample per channel.
    pub fn render(&self) -> String {
        let channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        let mut families: BTreeMap<String, Vec<(&str, u64)>> = BTreeMap::new();
        for (channel, values) in channels.iter() {
            for (name, v) in values {
                families
                    .entry(metric_name(name))
                    .or_default()
                    .push((channel, *v));
            }
        }
        let feed = escape(&self.feed);
        let mut out = String::new();
        let up = self.started.elapsed().as_secs_f64();
        let _ = writeln!(
            out,
            "# HELP fastfeed_uptime_seconds Since the handler started."
        );
        let _ = writeln!(out, "# TYPE fastfeed_uptime_seconds gauge");
        let _ = writeln!(out, "fastfeed_uptime_seconds{{feed=\"{feed}\"}} {up:.3}");
        for (name, samples) in families {
            // Counters, sums and distributions' points alike: `untyped` claims nothing.
            let _ = writeln!(out, "# TYPE {name} untyped");
            for (channel, v) in samples {
                let channel = escape(channel);
                let _ = writeln!(out, "{name}{{feed=\"{feed}\",channel=\"{channel}\"}} {v}");
            }
        }
        drop(channels);
        let sockets = self.sockets.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(drops) = (!sockets.is_empty())
            .then(fastfeed_net::udp_drops_by_inode)
            .flatten()
        {
            let name = "fastfeed_socket_kernel_drops";
            let _ = writeln!(
                out,
                "# HELP {name} Datagrams the kernel dropped for a line's socket (a full receive buffer), now."
            );
            let _ = writeln!(out, "# TYPE {name} counter");
            for (channel, lines) in sockets.iter() {
                let channel = escape(channel);
                for (line, inode) in lines {
                    if let Some(d) = drops.get(inode) {
                        let _ = writeln!(
                            out,
                            "{name}{{feed=\"{feed}\",channel=\"{channel}\",line=\"{line}\"}} {d}"
                        );
                    }
                }
            }
        }
        out
    }
}

/// `fastfeed_` and the report's key, with what Prometheus names cannot hold as `_`.
fn metric_name(key: &str) -> String {
    let mut s = String::from("fastfeed_");
    s.extend(key.chars().map(|c| match c {
        'a'..='z' | 'A'..='Z' | '0'..='9' | '_' => c,
        _ => '_',
    }));
    s
}

/// A label value as the format quotes it.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_group_every_channel_and_names_are_legal() {
        let m = Metrics {
            feed: "mo\"ex".into(),
            started: Instant::now(),
            channels: Mutex::new(BTreeMap::new()),
            sockets: Mutex::new(BTreeMap::new()),
        };
        m.set("B", vec![("packets_a".into(), 7), ("a.lost".into(), 1)]);
        m.set("A", vec![("packets_a".into(), 5), ("a.lost".into(), 0)]);
        m.set("A", vec![("packets_a".into(), 6), ("a.lost".into(), 0)]);
        let text = m.render();
        let lines: Vec<&str> = text.lines().collect();
        let at = |l: &str| {
            lines
                .iter()
                .position(|x| *x == l)
                .unwrap_or_else(|| panic!("{l}: {text}"))
        };
        let t = at("# TYPE fastfeed_packets_a untyped");
        assert_eq!(
            at("fastfeed_packets_a{feed=\"mo\\\"ex\",channel=\"A\"} 6"),
            t + 1
        );
        assert_eq!(
            at("fastfeed_packets_a{feed=\"mo\\\"ex\",channel=\"B\"} 7"),
            t + 2
        );
        assert!(
            text.contains("fastfeed_a_lost{feed=\"mo\\\"ex\",channel=\"B\"} 1"),
            "{text}"
        );
        assert!(text.starts_with("# HELP fastfeed_uptime_seconds"));
    }
}
