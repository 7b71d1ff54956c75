//! A capture in parts (a recording split every so many bytes), read as one stream: the
//! parts' bytes one after another, except that a pcap's later parts each begin with the
//! file header of the first, which is checked and dropped, so the whole reads as one pcap.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::reader::Format;

/// A pcap's file header: magic, versions, zone, accuracy, snap length, link type.
const PCAP_HEADER: usize = 24;

/// The parts of a capture, read in order as one.
pub struct Parts {
    cur: File,
    rest: VecDeque<PathBuf>,
    /// The first part's header, where it is a pcap.
    pcap_header: Option<[u8; PCAP_HEADER]>,
    /// The bytes the reading gives, all parts together.
    len: u64,
}

impl Parts {
    /// Opens the first part; the others are opened as the reading reaches them. A pcapng
    /// cannot be continued this way (its later parts would carry sections of their own).
    pub fn open(first: &Path, rest: &[PathBuf]) -> io::Result<Parts> {
        let mut cur = File::open(first)?;
        let mut head = Vec::with_capacity(PCAP_HEADER);
        (&mut cur).take(PCAP_HEADER as u64).read_to_end(&mut head)?;
        let pcap_header = match Format::detect(&head) {
            Some(Format::Pcap) => head.as_slice().try_into().ok(),
            Some(Format::PcapNg) if !rest.is_empty() => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{}: a pcapng capture cannot be continued", first.display()),
                ))
            }
            _ => None,
        };
        let dropped = pcap_header.map_or(0, |_| PCAP_HEADER as u64);
        let mut len = cur.metadata()?.len();
        for p in rest {
            len += std::fs::metadata(p)?.len().saturating_sub(dropped);
        }
        // The first part is read from its start, header and all.
        cur = File::open(first)?;
        Ok(Parts {
            cur,
            rest: rest.iter().cloned().collect(),
            pcap_header,
            len,
        })
    }

    /// The bytes the reading gives, all parts together (as they were when opened).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether there is nothing to read.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn next_part(&mut self, path: &Path) -> io::Result<()> {
        let mut f = File::open(path)?;
        if let Some(first) = &self.pcap_header {
            let mut head = [0u8; PCAP_HEADER];
            f.read_exact(&mut head)?;
            if &head != first {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{}: not a part of the same capture (its pcap header differs)",
                        path.display()
                    ),
                ));
            }
        }
        self.cur = f;
        Ok(())
    }
}

impl Read for Parts {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.cur.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            let Some(next) = self.rest.pop_front() else {
                return Ok(0);
            };
            self.next_part(&next)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Capture, PcapRecorder};
    use std::net::SocketAddrV4;

    fn pcap(datagrams: &[&[u8]]) -> Vec<u8> {
        let src: SocketAddrV4 = "10.0.0.1:5000".parse().unwrap();
        let group: SocketAddrV4 = "239.1.2.3:16001".parse().unwrap();
        let mut rec = PcapRecorder::new(Vec::new()).unwrap();
        for (i, d) in datagrams.iter().enumerate() {
            assert!(rec.record(1_000 + i as u64, src, group, d).unwrap());
        }
        rec.into_inner()
    }

    fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
        let p = std::env::temp_dir().join(format!("fastfeed-parts-{}-{name}", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn pcap_parts_read_as_one_capture() {
        let a = scratch("a.pcap", &pcap(&[b"one", b"two"]));
        let b = scratch("b.pcap", &pcap(&[b"three"]));
        let c = scratch("c.pcap", &pcap(&[]));
        let rest = [b.clone(), c.clone()];
        let mut whole = Vec::new();
        let mut parts = Parts::open(&a, &rest).unwrap();
        let len = parts.len();
        parts.read_to_end(&mut whole).unwrap();
        assert_eq!(whole.len() as u64, len);
        let payloads: Vec<Vec<u8>> = Capture::open(&whole)
            .unwrap()
            .datagrams()
            .map(|d| d.payload.into_owned())
            .collect();
        assert_eq!(
            payloads,
            [b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]
        );
        for p in [a, b, c] {
            std::fs::remove_file(p).ok();
        }
    }

    #[test]
    fn a_part_of_another_capture_is_refused_and_other_files_are_laid_end_to_end() {
        let a = scratch("x.pcap", &pcap(&[b"one"]));
        let mut other = pcap(&[b"two"]);
        other[20] ^= 1; // another link type
        let b = scratch("y.pcap", &other);
        let mut whole = Vec::new();
        let e = Parts::open(&a, std::slice::from_ref(&b))
            .unwrap()
            .read_to_end(&mut whole)
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
        let (r1, r2) = (scratch("r1.dat", b"abc"), scratch("r2.dat", b"def"));
        let mut raw = Vec::new();
        let mut parts = Parts::open(&r1, std::slice::from_ref(&r2)).unwrap();
        assert_eq!(parts.len(), 6);
        parts.read_to_end(&mut raw).unwrap();
        assert_eq!(raw, b"abcdef");
        for p in [a, b, r1, r2] {
            std::fs::remove_file(p).ok();
        }
    }
}
