//! The subscriber's side of late joiners. Its live subscriber is declared first; then a
//! querier on `fastfeed/<feed>/<type>/*` asks every publisher's history (history.rs) for the
//! last record of each security, as soon as one matches. Until the replies are all in, live
//! records are held here rather than queued (a recorder's full queue would otherwise hold
//! Zenoh's receiving task, and the replies behind it). The subscriber then delivers the
//! replies in seq order, then the held records, then the queue; live copies of records the
//! replies already hold or superseded have a seq at or below theirs and are dropped as
//! duplicates by the accounting.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use fastfeed_bus::{BusError, Envelope, Record};
use zenoh::matching::MatchingListener;
use zenoh::query::{ConsolidationMode, Querier, QueryTarget, Reply};
use zenoh::Wait;

use crate::queue::Wakeup;
use crate::wire::RecordWire;
use crate::zerr;

/// How long a late joiner waits for a publisher's history to appear (a publisher started
/// later answers as soon as it is there), holding what it receives meanwhile.
const MATCH_WAIT: Duration = Duration::from_secs(5);
/// How long the publishers have to answer.
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No publisher's history seen yet.
    Waiting,
    /// Asked; replies coming.
    Querying,
    /// Every reply in, or given up.
    Done,
}

struct State<R> {
    phase: Phase,
    deadline: Instant,
    replies: Vec<Envelope<R>>,
    live: Vec<Envelope<R>>,
}

struct Shared<R> {
    /// Cleared once the subscriber took the state: the live callback then queues directly.
    joining: AtomicBool,
    state: Mutex<State<R>>,
    wakeup: Arc<Wakeup>,
    wire: RecordWire,
    rejected: Arc<AtomicU64>,
    /// Replies that were errors (a timeout, a replier's error).
    reply_errors: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<R: Record> Shared<R> {
    fn finish(&self) {
        lock(&self.state).phase = Phase::Done;
        self.wakeup.notify();
    }

    fn reply(&self, reply: &Reply) {
        match reply.result() {
            Ok(sample) => match self.wire.decode::<R>(&sample.payload().to_bytes()) {
                Ok(env) => lock(&self.state).replies.push(env),
                Err(_) => {
                    self.rejected.fetch_add(1, Ordering::Relaxed);
                }
            },
            Err(_) => {
                self.reply_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Asks, once, when a publisher's history matches.
    fn start(self: &Arc<Self>, querier: &Querier<'static>) {
        {
            let mut s = lock(&self.state);
            if s.phase != Phase::Waiting {
                return;
            }
            s.phase = Phase::Querying;
        }
        // Zenoh drops the callback when the query ends (every final in, or the timeout):
        // the guard's drop ends the join.
        let guard = FinishOnDrop(self.clone());
        let asked = querier
            .get()
            .callback(move |reply| guard.0.reply(&reply))
            .wait();
        if asked.is_err() {
            self.reply_errors.fetch_add(1, Ordering::Relaxed);
            self.finish();
        }
    }
}

struct FinishOnDrop<R: Record>(Arc<Shared<R>>);

impl<R: Record> Drop for FinishOnDrop<R> {
    fn drop(&mut self) {
        self.0.finish();
    }
}

/// What a finished join hands over: (the current state, the live records held).
pub(crate) type Taken<R> = (Vec<Envelope<R>>, Vec<Envelope<R>>);

/// A late joiner's query for the current state, and the live records held meanwhile.
pub(crate) struct Join<R: Record> {
    shared: Arc<Shared<R>>,
    listener: Mutex<Option<MatchingListener<()>>>,
}

impl<R: Record> Join<R> {
    pub(crate) fn new(wakeup: Arc<Wakeup>, rejected: Arc<AtomicU64>) -> Self {
        Join {
            shared: Arc::new(Shared {
                joining: AtomicBool::new(true),
                state: Mutex::new(State {
                    phase: Phase::Waiting,
                    deadline: Instant::now() + MATCH_WAIT,
                    replies: Vec::new(),
                    live: Vec::new(),
                }),
                wakeup,
                wire: RecordWire::of::<R>(),
                rejected,
                reply_errors: AtomicU64::new(0),
            }),
            listener: Mutex::new(None),
        }
    }

    /// Declares the querier on `stream/*` and asks as soon as a history matches. To be called
    /// once the live subscriber is declared.
    pub(crate) fn ask(&self, session: &zenoh::Session, stream: &str) -> Result<(), BusError> {
        let querier = session
            .declare_querier(format!("{stream}/*"))
            // Every publisher's history, and every reply: none is the same record twice.
            .target(QueryTarget::All)
            .consolidation(ConsolidationMode::None)
            .timeout(REPLY_TIMEOUT)
            .wait()
            .map_err(zerr("declare querier"))?;
        let querier = Arc::new(querier);
        let (s, q) = (self.shared.clone(), querier.clone());
        // Called at once if a history is there, else by Zenoh's task when one appears.
        let listener = querier
            .matching_listener()
            .callback(move |status| {
                if status.matching() {
                    s.start(&q);
                }
            })
            .wait()
            .map_err(zerr("declare matching listener"))?;
        *lock(&self.listener) = Some(listener);
        Ok(())
    }

    /// Called by the live callback: `Some(env)` to queue, `None` if held.
    #[inline]
    pub(crate) fn hold(&self, env: Envelope<R>) -> Option<Envelope<R>> {
        if !self.shared.joining.load(Ordering::Acquire) {
            return Some(env);
        }
        let mut s = lock(&self.shared.state);
        if s.phase == Phase::Done {
            return Some(env);
        }
        s.live.push(env);
        None
    }

    /// Still waiting for a history or its replies (giving up past the wait).
    pub(crate) fn pending(&self) -> bool {
        let mut s = lock(&self.shared.state);
        if s.phase == Phase::Waiting && Instant::now() >= s.deadline {
            s.phase = Phase::Done;
        }
        s.phase != Phase::Done
    }

    /// Once done: the replies sorted by (publisher, seq), and the live records held, in
    /// arrival order. Later live records are queued.
    pub(crate) fn take(&self) -> Option<Taken<R>> {
        if self.pending() {
            return None;
        }
        // The querier is no longer needed.
        lock(&self.listener).take();
        let mut s = lock(&self.shared.state);
        self.shared.joining.store(false, Ordering::Release);
        let mut replies = std::mem::take(&mut s.replies);
        replies.sort_unstable_by_key(|e| (e.publisher, e.seq));
        Some((replies, std::mem::take(&mut s.live)))
    }

    /// Replies that were errors, or a query that could not be sent.
    pub(crate) fn reply_errors(&self) -> u64 {
        self.shared.reply_errors.load(Ordering::Relaxed)
    }
}
