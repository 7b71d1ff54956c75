//! IPv4 UDP multicast sockets.

use crate::{io_err, NetError};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

/// Receive buffer size requested by [`McastReceiver::new`]. Bursts of market data
/// overflow the default (~200 KiB) buffer; the kernel caps the request at
/// `net.core.rmem_max` (raise it with `sysctl -w net.core.rmem_max=16777216`).
pub const RECV_BUFFER_REQUEST: usize = 8 << 20;

/// What to tell a user when [`loopback_multicast_works`] returns false.
pub const LOOPBACK_HINT: &str = "multicast on the loopback interface is unavailable; try \
`sudo ip link set lo multicast on` and `sudo ip route add 224.0.0.0/4 dev lo`";

fn udp_socket() -> Result<Socket, NetError> {
    Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).map_err(io_err("create socket"))
}

fn check_group(group: &SocketAddrV4) -> Result<(), NetError> {
    if group.ip().is_multicast() {
        Ok(())
    } else {
        Err(NetError::NotMulticast(*group.ip()))
    }
}

/// Sends datagrams to one multicast group.
#[derive(Debug)]
pub struct McastSender {
    socket: UdpSocket,
    group: SocketAddrV4,
}

impl McastSender {
    /// `interface` selects the outgoing interface (IP_MULTICAST_IF): use 127.0.0.1
    /// for loopback, as the default route usually does not cover it. `loopback`
    /// sets IP_MULTICAST_LOOP, needed for receivers on the same host.
    pub fn new(
        group: SocketAddrV4,
        interface: Ipv4Addr,
        ttl: u32,
        loopback: bool,
    ) -> Result<Self, NetError> {
        check_group(&group)?;
        let socket = udp_socket()?;
        socket
            .set_multicast_if_v4(&interface)
            .map_err(io_err(format!("IP_MULTICAST_IF {interface}")))?;
        socket
            .set_multicast_ttl_v4(ttl)
            .map_err(io_err("IP_MULTICAST_TTL"))?;
        socket
            .set_multicast_loop_v4(loopback)
            .map_err(io_err("IP_MULTICAST_LOOP"))?;
        let any = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0);
        socket
            .bind(&SockAddr::from(any))
            .map_err(io_err("bind sender"))?;
        Ok(McastSender {
            socket: socket.into(),
            group,
        })
    }

    /// Sends one datagram to the group.
    pub fn send(&self, datagram: &[u8]) -> io::Result<usize> {
        self.socket.send_to(datagram, self.group)
    }

    pub fn group(&self) -> SocketAddrV4 {
        self.group
    }
}

/// Receives datagrams of one multicast group.
#[derive(Debug)]
pub struct McastReceiver {
    socket: UdpSocket,
    group: SocketAddrV4,
    source: Option<Ipv4Addr>,
    recv_buffer: usize,
    requested: usize,
}

impl McastReceiver {
    /// Binds `group`'s address and port (binding the group address rather than
    /// 0.0.0.0 keeps other groups on the same port out), with SO_REUSEADDR and
    /// SO_REUSEPORT so several receivers can share it, then joins the group on
    /// `interface` and asks for a [`RECV_BUFFER_REQUEST`] receive buffer.
    pub fn new(group: SocketAddrV4, interface: Ipv4Addr) -> Result<Self, NetError> {
        Self::with_buffer(group, interface, RECV_BUFFER_REQUEST)
    }

    /// As [`new`](Self::new), but receiving only what `source` sends to the group when
    /// `source` is given: a source-specific join (IGMPv3, IP_ADD_SOURCE_MEMBERSHIP), which
    /// networks that route market data by PIM-SSM need (exchanges list each line's source
    /// address beside its group), and which keeps another sender to the same group out.
    pub fn join(
        group: SocketAddrV4,
        source: Option<Ipv4Addr>,
        interface: Ipv4Addr,
    ) -> Result<Self, NetError> {
        Self::open(group, source, interface, RECV_BUFFER_REQUEST)
    }

    /// As [`new`](Self::new), asking for a receive buffer of `request` bytes.
    pub fn with_buffer(
        group: SocketAddrV4,
        interface: Ipv4Addr,
        request: usize,
    ) -> Result<Self, NetError> {
        Self::open(group, None, interface, request)
    }

    fn open(
        group: SocketAddrV4,
        source: Option<Ipv4Addr>,
        interface: Ipv4Addr,
        request: usize,
    ) -> Result<Self, NetError> {
        check_group(&group)?;
        if let Some(s) = source {
            if s.is_multicast() || s.is_broadcast() || s.is_unspecified() {
                return Err(NetError::BadSource(s));
            }
        }
        let socket = udp_socket()?;
        socket
            .set_reuse_address(true)
            .map_err(io_err("SO_REUSEADDR"))?;
        socket
            .set_reuse_port(true)
            .map_err(io_err("SO_REUSEPORT"))?;
        // Not fatal if refused: the granted size is reported instead.
        let _ = socket.set_recv_buffer_size(request);
        let recv_buffer = socket.recv_buffer_size().map_err(io_err("SO_RCVBUF"))?;
        socket
            .bind(&SockAddr::from(group))
            .map_err(io_err(format!("bind {group}")))?;
        match source {
            Some(s) => socket
                .join_ssm_v4(&s, group.ip(), &interface)
                .map_err(io_err(format!(
                    "join {} from {s} on {interface}",
                    group.ip()
                )))?,
            None => socket
                .join_multicast_v4(group.ip(), &interface)
                .map_err(io_err(format!("join {} on {interface}", group.ip())))?,
        }
        Ok(McastReceiver {
            socket: socket.into(),
            group,
            source,
            recv_buffer,
            requested: request,
        })
    }

    /// Receives one datagram (truncated to `buf.len()`).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.socket.recv(buf)
    }

    /// `None` blocks forever; on timeout `recv` fails with `WouldBlock`/`TimedOut`.
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.socket.set_read_timeout(timeout)
    }

    /// Non-blocking mode: `recv` fails with `WouldBlock` at once when nothing is queued,
    /// so a caller can poll the socket together with other work.
    pub fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        self.socket.set_nonblocking(nonblocking)
    }

    /// SO_RCVBUF as granted by the kernel (Linux reports twice the usable size).
    pub fn recv_buffer_size(&self) -> usize {
        self.recv_buffer
    }

    /// The receive buffer size asked for.
    pub fn recv_buffer_requested(&self) -> usize {
        self.requested
    }

    /// Datagrams the kernel dropped for this socket so far, mostly because its receive
    /// buffer was full: the `drops` column of `/proc/net/udp`. `None` where that cannot
    /// be read (not Linux).
    pub fn kernel_drops(&self) -> Option<u64> {
        let inode = self.inode()?;
        // The kernel writes the table a page at a time and resumes each read by row number,
        // so a socket closed elsewhere meanwhile can shift a row past a read's end and leave
        // it out: read again when this socket's row is missing.
        (0..4).find_map(|_| {
            let table = std::fs::read_to_string("/proc/net/udp").ok()?;
            udp_drops(&table, &inode)
        })
    }

    /// The socket's inode, its key in `/proc/net/udp` (see [`udp_drops_by_inode`]).
    pub fn inode(&self) -> Option<String> {
        use std::os::fd::AsRawFd;
        let link = std::fs::read_link(format!("/proc/self/fd/{}", self.socket.as_raw_fd())).ok()?;
        let inode = link.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?;
        Some(inode.to_owned())
    }

    pub fn group(&self) -> SocketAddrV4 {
        self.group
    }

    /// The only sender this receiver takes datagrams from (a source-specific join), if any.
    pub fn source(&self) -> Option<Ipv4Addr> {
        self.source
    }

    /// The socket, to wait on it with others.
    pub fn socket(&self) -> &UdpSocket {
        &self.socket
    }
}

/// The `drops` column of every UDP socket of `/proc/net/udp` by inode, from one read (many
/// sockets' drops without a read each); `None` where it cannot be read.
pub fn udp_drops_by_inode() -> Option<std::collections::HashMap<String, u64>> {
    let table = std::fs::read_to_string("/proc/net/udp").ok()?;
    let rows = table.lines().skip(1).filter_map(|line| {
        let cols: Vec<&str> = line.split_whitespace().collect();
        Some((cols.get(9)?.to_string(), cols.get(12)?.parse().ok()?))
    });
    Some(rows.collect())
}

/// The `drops` column of the `/proc/net/udp` row of the socket with `inode`.
fn udp_drops(table: &str, inode: &str) -> Option<u64> {
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
    table.lines().skip(1).find_map(|line| {
        let cols: Vec<&str> = line.split_whitespace().collect();
        (cols.get(9) == Some(&inode)).then(|| cols.get(12)?.parse().ok())?
    })
}

/// What to tell a user whose receiver lost datagrams in the kernel: `drops` since the
/// socket opened, `granted` its SO_RCVBUF.
pub fn overflow_hint(drops: u64, granted: usize) -> String {
    format!(
        "the kernel dropped {drops} datagrams for this socket: its receive buffer \
         ({granted} bytes granted) overflowed because packets came faster than they were \
         read. Send slower (multicast -s MICROS) or allow a larger buffer \
         (sysctl -w net.core.rmem_max=16777216; {RECV_BUFFER_REQUEST} bytes are asked for)"
    )
}

/// Whether a datagram sent to a multicast group via 127.0.0.1 comes back within
/// 500 ms. If not, show [`LOOPBACK_HINT`] to the user.
pub fn loopback_multicast_works() -> bool {
    let mut rng = fastrand::Rng::new();
    let group = SocketAddrV4::new(
        Ipv4Addr::new(239, 255, rng.u8(..), rng.u8(1..)),
        rng.u16(20000..60000),
    );
    let probe = rng.u64(..).to_be_bytes();
    probe_once(group, &probe).unwrap_or(false)
}

fn probe_once(group: SocketAddrV4, probe: &[u8]) -> Result<bool, NetError> {
    let lo = Ipv4Addr::LOCALHOST;
    let rx = McastReceiver::new(group, lo)?;
    let tx = McastSender::new(group, lo, 1, true)?;
    tx.send(probe).map_err(io_err("send probe"))?;
    let deadline = Instant::now() + Duration::from_millis(500);
    let mut buf = [0u8; 64];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        rx.set_read_timeout(Some(left)).map_err(io_err("timeout"))?;
        match rx.recv(&mut buf) {
            Ok(n) if &buf[..n] == probe => return Ok(true),
            Ok(_) => continue, // someone else's datagram
            Err(_) => return Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn drops_are_read_from_the_socket_row() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n\
   7: 857FFFEF:32D6 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 411 2 0000000000000000 0\n\
  12: 857FFFEF:32D6 00000000:0000 07 00000000:00012C00 00:00000000 00000000     0        0 4242 2 0000000000000000 17\n";
        assert_eq!(super::udp_drops(table, "4242"), Some(17));
        assert_eq!(super::udp_drops(table, "411"), Some(0));
        assert_eq!(super::udp_drops(table, "41"), None);
    }
}
