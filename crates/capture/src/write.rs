//! Writing captures: UDP datagrams as Ethernet frames in a pcap file (nanosecond
//! timestamps), through pcap-file; those over a link's MTU as IPv4 fragments, if asked.

use std::io::Write;
use std::net::SocketAddrV4;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};

use crate::udp_frames;

/// Writes datagrams `(time ns, source, destination, payload)` as a nanosecond pcap. With
/// `mtu`, a datagram larger than it is written as the IPv4 fragments a host sending on such
/// a link makes (their identifications counting up, as a sender's do); without, each is one
/// frame, however large.
pub fn write_pcap<'a, W: Write>(
    out: W,
    datagrams: impl IntoIterator<Item = (u64, SocketAddrV4, SocketAddrV4, &'a [u8])>,
    mtu: Option<usize>,
) -> std::io::Result<W> {
    let err = |e: pcap_file::PcapError| std::io::Error::other(e.to_string());
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
