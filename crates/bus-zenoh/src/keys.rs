//! The subscriber's side of key declarations: each security's key declared on the subscribing
//! session too, so that Zenoh routes its samples from a cached route.
//!
//! A publisher sends a sample on the longest prefix the subscriber's session declared to it
//! (the subscription's `fastfeed/<feed>/<type>`) plus the rest of the key (`/<security>`).
//! The receiving session caches routes per resource, and it holds no resource for
//! `<type>/<security>` unless someone declared that key there: without one it matched the
//! key against every subscription again for each sample (`compute_data_route` ->
//! `Resource::get_matches`). Declaring the key locally (nothing goes on the wire) gives it a
//! resource and its samples a cached route: two sessions over loopback TCP, 1,000 keys, went
//! from 1.2-1.3 M to 3.0-3.2 M samples/s (`examples/zrate.rs`).

use std::collections::HashSet;

use zenoh::key_expr::KeyExpr;
use zenoh::Wait;

use crate::ports::{BUCKETS, MAX_DECLARED};

/// Security ids below this are marked in a bitmap, the others in a set.
const DENSE_IDS: u32 = 1 << 16;

/// Declares, as records arrive, the key each one came on: the first [`MAX_DECLARED`]
/// securities' own keys, then bucket keys, as the publisher (`ports.rs`) chooses them. With
/// several publishers the two sets may differ a little; a key declared for nothing costs only
/// its entry.
pub(crate) struct KeyDeclarations {
    session: zenoh::Session,
    stream: String,
    dense: Vec<u64>,
    sparse: HashSet<u32>,
    buckets: Vec<u64>,
    /// Securities with a key declared here.
    declared: usize,
    /// Kept alive: dropping a declared key expression undeclares it.
    held: Vec<KeyExpr<'static>>,
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
    pub(crate) fn new(session: &zenoh::Session, stream: &str) -> Self {
        KeyDeclarations {
            session: session.clone(),
            stream: stream.to_string(),
            dense: Vec::new(),
            sparse: HashSet::new(),
            buckets: Vec::new(),
            declared: 0,
            held: Vec::new(),
        }
    }

    /// Notes a record of `security`, declaring its key if it is the first.
    pub(crate) fn see(&mut self, security: u32) {
        if self.declared < MAX_DECLARED {
            let new = if security < DENSE_IDS {
                mark(&mut self.dense, security)
            } else {
                self.sparse.insert(security)
            };
            if new {
                self.declared += 1;
                self.declare(format_args!("{security}"));
            }
        } else if !self.seen_before(security) {
            let b = security % BUCKETS;
            if mark(&mut self.buckets, b) {
                self.declare(format_args!("b{b}"));
            }
        }
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

    fn declare(&mut self, chunk: std::fmt::Arguments) {
        // Only a speed-up: a key that cannot be declared is still routed, from no cache.
        if let Ok(key) = self
            .session
            .declare_keyexpr(format!("{}/{chunk}", self.stream))
            .wait()
        {
            self.held.push(key);
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
        let mut keys = KeyDeclarations::new(bus.session(), "fastfeed/t/msg");
        for s in [5, 5, 70_000, 5, 70_000, 9] {
            keys.see(s);
        }
        assert_eq!(keys.len(), 3);
        for s in 100..(100 + MAX_DECLARED as u32 - 3) {
            keys.see(s);
        }
        assert_eq!(keys.len(), MAX_DECLARED, "the cap reached");
        let past = 1_000_000;
        keys.see(past);
        keys.see(past + BUCKETS);
        keys.see(5);
        assert_eq!(
            keys.len(),
            MAX_DECLARED + 1,
            "one bucket for both, none for 5"
        );
    }
}
