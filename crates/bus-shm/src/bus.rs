//! The iceoryx2-backed bus: node, data publishers/subscribers and the echo and
//! control channels.

use crate::ice;
use crate::payload::{Aux, Data};
use crate::ports::{ShmPublisher, ShmReceiver, ShmSender, ShmSubscriber};
use fastfeed_bus::{
    new_publisher_id, Accounting, Bus, BusError, Control, Echo, Message, PublisherQos, Record,
    Securities, Sequencer, SubscriberQos, Topic, DEFAULT_QUEUE,
};
use iceoryx2::prelude::*;
use iceoryx2::service::port_factory::publish_subscribe::PortFactory;
use std::fmt::Debug;
use std::time::Duration;

pub(crate) type Svc = ipc::Service;

/// How a port waits when there was nothing to receive.
///
/// iceoryx2 event services (Listener/Notifier) would allow a true blocking wait, but
/// they cost the publisher a notification per sample; we poll instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitMode {
    /// Yield the CPU between polls (lowest latency).
    Spin,
    /// Sleep this long between polls (adds up to that much latency).
    Sleep(Duration),
}

impl WaitMode {
    pub(crate) fn pause(self) {
        match self {
            // Yield rather than pure spin: on a machine with fewer cores than busy processes
            // a pure spin would starve the very process it waits for.
            WaitMode::Spin => std::thread::yield_now(),
            WaitMode::Sleep(d) => std::thread::sleep(d),
        }
    }
}

/// Service settings. Every process of a feed must use the same values: iceoryx2
/// treats them as minimum requirements when opening an existing service and fails
/// with `DoesNotSupportRequested...` otherwise.
#[derive(Debug, Clone)]
pub struct ShmConfig {
    /// The longest subscriber queue (`SubscriberQos::queue`) a data or echo service allows.
    pub buffer_size: usize,
    /// Subscribers per data service (each costs `buffer_size` preallocated samples
    /// in every publisher's segment).
    pub max_subscribers: usize,
    /// Publishers per data service: a multi-channel publisher has one per thread (one
    /// thread per core of a 16-core machine), a single-stream one one, plus a spare.
    pub max_publishers: usize,
    /// Publishers and subscribers of the echo and control services (one per subscriber
    /// process, one per publisher thread).
    pub max_aux_ports: usize,
    /// Queue size of control subscribers.
    pub control_buffer_size: usize,
    /// How ports wait when idle.
    pub wait_mode: WaitMode,
}

impl Default for ShmConfig {
    fn default() -> Self {
        ShmConfig {
            buffer_size: DEFAULT_QUEUE,
            max_subscribers: 8,
            max_publishers: 17,
            max_aux_ports: 32,
            control_buffer_size: 256,
            wait_mode: WaitMode::Sleep(Duration::from_micros(50)),
        }
    }
}

/// One feed on shared memory: owns this process's iceoryx2 node.
pub struct ShmBus {
    node: Node<Svc>,
    feed: String,
    config: ShmConfig,
    id: u32,
    dead_nodes_cleaned: u64,
}

impl Debug for ShmBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmBus")
            .field("feed", &self.feed)
            .field("id", &self.id)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl ShmBus {
    /// Opens the bus for `feed` with [`ShmConfig::default`].
    pub fn new(feed: &str) -> Result<ShmBus, BusError> {
        ShmBus::with_config(feed, ShmConfig::default())
    }

    /// Creates the iceoryx2 node, then removes resources of dead nodes (processes
    /// that crashed or were killed) so that their ports do not occupy service slots.
    /// iceoryx2's default config already does this inside node creation
    /// (`cleanup_dead_nodes_on_creation`); the explicit `try_cleanup_dead_nodes`
    /// covers configs that disable it.
    pub fn with_config(feed: &str, config: ShmConfig) -> Result<ShmBus, BusError> {
        Topic::new(feed, "x")?; // validates the feed name
        let name = format!("fastfeed-{feed}-{}", std::process::id());
        let node = NodeBuilder::new()
            .name(&NodeName::new(&name).map_err(ice("node name"))?)
            // Leave SIGINT/SIGTERM to the application.
            .signal_handling_mode(SignalHandlingMode::Disabled)
            .create::<Svc>()
            .map_err(ice("create node"))?;
        let dead_nodes_cleaned = node.try_cleanup_dead_nodes().cleanups;
        Ok(ShmBus {
            node,
            feed: feed.into(),
            config,
            id: new_publisher_id(),
            dead_nodes_cleaned,
        })
    }

    /// The settings it was opened with.
    pub fn config(&self) -> &ShmConfig {
        &self.config
    }

    /// Dead nodes removed by our explicit cleanup (usually 0, see [`ShmBus::with_config`]).
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
        let service_name = ServiceName::new(name).map_err(ice(name))?;
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
            .map_err(ice(format!("open service {name}")))
    }

    fn data_service<R: Record>(&self) -> Result<PortFactory<Svc, Data<R>, ()>, BusError> {
        let topic = Topic::of_record::<R>(&self.feed)?;
        let c = &self.config;
        self.service(
            &topic.stream_name(),
            c.buffer_size,
            c.max_publishers,
            c.max_subscribers,
        )
    }

    fn aux_service<M: Message>(
        &self,
        buffer: usize,
    ) -> Result<PortFactory<Svc, Aux<M>, ()>, BusError> {
        let n = self.config.max_aux_ports;
        let topic = Topic::of_message::<M>(&self.feed)?;
        self.service(&topic.stream_name(), buffer, n, n)
    }

    fn aux_sender<M: Message>(&self, buffer: usize) -> Result<ShmSender<M>, BusError> {
        let service = self.aux_service::<M>(buffer)?;
        let port = service
            .publisher_builder()
            .max_loaned_samples(1)
            .create()
            .map_err(ice(format!("create {} publisher", M::TYPE_NAME)))?;
        Ok(ShmSender {
            port,
            _service: service,
        })
    }

    fn aux_receiver<M: Message>(&self, buffer: usize) -> Result<ShmReceiver<M>, BusError> {
        let service = self.aux_service::<M>(buffer)?;
        let port = service
            .subscriber_builder()
            .buffer_size(buffer)
            .create()
            .map_err(ice(format!("create {} subscriber", M::TYPE_NAME)))?;
        Ok(ShmReceiver {
            port,
            _service: service,
            wait_mode: self.config.wait_mode,
        })
    }
}

impl Bus for ShmBus {
    type Publisher<R: Record> = ShmPublisher<R>;
    type Subscriber<R: Record> = ShmSubscriber<R>;
    type Sender<M: Message> = ShmSender<M>;
    type Receiver<M: Message> = ShmReceiver<M>;

    fn feed(&self) -> &str {
        &self.feed
    }

    fn id(&self) -> u32 {
        self.id
    }

    /// Publisher of `R` on `fastfeed/<feed>/<R::TYPE_NAME>`; the QoS has nothing to change
    /// here (see the crate docs).
    fn publisher<R: Record>(&self, _qos: &PublisherQos) -> Result<ShmPublisher<R>, BusError> {
        let service = self.data_service::<R>()?;
        let port = service
            .publisher_builder()
            .max_loaned_samples(1)
            .create()
            .map_err(ice("create publisher"))?;
        Ok(ShmPublisher {
            port,
            _service: service,
            seq: Sequencer::new(self.id),
        })
    }

    fn subscriber<R: Record>(
        &self,
        securities: Securities,
        qos: &SubscriberQos,
    ) -> Result<ShmSubscriber<R>, BusError> {
        if qos.late_join {
            return Err(BusError::Unsupported(
                "late joiners: shared memory keeps no history (use --bus zenoh)".into(),
            ));
        }
        if qos.queue == 0 || qos.queue > self.config.buffer_size {
            return Err(BusError::Unsupported(format!(
                "a subscriber queue of {} records: shared memory allows 1 to {} (ShmConfig::buffer_size)",
                qos.queue, self.config.buffer_size
            )));
        }
        let service = self.data_service::<R>()?;
        let port = service
            .subscriber_builder()
            .buffer_size(qos.queue)
            .create()
            .map_err(ice("create subscriber"))?;
        Ok(ShmSubscriber {
            port,
            _service: service,
            accounting: Accounting::new(securities),
            wait_mode: self.config.wait_mode,
        })
    }

    fn echo_sender(&self) -> Result<ShmSender<Echo>, BusError> {
        self.aux_sender(self.config.buffer_size)
    }

    fn echo_receiver(&self) -> Result<ShmReceiver<Echo>, BusError> {
        self.aux_receiver(self.config.buffer_size)
    }

    fn control_sender(&self) -> Result<ShmSender<Control>, BusError> {
        self.aux_sender(self.config.control_buffer_size)
    }

    fn control_receiver(&self) -> Result<ShmReceiver<Control>, BusError> {
        self.aux_receiver(self.config.control_buffer_size)
    }

    fn pause(&self) {
        self.config.wait_mode.pause();
    }
}
