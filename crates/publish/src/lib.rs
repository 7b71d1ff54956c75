//! The two ends of the distribution: a [`DecodingPublisher`] that turns FAST packets into
//! records and publishes them on the bus, timing each stage, and a [`RecordSubscriber`] that
//! receives them, optionally echoing each back so the publisher measures the round trip.

mod ports;
mod publisher;
mod subscriber;

pub use ports::{Delivery, RecordPublishers, RecordSubscribers};
pub use publisher::{
    DecodingPublisher, PublisherCounters, PublisherOptions, Rejection, MAX_ERRORS_KEPT,
};
pub use subscriber::{RecordSubscriber, SubscriberReport, TypeReport};

/// Bytes of packet header before the FAST messages: a little-endian u32 packet sequence.
pub const PACKET_HEADER_LEN: usize = 4;
