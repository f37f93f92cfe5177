//! [`Cache`]: the block cache as a shareable handle. Clones share one cache, so one memory
//! budget bounds the blocks of every `Db` given a clone (`Options::block_cache`). Blocks are
//! keyed by a process-unique owner per open table cache ([`CacheKey::new_owner`]), so DBs
//! sharing a cache never see each other's blocks.

use std::sync::Arc;

use super::Block;
use crate::cache::{
    AnyCache, CacheKey, CacheType, HyperClockCacheOptions, LruCache, LruCacheOptions, Priority,
};
use crate::error::Result;

/// A block cache shared by every `Db` (and every clone) holding it.
#[derive(Clone)]
pub struct Cache {
    inner: Arc<AnyCache<CacheKey, Block>>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("type", &self.cache_type())
            .field("capacity", &self.capacity())
            .field("usage", &self.usage())
            .finish()
    }
}

impl Cache {
    /// An LRU cache of `capacity` bytes with default options.
    pub fn new_lru(capacity: usize) -> Cache {
        Cache { inner: Arc::new(AnyCache::Lru(LruCache::new(capacity))) }
    }

    /// An LRU cache; `InvalidArgument` for a bad ratio or shard count.
    pub fn new_lru_opts(opts: &LruCacheOptions) -> Result<Cache> {
        Ok(Cache { inner: Arc::new(AnyCache::lru(opts)?) })
    }

    /// A clock cache of `capacity` bytes whose tables are sized for entries of about
    /// `estimated_entry_charge` bytes, or, for 0, grow as entries are inserted (RocksDB's
    /// `auto_hyper_clock_cache`).
    pub fn new_hyper_clock(capacity: usize, estimated_entry_charge: usize) -> Result<Cache> {
        Self::new_hyper_clock_opts(&HyperClockCacheOptions::new(capacity, estimated_entry_charge))
    }

    /// A clock cache with options.
    pub fn new_hyper_clock_opts(opts: &HyperClockCacheOptions) -> Result<Cache> {
        Ok(Cache { inner: Arc::new(AnyCache::hyper_clock(opts)?) })
    }

    /// The implementation.
    pub fn cache_type(&self) -> CacheType {
        self.inner.cache_type()
    }

    /// Bytes of charge held (exact when no operation runs).
    pub fn usage(&self) -> usize {
        self.inner.usage()
    }

    /// The byte capacity.
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// The largest charge one entry can have and be kept (a shard's capacity).
    pub(crate) fn max_entry_charge(&self) -> usize {
        self.inner.capacity() / self.inner.num_shards().max(1)
    }

    /// Lookups that hit, over every user.
    pub fn hits(&self) -> u64 {
        self.inner.hits()
    }

    /// Lookups that missed.
    pub fn misses(&self) -> u64 {
        self.inner.misses()
    }

    /// Whether two handles share one cache.
    pub fn ptr_eq(a: &Cache, b: &Cache) -> bool {
        Arc::ptr_eq(&a.inner, &b.inner)
    }

    /// Shards (reservations are spread over them).
    pub(crate) fn num_shards(&self) -> usize {
        self.inner.num_shards()
    }

    /// Holds `charge` bytes of shard `shard` without a block (`AnyCache::reserve`).
    pub(crate) fn reserve(&self, shard: usize, charge: usize) -> bool {
        self.inner.reserve(shard, charge)
    }

    /// Gives back a reservation (`AnyCache::release`).
    pub(crate) fn release(&self, shard: usize, charge: usize) {
        self.inner.release(shard, charge);
    }

    #[inline]
    pub(crate) fn lookup(&self, key: &CacheKey) -> Option<Arc<Block>> {
        self.inner.lookup(key)
    }

    #[inline]
    pub(crate) fn insert(&self, key: CacheKey, block: Arc<Block>, charge: usize, p: Priority) {
        self.inner.insert(key, block, charge, p);
    }

    /// Removes the block under `key`, if cached (a holder of it keeps its copy).
    pub(crate) fn erase(&self, key: &CacheKey) {
        self.inner.erase(key);
    }
}

/// A block cache as one table cache uses it: the shared cache and this user's owner id.
#[derive(Clone, Debug)]
pub(crate) struct CacheAccess {
    pub cache: Cache,
    pub owner: u64,
}

impl CacheAccess {
    /// Access to `cache` under a fresh owner id.
    pub(crate) fn new(cache: Cache) -> Self {
        CacheAccess { cache, owner: CacheKey::new_owner() }
    }
}
