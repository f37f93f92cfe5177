//! The caches cache_bench drives, behind one trait ([`BenchCache`]) so that the measured loop
//! (`workload.rs`) is the same code for each, monomorphized: Strata's caches ([`AnyCache`])
//! and, with the `rocksdb` feature, RocksDB's (`rocks_cache.rs`).
//!
//! Contract every implementation keeps: keys are 16 bytes, values are `Arc<Value>` the cache
//! holds one reference to while the entry lives, a handle keeps its value alive until dropped,
//! and inserts never block on a full cache (no strict capacity limit).

use std::ops::Deref;
use std::sync::Arc;

use anyhow::{bail, Result};
use strata::cache::{AnyCache, CacheHandle};
use strata::{CachePriority, HyperClockCacheOptions, LruCacheOptions};

use super::CacheBenchFlags;

/// RocksDB's cache keys are 16 bytes.
pub(super) type Key = [u64; 2];
/// A value: `-value_bytes` random bytes.
pub(super) type Value = Vec<u8>;

/// What the loop needs of a cache.
pub(super) trait BenchCache: Sync {
    /// A looked-up entry, held until dropped.
    type Handle<'a>: Deref<Target = Value>
    where
        Self: 'a;

    /// The entry for `key`, held.
    fn lookup(&self, key: &Key) -> Option<Self::Handle<'_>>;
    /// Inserts (or replaces) `key` at low priority, charged `charge` bytes.
    fn insert(&self, key: Key, value: Arc<Value>, charge: usize);
    /// Removes `key` if present.
    fn erase(&self, key: &Key);
    /// Entries held.
    fn occupancy(&self) -> usize;
    /// Charge held.
    fn usage(&self) -> usize;
    /// Byte capacity.
    fn capacity(&self) -> usize;
    /// Slots of the hash tables that hold or may receive entries, when the implementation
    /// reports them (the load factor's denominator).
    fn table_slots(&self) -> Option<usize>;
    /// log2 of the shard count.
    fn num_shard_bits(&self) -> u32;
    /// The report's `Cache impl name`.
    fn impl_name(&self) -> String;
    /// The report's version line (`<library> version : <version>`).
    fn version_line(&self) -> String;
}

/// Strata's caches, with the flags' cache type.
pub(super) struct StrataCache {
    cache: AnyCache<Key, Value>,
    name: String,
}

impl StrataCache {
    pub(super) fn new(f: &CacheBenchFlags) -> Result<Self> {
        let capacity = usize::try_from(f.cache_size)?;
        let kind = CacheKind::parse(&f.cache_type)?;
        let cache = match kind {
            CacheKind::Lru => AnyCache::lru(&LruCacheOptions {
                capacity,
                num_shard_bits: f.num_shard_bits,
                strict_capacity_limit: false,
                high_pri_pool_ratio: HIGH_PRI_POOL_RATIO,
                ..LruCacheOptions::new(capacity)
            })?,
            CacheKind::FixedClock | CacheKind::AutoClock => {
                let mut o = HyperClockCacheOptions::new(capacity, kind.estimated_entry_charge(f));
                o.num_shard_bits = f.num_shard_bits;
                AnyCache::hyper_clock(&o)?
            }
        };
        let name = match kind {
            CacheKind::Lru => "strata::LruCache".to_string(),
            _ => format!("strata::ClockCache{}", kind.table_note()),
        };
        Ok(StrataCache { cache, name })
    }
}

/// The LRU caches' high-priority pool ratio (RocksDB's tool sets 0.5).
pub(super) const HIGH_PRI_POOL_RATIO: f64 = 0.5;

/// The cache a `-cache_type` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CacheKind {
    Lru,
    /// A clock cache whose tables are sized for `-value_bytes_estimate` (or `-value_bytes`).
    FixedClock,
    /// A clock cache whose tables grow (no estimate).
    AutoClock,
}

impl CacheKind {
    /// `-cache_type`: `lru_cache`, or a clock cache whose table is fixed
    /// (`fixed_hyper_clock_cache`) or grows (`auto_hyper_clock_cache`, and a bare
    /// `hyper_clock_cache`, as RocksDB 11's own cache_bench and db_bench read it). The same for
    /// both engines.
    pub(super) fn parse(cache_type: &str) -> Result<Self> {
        Ok(match cache_type {
            "lru_cache" => CacheKind::Lru,
            "fixed_hyper_clock_cache" => CacheKind::FixedClock,
            "hyper_clock_cache" | "auto_hyper_clock_cache" => CacheKind::AutoClock,
            "clock_cache" => bail!("Old clock cache implementation has been removed."),
            _ => bail!("Cache type not supported."),
        })
    }

    /// The clock cache's estimated entry charge: `-value_bytes_estimate`, or `-value_bytes`
    /// when that is 0, for a fixed table; 0 (grow) otherwise.
    pub(super) fn estimated_entry_charge(self, f: &CacheBenchFlags) -> usize {
        match self {
            CacheKind::FixedClock if f.value_bytes_estimate > 0 => f.value_bytes_estimate as usize,
            CacheKind::FixedClock => f.value_bytes as usize,
            CacheKind::Lru | CacheKind::AutoClock => 0,
        }
    }

    /// The report's suffix for a clock cache's table.
    pub(super) fn table_note(self) -> &'static str {
        match self {
            CacheKind::Lru => "",
            CacheKind::FixedClock => " (fixed table)",
            CacheKind::AutoClock => " (growing table)",
        }
    }
}

impl BenchCache for StrataCache {
    type Handle<'a> = CacheHandle<'a, Key, Value>;

    #[inline]
    fn lookup(&self, key: &Key) -> Option<Self::Handle<'_>> {
        self.cache.lookup_handle(key)
    }

    #[inline]
    fn insert(&self, key: Key, value: Arc<Value>, charge: usize) {
        self.cache.insert(key, value, charge, CachePriority::Low);
    }

    #[inline]
    fn erase(&self, key: &Key) {
        self.cache.erase(key);
    }

    fn occupancy(&self) -> usize {
        self.cache.occupancy()
    }

    fn usage(&self) -> usize {
        self.cache.usage()
    }

    fn capacity(&self) -> usize {
        self.cache.capacity()
    }

    fn table_slots(&self) -> Option<usize> {
        // The live tables: a growing table's drained generations hold nothing.
        self.cache.live_table_slots()
    }

    fn num_shard_bits(&self) -> u32 {
        self.cache.num_shards().trailing_zeros()
    }

    fn impl_name(&self) -> String {
        self.name.clone()
    }

    fn version_line(&self) -> String {
        format!("Strata version      : {}", env!("CARGO_PKG_VERSION"))
    }
}
