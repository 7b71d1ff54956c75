//! FAST -> FIX -> FAST on every corpus set whose templates carry FIX tags: each message's
//! re-encoding must equal its original bytes.

use std::sync::Arc;

use fastfeed_codec::{DecodeOptions, Templates};
use fastfeed_fix::{Converter, FixOptions, Step, Verified, SOH};
use fastfeed_packet::Framing;

fn corpus(p: &str) -> String {
    format!("{}/../../../shared/corpus/{p}", env!("CARGO_MANIFEST_DIR"))
}

#[derive(Debug, Default)]
struct Tally {
    fix: usize,
    session: usize,
}

/// Runs every packet through FIX and back; panics at the first message that differs.
fn round_trip(
    ts: Arc<Templates>,
    packets: &[&[u8]],
    skip_header: usize,
    reset_each: bool,
    opts: &FixOptions,
) -> Tally {
    let mut conv = Converter::new(ts, opts, DecodeOptions::default());
    let mut t = Tally::default();
    for (n, p) in packets.iter().enumerate() {
        if reset_each {
            conv.reset();
        }
        let mut pos = skip_header;
        while pos < p.len() {
            let len = match conv.step(&p[pos..]) {
                Ok(Step::Fix { fast_len, text, .. }) => {
                    assert!(text.ends_with(&[opts.sep]));
                    t.fix += 1;
                    fast_len
                }
                Ok(Step::Session { fast_len, .. }) => {
                    t.session += 1;
                    fast_len
                }
                Err(e) => panic!("packet {n} at {pos}: {e}"),
            };
            let original = &p[pos..pos + len];
            let v = conv.verify(original);
            assert_eq!(
                v,
                Verified::Identical,
                "packet {n} at {pos}: {:?}",
                conv.writer().last_text().map(String::from_utf8_lossy)
            );
            pos += len;
        }
    }
    t
}

fn file(p: &str) -> Vec<u8> {
    std::fs::read(corpus(p)).unwrap()
}

fn templates(p: &str) -> Arc<Templates> {
    fastfeed_codec::parse_templates(&std::fs::read_to_string(corpus(p)).unwrap()).unwrap()
}

#[test]
fn moex_forts_round_trips_byte_for_byte() {
    let ts = templates("moex-forts-2013/templates.xml");
    for (f, fix, resets) in [
        ("increment_a.dat", 8_101, 8_101),
        ("snapshot.dat", 9_314, 9_314),
    ] {
        let data = file(&format!("moex-forts-2013/{f}"));
        // One raw stream: a Reset before every message.
        let t = round_trip(ts.clone(), &[&data], 0, false, &FixOptions::default());
        assert_eq!((t.fix, t.session), (fix, resets), "{f}");
    }
}

#[test]
fn mfast_complex30000_round_trips_byte_for_byte() {
    let ts = templates("mfast-complex/example.xml");
    let data = file("mfast-complex/complex30000.dat");
    let packets: Vec<&[u8]> = Framing::Len32Le
        .packets(&data)
        .map(|p| p.unwrap().bytes)
        .collect();
    let pipe = FixOptions {
        sep: b'|',
        ..FixOptions::default()
    };
    // mFAST's encoder resets its dictionaries before every record.
    let t = round_trip(ts, &packets, 0, true, &pipe);
    assert_eq!((t.fix, t.session), (30_001, 0));
}

#[test]
fn simulator_data_round_trips_byte_for_byte() {
    for cfg in [
        fastfeed_sim::GenConfig {
            count: 5_000,
            ..fastfeed_sim::GenConfig::simple()
        },
        fastfeed_sim::GenConfig {
            count: 3_000,
            ..fastfeed_sim::GenConfig::complex()
        },
    ] {
        let g = fastfeed_sim::generate(&cfg).unwrap();
        let packets: Vec<&[u8]> = g.packets.iter().map(Vec::as_slice).collect();
        // Packets start with a 4-byte sequence number; the encoder resets at each.
        let t = round_trip(
            cfg.kind.templates(),
            &packets,
            4,
            true,
            &FixOptions::default(),
        );
        assert_eq!(t.fix, g.messages, "{:?}", cfg.kind);
    }
}

#[test]
fn moex_messages_read_as_fix() {
    let ts = templates("moex-forts-2013/templates.xml");
    let data = file("moex-forts-2013/increment_a.dat");
    let mut conv = Converter::new(ts, &FixOptions::default(), DecodeOptions::default());
    let mut pos = 0;
    let text = loop {
        match conv.step(&data[pos..]).unwrap() {
            Step::Fix { text, .. } => break String::from_utf8(text.to_vec()).unwrap(),
            Step::Session { fast_len, .. } => pos += fast_len,
        }
    };
    let fields: Vec<&str> = text.split(SOH as char).collect();
    assert_eq!(&fields[..3], &["8=FIXT.1.1", fields[1], "35=X"]);
    assert!(fields[1].starts_with("9="));
    // ApplVerID, SenderCompID, MsgSeqNum, SendingTime, then the NoMDEntries count.
    assert!(
        text.contains("\u{1}1128=8\u{1}49=RTS\u{1}34=482727\u{1}52="),
        "{text}"
    );
    assert!(text.contains("\u{1}268="), "{text}");
    assert!(fields[fields.len() - 2].starts_with("10="));
}

#[test]
fn the_fix_trading_community_sample_round_trips_byte_for_byte() {
    // The root element is a single <template>, MsgType X, FIX 5.0 tags.
    let ts = templates("openfast-fpl/FASTTestTemplate.xml");
    let data = file("openfast-fpl/messages.fast");
    let t = round_trip(ts, &[&data], 0, false, &FixOptions::default());
    assert_eq!((t.fix, t.session), (3, 0));
}
