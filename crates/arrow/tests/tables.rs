//! Tables against the owned-message decoder on the corpus: every row and value, the types,
//! damaged input, decimal scales, and files written and read back.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use fastfeed_arrow::{
    with_scale_retry, write_table, BatchReader, FileFormat, OnError, TableBuilder, TableError,
    TableOptions, TableSet,
};
use fastfeed_codec::template::Kind;
use fastfeed_codec::{Decoder, Message, MessageBuilder, Templates, Value};
use fastfeed_packet::{write_len32le, Framing, PacketOptions, StreamDecoder};

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

fn stream<'a>(ts: &Arc<Templates>, data: &'a [u8], framing: Framing) -> StreamDecoder<&'a [u8]> {
    StreamDecoder::new(
        data,
        framing,
        Decoder::new(ts.clone()),
        PacketOptions::default(),
    )
}

fn table(
    ts: &Arc<Templates>,
    data: &[u8],
    framing: Framing,
    template: &str,
    opts: &TableOptions,
    batch_rows: usize,
) -> Result<Vec<RecordBatch>, TableError> {
    let t = TableBuilder::new(ts.by_name(template).unwrap(), opts)?.batch_rows(batch_rows);
    BatchReader::new(stream(ts, data, framing), t, OnError::Stop)?.collect_batches()
}

trait Collect {
    fn collect_batches(self) -> Result<Vec<RecordBatch>, TableError>;
}

impl<R: std::io::Read> Collect for BatchReader<R> {
    fn collect_batches(mut self) -> Result<Vec<RecordBatch>, TableError> {
        let mut out = Vec::new();
        while let Some(b) = self.next_batch()? {
            out.push(b);
        }
        Ok(out)
    }
}

fn messages(ts: &Arc<Templates>, data: &[u8], framing: Framing) -> Vec<Message> {
    let mut s = stream(ts, data, framing);
    let mut b = MessageBuilder::new();
    let mut out = Vec::new();
    while let Some(r) = s.next_step(&mut b, |b| {
        out.extend(b.take());
        true
    }) {
        r.unwrap();
    }
    out
}

/// One cell as text: integers and strings as they are, decimals as mantissa at the column's
/// scale, bytes as hex, null as "-".
fn cell(a: &dyn Array, i: usize) -> String {
    if a.is_null(i) {
        return "-".into();
    }
    match a.data_type() {
        DataType::UInt32 => a.as_primitive::<UInt32Type>().value(i).to_string(),
        DataType::UInt64 => a.as_primitive::<UInt64Type>().value(i).to_string(),
        DataType::Int32 => a.as_primitive::<Int32Type>().value(i).to_string(),
        DataType::Int64 => a.as_primitive::<Int64Type>().value(i).to_string(),
        DataType::Decimal128(_, s) => {
            format!("{}s{s}", a.as_primitive::<Decimal128Type>().value(i))
        }
        DataType::Utf8 => a.as_string::<i32>().value(i).to_owned(),
        DataType::Binary => format!("{:02x?}", a.as_binary::<i32>().value(i)),
        other => panic!("unexpected type {other}"),
    }
}

/// The same text for a decoded value, a decimal at `scale`.
fn value_text(v: Option<&Value>, scale: i8) -> String {
    match v {
        None => "-".into(),
        Some(Value::UInt(u)) => u.to_string(),
        Some(Value::Int(i)) => i.to_string(),
        Some(Value::Decimal(d)) => {
            let shift = d.exponent + scale as i32;
            assert!(shift >= 0, "{d} at scale {scale}");
            format!("{}s{scale}", d.mantissa as i128 * 10i128.pow(shift as u32))
        }
        Some(Value::Ascii(s)) | Some(Value::Unicode(s)) => s.clone(),
        Some(Value::Bytes(b)) => format!("{b:02x?}"),
        Some(other) => panic!("not a scalar: {other:?}"),
    }
}

/// Every cell of a table, row by row, whatever its batches.
fn cells(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    batches
        .iter()
        .flat_map(|b| {
            (0..b.num_rows())
                .map(move |r| b.columns().iter().map(|c| cell(c.as_ref(), r)).collect())
        })
        .collect()
}

fn column<'b>(batch: &'b RecordBatch, name: &str) -> &'b dyn Array {
    batch
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .as_ref()
}

fn scale_of(batch: &RecordBatch, name: &str) -> i8 {
    match column(batch, name).data_type() {
        DataType::Decimal128(_, s) => *s,
        _ => 0,
    }
}

/// Checks every row of an entries table against the messages: each entry of `seq` in each
/// message of `template`, with the message's scalar fields.
fn check_entries(
    ts: &Templates,
    msgs: &[Message],
    batches: &[RecordBatch],
    template: &str,
    seq: &str,
) {
    let t = ts.by_name(template).unwrap();
    let seq_pos = t.body.instrs.iter().position(|i| i.name == seq).unwrap();
    let Kind::Sequence { body, .. } = &t.body.instrs[seq_pos].kind else {
        panic!("not a sequence")
    };
    let mut rows = batches
        .iter()
        .flat_map(|b| (0..b.num_rows()).map(move |r| (b, r)));
    let mut count = 0;
    for m in msgs.iter().filter(|m| m.template_id == t.id) {
        let Some(Value::Sequence(entries)) = &m.fields[seq_pos] else {
            continue;
        };
        for e in entries {
            let (b, r) = rows.next().expect("as many rows as entries");
            for (instr, v) in t.body.instrs.iter().zip(&m.fields) {
                if matches!(instr.kind, Kind::Sequence { .. }) {
                    continue;
                }
                let want = value_text(v.as_ref(), scale_of(b, &instr.name));
                assert_eq!(cell(column(b, &instr.name), r), want, "{}", instr.name);
            }
            for (instr, v) in body.instrs.iter().zip(e) {
                let want = value_text(v.as_ref(), scale_of(b, &instr.name));
                assert_eq!(cell(column(b, &instr.name), r), want, "{}", instr.name);
            }
            count += 1;
        }
    }
    assert!(rows.next().is_none(), "more rows than entries");
    assert!(count > 0);
}

fn entries(seq: &str) -> TableOptions {
    TableOptions {
        entries: Some(seq.into()),
        ..Default::default()
    }
}

#[test]
fn complex30000_entries_are_typed_rows_with_every_value() {
    let ts = templates("mfast-complex/example.xml");
    let data = corpus("mfast-complex/complex30000.dat");
    let batches = table(
        &ts,
        &data,
        Framing::Len32Le,
        "MarketData",
        &entries("MDEntries"),
        16_384,
    )
    .unwrap();
    // The file's 90,000 entries: 89,700 MDEntries of MarketData and 300 RelatedSym of
    // QuoteRequest.
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 89_700);
    assert!(batches.len() >= 6, "streamed in batches");
    let related = table(
        &ts,
        &data,
        Framing::Len32Le,
        "QuoteRequest",
        &entries("RelatedSym"),
        16_384,
    )
    .unwrap();
    assert_eq!(related.iter().map(|b| b.num_rows()).sum::<usize>(), 300);
    let schema = batches[0].schema();
    for (name, ty, nullable) in [
        ("MsgSeqNum", DataType::UInt32, false),
        ("ApplVerID", DataType::Utf8, false),
        ("MDPriceLevel", DataType::UInt32, true),
        ("MDEntrySize", DataType::Int32, true),
        ("MDEntryPx", DataType::Decimal128(38, 0), false),
        ("NetChgPrevDay", DataType::Decimal128(38, 0), true),
        ("TradingSessionID", DataType::Utf8, true),
    ] {
        let f = schema.field_with_name(name).unwrap();
        assert_eq!((f.data_type(), f.is_nullable()), (&ty, nullable), "{name}");
    }
    assert!(schema.field_with_name("MDEntries").is_err());
    let msgs = messages(&ts, &data, Framing::Len32Le);
    check_entries(&ts, &msgs, &batches, "MarketData", "MDEntries");
}

#[test]
fn moex_entries_with_varying_exponents_are_exact() {
    let ts = templates("moex-forts-2013/templates.xml");
    for file in ["increment_a.dat", "snapshot.dat"] {
        let data = corpus(&format!("moex-forts-2013/{file}"));
        let template = if file == "snapshot.dat" {
            "DefaultSnapshotMessage"
        } else {
            "DefaultIncrementalRefreshMessage"
        };
        // Small batches: exponents seen later than the first batch must still fit.
        let batches = with_scale_retry(&entries("MDEntries"), |o| {
            table(&ts, &data, Framing::Raw, template, o, 1000)
        })
        .unwrap();
        let msgs = messages(&ts, &data, Framing::Raw);
        check_entries(&ts, &msgs, &batches, template, "MDEntries");
        if file == "increment_a.dat" {
            assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 22_104);
        }
    }
}

#[test]
fn messages_as_rows_hold_sequences_as_lists() {
    let ts = templates("mfast-complex/example.xml");
    let data = corpus("mfast-complex/complex30000.dat");
    let batches = table(
        &ts,
        &data,
        Framing::Len32Le,
        "MarketData",
        &TableOptions::default(),
        10_000,
    )
    .unwrap();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 29_700);
    let mut elements = 0;
    let msgs: Vec<Message> = messages(&ts, &data, Framing::Len32Le)
        .into_iter()
        .filter(|m| m.template_id == 1)
        .collect();
    let t = ts.get(1).unwrap();
    let seq_pos = t
        .body
        .instrs
        .iter()
        .position(|i| i.name == "MDEntries")
        .unwrap();
    let mut m = msgs.iter();
    for b in &batches {
        let list = b.column_by_name("MDEntries").unwrap().as_list::<i32>();
        for r in 0..b.num_rows() {
            let Some(Value::Sequence(want)) = &m.next().unwrap().fields[seq_pos] else {
                panic!()
            };
            let got = list.value(r);
            let got = got.as_struct();
            assert_eq!(got.len(), want.len());
            for (k, e) in want.iter().enumerate() {
                let rpt = got.column_by_name("RptSeq").unwrap();
                assert_eq!(cell(rpt.as_ref(), k), value_text(e[6].as_ref(), 0));
            }
            elements += got.len();
        }
    }
    assert_eq!(elements, 89_700);
}

/// The first `take` packets of a len32le file, the second half of packets `tear` zeroed
/// (zeroes carry no stop bit, so each of those packets fails to decode).
fn torn(data: &[u8], take: usize, tear: &[usize]) -> Vec<u8> {
    let mut packets: Vec<Vec<u8>> = Framing::Len32Le
        .packets(data)
        .take(take)
        .map(|p| p.unwrap().bytes.to_vec())
        .collect();
    for &i in tear {
        let n = packets[i].len();
        packets[i][n / 2..].fill(0);
    }
    let mut out = Vec::new();
    write_len32le(packets.iter().map(|p| p.as_slice()), &mut out).unwrap();
    out
}

#[test]
fn damaged_packets_drop_their_bad_message_only() {
    let ts = templates("mfast-complex/example.xml");
    let data = corpus("mfast-complex/complex30000.dat");
    let damaged = torn(&data, 200, &[5, 50, 51, 120]);

    // Stop: the error comes out.
    let r = table(
        &ts,
        &damaged,
        Framing::Len32Le,
        "MarketData",
        &entries("MDEntries"),
        64,
    );
    assert!(matches!(r, Err(TableError::Stream(_))), "{r:?}");

    // Skip: the rows are those of the messages that decode, as the owned decoder gives them.
    let t = TableBuilder::new(ts.by_name("MarketData").unwrap(), &entries("MDEntries")).unwrap();
    let mut reader = BatchReader::new(
        stream(&ts, &damaged, Framing::Len32Le),
        t.batch_rows(64),
        OnError::Skip,
    )
    .unwrap();
    let mut batches = Vec::new();
    while let Some(b) = reader.next_batch().unwrap() {
        batches.push(b);
    }
    assert_eq!(reader.skipped().count, 4);
    let mut good = Vec::new();
    let mut s = stream(&ts, &damaged, Framing::Len32Le);
    let mut b = MessageBuilder::new();
    while let Some(r) = s.next_step(&mut b, |b| {
        good.extend(b.take());
        true
    }) {
        let _ = r;
    }
    assert_eq!(good.len(), 196);
    check_entries(&ts, &good, &batches, "MarketData", "MDEntries");
}

const SCALES: &str = r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
  <template name="Px" id="1">
    <decimal name="Px"/>
    <decimal name="Fixed"><exponent><constant value="-2"/></exponent><mantissa/></decimal>
    <decimal name="Opt" presence="optional"/>
  </template></templates>"#;

fn px_stream(values: &[(i32, i64)]) -> (Arc<Templates>, Vec<u8>) {
    let ts = fastfeed_codec::parse_templates(SCALES).unwrap();
    let mut enc = fastfeed_codec::Encoder::new(ts.clone());
    let mut out = Vec::new();
    for &(e, m) in values {
        let d = Value::Decimal(fastfeed_codec::Decimal::new(e, m));
        let msg = Message {
            template_id: 1,
            fields: vec![
                Some(d.clone()),
                Some(Value::Decimal(fastfeed_codec::Decimal::new(-2, m))),
                None,
            ],
        };
        enc.encode(&msg, &mut out).unwrap();
    }
    (ts, out)
}

#[test]
fn decimal_scales_are_learned_fixed_or_widened_never_rounded() {
    // First batch (2 rows) has at most 1 fraction digit; the third value has 3.
    let (ts, data) = px_stream(&[(-1, 15), (0, 7), (-3, 1234), (2, 5)]);
    let r = table(&ts, &data, Framing::Raw, "Px", &TableOptions::default(), 2);
    match r {
        Err(TableError::Decimal {
            column,
            scale: 1,
            needed: Some(3),
            ..
        }) => assert_eq!(column, "Px"),
        other => panic!("{other:?}"),
    }
    // Trailing zeros fit a smaller scale: 1.230 is 1.23.
    let (ts2, data2) = px_stream(&[(-2, 15), (-3, 1230)]);
    let b = table(
        &ts2,
        &data2,
        Framing::Raw,
        "Px",
        &TableOptions::default(),
        1,
    )
    .unwrap();
    assert_eq!(cell(column(&b[1], "Px"), 0), "123s2");

    let b = with_scale_retry(&TableOptions::default(), |o| {
        table(&ts, &data, Framing::Raw, "Px", o, 2)
    })
    .unwrap();
    let texts: Vec<String> = b
        .iter()
        .flat_map(|b| (0..b.num_rows()).map(move |r| cell(column(b, "Px"), r)))
        .collect();
    assert_eq!(texts, ["1500s3", "7000s3", "1234s3", "500000s3"]);
    // The constant exponent fixes its column's scale; the absent optional one is null.
    assert_eq!(scale_of(&b[0], "Fixed"), 2);
    assert_eq!(cell(column(&b[0], "Opt"), 0), "-");
    assert!(b[0].schema().field_with_name("Opt").unwrap().is_nullable());

    // A caller's scale too small for a value is an error, not a rounding.
    let fixed = TableOptions {
        decimal_scale: Some(0),
        ..Default::default()
    };
    assert!(matches!(
        table(&ts, &data, Framing::Raw, "Px", &fixed, 100),
        Err(TableError::Decimal { .. })
    ));
    // A value beyond 38 digits at any scale cannot be held: no retry helps.
    let (ts3, data3) = px_stream(&[(-5, 1), (60, i64::MAX)]);
    let r = with_scale_retry(&TableOptions::default(), |o| {
        table(&ts3, &data3, Framing::Raw, "Px", o, 100)
    });
    assert!(
        matches!(r, Err(TableError::Decimal { needed: None, .. })),
        "{r:?}"
    );
}

#[test]
fn files_read_back_equal_and_table_sets_split_by_template() {
    let ts = templates("moex-forts-2013/templates.xml");
    let data = corpus("moex-forts-2013/increment_a.dat");
    let dir = std::env::temp_dir().join(format!("fastfeed-arrow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let opts = with_scale_retry(&entries("MDEntries"), |o| {
        table(
            &ts,
            &data,
            Framing::Raw,
            "DefaultIncrementalRefreshMessage",
            o,
            4096,
        )
        .map(|_| o.clone())
    })
    .unwrap();
    let want = table(
        &ts,
        &data,
        Framing::Raw,
        "DefaultIncrementalRefreshMessage",
        &opts,
        4096,
    )
    .unwrap();
    for format in [FileFormat::Parquet, FileFormat::Arrow] {
        let path = dir.join(format!("inc.{}", format.extension()));
        let t = TableBuilder::new(
            ts.by_name("DefaultIncrementalRefreshMessage").unwrap(),
            &opts,
        )
        .unwrap();
        let reader = BatchReader::new(
            stream(&ts, &data, Framing::Raw),
            t.batch_rows(4096),
            OnError::Stop,
        )
        .unwrap();
        let w = write_table(
            reader,
            "DefaultIncrementalRefreshMessage",
            &path,
            format,
            |_| {},
        )
        .unwrap();
        assert_eq!(w.files[0].rows, 22_104);
        if format == FileFormat::Parquet {
            integers_are_delta_coded(&path);
        }
        let got: Vec<RecordBatch> = match format {
            FileFormat::Parquet => {
                parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                    std::fs::File::open(&path).unwrap(),
                )
                .unwrap()
                .with_batch_size(4096)
                .build()
                .unwrap()
                .map(|b| b.unwrap())
                .collect()
            }
            FileFormat::Arrow => {
                arrow_ipc::reader::FileReader::try_new(std::fs::File::open(&path).unwrap(), None)
                    .unwrap()
                    .map(|b| b.unwrap())
                    .collect()
            }
        };
        assert_eq!(got[0].schema(), want[0].schema());
        assert_eq!(cells(&got), cells(&want), "{format:?}");
    }

    // Every template in one pass: a file for each template with fields and messages.
    let set = TableSet::new(&ts, &opts, 4096).unwrap();
    let out = fastfeed_arrow::write_tables(
        stream(&ts, &data, Framing::Raw),
        set,
        &dir.join("all"),
        FileFormat::Parquet,
        OnError::Stop,
        |_| {},
    )
    .unwrap();
    let names: Vec<(&str, u64)> = out
        .files
        .iter()
        .map(|f| (f.template.as_str(), f.rows))
        .collect();
    assert_eq!(names, [("DefaultIncrementalRefreshMessage", 22_104)]);
    assert_eq!(out.not_written.len(), 1, "{:?}", out.not_written);
    assert!(
        out.not_written[0].contains("Reset"),
        "{:?}",
        out.not_written
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

const CONSTANTS: &str = r#"<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
  <template name="T" id="1">
    <string name="Kind"><constant value="X"/></string>
    <uInt32 name="Src"><constant value="9"/></uInt32>
    <int64 name="Neg"><constant value="-5"/></int64>
    <decimal name="Px"><constant value="1.25"/></decimal>
    <string name="Name" charset="unicode"><constant value="Test Exchange"/></string>
    <uInt32 name="Seq"/>
    <uInt32 name="Maybe" presence="optional"/>
    <group name="G" presence="optional">
      <string name="Tag"><constant value="g"/></string>
      <uInt32 name="V"/>
    </group>
    <sequence name="E">
      <length name="N"/>
      <string name="Side"><constant value="B"/></string>
      <uInt32 name="Qty" presence="optional"/>
    </sequence>
  </template></templates>"#;

/// Messages with every shape: no entries, one, several; the optional field and group absent
/// now and then (first after some rows, so a column's validity starts mid-batch).
fn constants_stream() -> (Arc<Templates>, Vec<u8>, Vec<Message>) {
    let ts = fastfeed_codec::parse_templates(CONSTANTS).unwrap();
    let mut enc = fastfeed_codec::Encoder::new(ts.clone());
    let (mut out, mut msgs) = (Vec::new(), Vec::new());
    for i in 0..40u64 {
        let entries = (0..i % 4)
            .map(|k| {
                let qty = (k != 1).then_some(Value::UInt(i * 10 + k));
                vec![Some(Value::Ascii("B".into())), qty]
            })
            .collect();
        let group = (i % 3 != 2)
            .then(|| Value::Group(vec![Some(Value::Ascii("g".into())), Some(Value::UInt(i))]));
        let msg = Message {
            template_id: 1,
            fields: vec![
                Some(Value::Ascii("X".into())),
                Some(Value::UInt(9)),
                Some(Value::Int(-5)),
                Some(Value::Decimal(fastfeed_codec::Decimal::new(-2, 125))),
                Some(Value::Unicode("Test Exchange".into())),
                Some(Value::UInt(i)),
                (i < 5 || i % 5 != 0).then_some(Value::UInt(i + 100)),
                group,
                Some(Value::Sequence(entries)),
            ],
        };
        enc.encode(&msg, &mut out).unwrap();
        msgs.push(msg);
    }
    let decoded = messages(&ts, &out, Framing::Raw);
    (ts, out, decoded)
}

#[test]
fn constants_nulls_and_groups_are_exact_in_every_row_mode() {
    let (ts, data, msgs) = constants_stream();
    assert_eq!(msgs.len(), 40);
    for batch_rows in [1, 7, 1000] {
        // A row per entry: the message's constants and fields repeated on each.
        let batches = table(&ts, &data, Framing::Raw, "T", &entries("E"), batch_rows).unwrap();
        let rows: Vec<Vec<String>> = cells(&batches);
        let names: Vec<String> = batches[0]
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(
            names,
            ["Kind", "Src", "Neg", "Px", "Name", "Seq", "Maybe", "G.Tag", "G.V", "Side", "Qty"]
        );
        let mut want = Vec::new();
        for m in &msgs {
            let f = &m.fields;
            let Some(Value::Sequence(es)) = &f[8] else {
                panic!()
            };
            let g = match &f[7] {
                Some(Value::Group(g)) => {
                    [value_text(g[0].as_ref(), 0), value_text(g[1].as_ref(), 0)]
                }
                _ => ["-".into(), "-".into()],
            };
            for e in es {
                want.push(vec![
                    "X".into(),
                    "9".into(),
                    "-5".into(),
                    "125s2".into(),
                    "Test Exchange".into(),
                    value_text(f[5].as_ref(), 0),
                    value_text(f[6].as_ref(), 0),
                    g[0].clone(),
                    g[1].clone(),
                    "B".into(),
                    value_text(e[1].as_ref(), 0),
                ]);
            }
        }
        assert_eq!(rows, want, "batch_rows {batch_rows}");
        let schema = batches[0].schema();
        for (name, nullable) in [
            ("Kind", false),
            ("Px", false),
            ("G.Tag", true),
            ("Side", false),
            ("Qty", true),
        ] {
            assert_eq!(
                schema.field_with_name(name).unwrap().is_nullable(),
                nullable,
                "{name}"
            );
        }

        // A row per message: the sequence a list whose constant child has a value per element.
        let batches = table(
            &ts,
            &data,
            Framing::Raw,
            "T",
            &TableOptions::default(),
            batch_rows,
        )
        .unwrap();
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 40);
        let mut m = msgs.iter();
        for b in &batches {
            let list = b.column_by_name("E").unwrap().as_list::<i32>();
            for r in 0..b.num_rows() {
                let f = &m.next().unwrap().fields;
                assert_eq!(cell(column(b, "Kind"), r), "X");
                assert_eq!(cell(column(b, "Px"), r), "125s2");
                assert_eq!(cell(column(b, "Maybe"), r), value_text(f[6].as_ref(), 0));
                let tag = if matches!(f[7], Some(Value::Group(_))) {
                    "g"
                } else {
                    "-"
                };
                assert_eq!(cell(column(b, "G.Tag"), r), tag);
                let Some(Value::Sequence(es)) = &f[8] else {
                    panic!()
                };
                let got = list.value(r);
                let got = got.as_struct();
                assert_eq!(got.len(), es.len());
                for (k, e) in es.iter().enumerate() {
                    assert_eq!(cell(got.column_by_name("Side").unwrap().as_ref(), k), "B");
                    let qty = got.column_by_name("Qty").unwrap();
                    assert_eq!(cell(qty.as_ref(), k), value_text(e[1].as_ref(), 0));
                }
            }
        }
    }
}

#[test]
fn a_decode_error_stops_the_writer_thread_with_the_error() {
    // The writer encodes on a thread of its own: an error on the decoding side must come
    // out as that error, with nothing left waiting on the other side.
    let ts = templates("mfast-complex/example.xml");
    let data = corpus("mfast-complex/complex30000.dat");
    let damaged = torn(&data, 3000, &[2500]);
    let dir = std::env::temp_dir().join(format!("fastfeed-arrow-err-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (on_error, ok) in [(OnError::Stop, false), (OnError::Skip, true)] {
        let t = TableBuilder::new(ts.by_name("MarketData").unwrap(), &entries("MDEntries"))
            .unwrap()
            .batch_rows(100);
        let reader =
            BatchReader::new(stream(&ts, &damaged, Framing::Len32Le), t, on_error).unwrap();
        let path = dir.join("md.parquet");
        let r = write_table(reader, "MarketData", &path, FileFormat::Parquet, |_| {});
        match r {
            Ok(w) => {
                assert!(ok);
                assert!(w.files[0].rows > 8_000, "{}", w.files[0].rows);
                assert_eq!(w.skipped.count, 1);
            }
            Err(e) => {
                assert!(!ok);
                assert!(matches!(e, TableError::Stream(_)), "{e:?}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Integer columns delta-coded without a dictionary; strings still with one.
fn integers_are_delta_coded(path: &std::path::Path) {
    use parquet::basic::{Encoding, Type};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let r = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let rg = r.metadata().row_group(0);
    let (mut ints, mut strings) = (0, 0);
    for c in rg.columns() {
        let enc: Vec<Encoding> = c.encodings().collect();
        match c.column_type() {
            Type::INT32 | Type::INT64 => {
                ints += 1;
                assert!(
                    enc.contains(&Encoding::DELTA_BINARY_PACKED),
                    "{:?}: {enc:?}",
                    c.column_path()
                );
                assert!(
                    !enc.contains(&Encoding::RLE_DICTIONARY),
                    "{:?}: {enc:?}",
                    c.column_path()
                );
            }
            Type::BYTE_ARRAY => {
                strings += 1;
                assert!(
                    enc.contains(&Encoding::RLE_DICTIONARY),
                    "{:?}: {enc:?}",
                    c.column_path()
                );
            }
            _ => {}
        }
    }
    assert!(
        ints > 0 && strings > 0,
        "{ints} integer and {strings} string columns"
    );
}
