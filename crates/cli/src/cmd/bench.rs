//! `fastfeed bench`: decode or encode a whole file held in memory, several passes, and report
//! per-message and per-entry times and throughput (min and median over the passes).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use fastfeed_codec::{Decoder, Encoder, Handler, Message, MessageBuilder, Templates};

use crate::{input, FramingArgs};

#[derive(Clone, Copy, ValueEnum)]
pub enum What {
    Decode,
    Encode,
}

#[derive(Args)]
pub struct BenchArgs {
    pub what: What,
    #[command(flatten)]
    pub framing: FramingArgs,
    /// Passes over the whole file.
    #[arg(long, default_value_t = 11)]
    pub passes: usize,
    /// Threads, each decoding its own share of the packets with its own dictionaries (the
    /// packets must be independent: dictionaries reset per packet, or one channel per thread).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Encode only: decode this many packets into messages, time their encoding, and go on
    /// to the next window, so the messages are fresh in cache as a transcoder's would be.
    /// 0 decodes the whole file first: then encoding also waits on memory, walking tens of
    /// megabytes of message trees.
    #[arg(long, default_value_t = 0)]
    pub window: usize,
    pub input: PathBuf,
}

/// Counts messages and sequence entries.
#[derive(Default)]
struct Counter {
    messages: u64,
    entries: u64,
}

impl Handler for Counter {
    fn end_message(&mut self) {
        self.messages += 1;
    }
    fn begin_element(&mut self, _: u32) {
        self.entries += 1;
    }
}

struct Work<'a> {
    templates: Arc<Templates>,
    packets: Vec<&'a [u8]>,
    skip: usize,
    reset: bool,
}

impl Work<'_> {
    /// The packets decoded into owned messages, packet by packet.
    fn messages(&self, dec: &mut Decoder, packets: &[&[u8]]) -> Result<Vec<Vec<Message>>> {
        let mut b = MessageBuilder::new();
        let mut out = Vec::with_capacity(packets.len());
        for p in packets {
            if self.reset {
                dec.reset();
            }
            let mut msgs = Vec::new();
            let mut pos = self.skip.min(p.len());
            while pos < p.len() {
                pos += dec.decode(&p[pos..], &mut b)?;
                msgs.extend(b.take());
            }
            out.push(msgs);
        }
        Ok(out)
    }

    /// Decodes a share of the packets with `h`; returns messages decoded.
    fn decode<H: Handler>(&self, dec: &mut Decoder, packets: &[&[u8]], h: &mut H) -> Result<u64> {
        let mut n = 0;
        for p in packets {
            if self.reset {
                dec.reset();
            }
            let mut pos = self.skip.min(p.len());
            while pos < p.len() {
                pos += dec.decode(&p[pos..], h)?;
                n += 1;
            }
        }
        Ok(n)
    }
}

pub fn run(a: BenchArgs) -> Result<ExitCode> {
    let templates = input::templates(&a.framing.templates)?;
    let data = input::bytes(&a.input)?;
    let packets: Vec<&[u8]> = a
        .framing
        .framing
        .packets(&data)
        .map(|p| p.map(|p| p.bytes))
        .collect::<Result<_, _>>()?;
    let w = Work {
        templates,
        packets,
        skip: a.framing.skip_header,
        reset: a.framing.reset_each_packet,
    };
    let bytes: usize = w
        .packets
        .iter()
        .map(|p| p.len().saturating_sub(w.skip))
        .sum();
    let mut counter = Counter::default();
    w.decode(
        &mut Decoder::new(w.templates.clone()),
        &w.packets,
        &mut counter,
    )?;
    if counter.messages == 0 {
        bail!("no messages in the input");
    }
    // Packets are the unit of work: no more threads than packets (a `raw` file is one).
    let threads = a.threads.max(1).min(w.packets.len());
    if threads < a.threads {
        eprintln!(
            "{} packet(s): running {threads} thread(s), not {}",
            w.packets.len(),
            a.threads
        );
    }
    let times = match a.what {
        What::Decode => time_decode(&w, threads, a.passes.max(1), counter.messages)?,
        What::Encode => time_encode(&w, threads, a.passes.max(1), a.window)?,
    };
    report(&times, counter.messages, counter.entries, bytes, threads);
    Ok(ExitCode::SUCCESS)
}

fn shares<T>(items: &[T], n: usize) -> Vec<&[T]> {
    let per = items.len().div_ceil(n).max(1);
    items.chunks(per).collect()
}

fn time_decode(w: &Work, threads: usize, passes: usize, expect: u64) -> Result<Vec<f64>> {
    let parts = shares(&w.packets, threads);
    // The threads live for all passes and start each one together: a thread kept alive
    // stays on its core with its share of the packets in that core's cache, as a feed
    // handler's decoding threads would.
    let start = std::sync::Barrier::new(parts.len());
    let per_thread: Vec<(Vec<f64>, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .iter()
            .map(|part| {
                let start = &start;
                s.spawn(move || -> Result<(Vec<f64>, u64)> {
                    // Each thread makes its own decoder: decoders side by side in one
                    // allocation would share cache lines, and their writes would bounce
                    // those lines between the cores.
                    let mut dec = Decoder::new(w.templates.clone());
                    let mut times = Vec::with_capacity(passes);
                    let mut messages = 0;
                    for _ in 0..passes {
                        start.wait();
                        let t = Instant::now();
                        messages = w.decode(&mut dec, part, &mut ())?;
                        times.push(t.elapsed().as_secs_f64());
                    }
                    Ok((times, messages))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("decode thread"))
            .collect::<Result<_>>()
    })?;
    let total: u64 = per_thread.iter().map(|(_, n)| n).sum();
    if total != expect {
        bail!("decoded {total} messages, expected {expect}: are the packets independent?");
    }
    // A pass takes as long as its slowest thread.
    Ok((0..passes)
        .map(|p| per_thread.iter().map(|(t, _)| t[p]).fold(0.0, f64::max))
        .collect())
}

fn time_encode(w: &Work, threads: usize, passes: usize, window: usize) -> Result<Vec<f64>> {
    let parts = shares(&w.packets, threads);
    let window = if window == 0 { usize::MAX } else { window };
    // With the whole file as one window, decode it once, outside the passes.
    let whole: Option<Vec<Vec<Vec<Message>>>> = (window == usize::MAX)
        .then(|| {
            parts
                .iter()
                .map(|part| w.messages(&mut Decoder::new(w.templates.clone()), part))
                .collect::<Result<_>>()
        })
        .transpose()?;
    let mut times = Vec::new();
    for _ in 0..passes {
        let per_thread: Vec<f64> = std::thread::scope(|s| -> Result<Vec<f64>> {
            let handles: Vec<_> = parts
                .iter()
                .enumerate()
                .map(|(i, part)| {
                    let whole = whole.as_ref().map(|v| &v[i]);
                    s.spawn(move || -> Result<f64> {
                        let mut enc = Encoder::new(w.templates.clone());
                        let mut dec = Decoder::new(w.templates.clone());
                        let mut out = Vec::with_capacity(1 << 16);
                        let mut spent = 0.0;
                        for chunk in part.chunks(window.min(part.len()).max(1)) {
                            let fresh;
                            let msgs = match whole {
                                Some(all) => all,
                                None => {
                                    fresh = w.messages(&mut dec, chunk)?;
                                    &fresh
                                }
                            };
                            let start = Instant::now();
                            for packet in msgs {
                                if w.reset {
                                    enc.reset();
                                }
                                out.clear();
                                for m in packet {
                                    enc.encode(m, &mut out)?;
                                }
                            }
                            spent += start.elapsed().as_secs_f64();
                            if whole.is_some() {
                                break;
                            }
                        }
                        Ok(spent)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("encode thread"))
                .collect()
        })?;
        times.push(per_thread.into_iter().fold(0.0, f64::max));
    }
    Ok(times)
}

fn report(times: &[f64], messages: u64, entries: u64, bytes: usize, threads: usize) {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let min = sorted[0];
    let median = sorted[sorted.len() / 2];
    println!(
        "messages {messages}  bytes {bytes}  entries {entries}  passes {}  threads {threads}",
        times.len()
    );
    println!(
        "{:<8} {:>10} {:>10} {:>10} {:>12}",
        "", "ns/msg", "ns/entry", "MB/s", "msg/s"
    );
    for (name, t) in [("min", min), ("median", median)] {
        let ns = t * 1e9;
        let per_entry = if entries > 0 {
            ns / entries as f64
        } else {
            0.0
        };
        println!(
            "{name:<8} {:>10.1} {:>10.1} {:>10.1} {:>12.0}",
            ns / messages as f64,
            per_entry,
            bytes as f64 / t / 1e6,
            messages as f64 / t
        );
    }
}
