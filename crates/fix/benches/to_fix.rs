//! FAST -> FIX text speed on one core, against decoding alone, over the corpus and the
//! simulator's data held in memory. `cargo bench -p fastfeed-fix --bench to_fix [-- PASSES]`.

use std::sync::Arc;

use fastfeed_codec::{Decoder, Templates};
use fastfeed_fix::{FixOptions, FixWriter};
use fastfeed_packet::Framing;

/// Thread CPU time: the machine is shared, a pass's wall time is not its core's.
fn cpu_s() -> f64 {
    fastfeed_stats::thread_cpu_seconds()
}

fn corpus(p: &str) -> String {
    format!("{}/../../../shared/corpus/{p}", env!("CARGO_MANIFEST_DIR"))
}

struct Set {
    name: &'static str,
    templates: Arc<Templates>,
    /// Packets, headers removed.
    packets: Vec<Vec<u8>>,
    reset_each: bool,
}

fn file_set(name: &'static str, xml: &str, dat: &str, framing: Framing, reset_each: bool) -> Set {
    let templates =
        fastfeed_codec::parse_templates(&std::fs::read_to_string(corpus(xml)).unwrap()).unwrap();
    let data = std::fs::read(corpus(dat)).unwrap();
    let packets = framing
        .packets(&data)
        .map(|p| p.unwrap().bytes.to_vec())
        .collect();
    Set {
        name,
        templates,
        packets,
        reset_each,
    }
}

fn sim_set(name: &'static str, cfg: fastfeed_sim::GenConfig) -> Set {
    let g = fastfeed_sim::generate(&cfg).unwrap();
    Set {
        name,
        templates: cfg.kind.templates(),
        packets: g.packets.iter().map(|p| p[4..].to_vec()).collect(),
        reset_each: true,
    }
}

/// Counts values: what the decoder's callbacks cost with a handler that does nothing else.
#[derive(Default)]
struct Count(u64);

impl fastfeed_codec::Handler for Count {
    fn value(&mut self, _: &fastfeed_codec::template::Instr, _: fastfeed_codec::FieldValue<'_>) {
        self.0 += 1;
    }
}

fn count_pass(set: &Set, dec: &mut Decoder, c: &mut Count) {
    dec.reset();
    for p in &set.packets {
        if set.reset_each {
            dec.reset();
        }
        let mut pos = 0;
        while pos < p.len() {
            pos += dec.decode(&p[pos..], c).unwrap();
        }
    }
}

/// One pass: messages, FIX bytes.
fn pass(set: &Set, dec: &mut Decoder, w: Option<&mut FixWriter>) -> (u64, u64) {
    let (mut msgs, mut fix) = (0u64, 0u64);
    dec.reset();
    match w {
        Some(w) => {
            for p in &set.packets {
                if set.reset_each {
                    dec.reset();
                }
                let mut pos = 0;
                while pos < p.len() {
                    pos += dec.decode(&p[pos..], w).unwrap();
                    if let Some(t) = w.finish().unwrap() {
                        fix += t.len() as u64;
                    }
                    msgs += 1;
                }
            }
        }
        None => {
            for p in &set.packets {
                if set.reset_each {
                    dec.reset();
                }
                let mut pos = 0;
                while pos < p.len() {
                    pos += dec.decode(&p[pos..], &mut ()).unwrap();
                    msgs += 1;
                }
            }
        }
    }
    (msgs, fix)
}

fn load(name: &'static str) -> Set {
    let moex = "moex-forts-2013/templates.xml";
    match name {
        "MOEX increment_a" => file_set(
            name,
            moex,
            "moex-forts-2013/increment_a.dat",
            Framing::Raw,
            false,
        ),
        "MOEX snapshot" => file_set(
            name,
            moex,
            "moex-forts-2013/snapshot.dat",
            Framing::Raw,
            false,
        ),
        "mFAST complex30000" => file_set(
            name,
            "mfast-complex/example.xml",
            "mfast-complex/complex30000.dat",
            Framing::Len32Le,
            true,
        ),
        "simulator simple" => sim_set(name, fastfeed_sim::GenConfig::simple()),
        _ => sim_set(name, fastfeed_sim::GenConfig::complex()),
    }
}

fn main() {
    // Arguments: a number of passes, words that pick data sets by name (`complex30000`),
    // `--only-fix` or `--only-decode` (for `perf stat`).
    let args: Vec<String> = std::env::args().skip(1).collect();
    let passes: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(21);
    let picks: Vec<&String> = args
        .iter()
        .filter(|a| a.parse::<usize>().is_err() && !a.starts_with("--"))
        .collect();
    let run_decode = !args.iter().any(|a| a == "--only-fix");
    let run_fix = !args.iter().any(|a| a == "--only-decode");
    let names = [
        "MOEX increment_a",
        "MOEX snapshot",
        "mFAST complex30000",
        "simulator simple",
        "simulator complex",
    ];
    let sets: Vec<Set> = names
        .into_iter()
        .filter(|n| picks.is_empty() || picks.iter().any(|p| n.contains(p.as_str())))
        .map(load)
        .collect();
    println!(
        "{:<20} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9}",
        "data",
        "messages",
        "FIX bytes",
        "decode ns",
        "+calls ns",
        "->FIX ns",
        "->FIX M/s",
        "FIX MB/s"
    );
    for set in &sets {
        let mut dec = Decoder::new(set.templates.clone());
        let mut w = FixWriter::new(&set.templates, &FixOptions::default());
        let (mut best_dec, mut best_fix, mut best_count) = (f64::MAX, f64::MAX, f64::MAX);
        let mut counts = (0, 0);
        for _ in 0..passes {
            if run_decode {
                let t = cpu_s();
                counts.0 = pass(set, &mut dec, None).0;
                best_dec = best_dec.min(cpu_s() - t);
            }
            if run_decode {
                let t = cpu_s();
                count_pass(set, &mut dec, &mut Count::default());
                best_count = best_count.min(cpu_s() - t);
            }
            if run_fix {
                let t = cpu_s();
                counts = pass(set, &mut dec, Some(&mut w));
                best_fix = best_fix.min(cpu_s() - t);
            }
        }
        let (msgs, fix) = counts;
        let ns = |s: f64| s * 1e9 / msgs as f64;
        println!(
            "{:<20} {:>8} {:>10} {:>10.1} {:>10.1} {:>10.1} {:>10.2} {:>9.0}",
            set.name,
            msgs,
            fix,
            ns(best_dec),
            ns(best_count),
            ns(best_fix),
            msgs as f64 / best_fix / 1e6,
            fix as f64 / best_fix / 1e6
        );
    }
}
