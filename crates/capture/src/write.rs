//! Writing captures: UDP datagrams as Ethernet frames in a pcap file (nanosecond
//! timestamps), through pcap-file; those over a link's MTU as IPv4 fragments, if asked.

use std::io::Write;
use std::net::SocketAddrV4;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};

use crate::{udp_frame_into, udp_frames};

/// Writes datagrams `(time ns, source, destination, payload)` as a nanosecond pcap. With
/// `mtu`, a datagram larger than it is written as the IPv4 fragments a host sending on such
/// a link makes (their identifications counting up, as a sender's do); without, each is one
/// frame, however large.
pub fn write_pcap<'a, W: Write>(
    out: W,
    datagrams: impl IntoIterator<Item = (u64, SocketAddrV4, SocketAddrV4, &'a [u8])>,
    mtu: Option<usize>,
) -> std::io::Result<W> {
    let err = pcap_error;
    let header = PcapHeader {
        ts_resolution: pcap_file::TsResolution::NanoSecond,
        ..PcapHeader::default()
    };
    let mut w = PcapWriter::with_header(out, header).map_err(err)?;
    for (id, (ts, src, dst, payload)) in datagrams.into_iter().enumerate() {
        let frames = udp_frames(src, dst, payload, mtu.unwrap_or(usize::MAX), id as u16)
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "payload over 65,507 bytes, or an MTU under 28",
                )
            })?;
        for frame in frames {
            let packet = PcapPacket::new(Duration::from_nanos(ts), frame.len() as u32, &frame);
            w.write_packet(&packet).map_err(err)?;
        }
    }
    Ok(w.into_writer())
}

/// A nanosecond pcap written a datagram at a time (a feed handler recording what it
/// receives): each datagram one Ethernet/IPv4/UDP frame, built with its record header in a
/// buffer kept from one to the next and written in one call, so a writer that refuses a
/// call ([`crate::Spool`], its disk behind) refuses a whole datagram, never part of one.
pub struct PcapRecorder<W: Write> {
    out: W,
    record: Vec<u8>,
    /// Datagrams written.
    pub written: u64,
    /// Datagrams the writer refused ([`std::io::ErrorKind::WouldBlock`]): not in the file.
    pub refused: u64,
}

/// A pcap record's header: seconds, nanoseconds, captured and original length.
const RECORD_HEADER: usize = 16;

impl<W: Write> PcapRecorder<W> {
    /// The file header every recording begins with (little-endian, nanosecond times, and
    /// tcpdump's snap length: the largest datagram's frame, 65,549 bytes, is over 65,535).
    pub fn file_header() -> Vec<u8> {
        let header = PcapHeader {
            ts_resolution: pcap_file::TsResolution::NanoSecond,
            endianness: pcap_file::Endianness::Little,
            snaplen: 262_144,
            ..PcapHeader::default()
        };
        let mut out = Vec::new();
        header
            .write_to(&mut out)
            .expect("a header written to memory");
        out
    }

    /// Writes the file header ([`file_header`](Self::file_header)).
    pub fn new(mut out: W) -> std::io::Result<PcapRecorder<W>> {
        out.write_all(&Self::file_header())?;
        Ok(PcapRecorder {
            out,
            record: Vec::new(),
            written: 0,
            refused: 0,
        })
    }

    /// One datagram from `src` to `dst`, received at `ns` (since the epoch). Ok(false): the
    /// writer refused it for now (counted in `refused`).
    pub fn record(
        &mut self,
        ns: u64,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        payload: &[u8],
    ) -> std::io::Result<bool> {
        // pcap-file writes a record header only through its writer, which would cut a record
        // over two calls: the header's four fields are written here, as the file header says.
        self.record.clear();
        self.record.resize(RECORD_HEADER, 0);
        if !udp_frame_into(&mut self.record, src, dst, payload) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "payload over 65,507 bytes",
            ));
        };
        let len = self.record.len() - RECORD_HEADER;
        let (secs, nanos) = (ns / 1_000_000_000, ns % 1_000_000_000);
        let fields = [secs as u32, nanos as u32, len as u32, len as u32];
        for (i, f) in fields.iter().enumerate() {
            self.record[4 * i..4 * i + 4].copy_from_slice(&f.to_le_bytes());
        }
        match self.out.write_all(&self.record) {
            Ok(()) => {
                self.written += 1;
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                self.refused += 1;
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// The writer, for its owner to flush or finish.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// The writer, between records (to cut a [`crate::Spool`]'s file, say).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }
}

fn pcap_error(e: pcap_file::PcapError) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Capture;

    #[test]
    fn a_recording_reads_back_datagram_by_datagram() {
        let (a, b) = (
            "10.0.0.1:5000".parse().unwrap(),
            "10.0.0.2:5001".parse().unwrap(),
        );
        let group: SocketAddrV4 = "239.1.2.3:16001".parse().unwrap();
        let mut rec = PcapRecorder::new(Vec::new()).unwrap();
        assert!(rec
            .record(1_700_000_000_123_456_789, a, group, b"first")
            .unwrap());
        assert!(rec
            .record(1_700_000_000_123_456_790, b, group, &[7u8; 1400])
            .unwrap());
        // The largest datagram there is: its frame is longer than 65,535 bytes.
        assert!(rec.record(3, a, group, &[9u8; 65_507]).unwrap());
        let too_big = vec![0u8; 70_000];
        assert!(rec.record(1, a, group, &too_big).is_err());
        assert_eq!(rec.written, 3);
        let file = rec.into_inner();
        let capture = Capture::open(&file).unwrap();
        let got: Vec<_> = capture
            .datagrams()
            .map(|d| (d.ts_ns, d.src, d.dst, d.payload.into_owned()))
            .collect();
        assert_eq!(
            got,
            [
                (1_700_000_000_123_456_789, a, group, b"first".to_vec()),
                (1_700_000_000_123_456_790, b, group, vec![7u8; 1400]),
                (3, a, group, vec![9u8; 65_507]),
            ]
        );
    }
}
