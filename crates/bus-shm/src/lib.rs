//! The shared-memory backend of [`fastfeed_bus`]: records over iceoryx2, zero-copy, between
//! processes of one host.
//!
//! A publisher loans a sample in shared memory, writes the envelope into it and sends it; each
//! subscriber copies the envelope out and returns the sample at once. Nothing is serialized.
//!
//! # Topics and services
//! Topic names are `fastfeed/<feed>/<type>[/<security>]` (see [`fastfeed_bus::Topic`]).
//! Per-security topics map onto ONE iceoryx2 service per (feed, record type): one service per
//! security costs ~8 fds and ~0.5 MB each, so instead every sample carries its security id
//! and subscribers filter on their side ([`fastfeed_bus::Accounting`]). Two auxiliary services
//! exist per feed: `fastfeed/<feed>/echo` and `fastfeed/<feed>/control`.
//!
//! A service's type name is the record's `TYPE_NAME` and `LAYOUT_VERSION` with the envelope's
//! version (`fastfeed::quote@1+envelope@1`); iceoryx2 also checks size and alignment. Binaries
//! built with different layouts refuse to connect instead of misreading each other.
//!
//! # Quality of service
//! - [`SubscriberQos::queue`](fastfeed_bus::SubscriberQos) is the subscriber's queue, at most
//!   [`ShmConfig::buffer_size`] (a larger one is [`BusError::Unsupported`]).
//! - Both classes get iceoryx2's safe overflow: a full queue drops its oldest sample, never
//!   slowing the publisher, and the subscriber counts the loss as missed. A recorder thus gets
//!   every record or counts it lost; shared memory has no per-subscriber blocking delivery
//!   (iceoryx2 sets overflow per service, for every subscriber at once).
//! - [`PublisherQos`](fastfeed_bus::PublisherQos) changes nothing: a sample is visible to
//!   subscribers as soon as it is sent, and there is no other traffic to rank against.
//!
//! # Threads
//! The bus uses `iceoryx2::service::ipc::Service` (the fastest, single-threaded flavour): a
//! [`ShmBus`] and its ports are not `Send`. Create one `ShmBus` per thread.
//!
//! # Example
//! ```
//! use fastfeed_bus::testing::TestRecord;
//! use fastfeed_bus::{Bus, Publisher, PublisherQos, Securities, Subscriber, SubscriberQos};
//! use fastfeed_bus_shm::ShmBus;
//!
//! let bus = ShmBus::new(&format!("doc{}", std::process::id())).unwrap();
//! let qos = SubscriberQos::default();
//! let mut sub = bus.subscriber::<TestRecord>(Securities::Only(vec![7]), &qos).unwrap();
//! let mut publisher = bus.publisher::<TestRecord>(&PublisherQos::default()).unwrap();
//! publisher.publish(&TestRecord { security_id: 7, ..TestRecord::default() }).unwrap();
//! publisher.publish(&TestRecord { security_id: 8, ..TestRecord::default() }).unwrap();
//! let env = sub.try_recv().unwrap().unwrap();
//! assert_eq!((env.seq, env.record.security_id), (1, 7));
//! assert!(sub.try_recv().unwrap().is_none());
//! assert_eq!(sub.counters().filtered_out, 1);
//! ```

#![deny(missing_docs)]

mod bus;
mod payload;
mod ports;

pub use bus::{ShmBus, ShmConfig, WaitMode};
pub use ports::{ShmPublisher, ShmReceiver, ShmSender, ShmSubscriber};

use fastfeed_bus::BusError;

/// For applications: iceoryx2 logs at Error and above unless its environment variable says
/// otherwise (its default level warns on every start that no config file was loaded).
pub fn quiet_engine_logs() {
    iceoryx2::prelude::set_log_level_from_env_or(iceoryx2::prelude::LogLevel::Error);
}

/// `map_err` for iceoryx2's errors.
pub(crate) fn ice<E: std::error::Error + Send + Sync + 'static>(
    context: impl Into<String>,
) -> impl FnOnce(E) -> BusError {
    BusError::backend("iceoryx2", context)
}
