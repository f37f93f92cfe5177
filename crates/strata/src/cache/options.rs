//! The options of the two cache implementations, as RocksDB names them, and the block cache's
//! admission policy (ours: `admission.rs`).

use super::admission::Admission;

/// The cache implementations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheType {
    /// Sharded LRU (`Cache::new_lru`).
    Lru,
    /// Lock-free clock cache (`Cache::new_hyper_clock`).
    HyperClock,
}

/// Options of an LRU cache.
#[derive(Clone, Debug)]
pub struct LruCacheOptions {
    /// Bytes of charge held at most.
    pub capacity: usize,
    /// log2 of the shard count; -1 (default) picks one shard per 512 KiB, at most 64.
    pub num_shard_bits: i32,
    /// Refuse an insert that does not fit rather than exceed the capacity. Values are shared
    /// (`Arc`), never pinned in the LRU, so eviction always makes room and both settings behave
    /// the same; kept for RocksDB option parity. Default false.
    pub strict_capacity_limit: bool,
    /// Share of each shard's capacity reserved for high-priority entries and entries hit
    /// before; others enter below that pool and leave first. 0 (default) is plain LRU.
    pub high_pri_pool_ratio: f64,
    /// Which blocks read on a miss the block cache takes in once full (`Admission`; default
    /// `SecondMiss`). Only the block cache (`strata::Cache`) applies it.
    pub admission: Admission,
}

impl LruCacheOptions {
    /// Defaults with `capacity`.
    pub fn new(capacity: usize) -> Self {
        LruCacheOptions {
            capacity,
            num_shard_bits: -1,
            strict_capacity_limit: false,
            high_pri_pool_ratio: 0.0,
            admission: Admission::default(),
        }
    }
}

/// Options of a clock cache.
#[derive(Clone, Debug)]
pub struct HyperClockCacheOptions {
    /// Bytes of charge held at most.
    pub capacity: usize,
    /// The typical entry's charge (for the block cache, about the block size): sizes the
    /// fixed tables. Entries much smaller than this leave capacity unused (the slot budget
    /// evicts first); much larger ones leave slots unused. 0 asks for tables that start small
    /// and grow as entries are inserted (RocksDB's `auto_hyper_clock_cache`), so that no
    /// estimate is needed.
    pub estimated_entry_charge: usize,
    /// log2 of the shard count; -1 (default) as for the LRU cache.
    pub num_shard_bits: i32,
    /// Refuse an insert that does not fit after evicting every unreferenced entry, rather than
    /// exceed the capacity. Default false.
    pub strict_capacity_limit: bool,
    /// As [`LruCacheOptions::admission`].
    pub admission: Admission,
}

impl HyperClockCacheOptions {
    /// Defaults with `capacity` and `estimated_entry_charge`.
    pub fn new(capacity: usize, estimated_entry_charge: usize) -> Self {
        HyperClockCacheOptions {
            capacity,
            estimated_entry_charge,
            num_shard_bits: -1,
            strict_capacity_limit: false,
            admission: Admission::default(),
        }
    }
}
