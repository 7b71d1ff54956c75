//! Quality of service, as DDS offers it to the paper's consumers. Backends honour what they
//! can and document the rest (see each backend's crate docs).

/// Default subscriber queue, in records.
pub const DEFAULT_QUEUE: usize = 4096;

/// What kind of consumer a subscriber is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubscriberClass {
    /// A screen wants the latest: when it falls behind, its oldest queued records are dropped
    /// (and counted as missed). It never slows the publisher.
    #[default]
    Screen,
    /// A recorder wants every record: each is delivered or counted as lost. A backend that can
    /// deliver reliably on this subscriber's own path does so.
    Recorder,
}

/// A subscriber's quality of service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubscriberQos {
    /// Screen or recorder.
    pub class: SubscriberClass,
    /// Records queued before the class's overflow rule applies.
    pub queue: usize,
    /// A late joiner: first the current state, the last record of each security published
    /// before it subscribed (`Counters::snapshot`), then the live stream with no gap and no
    /// duplicate: DDS's transient-local durability with a keep-last history of one per
    /// security. Backends that keep no history refuse it (`BusError::Unsupported`).
    pub late_join: bool,
}

impl Default for SubscriberQos {
    fn default() -> Self {
        SubscriberQos {
            class: SubscriberClass::Screen,
            queue: DEFAULT_QUEUE,
            late_join: false,
        }
    }
}

/// Message priority, highest first (Zenoh's levels; DDS's transport priority).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Priority {
    /// Above everything: control traffic of the system itself.
    RealTime,
    /// Interactive, high.
    InteractiveHigh,
    /// Interactive, low.
    InteractiveLow,
    /// Data, high.
    DataHigh,
    /// Ordinary data.
    #[default]
    Data,
    /// Data, low.
    DataLow,
    /// Bulk transfers.
    Background,
}

/// A publisher's quality of service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PublisherQos {
    /// Priority of its records against other traffic.
    pub priority: Priority,
    /// Send each record at once rather than batching it with the next: lowest latency, at the
    /// cost of throughput.
    pub express: bool,
}
