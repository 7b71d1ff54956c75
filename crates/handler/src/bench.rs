//! The whole path against decoding alone, on the same packets in memory, in one run:
//! passes alternate, so both meet the same machine load. The channel synchronizes from the
//! snapshot line first (untimed); then the rest of the incremental packets are timed through
//! the whole path (arbitration, decode, normalize, RptSeq checks, book updates, output) and
//! through a bare decoder. Times are the thread's CPU time: on a busy machine the time
//! the thread waits for a core is not the work's.

use std::hint::black_box;
use std::sync::Arc;

use fastfeed_codec::{Decoder, Handler, Templates};
use fastfeed_events::Profile;
use fastfeed_stats::thread_cpu_seconds as cpu_s;

use crate::channel::Channel;
use crate::output::{BookView, Output};
use crate::settings::{ChannelSettings, LineId};
use crate::source::{merge, CapturedLine};

/// Times of one benchmark run.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchReport {
    /// Incremental packets timed.
    pub packets: u64,
    /// FAST messages in them.
    pub messages: u64,
    /// CPU seconds per pass, decoding only.
    pub decode_s: Vec<f64>,
    /// CPU seconds per pass, the whole path.
    pub whole_s: Vec<f64>,
    /// Book changes handed on per pass.
    pub books: u64,
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

impl BenchReport {
    /// Median ns per message, decoding only and the whole path.
    pub fn ns_per_message(&self) -> (f64, f64) {
        let m = self.messages.max(1) as f64;
        (
            median(&self.decode_s) * 1e9 / m,
            median(&self.whole_s) * 1e9 / m,
        )
    }

    /// Whole path over decoding, by medians and by minima.
    pub fn ratios(&self) -> (f64, f64) {
        (
            median(&self.whole_s) / median(&self.decode_s),
            min(&self.whole_s) / min(&self.decode_s),
        )
    }
}

/// What a publisher would make of a book change: the top of the book, as a plain value.
#[derive(Default)]
struct TopOfBook {
    books: u64,
}

impl Output for TopOfBook {
    #[inline]
    fn book(&mut self, v: &BookView<'_>) {
        self.books += 1;
        let top = (
            v.security,
            v.rpt_seq,
            v.book.best_bid().copied(),
            v.book.best_offer().copied(),
        );
        black_box(top);
    }
}

/// Counts messages.
struct Count(u64);

impl Handler for Count {
    fn end_message(&mut self) {
        self.0 += 1;
    }
}

/// What `handle --bench` times for a channel: line A alone, then (if the channel has a line
/// B) both lines, B's copies arbitrated away.
pub fn runs(lines: Vec<CapturedLine>) -> Vec<(&'static str, Vec<CapturedLine>)> {
    let a_only: Vec<_> = lines
        .iter()
        .filter(|l| l.line != LineId::B)
        .cloned()
        .collect();
    let mut runs = vec![("line A", a_only)];
    if lines.iter().any(|l| l.line == LineId::B) {
        runs.push(("lines A+B", lines));
    }
    runs
}

/// Runs `passes` of each. Lines are given in any order; the snapshot line (if any) serves
/// the untimed start-up.
pub fn bench(
    templates: &Arc<Templates>,
    profile: &Profile,
    settings: &ChannelSettings,
    lines: &[CapturedLine],
    passes: usize,
) -> BenchReport {
    let order = merge(lines);
    let settings = &ChannelSettings {
        line_b: lines.iter().any(|l| l.line == LineId::B),
        ..settings.clone()
    };
    // Where start-up ends: the channel has its books and left the snapshot line.
    let mut ch = Channel::new(templates.clone(), profile.clone(), settings.clone());
    let mut start = order.len();
    for (k, &(l, i)) in order.iter().enumerate() {
        let line = &lines[l];
        ch.on_packet(line.line, line.packet(i), line.packets[i].ts_ns, &mut ());
        if !ch.wants_snapshots() {
            start = k + 1;
            break;
        }
    }
    let timed: Vec<(usize, usize)> = order[start..]
        .iter()
        .copied()
        .filter(|&(l, _)| lines[l].line != LineId::Snapshot)
        .collect();
    let prefix = settings.header.prefix_len();
    let mut report = BenchReport {
        packets: timed.len() as u64,
        messages: 0,
        decode_s: Vec::new(),
        whole_s: Vec::new(),
        books: 0,
    };
    let mut dec = Decoder::new(templates.clone());
    for _ in 0..passes.max(1) {
        let mut count = Count(0);
        let t = cpu_s();
        for &(l, i) in &timed {
            let p = lines[l].packet(i);
            if settings.reset_each_packet {
                dec.reset();
            }
            let mut pos = prefix.min(p.len());
            while pos < p.len() {
                match dec.decode(&p[pos..], &mut count) {
                    Ok(n) => pos += n,
                    Err(_) => break,
                }
            }
        }
        report.decode_s.push(cpu_s() - t);
        report.messages = count.0;

        let mut ch = Channel::new(templates.clone(), profile.clone(), settings.clone());
        for &(l, i) in &order[..start] {
            let line = &lines[l];
            ch.on_packet(line.line, line.packet(i), line.packets[i].ts_ns, &mut ());
        }
        let mut out = TopOfBook::default();
        let t = cpu_s();
        for &(l, i) in &timed {
            let line = &lines[l];
            ch.on_packet(line.line, line.packet(i), line.packets[i].ts_ns, &mut out);
        }
        report.whole_s.push(cpu_s() - t);
        report.books = out.books;
    }
    report
}
