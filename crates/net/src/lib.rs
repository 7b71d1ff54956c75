//! UDP multicast send/receive (socket2) and deterministic sender-side fault injection.

mod fault;
mod mcast;

pub use fault::{Corruption, Fate, FaultConfig, FaultCounts, FaultInjector};
pub use mcast::{
    loopback_multicast_works, McastReceiver, McastSender, LOOPBACK_HINT, RECV_BUFFER_REQUEST,
};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// A socket operation failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// The group address is not a multicast address.
    #[error("{0} is not an IPv4 multicast address")]
    NotMulticast(std::net::Ipv4Addr),
    /// A fault rate is outside [0, 1].
    #[error("fault rate {name} = {value} is outside [0, 1]")]
    InvalidRate { name: &'static str, value: f64 },
}

pub(crate) fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> NetError {
    let context = context.into();
    move |source| NetError::Io { context, source }
}
