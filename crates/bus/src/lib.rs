//! The bus interface: what a producer of market-data records and its subscribers agree on,
//! whatever carries the records between them.
//!
//! This crate holds no transport. It defines the records' contract ([`Record`]: plain
//! `#[repr(C)]` data with a fixed little-endian layout), the [`Envelope`] each record travels
//! in, the auxiliary [`Echo`] and [`Control`] messages, topic names ([`Topic`]), quality of
//! service ([`SubscriberQos`], [`PublisherQos`]), the subscriber-side accounting every backend
//! shares ([`Accounting`]), and the traits a backend implements: [`Bus`], [`Publisher`],
//! [`Subscriber`], [`Sender`], [`Receiver`]. Producers and consumers are generic over
//! `B: Bus` (static dispatch), as ripgrep's searchers are generic over grep-matcher's
//! `Matcher` with grep-regex and grep-pcre2 behind it.
//!
//! Backends: `fastfeed-bus-shm` (iceoryx2 shared memory, one host, zero-copy) and
//! [`LocalBus`] here (one process, std only: tests and examples).
//!
//! # Topics
//! `fastfeed/<feed>/<type>[/<security>]`; `<type>` is the record's [`Record::TYPE_NAME`].
//! Two auxiliary channels exist per feed: `fastfeed/<feed>/echo` and `fastfeed/<feed>/control`.
//!
//! # Example
//! ```
//! use fastfeed_bus::zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};
//! use fastfeed_bus::{
//!     Bus, LocalBus, Publisher, PublisherQos, Record, Securities, Subscriber, SubscriberQos,
//! };
//!
//! // Plain data, no implicit padding, no bool or enum: a fixed little-endian wire layout.
//! #[derive(Debug, Clone, Copy, PartialEq, IntoBytes, FromBytes, Immutable, KnownLayout)]
//! #[zerocopy(crate = "fastfeed_bus::zerocopy")]
//! #[repr(C)]
//! struct Trade { security_id: u32, qty: u32, price: i64 }
//!
//! impl Record for Trade {
//!     const TYPE_NAME: &'static str = "trade";
//!     const LAYOUT_VERSION: u16 = 1;
//!     fn security_id(&self) -> u32 { self.security_id }
//! }
//!
//! fn run<B: Bus>(bus: &B) {
//!     let mut sub = bus
//!         .subscriber::<Trade>(Securities::Only(vec![7]), &SubscriberQos::default())
//!         .unwrap();
//!     let mut publisher = bus.publisher::<Trade>(&PublisherQos::default()).unwrap();
//!     publisher.publish(&Trade { security_id: 7, qty: 1, price: 100 }).unwrap();
//!     publisher.publish(&Trade { security_id: 8, qty: 1, price: 100 }).unwrap();
//!     let env = sub.try_recv().unwrap().unwrap();
//!     assert_eq!((env.seq, env.security_seq, env.record.security_id), (1, 1, 7));
//!     assert_eq!(env.publisher, bus.id());
//!     assert!(sub.try_recv().unwrap().is_none());
//!     assert_eq!(sub.counters().filtered_out, 1);
//! }
//!
//! run(&LocalBus::new("doc").unwrap());
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod accounting;
mod api;
mod echo;
mod local;
mod message;
mod qos;
pub mod testing;
mod topic;

pub use accounting::{Accounting, Counters, Sequencer};
pub use api::{Bus, Publisher, Receiver, Sender, Subscriber};
pub use echo::{serve_echo, EchoStats};
pub use local::{LocalBus, LocalPublisher, LocalReceiver, LocalSender, LocalSubscriber};
pub use message::{Control, Echo, Envelope, EnvelopeHeader, ENVELOPE_VERSION};
pub use qos::{Priority, PublisherQos, SubscriberClass, SubscriberQos, DEFAULT_QUEUE};
pub use topic::{Securities, Topic, RESERVED_TYPES};
/// The layout derives records need (`IntoBytes`, `FromBytes`, `Immutable`, `KnownLayout`).
pub use zerocopy;

use std::fmt::Debug;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// A market-data record that crosses the bus as its bytes, without serialization.
///
/// Records are `#[repr(C)]` plain data: no implicit padding (zerocopy's `IntoBytes` derive
/// refuses it; write explicit `_pad` fields, zeroed), no `bool` or `enum` fields, no pointers.
/// Their bytes, little-endian, are then a fixed wire layout that every process, and programs in
/// other languages, read the same way. Change a layout only together with
/// [`Record::LAYOUT_VERSION`]: backends refuse to connect different versions.
pub trait Record:
    Copy + Send + Sync + Debug + IntoBytes + FromBytes + Immutable + KnownLayout + 'static
{
    /// The `<type>` part of the topic name, e.g. `"quote"`: `[A-Za-z0-9_.-]`, not `echo` or
    /// `control`.
    const TYPE_NAME: &'static str;
    /// The layout's version, from 1, bumped whenever a field moves, changes or is added.
    const LAYOUT_VERSION: u16;
    /// The security the record is about: subscribers filter on it.
    fn security_id(&self) -> u32;
    /// The record's bytes that matter: past this many, all are zero (a record's unused
    /// entry slots), and a byte wire may leave them out (`fastfeed-bus-zenoh` does; its
    /// readers put the zeros back). Every byte by default.
    fn wire_len(&self) -> usize {
        size_of::<Self>()
    }
    /// Compact tag of the record type, carried in [`Echo`] and [`Control`].
    fn type_tag() -> u32 {
        type_tag(Self::TYPE_NAME)
    }
}

/// A small auxiliary message ([`Echo`], [`Control`]): plain data like a [`Record`], but not
/// about a security and sent without an envelope.
pub trait Message:
    Copy + Send + Sync + Debug + IntoBytes + FromBytes + Immutable + KnownLayout + 'static
{
    /// The channel's name: `fastfeed/<feed>/<TYPE_NAME>`.
    const TYPE_NAME: &'static str;
    /// The layout's version, as [`Record::LAYOUT_VERSION`].
    const LAYOUT_VERSION: u16;
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

/// Which clock [`now_ns`] reads: a 64-bit hash of the kernel's boot id, the same for every
/// process of one boot of one machine (its network namespaces included) and different on
/// another machine, so a subscriber can tell whether a publisher's `sent_ns` is on its own
/// clock ([`Control::CLOCK`]). 0 where the kernel does not say (never equal to another's).
pub fn clock_id() -> u64 {
    static ID: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *ID.get_or_init(|| {
        let Ok(boot) = std::fs::read_to_string("/proc/sys/kernel/random/boot_id") else {
            return 0;
        };
        // FNV-1a, 64 bits.
        let h = boot.trim().bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        h.max(1)
    })
}

/// A fresh, non-zero publisher id for a bus instance: the process id, the time and a process
/// counter mixed, so two publishers on one feed (on one host or several) differ but for a
/// 1 in 2^32 chance.
pub fn new_publisher_id() -> u32 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    // splitmix64's finalizer.
    let mut z = now_ns() ^ ((std::process::id() as u64) << 32) ^ n.wrapping_mul(0x9e37_79b9);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z as u32).max(1)
}

/// Errors of the bus.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BusError {
    /// The backend's engine failed.
    #[error("{backend}: {context}")]
    Backend {
        /// The backend's name, e.g. `"iceoryx2"`.
        backend: &'static str,
        /// What was being done.
        context: String,
        /// The engine's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A topic or feed name is malformed.
    #[error("invalid topic name {0:?}: {1}")]
    InvalidTopic(String, &'static str),
    /// The backend cannot give what was asked (a queue longer than its configured maximum...).
    #[error("not supported by this bus: {0}")]
    Unsupported(String),
}

impl BusError {
    /// For `map_err`: wraps a backend's error with what was being done. The context becomes
    /// a `String` only on error: on the per-record path, building it eagerly would allocate
    /// for every record.
    pub fn backend<E: std::error::Error + Send + Sync + 'static>(
        backend: &'static str,
        context: impl Into<String>,
    ) -> impl FnOnce(E) -> BusError {
        move |e| BusError::Backend {
            backend,
            context: context.into(),
            source: Box::new(e),
        }
    }
}
