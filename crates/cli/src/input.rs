//! Loading templates and data files, with errors that name the file.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use fastfeed_codec::template::ParseOptions;
use fastfeed_codec::Templates;

/// The templates of `path`. A static error discards its own template and the others are
/// used (spec §4): each error is said on standard error with the templates it cost, and
/// only a file left with no template to decode with is refused (with why). With `scp`, the
/// FAST Session Control Protocol messages the file does not define are known too.
pub fn templates(path: &Path, scp: bool) -> Result<Arc<Templates>> {
    let xml = text(path)?;
    let opts = ParseOptions {
        session_control: scp,
    };
    let checked = fastfeed_codec::template::check_with(&xml, opts);
    let ts = checked.templates;
    if ts.iter().all(|t| t.session) {
        if let Some(e) = checked.errors.first() {
            let more = match checked.errors.len() {
                1 => String::new(),
                n => format!(
                    " (and {} more: `fastfeed templates check` lists them)",
                    n - 1
                ),
            };
            bail!("{}:{e}{more}", path.display());
        }
        let why: Vec<String> = checked.notes.iter().map(|s| s.why.clone()).collect();
        bail!(
            "{} holds no template to decode with{}{}",
            path.display(),
            if why.is_empty() { "" } else { ": " },
            why.join("; ")
        );
    }
    const SHOWN: usize = 10;
    for e in checked.errors.iter().take(SHOWN) {
        eprintln!("fastfeed: {}:{e}", path.display());
    }
    if checked.errors.len() > SHOWN {
        eprintln!(
            "fastfeed: {}: {} more errors (`fastfeed templates check` lists them)",
            path.display(),
            checked.errors.len() - SHOWN
        );
    }
    if !checked.errors.is_empty() {
        let lost: Vec<String> = checked
            .discarded
            .iter()
            .map(|d| match d.id {
                Some(id) => format!("{} ({id})", d.name),
                None => d.name.clone(),
            })
            .collect();
        let lost = match lost.len() {
            0 => "no template that decodes on its own".to_owned(),
            n => format!("{n} templates: {}", lost.join(", ")),
        };
        eprintln!(
            "fastfeed: {}: a template with an error is left out (spec §4), so {lost}; \
             going on with the other {}",
            path.display(),
            ts.iter().filter(|t| !t.session).count()
        );
    }
    Ok(Arc::new(ts))
}

/// A template file's text, in the encoding it names (see
/// [`template_text`](fastfeed_codec::template::template_text)).
pub fn text(path: &Path) -> Result<String> {
    let bytes = bytes(path)?;
    let text = fastfeed_codec::template::template_text(&bytes)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(text.into_owned())
}

pub fn bytes(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// The packets of an input file as `--framing` and `--udp` say: a pcap/pcapng capture (by
/// its magic number, or `--framing pcap`) gives its UDP payloads; other files their framing.
/// A framing error ends the list with that error. Datagrams a capture held in IP fragments
/// are put together into `spill`, which the packets then borrow.
pub fn packets<'a>(
    fa: &crate::FramingArgs,
    data: &'a [u8],
    spill: &'a mut Vec<Vec<u8>>,
) -> Result<Vec<Result<fastfeed_packet::Packet<'a>, fastfeed_packet::FramingError>>> {
    if fa.framing == crate::InputFraming::Pcap || fastfeed_capture::is_capture(data) {
        let cap = fastfeed_capture::Capture::open(data)?;
        let mut it = cap.datagrams();
        let mut dests = Destinations::default();
        // Each payload: borrowed from the file, or the index of its copy in `spill`.
        let held: Vec<(usize, Result<&'a [u8], usize>)> = it
            .by_ref()
            .inspect(|d| {
                if fa.udp.is_none() {
                    dests.add(d.dst);
                }
            })
            .filter(|d| fa.udp.is_none_or(|u| d.dst == u))
            .map(|d| {
                let offset = d.offset_in(data);
                match d.payload {
                    Cow::Borrowed(b) => (offset, Ok(b)),
                    Cow::Owned(v) => {
                        spill.push(v);
                        (offset, Err(spill.len() - 1))
                    }
                }
            })
            .collect();
        let spill: &'a Vec<Vec<u8>> = spill;
        let out: Vec<_> = held
            .into_iter()
            .enumerate()
            .map(|(index, (offset, bytes))| {
                Ok(fastfeed_packet::Packet {
                    index,
                    offset,
                    bytes: bytes.unwrap_or_else(|i| &spill[i]),
                })
            })
            .collect();
        report_capture(&fastfeed_capture::PayloadStats {
            capture: it.stats(),
            selected: out.len() as u64,
            bytes: data.len() as u64,
        });
        if fa.udp.is_none() {
            dests.report();
        }
        return Ok(out);
    }
    if let Some(u) = fa.udp {
        // Silently decoding every packet would pass for the one group's.
        eprintln!(
            "warning: --udp {u} selects datagrams of a pcap/pcapng capture; this input is not \
             one, so every packet of it is read (by --framing)"
        );
    }
    Ok(fa.framing.framing().packets(data).collect())
}

/// An input opened for reading: a capture read as it goes, or the whole input's bytes.
pub enum Opened {
    Capture(CaptureInput),
    Whole(Vec<u8>),
}

/// A capture read a run of records at a time ([`stream_capture`]).
pub struct CaptureInput {
    name: String,
    reader: Box<dyn std::io::Read>,
    run_bytes: usize,
}

/// File bytes per run of a capture on standard input: small, so that a live pipe
/// (`tcpdump -w - | fastfeed decode -t T -`) is decoded as it comes.
const STDIN_RUN_BYTES: usize = 64 << 10;

/// Opens `path` (`-`: standard input): a pcap/pcapng capture (by its magic number, or
/// `--framing pcap`) to read as it goes, in bounded memory; anything else read whole.
pub fn open(fa: &crate::FramingArgs, path: &Path) -> Result<Opened> {
    let pcap = fa.framing == crate::InputFraming::Pcap;
    if path.as_os_str() != "-" {
        if !(pcap || is_capture_file(path)?) {
            return Ok(Opened::Whole(bytes(path)?));
        }
        let file =
            std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
        return Ok(Opened::Capture(CaptureInput {
            name: path.display().to_string(),
            reader: Box::new(file),
            run_bytes: fastfeed_capture::RUN_BYTES,
        }));
    }
    // The magic number, read first and put back in front of the rest.
    let stdin = std::io::stdin();
    let mut head = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(stdin.lock(), 4), &mut head)
        .context("reading standard input")?;
    if pcap || fastfeed_capture::is_capture(&head) {
        let reader = std::io::Read::chain(std::io::Cursor::new(head), stdin);
        return Ok(Opened::Capture(CaptureInput {
            name: "standard input".into(),
            reader: Box::new(reader),
            run_bytes: STDIN_RUN_BYTES,
        }));
    }
    std::io::Read::read_to_end(&mut stdin.lock(), &mut head).context("reading standard input")?;
    Ok(Opened::Whole(head))
}

/// A capture's UDP payloads (those to `udp`, or all), read a run of records at a time
/// whatever its size, each to `take` until it returns Some, which is returned. The
/// capture's counts go to standard error at the end.
pub fn stream_capture<T>(
    input: CaptureInput,
    udp: Option<std::net::SocketAddrV4>,
    mut take: impl FnMut(fastfeed_packet::Packet<'_>) -> Option<T>,
) -> Result<Option<T>> {
    let name = input.name;
    let reading = || format!("reading {name}");
    let mut runs = fastfeed_capture::CaptureRuns::new(input.reader, udp)
        .with_context(reading)?
        .run_bytes(input.run_bytes);
    let (mut index, mut stop) = (0, None);
    let mut dests = Destinations::default();
    let read = loop {
        let more = runs.next_run(|d, offset| {
            if udp.is_none() {
                dests.add(d.dst);
            }
            if stop.is_none() {
                stop = take(fastfeed_packet::Packet {
                    index,
                    offset,
                    bytes: &d.payload,
                });
                index += 1;
            }
        });
        match more {
            Ok(true) if stop.is_none() => {}
            other => break other,
        }
    };
    report_capture(&runs.stats().lock().expect("not poisoned"));
    dests.report();
    read.with_context(reading)?;
    Ok(stop)
}

/// A capture's datagrams per destination, to tell its feeds apart (lines A and B, the
/// snapshot line, other traffic) when no `--udp` picked one. At most [`Destinations::MAX`]
/// are told apart, whatever the capture holds; the rest are counted together.
#[derive(Default)]
struct Destinations {
    each: std::collections::HashMap<std::net::SocketAddrV4, u64>,
    others: u64,
}

impl Destinations {
    const MAX: usize = 1024;

    fn add(&mut self, dst: std::net::SocketAddrV4) {
        if let Some(n) = self.each.get_mut(&dst) {
            *n += 1;
        } else if self.each.len() < Self::MAX {
            self.each.insert(dst, 1);
        } else {
            self.others += 1;
        }
    }

    /// On standard error when the capture held more than one destination: the busiest
    /// eight with their datagrams, and how to pick one.
    fn report(&self) {
        if self.each.len() + (self.others > 0) as usize <= 1 {
            return;
        }
        let mut by: Vec<_> = self.each.iter().collect();
        by.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let mut list: Vec<String> = by.iter().take(8).map(|(d, n)| format!("{d} {n}")).collect();
        let rest: u64 = by.iter().skip(8).map(|(_, n)| **n).sum::<u64>() + self.others;
        if rest > 0 {
            list.push(format!("others {rest}"));
        }
        eprintln!(
            "capture: datagrams by destination (--udp GROUP:PORT reads one): {}",
            list.join(", ")
        );
    }
}

/// What a capture held, on standard error: every frame is in one count.
pub fn report_capture(p: &fastfeed_capture::PayloadStats) {
    eprintln!("{}", capture_line(p));
}

/// What a capture held and what was taken from it, in one line.
pub fn capture_line(p: &fastfeed_capture::PayloadStats) -> String {
    format!("capture: {p}")
}

/// Whether the file starts like a pcap or pcapng capture.
pub fn is_capture_file(path: &Path) -> Result<bool> {
    Ok(fastfeed_capture::is_capture(&head(path, 4)?))
}

/// The first `n` bytes of a file (fewer if it is shorter).
pub fn head(path: &Path, n: u64) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, n), &mut out))
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(out)
}

/// The whole file, or all of standard input for `-`.
pub fn bytes_or_stdin(path: &Path) -> Result<Vec<u8>> {
    if path.as_os_str() != "-" {
        return bytes(path);
    }
    let mut data = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut data)
        .context("reading standard input")?;
    Ok(data)
}

/// Checks, before a run, that an output file can be written: its folder exists and it is not
/// a folder. It is opened for writing (created empty if new), so a run's results are not
/// lost at the end to a mistyped path.
pub fn writable(path: &Path, what: &str) -> Result<()> {
    if path.is_dir() {
        bail!("{what} {}: is a folder, not a file", path.display());
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .with_context(|| format!("{what} {}: cannot write it", path.display()))?;
    Ok(())
}
