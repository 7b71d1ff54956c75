//! Lines from capture files: a line's packets with their times, from a pcap/pcapng (the
//! datagrams to the line's group, capture times), a `len32le` file or a raw file (UDP
//! payloads end to end, cut at each FAST Reset message); the times of the last two are the
//! packets' SendingTime (52). [`merge`] interleaves lines by time, as they arrived.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fastfeed_capture::{Capture, CaptureStats};
use fastfeed_codec::{Decoder, Templates};
use fastfeed_events::{Normalizer, Profile};
use fastfeed_feed::config::{CaptureFormat, LineConfig, PacketHeader};

use crate::settings::LineId;

/// Why a capture cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The file cannot be read.
    #[error("reading {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The line has no capture file.
    #[error("line {0} has no capture")]
    NoCapture(&'static str),
    /// Not a usable capture of the format.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// One packet of a captured line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedPacket {
    /// When it arrived (capture time) or was sent (SendingTime), ns since the epoch.
    pub ts_ns: u64,
    range: Range<usize>,
}

/// A line's packets, held in memory.
#[derive(Debug, Clone)]
pub struct CapturedLine {
    /// Which line.
    pub line: LineId,
    data: Vec<u8>,
    /// The packets in file order.
    pub packets: Vec<CapturedPacket>,
    /// For a pcap: what else the capture held.
    pub capture_stats: Option<CaptureStats>,
}

impl CapturedLine {
    /// A line from packets in memory (tests, generated data).
    pub fn from_packets(line: LineId, packets: impl IntoIterator<Item = (u64, Vec<u8>)>) -> Self {
        let mut data = Vec::new();
        let mut out = Vec::new();
        for (ts_ns, p) in packets {
            let start = data.len();
            data.extend_from_slice(&p);
            out.push(CapturedPacket {
                ts_ns,
                range: start..data.len(),
            });
        }
        CapturedLine {
            line,
            data,
            packets: out,
            capture_stats: None,
        }
    }

    /// The bytes of packet `i`.
    pub fn packet(&self, i: usize) -> &[u8] {
        &self.data[self.packets[i].range.clone()]
    }

    /// Every packet's bytes, in order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.packets.iter().map(|p| &self.data[p.range.clone()])
    }

    /// Total payload bytes.
    pub fn bytes(&self) -> usize {
        self.packets.iter().map(|p| p.range.len()).sum()
    }
}

/// Loads a line's capture.
pub fn load_line(
    line: LineId,
    cfg: &LineConfig,
    templates: &Arc<Templates>,
    header: PacketHeader,
) -> Result<CapturedLine, SourceError> {
    let path = cfg
        .capture
        .as_ref()
        .ok_or(SourceError::NoCapture(line.name()))?;
    let read = |source| SourceError::Read {
        path: path.clone(),
        source,
    };
    // The capture and the parts that continue it, as one.
    let mut parts = fastfeed_capture::Parts::open(path, &cfg.continued).map_err(read)?;
    let mut data = Vec::with_capacity(parts.len() as usize);
    std::io::Read::read_to_end(&mut parts, &mut data).map_err(read)?;
    let format = cfg
        .format
        .unwrap_or(if fastfeed_capture::is_capture(&data) {
            CaptureFormat::Pcap
        } else {
            CaptureFormat::Raw
        });
    load_bytes(
        line,
        data,
        format,
        (cfg.capture_selector(), cfg.source),
        templates,
        header,
        path,
    )
}

fn load_bytes(
    line: LineId,
    data: Vec<u8>,
    format: CaptureFormat,
    (select, source): (Option<SocketAddrV4>, Option<Ipv4Addr>),
    templates: &Arc<Templates>,
    header: PacketHeader,
    path: &Path,
) -> Result<CapturedLine, SourceError> {
    let bad = |message: String| SourceError::Format {
        path: path.to_owned(),
        message,
    };
    match format {
        CaptureFormat::Pcap => {
            let cap = Capture::open(&data).map_err(|e| bad(e.to_string()))?;
            let mut it = cap.datagrams();
            let packets: Vec<(u64, Vec<u8>)> = it
                .by_ref()
                .filter(|d| select.is_none_or(|s| d.dst == s))
                .filter(|d| source.is_none_or(|s| *d.src.ip() == s))
                .map(|d| (d.ts_ns, d.payload.into_owned()))
                .collect();
            let stats = it.stats();
            let mut l = CapturedLine::from_packets(line, packets);
            l.capture_stats = Some(stats);
            Ok(l)
        }
        CaptureFormat::Len32le | CaptureFormat::Block => {
            let ranges = if format == CaptureFormat::Block {
                ranges_of(fastfeed_packet::block_packets(&data))
            } else {
                ranges_of(fastfeed_packet::len32le_packets(&data))
            }
            .map_err(|e| bad(e.to_string()))?;
            Ok(with_sending_times(line, data, ranges, templates, header))
        }
        CaptureFormat::Raw => {
            let mut dec = Decoder::new(templates.clone());
            let ranges: Vec<Range<usize>> = fastfeed_packet::split_at_resets(&mut dec, &data)
                .map_err(|e| bad(e.to_string()))?
                .iter()
                .map(|p| p.offset..p.offset + p.bytes.len())
                .collect();
            Ok(with_sending_times(line, data, ranges, templates, header))
        }
    }
}

/// Where each framed packet lies in the file; the first framing error ends it.
fn ranges_of<'a>(
    packets: impl Iterator<Item = Result<fastfeed_packet::Packet<'a>, fastfeed_packet::FramingError>>,
) -> Result<Vec<Range<usize>>, fastfeed_packet::FramingError> {
    packets
        .map(|p| p.map(|p| p.offset..p.offset + p.bytes.len()))
        .collect()
}

/// Times packets by the SendingTime of their first message that has one; a packet without
/// one takes its predecessor's time.
fn with_sending_times(
    line: LineId,
    data: Vec<u8>,
    ranges: Vec<Range<usize>>,
    templates: &Arc<Templates>,
    header: PacketHeader,
) -> CapturedLine {
    let mut times = SendingTimes::new(templates, header);
    let packets = ranges
        .into_iter()
        .map(|range| CapturedPacket {
            ts_ns: times.stamp(&data[range.clone()]),
            range,
        })
        .collect();
    CapturedLine {
        line,
        data,
        packets,
        capture_stats: None,
    }
}

/// The times of a line's packets that carry none of their own (`len32le` and raw files):
/// the SendingTime (52) of each packet's first message that has one, else the time of the
/// packet before, and never earlier than it.
pub(crate) struct SendingTimes {
    normalizer: Normalizer,
    decoder: Decoder,
    header: PacketHeader,
    last: u64,
}

impl SendingTimes {
    pub(crate) fn new(templates: &Arc<Templates>, header: PacketHeader) -> Self {
        SendingTimes {
            normalizer: Normalizer::new(templates, Profile::fix()),
            decoder: Decoder::new(templates.clone()),
            header,
            last: 0,
        }
    }

    /// The time of the next packet, `p`.
    pub(crate) fn stamp(&mut self, p: &[u8]) -> u64 {
        self.normalizer.clear();
        self.decoder.reset();
        let mut pos = self.header.prefix_len().min(p.len());
        while pos < p.len() {
            match self.decoder.decode(&p[pos..], &mut self.normalizer) {
                Ok(k) => pos += k,
                Err(_) => break,
            }
        }
        let t = self
            .normalizer
            .batch()
            .messages
            .iter()
            .find_map(|m| m.sending_time.and_then(sending_time_ns));
        self.last = t.unwrap_or(self.last).max(self.last);
        self.last
    }
}

/// A SendingTime as ns since the epoch: FIX's UTCTimestamp as a FAST integer
/// (YYYYMMDDHHMMSSsss, as MOEX and CME send it), or already ns since the epoch.
pub fn sending_time_ns(v: u64) -> Option<u64> {
    if (10_000_000_000_000_000..100_000_000_000_000_000).contains(&v) {
        let ms = v % 1000;
        let s = (v / 1000) % 100;
        let mi = (v / 100_000) % 100;
        let h = (v / 10_000_000) % 100;
        let d = (v / 1_000_000_000) % 100;
        let mo = (v / 100_000_000_000) % 100;
        let y = v / 10_000_000_000_000;
        if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
            return None;
        }
        let days = days_from_civil(y as i64, mo as i64, d as i64);
        let secs = days * 86_400 + (h * 3600 + mi * 60 + s) as i64;
        return u64::try_from(secs)
            .ok()
            .map(|s| s * 1_000_000_000 + ms * 1_000_000);
    }
    (v >= 1_000_000_000_000_000_000).then_some(v)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The packets of several lines in arrival order: the earliest next packet of any line, the
/// first line on a tie; each line keeps its file order (a capture's records are in the order
/// they arrived, even where a clock stepped back). [`crate::stream::MergedLines`] gives the
/// same order while reading.
pub fn merge(lines: &[CapturedLine]) -> Vec<(usize, usize)> {
    let mut next = vec![0; lines.len()];
    let mut out = Vec::with_capacity(lines.iter().map(|l| l.packets.len()).sum());
    let head = |l: usize, next: &[usize]| lines[l].packets.get(next[l]).map(|p| p.ts_ns);
    while let Some(l) = crate::stream::earliest((0..lines.len()).map(|l| head(l, &next))) {
        out.push((l, next[l]));
        next[l] += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sending_times() {
        // 2013-08-01 14:24:37.941 UTC
        assert_eq!(
            sending_time_ns(20130801142437941),
            Some(1_375_367_077_941_000_000)
        );
        assert_eq!(sending_time_ns(20131301142437941), None);
        assert_eq!(sending_time_ns(12345), None);
        assert_eq!(
            sending_time_ns(1_700_000_000_000_000_000),
            Some(1_700_000_000_000_000_000)
        );
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    #[test]
    fn merge_by_time_then_line() {
        let a = CapturedLine::from_packets(LineId::A, [(10, vec![1]), (30, vec![2])]);
        let b = CapturedLine::from_packets(LineId::B, [(10, vec![3]), (20, vec![4])]);
        assert_eq!(merge(&[a, b]), [(0, 0), (1, 0), (1, 1), (0, 1)]);
    }

    #[test]
    fn merge_keeps_each_line_in_file_order() {
        // Line A's clock steps back between its packets: they stay in file order.
        let a = CapturedLine::from_packets(LineId::A, [(30, vec![1]), (10, vec![2])]);
        let b = CapturedLine::from_packets(LineId::B, [(20, vec![3])]);
        assert_eq!(merge(&[a, b]), [(1, 0), (0, 0), (0, 1)]);
    }
}
