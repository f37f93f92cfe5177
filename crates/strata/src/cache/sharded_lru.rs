//! [`LruCache`]: a sharded strict LRU bounded by the sum of its entries' charges (bytes).
//! - The key is hashed once (`hash.rs`); the hash's top bits pick a shard, its low bits place
//!   the entry in that shard's table (`lru.rs`).
//! - Each shard is a `parking_lot::Mutex` over an LRU list and hash table whose operations are
//!   O(1) and allocation-free on a lookup hit; shards are cache-line aligned so that threads
//!   working on different shards do not share lines.
//! - The shard count is a power of two chosen from the capacity: one shard per 512 KiB, at most
//!   64; caches under 1 MiB have one shard. Each shard gets an equal part of the capacity (the
//!   parts add up to exactly `capacity`), so one shard can evict while another has room; with
//!   a good hash and many small entries this costs little and removes the global lock.
//! - Values are `Arc<V>`: a reader keeps an evicted or erased value alive for as long as it
//!   holds it. Such values no longer count against the capacity.
//! - An entry whose charge exceeds its shard's capacity is not cached (and an older entry for the
//!   same key is dropped, so no stale value remains); `insert` still takes ownership.
//! - Replaced, erased and evicted entries are dropped after the shard lock is released.
//! - Hit and miss counters are relaxed atomics next to each shard's lock (a line the operation
//!   touches anyway), summed when read.
//! - Zero-charge entries never cause eviction; the cache does not bound their number.

use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::hash::MixBuildHasher;
use super::lru::{LruShard, Removed};
use super::Priority;

/// Each shard holds at least this much capacity (when there is more than one).
const MIN_SHARD_CAPACITY: usize = 512 * 1024;
/// At most 2^6 = 64 shards.
const MAX_SHARD_BITS: u32 = 6;

/// One shard: its lock, and counters kept on the same (otherwise private) cache lines.
#[repr(align(128))]
struct Shard<K, V> {
    lru: Mutex<LruShard<K, V>>,
    /// Mirror of the shard's usage, stored under the lock, read without it.
    usage: AtomicUsize,
    /// The shard's part of the capacity (written under the lock, read without it).
    capacity: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// A byte-bounded cache of shared values. Lookups take `&self` and may run concurrently.
pub struct LruCache<K, V> {
    capacity: AtomicUsize,
    /// The share of each shard's capacity its high-priority pool holds.
    high_pri_pool_ratio: f64,
    /// `64 - log2(shard count)`; shift of the hash that yields the shard index.
    shard_shift: u32,
    shards: Box<[Shard<K, V>]>,
    hasher: MixBuildHasher,
}

impl<K: Hash + Eq + Send, V: Send + Sync> LruCache<K, V> {
    /// A cache holding at most `capacity` bytes of charge.
    pub fn new(capacity: usize) -> Self {
        Self::with_shard_bits(capacity, default_shard_bits(capacity))
    }

    /// A cache with 2^`shard_bits` shards (at most 64).
    pub(crate) fn with_shard_bits(capacity: usize, shard_bits: u32) -> Self {
        Self::with_options(capacity, shard_bits, 0.0, false)
    }

    /// A cache with 2^`shard_bits` shards, each with a high-priority pool of
    /// `high_pri_pool_ratio` of its capacity (`lru.rs`). `strict` is accepted for RocksDB
    /// parity: values are never pinned in the LRU, so an insert always fits after eviction.
    pub(crate) fn with_options(
        capacity: usize,
        shard_bits: u32,
        high_pri_pool_ratio: f64,
        strict: bool,
    ) -> Self {
        let _ = strict;
        let shard_bits = shard_bits.min(MAX_SHARD_BITS);
        let n = 1usize << shard_bits;
        let shards = (0..n)
            .map(|i| shard_part(capacity, n, i))
            .map(|cap| Shard {
                lru: Mutex::new(LruShard::with_pool(
                    cap,
                    (cap as f64 * high_pri_pool_ratio) as usize,
                )),
                usage: AtomicUsize::new(0),
                capacity: AtomicUsize::new(cap),
                hits: AtomicU64::new(0),
                misses: AtomicU64::new(0),
            })
            .collect();
        LruCache {
            capacity: AtomicUsize::new(capacity),
            high_pri_pool_ratio,
            shard_shift: 64 - shard_bits,
            shards,
            hasher: MixBuildHasher::default(),
        }
    }

    /// The key's hash and its shard.
    #[inline]
    fn locate(&self, key: &K) -> (u64, &Shard<K, V>) {
        let h = self.hasher.hash_one(key);
        // `checked_shr` handles the single-shard case (shift by 64 yields 0).
        let i = h.checked_shr(self.shard_shift).unwrap_or(0) as usize;
        (h, &self.shards[i])
    }

    /// The value for `key`, marking it recently used.
    pub fn lookup(&self, key: &K) -> Option<Arc<V>> {
        let (h, shard) = self.locate(key);
        let found = shard.lru.lock().lookup(h, key);
        let counter = if found.is_some() { &shard.hits } else { &shard.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Inserts `value` with `charge` bytes, replacing any entry for `key` and evicting least
    /// recently used entries of the key's shard as needed. See the module doc for entries larger
    /// than a shard.
    pub fn insert(&self, key: K, value: Arc<V>, charge: usize) {
        self.insert_with_priority(key, value, charge, Priority::Low);
    }

    /// [`LruCache::insert`] with a priority: with a high-priority pool (`lru.rs`), high-priority
    /// entries and entries hit before are kept in the pool at the MRU end, and the others enter
    /// below it, so they are evicted first.
    pub fn insert_with_priority(&self, key: K, value: Arc<V>, charge: usize, priority: Priority) {
        let (h, shard) = self.locate(&key);
        let mut removed: Removed<K, V> = Vec::new();
        {
            let mut lru = shard.lru.lock();
            lru.insert(h, key, value, charge, priority, &mut removed);
            shard.usage.store(lru.usage(), Ordering::Relaxed);
        }
        drop(removed);
    }

    /// Whether inserting `charge` bytes under `key` now would evict (its shard is full); read
    /// without the lock, so only a hint.
    pub fn would_evict(&self, key: &K, charge: usize) -> bool {
        let (_, shard) = self.locate(key);
        shard.usage.load(Ordering::Relaxed) + charge > shard.capacity.load(Ordering::Relaxed)
    }

    /// Gives the cache `capacity` bytes (the shard count stays), each shard evicting its least
    /// recently used entries until it fits its new part (RocksDB's `Cache::SetCapacity`).
    pub fn set_capacity(&self, capacity: usize) {
        self.capacity.store(capacity, Ordering::Relaxed);
        let n = self.shards.len();
        for (i, shard) in self.shards.iter().enumerate() {
            let cap = shard_part(capacity, n, i);
            let mut removed: Removed<K, V> = Vec::new();
            {
                let mut lru = shard.lru.lock();
                lru.set_capacity(
                    cap,
                    (cap as f64 * self.high_pri_pool_ratio) as usize,
                    &mut removed,
                );
                shard.capacity.store(cap, Ordering::Relaxed);
                shard.usage.store(lru.usage(), Ordering::Relaxed);
            }
            drop(removed);
        }
    }

    /// The charge of the entries a reader holds (RocksDB's `Cache::GetPinnedUsage`): each
    /// shard is counted under its lock in turn.
    pub fn pinned_usage(&self) -> usize {
        self.shards.iter().map(|s| s.lru.lock().pinned_usage()).sum()
    }

    /// Removes `key` if present.
    pub fn erase(&self, key: &K) {
        let (h, shard) = self.locate(key);
        let removed = {
            let mut lru = shard.lru.lock();
            let r = lru.erase(h, key);
            shard.usage.store(lru.usage(), Ordering::Relaxed);
            r
        };
        drop(removed);
    }

    /// Holds `charge` bytes of shard `shard % shard count` without an entry, evicting that
    /// shard's entries to make room (`LruShard::reserve`). Always succeeds: entries are never
    /// pinned, so eviction can always make room for the reservation.
    pub fn reserve(&self, shard: usize, charge: usize) {
        let shard = &self.shards[shard % self.shards.len()];
        let mut removed: Removed<K, V> = Vec::new();
        {
            let mut lru = shard.lru.lock();
            lru.reserve(charge, &mut removed);
            shard.usage.store(lru.usage(), Ordering::Relaxed);
        }
        drop(removed);
    }

    /// Gives back a reservation made with the same `shard` and `charge`.
    pub fn release(&self, shard: usize, charge: usize) {
        let shard = &self.shards[shard % self.shards.len()];
        let mut lru = shard.lru.lock();
        lru.release(charge);
        shard.usage.store(lru.usage(), Ordering::Relaxed);
    }

    /// Total charge of the entries held and of the reservations (a sum of per-shard snapshots:
    /// exact when quiescent).
    pub fn usage(&self) -> usize {
        self.shards.iter().map(|s| s.usage.load(Ordering::Relaxed)).sum()
    }

    /// The byte capacity.
    pub fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Relaxed)
    }

    /// Lookups that found their key.
    pub fn hits(&self) -> u64 {
        self.shards.iter().map(|s| s.hits.load(Ordering::Relaxed)).sum()
    }

    /// Lookups that did not.
    pub fn misses(&self) -> u64 {
        self.shards.iter().map(|s| s.misses.load(Ordering::Relaxed)).sum()
    }

    /// Bytes of the cache's own structures (shards, hash tables, entry slabs), beside the
    /// charge of what it holds (locks each shard in turn).
    pub fn structure_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.shards)
            + self.shards.iter().map(|s| s.lru.lock().structure_bytes()).sum::<usize>()
    }

    /// Entries held (locks each shard in turn).
    pub fn entries(&self) -> usize {
        self.shards.iter().map(|s| s.lru.lock().len()).sum()
    }

    /// Number of shards.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    #[cfg(test)]
    /// Number of shards.
    pub(crate) fn num_shards(&self) -> usize {
        self.shards.len()
    }

    #[cfg(test)]
    /// Number of entries held.
    pub(crate) fn len(&self) -> usize {
        self.entries()
    }

    /// Checks every shard's invariants (tests).
    #[cfg(test)]
    fn check(&self) {
        for s in &self.shards {
            let lru = s.lru.lock();
            lru.check();
            assert_eq!(s.usage.load(Ordering::Relaxed), lru.usage());
        }
    }
}

/// Shard `i`'s part of `capacity` over `n` shards: equal parts adding up to `capacity`.
fn shard_part(capacity: usize, n: usize, i: usize) -> usize {
    capacity / n + usize::from(i < capacity % n)
}

/// log2 of the default shard count for `capacity` (module doc).
pub(crate) fn default_shard_bits(capacity: usize) -> u32 {
    let n = capacity / MIN_SHARD_CAPACITY;
    if n < 2 {
        0
    } else {
        n.ilog2().min(MAX_SHARD_BITS)
    }
}

#[cfg(test)]
mod tests;
