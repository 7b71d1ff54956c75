//! Damage in a `raw` capture costs the packet it hits, not the rest of the file: decoding
//! resumes at the next Reset message that starts a packet (MOEX's template 120).

use std::sync::Arc;

use fastfeed_codec::{Decoder, Message, MessageBuilder, Templates};
use fastfeed_packet::{Framing, PacketDecoder, PacketOptions, PacketSummary, Recovery};

fn corpus(path: &str) -> Vec<u8> {
    let p = format!(
        "{}/../../../shared/corpus/{path}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn moex() -> Arc<Templates> {
    let xml = String::from_utf8(corpus("moex-forts-2013/templates.xml")).unwrap();
    fastfeed_codec::parse_templates(&xml).unwrap()
}

/// Every message of a raw stream with its file offset, the summary and the recoveries.
fn decode_raw(
    ts: &Arc<Templates>,
    data: &[u8],
) -> (Vec<(usize, Message)>, PacketSummary, Vec<Recovery>) {
    let mut pd = PacketDecoder::new(Decoder::new(ts.clone()), PacketOptions::default());
    let mut b = MessageBuilder::new();
    let (mut msgs, mut recoveries) = (Vec::new(), Vec::new());
    let mut sum = PacketSummary::default();
    for p in Framing::Raw.packets(data) {
        sum += pd.decode_resync(
            &p.unwrap(),
            &mut b,
            |b, at, _| msgs.push((at, b.take().unwrap())),
            |r| recoveries.push(r.clone()),
        );
    }
    (msgs, sum, recoveries)
}

#[test]
fn ten_zero_bytes_cost_one_packet_of_increment_a() {
    let ts = moex();
    let clean = corpus("moex-forts-2013/increment_a.dat");
    let (all, sum, _) = decode_raw(&ts, &clean);
    assert_eq!((all.len(), sum.errors), (16_202, 0));

    let mut data = clean.clone();
    data[1000..1010].fill(0);
    let (got, sum, recoveries) = decode_raw(&ts, &data);
    assert!(
        sum.errors >= 1 && sum.resyncs == sum.errors,
        "{recoveries:?}"
    );
    // Every message that starts after the damaged span is decoded as in the clean file:
    // resumed at a true packet start, not inside a message.
    let resumed = recoveries.last().unwrap().resumed_at.unwrap();
    assert!(resumed > 1010 && resumed < 1400, "resumed at {resumed}");
    let after = |v: &[(usize, Message)]| -> Vec<(usize, Message)> {
        v.iter().filter(|(at, _)| *at >= resumed).cloned().collect()
    };
    assert_eq!(after(&got), after(&all));
    // What is lost is counted: the skipped bytes lie between the damage and the resume
    // point, and fewer than ten messages (a few packets of two) are gone.
    assert!(sum.skipped > 0 && sum.skipped < resumed, "{sum:?}");
    assert!(got.len() >= 16_202 - 10, "{} messages", got.len());
    for r in &recoveries {
        assert!(r.error.file_offset >= 1000, "{r:?}");
    }
}

#[test]
fn without_a_marker_the_rest_of_the_packet_is_counted_as_skipped() {
    // The simulator's templates have no field-less reset template, and without the Session
    // Control Protocol's Reset (`--no-scp`) there is none at all: no resynchronisation.
    let opts = fastfeed_codec::template::ParseOptions {
        session_control: false,
    };
    let xml = include_str!("../../sim/templates/simple.xml");
    let ts = Arc::new(fastfeed_codec::template::parse_with(xml, opts).unwrap());
    let mut pd = PacketDecoder::new(Decoder::new(ts), PacketOptions::default());
    assert!(pd.markers.is_empty());
    let data = [0xc0, 0x7f, 0x7f, 0xff, 0x81, 0x82];
    let p = Framing::Raw.packets(&data).next().unwrap().unwrap();
    let mut seen = Vec::new();
    let sum = pd.decode_resync(
        &p,
        &mut (),
        |_, _, _| panic!("no message"),
        |r| seen.push(r.clone()),
    );
    assert_eq!(
        sum,
        PacketSummary {
            messages: 0,
            errors: 1,
            resyncs: 0,
            skipped: 6
        }
    );
    assert_eq!(seen[0].resumed_at, None);
}
