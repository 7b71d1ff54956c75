//! The subscriber's side of key declarations: securities' keys declared on the subscribing
//! session too, so that Zenoh routes their samples from a cached route.
//!
//! A publisher sends a sample on the longest prefix the subscriber's session declared to it
//! (the subscription's `fastfeed/<feed>/<type>`) plus the rest of the key (`/<security>`).
//! The receiving session caches routes per resource, and it holds no resource for
//! `<type>/<security>` unless someone declared that key there: without one it matched the
//! key against every subscription again for each sample (`compute_data_route` ->
//! `Resource::get_matches`). Declaring the key locally (nothing goes on the wire) gives it a
//! resource and its samples a cached route: two sessions over loopback TCP, 1,000 keys, went
//! from 1.2-1.3 M to 3.0-3.2 M samples/s (`examples/zrate.rs`). Screens declare those they asked
//! for (see [`KeyDeclarations::new`]), recorders every security's key as its records come.

use std::collections::HashSet;

use fastfeed_bus::Securities;
use zenoh::key_expr::KeyExpr;
use zenoh::Wait;

use crate::bus::Declarations;
use crate::ports::{BUCKETS, MAX_DECLARED};

/// Security ids below this are marked in a bitmap, the others in a set.
const DENSE_IDS: u32 = 1 << 16;

/// Notes, as records arrive, the key each one came on, and declares it when the subscriber
/// is idle: the first [`MAX_DECLARED`] securities' own keys, then bucket keys, as the
/// publisher (`ports.rs`) chooses them. With several publishers the two sets may differ a
/// little; a key declared for nothing costs only its entry.
pub(crate) struct KeyDeclarations {
    session: zenoh::Session,
    declarations: Declarations,
    stream: String,
    dense: Vec<u64>,
    sparse: HashSet<u32>,
    buckets: Vec<u64>,
    /// Securities given a key here (declared or pending).
    declared: usize,
    /// Keys noted, not declared yet.
    pending: Vec<Key>,
    /// Kept alive: dropping a declared key expression undeclares it.
    held: Vec<KeyExpr<'static>>,
    /// Whether arriving records' keys are declared (recorders).
    learn: bool,
}

enum Key {
    Security(u32),
    Bucket(u32),
}

fn mark(bits: &mut Vec<u64>, i: u32) -> bool {
    let (word, bit) = ((i / 64) as usize, 1u64 << (i % 64));
    if bits.len() <= word {
        bits.resize(word + 1, 0);
    }
    let new = bits[word] & bit == 0;
    bits[word] |= bit;
    new
}

impl KeyDeclarations {
    /// Keys for a subscriber on `stream`. A recorder (`learn`) declares the keys its records
    /// come on, as they come; a screen only those of the securities it asked for, here, before
    /// any record: declaring while records flow delayed a screen's first records of each
    /// security (`scripts/hosts.sh -n 5000 -p 100 -s 2000`: one way p50 147-173 -> 180-186 us
    /// over the first ~300 securities' declarations; the same after them).
    pub(crate) fn new(
        session: &zenoh::Session,
        declarations: &Declarations,
        stream: &str,
        learn: bool,
        securities: &Securities,
    ) -> Self {
        let mut keys = KeyDeclarations {
            session: session.clone(),
            declarations: declarations.clone(),
            stream: stream.to_string(),
            dense: Vec::new(),
            sparse: HashSet::new(),
            buckets: Vec::new(),
            declared: 0,
            pending: Vec::new(),
            held: Vec::new(),
            learn,
        };
        if let Securities::Only(ids) = securities {
            for &id in ids {
                keys.note(id);
            }
            while keys.declare_one() {}
        }
        keys
    }

    /// Notes a record of `security` (a recorder's): its key, if new, waits for
    /// [`KeyDeclarations::declare_one`]. A screen's records are not noted (see
    /// [`KeyDeclarations::new`]).
    pub(crate) fn see(&mut self, security: u32) {
        if self.learn {
            self.note(security);
        }
    }

    /// Notes `security`'s key, to declare if it is new.
    fn note(&mut self, security: u32) {
        if self.declared < MAX_DECLARED {
            let new = if security < DENSE_IDS {
                mark(&mut self.dense, security)
            } else {
                self.sparse.insert(security)
            };
            if new {
                self.declared += 1;
                self.pending.push(Key::Security(security));
            }
        } else if !self.seen_before(security) {
            let b = security % BUCKETS;
            if mark(&mut self.buckets, b) {
                self.pending.push(Key::Bucket(b));
            }
        }
    }

    /// Declares one key noted by [`KeyDeclarations::see`], if any waits; false if none did.
    /// Called when the subscriber has nothing to deliver: a declaration takes Zenoh's routing
    /// tables for about 50 us, which a record waiting behind it would wait too.
    pub(crate) fn declare_one(&mut self) -> bool {
        let Some(key) = self.pending.pop() else {
            return false;
        };
        let key = match key {
            Key::Security(s) => format!("{}/{s}", self.stream),
            Key::Bucket(b) => format!("{}/b{b}", self.stream),
        };
        // Only a speed-up: a key that cannot be declared is still routed, from no cache.
        let declared = {
            let _declaring = self.declarations.lock();
            self.session.declare_keyexpr(key).wait()
        };
        if let Ok(key) = declared {
            self.held.push(key);
        }
        true
    }

    fn seen_before(&self, security: u32) -> bool {
        if security < DENSE_IDS {
            let word = (security / 64) as usize;
            self.dense
                .get(word)
                .is_some_and(|w| w & (1 << (security % 64)) != 0)
        } else {
            self.sparse.contains(&security)
        }
    }

    /// Keys declared so far.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_security_once_then_buckets() {
        let bus = crate::ZenohBus::new("t", crate::ZenohConfig::default()).unwrap();
        let mut keys = KeyDeclarations::new(
            bus.session(),
            bus.declarations(),
            "fastfeed/t/msg",
            true,
            &Securities::All,
        );
        for s in [5, 5, 70_000, 5, 70_000, 9] {
            keys.see(s);
        }
        assert_eq!(keys.len(), 0, "declared only when asked");
        while keys.declare_one() {}
        assert_eq!(keys.len(), 3);
        for s in 100..(100 + MAX_DECLARED as u32 - 3) {
            keys.see(s);
        }
        while keys.declare_one() {}
        assert_eq!(keys.len(), MAX_DECLARED, "the cap reached");
        let past = 1_000_000;
        keys.see(past);
        keys.see(past + BUCKETS);
        keys.see(5);
        while keys.declare_one() {}
        assert_eq!(
            keys.len(),
            MAX_DECLARED + 1,
            "one bucket for both, none for 5"
        );
    }

    #[test]
    fn a_screen_declares_the_securities_it_asked_for() {
        let bus = crate::ZenohBus::new("t", crate::ZenohConfig::default()).unwrap();
        let only = Securities::Only(vec![3, 4, 3]);
        let mut keys = KeyDeclarations::new(
            bus.session(),
            bus.declarations(),
            "fastfeed/t/msg",
            false,
            &only,
        );
        assert_eq!(keys.len(), 2, "declared before any record");
        keys.see(9);
        assert!(
            !keys.declare_one(),
            "a screen learns nothing from its records"
        );
        assert_eq!(keys.len(), 2);
    }
}
