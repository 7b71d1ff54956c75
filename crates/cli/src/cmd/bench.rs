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
    let threads = a.threads.max(1);
    let times = match a.what {
        What::Decode => time_decode(&w, threads, a.passes.max(1), counter.messages)?,
        What::Encode => time_encode(&w, threads, a.passes.max(1))?,
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
    let mut decoders: Vec<Decoder> = parts
        .iter()
        .map(|_| Decoder::new(w.templates.clone()))
        .collect();
    let mut times = Vec::new();
    for _ in 0..passes {
        let start = Instant::now();
        let total: u64 = std::thread::scope(|s| {
            let handles: Vec<_> = parts
                .iter()
                .zip(decoders.iter_mut())
                .map(|(part, dec)| s.spawn(move || w.decode(dec, part, &mut ())))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("decode thread").unwrap_or(0))
                .sum()
        });
        times.push(start.elapsed().as_secs_f64());
        if total != expect {
            bail!("decoded {total} messages, expected {expect}: are the packets independent?");
        }
    }
    Ok(times)
}

fn time_encode(w: &Work, threads: usize, passes: usize) -> Result<Vec<f64>> {
    // Decode once into owned messages, per packet, then time only the encoding.
    let mut dec = Decoder::new(w.templates.clone());
    let mut b = MessageBuilder::new();
    let mut per_packet: Vec<Vec<Message>> = Vec::with_capacity(w.packets.len());
    for p in &w.packets {
        if w.reset {
            dec.reset();
        }
        let mut msgs = Vec::new();
        let mut pos = w.skip.min(p.len());
        while pos < p.len() {
            pos += dec.decode(&p[pos..], &mut b)?;
            msgs.extend(b.take());
        }
        per_packet.push(msgs);
    }
    let parts = shares(&per_packet, threads);
    let mut times = Vec::new();
    for _ in 0..passes {
        let start = Instant::now();
        std::thread::scope(|s| -> Result<()> {
            let handles: Vec<_> = parts
                .iter()
                .map(|part| {
                    s.spawn(move || -> Result<()> {
                        let mut enc = Encoder::new(w.templates.clone());
                        let mut out = Vec::with_capacity(1 << 16);
                        for msgs in *part {
                            if w.reset {
                                enc.reset();
                            }
                            out.clear();
                            for m in msgs {
                                enc.encode(m, &mut out)?;
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            for h in handles {
                h.join().expect("encode thread")?;
            }
            Ok(())
        })?;
        times.push(start.elapsed().as_secs_f64());
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
