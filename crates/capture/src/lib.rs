//! fastfeed-capture: packet captures as exchanges and users have them. A pcap or pcapng file
//! held in memory yields its IPv4 UDP datagrams, each with its capture time, source,
//! destination and payload, those sent in IP fragments put back together (and one of any
//! size, read as a stream, its payloads as `len32le` packets: [`Len32Payloads`]); everything
//! else in the file (other protocols, fragments never completed, frames cut short by the snap
//! length, damaged blocks) is counted in [`CaptureStats`], never a panic.
//!
//! The container formats are read by `pcap-parser`, the link, IP and UDP layers by
//! `etherparse`; [`write_pcap`] writes datagrams as a pcap through `pcap-file`.
//!
//! ```
//! use fastfeed_capture::{Capture, udp_frame};
//! # let data = fastfeed_capture::tests_support_example();
//! let capture = Capture::open(&data).unwrap();
//! let group = "239.1.1.1:16001".parse().unwrap();
//! let mut datagrams = capture.datagrams();
//! let payloads: Vec<Vec<u8>> = datagrams.by_ref().filter(|d| d.dst == group).map(|d| d.payload.into_owned()).collect();
//! assert_eq!(payloads, [b"hello".to_vec()]);
//! assert_eq!(datagrams.stats().datagrams, 2);
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod defrag;
mod frame;
mod parts;
mod reader;
mod spool;
mod stream;
mod write;

pub use defrag::{Reassembly, MAX_AGE_NS, MAX_PENDING};
pub use frame::{udp_frame, udp_frame_into, udp_frames};
pub use parts::Parts;
pub use reader::{Capture, CaptureStats, Datagram, Datagrams, Format};
pub use spool::{Split, Spool, SpoolSize};
pub use stream::{CaptureRuns, Len32Payloads, PayloadStats, RUN_BYTES};
pub use write::{write_pcap, PcapRecorder};

/// Why a file could not be opened as a capture.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaptureError {
    /// Neither a pcap nor a pcapng header.
    #[error("not a pcap or pcapng file (magic {0:02x?})")]
    NotACapture(Vec<u8>),
    /// The header is there but does not parse.
    #[error("damaged {format:?} header: {reason}")]
    BadHeader {
        /// Which container.
        format: Format,
        /// What the parser said.
        reason: String,
    },
    /// The file could not be read.
    #[error("reading the capture: {0}")]
    Read(String),
}

/// Whether `data` starts like a pcap or pcapng file (by its magic number).
pub fn is_capture(data: &[u8]) -> bool {
    Format::detect(data).is_some()
}

#[doc(hidden)]
/// A two-datagram pcap for the crate example: one to 239.1.1.1:16001, one elsewhere.
pub fn tests_support_example() -> Vec<u8> {
    let mut out = Vec::new();
    // Classic pcap header, microseconds, little-endian, Ethernet.
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    let src = "10.0.0.1:5000".parse().expect("address");
    for (i, (dst, payload)) in [("239.1.1.1:16001", b"hello"), ("239.1.1.2:16002", b"world")]
        .into_iter()
        .enumerate()
    {
        let frame = udp_frame(src, dst.parse().expect("address"), payload).expect("small");
        out.extend_from_slice(&(i as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        out.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        out.extend_from_slice(&frame);
    }
    out
}
