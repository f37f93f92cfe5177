//! [`AnyCache`]: one of the two cache implementations, chosen at run time, behind one
//! interface (what the block cache, `Cache`, and `cache_bench` use).

use std::hash::Hash;
use std::ops::Deref;
use std::sync::Arc;

use super::clock::ClockHandle;
use super::options::{CacheType, HyperClockCacheOptions, LruCacheOptions};
use super::{default_shard_bits, ClockCache, LruCache, Priority};
use crate::error::{Error, Result};

/// At most 2^6 shards, for either implementation.
pub(crate) const MAX_SHARD_BITS: i32 = 6;

/// An LRU or a clock cache.
pub enum AnyCache<K, V> {
    /// The sharded LRU.
    Lru(LruCache<K, V>),
    /// The lock-free clock cache (boxed: its striped counters make it large).
    Clock(Box<ClockCache<K, V>>),
}

fn shard_bits(capacity: usize, requested: i32) -> Result<u32> {
    match requested {
        -1 => Ok(default_shard_bits(capacity)),
        0..=MAX_SHARD_BITS => Ok(requested as u32),
        _ => Err(Error::InvalidArgument(format!(
            "num_shard_bits = {requested}: must be -1 (automatic) or 0..={MAX_SHARD_BITS}"
        ))),
    }
}

impl<K: Hash + Eq + Clone + Send + Sync, V: Send + Sync> AnyCache<K, V> {
    /// An LRU cache.
    pub fn lru(o: &LruCacheOptions) -> Result<Self> {
        if !(0.0..=1.0).contains(&o.high_pri_pool_ratio) {
            return Err(Error::InvalidArgument(format!(
                "high_pri_pool_ratio = {}: must be within [0, 1]",
                o.high_pri_pool_ratio
            )));
        }
        let bits = shard_bits(o.capacity, o.num_shard_bits)?;
        Ok(AnyCache::Lru(LruCache::with_options(
            o.capacity,
            bits,
            o.high_pri_pool_ratio,
            o.strict_capacity_limit,
        )))
    }

    /// A clock cache. Its tables have a fixed size, computed from `estimated_entry_charge`,
    /// or grow as entries are inserted when it is 0 (RocksDB's `auto_hyper_clock_cache`).
    pub fn hyper_clock(o: &HyperClockCacheOptions) -> Result<Self> {
        let bits = shard_bits(o.capacity, o.num_shard_bits)?;
        Ok(AnyCache::Clock(Box::new(ClockCache::new(
            o.capacity,
            o.estimated_entry_charge,
            bits,
            o.strict_capacity_limit,
        ))))
    }

    /// Bytes of the cache's own structures, beside the charge of what it holds.
    pub fn structure_bytes(&self) -> usize {
        match self {
            AnyCache::Lru(c) => c.structure_bytes(),
            AnyCache::Clock(c) => c.structure_bytes(),
        }
    }

    /// Which implementation this is.
    pub fn cache_type(&self) -> CacheType {
        match self {
            AnyCache::Lru(_) => CacheType::Lru,
            AnyCache::Clock(_) => CacheType::HyperClock,
        }
    }

    /// The value for `key`.
    #[inline]
    pub fn lookup(&self, key: &K) -> Option<Arc<V>> {
        match self {
            AnyCache::Lru(c) => c.lookup(key),
            AnyCache::Clock(c) => c.lookup(key),
        }
    }

    /// A handle on the value for `key`, each implementation's cheapest: the clock cache's
    /// keeps the entry in its slot ([`ClockHandle`]), the LRU cache's is a clone of the `Arc`.
    #[inline]
    pub fn lookup_handle(&self, key: &K) -> Option<CacheHandle<'_, K, V>> {
        match self {
            AnyCache::Lru(c) => c.lookup(key).map(CacheHandle::Shared),
            AnyCache::Clock(c) => c.lookup_handle(key).map(CacheHandle::Clock),
        }
    }

    /// Inserts or replaces `key` with `charge` bytes at `priority`.
    #[inline]
    pub fn insert(&self, key: K, value: Arc<V>, charge: usize, priority: Priority) {
        match self {
            AnyCache::Lru(c) => c.insert_with_priority(key, value, charge, priority),
            AnyCache::Clock(c) => {
                c.insert(key, value, charge, priority);
            }
        }
    }

    /// Whether inserting `charge` bytes under `key` now would evict another entry (a hint:
    /// other threads may change it at any time).
    #[inline]
    pub fn would_evict(&self, key: &K, charge: usize) -> bool {
        match self {
            AnyCache::Lru(c) => c.would_evict(key, charge),
            AnyCache::Clock(c) => c.would_evict(key, charge),
        }
    }

    /// Removes `key` if present.
    #[inline]
    pub fn erase(&self, key: &K) {
        match self {
            AnyCache::Lru(c) => c.erase(key),
            AnyCache::Clock(c) => c.erase(key),
        }
    }

    /// Holds `charge` bytes of shard `shard % num_shards()` without an entry, evicting
    /// entries to make room; the reservation is never evicted and counts in [`Self::usage`]
    /// until [`Self::release`]d. Returns false, holding nothing, when a strict clock cache
    /// cannot make room (the LRU cache always can: its entries are never pinned).
    pub fn reserve(&self, shard: usize, charge: usize) -> bool {
        match self {
            AnyCache::Lru(c) => {
                c.reserve(shard, charge);
                true
            }
            AnyCache::Clock(c) => c.reserve(shard, charge),
        }
    }

    /// Gives back a reservation that [`Self::reserve`] granted with the same arguments.
    pub fn release(&self, shard: usize, charge: usize) {
        match self {
            AnyCache::Lru(c) => c.release(shard, charge),
            AnyCache::Clock(c) => c.release(shard, charge),
        }
    }

    /// Charge held (entries and reservations).
    pub fn usage(&self) -> usize {
        match self {
            AnyCache::Lru(c) => c.usage(),
            AnyCache::Clock(c) => c.usage(),
        }
    }

    /// Byte capacity.
    pub fn capacity(&self) -> usize {
        match self {
            AnyCache::Lru(c) => c.capacity(),
            AnyCache::Clock(c) => c.capacity(),
        }
    }

    /// Sets the byte capacity, evicting to fit.
    pub fn set_capacity(&self, capacity: usize) {
        match self {
            AnyCache::Lru(c) => c.set_capacity(capacity),
            AnyCache::Clock(c) => c.set_capacity(capacity),
        }
    }

    /// Charge of the entries readers hold.
    pub fn pinned_usage(&self) -> usize {
        match self {
            AnyCache::Lru(c) => c.pinned_usage(),
            AnyCache::Clock(c) => c.pinned_usage(),
        }
    }

    /// Lookup hits.
    pub fn hits(&self) -> u64 {
        match self {
            AnyCache::Lru(c) => c.hits(),
            AnyCache::Clock(c) => c.hits(),
        }
    }

    /// Lookup misses.
    pub fn misses(&self) -> u64 {
        match self {
            AnyCache::Lru(c) => c.misses(),
            AnyCache::Clock(c) => c.misses(),
        }
    }

    /// Entries held.
    pub fn occupancy(&self) -> usize {
        match self {
            AnyCache::Lru(c) => c.entries(),
            AnyCache::Clock(c) => c.occupancy(),
        }
    }

    /// Slots of the clock cache's tables (None for the LRU cache, whose tables grow).
    pub fn table_slots(&self) -> Option<usize> {
        match self {
            AnyCache::Lru(_) => None,
            AnyCache::Clock(c) => Some(c.table_slots()),
        }
    }

    /// Slots of the clock cache's live tables, drained generations of a growing table left
    /// out ([`ClockCache::live_table_slots`]; None for the LRU cache).
    pub fn live_table_slots(&self) -> Option<usize> {
        match self {
            AnyCache::Lru(_) => None,
            AnyCache::Clock(c) => Some(c.live_table_slots()),
        }
    }

    /// Number of shards.
    pub fn num_shards(&self) -> usize {
        match self {
            AnyCache::Lru(c) => c.shard_count(),
            AnyCache::Clock(c) => c.num_shards(),
        }
    }
}

/// A looked-up value ([`AnyCache::lookup_handle`]), or a value the caller holds itself.
pub enum CacheHandle<'a, K: Eq + Clone, V> {
    /// A shared value (the LRU cache's handle, or one the caller made).
    Shared(Arc<V>),
    /// A clock cache entry held in its slot.
    Clock(ClockHandle<'a, K, V>),
}

impl<K: Eq + Clone, V> Deref for CacheHandle<'_, K, V> {
    type Target = V;

    #[inline]
    fn deref(&self) -> &V {
        match self {
            CacheHandle::Shared(v) => v,
            CacheHandle::Clock(h) => h,
        }
    }
}
