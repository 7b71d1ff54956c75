//! The two ends of the distribution: a [`DecodingPublisher`] that turns FAST packets into
//! records and publishes them on the bus, timing each stage, and a [`RecordSubscriber`] that
//! receives them, optionally echoing each back so the publisher measures the round trip.

mod channels;
mod counters;
mod peers;
mod ports;
mod publisher;
mod subscriber;

pub use channels::{Admit, Channels, PacketHeader};
pub use counters::{PublisherCounters, PublisherOptions, Rejection, MAX_ERRORS_KEPT};
pub use peers::{Group, PeerSubscriber, Rival, SILENT_AFTER};
pub use ports::{Delivery, RecordPublishers, RecordSubscribers};
pub use publisher::DecodingPublisher;
pub use subscriber::{OneWay, RecordSubscriber, SubscriberReport, TypeReport};

/// How often a publisher announces itself and a subscriber says hello, when nothing else
/// prompts them: each side learns within this time who is on the feed, and who left.
pub const HEARTBEAT: std::time::Duration = std::time::Duration::from_millis(200);
