//! Whole messages of every corpus template set and of the simulator's data sets, decoded
//! and encoded through the public codec API, one criterion benchmark per data set.
//! Throughput is in messages: criterion prints time per pass and messages per second.

use std::sync::Arc;

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use fastfeed_codec::{Decoder, Encoder, Message, MessageBuilder, Templates};
use fastfeed_packet::Framing;

fn shared(rel: &str) -> Vec<u8> {
    let path = format!("{}/../../../shared/{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A data set: its templates and its packets, each decoded with fresh dictionaries after
/// skipping `skip` header bytes.
struct Set {
    name: &'static str,
    templates: Arc<Templates>,
    packets: Vec<Vec<u8>>,
    skip: usize,
}

impl Set {
    fn corpus(name: &'static str, xml: &str, data: &str, len32le: bool, limit: usize) -> Set {
        let xml = String::from_utf8(shared(xml)).unwrap();
        let bytes = shared(data);
        let framing = if len32le {
            Framing::Len32Le
        } else {
            Framing::Raw
        };
        let packets = framing
            .packets(&bytes)
            .take(limit)
            .map(|p| p.unwrap().bytes.to_vec())
            .collect();
        Set {
            name,
            templates: fastfeed_codec::parse_templates(&xml).unwrap(),
            packets,
            skip: 0,
        }
    }

    fn simulated(name: &'static str, kind: fastfeed_sim::Kind) -> Set {
        let mut cfg = fastfeed_sim::GenConfig::for_kind(kind);
        cfg.count = 10_000;
        let g = fastfeed_sim::generate(&cfg).unwrap();
        Set {
            name,
            templates: kind.templates(),
            packets: g.packets,
            skip: 4,
        }
    }

    /// Decodes every packet into `h`; returns the messages.
    fn decode<H: fastfeed_codec::Handler>(&self, dec: &mut Decoder, h: &mut H) -> u64 {
        let mut n = 0;
        for p in &self.packets {
            dec.reset();
            let mut pos = self.skip;
            while pos < p.len() {
                pos += dec.decode(&p[pos..], h).unwrap();
                n += 1;
            }
        }
        n
    }

    fn messages(&self) -> Vec<Vec<Message>> {
        let mut dec = Decoder::new(self.templates.clone());
        let mut b = MessageBuilder::new();
        self.packets
            .iter()
            .map(|p| {
                dec.reset();
                let mut out = Vec::new();
                let mut pos = self.skip;
                while pos < p.len() {
                    pos += dec.decode(&p[pos..], &mut b).unwrap();
                    out.extend(b.take());
                }
                out
            })
            .collect()
    }
}

fn sets() -> Vec<Set> {
    use fastfeed_sim::Kind;
    vec![
        Set::corpus(
            "mfast complex",
            "corpus/mfast-complex/example.xml",
            "corpus/mfast-complex/complex30000.dat",
            true,
            3_000,
        ),
        Set::corpus(
            "moex increment",
            "corpus/moex-forts-2013/templates.xml",
            "corpus/moex-forts-2013/increment_a.dat",
            false,
            usize::MAX,
        ),
        Set::corpus(
            "moex snapshot",
            "corpus/moex-forts-2013/templates.xml",
            "corpus/moex-forts-2013/snapshot.dat",
            false,
            usize::MAX,
        ),
        Set::corpus(
            "openfast fpl",
            "corpus/openfast-fpl/FASTTestTemplate.xml",
            "corpus/openfast-fpl/messages.fast",
            false,
            usize::MAX,
        ),
        Set::simulated("sim simple", Kind::Simple),
        Set::simulated("sim complex", Kind::Complex),
    ]
}

fn bench(c: &mut Criterion) {
    for set in sets() {
        let mut dec = Decoder::new(set.templates.clone());
        let count = set.decode(&mut dec, &mut ());
        let msgs = set.messages();
        let mut g = c.benchmark_group(set.name);
        g.throughput(Throughput::Elements(count));
        g.bench_function("decode", |b| {
            b.iter(|| black_box(set.decode(&mut dec, &mut ())))
        });
        g.bench_function("decode to Message", |b| {
            let mut mb = MessageBuilder::new();
            b.iter(|| black_box(set.decode(&mut dec, &mut mb)))
        });
        let mut enc = Encoder::new(set.templates.clone());
        let mut out = Vec::with_capacity(1 << 16);
        g.bench_function("encode", |b| {
            b.iter(|| {
                for packet in &msgs {
                    enc.reset();
                    out.clear();
                    for m in packet {
                        enc.encode(m, &mut out).unwrap();
                    }
                }
                black_box(out.len())
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
