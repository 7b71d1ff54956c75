//! The iceoryx2-backed bus: node, data publishers/subscribers and the echo and
//! control channels.

use crate::ports::{
    ControlPublisher, ControlSubscriber, Counters, EchoPublisher, EchoSubscriber, Publisher,
    Receiver, Sender, Subscriber,
};
use crate::topic::{Topic, RESERVED_TYPES};
use crate::{BusError, Envelope, Record, Securities, ZeroCopySend};
use iceoryx2::prelude::*;
use iceoryx2::service::port_factory::publish_subscribe::PortFactory;
use std::fmt::Debug;
use std::time::Duration;

pub(crate) type Svc = ipc::Service;

/// How `recv_timeout` waits when nothing is available.
///
/// iceoryx2 event services (Listener/Notifier) would allow a true blocking wait, but
/// they cost the publisher a notification per sample; we poll instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitMode {
    /// Busy-spin (lowest latency, burns a core).
    Spin,
    /// Sleep this long between polls (adds up to that much latency).
    Sleep(Duration),
}

/// Service settings. Every process of a feed must use the same values: iceoryx2
/// treats them as minimum requirements when opening an existing service and fails
/// with `DoesNotSupportRequested...` otherwise.
#[derive(Debug, Clone)]
pub struct BusConfig {
    /// Samples a data/echo subscriber can queue before the oldest are overwritten.
    pub buffer_size: usize,
    /// Subscribers per data service (each costs `buffer_size` preallocated samples
    /// in every publisher's segment).
    pub max_subscribers: usize,
    /// Publishers per data service (one decoder plus one spare, e.g. during restart).
    pub max_publishers: usize,
    /// Publishers and subscribers of the echo and control services (one per process).
    pub max_aux_ports: usize,
    /// Queue size of control subscribers.
    pub control_buffer_size: usize,
    /// How subscribers wait in `recv_timeout`.
    pub wait_mode: WaitMode,
}

impl Default for BusConfig {
    fn default() -> Self {
        BusConfig {
            buffer_size: 4096,
            max_subscribers: 8,
            max_publishers: 2,
            max_aux_ports: 16,
            control_buffer_size: 256,
            wait_mode: WaitMode::Sleep(Duration::from_micros(50)),
        }
    }
}

/// Handle of one feed on the bus: owns the iceoryx2 node of this process.
pub struct Bus {
    node: Node<Svc>,
    feed: String,
    config: BusConfig,
    dead_nodes_cleaned: u64,
}

impl Debug for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bus")
            .field("feed", &self.feed)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Bus {
    /// Opens the bus for `feed` with [`BusConfig::default`].
    pub fn new(feed: &str) -> Result<Bus, BusError> {
        Bus::with_config(feed, BusConfig::default())
    }

    /// Creates the iceoryx2 node, then removes resources of dead nodes (processes
    /// that crashed or were killed) so that their ports do not occupy service slots.
    /// iceoryx2's default config already does this inside node creation
    /// (`cleanup_dead_nodes_on_creation`); the explicit `try_cleanup_dead_nodes`
    /// covers configs that disable it.
    pub fn with_config(feed: &str, config: BusConfig) -> Result<Bus, BusError> {
        Topic::new(feed, "x")?; // validates the feed name
        let name = format!("fastfeed-{feed}-{}", std::process::id());
        let node = NodeBuilder::new()
            .name(&NodeName::new(&name).map_err(BusError::ice("node name"))?)
            // Leave SIGINT/SIGTERM to the application.
            .signal_handling_mode(SignalHandlingMode::Disabled)
            .create::<Svc>()
            .map_err(BusError::ice("create node"))?;
        let dead_nodes_cleaned = node.try_cleanup_dead_nodes().cleanups;
        Ok(Bus {
            node,
            feed: feed.into(),
            config,
            dead_nodes_cleaned,
        })
    }

    pub fn feed(&self) -> &str {
        &self.feed
    }

    pub fn config(&self) -> &BusConfig {
        &self.config
    }

    /// Dead nodes removed by our explicit cleanup (usually 0, see [`Bus::with_config`]).
    pub fn dead_nodes_cleaned(&self) -> u64 {
        self.dead_nodes_cleaned
    }

    fn service<T: Debug + ZeroCopySend + 'static>(
        &self,
        name: &str,
        buffer: usize,
        publishers: usize,
        subscribers: usize,
    ) -> Result<PortFactory<Svc, T, ()>, BusError> {
        let service_name = ServiceName::new(name).map_err(BusError::ice(name))?;
        self.node
            .service_builder(&service_name)
            .publish_subscribe::<T>()
            // A slow subscriber loses its oldest samples instead of blocking the publisher.
            .enable_safe_overflow(true)
            // Market data is a stream: late joiners must not get stale samples.
            .history_size(0)
            .subscriber_max_buffer_size(buffer)
            // We copy each sample out and release it immediately.
            .subscriber_max_borrowed_samples(2)
            .max_publishers(publishers)
            .max_subscribers(subscribers)
            .open_or_create()
            .map_err(BusError::ice(format!("open service {name}")))
    }

    fn data_service<R: Record>(&self) -> Result<PortFactory<Svc, Envelope<R>, ()>, BusError> {
        if RESERVED_TYPES.contains(&R::TYPE_NAME) {
            return Err(BusError::InvalidTopic(
                R::TYPE_NAME.into(),
                "reserved type name",
            ));
        }
        let topic = Topic::new(&self.feed, R::TYPE_NAME)?;
        let c = &self.config;
        self.service(
            &topic.service_name(),
            c.buffer_size,
            c.max_publishers,
            c.max_subscribers,
        )
    }

    /// Publisher of `R` on `fastfeed/<feed>/<R::TYPE_NAME>`.
    pub fn publisher<R: Record>(&self) -> Result<Publisher<R>, BusError> {
        let service = self.data_service::<R>()?;
        let port = service
            .publisher_builder()
            .max_loaned_samples(1)
            .create()
            .map_err(BusError::ice("create publisher"))?;
        Ok(Publisher {
            port,
            _service: service,
            seq: 0,
        })
    }

    /// Subscriber of `R` receiving only `securities`.
    pub fn subscriber<R: Record>(&self, securities: Securities) -> Result<Subscriber<R>, BusError> {
        let service = self.data_service::<R>()?;
        let port = service
            .subscriber_builder()
            .buffer_size(self.config.buffer_size)
            .create()
            .map_err(BusError::ice("create subscriber"))?;
        Ok(Subscriber {
            port,
            _service: service,
            filter: securities.normalized(),
            counters: Counters::default(),
            last_seq: Vec::new(),
            wait_mode: self.config.wait_mode,
        })
    }

    fn aux_service<T: Debug + ZeroCopySend + 'static>(
        &self,
        kind: &str,
        buffer: usize,
    ) -> Result<PortFactory<Svc, T, ()>, BusError> {
        let n = self.config.max_aux_ports;
        self.service(&format!("fastfeed/{}/{kind}", self.feed), buffer, n, n)
    }

    fn aux_sender<T: Copy + Debug + ZeroCopySend + 'static>(
        &self,
        kind: &str,
        buffer: usize,
    ) -> Result<Sender<T>, BusError> {
        let service = self.aux_service::<T>(kind, buffer)?;
        let port = service
            .publisher_builder()
            .max_loaned_samples(1)
            .create()
            .map_err(BusError::ice(format!("create {kind} publisher")))?;
        Ok(Sender {
            port,
            _service: service,
        })
    }

    fn aux_receiver<T: Copy + Debug + ZeroCopySend + 'static>(
        &self,
        kind: &str,
        buffer: usize,
    ) -> Result<Receiver<T>, BusError> {
        let service = self.aux_service::<T>(kind, buffer)?;
        let port = service
            .subscriber_builder()
            .buffer_size(buffer)
            .create()
            .map_err(BusError::ice(format!("create {kind} subscriber")))?;
        Ok(Receiver {
            port,
            _service: service,
            wait_mode: self.config.wait_mode,
        })
    }

    /// Sender of [`Echo`](crate::Echo)s (used by subscribers) on `fastfeed/<feed>/echo`.
    pub fn echo_publisher(&self) -> Result<EchoPublisher, BusError> {
        self.aux_sender("echo", self.config.buffer_size)
    }

    /// Receiver of [`Echo`](crate::Echo)s (used by the publisher process).
    pub fn echo_subscriber(&self) -> Result<EchoSubscriber, BusError> {
        self.aux_receiver("echo", self.config.buffer_size)
    }

    /// Sender on `fastfeed/<feed>/control`.
    pub fn control_publisher(&self) -> Result<ControlPublisher, BusError> {
        self.aux_sender("control", self.config.control_buffer_size)
    }

    /// Receiver on `fastfeed/<feed>/control` (also receives this process's own messages).
    pub fn control_subscriber(&self) -> Result<ControlSubscriber, BusError> {
        self.aux_receiver("control", self.config.control_buffer_size)
    }
}
