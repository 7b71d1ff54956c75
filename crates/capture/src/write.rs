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
/// receives): each datagram one Ethernet/IPv4/UDP frame, built in a buffer kept from one
/// to the next.
pub struct PcapRecorder<W: Write> {
    w: PcapWriter<W>,
    frame: Vec<u8>,
    /// Datagrams written.
    pub written: u64,
}

impl<W: Write> PcapRecorder<W> {
    /// Writes the file header.
    pub fn new(out: W) -> std::io::Result<PcapRecorder<W>> {
        let header = PcapHeader {
            ts_resolution: pcap_file::TsResolution::NanoSecond,
            ..PcapHeader::default()
        };
        let w = PcapWriter::with_header(out, header).map_err(pcap_error)?;
        Ok(PcapRecorder {
            w,
            frame: Vec::new(),
            written: 0,
        })
    }

    /// One datagram from `src` to `dst`, received at `ns` (since the epoch).
    pub fn record(
        &mut self,
        ns: u64,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        payload: &[u8],
    ) -> std::io::Result<()> {
        if !udp_frame_into(&mut self.frame, src, dst, payload) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "payload over 65,507 bytes",
            ));
        }
        let packet = PcapPacket::new(
            Duration::from_nanos(ns),
            self.frame.len() as u32,
            &self.frame,
        );
        self.w.write_packet(&packet).map_err(pcap_error)?;
        self.written += 1;
        Ok(())
    }

    /// The writer, for its owner to flush.
    pub fn into_inner(self) -> W {
        self.w.into_writer()
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
        rec.record(1_700_000_000_123_456_789, a, group, b"first")
            .unwrap();
        rec.record(1_700_000_000_123_456_790, b, group, &[7u8; 1400])
            .unwrap();
        let too_big = vec![0u8; 70_000];
        assert!(rec.record(1, a, group, &too_big).is_err());
        assert_eq!(rec.written, 2);
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
            ]
        );
    }
}
