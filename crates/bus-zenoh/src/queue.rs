//! Where Zenoh's callbacks leave what they received until a port takes it: a bounded queue per
//! port, and one wake-up per bus that idle ports wait on instead of sleeping blindly.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere leaves the queue consistent: every update is one push or pop.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a full queue does with the next item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Overflow {
    /// Drop the oldest (screens): Zenoh's receiving task never waits for us.
    DropOldest,
    /// Wait for room (recorders): Zenoh's receiving task for this session stops reading, TCP
    /// pushes back, and the loss, if any, happens at the publisher where it is counted.
    Block,
}

#[derive(Default)]
struct WakeState {
    pending: bool,
    waiting: bool,
}

/// Set by every callback of a bus, waited on by its idle ports. A condition variable costs a
/// system call per notify, so callbacks notify only while someone waits.
#[derive(Default)]
pub(crate) struct Wakeup {
    state: Mutex<WakeState>,
    cv: Condvar,
    /// `state.pending`, readable without the lock, for waiters that poll before they sleep.
    hint: AtomicBool,
    /// Whether waiters poll first (see [`Wakeup::poll_first`]).
    poll: AtomicBool,
    /// Whether waiters poll only (see [`Wakeup::spin`]).
    spin: AtomicBool,
}

/// How many times a polling waiter yields the CPU, looking for an arrival, before it sleeps.
const POLL_YIELDS: u32 = 16;

impl Wakeup {
    pub(crate) fn notify(&self) {
        let mut s = lock(&self.state);
        s.pending = true;
        self.hint.store(true, Ordering::Release);
        if s.waiting {
            self.cv.notify_all();
        }
    }

    /// From now on, waiters yield the CPU a few times, looking for an arrival, before they
    /// sleep: a stream of samples then costs no wake-up (a system call on both sides) per
    /// sample. For recorders' buses: `scripts/hosts.sh --throughput --one` took 15-25% more
    /// records/s with it; a screen's latency got worse (the yields take a core the receive
    /// path needs), so other buses sleep at once.
    pub(crate) fn poll_first(&self) {
        self.poll.store(true, Ordering::Relaxed);
    }

    /// From now on, waiters never sleep: they yield the CPU until an arrival or their time is
    /// up. A process that has a core to spare (`subscribe --spin`) then takes each sample
    /// without a wake-up.
    pub(crate) fn spin(&self) {
        self.spin.store(true, Ordering::Relaxed);
    }

    /// Returns at once if anything arrived since the last wait, else after the next arrival or
    /// `max`.
    pub(crate) fn wait(&self, max: Duration) {
        if self.spin.load(Ordering::Relaxed) {
            let start = std::time::Instant::now();
            while !self.hint.load(Ordering::Acquire) && start.elapsed() < max {
                std::thread::yield_now();
            }
            let mut s = lock(&self.state);
            s.pending = false;
            self.hint.store(false, Ordering::Release);
            return;
        }
        if self.poll.load(Ordering::Relaxed) {
            for _ in 0..POLL_YIELDS {
                if self.hint.load(Ordering::Acquire) {
                    break;
                }
                std::thread::yield_now();
            }
        }
        let mut s = lock(&self.state);
        if !s.pending {
            s.waiting = true;
            s = self
                .cv
                .wait_timeout_while(s, max, |s| !s.pending)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            s.waiting = false;
        }
        s.pending = false;
        self.hint.store(false, Ordering::Release);
    }
}

struct Items<T> {
    items: VecDeque<T>,
    /// A blocked producer waits for room.
    producer_waiting: bool,
}

/// A bounded queue filled by a Zenoh callback and emptied by one port.
pub(crate) struct Queue<T> {
    items: Mutex<Items<T>>,
    room: Condvar,
    cap: usize,
    overflow: Overflow,
    wakeup: Arc<Wakeup>,
    /// Items dropped to make room (screens); subscribers also see them as seq gaps.
    dropped: AtomicU64,
}

impl<T> Queue<T> {
    pub(crate) fn new(cap: usize, overflow: Overflow, wakeup: Arc<Wakeup>) -> Self {
        Queue {
            items: Mutex::new(Items {
                items: VecDeque::with_capacity(cap.min(fastfeed_bus::DEFAULT_QUEUE)),
                producer_waiting: false,
            }),
            room: Condvar::new(),
            cap: cap.max(1),
            overflow,
            wakeup,
            dropped: AtomicU64::new(0),
        }
    }

    /// Called by Zenoh's receiving task.
    pub(crate) fn push(&self, item: T) {
        let mut q = lock(&self.items);
        while q.items.len() >= self.cap {
            match self.overflow {
                Overflow::DropOldest => {
                    q.items.pop_front();
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                }
                Overflow::Block => {
                    q.producer_waiting = true;
                    // Timed, so that a reader that went away without dropping its port
                    // cannot hold Zenoh's task forever: the wait is retried while full.
                    q = self
                        .room
                        .wait_timeout(q, Duration::from_millis(100))
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
        q.items.push_back(item);
        drop(q);
        self.wakeup.notify();
    }

    pub(crate) fn pop(&self) -> Option<T> {
        let mut q = lock(&self.items);
        let item = q.items.pop_front();
        if q.producer_waiting && item.is_some() {
            q.producer_waiting = false;
            self.room.notify_one();
        }
        item
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    pub(crate) fn wakeup(&self) -> &Wakeup {
        &self.wakeup
    }

    pub(crate) fn wakeup_arc(&self) -> Arc<Wakeup> {
        self.wakeup.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn drop_oldest_keeps_the_newest() {
        let q = Queue::new(3, Overflow::DropOldest, Arc::default());
        for i in 0..10 {
            q.push(i);
        }
        assert_eq!(
            (q.pop(), q.pop(), q.pop(), q.pop()),
            (Some(7), Some(8), Some(9), None)
        );
        assert_eq!(q.dropped(), 7);
    }

    #[test]
    fn block_waits_for_the_reader() {
        let q = Arc::new(Queue::new(2, Overflow::Block, Arc::default()));
        let producer = {
            let q = q.clone();
            std::thread::spawn(move || (0..100).for_each(|i| q.push(i)))
        };
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while got.len() < 100 && Instant::now() < deadline {
            match q.pop() {
                Some(i) => got.push(i),
                None => q.wakeup().wait(Duration::from_millis(1)),
            }
        }
        producer.join().unwrap();
        assert_eq!(got, (0..100).collect::<Vec<_>>());
        assert_eq!(q.dropped(), 0);
    }

    #[test]
    fn a_spinning_wakeup_returns_on_arrival_and_after_its_time() {
        let w = Arc::new(Wakeup::default());
        w.spin();
        let t = Instant::now();
        w.wait(Duration::from_millis(20));
        assert!(t.elapsed() >= Duration::from_millis(20), "nothing came");
        let notifier = {
            let w = w.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(10));
                w.notify();
            })
        };
        let t = Instant::now();
        w.wait(Duration::from_secs(5));
        assert!(t.elapsed() < Duration::from_secs(1), "woke on the arrival");
        notifier.join().unwrap();
    }

    #[test]
    fn wakeup_returns_at_once_when_something_came() {
        let w = Wakeup::default();
        // Then again polling first, which changes nothing of that.
        for poll in [false, true] {
            if poll {
                w.poll_first();
            }
            w.notify();
            let t = Instant::now();
            w.wait(Duration::from_secs(5));
            assert!(t.elapsed() < Duration::from_secs(1));
            let t = Instant::now();
            w.wait(Duration::from_millis(20));
            assert!(t.elapsed() >= Duration::from_millis(20));
        }
    }
}
