//! The `rocksdb` crate's setters of memtables, caches, write threads and blob files.

use crate::options::table_factories::MemtableFactory;
use crate::options::Options;
use crate::sstable::Cache;

impl Options {
    /// Settings for point lookups, as RocksDB's `OptimizeForPointLookup`: a block cache of
    /// `block_cache_size_mb` MiB, 10-bit Bloom filters and a memtable filter of 2% of the
    /// memtable.
    pub fn optimize_for_point_lookup(&mut self, block_cache_size_mb: u64) {
        self.block_cache_size =
            usize::try_from(block_cache_size_mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
        self.block_cache = None;
        self.bloom_bits_per_key = 10;
        self.memtable_bloom_size_ratio = 0.02;
        self.accepted.memtable_whole_key_filtering = true;
    }

    /// `memtable_factory`: `Vector` selects the vector memtable
    /// ([`Options::vector_memtable`]); the hash representations are kept and served by the
    /// skiplist.
    pub fn set_memtable_factory(&mut self, factory: MemtableFactory) {
        self.vector_memtable = factory == MemtableFactory::Vector;
        self.accepted.memtable_factory = Some(factory);
    }

    /// `memtable_huge_page_size`: kept.
    pub fn set_memtable_huge_page_size(&mut self, size: usize) {
        self.accepted.memtable_huge_page_size = size;
    }

    /// `max_successive_merges`: kept.
    pub fn set_max_successive_merges(&mut self, num: usize) {
        self.accepted.max_successive_merges = num;
    }

    /// `bloom_locality`: kept.
    pub fn set_bloom_locality(&mut self, v: u32) {
        self.accepted.bloom_locality = v;
    }

    /// `inplace_update_support`: kept (updates add versions).
    pub fn set_inplace_update_support(&mut self, enabled: bool) {
        self.accepted.inplace_update_support = enabled;
    }

    /// `inplace_update_num_locks`: kept.
    pub fn set_inplace_update_locks(&mut self, num: usize) {
        self.accepted.inplace_update_locks = num;
    }

    /// The memtable's Bloom filter as a share of `write_buffer_size`
    /// (`memtable_bloom_size_ratio`; Strata's memtable filter is on whole keys). Clamped to
    /// [0, 0.25], as RocksDB clamps it.
    pub fn set_memtable_prefix_bloom_ratio(&mut self, ratio: f64) {
        self.memtable_bloom_size_ratio = if ratio.is_nan() { 0.0 } else { ratio.clamp(0.0, 0.25) };
    }

    /// `memtable_whole_key_filtering`: kept (the memtable filter is always on whole keys).
    pub fn set_memtable_whole_key_filtering(&mut self, whole_key_filter: bool) {
        self.accepted.memtable_whole_key_filtering = whole_key_filter;
    }

    /// `arena_block_size`: kept.
    pub fn set_arena_block_size(&mut self, size: usize) {
        self.accepted.arena_block_size = size;
    }

    /// `row_cache` (`Options::row_cache`).
    pub fn set_row_cache(&mut self, cache: &Cache) {
        self.row_cache = Some(cache.clone());
    }

    /// `enable_write_thread_adaptive_yield` (`Options::enable_write_thread_adaptive_yield`).
    pub fn set_enable_write_thread_adaptive_yield(&mut self, enabled: bool) {
        self.enable_write_thread_adaptive_yield = enabled;
    }

    /// `write_thread_max_yield_usec`.
    pub fn set_write_thread_max_yield_usec(&mut self, micros: u64) {
        self.write_thread_max_yield_usec = micros;
    }

    /// `write_thread_slow_yield_usec`.
    pub fn set_write_thread_slow_yield_usec(&mut self, micros: u64) {
        self.write_thread_slow_yield_usec = micros;
    }

    /// `use_adaptive_mutex`: kept.
    pub fn set_use_adaptive_mutex(&mut self, enabled: bool) {
        self.accepted.use_adaptive_mutex = enabled;
    }

    /// `max_sequential_skip_in_iterations`: kept.
    pub fn set_max_sequential_skip_in_iterations(&mut self, num: u64) {
        self.accepted.max_sequential_skip_in_iterations = num;
    }

    /// `enable_blob_files` (`BlobOptions`).
    pub fn set_enable_blob_files(&mut self, val: bool) {
        self.blob.enable_blob_files = val;
    }

    /// `min_blob_size` (`BlobOptions`).
    pub fn set_min_blob_size(&mut self, val: u64) {
        self.blob.min_blob_size = val;
    }

    /// `blob_file_size` (`BlobOptions`).
    pub fn set_blob_file_size(&mut self, val: u64) {
        self.blob.blob_file_size = val;
    }

    /// `write_blobs_at_commit` (`BlobOptions`).
    pub fn set_write_blobs_at_commit(&mut self, val: bool) {
        self.blob.write_blobs_at_commit = val;
    }

    /// `enable_blob_garbage_collection` (`BlobOptions`).
    pub fn set_enable_blob_gc(&mut self, val: bool) {
        self.blob.enable_blob_gc = val;
    }

    /// `blob_garbage_collection_age_cutoff` (`BlobOptions`).
    pub fn set_blob_gc_age_cutoff(&mut self, val: f64) {
        self.blob.blob_gc_age_cutoff = val;
    }

    /// `blob_garbage_collection_force_threshold` (`BlobOptions`).
    pub fn set_blob_gc_force_threshold(&mut self, val: f64) {
        self.blob.blob_gc_force_threshold = val;
    }

    /// `blob_compaction_readahead_size`: kept (`BlobOptions`).
    pub fn set_blob_compaction_readahead_size(&mut self, val: u64) {
        self.blob.blob_compaction_readahead_size = val;
    }

    /// `blob_cache`: the cache blob values are kept in (`BlobOptions::blob_cache`; the
    /// block cache to share it). Without one, values are not cached.
    pub fn set_blob_cache(&mut self, cache: &Cache) {
        self.blob.blob_cache = Some(cache.clone());
    }
}
