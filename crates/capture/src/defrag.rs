//! IPv4 datagrams put back together from their fragments, as the receiving host's kernel
//! does before a socket sees them. A capture holds what was on the wire: a datagram larger
//! than the link's MTU (a venue's snapshot or definition packet, say) is there as several
//! frames, and a reader that dropped them would lose exactly the packets a recovery needs.
//!
//! Each datagram is gathered in etherparse's [`IpDefragBuf`] (overlaps, conflicting ends and
//! datagrams over 65,535 bytes are its errors). What is held is bounded: at most
//! [`MAX_PENDING`] datagrams at once, each dropped [`MAX_AGE_NS`] of capture time after its
//! first fragment (the kernel's `ipfrag_time`); the oldest goes first when more arrive. Every
//! fragment frame ends in a reassembled datagram or is counted lost.

use std::net::Ipv4Addr;

use etherparse::defrag::IpDefragBuf;
use etherparse::{IpFragOffset, IpNumber};

/// The most datagrams gathered at once (so at most this many times 64 KiB held).
pub const MAX_PENDING: usize = 64;

/// Capture time after a datagram's first fragment when it is given up (30 s, as Linux).
pub const MAX_AGE_NS: u64 = 30_000_000_000;

/// What identifies the fragments of one datagram (RFC 791).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FragmentOf {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub id: u16,
    pub protocol: IpNumber,
}

#[derive(Debug)]
struct Pending {
    of: FragmentOf,
    buf: IpDefragBuf,
    first_ts_ns: u64,
    /// Fragment frames gathered so far.
    frames: u64,
}

/// Datagrams being gathered from their fragments; carried from one run of a streamed capture
/// to the next, so a datagram whose fragments straddle two runs is still rebuilt.
#[derive(Debug, Default)]
pub struct Reassembly {
    pending: Vec<Pending>,
}

/// What one fragment made of its datagram.
pub(crate) enum Fed {
    /// Still gathering; `lost` fragment frames of other datagrams were given up meanwhile.
    Pending { lost: u64 },
    /// The datagram's whole IP payload from its `frames` fragments, `lost` as above.
    Complete {
        payload: Vec<u8>,
        frames: u64,
        lost: u64,
    },
}

impl Reassembly {
    /// Datagrams being gathered.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Adds one fragment; `offset`, `more` and `payload` as its IPv4 header says.
    pub(crate) fn add(
        &mut self,
        of: FragmentOf,
        ts_ns: u64,
        offset: IpFragOffset,
        more: bool,
        payload: &[u8],
    ) -> Fed {
        let mut lost = self.expire(ts_ns);
        let at = match self.pending.iter().position(|p| p.of == of) {
            Some(at) => at,
            None => {
                if self.pending.len() == MAX_PENDING {
                    lost += self.pending.remove(0).frames;
                }
                self.pending.push(Pending {
                    of,
                    buf: IpDefragBuf::new(of.protocol, Vec::new(), Vec::new()),
                    first_ts_ns: ts_ns,
                    frames: 0,
                });
                self.pending.len() - 1
            }
        };
        let p = &mut self.pending[at];
        p.frames += 1;
        if p.buf.add(offset, more, payload).is_err() {
            // Overlapping, beyond 65,535 bytes, or two different ends: the datagram cannot
            // be rebuilt, as the kernel would drop it.
            lost += self.pending.remove(at).frames;
            return Fed::Pending { lost };
        }
        if !p.buf.is_complete() {
            return Fed::Pending { lost };
        }
        let done = self.pending.remove(at);
        let frames = done.frames;
        let (payload, _) = done.buf.take_bufs();
        Fed::Complete {
            payload,
            frames,
            lost,
        }
    }

    /// Gives up every datagram whose first fragment came [`MAX_AGE_NS`] before `now_ns`;
    /// returns their fragment frames.
    fn expire(&mut self, now_ns: u64) -> u64 {
        let mut lost = 0;
        self.pending.retain(|p| {
            let keep = now_ns.saturating_sub(p.first_ts_ns) < MAX_AGE_NS;
            if !keep {
                lost += p.frames;
            }
            keep
        });
        lost
    }

    /// Gives up every datagram still being gathered (the capture has ended); returns their
    /// fragment frames.
    pub fn finish(&mut self) -> u64 {
        self.pending.drain(..).map(|p| p.frames).sum()
    }
}
