//! Publish/subscribe of typed market-data records over iceoryx2 shared memory.
//!
//! A decoding process publishes `#[repr(C)]` records (no serialization, zero-copy);
//! subscriber processes on the same host receive them and may echo each sample's
//! `seq`/`sent_ns` back so the publisher can measure the round trip.
//!
//! # Topics and services
//! Topic names are `fastfeed/<feed>/<type>[/<security>]` (see [`Topic`]). Per-security
//! topics map onto ONE iceoryx2 service per (feed, record type): one service per
//! security costs ~8 fds and ~0.5 MB each, so instead every sample carries its
//! security id and subscribers filter on their side ([`Securities`]).
//! Two auxiliary services exist per feed: `fastfeed/<feed>/echo` ([`Echo`]) and
//! `fastfeed/<feed>/control` ([`Control`]).
//!
//! # Threads
//! The bus uses `iceoryx2::service::ipc::Service` (the fastest, single-threaded
//! flavour): a [`Bus`] and its ports are not `Send`. Create one `Bus` per thread.
//!
//! # Example
//! ```
//! use fastfeed_bus::{Bus, Record, Securities, ZeroCopySend};
//!
//! #[derive(Debug, Clone, Copy, PartialEq, ZeroCopySend)]
//! #[repr(C)]
//! struct Trade { security_id: u32, qty: u32, price: i64 }
//!
//! impl Record for Trade {
//!     const TYPE_NAME: &'static str = "trade";
//!     fn security_id(&self) -> u32 { self.security_id }
//! }
//!
//! let bus = Bus::new(&format!("doc{}", std::process::id())).unwrap();
//! let mut sub = bus.subscriber::<Trade>(Securities::Only(vec![7])).unwrap();
//! let mut publisher = bus.publisher::<Trade>().unwrap();
//! publisher.publish(&Trade { security_id: 7, qty: 1, price: 100 }).unwrap();
//! publisher.publish(&Trade { security_id: 8, qty: 1, price: 100 }).unwrap();
//! let env = sub.try_recv().unwrap().unwrap();
//! assert_eq!((env.seq, env.record.security_id), (1, 7));
//! assert!(sub.try_recv().unwrap().is_none());
//! assert_eq!(sub.counters().filtered_out, 1);
//! ```

mod bus;
mod echo;
mod ports;
mod topic;

pub use bus::{Bus, BusConfig, WaitMode};
pub use echo::{serve_echo, EchoStats};
/// Derive macro and trait required for every payload crossing the bus.
/// Records must be `#[repr(C)]`, self-contained (no pointers, no heap).
pub use iceoryx2::prelude::ZeroCopySend;
pub use ports::{
    ControlPublisher, ControlSubscriber, Counters, EchoPublisher, EchoSubscriber, Publisher,
    Receiver, Sender, Subscriber,
};
pub use topic::{Securities, Topic};

/// A plain market-data record that crosses processes without serialization.
///
/// Implementors must be `#[repr(C)]` and derive [`ZeroCopySend`]; all processes must
/// agree on the layout (iceoryx2 verifies `TYPE_NAME`, size and alignment on open).
pub trait Record: Copy + Send + core::fmt::Debug + ZeroCopySend + 'static {
    /// The `<type>` part of the topic name, e.g. `"quote"`. Must not contain `/`.
    const TYPE_NAME: &'static str;
    /// Security the record belongs to; used for subscriber-side filtering.
    fn security_id(&self) -> u32;
    /// Compact tag of the record type, carried in [`Echo`] and [`Control`].
    fn type_tag() -> u32 {
        type_tag(Self::TYPE_NAME)
    }
}

/// What is actually sent for a record: publisher sequence number (starting at 1,
/// per publisher), send time ([`now_ns`]) and the record.
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C)]
pub struct Envelope<R> {
    pub seq: u64,
    pub sent_ns: u64,
    pub record: R,
}

// SAFETY: `Envelope` is `#[repr(C)]` and consists of two `u64` plus an `R`, which is
// itself `ZeroCopySend`, so it is self-contained and has a stable layout. The type
// name is the record's `TYPE_NAME` (not Rust's type path) so that different binaries
// defining the same record layout interoperate.
unsafe impl<R: Record> ZeroCopySend for Envelope<R> {
    unsafe fn type_name() -> &'static str {
        R::TYPE_NAME
    }
}

/// Latency echo sent back by subscribers on `fastfeed/<feed>/echo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ZeroCopySend)]
#[type_name("fastfeed::Echo")]
#[repr(C)]
pub struct Echo {
    /// `seq` of the echoed envelope.
    pub seq: u64,
    /// `sent_ns` of the echoed envelope; the publisher computes `now_ns() - sent_ns`.
    pub sent_ns: u64,
    /// [`Record::type_tag`] of the echoed record type.
    pub type_tag: u32,
    /// Id chosen by the echoing subscriber (e.g. its process id).
    pub subscriber: u32,
}

/// Control message on `fastfeed/<feed>/control`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ZeroCopySend)]
#[type_name("fastfeed::Control")]
#[repr(C)]
pub struct Control {
    /// One of the `Control::*` kind constants.
    pub kind: u32,
    /// Id of the sender (e.g. process id).
    pub sender: u32,
    /// [`Record::type_tag`] the message refers to, 0 for "all types".
    pub type_tag: u32,
    /// For `DONE`: the last `seq` published for `type_tag`.
    pub count: u64,
}

impl Control {
    /// The publisher finished; `count` = last seq published for `type_tag`. A last DONE
    /// with `type_tag` 0 closes the token: every type's DONE came before it.
    pub const DONE: u32 = 1;
    /// A subscriber announces itself (sent after its data subscriber exists).
    pub const HELLO: u32 = 2;
    /// A subscriber leaves.
    pub const BYE: u32 = 3;
}

/// FNV-1a hash of a type name, used as a compact type tag.
pub const fn type_tag(name: &str) -> u32 {
    let bytes = name.as_bytes();
    let mut hash: u32 = 0x811c_9dc5;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u32;
        hash = hash.wrapping_mul(0x0100_0193);
        i += 1;
    }
    hash
}

/// `CLOCK_MONOTONIC` in nanoseconds. It is system-wide on Linux, so values taken in
/// different processes on the same host are comparable (unlike `std::time::Instant`,
/// whose raw value is not observable).
pub fn now_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Errors of the bus.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    /// An iceoryx2 operation failed.
    #[error("iceoryx2: {context}: {source}")]
    Iceoryx {
        context: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A topic or feed name is malformed.
    #[error("invalid topic name {0:?}: {1}")]
    InvalidTopic(String, &'static str),
}

impl BusError {
    pub(crate) fn ice<E: std::error::Error + Send + Sync + 'static>(
        context: impl Into<String>,
    ) -> impl FnOnce(E) -> BusError {
        let context = context.into();
        move |e| BusError::Iceoryx {
            context,
            source: Box::new(e),
        }
    }
}

/// A ready-made record for tests, demos and latency measurements.
pub mod testing {
    use super::{Record, ZeroCopySend};

    /// Test record: 32 bytes, one per security update.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, ZeroCopySend)]
    #[repr(C)]
    pub struct TestRecord {
        pub security_id: u32,
        pub qty: u32,
        pub price: i64,
        pub id: u64,
        pub flags: u64,
    }

    impl Record for TestRecord {
        const TYPE_NAME: &'static str = "testrecord";
        fn security_id(&self) -> u32 {
            self.security_id
        }
    }
}

/// For applications: iceoryx2 logs at Error and above unless its environment variable says
/// otherwise (its default level warns on every start that no config file was loaded).
pub fn quiet_engine_logs() {
    iceoryx2::prelude::set_log_level_from_env_or(iceoryx2::prelude::LogLevel::Error);
}
