//! The `rocksdb` crate's names of the cache and write-buffer-manager constructors.

use std::sync::Arc;

use crate::cache::LruCacheOptions;
use crate::memtable::WriteBufferManager;
use crate::sstable::Cache;

impl Cache {
    /// An LRU cache with `opts` (as [`Cache::new_lru_opts`]). Options the cache refuses
    /// (a high-priority ratio outside [0, 1]) give a plain LRU cache of the same capacity,
    /// since this constructor cannot fail in the `rocksdb` crate; `Cache::new_lru_opts`
    /// reports them instead.
    pub fn new_lru_cache_opts(opts: &LruCacheOptions) -> Cache {
        Cache::new_lru_opts(opts).unwrap_or_else(|_| Cache::new_lru(opts.capacity))
    }

    /// A clock cache of `capacity` bytes sized for entries of `estimated_entry_charge` bytes
    /// (0: tables that grow), as [`Cache::new_hyper_clock`]; should that refuse the
    /// arguments, an LRU cache of `capacity` bytes (this constructor cannot fail in the
    /// `rocksdb` crate).
    pub fn new_hyper_clock_cache(capacity: usize, estimated_entry_charge: usize) -> Cache {
        Cache::new_hyper_clock(capacity, estimated_entry_charge)
            .unwrap_or_else(|_| Cache::new_lru(capacity))
    }
}

impl Default for LruCacheOptions {
    /// RocksDB's defaults: capacity 0 (set it), automatic shards, plain LRU.
    fn default() -> Self {
        LruCacheOptions::new(0)
    }
}

impl LruCacheOptions {
    /// `capacity`.
    pub fn set_capacity(&mut self, cap: usize) {
        self.capacity = cap;
    }

    /// `num_shard_bits`: -1 automatic, else clamped to the largest shard count supported.
    pub fn set_num_shard_bits(&mut self, val: i32) {
        self.num_shard_bits = val.clamp(-1, crate::cache::MAX_SHARD_BITS);
    }
}

impl WriteBufferManager {
    /// A budget of `buffer_size` bytes for the memtables of every DB given it, writes
    /// stalling while it is full when `allow_stall` (the `rocksdb` crate's constructor).
    pub fn new_write_buffer_manager(buffer_size: usize, allow_stall: bool) -> Arc<Self> {
        Arc::new(WriteBufferManager::new(buffer_size, None, allow_stall))
    }

    /// The same, its memory charged to `cache`.
    pub fn new_write_buffer_manager_with_cache(
        buffer_size: usize,
        allow_stall: bool,
        cache: Cache,
    ) -> Arc<Self> {
        Arc::new(WriteBufferManager::new(buffer_size, Some(cache), allow_stall))
    }

    /// Bytes the memtables hold (`memory_usage`).
    pub fn get_usage(&self) -> usize {
        self.memory_usage()
    }

    /// The budget (`buffer_size`).
    pub fn get_buffer_size(&self) -> usize {
        self.buffer_size()
    }
}
