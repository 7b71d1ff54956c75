//! Table building against decoding alone, on the files issue 11's speed target names
//! (complex30000 and the MOEX capture): each pair decodes the same bytes, read from memory
//! through the same stream reader, once with the empty handler and once into a table, so
//! the ratio of the two is what `read_table` keeps of the decoder's speed (less Python and
//! file reading). Throughput is in FAST bytes, as `fastfeed bench decode` counts them.

use std::io::Cursor;
use std::sync::Arc;

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use fastfeed_arrow::{BatchReader, OnError, TableBuilder, TableOptions};
use fastfeed_codec::{Decoder, Templates};
use fastfeed_packet::{Framing, PacketOptions, StreamDecoder};

fn shared(rel: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../../shared/corpus/{rel}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

struct Set {
    name: &'static str,
    templates: Arc<Templates>,
    data: Vec<u8>,
    framing: Framing,
    /// FAST bytes: the data less any length prefixes.
    fast_bytes: u64,
    template: &'static str,
}

impl Set {
    fn new(name: &'static str, xml: &str, data: &str, framing: Framing, tpl: &'static str) -> Set {
        let xml = String::from_utf8(shared(xml)).unwrap();
        let data = shared(data);
        let fast_bytes = framing
            .packets(&data)
            .map(|p| p.unwrap().bytes.len() as u64)
            .sum();
        Set {
            name,
            templates: fastfeed_codec::parse_templates(&xml).unwrap(),
            data,
            framing,
            fast_bytes,
            template: tpl,
        }
    }

    fn stream(&self) -> StreamDecoder<Cursor<&[u8]>> {
        StreamDecoder::new(
            Cursor::new(&self.data[..]),
            self.framing,
            Decoder::new(self.templates.clone()),
            PacketOptions::default(),
        )
    }

    /// Decodes the whole input with the empty handler; returns the messages.
    fn decode_only(&self) -> usize {
        let mut s = self.stream();
        let mut n = 0;
        while let Some(r) = s.next_step(&mut (), |_| true) {
            n += r.unwrap();
        }
        n
    }

    /// Decodes the whole input into a table's batches; returns the rows.
    fn table(&self, entries: Option<&str>) -> usize {
        let opts = TableOptions {
            entries: entries.map(Into::into),
            ..Default::default()
        };
        let t = self.templates.by_name(self.template).unwrap();
        let b = TableBuilder::new(t, &opts).unwrap();
        BatchReader::new(self.stream(), b, OnError::Stop)
            .unwrap()
            .map(|b| b.unwrap().num_rows())
            .sum()
    }
}

fn sets() -> Vec<Set> {
    vec![
        Set::new(
            "complex30000",
            "mfast-complex/example.xml",
            "mfast-complex/complex30000.dat",
            Framing::Len32Le,
            "MarketData",
        ),
        Set::new(
            "moex_increment_a",
            "moex-forts-2013/templates.xml",
            "moex-forts-2013/increment_a.dat",
            Framing::Raw,
            "DefaultIncrementalRefreshMessage",
        ),
    ]
}

fn tables(c: &mut Criterion) {
    for set in sets() {
        let mut g = c.benchmark_group(set.name);
        g.throughput(Throughput::Bytes(set.fast_bytes));
        g.bench_function("decode_only", |b| b.iter(|| black_box(set.decode_only())));
        g.bench_function("table_entries", |b| {
            b.iter(|| black_box(set.table(Some("MDEntries"))))
        });
        g.bench_function("table_messages", |b| b.iter(|| black_box(set.table(None))));
        g.finish();
    }
}

criterion_group!(benches, tables);
criterion_main!(benches);
