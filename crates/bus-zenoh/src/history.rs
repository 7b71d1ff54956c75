//! The publisher's side of late joiners: the last sample of each security, kept as sent, and
//! a queryable on `fastfeed/<feed>/<type>/*` that answers a query with those of the securities
//! its key expression names (one reply per security, on the security's own key).
//!
//! The table is updated before the sample is put: a query answered after the update holds
//! the record, one answered before it is followed by the record's live copy (the subscriber,
//! declared before it queried, gets it). The subscriber tells the two apart by seq.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use fastfeed_bus::BusError;
use zenoh::key_expr::KeyExpr;
use zenoh::query::{Query, Queryable};
use zenoh::Wait;

use crate::zerr;

/// Security ids below this have a slot in a flat table, the others in a map.
const DENSE_IDS: u32 = 1 << 16;

/// The last sample of each security, `stride` bytes each.
struct LastValues {
    stride: usize,
    /// Slot `i` at `i * stride`; an empty slot is zeros (a sample starts with the non-zero
    /// wire version).
    dense: Vec<u8>,
    sparse: HashMap<u32, Vec<u8>>,
    /// Securities published on a bucket key (past `MAX_DECLARED`): answered on it too, as
    /// a new key per security costs Zenoh's routing more the more keys it holds.
    bucketed: HashSet<u32>,
}

impl LastValues {
    /// Stores `sample` padded with zeros to the stride (a whole record, as a sample may
    /// carry it).
    fn store(&mut self, security: u32, sample: &[u8], bucketed: bool) {
        debug_assert!(sample.len() <= self.stride);
        let len = sample.len().min(self.stride);
        let sample = &sample[..len];
        if bucketed {
            self.bucketed.insert(security);
        }
        if security < DENSE_IDS {
            let at = security as usize * self.stride;
            if self.dense.len() < at + self.stride {
                self.dense.resize(at + self.stride, 0);
            }
            self.dense[at..at + len].copy_from_slice(sample);
            self.dense[at + len..at + self.stride].fill(0);
        } else {
            let slot = self.sparse.entry(security).or_default();
            slot.clear();
            slot.extend_from_slice(sample);
            slot.resize(self.stride, 0);
        }
    }

    /// Every stored sample, and whether it went on a bucket key, copied (the lock is held
    /// only for the copy).
    fn all(&self) -> Vec<(u32, bool, Vec<u8>)> {
        let dense = self
            .dense
            .chunks_exact(self.stride)
            .enumerate()
            .filter(|(_, s)| s[0] != 0)
            .map(|(i, s)| (i as u32, s.to_vec()));
        let sparse = self.sparse.iter().map(|(&id, s)| (id, s.clone()));
        dense
            .chain(sparse)
            .map(|(id, s)| (id, self.bucketed.contains(&id), s))
            .collect()
    }
}

/// Shared by the publisher (which stores) and its queryable's callback (which answers).
pub(crate) struct History {
    stream: String,
    values: Mutex<LastValues>,
    queries: AtomicU64,
    replies_failed: AtomicU64,
}

fn lock(m: &Mutex<LastValues>) -> MutexGuard<'_, LastValues> {
    // Every update is one copy: a panic elsewhere leaves the table usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl History {
    /// The history of `stream` (`fastfeed/<feed>/<type>`), samples of `stride` bytes, and the
    /// queryable that answers from it.
    pub(crate) fn declare(
        session: &zenoh::Session,
        stream: &str,
        stride: usize,
    ) -> Result<(Arc<History>, Queryable<()>), BusError> {
        let history = Arc::new(History {
            stream: stream.to_string(),
            values: Mutex::new(LastValues {
                stride,
                dense: Vec::new(),
                sparse: HashMap::new(),
                bucketed: HashSet::new(),
            }),
            queries: AtomicU64::new(0),
            replies_failed: AtomicU64::new(0),
        });
        let h = history.clone();
        let queryable = session
            .declare_queryable(format!("{stream}/*"))
            .callback(move |query| h.answer(&query))
            .wait()
            .map_err(zerr("declare queryable"))?;
        Ok((history, queryable))
    }

    /// The last sample of `security`, published on its bucket key if `bucketed`.
    pub(crate) fn store(&self, security: u32, sample: &[u8], bucketed: bool) {
        lock(&self.values).store(security, sample, bucketed);
    }

    /// Replies with the last sample of every security the query's key expression names; the
    /// query ends (Zenoh sends its final) when it is dropped after this returns.
    fn answer(&self, query: &Query) {
        self.queries.fetch_add(1, Ordering::Relaxed);
        let samples = lock(&self.values).all();
        for (security, bucketed, sample) in samples {
            let key = if bucketed {
                format!("{}/b{}", self.stream, security % crate::ports::BUCKETS)
            } else {
                format!("{}/{security}", self.stream)
            };
            let Ok(key) = KeyExpr::try_from(key) else {
                continue;
            };
            if !query.key_expr().intersects(&key) {
                continue;
            }
            if query.reply(key, sample).wait().is_err() {
                self.replies_failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Queries answered so far (late joiners served).
    pub(crate) fn queries(&self) -> u64 {
        self.queries.load(Ordering::Relaxed)
    }

    /// Replies Zenoh refused to send (the querier went away, the session closed).
    pub(crate) fn replies_failed(&self) -> u64 {
        self.replies_failed.load(Ordering::Relaxed)
    }
}
