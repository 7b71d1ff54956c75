//! Kernel receive timestamps (SO_TIMESTAMPNS): when the kernel took each datagram in, on
//! CLOCK_REALTIME. A reader's own clock only says when it got round to the datagram; the
//! kernel's says how long the datagram then waited in the socket and in the reader's hands,
//! the latency a feed handler answers for.

use std::io::{self, IoSliceMut};
use std::os::fd::AsRawFd;

use std::net::SocketAddrV4;

use nix::sys::socket::{
    recvmmsg, recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags, MultiHeaders, RecvMsg,
    SockaddrIn,
};
use nix::sys::time::TimeSpec;

use crate::{McastReceiver, MAX_DATAGRAM};

/// Datagrams [`StampedRecv::recv_batch`] takes in one call at most.
pub const BATCH: usize = 16;

/// Now on CLOCK_REALTIME, in nanoseconds since the epoch: the clock of the kernel's receive
/// timestamps.
pub fn realtime_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}

/// Receives datagrams with the kernel's timestamp of each, one at a time (`recvmsg`) or
/// several in one call (`recvmmsg`: a burst costs one system call, not one a datagram);
/// holds the buffers, so that receiving allocates nothing.
#[derive(Debug)]
pub struct StampedRecv {
    cmsg: Vec<u8>,
    headers: Headers,
    bufs: [Vec<u8>; BATCH],
    /// The last batch: each datagram's length, stamp and sender.
    got: Vec<(usize, Option<u64>, Option<SocketAddrV4>)>,
}

/// A batch's headers, with room for each datagram's sender only where it is asked for
/// ([`StampedRecv::keep_senders`]): taking the address cost 30-60 ns a datagram more
/// (`examples/stamped_recv.rs`, BENCHMARKS).
#[derive(Debug)]
enum Headers {
    Plain(MultiHeaders<()>),
    Senders(MultiHeaders<SockaddrIn>),
}

impl Default for StampedRecv {
    fn default() -> Self {
        StampedRecv::new()
    }
}

/// The kernel's timestamp among a datagram's control messages, ns on CLOCK_REALTIME.
fn stamp_of<S>(msg: &RecvMsg<'_, '_, S>) -> Option<u64> {
    msg.cmsgs().ok()?.find_map(|m| match m {
        ControlMessageOwned::ScmTimestampns(t) => {
            let ns = (t.tv_sec() as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(t.tv_nsec() as u64);
            // A timestamp of zero is the kernel saying it took none.
            (ns > 0).then_some(ns)
        }
        _ => None,
    })
}

impl StampedRecv {
    /// Batches of up to [`BATCH`] datagrams, each up to the largest datagram (the buffers
    /// made at the first batch).
    pub fn new() -> StampedRecv {
        StampedRecv {
            cmsg: nix::cmsg_space!(TimeSpec),
            headers: Headers::Plain(MultiHeaders::preallocate(
                BATCH,
                Some(nix::cmsg_space!(TimeSpec)),
            )),
            // Sized at the first batch: a reader of one datagram at a time needs none.
            bufs: std::array::from_fn(|_| Vec::new()),
            got: Vec::with_capacity(BATCH),
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
        Ok((msg.bytes, stamp_of(&msg)))
    }

    /// Receives what the socket holds, up to `most` datagrams and the batch size, in one call
    /// that does not wait (`MSG_DONTWAIT`): how many came (`WouldBlock` when none), each then
    /// at [`datagram`](Self::datagram).
    pub fn recv_batch(&mut self, rx: &McastReceiver, most: usize) -> io::Result<usize> {
        let n = most.clamp(1, BATCH);
        if self.bufs[0].is_empty() {
            for b in &mut self.bufs {
                b.resize(MAX_DATAGRAM, 0);
            }
        }
        // On the stack: a call allocates nothing.
        let mut iovs = self.bufs.each_mut().map(|b| [IoSliceMut::new(b)]);
        let (fd, iovs, flags) = (
            rx.socket().as_raw_fd(),
            iovs[..n].iter_mut(),
            MsgFlags::MSG_DONTWAIT,
        );
        self.got.clear();
        match &mut self.headers {
            Headers::Plain(h) => {
                let got = recvmmsg(fd, h, iovs, flags, None).map_err(io::Error::from)?;
                self.got.extend(got.map(|m| (m.bytes, stamp_of(&m), None)));
            }
            Headers::Senders(h) => {
                let got = recvmmsg(fd, h, iovs, flags, None).map_err(io::Error::from)?;
                self.got.extend(got.map(|m| {
                    let from = m.address.map(|a| SocketAddrV4::new(a.ip(), a.port()));
                    (m.bytes, stamp_of(&m), from)
                }));
            }
        }
        Ok(self.got.len())
    }

    /// Datagram `i` of the last batch and its kernel timestamp.
    pub fn datagram(&self, i: usize) -> (&[u8], Option<u64>) {
        let (len, stamp, _) = self.got[i];
        (&self.bufs[i][..len], stamp)
    }

    /// Who sent datagram `i` of the last batch (as the kernel gave it); None unless
    /// [`keep_senders`](Self::keep_senders) was called before the batch.
    pub fn sender(&self, i: usize) -> Option<SocketAddrV4> {
        self.got[i].2
    }

    /// From the next batch on, takes each datagram's sender too (a recording wants it).
    pub fn keep_senders(&mut self) {
        if let Headers::Plain(_) = self.headers {
            let cmsg = Some(nix::cmsg_space!(TimeSpec));
            self.headers = Headers::Senders(MultiHeaders::preallocate(BATCH, cmsg));
        }
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
