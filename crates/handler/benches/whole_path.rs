//! The feed handler's whole path against decoding alone, on the MOEX capture of
//! `configs/moex-forts.toml`: line A alone, then lines A+B. The same measurement as
//! `fastfeed handle CONFIG --bench`, without building the command-line program.
//! `cargo bench -p fastfeed-handler --bench whole_path [-- PASSES]`.

fn main() {
    // `cargo bench` passes `--bench`; the first number is the pass count.
    let passes = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(11);
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/moex-forts.toml");
    let feed = fastfeed_feed::FeedConfig::load(std::path::Path::new(config)).unwrap();
    for c in fastfeed_handler::setup(&feed).unwrap() {
        for (what, lines) in fastfeed_handler::bench::runs(c.captures().unwrap()) {
            let r = fastfeed_handler::bench::bench(
                &c.templates,
                &c.profile,
                &c.settings,
                &lines,
                passes,
            );
            let (decode, whole) = r.ns_per_message();
            let (by_median, by_min) = r.ratios();
            println!(
                "{what:9}: {} messages, decode {decode:6.1} ns/msg, whole path {whole:6.1} ns/msg, \
                 whole/decode {by_median:.2}x (medians) {by_min:.2}x (minima), {passes} passes",
                r.messages
            );
        }
    }
}
