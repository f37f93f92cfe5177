//! Caches: the block cache (uncompressed blocks by owner, file and offset), the row cache
//! (what a point read found for a key in a table, `row_cache.rs`) and the table cache.
//!
//! Two implementations behind one interface ([`AnyCache`]):
//! - [`LruCache`] (`sharded_lru.rs`, `lru.rs`): sharded strict LRU, a mutex per shard, with an
//!   optional high-priority pool.
//! - [`ClockCache`] (`clock/`): lock-free clock cache of the HyperClock family; a hit takes no
//!   lock and writes one slot word.
//!
//! [`BlockCache`] (`block_cache.rs`) is the shareable handle users create and give to any
//! number of `Db`s, with second-miss admission; `strata::Cache` is it over the table
//! format's blocks (`sstable/cache_access.rs` names the block type, from above).
//! Index and filter blocks are loaded with the table and kept in its reader (not in the cache);
//! [`Priority::High`] is for them when they are cached, and is honoured by both
//! implementations.

mod admission;
mod any;
mod block_cache;
pub mod clock;
mod hash;
mod lru;
mod options;
mod row_cache;
mod sharded_lru;
mod striped;

pub use admission::Admission;
pub(crate) use admission::{block_hash, Doorkeeper};
pub(crate) use any::MAX_SHARD_BITS;
pub use any::{AnyCache, CacheHandle};
pub use block_cache::{BlockCache, CachedBlock};
pub use clock::{ClockCache, ClockHandle};
pub use hash::{MixBuildHasher, MixHasher};
pub use options::{CacheType, HyperClockCacheOptions, LruCacheOptions};
pub use row_cache::{Probe, Row, RowCache};
pub(crate) use sharded_lru::default_shard_bits;
pub use sharded_lru::LruCache;

/// Identifies a cached block: the table cache that owns the table (process-unique), the
/// table's file number, and the block's offset in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CacheKey {
    /// The owning table cache (one per open DB): `CacheKey::new_owner`.
    pub owner: u64,
    /// The table file number.
    pub file: u64,
    /// The block's offset in the file.
    pub offset: u64,
}

impl CacheKey {
    /// A process-unique owner id, so that DBs sharing one cache never collide.
    pub fn new_owner() -> u64 {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }
}

/// How long an entry deserves to stay: index and filter blocks are `High`, data blocks `Low`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Priority {
    /// Kept longer (index and filter blocks).
    High,
    /// The default (data blocks).
    #[default]
    Low,
}
