//! Caches: the block cache (uncompressed blocks by file and offset) and the table cache.
//!
//! INTERIM implementation: a single mutex and O(n) eviction. To be replaced by the sharded LRU;
//! the public API below is the contract the rest of the engine uses.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

/// Identifies a cached block: the owning table's cache id and the block's offset in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CacheKey {
    pub file: u64,
    pub offset: u64,
}

/// A byte-bounded cache of shared values. Lookups take `&self` and may run concurrently.
pub struct Cache<K, V> {
    capacity: usize,
    inner: Mutex<Inner<K, V>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

struct Inner<K, V> {
    map: HashMap<K, (Arc<V>, usize, u64)>,
    usage: usize,
    tick: u64,
}

impl<K: Hash + Eq + Clone + Send, V: Send + Sync> Cache<K, V> {
    /// A cache holding at most `capacity` bytes of charge.
    pub fn new(capacity: usize) -> Self {
        Cache {
            capacity,
            inner: Mutex::new(Inner { map: HashMap::new(), usage: 0, tick: 0 }),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The value for `key`, marking it recently used.
    pub fn lookup(&self, key: &K) -> Option<Arc<V>> {
        let mut g = self.inner.lock();
        g.tick += 1;
        let tick = g.tick;
        match g.map.get_mut(key) {
            Some(e) => {
                e.2 = tick;
                self.hits.fetch_add(1, Ordering::Relaxed);
                Some(e.0.clone())
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Inserts `value` with `charge` bytes, evicting least recently used entries as needed.
    pub fn insert(&self, key: K, value: Arc<V>, charge: usize) {
        let mut g = self.inner.lock();
        g.tick += 1;
        let tick = g.tick;
        if let Some(old) = g.map.insert(key, (value, charge, tick)) {
            g.usage -= old.1;
        }
        g.usage += charge;
        while g.usage > self.capacity && !g.map.is_empty() {
            let victim = g.map.iter().min_by_key(|(_, e)| e.2).map(|(k, _)| k.clone());
            if let Some(v) = victim {
                if let Some(e) = g.map.remove(&v) {
                    g.usage -= e.1;
                }
            }
        }
    }

    /// Removes `key` if present.
    pub fn erase(&self, key: &K) {
        let mut g = self.inner.lock();
        if let Some(e) = g.map.remove(key) {
            g.usage -= e.1;
        }
    }

    /// Total charge of the entries held.
    pub fn usage(&self) -> usize {
        self.inner.lock().usage
    }

    /// The byte capacity.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Lookups that found their key.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Lookups that did not.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }
}
