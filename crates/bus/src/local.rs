//! [`LocalBus`]: the bus inside one process, on std only. For tests and examples: it lets
//! code generic over [`Bus`] run without shared memory or a network.

use std::any::{Any, TypeId};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::{
    new_publisher_id, Accounting, Bus, BusError, Control, Echo, Envelope, Message, Publisher,
    PublisherQos, Receiver, Record, Securities, Sender, Sequencer, Subscriber, SubscriberQos,
    Topic, DEFAULT_QUEUE,
};

/// A bounded queue: when full, the oldest item makes room (a screen's overflow rule; the
/// subscriber's accounting counts the loss as a seq gap).
struct Ring<T> {
    items: VecDeque<T>,
    cap: usize,
}

type Queue<T> = Mutex<Ring<T>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic in another participant's thread leaves the queue itself consistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The queues of one feed, by payload type (`Envelope<R>`, `Echo`, `Control`).
#[derive(Default)]
struct Hub {
    feed: String,
    queues: Mutex<HashMap<TypeId, Vec<Weak<dyn Any + Send + Sync>>>>,
}

impl Hub {
    fn register<T: Send + 'static>(&self, cap: usize) -> Arc<Queue<T>> {
        let q = Arc::new(Mutex::new(Ring {
            items: VecDeque::with_capacity(cap.min(DEFAULT_QUEUE)),
            cap: cap.max(1),
        }));
        let weak: Weak<dyn Any + Send + Sync> = Arc::downgrade(&q) as _;
        lock(&self.queues)
            .entry(TypeId::of::<T>())
            .or_default()
            .push(weak);
        q
    }

    /// Copies `item` into every live queue of its type; returns how many.
    fn deliver<T: Copy + Send + 'static>(&self, item: T) -> usize {
        let mut queues = lock(&self.queues);
        let Some(list) = queues.get_mut(&TypeId::of::<T>()) else {
            return 0;
        };
        list.retain(|w| w.strong_count() > 0);
        let mut n = 0;
        for q in list.iter().filter_map(Weak::upgrade) {
            if let Some(q) = q.downcast_ref::<Queue<T>>() {
                let mut ring = lock(q);
                if ring.items.len() >= ring.cap {
                    ring.items.pop_front();
                }
                ring.items.push_back(item);
                n += 1;
            }
        }
        n
    }
}

/// One feed inside this process. [`LocalBus::join`] adds another participant (its own
/// publisher id) to the same feed; every handle and port is `Send`, so participants may run
/// in threads of their own.
///
/// QoS: the subscriber queue is `qos.queue`; both classes drop the oldest when full (counted
/// as missed). Publisher QoS has nothing to act on.
pub struct LocalBus {
    hub: Arc<Hub>,
    id: u32,
}

impl LocalBus {
    /// A new feed, with nobody else on it yet.
    pub fn new(feed: &str) -> Result<LocalBus, BusError> {
        Topic::new(feed, "x")?; // validates the feed name
        Ok(LocalBus {
            hub: Arc::new(Hub {
                feed: feed.into(),
                ..Hub::default()
            }),
            id: new_publisher_id(),
        })
    }

    /// Another participant on the same feed, with a publisher id of its own.
    pub fn join(&self) -> LocalBus {
        LocalBus {
            hub: self.hub.clone(),
            id: new_publisher_id(),
        }
    }
}

impl std::fmt::Debug for LocalBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalBus")
            .field("feed", &self.hub.feed)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Bus for LocalBus {
    type Publisher<R: Record> = LocalPublisher<R>;
    type Subscriber<R: Record> = LocalSubscriber<R>;
    type Sender<M: Message> = LocalSender<M>;
    type Receiver<M: Message> = LocalReceiver<M>;

    fn feed(&self) -> &str {
        &self.hub.feed
    }

    fn id(&self) -> u32 {
        self.id
    }

    fn publisher<R: Record>(&self, _qos: &PublisherQos) -> Result<LocalPublisher<R>, BusError> {
        Topic::of_record::<R>(self.feed())?;
        Ok(LocalPublisher {
            hub: self.hub.clone(),
            seq: Sequencer::new(self.id),
            _r: std::marker::PhantomData,
        })
    }

    fn subscriber<R: Record>(
        &self,
        securities: Securities,
        qos: &SubscriberQos,
    ) -> Result<LocalSubscriber<R>, BusError> {
        Topic::of_record::<R>(self.feed())?;
        if qos.late_join {
            return Err(BusError::Unsupported(
                "late joiners: the local bus keeps no history".into(),
            ));
        }
        Ok(LocalSubscriber {
            queue: self.hub.register(qos.queue),
            accounting: Accounting::new(securities),
        })
    }

    fn echo_sender(&self) -> Result<LocalSender<Echo>, BusError> {
        Ok(self.sender())
    }

    fn echo_receiver(&self) -> Result<LocalReceiver<Echo>, BusError> {
        Ok(self.receiver())
    }

    fn control_sender(&self) -> Result<LocalSender<Control>, BusError> {
        Ok(self.sender())
    }

    fn control_receiver(&self) -> Result<LocalReceiver<Control>, BusError> {
        Ok(self.receiver())
    }
}

impl LocalBus {
    fn sender<M: Message>(&self) -> LocalSender<M> {
        LocalSender {
            hub: self.hub.clone(),
            _m: std::marker::PhantomData,
        }
    }

    fn receiver<M: Message>(&self) -> LocalReceiver<M> {
        LocalReceiver {
            queue: self.hub.register(DEFAULT_QUEUE),
        }
    }
}

/// [`LocalBus`]'s publisher.
pub struct LocalPublisher<R> {
    hub: Arc<Hub>,
    seq: Sequencer,
    _r: std::marker::PhantomData<fn(R)>,
}

impl<R: Record> Publisher<R> for LocalPublisher<R> {
    fn publish(&mut self, record: &R) -> Result<u64, BusError> {
        let env = self.seq.stamp(record);
        self.hub.deliver(env);
        Ok(env.seq)
    }

    fn last_seq(&self) -> u64 {
        self.seq.last_seq()
    }
}

/// [`LocalBus`]'s subscriber.
pub struct LocalSubscriber<R> {
    queue: Arc<Queue<Envelope<R>>>,
    accounting: Accounting,
}

impl<R: Record> Subscriber<R> for LocalSubscriber<R> {
    fn try_recv(&mut self) -> Result<Option<Envelope<R>>, BusError> {
        loop {
            let Some(env) = lock(&self.queue).items.pop_front() else {
                return Ok(None);
            };
            if self.accounting.accept(&env) {
                return Ok(Some(env));
            }
        }
    }

    fn accounting(&self) -> &Accounting {
        &self.accounting
    }
}

/// [`LocalBus`]'s sender of echo and control messages.
pub struct LocalSender<M> {
    hub: Arc<Hub>,
    _m: std::marker::PhantomData<fn(M)>,
}

impl<M: Message> Sender<M> for LocalSender<M> {
    fn send(&self, message: M) -> Result<usize, BusError> {
        Ok(self.hub.deliver(message))
    }
}

/// [`LocalBus`]'s receiver of echo and control messages.
pub struct LocalReceiver<M> {
    queue: Arc<Queue<M>>,
}

impl<M: Message> Receiver<M> for LocalReceiver<M> {
    fn try_recv(&self) -> Result<Option<M>, BusError> {
        Ok(lock(&self.queue).items.pop_front())
    }
}
