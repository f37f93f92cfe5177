//! Which engine a run uses ([`EngineKind`]) and what each engine can do, as data: the
//! engine-class flags it honours and the benchmarks it cannot run. Flag validation
//! ([`crate::config`]) reads these answers and needs nothing of the engines themselves; opening,
//! probing and removing an engine's DB by its kind is [`crate::engine`]'s.
//!
//! Contract: each flag listed for an engine is applied by its adapter (`engine/<engine>.rs`)
//! when it opens the DB; another engine-class flag with a non-default value is rejected, and
//! another hint flag only noted (see [`crate::flags::Class`]). A new engine option is one line
//! here and its mapping in the adapter.
//!
//! The answers describe the engine whether or not this binary was built with it: validation
//! refuses an engine that is not [`EngineKind::compiled_in`] before it asks anything else.

use anyhow::{bail, Result};

use crate::catalog;

/// Which engine to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    Strata,
    RocksDb,
    Sqlite,
    Memory,
    /// LevelDB through its C API (feature `leveldb`).
    LevelDb,
    /// Kyoto Cabinet's TreeDB through its C API (feature `kyoto`).
    Kyoto,
    /// The fjall crate (feature `fjall`).
    Fjall,
    /// The redb crate (feature `redb`).
    Redb,
}

impl EngineKind {
    /// Every kind, in `--engine`'s order.
    pub const ALL: [EngineKind; 8] = [
        EngineKind::Strata,
        EngineKind::RocksDb,
        EngineKind::Sqlite,
        EngineKind::LevelDb,
        EngineKind::Kyoto,
        EngineKind::Fjall,
        EngineKind::Redb,
        EngineKind::Memory,
    ];

    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "strata" => EngineKind::Strata,
            "rocksdb" => EngineKind::RocksDb,
            "sqlite" | "sqlite3" => EngineKind::Sqlite,
            "memory" => EngineKind::Memory,
            "leveldb" => EngineKind::LevelDb,
            "kyoto" | "kyotocabinet" | "treedb" => EngineKind::Kyoto,
            "fjall" => EngineKind::Fjall,
            "redb" => EngineKind::Redb,
            _ => bail!(
                "unknown engine '{s}' (choose strata, rocksdb, sqlite, leveldb, kyoto, fjall, redb \
                 or memory)"
            ),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Strata => "strata",
            EngineKind::RocksDb => "rocksdb",
            EngineKind::Sqlite => "sqlite",
            EngineKind::Memory => "memory",
            EngineKind::LevelDb => "leveldb",
            EngineKind::Kyoto => "kyoto",
            EngineKind::Fjall => "fjall",
            EngineKind::Redb => "redb",
        }
    }

    /// The cargo feature that builds the engine in (`None`: always built).
    pub fn feature(self) -> Option<&'static str> {
        match self {
            EngineKind::Strata | EngineKind::Memory => None,
            other => Some(other.name()),
        }
    }

    /// Whether this binary was built with the engine.
    pub fn compiled_in(self) -> bool {
        match self {
            EngineKind::Strata | EngineKind::Memory => true,
            EngineKind::RocksDb => cfg!(feature = "rocksdb"),
            EngineKind::Sqlite => cfg!(feature = "sqlite"),
            EngineKind::LevelDb => cfg!(feature = "leveldb"),
            EngineKind::Kyoto => cfg!(feature = "kyoto"),
            EngineKind::Fjall => cfg!(feature = "fjall"),
            EngineKind::Redb => cfg!(feature = "redb"),
        }
    }

    /// Whether the engine can open a DB with a compaction filter (timeseries'
    /// `--expire_style=compaction_filter`).
    pub fn has_compaction_filter(self) -> bool {
        matches!(self, EngineKind::Strata | EngineKind::RocksDb)
    }

    /// Whether the engine takes range deletions in a batch (`Batch::delete_range`).
    pub fn has_range_deletion(self) -> bool {
        matches!(self, EngineKind::Strata | EngineKind::RocksDb | EngineKind::Memory)
    }

    /// The engine-class flags this engine honours (see [`crate::flags::Class`]).
    pub fn honoured_flags(self) -> &'static [&'static str] {
        match self {
            EngineKind::Strata => STRATA_HONOURED_FLAGS,
            EngineKind::RocksDb => ROCKSDB_HONOURED_FLAGS,
            EngineKind::Sqlite => SQLITE_HONOURED_FLAGS,
            EngineKind::Memory => MEMORY_HONOURED_FLAGS,
            EngineKind::LevelDb => LEVELDB_HONOURED_FLAGS,
            EngineKind::Kyoto => KYOTO_HONOURED_FLAGS,
            EngineKind::Fjall => FJALL_HONOURED_FLAGS,
            EngineKind::Redb => REDB_HONOURED_FLAGS,
        }
    }

    /// `Err(reason)` when the engine cannot run benchmark `name`.
    pub fn check_benchmark(self, name: &str) -> std::result::Result<(), String> {
        // Why the engine cannot merge (`None`: it can), and what else it cannot run.
        let (merge, unsupported) = match self {
            EngineKind::Strata | EngineKind::Memory => return Ok(()),
            EngineKind::RocksDb => (None, ROCKSDB_UNSUPPORTED),
            EngineKind::Sqlite => (Some("SQLite has no merge operator"), SQLITE_UNSUPPORTED),
            EngineKind::LevelDb => (Some("LevelDB has no merge operator"), LEVELDB_UNSUPPORTED),
            EngineKind::Kyoto => (Some("Kyoto Cabinet has no merge operator"), KYOTO_UNSUPPORTED),
            EngineKind::Fjall => (Some("fjall has no merge operator"), FJALL_UNSUPPORTED),
            EngineKind::Redb => (Some("redb has no merge operator"), REDB_UNSUPPORTED),
        };
        if let Some(why) = merge.filter(|_| catalog::find(name).is_some_and(|b| b.merge_operator)) {
            return Err(why.to_string());
        }
        match unsupported.iter().find(|(n, _)| *n == name) {
            Some((_, why)) => Err((*why).to_string()),
            None => Ok(()),
        }
    }
}

/// Engine-class flags Strata applies (`engine/strata.rs`, `build_options`).
pub const STRATA_HONOURED_FLAGS: &[&str] = &[
    "options_file",
    "row_cache_size",
    "readonly",
    "readahead_size",
    "total_order_seek",
    "prefix_same_as_start",
    "auto_prefix_mode",
    "max_total_wal_size",
    "wal_ttl_seconds",
    "wal_size_limit_MB",
    "avoid_flush_during_recovery",
    "stats_dump_period_sec",
    "stats_persist_period_sec",
    "stats_history_buffer_size",
    "checksum_type",
    "mmap_read",
    "enable_blob_files",
    "min_blob_size",
    "blob_file_size",
    "write_blobs_at_commit",
    "blob_compression_type",
    "enable_blob_garbage_collection",
    "blob_garbage_collection_age_cutoff",
    "blob_garbage_collection_force_threshold",
    "use_blob_cache",
    "use_shared_block_and_blob_cache",
    "blob_cache_size",
    "blob_cache_numshardbits",
    "memtablerep",
    "transaction_db",
    "optimistic_transaction_db",
    "transaction_lock_timeout",
    "cache_size",
    "cache_type",
    "cache_numshardbits",
    "cache_high_pri_pool_ratio",
    "block_cache_admission",
    "trim_heap_after_compaction",
    "level0_compaction_batching",
    "bloom_bits",
    "block_size",
    "cache_index_and_filter_blocks",
    "pin_l0_filter_and_index_blocks_in_cache",
    "pin_top_level_index_and_filter",
    "partition_index_and_filters",
    "partition_index",
    "index_type",
    "metadata_block_size",
    "block_align",
    "block_restart_interval",
    "index_block_restart_interval",
    "compression_type",
    "compression_level",
    "compression_parallel_threads",
    "write_buffer_size",
    "memtable_bloom_size_ratio",
    "memtable_whole_key_filtering",
    "max_write_buffer_number",
    "min_write_buffer_number_to_merge",
    "db_write_buffer_size",
    "cost_write_buffer_to_cache",
    "max_background_jobs",
    "max_background_compactions",
    "max_background_flushes",
    "num_levels",
    "open_files",
    "merge_operator",
    "prefix_size",
    "num_column_families",
    "paranoid_checks",
    "file_checksum",
    "sync",
    "disable_wal",
    "verify_checksum",
    "subcompactions",
    "level0_file_num_compaction_trigger",
    "level0_slowdown_writes_trigger",
    "level0_stop_writes_trigger",
    "max_bytes_for_level_base",
    "max_bytes_for_level_multiplier",
    "level_compaction_dynamic_level_bytes",
    "target_file_size_base",
    "target_file_size_multiplier",
    "max_compaction_bytes",
    "disable_auto_compactions",
    "soft_pending_compaction_bytes_limit",
    "hard_pending_compaction_bytes_limit",
    "delayed_write_rate",
    "wal_dir",
    "min_level_to_compress",
    "wal_bytes_per_sync",
    "recycle_log_file_num",
    "manual_wal_flush",
    "allow_concurrent_memtable_write",
    "enable_pipelined_write",
    "unordered_write",
    "max_write_batch_group_size_bytes",
    "enable_write_thread_adaptive_yield",
    "write_thread_max_yield_usec",
    "write_thread_slow_yield_usec",
    "wal_zeros_ahead",
    "wal_mmap_writes",
    "use_direct_reads",
    "advise_random_on_open",
    "use_direct_io_for_flush_and_compaction",
    "bytes_per_sync",
    "rate_limiter_bytes_per_sec",
    "rate_limiter_auto_tuned",
    "compaction_readahead_size",
    "compaction_style",
    "universal_size_ratio",
    "universal_min_merge_width",
    "universal_max_merge_width",
    "universal_max_size_amplification_percent",
    "universal_compression_size_percent",
    "universal_allow_trivial_move",
    "universal_incremental",
    "fifo_compaction_max_table_files_size_mb",
    "fifo_compaction_ttl",
    "fifo_compaction_allow_compaction",
    "universal_stop_style",
    "tiered_fan_in",
    "tiered_max_sorted_runs",
    "tiered_max_size_amplification_percent",
    "tiered_skewed_filter_bits",
];

/// Engine-class and hint flags applied to RocksDB (`engine/rocks.rs`).
pub const ROCKSDB_HONOURED_FLAGS: &[&str] = &[
    "options_file",
    // Iterators (`new_iterator`), then engine/rocks_knobs.rs:
    "readahead_size",
    "total_order_seek",
    "prefix_same_as_start",
    "checksum_type",
    "use_data_block_hash_index",
    "periodic_compaction_seconds",
    "ttl_seconds",
    "max_total_wal_size",
    "wal_ttl_seconds",
    "wal_size_limit_MB",
    "stats_dump_period_sec",
    "stats_persist_period_sec",
    "optimize_filters_for_hits",
    "arena_block_size",
    "max_manifest_file_size",
    "inplace_update_support",
    "inplace_update_num_locks",
    "max_write_buffer_size_to_maintain",
    "use_adaptive_mutex",
    "skip_stats_update_on_db_open",
    "bloom_locality",
    "table_cache_numshardbits",
    "writable_file_max_buffer_size",
    "file_opening_threads",
    "dump_malloc_stats",
    "experimental_mempurge_threshold",
    "max_bytes_for_level_multiplier_additional",
    "memtable_use_huge_page",
    "wal_compression",
    "track_and_verify_wals_in_manifest",
    "compression_zstd_max_train_bytes",
    "blob_compaction_readahead_size",
    "avoid_flush_during_recovery",
    "avoid_flush_during_shutdown",
    "force_consistency_checks",
    "use_direct_io_for_compaction_reads",
    "allow_data_in_errors",
    "log_readahead_size",
    "persist_stats_to_disk",
    "stats_history_buffer_size",
    "track_and_verify_wals",
    "paranoid_memory_checks",
    "memtable_verify_per_key_checksum_on_seek",
    "sample_for_compression",
    "preserve_internal_time_seconds",
    "preclude_last_level_data_seconds",
    "memtable_op_scan_flush_trigger",
    "uncache_aggressiveness",
    "block_protection_bytes_per_key",
    "memtable_protection_bytes_per_key",
    "strict_max_successive_merges",
    "max_manifest_space_amp_pct",
    "open_files_async",
    "enable_blob_direct_write",
    "blob_direct_write_partitions",
    "read_triggered_compaction_threshold",
    "min_tombstones_for_range_conversion",
    "compression_max_dict_buffer_bytes",
    "compression_use_zstd_dict_trainer",
    "verify_manifest_content_on_close",
    "max_compaction_trigger_wakeup_seconds",
    "memtable_batch_lookup_optimization",
    "async_wal_precreate",
    "num_high_pri_threads",
    "num_low_pri_threads",
    "num_bottom_pri_threads",
    "transaction_db",
    "optimistic_transaction_db",
    "transaction_lock_timeout",
    "use_tailing_iterator",
    "multiread_batched",
    "prefix_size",
    "num_column_families",
    "readonly",
    "wal_dir",
    "stats_level",
    "cache_size",
    "cache_type",
    "cache_numshardbits",
    "cache_index_and_filter_blocks",
    "pin_l0_filter_and_index_blocks_in_cache",
    "pin_top_level_index_and_filter",
    "partition_index_and_filters",
    "partition_index",
    "index_type",
    "metadata_block_size",
    "row_cache_size",
    "bloom_bits",
    "use_ribbon_filter",
    "whole_key_filtering",
    "block_size",
    "block_restart_interval",
    "index_block_restart_interval",
    "format_version",
    "compression_type",
    "compression_level",
    "compression_max_dict_bytes",
    "compression_parallel_threads",
    "min_level_to_compress",
    "write_buffer_size",
    "memtable_bloom_size_ratio",
    "memtable_whole_key_filtering",
    "max_write_buffer_number",
    "min_write_buffer_number_to_merge",
    "db_write_buffer_size",
    "cost_write_buffer_to_cache",
    "memtablerep",
    "allow_concurrent_memtable_write",
    "enable_pipelined_write",
    "unordered_write",
    "max_write_batch_group_size_bytes",
    "enable_write_thread_adaptive_yield",
    "write_thread_max_yield_usec",
    "write_thread_slow_yield_usec",
    "max_background_jobs",
    "max_background_compactions",
    "max_background_flushes",
    "subcompactions",
    "compaction_style",
    "compaction_pri",
    "num_levels",
    "target_file_size_base",
    "target_file_size_multiplier",
    "max_compaction_bytes",
    "max_bytes_for_level_base",
    "max_bytes_for_level_multiplier",
    "level_compaction_dynamic_level_bytes",
    "level0_file_num_compaction_trigger",
    "level0_slowdown_writes_trigger",
    "level0_stop_writes_trigger",
    "soft_pending_compaction_bytes_limit",
    "hard_pending_compaction_bytes_limit",
    "disable_auto_compactions",
    "universal_size_ratio",
    "universal_min_merge_width",
    "universal_max_merge_width",
    "universal_max_size_amplification_percent",
    "universal_compression_size_percent",
    "universal_allow_trivial_move",
    "universal_incremental",
    "fifo_compaction_max_table_files_size_mb",
    "fifo_compaction_allow_compaction",
    "fifo_compaction_ttl",
    "universal_stop_style",
    "sync",
    "disable_wal",
    "use_fsync",
    "bytes_per_sync",
    "wal_bytes_per_sync",
    "recycle_log_file_num",
    "manual_wal_flush",
    "open_files",
    "mmap_read",
    "mmap_write",
    "use_direct_reads",
    "advise_random_on_open",
    "use_direct_io_for_flush_and_compaction",
    "verify_checksum",
    "paranoid_checks",
    "file_checksum",
    "merge_operator",
    "max_successive_merges",
    "rate_limiter_bytes_per_sec",
    "rate_limiter_auto_tuned",
    "compaction_readahead_size",
    "enable_blob_files",
    "min_blob_size",
    "blob_file_size",
    "blob_compression_type",
    "enable_blob_garbage_collection",
    "blob_garbage_collection_age_cutoff",
    "blob_garbage_collection_force_threshold",
    "use_blob_cache",
    "use_shared_block_and_blob_cache",
    "blob_cache_size",
    "blob_cache_numshardbits",
    "delete_obsolete_files_period_micros",
];

/// Benchmarks RocksDB cannot run through the `rocksdb` crate, with why.
pub const ROCKSDB_UNSUPPORTED: &[(&str, &str)] = &[
    ("getmergeoperands", "the rocksdb crate and RocksDB's C API lack GetMergeOperands"),
    ("readrandomoperands", "the rocksdb crate and RocksDB's C API lack GetMergeOperands"),
    ("readrandomentity", "the rocksdb crate and RocksDB's C API lack GetEntity"),
    ("stats_history", "the rocksdb crate and RocksDB's C API lack GetStatsHistory"),
    ("multireadentity", "the rocksdb crate and RocksDB's C API lack MultiGetEntity"),
    (
        "approximatememtablestats",
        "the rocksdb crate and RocksDB's C API lack GetApproximateMemTableStats",
    ),
];

/// Engine-class flags applied to SQLite (`engine/sqlite.rs`).
pub const SQLITE_HONOURED_FLAGS: &[&str] = &["sync", "cache_size", "block_size"];

/// Benchmarks SQLite cannot run besides those that need a merge operator (the catalog marks
/// those), with why.
pub const SQLITE_UNSUPPORTED: &[(&str, &str)] = &[
    ("compact", "SQLite has no LSM compaction"),
    ("compactall", "SQLite has no LSM compaction"),
    ("fillseqdeterministic", "SQLite has no LSM compaction"),
    ("filluniquerandomdeterministic", "SQLite has no LSM compaction"),
    ("waitforcompaction", "SQLite has no LSM compaction"),
    ("levelstats", "SQLite has no LSM levels"),
    ("sstables", "SQLite has no table files"),
    ("resetstats", "SQLite keeps no statistics"),
    (
        "newiterator",
        "SQLite's cursor here is a query made at each seek: there is no iterator to set up",
    ),
    (
        "newiteratorwhilewriting",
        "SQLite's cursor here is a query made at each seek: there is no iterator to set up",
    ),
    ("randomreplacekeys", "it holds a snapshot, and SQLite's one connection here keeps none"),
    ("approximatesizerandom", "SQLite has no approximate sizes of key ranges"),
    ("randomwithverify", "it reads at snapshots, and SQLite's one connection here keeps none"),
    ("verifychecksum", "SQLite has no checksum verification of a live DB here"),
    ("verifyfilechecksums", "SQLite has no whole-file checksums here"),
    ("ingestexternalfile", "SQLite has no external table files to ingest"),
    ("backup", "SQLite has no backup engine here"),
    ("restore", "SQLite has no backup engine here"),
    ("readrandomoperands", "SQLite has no merge operands"),
    ("readrandomentity", "SQLite's store here has no wide columns"),
    ("multireadentity", "SQLite's store here has no wide columns"),
    ("approximatememtablestats", "SQLite has no memtable statistics here"),
];

/// Engine-class flags the memory engine applies (`engine/memory.rs`).
pub const MEMORY_HONOURED_FLAGS: &[&str] =
    &["sync", "disable_wal", "merge_operator", "verify_checksum"];

/// Engine-class flags applied to LevelDB (`engine/leveldb.rs`). `--compression_type` takes
/// none or snappy; `--bloom_bits` below 1 means no filter (LevelDB's default).
pub const LEVELDB_HONOURED_FLAGS: &[&str] = &[
    "cache_size",
    "write_buffer_size",
    "block_size",
    "block_restart_interval",
    "bloom_bits",
    "compression_type",
    "open_files",
    "paranoid_checks",
    "verify_checksum",
    "sync",
];

/// Benchmarks LevelDB cannot run besides those that need a merge operator, with why.
pub const LEVELDB_UNSUPPORTED: &[(&str, &str)] = &[
    ("flush", "LevelDB's API has no memtable flush"),
    ("waitforcompaction", "LevelDB's API cannot wait for background compactions"),
    ("compact0", "LevelDB's API cannot compact chosen files"),
    ("compact1", "LevelDB's API cannot compact chosen files"),
    ("fillseqdeterministic", "LevelDB's API cannot compact chosen files"),
    ("filluniquerandomdeterministic", "LevelDB's API cannot compact chosen files"),
    ("resetstats", "LevelDB cannot reset its statistics"),
    ("verifychecksum", "LevelDB has no checksum verification of a live DB here"),
    ("verifyfilechecksums", "LevelDB has no whole-file checksums"),
    ("ingestexternalfile", "LevelDB has no external table files to ingest"),
    ("backup", "LevelDB has no backup engine here"),
    ("restore", "LevelDB has no backup engine here"),
    ("readrandomoperands", "LevelDB has no merge operands"),
    ("readrandomentity", "LevelDB has no wide columns"),
    ("multireadentity", "LevelDB has no wide columns"),
    ("approximatememtablestats", "LevelDB has no memtable statistics here"),
];

/// Engine-class flags applied to Kyoto Cabinet's TreeDB (`engine/kyoto.rs`): `--cache_size`
/// is the page cache, `--block_size` the B+ tree page size, `--compression_type` none, lzo
/// (the default when the flag is not given: LevelDB's benchmark page used LZO), zlib or lzma,
/// `--sync` opens the DB with `OAUTOSYNC`.
pub const KYOTO_HONOURED_FLAGS: &[&str] = &["cache_size", "block_size", "compression_type", "sync"];

/// Benchmarks Kyoto Cabinet's TreeDB cannot run besides those that need a merge operator.
pub const KYOTO_UNSUPPORTED: &[(&str, &str)] = &[
    ("compact", "Kyoto Cabinet's TreeDB is a B+ tree: it has no LSM compaction"),
    ("compactall", "Kyoto Cabinet's TreeDB is a B+ tree: it has no LSM compaction"),
    ("compact0", "Kyoto Cabinet's TreeDB is a B+ tree: it has no LSM compaction"),
    ("compact1", "Kyoto Cabinet's TreeDB is a B+ tree: it has no LSM compaction"),
    ("fillseqdeterministic", "Kyoto Cabinet's TreeDB is a B+ tree: it has no LSM compaction"),
    (
        "filluniquerandomdeterministic",
        "Kyoto Cabinet's TreeDB is a B+ tree: it has no LSM compaction",
    ),
    ("waitforcompaction", "Kyoto Cabinet's TreeDB is a B+ tree: it has no LSM compaction"),
    ("levelstats", "Kyoto Cabinet's TreeDB has no LSM levels"),
    ("sstables", "Kyoto Cabinet's TreeDB has no table files"),
    ("resetstats", "Kyoto Cabinet keeps no statistics to reset"),
    ("randomreplacekeys", "it holds a snapshot, and Kyoto Cabinet has none"),
    ("approximatesizerandom", "Kyoto Cabinet has no approximate sizes of key ranges"),
    ("randomwithverify", "it reads at snapshots, and Kyoto Cabinet has none"),
    ("verifychecksum", "Kyoto Cabinet has no checksum verification of a live DB here"),
    ("verifyfilechecksums", "Kyoto Cabinet has no whole-file checksums"),
    ("ingestexternalfile", "Kyoto Cabinet has no external table files to ingest"),
    ("backup", "Kyoto Cabinet has no backup engine here"),
    ("restore", "Kyoto Cabinet has no backup engine here"),
    ("readrandomoperands", "Kyoto Cabinet has no merge operands"),
    ("readrandomentity", "Kyoto Cabinet has no wide columns"),
    ("multireadentity", "Kyoto Cabinet has no wide columns"),
    ("approximatememtablestats", "Kyoto Cabinet has no memtable statistics here"),
];

/// Engine-class flags applied to fjall (`engine/fjall.rs`). Flags left at their defaults keep
/// fjall's own recommended configuration where it has one (compression, filters).
pub const FJALL_HONOURED_FLAGS: &[&str] = &[
    "cache_size",
    "write_buffer_size",
    "block_size",
    "block_restart_interval",
    "bloom_bits",
    "compression_type",
    "max_background_jobs",
    "sync",
];

/// Benchmarks fjall cannot run besides those that need a merge operator.
pub const FJALL_UNSUPPORTED: &[(&str, &str)] = &[
    ("compact0", "fjall cannot compact chosen files"),
    ("compact1", "fjall cannot compact chosen files"),
    ("fillseqdeterministic", "fjall cannot compact chosen files"),
    ("filluniquerandomdeterministic", "fjall cannot compact chosen files"),
    ("levelstats", "fjall exposes no per-level statistics"),
    ("sstables", "fjall exposes no table file listing"),
    ("resetstats", "fjall keeps no statistics to reset"),
    ("approximatesizerandom", "fjall has no approximate sizes of key ranges"),
    ("verifychecksum", "fjall has no checksum verification of a live DB here"),
    ("verifyfilechecksums", "fjall has no whole-file checksums"),
    ("ingestexternalfile", "fjall has no external table files to ingest"),
    ("backup", "fjall has no backup engine here"),
    ("restore", "fjall has no backup engine here"),
    ("readrandomoperands", "fjall has no merge operands"),
    ("readrandomentity", "fjall has no wide columns"),
    ("multireadentity", "fjall has no wide columns"),
    ("approximatememtablestats", "fjall has no memtable statistics here"),
];

/// Engine-class flags applied to redb (`engine/redb.rs`): `--cache_size` is its page cache;
/// `--compression_type` only as none (redb does not compress).
pub const REDB_HONOURED_FLAGS: &[&str] = &["cache_size", "compression_type", "sync"];

/// Benchmarks redb cannot run besides those that need a merge operator.
pub const REDB_UNSUPPORTED: &[(&str, &str)] = &[
    ("compact", "redb is a B-tree: it has no LSM compaction"),
    ("compactall", "redb is a B-tree: it has no LSM compaction"),
    ("compact0", "redb is a B-tree: it has no LSM compaction"),
    ("compact1", "redb is a B-tree: it has no LSM compaction"),
    ("fillseqdeterministic", "redb is a B-tree: it has no LSM compaction"),
    ("filluniquerandomdeterministic", "redb is a B-tree: it has no LSM compaction"),
    ("waitforcompaction", "redb is a B-tree: it has no LSM compaction"),
    ("levelstats", "redb has no LSM levels"),
    ("sstables", "redb has no table files"),
    ("resetstats", "redb keeps no statistics to reset"),
    ("approximatesizerandom", "redb has no approximate sizes of key ranges"),
    ("verifychecksum", "redb has no checksum verification of a live DB here"),
    ("verifyfilechecksums", "redb has no whole-file checksums"),
    ("ingestexternalfile", "redb has no external table files to ingest"),
    ("backup", "redb has no backup engine here"),
    ("restore", "redb has no backup engine here"),
    ("readrandomoperands", "redb has no merge operands"),
    ("readrandomentity", "redb has no wide columns"),
    ("multireadentity", "redb has no wide columns"),
    ("approximatememtablestats", "redb has no memtable statistics here"),
];
