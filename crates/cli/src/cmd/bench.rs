//! `fastfeed bench`: decode or encode a whole file held in memory, several passes, and report
//! per-message and per-entry times and throughput (min and median over the passes), then
//! what the file holds per template.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use fastfeed_codec::{Decoder, Encoder, Handler, Message, MessageBuilder, Templates};
use fastfeed_net::affinity::cores;

use super::bench_threads::{self, Jobs};
use crate::out::outln;
use crate::tally::Tally;
use crate::{input, FramingArgs};

#[derive(Clone, Copy, ValueEnum)]
pub enum What {
    /// Time decoding (the empty handler: decode only).
    Decode,
    /// Time encoding messages decoded from the file.
    Encode,
}

#[derive(Args)]
pub struct BenchArgs {
    /// What to time.
    pub what: What,
    #[command(flatten)]
    pub framing: FramingArgs,
    /// Passes over the whole file.
    #[arg(long, default_value_t = 11, value_parser = at_least_one)]
    pub passes: usize,
    /// Threads, each with its own decoder and dictionaries, taking runs of about 64 KiB of
    /// packets as they finish the last (the packets must be independent: dictionaries reset
    /// per packet, or `--by-channel`). A pass is timed from its start to the end of its last
    /// thread.
    #[arg(long, default_value_t = 1, value_parser = at_least_one)]
    pub threads: usize,
    /// Encode only: decode this many packets into messages (this many messages of a `raw`
    /// stream, which is one packet), time their encoding, and go on to the next window, so
    /// the messages are fresh in cache as a transcoder's would be.
    /// Without it the whole file is decoded first: then encoding also waits on memory,
    /// walking tens of megabytes of message trees.
    #[arg(long, value_parser = at_least_one)]
    pub window: Option<usize>,
    /// Decode only: time the decoder generated at build time from exactly this template
    /// file (the template sets of `fastfeed-generated`) instead of the interpreter.
    #[arg(long)]
    pub generated: bool,
    /// Leave the threads where the scheduler puts them, instead of each on a core of its
    /// own (when there are no more threads than cores).
    #[arg(long)]
    pub no_pin: bool,
    /// Decode only: give each thread whole channels, as a feed handler decoding a channel
    /// per thread would, instead of runs of the file's packets. A packet's channel is the
    /// 2-byte little-endian number after its 4-byte sequence number (`generate opra`); the
    /// threads take the busiest channel left as they finish one.
    #[arg(long)]
    pub by_channel: bool,
    /// Decode only: each thread one fixed share, decided before the passes (an equal run of
    /// packets, or with `--by-channel` channels dealt out to even the packets), as a feed
    /// handler's fixed channel-to-thread split: a slower core then holds back every pass.
    #[arg(long = "static")]
    pub fixed: bool,
    /// The FAST data file.
    pub input: PathBuf,
}

fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// Counts messages, sequence entries, and per template messages and bytes.
#[derive(Default)]
struct Counter {
    messages: u64,
    entries: u64,
    template: u32,
    tally: Tally,
}

impl Handler for Counter {
    fn begin_message(&mut self, t: &fastfeed_codec::Template) {
        self.template = t.id;
    }
    fn end_message(&mut self) {
        self.messages += 1;
    }
    fn begin_element(&mut self, _: u32) {
        self.entries += 1;
    }
}

pub(super) struct Work<'a> {
    templates: Arc<Templates>,
    /// The template XML, to find the generated decoder by.
    xml: String,
    packets: Vec<&'a [u8]>,
    skip: usize,
    reset: bool,
}

/// What a decoding pass runs: the interpreter, or the decoder generated for the templates.
pub(super) enum Timed<'d> {
    Interpreter(Decoder),
    Generated(Box<dyn fastfeed_generated::PacketDecoder<'d> + Send + 'd>),
}

impl<'a> Work<'a> {
    /// A decoder of its own for a timing thread.
    pub(super) fn timed(&self, generated: bool) -> Timed<'a> {
        match generated
            .then(|| fastfeed_generated::decoder_for(&self.xml))
            .flatten()
        {
            Some(g) => Timed::Generated(g),
            None => Timed::Interpreter(Decoder::new(self.templates.clone())),
        }
    }

    /// Decodes a share of the packets with `t`, the empty handler for the interpreter;
    /// returns messages decoded. Every pass starts with fresh dictionaries, as the stream
    /// does: a `raw` stream's values chain from message to message, and a second pass
    /// decoded on from the first one's state would not give the file's values (or would
    /// overflow a delta).
    pub(super) fn run(&self, t: &mut Timed<'a>, packets: &[&'a [u8]]) -> Result<u64> {
        match t {
            Timed::Interpreter(dec) => {
                dec.reset();
                self.decode(dec, packets, &mut ())
            }
            Timed::Generated(g) => {
                let mut n = 0;
                for (i, p) in packets.iter().enumerate() {
                    n += g.decode_packet(p, self.skip, self.reset || i == 0)?;
                }
                Ok(n)
            }
        }
    }

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

    /// A single packet that is a stream of messages (no reset, one packet: a `raw` file) as
    /// one packet per message, so encode windows can count messages; any other input as it is.
    fn by_message(self) -> Result<Work<'a>> {
        let [p] = self.packets[..] else {
            return Ok(self);
        };
        if self.reset {
            return Ok(self);
        }
        let mut dec = Decoder::new(self.templates.clone());
        let mut pos = self.skip.min(p.len());
        let mut packets = Vec::new();
        while pos < p.len() {
            let n = dec.decode(&p[pos..], &mut ())?;
            packets.push(&p[pos..pos + n]);
            pos += n;
        }
        Ok(Work {
            packets,
            skip: 0,
            ..self
        })
    }

    /// Decodes every packet once, untimed, counting per template.
    fn count(&self) -> Result<Counter> {
        let mut dec = Decoder::new(self.templates.clone());
        let mut c = Counter::default();
        for p in &self.packets {
            if self.reset {
                dec.reset();
            }
            let mut pos = self.skip.min(p.len());
            while pos < p.len() {
                let n = dec.decode(&p[pos..], &mut c)?;
                c.tally.message(c.template, n);
                pos += n;
            }
        }
        Ok(c)
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
    if a.window.is_some() && matches!(a.what, What::Decode) {
        bail!("--window applies to `bench encode` only: decode has no windows");
    }
    let templates = input::templates(&a.framing.templates, !a.framing.no_scp)?;
    let xml = input::text(&a.framing.templates)?;
    if a.generated {
        if !matches!(a.what, What::Decode) {
            bail!("--generated times decoding only");
        }
        if fastfeed_generated::decoder_for(&xml).is_none() {
            let known: Vec<&str> = fastfeed_generated::SETS.iter().map(|(n, _)| *n).collect();
            bail!(
                "no decoder was generated from {} (generated: {})",
                a.framing.templates.display(),
                known.join(", ")
            );
        }
    }
    let data = input::bytes(&a.input)?;
    let mut spill = Vec::new();
    let packets: Vec<&[u8]> = input::packets(&a.framing, &data, &mut spill)?
        .into_iter()
        .map(|p| p.map(|p| p.bytes))
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading the packets of {}", a.input.display()))?;
    let w = Work {
        templates,
        xml,
        packets,
        skip: a.framing.skip_header,
        reset: a.framing.reset_each_packet,
    };
    let bytes: usize = w
        .packets
        .iter()
        .map(|p| p.len().saturating_sub(w.skip))
        .sum();
    let counter = w
        .count()
        .with_context(|| format!("decoding {} once before timing", a.input.display()))?;
    if counter.messages == 0 {
        bail!("no messages in {}", a.input.display());
    }
    // Packets are the unit of work: no more threads than packets (a `raw` file is one).
    let threads = a.threads.min(w.packets.len());
    if threads < a.threads {
        eprintln!(
            "{} packet(s): running {threads} thread(s), not {}",
            w.packets.len(),
            a.threads
        );
    }
    let cores = cores();
    if threads > cores {
        eprintln!(
            "warning: {threads} threads on {cores} cores: the threads take turns, so the \
             figures measure the scheduler as much as the decoder"
        );
    }
    // A raw stream is one packet: its encode windows are of messages instead, each cut out
    // of the stream where it ends (the dictionaries run on across them, as in the stream).
    let w = if matches!(a.what, What::Encode) && a.window.is_some() && threads == 1 {
        w.by_message()?
    } else {
        w
    };
    if a.window.is_some_and(|n| n >= w.packets.len()) {
        eprintln!(
            "note: --window {} covers all {} packets: one window, as without --window",
            a.window.unwrap_or(0),
            w.packets.len()
        );
    }
    if a.by_channel && !matches!(a.what, What::Decode) {
        bail!("--by-channel applies to `bench decode` only");
    }
    if a.fixed && !matches!(a.what, What::Decode) {
        bail!("--static applies to `bench decode` only");
    }
    // A core per thread where there are enough, unless told not to.
    let pin = |threads: usize| !a.no_pin && threads > 1 && threads <= cores;
    let (times, threads) = match a.what {
        What::Decode => {
            let jobs = decode_jobs(&w, threads, a.by_channel, a.fixed)?;
            let times = bench_threads::time_decode(
                &w,
                &jobs,
                a.passes,
                counter.messages,
                a.generated,
                pin(jobs.threads),
            )?;
            (times, jobs.threads)
        }
        What::Encode => (
            time_encode(&w, threads, a.passes, a.window, cores, pin(threads))?,
            threads,
        ),
    };
    report(&times, counter.messages, counter.entries, bytes, threads)?;
    counter
        .tally
        .print(&w.templates, &mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}

/// The decode jobs: whole channels (said on stderr), or runs of packets.
fn decode_jobs<'a>(
    w: &Work<'a>,
    threads: usize,
    by_channel: bool,
    fixed: bool,
) -> Result<Jobs<'a>> {
    if !by_channel {
        return Ok(Jobs::runs(&w.packets, threads, fixed));
    }
    let (jobs, channels) = Jobs::channels(&w.packets, threads, fixed)?;
    eprintln!(
        "{channels} channels on {} thread(s){}: {} packets",
        jobs.threads,
        if jobs.dynamic {
            ", each taking the busiest channel left as it finishes one"
        } else {
            ""
        },
        jobs.sizes()
    );
    Ok(jobs)
}

fn time_encode(
    w: &Work,
    threads: usize,
    passes: usize,
    window: Option<usize>,
    cores: usize,
    pin: bool,
) -> Result<Vec<f64>> {
    let parts = bench_threads::shares(&w.packets, threads);
    // With the whole file as one window, decode it once, outside the passes.
    let whole: Option<Vec<Vec<Vec<Message>>>> = window
        .is_none()
        .then(|| {
            parts
                .iter()
                .map(|part| w.messages(&mut Decoder::new(w.templates.clone()), part))
                .collect::<Result<_>>()
        })
        .transpose()?;
    let window = window.unwrap_or(usize::MAX);
    // Each share keeps its encoder, decoder and buffer across passes, reset at each pass's
    // start, as decode keeps its decoder: the dictionaries' string buffers then allocate
    // once, not in every timed pass.
    let mut kept: Vec<EncodeShare> = parts.iter().map(|_| EncodeShare::new(w)).collect();
    let mut times = Vec::new();
    for pass in 0..passes {
        let wall = Instant::now();
        let per_thread: Vec<f64> = if parts.len() == 1 {
            // One share runs here, as decode's does: a thread started for each pass would
            // time a cold core on small inputs (three messages take under a microsecond).
            vec![kept[0].run(w, parts[0], whole.as_ref().map(|v| &v[0]), window)?]
        } else {
            std::thread::scope(|s| -> Result<Vec<f64>> {
                let handles: Vec<_> = parts
                    .iter()
                    .zip(kept.iter_mut())
                    .enumerate()
                    .map(|(i, (part, k))| {
                        let whole = whole.as_ref().map(|v| &v[i]);
                        s.spawn(move || {
                            // A core each, as decode's threads: two threads the scheduler
                            // put on one core timed each other's windows (2.0x to 1.1x
                            // from pass to pass on two cores).
                            if pin {
                                // Said once, as decode's threads say it, not every pass.
                                if let Err(e) = fastfeed_net::affinity::pin_current_thread(i) {
                                    if pass == 0 {
                                        eprintln!("warning: thread {i} not pinned to a core: {e}");
                                    }
                                }
                            }
                            k.run(w, part, whole, window)
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("encode thread"))
                    .collect()
            })?
        };
        let wall = wall.elapsed().as_secs_f64();
        times.push(match (&whole, parts.len()) {
            (_, 1) => per_thread[0],
            // The wall time of the pass (thread starts included: a few microseconds).
            (Some(_), _) => wall,
            (None, _) => {
                // Windows interleave decoding (untimed) with encoding (timed), so no wall time
                // isolates encoding. The encoding took at least its slowest thread, and at
                // least all threads' encoding time spread over the cores there are.
                let slowest = per_thread.iter().copied().fold(0.0, f64::max);
                let spread = per_thread.iter().sum::<f64>() / parts.len().min(cores) as f64;
                slowest.max(spread)
            }
        });
    }
    Ok(times)
}

/// What encoding one share keeps from pass to pass.
struct EncodeShare {
    enc: Encoder,
    dec: Decoder,
    out: Vec<u8>,
}

impl EncodeShare {
    fn new(w: &Work) -> Self {
        EncodeShare {
            enc: Encoder::new(w.templates.clone()),
            dec: Decoder::new(w.templates.clone()),
            out: Vec::with_capacity(1 << 16),
        }
    }

    /// Encodes one share of the packets, window by window (or the whole share's messages,
    /// decoded before the passes), from fresh dictionaries; returns the seconds spent
    /// encoding.
    fn run(
        &mut self,
        w: &Work,
        part: &[&[u8]],
        whole: Option<&Vec<Vec<Message>>>,
        window: usize,
    ) -> Result<f64> {
        self.enc.reset();
        self.dec.reset();
        let mut spent = 0.0;
        for chunk in part.chunks(window.min(part.len()).max(1)) {
            let fresh;
            let msgs = match whole {
                Some(all) => all,
                None => {
                    fresh = w.messages(&mut self.dec, chunk)?;
                    &fresh
                }
            };
            let start = Instant::now();
            for packet in msgs {
                if w.reset {
                    self.enc.reset();
                }
                self.out.clear();
                for m in packet {
                    self.enc.encode(m, &mut self.out)?;
                }
            }
            spent += start.elapsed().as_secs_f64();
            if whole.is_some() {
                break;
            }
        }
        Ok(spent)
    }
}

fn report(times: &[f64], messages: u64, entries: u64, bytes: usize, threads: usize) -> Result<()> {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let min = sorted[0];
    let median = sorted[sorted.len() / 2];
    // Whether integers were gathered with `pext` (the CPU's and FASTFEED_PEXT's answer), so
    // that a figure says which way it was taken.
    let pext = if fastfeed_codec::fast_pext() {
        "yes"
    } else {
        "no"
    };
    outln!(
        "messages {messages}  bytes {bytes}  entries {entries}  passes {}  threads {threads}  pext {pext}",
        times.len()
    );
    outln!(
        "{:<8} {:>10} {:>10} {:>10} {:>12}",
        "",
        "ns/msg",
        "ns/entry",
        "MB/s",
        "msg/s"
    );
    for (name, t) in [("min", min), ("median", median)] {
        let ns = t * 1e9;
        let per_entry = if entries > 0 {
            ns / entries as f64
        } else {
            0.0
        };
        outln!(
            "{name:<8} {:>10.1} {:>10.1} {:>10.1} {:>12.0}",
            ns / messages as f64,
            per_entry,
            bytes as f64 / t / 1e6,
            messages as f64 / t
        );
    }
    Ok(())
}
