//! Several multicast groups read by one thread: the lines (channels) of a feed that one
//! decoding thread takes, each on its own group, as OPRA and other many-line feeds publish.

use crate::mcast::McastReceiver;
use crate::stamp::StampedRecv;
use crate::{io_err, NetError};
use rustix::event::{poll, PollFd, PollFlags, Timespec};
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

/// The group of channel `channel` of a feed whose channel 0 is on `base`: the address plus
/// the channel number, the same port (an exchange numbers its lines' groups the same way).
pub fn channel_group(base: SocketAddrV4, channel: u16) -> Result<SocketAddrV4, NetError> {
    let ip = u32::from(*base.ip())
        .checked_add(channel as u32)
        .map(Ipv4Addr::from)
        .filter(|ip| ip.is_multicast())
        .ok_or(NetError::NotMulticast(*base.ip()))?;
    Ok(SocketAddrV4::new(ip, base.port()))
}

/// A receiver per group, read in turn without blocking; when none has a datagram queued,
/// [`Lines::wait`] blocks in `poll(2)` on all of them at once.
#[derive(Debug)]
pub struct Lines {
    receivers: Vec<McastReceiver>,
    /// Where the next sweep starts, so a busy line does not starve the others.
    next: usize,
    recv: StampedRecv,
}

impl Lines {
    /// Joins every group on `interface` (from `source` only, when given: see
    /// [`McastReceiver::join`]), each socket non-blocking and with the kernel's receive
    /// timestamps on where it allows them.
    pub fn join(
        groups: &[SocketAddrV4],
        source: Option<Ipv4Addr>,
        interface: Ipv4Addr,
    ) -> Result<Lines, NetError> {
        let mut receivers = Vec::with_capacity(groups.len());
        for &g in groups {
            let rx = McastReceiver::join(g, source, interface)?;
            rx.set_nonblocking(true)
                .map_err(io_err(format!("O_NONBLOCK {g}")))?;
            // Without timestamps the lines still work; their datagrams come unstamped.
            let _ = rx.stamp_arrivals();
            receivers.push(rx);
        }
        Ok(Lines {
            receivers,
            next: 0,
            recv: StampedRecv::new(),
        })
    }

    /// One datagram from the first line, in turn, that has one queued: (line index, length).
    /// `None` when no line has one.
    pub fn try_recv(&mut self, buf: &mut [u8]) -> io::Result<Option<(usize, usize)>> {
        Ok(self.try_recv_stamped(buf)?.map(|(i, len, _)| (i, len)))
    }

    /// As [`try_recv`](Self::try_recv), with the kernel's receive timestamp of the datagram
    /// (ns on CLOCK_REALTIME; see [`StampedRecv`]).
    pub fn try_recv_stamped(
        &mut self,
        buf: &mut [u8],
    ) -> io::Result<Option<(usize, usize, Option<u64>)>> {
        let n = self.receivers.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            match self.recv.recv(&self.receivers[i], buf) {
                Ok((len, stamp)) => {
                    self.next = (i + 1) % n;
                    return Ok(Some((i, len, stamp)));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Blocks until some line has a datagram or `timeout` passes (or a signal comes).
    pub fn wait(&self, timeout: Duration) -> io::Result<()> {
        wait_any(&self.receivers, timeout)
    }

    pub fn receivers(&self) -> &[McastReceiver] {
        &self.receivers
    }
}

/// Blocks until one of `receivers` has a datagram queued, `timeout` passes or a signal
/// comes (`poll(2)`): an idle receiver wakes when its next datagram arrives, where a
/// sleep between empty reads would leave that datagram waiting for the sleep's end
/// (`examples/idle_wait.rs`: 141-151 us at p50 with sleeps of 200 us, 15-24 us with this,
/// on the 2-vCPU VM).
pub fn wait_any<'a>(
    receivers: impl IntoIterator<Item = &'a McastReceiver>,
    timeout: Duration,
) -> io::Result<()> {
    let mut fds: Vec<PollFd<'_>> = receivers
        .into_iter()
        .map(|r| PollFd::new(r.socket(), PollFlags::IN))
        .collect();
    let t = Timespec {
        tv_sec: timeout.as_secs() as _,
        tv_nsec: timeout.subsec_nanos() as _,
    };
    match poll(&mut fds, Some(&t)) {
        Ok(_) | Err(rustix::io::Errno::INTR) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::McastSender;

    #[test]
    fn channel_groups_count_up_from_the_base() {
        let base: SocketAddrV4 = "239.1.2.250:5000".parse().unwrap();
        assert_eq!(
            channel_group(base, 7).unwrap(),
            "239.1.3.1:5000".parse::<SocketAddrV4>().unwrap()
        );
        let last: SocketAddrV4 = "239.255.255.255:5000".parse().unwrap();
        assert!(channel_group(last, 1).is_err());
    }

    #[test]
    fn one_thread_reads_every_line() {
        assert!(
            crate::loopback_multicast_works(),
            "multicast on loopback does not work: {}",
            crate::LOOPBACK_HINT
        );
        let lo = Ipv4Addr::LOCALHOST;
        let port = fastrand::u16(20000..60000);
        let base = SocketAddrV4::new(Ipv4Addr::new(239, 77, fastrand::u8(..), 1), port);
        let groups: Vec<_> = (0..3).map(|c| channel_group(base, c).unwrap()).collect();
        let mut lines = Lines::join(&groups, None, lo).unwrap();
        let mut buf = [0u8; 64];
        assert_eq!(lines.try_recv(&mut buf).unwrap(), None);
        for (c, g) in groups.iter().enumerate() {
            let tx = McastSender::new(*g, lo, 1, true).unwrap();
            tx.send(&[c as u8; 5]).unwrap();
        }
        let mut got = Vec::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while got.len() < 3 && std::time::Instant::now() < deadline {
            match lines.try_recv(&mut buf).unwrap() {
                Some((i, n)) => got.push((i, buf[..n].to_vec())),
                None => lines.wait(Duration::from_millis(10)).unwrap(),
            }
        }
        got.sort();
        let want: Vec<_> = (0..3).map(|c| (c, vec![c as u8; 5])).collect();
        assert_eq!(got, want);
    }
}
