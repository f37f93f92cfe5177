//! A striped lock table: writers of a key hold the stripe its hash picks, so read-modify-write
//! commands on one key (INCR, HINCRBY, LPUSH, ZADD...) from different connections are atomic.
//! Readers take no lock: every write is one atomic `WriteBatch`, so a reader sees a whole
//! command's effect or none of it.
//!
//! Multi-key writers lock their stripes in ascending index order (no deadlock).

use parking_lot::{Mutex, MutexGuard};
use std::hash::{BuildHasher, Hasher};

/// Number of stripes: collisions only serialise unrelated keys, never deadlock.
const STRIPES: usize = 1024;

/// The lock table.
pub struct LockTable {
    stripes: Vec<Mutex<()>>,
    hasher: std::collections::hash_map::RandomState,
}

impl Default for LockTable {
    fn default() -> Self {
        LockTable {
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            hasher: std::collections::hash_map::RandomState::new(),
        }
    }
}

/// Held stripes; dropping releases them.
pub struct Guards<'a> {
    _held: Vec<MutexGuard<'a, ()>>,
}

impl LockTable {
    fn stripe(&self, key: &[u8]) -> usize {
        let mut h = self.hasher.build_hasher();
        h.write(key);
        (h.finish() as usize) % STRIPES
    }

    /// Locks the stripes of `keys` (any number, duplicates allowed).
    pub fn lock<'a, K: AsRef<[u8]>>(&'a self, keys: &[K]) -> Guards<'a> {
        let mut idx: Vec<usize> = keys.iter().map(|k| self.stripe(k.as_ref())).collect();
        idx.sort_unstable();
        idx.dedup();
        Guards { _held: idx.into_iter().map(|i| self.stripes[i].lock()).collect() }
    }
}
