//! UDP multicast send/receive (socket2) and deterministic sender-side fault injection.

pub mod affinity;
mod fault;
mod lines;
mod mcast;
mod stamp;

pub use fault::{Corruption, Fate, FaultConfig, FaultCounts, FaultInjector};
pub use lines::{channel_group, wait_any, Lines};
pub use mcast::{
    loopback_multicast_works, overflow_hint, udp_drops_by_inode, McastReceiver, McastSender,
    LOOPBACK_HINT, RECV_BUFFER_REQUEST,
};
pub use stamp::{realtime_ns, StampedRecv, BATCH};

/// The largest UDP payload one IPv4 datagram carries: 65,535 bytes less the 20-byte IP and
/// 8-byte UDP headers.
pub const MAX_DATAGRAM: usize = 65_507;

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// A socket operation failed. The OS error is part of the message, not a separate
    /// source, so a chain of causes prints it once.
    #[error("{context}: {error}")]
    Io {
        context: String,
        error: std::io::Error,
    },
    /// The group address is not a multicast address.
    #[error("{0} is not an IPv4 multicast address")]
    NotMulticast(std::net::Ipv4Addr),
    /// A source-specific join's source is not a unicast address.
    #[error("{0} cannot be a multicast source: give the sender's unicast address")]
    BadSource(std::net::Ipv4Addr),
    /// A fault rate is outside [0, 1].
    #[error("fault rate {name} = {value} is outside [0, 1]")]
    InvalidRate { name: &'static str, value: f64 },
}

pub(crate) fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> NetError {
    let context = context.into();
    move |error| NetError::Io { context, error }
}
