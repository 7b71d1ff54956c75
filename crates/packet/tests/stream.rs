//! The streaming decoder and packet reader against the in-memory ones: the same messages and
//! packets from the corpus whatever the read sizes and window, and the same located errors
//! on damaged input.

use std::io::{self, Read};
use std::sync::Arc;

use fastfeed_codec::{Decoder, Message, MessageBuilder, Templates};
use fastfeed_packet::{
    len32le_packets, split_at_resets, write_blocks, write_len32le, Framing, FramingError,
    PacketDecoder, PacketOptions, PacketReader, StreamDecoder, StreamError, RAW_WINDOW,
};

fn corpus(path: &str) -> Vec<u8> {
    let p = format!(
        "{}/../../../shared/corpus/{path}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn templates(path: &str) -> Arc<Templates> {
    fastfeed_codec::parse_templates(&String::from_utf8(corpus(path)).unwrap()).unwrap()
}

/// Hands out at most `chunk` bytes per read, as a pipe or socket may.
struct Trickle<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.chunk).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

type Outcome = (Vec<Message>, Vec<String>);

fn in_memory(ts: &Arc<Templates>, data: &[u8], framing: Framing, opts: PacketOptions) -> Outcome {
    let mut pd = PacketDecoder::new(Decoder::new(ts.clone()), opts);
    let (mut msgs, mut errs) = (Vec::new(), Vec::new());
    let mut b = MessageBuilder::new();
    for p in framing.packets(data) {
        let p = match p {
            Ok(p) => p,
            Err(e) => {
                errs.push(e.to_string());
                break;
            }
        };
        if let Err(e) = pd.decode_packet(&p, &mut b, |b, _| msgs.extend(b.take())) {
            errs.push(e.to_string());
        }
    }
    (msgs, errs)
}

/// Compares without printing thousands of messages on a mismatch.
fn same(got: &Outcome, want: &Outcome, what: &str) {
    assert_eq!(got.1, want.1, "{what}: errors");
    assert_eq!(got.0.len(), want.0.len(), "{what}: message count");
    assert!(got.0 == want.0, "{what}: messages differ");
}

fn streamed(
    ts: &Arc<Templates>,
    data: &[u8],
    framing: Framing,
    opts: PacketOptions,
    chunk: usize,
    window: usize,
) -> Outcome {
    let input = Trickle { data, chunk };
    let mut sd =
        StreamDecoder::new(input, framing, Decoder::new(ts.clone()), opts).raw_window(window);
    let (mut msgs, mut errs) = (Vec::new(), Vec::new());
    let mut b = MessageBuilder::new();
    while let Some(r) = sd.next_step(&mut b, |b| {
        msgs.extend(b.take());
        true
    }) {
        if let Err(e) = r {
            errs.push(e.to_string());
        }
    }
    (msgs, errs)
}

#[test]
fn raw_stream_matches_in_memory_for_any_read_size() {
    let ts = templates("moex-forts-2013/templates.xml");
    let data = corpus("moex-forts-2013/increment_a.dat");
    let want = in_memory(&ts, &data, Framing::Raw, PacketOptions::default());
    assert_eq!(want.0.len(), 16_202);
    for (chunk, window) in [(1 << 20, 1 << 16), (7, 4096), (100_000, 4096)] {
        let got = streamed(
            &ts,
            &data,
            Framing::Raw,
            PacketOptions::default(),
            chunk,
            window,
        );
        same(&got, &want, &format!("chunk {chunk} window {window}"));
    }
}

#[test]
fn len32le_stream_matches_in_memory() {
    let ts = templates("mfast-complex/example.xml");
    let data = corpus("mfast-complex/complex30000.dat");
    let want = in_memory(&ts, &data, Framing::Len32Le, PacketOptions::default());
    assert_eq!(want.0.len(), 30_001);
    let got = streamed(
        &ts,
        &data,
        Framing::Len32Le,
        PacketOptions::default(),
        13,
        1,
    );
    same(&got, &want, "");
}

#[test]
fn block_stream_matches_in_memory_and_passes_over_a_zero_block() {
    let ts = templates("mfast-complex/example.xml");
    let framed = corpus("mfast-complex/complex30000.dat");
    let packets: Vec<&[u8]> = len32le_packets(&framed).map(|p| p.unwrap().bytes).collect();
    let mut data = Vec::new();
    write_blocks(packets[..1000].iter().copied(), &mut data).unwrap();
    let zero_at = data.len();
    data.push(0x80); // a block of size zero (ERR D12): reported, and the next block follows
    write_blocks(packets[1000..].iter().copied(), &mut data).unwrap();
    // In memory, going on after the zero block as the stream does.
    let mut pd = PacketDecoder::new(Decoder::new(ts.clone()), PacketOptions::default());
    let (mut msgs, mut errs) = (Vec::new(), Vec::new());
    let mut b = MessageBuilder::new();
    for p in Framing::Block.packets(&data) {
        match p {
            Ok(p) => {
                pd.decode_packet(&p, &mut b, |b, _| msgs.extend(b.take()))
                    .unwrap();
            }
            Err(e) => errs.push(e.to_string()),
        }
    }
    let want = (msgs, errs);
    assert_eq!(want.0.len(), 30_001);
    assert_eq!(
        want.1,
        [format!(
            "packet 1000 at byte {zero_at}: a block of size zero [ERR D12]"
        )]
    );
    for chunk in [1, 13, 1 << 20] {
        let got = streamed(
            &ts,
            &data,
            Framing::Block,
            PacketOptions::default(),
            chunk,
            1,
        );
        same(&got, &want, &format!("chunk {chunk}"));
    }
    // Cut inside the last block: the same messages before it, then the cut.
    let cut = &data[..data.len() - 1];
    let got = streamed(&ts, cut, Framing::Block, PacketOptions::default(), 64, 1);
    assert_eq!(got.0.len(), 30_000);
    assert!(
        got.1.last().unwrap().contains("runs past the end"),
        "{:?}",
        got.1
    );
}

#[test]
fn damaged_input_gives_the_same_located_errors() {
    let ts = templates("mfast-complex/example.xml");
    let data = corpus("mfast-complex/complex30000.dat");
    // Tear packets 3 and 10 (zeroes carry no stop bit), then cut the file mid-packet.
    let mut packets: Vec<Vec<u8>> = Framing::Len32Le
        .packets(&data)
        .take(20)
        .map(|p| p.unwrap().bytes.to_vec())
        .collect();
    for i in [3, 10] {
        let n = packets[i].len();
        packets[i][n / 2..].fill(0);
    }
    let mut damaged = Vec::new();
    write_len32le(packets.iter().map(|p| p.as_slice()), &mut damaged).unwrap();
    damaged.truncate(damaged.len() - 5);
    let want = in_memory(&ts, &damaged, Framing::Len32Le, PacketOptions::default());
    assert_eq!(want.1.len(), 3, "{:?}", want.1);
    let got = streamed(
        &ts,
        &damaged,
        Framing::Len32Le,
        PacketOptions::default(),
        64,
        1,
    );
    same(&got, &want, "");

    // A raw stream cut in the middle of a message ends with a truncation there.
    let moex = templates("moex-forts-2013/templates.xml");
    let mut raw = corpus("moex-forts-2013/increment_a.dat");
    raw.truncate(300_001);
    let want = in_memory(&moex, &raw, Framing::Raw, PacketOptions::default());
    let got = streamed(
        &moex,
        &raw,
        Framing::Raw,
        PacketOptions::default(),
        4096,
        1024,
    );
    same(&got, &want, "");
    assert_eq!(got.1.len(), 1);
    assert!(got.1[0].contains("ends in the middle"), "{:?}", got.1);
}

#[test]
fn hostile_lengths_and_long_messages_are_errors() {
    let ts = templates("mfast-complex/example.xml");
    let huge = [0xff, 0xff, 0xff, 0x7f, 1, 2, 3];
    let mut sd = StreamDecoder::new(
        &huge[..],
        Framing::Len32Le,
        Decoder::new(ts.clone()),
        PacketOptions::default(),
    );
    let mut b = MessageBuilder::new();
    let r = sd.next_step(&mut b, |_| true).unwrap();
    assert!(matches!(r, Err(StreamError::PacketTooLong { .. })), "{r:?}");
    assert!(sd.next_step(&mut b, |_| true).is_none());

    // A raw message longer than the window is named as such, not as a truncation.
    let moex = templates("moex-forts-2013/templates.xml");
    let raw = corpus("moex-forts-2013/increment_a.dat");
    let mut sd = StreamDecoder::new(
        &raw[..],
        Framing::Raw,
        Decoder::new(moex),
        PacketOptions::default(),
    )
    .raw_window(8);
    let mut errs = Vec::new();
    while let Some(r) = sd.next_step(&mut b, |_| true) {
        if let Err(e) = r {
            errs.push(e.to_string());
        }
    }
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].contains("longer than the limit of 8 bytes"),
        "{errs:?}"
    );
}

/// Gives its bytes in one read, then fails as a live source with nothing more would block.
struct ThenBlocks<'a>(&'a [u8]);

impl Read for ThenBlocks<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.0.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn len32le_packets_are_decoded_as_soon_as_they_are_read() {
    // Read a chunk at a time, but never waiting for a chunk: two packets that have arrived
    // are decoded before the read that finds nothing more.
    let ts = templates("mfast-complex/example.xml");
    let data = corpus("mfast-complex/complex30000.dat");
    let two: usize = Framing::Len32Le
        .packets(&data)
        .take(2)
        .map(|p| p.unwrap().bytes.len() + 4)
        .sum();
    let mut sd = StreamDecoder::new(
        ThenBlocks(&data[..two]),
        Framing::Len32Le,
        Decoder::new(ts),
        PacketOptions::default(),
    );
    let mut b = MessageBuilder::new();
    assert!(matches!(sd.next_step(&mut b, |_| true), Some(Ok(1))));
    assert!(matches!(sd.next_step(&mut b, |_| true), Some(Ok(1))));
    assert_eq!(sd.position(), two);
    let r = sd.next_step(&mut b, |_| true);
    assert!(matches!(r, Some(Err(StreamError::Io(_)))), "{r:?}");
}

/// Every packet a [`PacketReader`] hands out, as (input offset, bytes), then its error.
fn read_all<R: Read>(mut r: PacketReader<R>) -> (Vec<(usize, Vec<u8>)>, Option<StreamError>) {
    let mut out = Vec::new();
    loop {
        match r.next_packet() {
            Ok(Some(p)) => {
                assert_eq!(p.index, out.len(), "packets numbered in order");
                out.push((p.offset, p.bytes.to_vec()));
            }
            Ok(None) => return (out, None),
            Err(e) => {
                assert!(matches!(r.next_packet(), Ok(None)), "ends after an error");
                return (out, Some(e));
            }
        }
    }
}

fn owned(packets: &[fastfeed_packet::Packet<'_>]) -> Vec<(usize, Vec<u8>)> {
    packets
        .iter()
        .map(|p| (p.offset, p.bytes.to_vec()))
        .collect()
}

#[test]
fn packet_reader_cuts_as_the_whole_input_is_cut() {
    // A raw stream at its resetting messages, as split_at_resets cuts it held whole, for
    // any read size and read-ahead window.
    let moex = templates("moex-forts-2013/templates.xml");
    let raw = corpus("moex-forts-2013/increment_a.dat");
    let want = owned(&split_at_resets(&mut Decoder::new(moex.clone()), &raw).unwrap());
    assert_eq!(want.len(), 8_101);
    for (chunk, window) in [(usize::MAX, RAW_WINDOW), (7, RAW_WINDOW), (4096, 2_000)] {
        let input = Trickle { data: &raw, chunk };
        let reader = PacketReader::raw(input, Decoder::new(moex.clone())).raw_window(window);
        let (got, err) = read_all(reader);
        assert!(err.is_none(), "{err:?}");
        assert!(got == want, "raw, reads of {chunk}, window {window}");
    }

    // len32le records, as len32le_packets gives them.
    let data = corpus("mfast-complex/complex30000.dat");
    let want: Vec<_> = len32le_packets(&data).map(|p| p.unwrap()).collect();
    for chunk in [usize::MAX, 3, 1000] {
        let (got, err) = read_all(PacketReader::len32le(Trickle { data: &data, chunk }));
        assert!(err.is_none(), "{err:?}");
        assert!(got == owned(&want), "len32le, reads of {chunk}");
    }
}

#[test]
fn packet_reader_errors_end_it_where_the_input_is_bad() {
    // A cut last record: every packet before it, then the framing error.
    let data = corpus("mfast-complex/complex30000.dat");
    let cut = &data[..data.len() - 1];
    let all: Vec<_> = len32le_packets(&data).map(|p| p.unwrap()).collect();
    let (got, err) = read_all(PacketReader::len32le(cut));
    assert_eq!(got, owned(&all[..all.len() - 1]));
    assert!(
        matches!(
            err,
            Some(StreamError::Framing(FramingError::TruncatedPacket { .. }))
        ),
        "{err:?}"
    );
    // A hostile length prefix is refused before anything is allocated for it.
    let (got, err) = read_all(PacketReader::len32le(&[0xff, 0xff, 0xff, 0x7f, 1][..]));
    assert!(got.is_empty());
    assert!(
        matches!(err, Some(StreamError::PacketTooLong { .. })),
        "{err:?}"
    );

    // A raw stream: a damaged message gives the error split_at_resets gives, at the same
    // byte, after the packets before it.
    let moex = templates("moex-forts-2013/templates.xml");
    let mut raw = corpus("moex-forts-2013/increment_a.dat");
    raw.truncate(20_000);
    raw[10_000..10_040].fill(0x80);
    let want = split_at_resets(&mut Decoder::new(moex.clone()), &raw).unwrap_err();
    let (got, err) = read_all(PacketReader::raw(&raw[..], Decoder::new(moex.clone())));
    match err {
        Some(StreamError::Decode(e)) => assert_eq!(e.file_offset, want.file_offset),
        other => panic!("{other:?}"),
    }
    assert!(got.iter().all(|(at, p)| at + p.len() <= want.file_offset));
    assert!(!got.is_empty());
    // A raw stream whose packets never end (no resetting message within the limit).
    let raw = corpus("moex-forts-2013/increment_a.dat");
    let reader = PacketReader::raw(&raw[..], Decoder::new(moex)).max_packet(100);
    let (_, err) = read_all(reader);
    assert!(
        matches!(err, Some(StreamError::PacketTooLong { .. })),
        "{err:?}"
    );
}
