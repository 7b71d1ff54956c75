//! Writing captures: UDP datagrams as Ethernet frames in a pcap file (nanosecond
//! timestamps), through pcap-file.

use std::io::Write;
use std::net::SocketAddrV4;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};

use crate::udp_frame;

/// Writes datagrams `(time ns, source, destination, payload)` as a nanosecond pcap.
pub fn write_pcap<'a, W: Write>(
    out: W,
    datagrams: impl IntoIterator<Item = (u64, SocketAddrV4, SocketAddrV4, &'a [u8])>,
) -> std::io::Result<W> {
    let err = |e: pcap_file::PcapError| std::io::Error::other(e.to_string());
    let header = PcapHeader {
        ts_resolution: pcap_file::TsResolution::NanoSecond,
        ..PcapHeader::default()
    };
    let mut w = PcapWriter::with_header(out, header).map_err(err)?;
    for (ts, src, dst, payload) in datagrams {
        let frame = udp_frame(src, dst, payload).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "payload over 65,507 bytes",
            )
        })?;
        let packet = PcapPacket::new(Duration::from_nanos(ts), frame.len() as u32, &frame);
        w.write_packet(&packet).map_err(err)?;
    }
    Ok(w.into_writer())
}
