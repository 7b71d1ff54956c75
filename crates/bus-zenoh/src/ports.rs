//! Ports: the record publisher and subscriber, the echo/control sender and receiver.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fastfeed_bus::{
    Accounting, BusError, Envelope, Message, Priority, Publisher, PublisherQos, Receiver, Record,
    Securities, Sender, Sequencer, Subscriber, Topic,
};
use zenoh::pubsub::Publisher as ZPublisher;
use zenoh::qos::CongestionControl;
use zenoh::Wait;

use crate::bus::Declarations;
use crate::history::History;
use crate::join::Join;
use crate::keys::KeyDeclarations;
use crate::queue::Queue;
use crate::wire::{self, RecordWire};
use crate::zerr;

/// Security ids below this get their Zenoh publisher from a flat table, the others from a map.
const DENSE_IDS: u32 = 1 << 16;

/// Securities per record type that get a key (and a declared Zenoh publisher) of their own.
/// Zenoh's routing matches each new key against every key it holds (`get_matches`), so
/// declaring costs more the more keys there are: publishing ~50,000 option series on a key
/// each took 89 s for 132,500 records (a mean of 676 us per record, p90 2.6 ms), and putting
/// them undeclared cost 380 us a put (p50). Past this many, records go on bucket keys.
pub const MAX_DECLARED: usize = 4096;
/// Bucket keys `<type>/b<security mod BUCKETS>` for the securities past [`MAX_DECLARED`].
/// fastfeed's subscribers take `<type>/*` and filter on the record's security, so they get
/// these too; another Zenoh program subscribing to one such security takes its bucket's key.
pub const BUCKETS: u32 = 1024;

fn priority(p: Priority) -> zenoh::qos::Priority {
    use zenoh::qos::Priority as Z;
    match p {
        Priority::RealTime => Z::RealTime,
        Priority::InteractiveHigh => Z::InteractiveHigh,
        Priority::InteractiveLow => Z::InteractiveLow,
        Priority::DataHigh => Z::DataHigh,
        Priority::Data => Z::Data,
        Priority::DataLow => Z::DataLow,
        Priority::Background => Z::Background,
    }
}

/// Publishes records of one type, each on `fastfeed/<feed>/<type>/<security>`.
///
/// One Zenoh publisher is declared per security on its first record, for the first
/// [`MAX_DECLARED`] securities: the key expression is then declared once to the other
/// sessions and each record carries a small number instead of its key. Records of further
/// securities go on one of [`BUCKETS`] bucket keys.
pub struct ZenohPublisher<R: Record> {
    session: zenoh::Session,
    declarations: Declarations,
    stream: String,
    dense: Vec<Option<ZPublisher<'static>>>,
    sparse: HashMap<u32, ZPublisher<'static>>,
    /// Publishers in `dense` and `sparse`.
    declared: usize,
    /// Bucket publishers, by `security % BUCKETS`, for securities past `MAX_DECLARED`.
    buckets: Vec<Option<ZPublisher<'static>>>,
    seq: Sequencer,
    wire: RecordWire,
    buf: Vec<u8>,
    congestion: CongestionControl,
    priority: zenoh::qos::Priority,
    express: bool,
    history: Arc<History>,
    _queryable: zenoh::query::Queryable<()>,
    _r: std::marker::PhantomData<fn(R)>,
}

impl<R: Record> ZenohPublisher<R> {
    pub(crate) fn new(
        session: zenoh::Session,
        declarations: Declarations,
        stream: String,
        seq: Sequencer,
        qos: &PublisherQos,
        block: bool,
    ) -> Result<Self, BusError> {
        let (history, queryable) = History::declare(&session, &stream, RecordWire::len::<R>())?;
        Ok(ZenohPublisher {
            session,
            declarations,
            stream,
            dense: Vec::new(),
            sparse: HashMap::new(),
            declared: 0,
            buckets: Vec::new(),
            seq,
            wire: RecordWire::of::<R>(),
            buf: Vec::with_capacity(RecordWire::len::<R>()),
            congestion: if block {
                CongestionControl::Block
            } else {
                CongestionControl::Drop
            },
            priority: priority(qos.priority),
            express: qos.express,
            history,
            _queryable: queryable,
            _r: std::marker::PhantomData,
        })
    }

    /// A publisher on `<stream>/<chunk>`.
    fn declare(&self, chunk: impl std::fmt::Display) -> Result<ZPublisher<'static>, BusError> {
        let _declaring = self.declarations.lock();
        self.session
            .declare_publisher(format!("{}/{chunk}", self.stream))
            .congestion_control(self.congestion)
            .priority(self.priority)
            .express(self.express)
            .wait()
            .map_err(zerr("declare publisher"))
    }

    /// The security's Zenoh publisher: its own, declared on its first record while fewer
    /// than [`MAX_DECLARED`] are, or else its bucket's (then `true`).
    fn port(&mut self, security: u32) -> Result<(&ZPublisher<'static>, bool), BusError> {
        let room = self.declared < MAX_DECLARED;
        if security < DENSE_IDS {
            let i = security as usize;
            if room && self.dense.len() <= i {
                self.dense.resize_with(i + 1, || None);
            }
            if room && self.dense[i].is_none() {
                self.dense[i] = Some(self.declare(security)?);
                self.declared += 1;
            }
            if let Some(Some(_)) = self.dense.get(i) {
                return Ok((self.dense[i].as_ref().expect("checked"), false));
            }
        } else {
            if room && !self.sparse.contains_key(&security) {
                let p = self.declare(security)?;
                self.sparse.insert(security, p);
                self.declared += 1;
            }
            if self.sparse.contains_key(&security) {
                return Ok((&self.sparse[&security], false));
            }
        }
        let b = (security % BUCKETS) as usize;
        if self.buckets.len() <= b {
            self.buckets.resize_with(b + 1, || None);
        }
        if self.buckets[b].is_none() {
            self.buckets[b] = Some(self.declare(format_args!("b{b}"))?);
        }
        Ok((self.buckets[b].as_ref().expect("declared above"), true))
    }

    /// Securities that have a Zenoh publisher so far.
    pub fn securities_declared(&self) -> usize {
        self.declared
    }

    /// Late joiners' queries answered with the last record of each security.
    pub fn history_queries(&self) -> u64 {
        self.history.queries()
    }

    /// Replies to late joiners Zenoh refused to send.
    pub fn history_replies_failed(&self) -> u64 {
        self.history.replies_failed()
    }
}

impl<R: Record> Publisher<R> for ZenohPublisher<R> {
    /// Sends the record to every matching subscriber. With the default congestion control a
    /// link whose queue stays full drops it (that subscriber sees a gap); with
    /// `block_when_congested` the call waits.
    fn publish(&mut self, record: &R) -> Result<u64, BusError> {
        let security = record.security_id();
        // Declared before the record is numbered: a failure leaves no gap behind.
        let (_, bucketed) = self.port(security)?;
        let env = self.seq.stamp(record);
        let mut buf = std::mem::take(&mut self.buf);
        self.wire.encode(&env, &mut buf);
        // Before the put: a late joiner's query answered in between then holds the record,
        // and its live copy is dropped as a duplicate (see history.rs).
        self.history.store(security, &buf, bucketed);
        let (port, _) = self.port(security)?;
        let result = port.put(buf.as_slice()).wait().map_err(zerr("put"));
        self.buf = buf;
        result?;
        Ok(env.seq)
    }

    fn last_seq(&self) -> u64 {
        self.seq.last_seq()
    }
}

/// Receives records of one type: subscribes to `fastfeed/<feed>/<type>/*` and filters by
/// security on its side, so that it can account for every seq (see the crate docs). A late
/// joiner ([`SubscriberQos::late_join`](fastfeed_bus::SubscriberQos)) first delivers the
/// current state (see join.rs).
pub struct ZenohSubscriber<R: Record> {
    _subscriber: zenoh::pubsub::Subscriber<()>,
    queue: Arc<Queue<Envelope<R>>>,
    accounting: Accounting,
    rejected: Arc<AtomicU64>,
    join: Option<Arc<Join<R>>>,
    /// The current state, accounted, then the live records held while it came.
    snapshot: VecDeque<Envelope<R>>,
    held: VecDeque<Envelope<R>>,
    keys: KeyDeclarations,
}

impl<R: Record> ZenohSubscriber<R> {
    pub(crate) fn new(
        session: &zenoh::Session,
        declarations: &Declarations,
        topic: &Topic,
        securities: Securities,
        queue: Arc<Queue<Envelope<R>>>,
        late_join: bool,
        recorder: bool,
    ) -> Result<Self, BusError> {
        let rejected = Arc::new(AtomicU64::new(0));
        let stream = topic.stream_name();
        // The join exists before the live subscriber, which holds records in it; it asks
        // only once the live subscriber is declared (below), so that nothing falls between.
        let join = late_join.then(|| Arc::new(Join::new(queue.wakeup_arc(), rejected.clone())));
        let (q, r, j) = (queue.clone(), rejected.clone(), join.clone());
        let wire = RecordWire::of::<R>();
        let subscriber = session
            .declare_subscriber(format!("{stream}/*"))
            .callback(
                move |sample| match wire.decode::<R>(&sample.payload().to_bytes()) {
                    Ok(env) => match &j {
                        None => q.push(env),
                        Some(j) => {
                            if let Some(env) = j.hold(env) {
                                q.push(env)
                            }
                        }
                    },
                    Err(_) => {
                        r.fetch_add(1, Ordering::Relaxed);
                    }
                },
            )
            .wait()
            .map_err(zerr("declare subscriber"))?;
        if let Some(j) = &join {
            j.ask(session, &stream)?;
        }
        let keys = KeyDeclarations::new(session, declarations, &stream, recorder, &securities);
        Ok(ZenohSubscriber {
            _subscriber: subscriber,
            queue,
            accounting: Accounting::new(securities),
            rejected,
            join,
            snapshot: VecDeque::new(),
            held: VecDeque::new(),
            keys,
        })
    }

    /// Samples on this topic that were not records of this type and layout version (another
    /// program's, or a binary built with another layout): counted, never delivered.
    pub fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }

    /// Records dropped from this subscriber's full queue (screens); they are also counted in
    /// `missed` once a later record shows the gap.
    pub fn dropped(&self) -> u64 {
        self.queue.dropped()
    }

    /// A late joiner's replies that were errors (a publisher that did not answer in time),
    /// or a query that could not be sent: the current state may lack its securities.
    pub fn join_errors(&self) -> u64 {
        self.join.as_ref().map_or(0, |j| j.reply_errors())
    }

    /// Takes the current state once the join is done: false while it is not.
    fn joined(&mut self) -> bool {
        let Some(join) = &self.join else {
            return true;
        };
        let Some((replies, live)) = join.take() else {
            return false;
        };
        for env in replies {
            if self.accounting.accept_snapshot(&env) {
                self.snapshot.push_back(env);
            }
        }
        self.held = live.into();
        self.join = None;
        true
    }
}

impl<R: Record> Subscriber<R> for ZenohSubscriber<R> {
    fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }

    fn try_recv(&mut self) -> Result<Option<Envelope<R>>, BusError> {
        if !self.joined() {
            return Ok(None);
        }
        if let Some(env) = self.snapshot.pop_front() {
            return Ok(Some(env));
        }
        while let Some(env) = self.held.pop_front().or_else(|| self.queue.pop()) {
            self.keys.see(env.record.security_id());
            if self.accounting.accept(&env) {
                return Ok(Some(env));
            }
        }
        self.keys.declare_one();
        Ok(None)
    }

    fn accounting(&self) -> &Accounting {
        &self.accounting
    }

    fn joining(&self) -> bool {
        self.join.as_ref().is_some_and(|j| j.pending())
    }

    fn pause(&self) {
        self.queue.wakeup().wait(Duration::from_millis(1));
    }
}

/// Sends echo or control messages on `fastfeed/<feed>/echo` or `.../control`.
pub struct ZenohSender<M: Message> {
    pub(crate) publisher: ZPublisher<'static>,
    pub(crate) _m: std::marker::PhantomData<fn(M)>,
}

impl<M: Message> Sender<M> for ZenohSender<M> {
    /// Sends `message`; returns 0 (Zenoh does not say how many received it).
    fn send(&self, message: M) -> Result<usize, BusError> {
        self.publisher
            .put(wire::encode_message(&message))
            .wait()
            .map_err(zerr("put"))?;
        Ok(0)
    }
}

/// Receives echo or control messages.
pub struct ZenohReceiver<M: Message> {
    pub(crate) _subscriber: zenoh::pubsub::Subscriber<()>,
    pub(crate) queue: Arc<Queue<M>>,
    pub(crate) rejected: Arc<AtomicU64>,
}

impl<M: Message> ZenohReceiver<M> {
    /// Samples that were not this message type and layout: counted, never delivered.
    pub fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }

    /// Messages dropped from the full queue.
    pub fn dropped(&self) -> u64 {
        self.queue.dropped()
    }
}

impl<M: Message> Receiver<M> for ZenohReceiver<M> {
    fn try_recv(&self) -> Result<Option<M>, BusError> {
        Ok(self.queue.pop())
    }

    fn pause(&self) {
        self.queue.wakeup().wait(Duration::from_millis(1));
    }
}
