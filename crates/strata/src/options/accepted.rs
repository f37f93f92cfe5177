//! RocksDB options Strata accepts and keeps without acting on them (`Options::accepted`).
//!
//! Each is a tuning hint for a mechanism Strata does not have (huge pages, mmap, an adaptive
//! mutex, alternative table formats...) or one it does otherwise; none changes what
//! a read returns or what survives a crash. They are kept so that ported code compiles, the
//! option-string parser round-trips them, and the info LOG shows what was asked. Every field
//! says why ignoring it is safe; `docs/rocksdb-compat.md` has the table.

use std::path::PathBuf;

use super::table_factories::{
    BlockBasedTablePinningTier, CuckooTableOptions, DataBlockIndexType, MemtableFactory,
    PlainTableFactoryOptions,
};
use crate::sstable::CompressionType;

/// RocksDB's `CompressionOptions` (`set_compression_options`): the zlib window, the level,
/// the strategy and the dictionary size. The level is applied (as `Options::zstd_level` when
/// it is not RocksDB's "default level" 32767); the rest is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompressionOptions {
    /// zlib window bits. Default -14.
    pub window_bits: i32,
    /// Codec level; 32767 means the codec's default.
    pub level: i32,
    /// zlib strategy. Default 0.
    pub strategy: i32,
    /// Dictionary bytes (dictionary compression is not implemented: always none).
    pub max_dict_bytes: i32,
    /// Bytes sampled to train a Zstandard dictionary (not implemented).
    pub zstd_max_train_bytes: i32,
    /// For the bottommost options: whether they apply at all.
    pub enabled: bool,
}

impl Default for CompressionOptions {
    fn default() -> Self {
        CompressionOptions {
            window_bits: -14,
            level: 32767,
            strategy: 0,
            max_dict_bytes: 0,
            zstd_max_train_bytes: 0,
            enabled: false,
        }
    }
}

/// The settings of RocksDB's `CompactOnDeletionCollector`: a table whose sliding window of
/// `window_size` entries ever holds `deletion_trigger` deletions (or a share of deletions of
/// `deletion_ratio`) is marked for compaction. Strata keeps the setting and prints it; its
/// compaction picker does not mark files by deletion density (tombstones are dropped when
/// their files are compacted for size as usual).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompactOnDeletionCollector {
    /// Entries in the window.
    pub window_size: usize,
    /// Deletions in a window that mark the file.
    pub deletion_trigger: usize,
    /// Share of deletions in the file that marks it (0: off).
    pub deletion_ratio: f64,
}

/// The block-based table settings Strata keeps without acting on (see the module doc).
#[derive(Clone, Debug)]
pub struct TableHints {
    /// RocksDB's table `format_version` (Strata's own table versions are chosen by the
    /// features in use, `docs/format/sstable.md`). Default 7, RocksDB 10's.
    pub format_version: i32,
    /// `data_block_index_type`.
    pub data_block_index_type: DataBlockIndexType,
    /// `data_block_hash_table_util_ratio`. Default 0.75.
    pub data_block_hash_ratio: f64,
    /// `whole_key_filtering` (Strata's table filters are always on whole keys). Default true.
    pub whole_key_filtering: bool,
    /// `optimize_filters_for_memory`. Default true (RocksDB 10).
    pub optimize_filters_for_memory: bool,
    /// Ribbon filters asked for: `(bloom-equivalent bits, first level using ribbon)`; Strata
    /// builds its Bloom filter of those bits per key instead (same false-positive rate, more
    /// memory).
    pub ribbon_filter: Option<(f64, i32)>,
    /// `top_level_index_pinning`.
    pub top_level_index_pinning: BlockBasedTablePinningTier,
    /// `partition_pinning`.
    pub partition_pinning: BlockBasedTablePinningTier,
    /// `unpartitioned_pinning`.
    pub unpartitioned_pinning: BlockBasedTablePinningTier,
}

impl Default for TableHints {
    fn default() -> Self {
        TableHints {
            format_version: 7,
            data_block_index_type: DataBlockIndexType::BinarySearch,
            data_block_hash_ratio: 0.75,
            whole_key_filtering: true,
            optimize_filters_for_memory: true,
            ribbon_filter: None,
            top_level_index_pinning: BlockBasedTablePinningTier::Fallback,
            partition_pinning: BlockBasedTablePinningTier::Fallback,
            unpartitioned_pinning: BlockBasedTablePinningTier::Fallback,
        }
    }
}

/// Options accepted without effect (module doc). Names are RocksDB's.
#[derive(Clone, Debug)]
pub struct AcceptedOptions {
    /// `wal_compression` (None or Zstd): the WAL is written uncompressed, which any reader
    /// of it reads the same.
    pub wal_compression: CompressionType,
    /// `compression_opts` beyond the level.
    pub compression_opts: CompressionOptions,
    /// `bottommost_compression_opts`.
    pub bottommost_compression_opts: CompressionOptions,
    /// `periodic_compaction_seconds`: Strata does not recompact files for age (in FIFO style
    /// `ttl` deletes old files, see `Options::ttl`). RocksDB's default: 30 days as "auto".
    pub periodic_compaction_seconds: u64,
    /// `optimize_filters_for_hits`: bottom-level filters are still built.
    pub optimize_filters_for_hits: bool,
    /// `delete_obsolete_files_period_micros`: Strata deletes obsolete files as soon as
    /// nothing reads them.
    pub delete_obsolete_files_period_micros: u64,
    /// `max_file_opening_threads`: tables are opened on the opening thread.
    pub max_file_opening_threads: i32,
    /// `use_fsync`: Strata syncs file data with fdatasync and directories with fsync, which
    /// is what durability of the data needs; fsync would also write back timestamps.
    pub use_fsync: bool,
    /// `db_log_dir`: the info LOG stays in the DB directory.
    pub db_log_dir: Option<PathBuf>,
    /// `info_log_level`: the LOG records everything it records at any level.
    pub log_level: super::logger::LogLevel,
    /// `writable_file_max_buffer_size`.
    pub writable_file_max_buffer_size: u64,
    /// `max_sequential_skip_in_iterations`.
    pub max_sequential_skip_in_iterations: u64,
    /// `is_fd_close_on_exec`: Rust opens every file with close-on-exec.
    pub is_fd_close_on_exec: bool,
    /// `allow_os_buffer` (RocksDB removed it; direct I/O has its own options).
    pub allow_os_buffer: bool,
    /// `table_cache_numshardbits`.
    pub table_cache_num_shard_bits: i32,
    /// `max_manifest_file_size`.
    pub max_manifest_file_size: usize,
    /// `compaction_pri`: Strata's leveled picker has its own order
    /// (`compaction/picker.rs`).
    pub compaction_pri: super::compact_opts::CompactionPri,
    /// `max_background_flushes`: Strata runs one flush thread.
    pub max_background_flushes: i32,
    /// `memtable_huge_page_size`.
    pub memtable_huge_page_size: usize,
    /// `max_successive_merges`: merge operands are combined at read and compaction time.
    pub max_successive_merges: usize,
    /// `bloom_locality`.
    pub bloom_locality: u32,
    /// `inplace_update_support`: updates always add a new version (reads stay consistent).
    pub inplace_update_support: bool,
    /// `inplace_update_num_locks`.
    pub inplace_update_locks: usize,
    /// `max_bytes_for_level_multiplier_additional`: level targets use the multiplier alone.
    pub max_bytes_for_level_multiplier_additional: Vec<i32>,
    /// `max_write_buffer_size_to_maintain`.
    pub max_write_buffer_size_to_maintain: i64,
    /// `report_bg_io_stats`.
    pub report_bg_io_stats: bool,
    /// `paranoid_file_checks`: a new table is not read back whole after it is written; its
    /// blocks' checksums are verified when they are read.
    pub paranoid_file_checks: bool,
    /// `use_adaptive_mutex`.
    pub use_adaptive_mutex: bool,
    /// `memtable_whole_key_filtering`: the memtable filter is always on whole keys.
    pub memtable_whole_key_filtering: bool,
    /// `manifest_preallocation_size`.
    pub manifest_preallocation_size: usize,
    /// `skip_stats_update_on_db_open`.
    pub skip_stats_update_on_db_open: bool,
    /// `allow_mmap_writes`: files are written with `write`.
    pub allow_mmap_writes: bool,
    /// `atomic_flush`: with the WAL on, recovery restores every family to one point whatever
    /// the flush order; with it off (writes with `disable_wal`), Strata flushes families one
    /// by one, so a crash may keep one family's unsynced writes and not another's.
    pub atomic_flush: bool,
    /// `max_log_file_size`: the LOG is rolled at open only.
    pub max_log_file_size: usize,
    /// `log_file_time_to_roll`.
    pub log_file_time_to_roll: usize,
    /// `arena_block_size`.
    pub arena_block_size: usize,
    /// `dump_malloc_stats`.
    pub dump_malloc_stats: bool,
    /// `experimental_mempurge_threshold`: memtables are always flushed whole.
    pub experimental_mempurge_threshold: f64,
    /// `allow_ingest_behind`: kept; an ingestion asking for `ingest_behind` is refused with
    /// `NotSupported`, since Strata does not reserve the bottom level for it.
    pub allow_ingest_behind: bool,
    /// The `CompactOnDeletionCollector` asked for.
    pub compact_on_deletion: Option<CompactOnDeletionCollector>,
    /// `avoid_unnecessary_blocking_io`.
    pub avoid_unnecessary_blocking_io: bool,
    /// `track_and_verify_wals_in_manifest`: Strata's recovery checks the WALs the MANIFEST
    /// needs either way (`Options::wal_dir`).
    pub track_and_verify_wals_in_manifest: bool,
    /// `write_dbid_to_manifest`.
    pub write_dbid_to_manifest: bool,
    /// `memtable_factory`.
    pub memtable_factory: Option<MemtableFactory>,
    /// `set_cuckoo_table_factory`.
    pub cuckoo_table: Option<CuckooTableOptions>,
    /// `set_plain_table_factory`.
    pub plain_table: Option<PlainTableFactoryOptions>,
    /// Block-based table settings without a Strata counterpart.
    pub table: TableHints,
}

impl Default for AcceptedOptions {
    fn default() -> Self {
        AcceptedOptions {
            wal_compression: CompressionType::None,
            compression_opts: CompressionOptions::default(),
            bottommost_compression_opts: CompressionOptions::default(),
            periodic_compaction_seconds: u64::MAX - 1,
            optimize_filters_for_hits: false,
            delete_obsolete_files_period_micros: 6 * 60 * 60 * 1_000_000,
            max_file_opening_threads: 16,
            use_fsync: false,
            db_log_dir: None,
            log_level: super::logger::LogLevel::Info,
            writable_file_max_buffer_size: 1 << 20,
            max_sequential_skip_in_iterations: 8,
            is_fd_close_on_exec: true,
            allow_os_buffer: true,
            table_cache_num_shard_bits: 6,
            max_manifest_file_size: 1 << 30,
            compaction_pri: super::compact_opts::CompactionPri::MinOverlappingRatio,
            max_background_flushes: -1,
            memtable_huge_page_size: 0,
            max_successive_merges: 0,
            bloom_locality: 0,
            inplace_update_support: false,
            inplace_update_locks: 10000,
            max_bytes_for_level_multiplier_additional: Vec::new(),
            max_write_buffer_size_to_maintain: 0,
            report_bg_io_stats: false,
            paranoid_file_checks: false,
            use_adaptive_mutex: false,
            memtable_whole_key_filtering: false,
            manifest_preallocation_size: 4 << 20,
            skip_stats_update_on_db_open: false,
            allow_mmap_writes: false,
            atomic_flush: false,
            max_log_file_size: 0,
            log_file_time_to_roll: 0,
            arena_block_size: 0,
            dump_malloc_stats: false,
            experimental_mempurge_threshold: 0.0,
            allow_ingest_behind: false,
            compact_on_deletion: None,
            avoid_unnecessary_blocking_io: false,
            track_and_verify_wals_in_manifest: false,
            write_dbid_to_manifest: true,
            memtable_factory: None,
            cuckoo_table: None,
            plain_table: None,
            table: TableHints::default(),
        }
    }
}

impl AcceptedOptions {
    /// The settings as `(name, value)` for the info LOG, with RocksDB's names and number
    /// formats (floats with six decimals) where its LOG has the line.
    pub(crate) fn describe(&self) -> Vec<(&'static str, String)> {
        vec![
            ("wal_compression", format!("{:?}", self.wal_compression)),
            ("compression_opts", format!("{:?}", self.compression_opts)),
            ("bottommost_compression_opts", format!("{:?}", self.bottommost_compression_opts)),
            ("periodic_compaction_seconds", self.periodic_compaction_seconds.to_string()),
            ("optimize_filters_for_hits", u8::from(self.optimize_filters_for_hits).to_string()),
            (
                "delete_obsolete_files_period_micros",
                self.delete_obsolete_files_period_micros.to_string(),
            ),
            ("max_file_opening_threads", self.max_file_opening_threads.to_string()),
            ("use_fsync", u8::from(self.use_fsync).to_string()),
            (
                "db_log_dir",
                self.db_log_dir.as_ref().map_or_else(String::new, |p| p.display().to_string()),
            ),
            ("info_log_level", format!("{:?}", self.log_level)),
            ("writable_file_max_buffer_size", self.writable_file_max_buffer_size.to_string()),
            (
                "max_sequential_skip_in_iterations",
                self.max_sequential_skip_in_iterations.to_string(),
            ),
            ("is_fd_close_on_exec", u8::from(self.is_fd_close_on_exec).to_string()),
            ("table_cache_numshardbits", self.table_cache_num_shard_bits.to_string()),
            ("max_manifest_file_size", self.max_manifest_file_size.to_string()),
            ("compaction_pri", format!("{:?}", self.compaction_pri)),
            ("max_background_flushes", self.max_background_flushes.to_string()),
            ("memtable_huge_page_size", self.memtable_huge_page_size.to_string()),
            ("max_successive_merges", self.max_successive_merges.to_string()),
            ("bloom_locality", self.bloom_locality.to_string()),
            ("inplace_update_support", u8::from(self.inplace_update_support).to_string()),
            ("inplace_update_num_locks", self.inplace_update_locks.to_string()),
            (
                "max_bytes_for_level_multiplier_addtl",
                format!("{:?}", self.max_bytes_for_level_multiplier_additional),
            ),
            (
                "max_write_buffer_size_to_maintain",
                self.max_write_buffer_size_to_maintain.to_string(),
            ),
            ("report_bg_io_stats", u8::from(self.report_bg_io_stats).to_string()),
            ("paranoid_file_checks", u8::from(self.paranoid_file_checks).to_string()),
            ("use_adaptive_mutex", u8::from(self.use_adaptive_mutex).to_string()),
            (
                "memtable_whole_key_filtering",
                u8::from(self.memtable_whole_key_filtering).to_string(),
            ),
            ("manifest_preallocation_size", self.manifest_preallocation_size.to_string()),
            (
                "skip_stats_update_on_db_open",
                u8::from(self.skip_stats_update_on_db_open).to_string(),
            ),
            ("allow_mmap_writes", u8::from(self.allow_mmap_writes).to_string()),
            ("atomic_flush", u8::from(self.atomic_flush).to_string()),
            ("max_log_file_size", self.max_log_file_size.to_string()),
            ("log_file_time_to_roll", self.log_file_time_to_roll.to_string()),
            ("arena_block_size", self.arena_block_size.to_string()),
            ("dump_malloc_stats", u8::from(self.dump_malloc_stats).to_string()),
            (
                "experimental_mempurge_threshold",
                format!("{:.6}", self.experimental_mempurge_threshold),
            ),
            ("allow_ingest_behind", u8::from(self.allow_ingest_behind).to_string()),
            (
                "table_properties_collectors",
                self.compact_on_deletion.map_or_else(String::new, |c| {
                    format!(
                        "CompactOnDeletionCollector (Sliding window size = {} Deletion trigger \
                         = {} Deletion ratio = {})",
                        c.window_size, c.deletion_trigger, c.deletion_ratio
                    )
                }),
            ),
            (
                "avoid_unnecessary_blocking_io",
                u8::from(self.avoid_unnecessary_blocking_io).to_string(),
            ),
            (
                "track_and_verify_wals_in_manifest",
                u8::from(self.track_and_verify_wals_in_manifest).to_string(),
            ),
            ("write_dbid_to_manifest", u8::from(self.write_dbid_to_manifest).to_string()),
            ("memtable_factory", format!("{:?}", self.memtable_factory)),
            ("cuckoo_table_factory", format!("{:?}", self.cuckoo_table)),
            ("plain_table_factory", format!("{:?}", self.plain_table)),
        ]
    }
}
