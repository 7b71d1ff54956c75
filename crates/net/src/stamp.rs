//! Kernel receive timestamps (SO_TIMESTAMPNS): when the kernel took each datagram in, on
//! CLOCK_REALTIME. A reader's own clock only says when it got round to the datagram; the
//! kernel's says how long the datagram then waited in the socket and in the reader's hands,
//! the latency a feed handler answers for.

use std::io::{self, IoSliceMut};
use std::os::fd::AsRawFd;

use nix::sys::socket::{recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags};
use nix::sys::time::TimeSpec;

use crate::McastReceiver;

/// Now on CLOCK_REALTIME, in nanoseconds since the epoch: the clock of the kernel's receive
/// timestamps.
pub fn realtime_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}

/// Receives datagrams with the kernel's timestamp of each; holds the control-message buffer
/// so that receiving allocates nothing.
pub struct StampedRecv {
    cmsg: Vec<u8>,
}

impl Default for StampedRecv {
    fn default() -> Self {
        StampedRecv::new()
    }
}

impl StampedRecv {
    pub fn new() -> StampedRecv {
        StampedRecv {
            cmsg: nix::cmsg_space!(TimeSpec),
        }
    }

    /// Receives one datagram into `buf` (truncated to its length, as `recv` does): its length
    /// and, where the socket has timestamps on ([`McastReceiver::stamp_arrivals`]), when the
    /// kernel received it, ns on CLOCK_REALTIME.
    pub fn recv(&mut self, rx: &McastReceiver, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        let mut iov = [IoSliceMut::new(buf)];
        let msg = recvmsg::<()>(
            rx.socket().as_raw_fd(),
            &mut iov,
            Some(&mut self.cmsg),
            MsgFlags::empty(),
        )
        .map_err(io::Error::from)?;
        let stamp = msg.cmsgs().ok().and_then(|mut c| {
            c.find_map(|m| match m {
                ControlMessageOwned::ScmTimestampns(t) => {
                    let ns = (t.tv_sec() as u64)
                        .saturating_mul(1_000_000_000)
                        .saturating_add(t.tv_nsec() as u64);
                    // A timestamp of zero is the kernel saying it took none.
                    (ns > 0).then_some(ns)
                }
                _ => None,
            })
        });
        Ok((msg.bytes, stamp))
    }
}

impl McastReceiver {
    /// Has the kernel timestamp each datagram it receives for this socket (SO_TIMESTAMPNS),
    /// for [`StampedRecv`]. Plain [`recv`](McastReceiver::recv) ignores the timestamps. The
    /// kernel turns stamping on for its receive path a moment later (deferred work, unless
    /// another socket already asked): datagrams that come before are stamped when read.
    pub fn stamp_arrivals(&self) -> io::Result<()> {
        setsockopt(self.socket(), sockopt::ReceiveTimestampns, &true).map_err(io::Error::from)
    }
}
