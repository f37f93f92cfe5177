//! The `rocksdb` crate's option setters and helper types, so that a program written against
//! it ports with renames only (`docs/rocksdb_port.md` lists what maps where).
//!
//! Every setter writes one field of [`Options`] (or a few, where RocksDB's one call stands
//! for several of Strata's settings); the field's own documentation gives its default and its
//! trade-off. Setters taking RocksDB's C integer types (`i32`) clamp negative values to 0 or
//! their documented meaning, never panic. What has no Strata counterpart is left out rather
//! than accepted and ignored, except where noted (`set_bloom_filter`'s `block_based`).

use std::sync::Arc;

use super::Options;
use crate::compaction::style::CompactionStyle;
use crate::memtable::WriteBufferManager;
use crate::merge_operator::{MergeOperands, MergeOperator};
use crate::prefix::PrefixExtractor;
use crate::sstable::{Cache, CompressionType, IndexType};
use crate::util::checksum::ChecksumType;
use crate::wal::WalRecoveryMode;

mod cache;
mod compaction;
mod compression;
mod files;
mod memory;
mod table;

/// A merge function in the `rocksdb` crate's shape: `(key, existing value, operands)` to the
/// new value, `None` when the operands cannot be applied (the read fails with `Corruption`).
type MergeFn =
    dyn Fn(&[u8], Option<&[u8]>, &MergeOperands<'_>) -> Option<Vec<u8>> + Send + Sync + 'static;

/// A [`MergeOperator`] made of closures (`Options::set_merge_operator*`).
struct FnMergeOperator {
    name: String,
    full: Arc<MergeFn>,
    /// Combines operands without a base (called with `existing = None`); `None`: operands are
    /// never combined early.
    partial: Option<Arc<MergeFn>>,
}

impl MergeOperator for FnMergeOperator {
    fn name(&self) -> &str {
        &self.name
    }

    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        (self.full)(key, existing, &MergeOperands::new(operands))
    }

    fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        self.partial.as_ref().and_then(|p| p(key, None, &MergeOperands::new(operands)))
    }
}

/// How keys are cut into prefixes (the `rocksdb` crate's `SliceTransform`), for
/// [`Options::set_prefix_extractor`].
#[derive(Clone, Debug)]
pub struct SliceTransform {
    extractor: PrefixExtractor,
    name: String,
}

impl SliceTransform {
    /// The first `len` bytes are the prefix; a shorter key is its own prefix.
    pub fn create_fixed_prefix(len: usize) -> SliceTransform {
        SliceTransform {
            extractor: PrefixExtractor::Fixed(len),
            name: format!("rocksdb.FixedPrefix.{len}"),
        }
    }

    /// At most the first `len` bytes are the prefix.
    pub fn create_capped_prefix(len: usize) -> SliceTransform {
        SliceTransform {
            extractor: PrefixExtractor::Capped(len),
            name: format!("rocksdb.CappedPrefix.{len}"),
        }
    }

    /// The prefix is `transform(key)` for keys `in_domain` accepts (every key without it);
    /// other keys are their own prefix. `name` is the transform's name (for the LOG).
    pub fn create(
        name: impl AsRef<str>,
        transform: fn(&[u8]) -> &[u8],
        in_domain: Option<fn(&[u8]) -> bool>,
    ) -> SliceTransform {
        SliceTransform {
            extractor: PrefixExtractor::Custom { transform, in_domain },
            name: name.as_ref().to_string(),
        }
    }

    /// Every key is its own prefix.
    pub fn create_noop() -> SliceTransform {
        SliceTransform { extractor: PrefixExtractor::Noop, name: "rocksdb.Noop".to_string() }
    }

    /// The transform's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The extractor this stands for.
    pub fn extractor(&self) -> PrefixExtractor {
        self.extractor
    }
}

/// Table settings (the `rocksdb` crate's `BlockBasedOptions`), applied by
/// [`Options::set_block_based_table_factory`]. Only the settings called are applied; the
/// others keep the value `Options` has (Strata's defaults, which include a 10-bit Bloom filter
/// where RocksDB's block-based factory has none).
#[derive(Clone, Debug, Default)]
pub struct BlockBasedOptions {
    block_size: Option<usize>,
    block_restart_interval: Option<usize>,
    index_block_restart_interval: Option<usize>,
    bloom_bits_per_key: Option<u32>,
    block_cache: Option<Cache>,
    no_block_cache: bool,
    cache_index_and_filter_blocks: Option<bool>,
    cache_index_and_filter_blocks_with_high_priority: Option<bool>,
    pin_l0_filter_and_index_blocks_in_cache: Option<bool>,
    pin_top_level_index_and_filter: Option<bool>,
    index_type: Option<IndexType>,
    partition_filters: Option<bool>,
    metadata_block_size: Option<usize>,
    block_align: Option<bool>,
    checksum: Option<ChecksumType>,
    /// The settings without a Strata counterpart (`setters/table.rs`), applied to
    /// `Options::accepted.table` as a whole once any was set.
    hints: Option<crate::options::accepted::TableHints>,
}

impl BlockBasedOptions {
    /// Target uncompressed data block size (`Options::block_size`).
    pub fn set_block_size(&mut self, size: usize) {
        self.block_size = Some(size);
    }

    /// Keys between restart points (`Options::block_restart_interval`); below 1 means 1.
    pub fn set_block_restart_interval(&mut self, interval: i32) {
        self.block_restart_interval = Some(usize::try_from(interval.max(1)).unwrap_or(1));
    }

    /// Keys between restart points in index blocks
    /// (`Options::index_block_restart_interval`); below 1 means 1.
    pub fn set_index_block_restart_interval(&mut self, interval: i32) {
        self.index_block_restart_interval = Some(usize::try_from(interval.max(1)).unwrap_or(1));
    }

    /// A Bloom filter of `bits_per_key` bits per key (rounded; 0 or less: none). Strata's
    /// filters are always whole-table ("full") filters: `block_based` is accepted and ignored.
    pub fn set_bloom_filter(&mut self, bits_per_key: f64, _block_based: bool) {
        let bits = if bits_per_key.is_finite() && bits_per_key > 0.0 {
            bits_per_key.round().min(f64::from(u32::MAX)) as u32
        } else {
            0
        };
        self.bloom_bits_per_key = Some(bits);
    }

    /// Uses `cache` as the block cache (`Options::block_cache`; clones share it).
    pub fn set_block_cache(&mut self, cache: &Cache) {
        self.block_cache = Some(cache.clone());
        self.no_block_cache = false;
    }

    /// No block cache at all (`Options::block_cache_size = 0`).
    pub fn disable_cache(&mut self) {
        self.no_block_cache = true;
        self.block_cache = None;
    }

    /// `Options::cache_index_and_filter_blocks`.
    pub fn set_cache_index_and_filter_blocks(&mut self, v: bool) {
        self.cache_index_and_filter_blocks = Some(v);
    }

    /// `Options::cache_index_and_filter_blocks_with_high_priority`.
    pub fn set_cache_index_and_filter_blocks_with_high_priority(&mut self, v: bool) {
        self.cache_index_and_filter_blocks_with_high_priority = Some(v);
    }

    /// `Options::pin_l0_filter_and_index_blocks_in_cache`.
    pub fn set_pin_l0_filter_and_index_blocks_in_cache(&mut self, v: bool) {
        self.pin_l0_filter_and_index_blocks_in_cache = Some(v);
    }

    /// `Options::pin_top_level_index_and_filter`.
    pub fn set_pin_top_level_index_and_filter(&mut self, v: bool) {
        self.pin_top_level_index_and_filter = Some(v);
    }

    /// `Options::index_type` (`IndexType::TwoLevel` is RocksDB's `TwoLevelIndexSearch`).
    pub fn set_index_type(&mut self, t: IndexType) {
        self.index_type = Some(t);
    }

    /// `Options::partition_filters`.
    pub fn set_partition_filters(&mut self, v: bool) {
        self.partition_filters = Some(v);
    }

    /// `Options::metadata_block_size`.
    pub fn set_metadata_block_size(&mut self, size: usize) {
        self.metadata_block_size = Some(size);
    }

    /// `Options::block_align`.
    pub fn set_block_align(&mut self, v: bool) {
        self.block_align = Some(v);
    }

    /// `Options::checksum`.
    pub fn set_checksum_type(&mut self, t: ChecksumType) {
        self.checksum = Some(t);
    }
}

/// A C `int` count as a `usize`, negative as 0.
fn count(n: i32) -> usize {
    usize::try_from(n).unwrap_or(0)
}

impl Options {
    /// `create_if_missing`.
    pub fn create_if_missing(&mut self, v: bool) {
        self.create_if_missing = v;
    }

    /// `create_missing_column_families`.
    pub fn create_missing_column_families(&mut self, v: bool) {
        self.create_missing_column_families = v;
    }

    /// `error_if_exists`.
    pub fn set_error_if_exists(&mut self, v: bool) {
        self.error_if_exists = v;
    }

    /// `paranoid_checks`.
    pub fn set_paranoid_checks(&mut self, v: bool) {
        self.paranoid_checks = v;
    }

    /// A merge operator of one closure used both for full merges and, called with no existing
    /// value, to combine operands early (the operation must be associative).
    pub fn set_merge_operator_associative<F>(&mut self, name: &str, full_merge: F)
    where
        F: Fn(&[u8], Option<&[u8]>, &MergeOperands<'_>) -> Option<Vec<u8>> + Send + Sync + 'static,
    {
        let f: Arc<MergeFn> = Arc::new(full_merge);
        self.merge_operator = Some(Arc::new(FnMergeOperator {
            name: name.to_string(),
            full: f.clone(),
            partial: Some(f),
        }));
    }

    /// A merge operator of a full-merge closure and a partial-merge closure (called with no
    /// existing value; returning `None` leaves the operands uncombined).
    pub fn set_merge_operator<F, PF>(&mut self, name: &str, full_merge: F, partial_merge: PF)
    where
        F: Fn(&[u8], Option<&[u8]>, &MergeOperands<'_>) -> Option<Vec<u8>> + Send + Sync + 'static,
        PF: Fn(&[u8], Option<&[u8]>, &MergeOperands<'_>) -> Option<Vec<u8>> + Send + Sync + 'static,
    {
        self.merge_operator = Some(Arc::new(FnMergeOperator {
            name: name.to_string(),
            full: Arc::new(full_merge),
            partial: Some(Arc::new(partial_merge)),
        }));
    }

    /// `prefix_extractor`.
    pub fn set_prefix_extractor(&mut self, t: SliceTransform) {
        self.prefix_extractor = Some(t.extractor);
    }

    /// `write_buffer_size`.
    pub fn set_write_buffer_size(&mut self, size: usize) {
        self.write_buffer_size = size;
    }

    /// `db_write_buffer_size`.
    pub fn set_db_write_buffer_size(&mut self, size: usize) {
        self.db_write_buffer_size = size;
    }

    /// Shares `manager` (`Options::write_buffer_manager`).
    pub fn set_write_buffer_manager(&mut self, manager: &Arc<WriteBufferManager>) {
        self.write_buffer_manager = Some(manager.clone());
    }

    /// `max_write_buffer_number` (at least 2 is useful; below 1 means 1).
    pub fn set_max_write_buffer_number(&mut self, n: i32) {
        self.max_write_buffer_number = count(n).max(1);
    }

    /// `target_file_size_base`.
    pub fn set_target_file_size_base(&mut self, size: u64) {
        self.target_file_size_base = size;
    }

    /// `target_file_size_multiplier` (below 1 means 1).
    pub fn set_target_file_size_multiplier(&mut self, m: i32) {
        self.target_file_size_multiplier = u64::try_from(m.max(1)).unwrap_or(1);
    }

    /// `max_bytes_for_level_base`.
    pub fn set_max_bytes_for_level_base(&mut self, size: u64) {
        self.max_bytes_for_level_base = size;
    }

    /// `max_bytes_for_level_multiplier`.
    pub fn set_max_bytes_for_level_multiplier(&mut self, m: f64) {
        self.max_bytes_for_level_multiplier = m;
    }

    /// `level_compaction_dynamic_level_bytes`.
    pub fn set_level_compaction_dynamic_level_bytes(&mut self, v: bool) {
        self.level_compaction_dynamic_level_bytes = v;
    }

    /// `max_compaction_bytes`.
    pub fn set_max_compaction_bytes(&mut self, n: u64) {
        self.max_compaction_bytes = n;
    }

    /// `num_levels` (below 1 means 1).
    pub fn set_num_levels(&mut self, n: i32) {
        self.num_levels = count(n).max(1);
    }

    /// `level0_file_num_compaction_trigger`.
    pub fn set_level_zero_file_num_compaction_trigger(&mut self, n: i32) {
        self.level0_file_num_compaction_trigger = count(n);
    }

    /// `level0_slowdown_writes_trigger`.
    pub fn set_level_zero_slowdown_writes_trigger(&mut self, n: i32) {
        self.level0_slowdown_writes_trigger = count(n);
    }

    /// `level0_stop_writes_trigger`.
    pub fn set_level_zero_stop_writes_trigger(&mut self, n: i32) {
        self.level0_stop_writes_trigger = count(n);
    }

    /// `soft_pending_compaction_bytes_limit`.
    pub fn set_soft_pending_compaction_bytes_limit(&mut self, n: usize) {
        self.soft_pending_compaction_bytes_limit = n as u64;
    }

    /// `hard_pending_compaction_bytes_limit`.
    pub fn set_hard_pending_compaction_bytes_limit(&mut self, n: usize) {
        self.hard_pending_compaction_bytes_limit = n as u64;
    }

    /// `disable_auto_compactions`.
    pub fn set_disable_auto_compactions(&mut self, v: bool) {
        self.disable_auto_compactions = v;
    }

    /// `compression`.
    pub fn set_compression_type(&mut self, t: CompressionType) {
        self.compression = t;
    }

    /// `compression_per_level`.
    pub fn set_compression_per_level(&mut self, levels: &[CompressionType]) {
        self.compression_per_level = levels.to_vec();
    }

    /// `compaction_style` (`DBCompactionStyle::Level` is `CompactionStyle::Leveled`).
    pub fn set_compaction_style(&mut self, style: CompactionStyle) {
        self.compaction_style = style;
    }

    /// The table settings `opts` sets (see [`BlockBasedOptions`]).
    pub fn set_block_based_table_factory(&mut self, opts: &BlockBasedOptions) {
        let o = opts;
        if let Some(v) = o.block_size {
            self.block_size = v;
        }
        if let Some(v) = o.block_restart_interval {
            self.block_restart_interval = v;
        }
        if let Some(v) = o.index_block_restart_interval {
            self.index_block_restart_interval = v;
        }
        if let Some(v) = o.bloom_bits_per_key {
            self.bloom_bits_per_key = v;
        }
        if o.no_block_cache {
            self.block_cache = None;
            self.block_cache_size = 0;
        } else if let Some(c) = &o.block_cache {
            self.block_cache = Some(c.clone());
        }
        if let Some(v) = o.cache_index_and_filter_blocks {
            self.cache_index_and_filter_blocks = v;
        }
        if let Some(v) = o.cache_index_and_filter_blocks_with_high_priority {
            self.cache_index_and_filter_blocks_with_high_priority = v;
        }
        if let Some(v) = o.pin_l0_filter_and_index_blocks_in_cache {
            self.pin_l0_filter_and_index_blocks_in_cache = v;
        }
        if let Some(v) = o.pin_top_level_index_and_filter {
            self.pin_top_level_index_and_filter = v;
        }
        if let Some(v) = o.index_type {
            self.index_type = v;
        }
        if let Some(v) = o.partition_filters {
            self.partition_filters = v;
        }
        if let Some(v) = o.metadata_block_size {
            self.metadata_block_size = v;
        }
        if let Some(v) = o.block_align {
            self.block_align = v;
        }
        if let Some(v) = o.checksum {
            self.checksum = v;
        }
        if let Some(h) = &o.hints {
            self.accepted.table = h.clone();
        }
    }

    /// Background threads for flushes and compactions: `max_background_jobs = total_threads`
    /// (RocksDB also sizes its thread pools; Strata's threads are the jobs). Below 1 means 1.
    pub fn increase_parallelism(&mut self, total_threads: i32) {
        self.max_background_jobs = count(total_threads).max(1);
    }

    /// `max_background_jobs` (below 1 means 1).
    pub fn set_max_background_jobs(&mut self, n: i32) {
        self.max_background_jobs = count(n).max(1);
    }

    /// `max_subcompactions` (below 1 means 1).
    pub fn set_max_subcompactions(&mut self, n: u32) {
        self.max_subcompactions = (n as usize).max(1);
    }

    /// `max_open_files` (-1: every table stays open).
    pub fn set_max_open_files(&mut self, n: i32) {
        self.max_open_files = n;
    }

    /// `use_direct_reads`.
    pub fn set_use_direct_reads(&mut self, v: bool) {
        self.use_direct_reads = v;
    }

    /// `use_direct_io_for_flush_and_compaction`.
    pub fn set_use_direct_io_for_flush_and_compaction(&mut self, v: bool) {
        self.use_direct_io_for_flush_and_compaction = v;
    }

    /// `compaction_readahead_size`.
    pub fn set_compaction_readahead_size(&mut self, n: usize) {
        self.compaction_readahead_size = n;
    }

    /// `bytes_per_sync`.
    pub fn set_bytes_per_sync(&mut self, n: u64) {
        self.bytes_per_sync = n;
    }

    /// `wal_bytes_per_sync`.
    pub fn set_wal_bytes_per_sync(&mut self, n: u64) {
        self.wal_bytes_per_sync = n;
    }

    /// `wal_dir`.
    pub fn set_wal_dir(&mut self, path: impl AsRef<std::path::Path>) {
        self.wal_dir = Some(path.as_ref().to_path_buf());
    }

    /// `wal_recovery_mode`.
    pub fn set_wal_recovery_mode(&mut self, mode: WalRecoveryMode) {
        self.wal_recovery_mode = mode;
    }

    /// `recycle_log_file_num`.
    pub fn set_recycle_log_file_num(&mut self, n: usize) {
        self.recycle_log_file_num = n;
    }

    /// `wal_ttl_seconds`: archive obsolete WALs and delete archived ones older than this.
    pub fn set_wal_ttl_seconds(&mut self, secs: u64) {
        self.wal_ttl_seconds = secs;
    }

    /// `wal_size_limit_mb`: archive obsolete WALs and keep the archive within this many MiB.
    pub fn set_wal_size_limit_mb(&mut self, size: u64) {
        self.wal_size_limit_mb = size;
    }

    /// `manual_wal_flush`.
    pub fn set_manual_wal_flush(&mut self, v: bool) {
        self.manual_wal_flush = v;
    }

    /// `enable_pipelined_write`.
    pub fn set_enable_pipelined_write(&mut self, v: bool) {
        self.enable_pipelined_write = v;
    }

    /// `unordered_write`.
    pub fn set_unordered_write(&mut self, v: bool) {
        self.unordered_write = v;
    }

    /// `allow_concurrent_memtable_write`.
    pub fn set_allow_concurrent_memtable_write(&mut self, v: bool) {
        self.allow_concurrent_memtable_write = v;
    }

    /// `max_write_batch_group_size_bytes`.
    pub fn set_max_write_batch_group_size_bytes(&mut self, n: u64) {
        self.max_write_batch_group_size_bytes = n;
    }

    /// `avoid_flush_during_recovery`.
    pub fn set_avoid_flush_during_recovery(&mut self, v: bool) {
        self.avoid_flush_during_recovery = v;
    }

    /// `stats_dump_period_sec`.
    pub fn set_stats_dump_period_sec(&mut self, secs: u32) {
        self.stats_dump_period_sec = secs;
    }

    /// `keep_log_file_num`.
    pub fn set_keep_log_file_num(&mut self, n: usize) {
        self.keep_log_file_num = n;
    }

    /// `delayed_write_rate`.
    pub fn set_delayed_write_rate(&mut self, bytes_per_sec: u64) {
        self.delayed_write_rate = bytes_per_sec;
    }

    /// Limits flush and compaction writes to `rate_bytes_per_sec` (`rate_limiter`; Strata's
    /// limiter refills continuously with a 100 ms burst and has no fairness knob, so the
    /// other two arguments are not used). 0 or less removes the limit.
    pub fn set_ratelimiter(
        &mut self,
        rate_bytes_per_sec: i64,
        _refill_period_us: i64,
        _fairness: i32,
    ) {
        self.rate_limiter = limiter(rate_bytes_per_sec, crate::env::RateLimiter::new);
    }

    /// [`Self::set_ratelimiter`] with an auto-tuned limiter: `rate_bytes_per_sec` is the
    /// ceiling, and the rate in force follows the background writers' demand within
    /// [ceiling / 20, ceiling] ([`crate::env::RateLimiter::new_auto_tuned`]). 0 or less removes
    /// the limit.
    pub fn set_auto_tuned_ratelimiter(
        &mut self,
        rate_bytes_per_sec: i64,
        _refill_period_us: i64,
        _fairness: i32,
    ) {
        self.rate_limiter = limiter(rate_bytes_per_sec, crate::env::RateLimiter::new_auto_tuned);
    }
}

/// A limiter made by `make` for a positive rate; none for 0 or less (no limit).
fn limiter(
    rate_bytes_per_sec: i64,
    make: fn(u64) -> crate::env::RateLimiter,
) -> Option<Arc<crate::env::RateLimiter>> {
    u64::try_from(rate_bytes_per_sec).ok().filter(|&r| r > 0).map(|r| Arc::new(make(r)))
}

impl super::ReadOptions {
    /// `readahead_size`.
    pub fn set_readahead_size(&mut self, n: usize) {
        self.readahead_size = n;
    }
}

#[allow(non_upper_case_globals)]
impl CompactionStyle {
    /// The `rocksdb` crate's name of [`CompactionStyle::Leveled`] (`DBCompactionStyle::Level`).
    pub const Level: CompactionStyle = CompactionStyle::Leveled;
}

impl Cache {
    /// The `rocksdb` crate's name of [`Cache::new_lru`].
    pub fn new_lru_cache(capacity: usize) -> Cache {
        Cache::new_lru(capacity)
    }

    /// The `rocksdb` crate's name of [`Cache::usage`].
    pub fn get_usage(&self) -> usize {
        self.usage()
    }

    /// The `rocksdb` crate's name of [`Cache::pinned_usage`].
    pub fn get_pinned_usage(&self) -> usize {
        self.pinned_usage()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closure_merge_operator_sees_operands_oldest_first() {
        let mut o = Options::default();
        o.set_merge_operator_associative("concat", |_k, existing, ops| {
            let mut v = existing.map(<[u8]>::to_vec).unwrap_or_default();
            for op in ops {
                v.extend_from_slice(op);
            }
            Some(v)
        });
        let m = o.merge_operator.clone().unwrap();
        assert_eq!(m.name(), "concat");
        assert_eq!(m.full_merge(b"k", Some(b"a"), &[b"b", b"c"]).unwrap(), b"abc");
        assert_eq!(m.partial_merge(b"k", &[b"b", b"c"]).unwrap(), b"bc");
    }

    #[test]
    fn block_based_options_apply_only_what_was_set() {
        let mut o = Options { bloom_bits_per_key: 7, ..Options::default() };
        let mut b = BlockBasedOptions::default();
        b.set_block_size(16 << 10);
        b.set_bloom_filter(9.6, false);
        o.set_block_based_table_factory(&b);
        assert_eq!(o.block_size, 16 << 10);
        assert_eq!(o.bloom_bits_per_key, 10);
        assert_eq!(o.block_restart_interval, Options::default().block_restart_interval);
        let mut none = BlockBasedOptions::default();
        none.disable_cache();
        o.set_block_based_table_factory(&none);
        assert_eq!(o.block_cache_size, 0);
    }

    #[test]
    fn negative_c_ints_never_panic() {
        let mut o = Options::default();
        o.set_max_write_buffer_number(-3);
        o.increase_parallelism(-1);
        o.set_num_levels(i32::MIN);
        o.set_level_zero_stop_writes_trigger(-1);
        assert_eq!(o.max_write_buffer_number, 1);
        assert_eq!(o.max_background_jobs, 1);
        assert_eq!(o.num_levels, 1);
        assert_eq!(o.level0_stop_writes_trigger, 0);
    }
}
