//! Who else is on the feed, as a publisher hears it on the control channel: the subscribers
//! that said hello (and whether they still do), and other publishers.

use std::time::{Duration, Instant};

/// A subscriber not heard from for this long, without a BYE, is reported as gone: they say
/// hello every [`crate::HEARTBEAT`], so this is several missed in a row.
pub const SILENT_AFTER: Duration = Duration::from_secs(2);

/// One subscriber of the feed, as its control messages tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerSubscriber {
    pub id: u32,
    pub last_heard: Instant,
    /// It said BYE: it left on purpose.
    pub left: bool,
    /// It went silent without a BYE (died or stuck), and that was reported.
    pub silent: bool,
}

/// Another publisher on the same feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rival {
    pub id: u32,
    /// When it started ([`fastfeed_bus::now_ns`]); `u64::MAX` while unknown (only its Done
    /// or records were seen).
    pub started_ns: u64,
}

impl Rival {
    /// Whether it was on the feed before a publisher `(id, started_ns)`: the earlier start,
    /// or the lower id at the same start, so both sides agree.
    pub fn is_older_than(&self, id: u32, started_ns: u64) -> bool {
        (self.started_ns, self.id) < (started_ns, id)
    }
}

/// A set of publishers sharing one feed on purpose (a multi-channel publisher's threads).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Group {
    /// Nonzero, the same for every member; 0: a publisher alone.
    pub id: u32,
    /// Members in all.
    pub size: u32,
}

impl Group {
    /// A new group of `size` publishers, with an id unlikely to collide with another's.
    pub fn new(size: u32) -> Self {
        Group {
            id: fastfeed_bus::new_publisher_id() | 1,
            size,
        }
    }
}

#[derive(Debug, Default)]
pub struct Peers {
    pub subscribers: Vec<PeerSubscriber>,
    pub rivals: Vec<Rival>,
}

impl Peers {
    /// A HELLO from `id`; returns whether it is new.
    pub fn hello(&mut self, id: u32, now: Instant) -> bool {
        match self.subscribers.iter_mut().find(|s| s.id == id) {
            Some(s) => {
                s.last_heard = now;
                if s.silent {
                    eprintln!("subscriber {id} is heard from again");
                    s.silent = false;
                }
                false
            }
            None => {
                self.subscribers.push(PeerSubscriber {
                    id,
                    last_heard: now,
                    left: false,
                    silent: false,
                });
                true
            }
        }
    }

    pub fn bye(&mut self, id: u32) {
        if let Some(s) = self.subscribers.iter_mut().find(|s| s.id == id) {
            s.left = true;
        }
    }

    /// Another publisher heard; returns it if it is new (or its start time just became
    /// known).
    pub fn rival(&mut self, id: u32, started_ns: u64) -> Option<Rival> {
        match self.rivals.iter_mut().find(|r| r.id == id) {
            Some(r) if started_ns < r.started_ns => {
                r.started_ns = started_ns;
                Some(*r)
            }
            Some(_) => None,
            None => {
                let r = Rival { id, started_ns };
                self.rivals.push(r);
                Some(r)
            }
        }
    }

    /// Subscribers that went silent since the last call, marked so they are reported once.
    pub fn newly_silent(&mut self, now: Instant) -> Vec<u32> {
        let mut v = Vec::new();
        for s in &mut self.subscribers {
            if !s.left && !s.silent && now.duration_since(s.last_heard) >= SILENT_AFTER {
                s.silent = true;
                v.push(s.id);
            }
        }
        v
    }

    /// Subscribers that said hello and not bye, silent ones included.
    pub fn not_left(&self) -> usize {
        self.subscribers.iter().filter(|s| !s.left).count()
    }

    /// Subscribers that are neither gone nor silent.
    pub fn active(&self) -> usize {
        self.subscribers
            .iter()
            .filter(|s| !s.left && !s.silent)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscriber_without_hello_goes_silent_once() {
        let mut p = Peers::default();
        let t0 = Instant::now();
        assert!(p.hello(7, t0));
        assert!(!p.hello(7, t0));
        assert!(p.newly_silent(t0 + Duration::from_millis(500)).is_empty());
        assert_eq!(p.newly_silent(t0 + SILENT_AFTER), vec![7]);
        assert!(p.newly_silent(t0 + SILENT_AFTER * 2).is_empty());
        assert_eq!(p.active(), 0);
        p.hello(7, t0 + SILENT_AFTER * 2);
        assert_eq!(p.active(), 1);
        p.bye(7);
        assert!(p.newly_silent(t0 + SILENT_AFTER * 10).is_empty());
    }

    #[test]
    fn the_older_publisher_is_the_same_on_both_sides() {
        let a = Rival {
            id: 5,
            started_ns: 100,
        };
        let b = Rival {
            id: 3,
            started_ns: 200,
        };
        assert!(a.is_older_than(b.id, b.started_ns));
        assert!(!b.is_older_than(a.id, a.started_ns));
        let c = Rival {
            id: 4,
            started_ns: 100,
        };
        assert!(c.is_older_than(a.id, a.started_ns));
        assert!(!a.is_older_than(c.id, c.started_ns));
    }
}
