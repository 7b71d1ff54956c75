//! What the end-to-end tests share: running `fastfeed` processes, and knowing in process what
//! a packet file holds, packet by packet, to compare the pipeline's reports against.

#![allow(dead_code)] // each test binary uses its own part

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use fastfeed_codec::Decoder;
use fastfeed_packet::len32le_packets;
use fastfeed_records::{Converter, Record};

/// One packet of a generated file and the records it decodes to (Done left out).
pub struct Packet {
    /// The channel number of a 6-byte header; 0 with the 4-byte one.
    pub channel: u16,
    pub seq: u64,
    pub bytes: Vec<u8>,
    /// Messages in the packet, Done included.
    pub messages: u64,
    pub records: Vec<Record>,
}

/// Every packet of a `len32le` file, decoded here, in process, as a correct publisher does:
/// the 4-byte sequence header, then messages with the dictionaries reset per packet.
pub fn packets(file: &Path, templates_xml: &str) -> Vec<Packet> {
    let ts = fastfeed_codec::parse_templates(templates_xml).unwrap();
    packets_with_header(file, ts, 4)
}

/// As [`packets`], for a header of `header` bytes: 4 (sequence) or 6 (sequence, then the
/// channel number, which the option records carry).
pub fn packets_with_header(
    file: &Path,
    ts: std::sync::Arc<fastfeed_codec::Templates>,
    header: usize,
) -> Vec<Packet> {
    let mut dec = Decoder::new(ts.clone());
    let mut conv = Converter::new(&ts);
    let mut records = Vec::new();
    let data = std::fs::read(file).unwrap();
    let mut out = Vec::new();
    for p in len32le_packets(&data) {
        let bytes = p.unwrap().bytes;
        let channel = match header {
            6 => u16::from_le_bytes([bytes[4], bytes[5]]),
            _ => 0,
        };
        conv.set_channel(channel as u32);
        let mut packet = Packet {
            channel,
            seq: u32::from_le_bytes(bytes[..4].try_into().unwrap()) as u64,
            bytes: bytes.to_vec(),
            messages: 0,
            records: Vec::new(),
        };
        dec.reset();
        let mut pos = header;
        while pos < bytes.len() {
            pos += conv.decode(&mut dec, &bytes[pos..], &mut records).unwrap();
            packet.messages += 1;
            let data = records.iter().filter(|r| !matches!(r, Record::Done));
            packet.records.extend(data);
        }
        out.push(packet);
    }
    out
}

/// Records as the subscriber's `--dump` writes them (JSON Lines), sorted: the subscriber drains one
/// record type after another, so dumps compare as multisets.
pub fn dump_lines<'a>(records: impl IntoIterator<Item = &'a Record>) -> Vec<String> {
    let mut v: Vec<String> = records
        .into_iter()
        .map(|r| r.to_json().to_string())
        .collect();
    v.sort();
    v
}

pub fn read_dump(path: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    v.sort();
    v
}

pub fn read_json(path: &Path) -> serde_json::Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// A JSON number as u64, failing loudly when it is missing.
pub fn num(v: &serde_json::Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no number {key} in {v}"))
}

/// A Parquet file's rows, each as text.
pub fn parquet_rows(file: &Path) -> Vec<String> {
    let r = parquet::file::reader::SerializedFileReader::new(std::fs::File::open(file).unwrap())
        .unwrap();
    parquet::file::reader::FileReader::get_row_iter(&r, None)
        .unwrap()
        .map(|row| row.unwrap().to_string())
        .collect()
}

/// A fresh scratch folder for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fastfeed-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A multicast group and port of this test process's own (`tag` tells a process's tests
/// apart), so concurrent test runs on one machine never receive each other's packets.
pub fn unique_group(tag: u16) -> String {
    let pid = std::process::id();
    let port = 20_000 + (pid % 2_000) as u16 * 16 + tag % 16;
    format!("239.255.{}.{}:{port}", 40 + (pid >> 8) % 200, pid % 250 + 1)
}

/// The standard output of a run that must have succeeded; if it failed, the assertion shows
/// both of its streams.
pub fn stdout_of_success(out: &std::process::Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

pub fn fastfeed() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fastfeed"))
}

/// Runs `fastfeed generate simple` and returns the file.
pub fn generate(dir: &Path, messages: usize, max_packet: usize) -> PathBuf {
    let file = dir.join("simple.dat");
    let out = fastfeed()
        .args(["generate", "simple", "-n", &messages.to_string()])
        .args(["-p", &max_packet.to_string(), "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    file
}

/// A running `fastfeed` process, killed if the test ends before it does.
pub struct Proc {
    pub name: &'static str,
    child: Child,
    stdout: Option<BufReader<ChildStdout>>,
}

/// How a process ended: its success, its standard output and when it ended.
pub struct Ended {
    pub success: bool,
    pub stdout: String,
    pub at: Instant,
}

impl Proc {
    pub fn spawn(name: &'static str, args: &[String]) -> Proc {
        let mut child = fastfeed()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().map(BufReader::new);
        Proc {
            name,
            child,
            stdout,
        }
    }

    /// Waits for the publisher's "ready": it has joined the group and its subscribers said
    /// hello.
    pub fn wait_ready(&mut self) {
        let mut line = String::new();
        self.stdout.as_mut().unwrap().read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready", "{} did not start", self.name);
    }

    pub fn try_end(&mut self) -> Option<Ended> {
        let status = self.child.try_wait().unwrap()?;
        let at = Instant::now();
        let mut stdout = String::new();
        if let Some(mut s) = self.stdout.take() {
            s.read_to_string(&mut stdout).unwrap();
        }
        Some(Ended {
            success: status.success(),
            stdout,
            at,
        })
    }

    pub fn wait(mut self) -> Ended {
        wait_all(std::slice::from_mut(&mut self), Duration::from_secs(60)).remove(0)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits for every process, noting when each ended (to 5 ms); panics past `limit`.
pub fn wait_all(procs: &mut [Proc], limit: Duration) -> Vec<Ended> {
    let deadline = Instant::now() + limit;
    let mut ended: Vec<Option<Ended>> = procs.iter().map(|_| None).collect();
    while ended.iter().any(Option::is_none) {
        for (p, e) in procs.iter_mut().zip(ended.iter_mut()) {
            if e.is_none() {
                *e = p.try_end();
            }
        }
        let running: Vec<_> = procs
            .iter()
            .zip(&ended)
            .filter(|(_, e)| e.is_none())
            .map(|(p, _)| p.name)
            .collect();
        assert!(Instant::now() < deadline, "still running: {running:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
    ended.into_iter().map(Option::unwrap).collect()
}

/// Where a pipeline test's processes write: the publisher's and the subscriber's JSON
/// reports and the subscriber's dump of every record.
pub struct Outputs {
    pub pub_json: PathBuf,
    pub sub_json: PathBuf,
    pub dump: PathBuf,
}

/// Starts `fastfeed subscribe` on `feed`, dumping every record and its report into `dir`.
pub fn spawn_subscriber(dir: &Path, feed: &str) -> (Proc, Outputs) {
    let out = Outputs {
        pub_json: dir.join("publisher.json"),
        sub_json: dir.join("subscriber.json"),
        dump: dir.join("received.txt"),
    };
    let mut args = strings(&["subscribe", "--feed", feed, "--idle-timeout", "20"]);
    args.extend(["--dump".into(), path_arg(&out.dump)]);
    args.extend(["--report-json".into(), path_arg(&out.sub_json)]);
    (Proc::spawn("subscriber", &args), out)
}

pub fn strings(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

pub fn path_arg(p: &Path) -> String {
    p.display().to_string()
}

/// A file of the MOEX FORTS 2013 capture in ../shared/corpus.
pub fn moex_corpus(file: &str) -> String {
    format!(
        "{}/../../../shared/corpus/moex-forts-2013/{file}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// `dir/moex.toml`: the MOEX capture's channel FUT-BOOK-5 on live lines, A, B and snapshot
/// on this process's groups `tag`, `tag + 1` and `tag + 2`.
pub fn moex_live_config(dir: &Path, tag: u16) -> PathBuf {
    let line = |tag: u16, file: &str| {
        format!(
            "{{ group = \"{}\", capture = \"{}\", format = \"raw\" }}",
            unique_group(tag),
            moex_corpus(file)
        )
    };
    let cfg = dir.join("moex.toml");
    std::fs::write(
        &cfg,
        format!(
            "feed = \"moex\"\nprofile = \"moex-forts\"\ntemplates = \"{}\"\n\n[[channel]]\nname = \"FUT-BOOK-5\"\na = {}\nb = {}\nsnapshot = {}\n",
            moex_corpus("templates.xml"),
            line(tag, "increment_a.dat"),
            line(tag + 1, "increment_b.dat"),
            line(tag + 2, "snapshot.dat"),
        ),
    )
    .unwrap();
    cfg
}

/// `cmd` started with its standard output and error piped, once it has said "ready"; its
/// output after that line.
pub fn spawn_ready(cmd: &mut Command) -> (Child, BufReader<ChildStdout>) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ready = String::new();
    stdout.read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), "ready", "{cmd:?} did not start");
    (child, stdout)
}

/// `fastfeed replay --rate PPS -q CFG`, which must succeed.
pub fn replay_at(cfg: &Path, pps: u32) {
    let replay = fastfeed()
        .args(["replay", "--rate", &pps.to_string(), "-q"])
        .arg(cfg)
        .output()
        .unwrap();
    stdout_of_success(&replay, "replay");
}
