//! Building frames: an Ethernet/IPv4/UDP frame around a payload, for writing captures.

use std::net::SocketAddrV4;

use etherparse::PacketBuilder;

/// An Ethernet II frame carrying `payload` in a UDP datagram from `src` to `dst` (IPv4, TTL
/// 1, checksums filled in). The destination MAC is the multicast MAC of a multicast `dst`.
/// `None` if the payload does not fit one datagram.
pub fn udp_frame(src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8]) -> Option<Vec<u8>> {
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
    let mut out = Vec::with_capacity(builder.size(payload.len()));
    builder.write(&mut out, payload).ok()?;
    Some(out)
}
