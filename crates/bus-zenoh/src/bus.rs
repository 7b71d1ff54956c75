//! The Zenoh session of one feed, its configuration, and the ports it makes.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use fastfeed_bus::{
    new_publisher_id, Bus, BusError, Control, Echo, Message, PublisherQos, Record, Securities,
    Sequencer, SubscriberClass, SubscriberQos, Topic, DEFAULT_QUEUE,
};
use zenoh::Wait;

use crate::ports::{ZenohPublisher, ZenohReceiver, ZenohSender, ZenohSubscriber};
use crate::queue::{Overflow, Queue, Wakeup};
use crate::{wire, zerr};

/// How a Zenoh session finds the others.
#[derive(Debug, Clone, Default)]
pub struct ZenohConfig {
    /// A Zenoh configuration file (JSON5) read first: TLS, users, access control, anything
    /// Zenoh offers. The fields below are applied over it.
    pub file: Option<PathBuf>,
    /// Endpoints to listen on, e.g. `tcp/127.0.0.1:7447`. Empty: none unless scouting is on,
    /// in which case Zenoh's default (every interface, a free port).
    pub listen: Vec<String>,
    /// Endpoints of other sessions to connect to (retried until they answer).
    pub connect: Vec<String>,
    /// Multicast scouting: find peers on the local network without endpoints. Off, the
    /// session talks only to the endpoints above (tests, and hosts that must not be found).
    pub scouting: bool,
    /// Publishers wait when a link's queue is full instead of dropping for that link
    /// (`CongestionControl::Block`): every recorder gets every record, and a slow one slows
    /// the feed.
    pub block_when_congested: bool,
}

/// The lock that the key declarations made on one session take (publishers, declared key
/// expressions), shared by the threads that share the session.
///
/// Zenoh 1.10 gives a key's id to a second thread declaring the same key while the first is
/// still registering it with the session's router (`Session::declare_prefix` with `force`),
/// and the router drops what is sent on that id until then ("Route data with unknown
/// scope"). The channel threads of one publisher declare the same bucket, echo and control
/// keys: a recorder missed a record in about 1 run of 10 (`channel_threads_share_one_
/// listening_session` in crates/cli/tests/zenoh.rs; `examples/zrace.rs` shows it with Zenoh
/// alone). Declarations are rare (a security's first record): the lock is off the per-record
/// path.
#[derive(Clone, Default)]
pub(crate) struct Declarations(Arc<Mutex<()>>);

impl Declarations {
    pub(crate) fn lock(&self) -> MutexGuard<'_, ()> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One feed over Zenoh: owns a Zenoh session (peer mode).
pub struct ZenohBus {
    session: zenoh::Session,
    declarations: Declarations,
    feed: String,
    id: u32,
    config: ZenohConfig,
    wakeup: Arc<Wakeup>,
}

impl std::fmt::Debug for ZenohBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZenohBus")
            .field("feed", &self.feed)
            .field("id", &self.id)
            .field("zid", &self.session.zid())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The longest an idle port sleeps before looking again (it wakes earlier on arrival).
const IDLE_WAIT: Duration = Duration::from_millis(1);

impl ZenohBus {
    /// Opens a session for `feed`.
    pub fn new(feed: &str, config: ZenohConfig) -> Result<ZenohBus, BusError> {
        Topic::new(feed, "x")?; // validates the feed name
                                // Zenoh's own warnings and errors (a sample for an unknown key, a refused link) go
                                // unseen unless RUST_LOG asks for them: then they go to stdout.
        zenoh::try_init_log_from_env();
        let zconfig = zenoh_config(&config)?;
        let session = zenoh::open(zconfig).wait().map_err(zerr("open session"))?;
        Ok(ZenohBus {
            session,
            declarations: Declarations::default(),
            feed: feed.into(),
            id: new_publisher_id(),
            config,
            wakeup: Arc::default(),
        })
    }

    /// Another bus of the same feed on this bus's session: a publisher of its own (its own
    /// id, ports and wake-ups) that shares the session's links. The threads of one
    /// many-channel publisher each take one, so a single `--listen` endpoint serves them all.
    pub fn partner(&self) -> ZenohBus {
        ZenohBus {
            session: self.session.clone(),
            declarations: self.declarations.clone(),
            feed: self.feed.clone(),
            id: new_publisher_id(),
            config: self.config.clone(),
            wakeup: Arc::default(),
        }
    }

    /// Idle ports of this bus poll (yielding the CPU) instead of sleeping until a sample
    /// comes: no wake-up per sample, a core kept busy (`subscribe --spin`).
    pub fn spin_when_idle(&self) {
        self.wakeup.spin();
    }

    /// The underlying session (its id, links, or anything else Zenoh offers).
    pub fn session(&self) -> &zenoh::Session {
        &self.session
    }

    /// The lock its session's key declarations take.
    #[cfg(test)]
    pub(crate) fn declarations(&self) -> &Declarations {
        &self.declarations
    }

    /// The configuration it was opened with.
    pub fn config(&self) -> &ZenohConfig {
        &self.config
    }

    /// Waits until at least `n` other sessions are connected, or `timeout`; returns how many
    /// are.
    pub fn wait_for_peers(&self, n: usize, timeout: Duration) -> usize {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let peers = self.session.info().peers_zid().wait().count()
                + self.session.info().routers_zid().wait().count();
            if peers >= n || std::time::Instant::now() >= deadline {
                return peers;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn key(&self, type_name: &str) -> Result<String, BusError> {
        Ok(Topic::new(&self.feed, type_name)?.stream_name())
    }

    fn aux_sender<M: Message>(
        &self,
        congestion: zenoh::qos::CongestionControl,
    ) -> Result<ZenohSender<M>, BusError> {
        let key = self.key(M::TYPE_NAME)?;
        let _declaring = self.declarations.lock();
        let publisher = self
            .session
            .declare_publisher(key)
            // Echoes and control are few and latency-bound: not batched, ahead of data.
            .express(true)
            .priority(zenoh::qos::Priority::InteractiveHigh)
            .congestion_control(congestion)
            .wait()
            .map_err(zerr("declare publisher"))?;
        Ok(ZenohSender {
            publisher,
            _m: std::marker::PhantomData,
        })
    }

    fn aux_receiver<M: Message>(&self) -> Result<ZenohReceiver<M>, BusError> {
        let key = self.key(M::TYPE_NAME)?;
        let queue = Arc::new(Queue::new(
            DEFAULT_QUEUE,
            Overflow::DropOldest,
            self.wakeup.clone(),
        ));
        let rejected = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (q, r) = (queue.clone(), rejected.clone());
        let subscriber = self
            .session
            .declare_subscriber(key)
            .callback(
                move |sample| match wire::decode_message::<M>(&sample.payload().to_bytes()) {
                    Ok(m) => q.push(m),
                    Err(_) => {
                        r.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                },
            )
            .wait()
            .map_err(zerr("declare subscriber"))?;
        Ok(ZenohReceiver {
            _subscriber: subscriber,
            queue,
            rejected,
        })
    }
}

fn zenoh_config(c: &ZenohConfig) -> Result<zenoh::Config, BusError> {
    let mut z = match &c.file {
        Some(path) => {
            zenoh::Config::from_file(path).map_err(zerr(format!("reading {}", path.display())))?
        }
        None => zenoh::Config::default(),
    };
    let json = |v: &[String]| {
        let quoted: Vec<String> = v.iter().map(|s| format!("{s:?}")).collect();
        format!("[{}]", quoted.join(","))
    };
    let mut set = |key: &str, value: String| {
        z.insert_json5(key, &value)
            .map_err(zerr(format!("config {key} = {value}")))
    };
    set("mode", "\"peer\"".into())?;
    if !c.scouting || !c.listen.is_empty() {
        set("listen/endpoints", json(&c.listen))?;
    }
    if !c.connect.is_empty() {
        set("connect/endpoints", json(&c.connect))?;
    }
    set("scouting/multicast/enabled", c.scouting.to_string())?;
    // Gossip would pass on peers' addresses to connect to: with scouting off, a session talks
    // to its endpoints only.
    set("scouting/gossip/enabled", c.scouting.to_string())?;
    Ok(z)
}

impl Bus for ZenohBus {
    type Publisher<R: Record> = ZenohPublisher<R>;
    type Subscriber<R: Record> = ZenohSubscriber<R>;
    type Sender<M: Message> = ZenohSender<M>;
    type Receiver<M: Message> = ZenohReceiver<M>;

    fn feed(&self) -> &str {
        &self.feed
    }

    fn id(&self) -> u32 {
        self.id
    }

    fn publisher<R: Record>(&self, qos: &PublisherQos) -> Result<ZenohPublisher<R>, BusError> {
        let topic = Topic::of_record::<R>(&self.feed)?;
        ZenohPublisher::new(
            self.session.clone(),
            self.declarations.clone(),
            topic.stream_name(),
            Sequencer::new(self.id),
            qos,
            self.config.block_when_congested,
        )
    }

    fn subscriber<R: Record>(
        &self,
        securities: Securities,
        qos: &SubscriberQos,
    ) -> Result<ZenohSubscriber<R>, BusError> {
        if qos.queue == 0 {
            return Err(BusError::Unsupported("a subscriber queue of 0".into()));
        }
        let topic = Topic::of_record::<R>(&self.feed)?;
        let overflow = match qos.class {
            SubscriberClass::Screen => Overflow::DropOldest,
            SubscriberClass::Recorder => {
                self.wakeup.poll_first();
                Overflow::Block
            }
        };
        let queue = Arc::new(Queue::new(qos.queue, overflow, self.wakeup.clone()));
        let recorder = overflow == Overflow::Block;
        ZenohSubscriber::new(
            &self.session,
            &self.declarations,
            &topic,
            securities,
            queue,
            qos.late_join,
            recorder,
        )
    }

    /// Echoes wait for room: a burst of them must all reach the publisher, and only the
    /// echoing subscriber waits.
    fn echo_sender(&self) -> Result<ZenohSender<Echo>, BusError> {
        self.aux_sender(zenoh::qos::CongestionControl::Block)
    }

    fn echo_receiver(&self) -> Result<ZenohReceiver<Echo>, BusError> {
        self.aux_receiver()
    }

    /// Control messages are dropped for a link that cannot take them (a host cut off: its
    /// express batches fill): blocking held the publisher's thread for the whole cut, and
    /// past 5 s Zenoh closed that session. Announcements and hellos repeat; the publisher
    /// repeats its Done until every subscriber said bye.
    fn control_sender(&self) -> Result<ZenohSender<Control>, BusError> {
        self.aux_sender(zenoh::qos::CongestionControl::Drop)
    }

    fn control_receiver(&self) -> Result<ZenohReceiver<Control>, BusError> {
        self.aux_receiver()
    }

    fn pause(&self) {
        self.wakeup.wait(IDLE_WAIT);
    }
}
