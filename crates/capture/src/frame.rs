//! Building frames: an Ethernet/IPv4/UDP frame around a payload (or the IPv4 fragments of
//! one too large for the link), for writing captures.

use std::net::SocketAddrV4;

use etherparse::{Ethernet2Header, IpFragOffset, Ipv4HeaderSlice, PacketBuilder};

/// An Ethernet II frame carrying `payload` in a UDP datagram from `src` to `dst` (IPv4, TTL
/// 1, checksums filled in). The destination MAC is the multicast MAC of a multicast `dst`.
/// `None` if the payload does not fit one datagram.
pub fn udp_frame(src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    udp_frame_into(&mut out, src, dst, payload).then_some(out)
}

/// [`udp_frame`] appended to `out`, so a writer of many frames reuses one buffer (and can
/// put a record's header before the frame); false, `out` as it was, if the payload does not
/// fit one datagram.
pub fn udp_frame_into(
    out: &mut Vec<u8>,
    src: SocketAddrV4,
    dst: SocketAddrV4,
    payload: &[u8],
) -> bool {
    let ip = dst.ip().octets();
    let dst_mac = if dst.ip().is_multicast() {
        // RFC 1112: 01:00:5e and the low 23 bits of the group.
        [0x01, 0x00, 0x5e, ip[1] & 0x7f, ip[2], ip[3]]
    } else {
        [0x02, 0, ip[0], ip[1], ip[2], ip[3]]
    };
    let s = src.ip().octets();
    let src_mac = [0x02, 0, s[0], s[1], s[2], s[3]];
    let builder = PacketBuilder::ethernet2(src_mac, dst_mac)
        .ipv4(s, ip, 1)
        .udp(src.port(), dst.port());
    let head = out.len();
    out.reserve(builder.size(payload.len()));
    let ok = builder.write(out, payload).is_ok();
    if !ok {
        out.truncate(head);
    }
    ok
}

/// The Ethernet II frames of `payload` sent as one UDP datagram from `src` to `dst` over a
/// link of `mtu` bytes (IP header included): one frame if it fits, else the IPv4 fragments a
/// sending host makes, in order, all with identification `id`. `None` if the payload does not
/// fit one datagram, or `mtu` leaves no room for 8 bytes of data after the IP header.
pub fn udp_frames(
    src: SocketAddrV4,
    dst: SocketAddrV4,
    payload: &[u8],
    mtu: usize,
    id: u16,
) -> Option<Vec<Vec<u8>>> {
    let whole = udp_frame(src, dst, payload)?;
    const ETH: usize = Ethernet2Header::LEN;
    let ip = Ipv4HeaderSlice::from_slice(&whole[ETH..]).ok()?;
    let (header_len, mut header) = (ip.slice().len(), ip.to_header());
    // Each fragment but the last carries a multiple of 8 bytes (RFC 791).
    let step = (mtu.checked_sub(header_len)? / 8) * 8;
    if step == 0 {
        return None;
    }
    let datagram = &whole[ETH + header_len..];
    if datagram.len() + header_len <= mtu {
        return Some(vec![whole]);
    }
    let eth = &whole[..ETH];
    let mut out = Vec::new();
    for (i, chunk) in datagram.chunks(step).enumerate() {
        header.identification = id;
        header.more_fragments = (i + 1) * step < datagram.len();
        header.fragment_offset = IpFragOffset::try_new((i * step / 8) as u16).ok()?;
        header.set_payload_len(chunk.len()).ok()?;
        header.header_checksum = header.calc_header_checksum();
        let mut frame = eth.to_vec();
        header.write(&mut frame).ok()?;
        frame.extend_from_slice(chunk);
        out.push(frame);
    }
    Some(out)
}
