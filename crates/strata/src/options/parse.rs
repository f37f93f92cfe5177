//! RocksDB option strings: `"name=value;name2=value2"`, with RocksDB's option names (those of
//! its OPTIONS files), the one parser behind `Options::get_options_from_string` and
//! `Db::set_options`.
//!
//! Grammar: pairs separated by `;`, each `name=value`, blanks around either trimmed, a
//! trailing `;` allowed. A value in braces is a nested map, flattened into `outer.inner` names:
//! `block_based_table_factory={block_size=8192;format_version=5}` sets
//! `block_based_table_factory.block_size` and `block_based_table_factory.format_version`.
//! Values: booleans `true`/`false` (also `1`/`0`), integers with an optional `k`, `m`, `g` or
//! `t` suffix (powers of 1024, as RocksDB's), decimals, and RocksDB's enum names
//! (`kSnappyCompression`, `kCompactionStyleUniversal`, `kPointInTimeRecovery`...).
//!
//! Every name is in one table, [`OPTIONS`], with whether it may change on an open DB
//! (`Db::set_options`, RocksDB's "mutable" options). An unknown name, a malformed pair or a
//! value of the wrong form is `InvalidArgument` naming the option and the form expected;
//! nothing is applied from a string that has any error.

use crate::compaction::style::{CompactionStopStyle, CompactionStyle};
use crate::error::{Error, Result};
use crate::options::Options;
use crate::sstable::CompressionType;
use crate::wal::WalRecoveryMode;

/// A setter: parses the value and writes it, or says what form was expected.
type Setter = fn(&mut Options, &str) -> std::result::Result<(), String>;

/// One option name.
pub(crate) struct Entry {
    /// RocksDB's name.
    pub name: &'static str,
    /// Whether `Db::set_options` may change it on an open DB: RocksDB's mutable family
    /// options that Strata applies while open (or keeps, for hints). RocksDB's DB-wide
    /// mutable options (it changes them with `SetDBOptions`, which Strata lacks) and the
    /// compression settings (Strata builds a family's table settings at open) are not.
    pub mutable: bool,
    set: Setter,
}

fn bool_of(v: &str) -> std::result::Result<bool, String> {
    match v {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err("a boolean (true or false)".into()),
    }
}

/// An unsigned integer with an optional binary `k`/`m`/`g`/`t` suffix.
fn u64_of(v: &str) -> std::result::Result<u64, String> {
    let expected = || "an unsigned integer, optionally suffixed k, m, g or t".to_string();
    let (digits, shift) = match v.as_bytes().last() {
        Some(b'k' | b'K') => (&v[..v.len() - 1], 10),
        Some(b'm' | b'M') => (&v[..v.len() - 1], 20),
        Some(b'g' | b'G') => (&v[..v.len() - 1], 30),
        Some(b't' | b'T') => (&v[..v.len() - 1], 40),
        _ => (v, 0),
    };
    let n: u64 = digits.parse().map_err(|_| expected())?;
    n.checked_mul(1u64 << shift).ok_or_else(expected)
}

fn usize_of(v: &str) -> std::result::Result<usize, String> {
    usize::try_from(u64_of(v)?).map_err(|_| "an integer that fits in usize".into())
}

fn u32_of(v: &str) -> std::result::Result<u32, String> {
    u32::try_from(u64_of(v)?).map_err(|_| "an integer below 2^32".into())
}

fn i32_of(v: &str) -> std::result::Result<i32, String> {
    v.parse().map_err(|_| "a 32-bit signed integer".into())
}

fn i64_of(v: &str) -> std::result::Result<i64, String> {
    v.parse().map_err(|_| "a 64-bit signed integer".into())
}

fn f64_of(v: &str) -> std::result::Result<f64, String> {
    v.parse::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(|| "a finite decimal number".into())
}

/// RocksDB's compression names (and Strata's type names).
pub(crate) fn compression_of(v: &str) -> std::result::Result<CompressionType, String> {
    Ok(match v {
        "kNoCompression" | "None" | "none" => CompressionType::None,
        "kSnappyCompression" | "Snappy" | "snappy" => CompressionType::Snappy,
        "kZlibCompression" | "Zlib" | "zlib" => CompressionType::Zlib,
        "kBZip2Compression" | "Bz2" | "bzip2" => CompressionType::Bz2,
        "kLZ4Compression" | "Lz4" | "lz4" => CompressionType::Lz4,
        "kLZ4HCCompression" | "Lz4hc" | "lz4hc" => CompressionType::Lz4hc,
        "kZSTD" | "kZSTDNotFinalCompression" | "Zstd" | "zstd" => CompressionType::Zstd,
        _ => {
            return Err("a compression name (kNoCompression, kSnappyCompression, \
                        kZlibCompression, kBZip2Compression, kLZ4Compression, \
                        kLZ4HCCompression or kZSTD)"
                .into())
        }
    })
}

/// A `:`-separated list of compression names (RocksDB's `compression_per_level`).
fn compression_list_of(v: &str) -> std::result::Result<Vec<CompressionType>, String> {
    if v.is_empty() {
        return Ok(Vec::new());
    }
    v.split(':').map(|c| compression_of(c.trim())).collect()
}

/// A memtable factory's name as RocksDB's options files write it (or db_bench's
/// `--memtablerep` name): whether it is the vector memtable.
fn memtable_factory_of(v: &str) -> std::result::Result<bool, String> {
    match v {
        "VectorRepFactory" | "vector" => Ok(true),
        "SkipListFactory"
        | "skip_list"
        | "HashSkipListRepFactory"
        | "prefix_hash"
        | "HashLinkListRepFactory"
        | "hash_linkedlist" => Ok(false),
        _ => Err("SkipListFactory, VectorRepFactory, HashSkipListRepFactory or \
                  HashLinkListRepFactory"
            .into()),
    }
}

fn style_of(v: &str) -> std::result::Result<CompactionStyle, String> {
    Ok(match v {
        "kCompactionStyleLevel" => CompactionStyle::Leveled,
        "kCompactionStyleUniversal" => CompactionStyle::Universal,
        "kCompactionStyleFIFO" => CompactionStyle::Fifo,
        _ => {
            return Err("kCompactionStyleLevel, kCompactionStyleUniversal or \
                        kCompactionStyleFIFO"
                .into())
        }
    })
}

fn recovery_of(v: &str) -> std::result::Result<WalRecoveryMode, String> {
    Ok(match v {
        "kTolerateCorruptedTailRecords" => WalRecoveryMode::TolerateCorruptedTailRecords,
        "kAbsoluteConsistency" => WalRecoveryMode::AbsoluteConsistency,
        "kPointInTimeRecovery" => WalRecoveryMode::PointInTime,
        "kSkipAnyCorruptedRecords" => WalRecoveryMode::SkipAnyCorruptedRecords,
        _ => {
            return Err("kTolerateCorruptedTailRecords, kAbsoluteConsistency, \
                        kPointInTimeRecovery or kSkipAnyCorruptedRecords"
                .into())
        }
    })
}

fn stop_style_of(v: &str) -> std::result::Result<CompactionStopStyle, String> {
    Ok(match v {
        "kCompactionStopStyleSimilarSize" => CompactionStopStyle::SimilarSize,
        "kCompactionStopStyleTotalSize" => CompactionStopStyle::TotalSize,
        _ => return Err("kCompactionStopStyleSimilarSize or kCompactionStopStyleTotalSize".into()),
    })
}

/// An entry: `name`, mutable or not, `|o, v| body` where `v` is the value parsed by `parse`.
macro_rules! opt {
    ($name:literal, $mutable:expr, $parse:ident, |$o:ident, $v:ident| $body:expr) => {
        Entry {
            name: $name,
            mutable: $mutable,
            set: |$o: &mut Options, s: &str| {
                let $v = $parse(s)?;
                $body;
                Ok(())
            },
        }
    };
}

/// Every option name the parser knows, with RocksDB's names. `true` marks the options an open
/// DB may change (`Db::set_options`).
pub(crate) const OPTIONS: &[Entry] = &[
    // DB-wide.
    opt!("create_if_missing", false, bool_of, |o, v| o.create_if_missing = v),
    opt!("create_missing_column_families", false, bool_of, |o, v| o
        .create_missing_column_families =
        v),
    opt!("error_if_exists", false, bool_of, |o, v| o.error_if_exists = v),
    opt!("paranoid_checks", false, bool_of, |o, v| o.paranoid_checks = v),
    opt!("use_fsync", false, bool_of, |o, v| o.accepted.use_fsync = v),
    opt!("max_open_files", false, i32_of, |o, v| o.max_open_files = v),
    opt!("max_background_jobs", false, usize_of, |o, v| o.max_background_jobs = v),
    opt!("max_background_compactions", false, i32_of, |o, v| o.set_max_background_compactions(v)),
    opt!("max_background_flushes", false, i32_of, |o, v| o.accepted.max_background_flushes = v),
    opt!("max_subcompactions", false, usize_of, |o, v| o.max_subcompactions = v),
    opt!("db_write_buffer_size", false, usize_of, |o, v| o.db_write_buffer_size = v),
    opt!("delayed_write_rate", false, u64_of, |o, v| o.delayed_write_rate = v),
    opt!("max_total_wal_size", false, u64_of, |o, v| o.max_total_wal_size = v),
    opt!("stats_dump_period_sec", false, u32_of, |o, v| o.stats_dump_period_sec = v),
    opt!("stats_persist_period_sec", false, u32_of, |o, v| o.accepted.stats_persist_period_sec = v),
    opt!("bytes_per_sync", false, u64_of, |o, v| o.bytes_per_sync = v),
    opt!("wal_bytes_per_sync", false, u64_of, |o, v| o.wal_bytes_per_sync = v),
    opt!("compaction_readahead_size", false, usize_of, |o, v| o.compaction_readahead_size = v),
    opt!("writable_file_max_buffer_size", false, u64_of, |o, v| o
        .accepted
        .writable_file_max_buffer_size =
        v),
    opt!("delete_obsolete_files_period_micros", false, u64_of, |o, v| o
        .accepted
        .delete_obsolete_files_period_micros =
        v),
    opt!("keep_log_file_num", false, usize_of, |o, v| o.keep_log_file_num = v),
    opt!("recycle_log_file_num", false, usize_of, |o, v| o.recycle_log_file_num = v),
    opt!("wal_recovery_mode", false, recovery_of, |o, v| o.wal_recovery_mode = v),
    opt!("manual_wal_flush", false, bool_of, |o, v| o.manual_wal_flush = v),
    opt!("avoid_flush_during_recovery", false, bool_of, |o, v| o.avoid_flush_during_recovery = v),
    opt!("use_direct_reads", false, bool_of, |o, v| o.use_direct_reads = v),
    opt!("use_direct_io_for_flush_and_compaction", false, bool_of, |o, v| o
        .use_direct_io_for_flush_and_compaction =
        v),
    opt!("advise_random_on_open", false, bool_of, |o, v| o.advise_random_on_open = v),
    opt!("enable_pipelined_write", false, bool_of, |o, v| o.enable_pipelined_write = v),
    opt!("unordered_write", false, bool_of, |o, v| o.unordered_write = v),
    opt!("allow_concurrent_memtable_write", false, bool_of, |o, v| o
        .allow_concurrent_memtable_write =
        v),
    opt!("max_write_batch_group_size_bytes", false, u64_of, |o, v| o
        .max_write_batch_group_size_bytes =
        v),
    opt!("enable_write_thread_adaptive_yield", false, bool_of, |o, v| o
        .enable_write_thread_adaptive_yield =
        v),
    opt!("write_thread_max_yield_usec", false, u64_of, |o, v| o.write_thread_max_yield_usec = v),
    opt!("write_thread_slow_yield_usec", false, u64_of, |o, v| o.write_thread_slow_yield_usec = v),
    opt!("use_adaptive_mutex", false, bool_of, |o, v| o.accepted.use_adaptive_mutex = v),
    opt!("allow_mmap_reads", false, bool_of, |o, v| o.allow_mmap_reads = v),
    opt!("allow_mmap_writes", false, bool_of, |o, v| o.accepted.allow_mmap_writes = v),
    opt!("is_fd_close_on_exec", false, bool_of, |o, v| o.accepted.is_fd_close_on_exec = v),
    opt!("max_manifest_file_size", false, usize_of, |o, v| o.accepted.max_manifest_file_size = v),
    opt!("manifest_preallocation_size", false, usize_of, |o, v| o
        .accepted
        .manifest_preallocation_size =
        v),
    opt!("table_cache_numshardbits", false, i32_of, |o, v| o.accepted.table_cache_num_shard_bits =
        v),
    opt!("max_file_opening_threads", false, i32_of, |o, v| o.accepted.max_file_opening_threads = v),
    opt!("max_log_file_size", false, usize_of, |o, v| o.accepted.max_log_file_size = v),
    opt!("log_file_time_to_roll", false, usize_of, |o, v| o.accepted.log_file_time_to_roll = v),
    opt!("skip_stats_update_on_db_open", false, bool_of, |o, v| o
        .accepted
        .skip_stats_update_on_db_open =
        v),
    opt!("dump_malloc_stats", false, bool_of, |o, v| o.accepted.dump_malloc_stats = v),
    opt!("atomic_flush", false, bool_of, |o, v| o.accepted.atomic_flush = v),
    opt!("avoid_unnecessary_blocking_io", false, bool_of, |o, v| o
        .accepted
        .avoid_unnecessary_blocking_io =
        v),
    opt!("track_and_verify_wals_in_manifest", false, bool_of, |o, v| o
        .accepted
        .track_and_verify_wals_in_manifest =
        v),
    opt!("write_dbid_to_manifest", false, bool_of, |o, v| o.accepted.write_dbid_to_manifest = v),
    opt!("allow_ingest_behind", false, bool_of, |o, v| o.accepted.allow_ingest_behind = v),
    // Per column family.
    opt!("write_buffer_size", true, usize_of, |o, v| o.write_buffer_size = v),
    opt!("max_write_buffer_number", true, usize_of, |o, v| o.max_write_buffer_number = v),
    opt!("min_write_buffer_number_to_merge", false, usize_of, |o, v| o
        .min_write_buffer_number_to_merge =
        v),
    opt!("max_write_buffer_size_to_maintain", false, i64_of, |o, v| o
        .accepted
        .max_write_buffer_size_to_maintain =
        v),
    opt!("memtable_factory", false, memtable_factory_of, |o, v| o.vector_memtable = v),
    opt!("memtable_prefix_bloom_size_ratio", true, f64_of, |o, v| o
        .set_memtable_prefix_bloom_ratio(v)),
    opt!("memtable_whole_key_filtering", true, bool_of, |o, v| o
        .accepted
        .memtable_whole_key_filtering =
        v),
    opt!("memtable_huge_page_size", true, usize_of, |o, v| o.accepted.memtable_huge_page_size = v),
    opt!("arena_block_size", true, usize_of, |o, v| o.accepted.arena_block_size = v),
    opt!("max_successive_merges", true, usize_of, |o, v| o.accepted.max_successive_merges = v),
    opt!("inplace_update_support", false, bool_of, |o, v| o.accepted.inplace_update_support = v),
    opt!("inplace_update_num_locks", true, usize_of, |o, v| o.accepted.inplace_update_locks = v),
    opt!("bloom_locality", false, u32_of, |o, v| o.accepted.bloom_locality = v),
    opt!("experimental_mempurge_threshold", true, f64_of, |o, v| o
        .accepted
        .experimental_mempurge_threshold =
        v),
    opt!("num_levels", false, usize_of, |o, v| o.num_levels = v),
    opt!("disable_auto_compactions", true, bool_of, |o, v| o.disable_auto_compactions = v),
    opt!("level0_file_num_compaction_trigger", true, usize_of, |o, v| o
        .level0_file_num_compaction_trigger =
        v),
    opt!("level0_slowdown_writes_trigger", true, usize_of, |o, v| o
        .level0_slowdown_writes_trigger =
        v),
    opt!("level0_stop_writes_trigger", true, usize_of, |o, v| o.level0_stop_writes_trigger = v),
    opt!("target_file_size_base", true, u64_of, |o, v| o.target_file_size_base = v),
    opt!("target_file_size_multiplier", true, u64_of, |o, v| o.target_file_size_multiplier = v),
    opt!("max_bytes_for_level_base", true, u64_of, |o, v| o.max_bytes_for_level_base = v),
    opt!("max_bytes_for_level_multiplier", true, f64_of, |o, v| o.max_bytes_for_level_multiplier =
        v),
    opt!("level_compaction_dynamic_level_bytes", false, bool_of, |o, v| o
        .level_compaction_dynamic_level_bytes =
        v),
    opt!("max_compaction_bytes", true, u64_of, |o, v| o.max_compaction_bytes = v),
    opt!("soft_pending_compaction_bytes_limit", true, u64_of, |o, v| o
        .soft_pending_compaction_bytes_limit =
        v),
    opt!("hard_pending_compaction_bytes_limit", true, u64_of, |o, v| o
        .hard_pending_compaction_bytes_limit =
        v),
    opt!("compaction_style", false, style_of, |o, v| o.compaction_style = v),
    opt!("compression", false, compression_of, |o, v| o.compression = v),
    opt!("bottommost_compression", false, compression_of, |o, v| o.bottommost_compression =
        Some(v)),
    opt!("compression_per_level", false, compression_list_of, |o, v| o.compression_per_level = v),
    opt!("ttl", true, u64_of, |o, v| o.ttl = v),
    opt!("periodic_compaction_seconds", true, u64_of, |o, v| o
        .accepted
        .periodic_compaction_seconds = v),
    opt!("optimize_filters_for_hits", false, bool_of, |o, v| o
        .accepted
        .optimize_filters_for_hits = v),
    opt!("report_bg_io_stats", true, bool_of, |o, v| o.accepted.report_bg_io_stats = v),
    opt!("paranoid_file_checks", true, bool_of, |o, v| o.accepted.paranoid_file_checks = v),
    opt!("max_sequential_skip_in_iterations", true, u64_of, |o, v| o
        .accepted
        .max_sequential_skip_in_iterations =
        v),
    opt!("enable_blob_files", true, bool_of, |o, v| o.blob.enable_blob_files = v),
    opt!("min_blob_size", true, u64_of, |o, v| o.blob.min_blob_size = v),
    opt!("blob_file_size", true, u64_of, |o, v| o.blob.blob_file_size = v),
    opt!("write_blobs_at_commit", false, bool_of, |o, v| o.blob.write_blobs_at_commit = v),
    opt!("blob_compression_type", true, compression_of, |o, v| o.blob.blob_compression_type =
        Some(v)),
    opt!("enable_blob_garbage_collection", true, bool_of, |o, v| o.blob.enable_blob_gc = v),
    opt!("blob_garbage_collection_age_cutoff", true, f64_of, |o, v| o.blob.blob_gc_age_cutoff = v),
    opt!("blob_garbage_collection_force_threshold", true, f64_of, |o, v| o
        .blob
        .blob_gc_force_threshold =
        v),
    opt!("blob_compaction_readahead_size", true, u64_of, |o, v| o
        .blob
        .blob_compaction_readahead_size =
        v),
    // Nested: compaction style options.
    opt!("compaction_options_fifo.max_table_files_size", true, u64_of, |o, v| o
        .compaction_options_fifo
        .max_table_files_size =
        v),
    opt!("compaction_options_fifo.allow_compaction", true, bool_of, |o, v| o
        .compaction_options_fifo
        .allow_compaction =
        v),
    opt!("compaction_options_universal.size_ratio", true, u32_of, |o, v| o
        .compaction_options_universal
        .size_ratio = v),
    opt!("compaction_options_universal.min_merge_width", true, u32_of, |o, v| o
        .compaction_options_universal
        .min_merge_width =
        v),
    opt!("compaction_options_universal.max_merge_width", true, u32_of, |o, v| o
        .compaction_options_universal
        .max_merge_width =
        v),
    opt!("compaction_options_universal.max_size_amplification_percent", true, u32_of, |o, v| o
        .compaction_options_universal
        .max_size_amplification_percent =
        v),
    opt!("compaction_options_universal.compression_size_percent", true, i32_of, |o, v| o
        .compaction_options_universal
        .compression_size_percent =
        v),
    opt!("compaction_options_universal.stop_style", true, stop_style_of, |o, v| o
        .compaction_options_universal
        .stop_style =
        v),
    opt!("compaction_options_universal.allow_trivial_move", true, bool_of, |o, v| o
        .compaction_options_universal
        .allow_trivial_move =
        v),
    // Nested: the block-based table.
    opt!("block_based_table_factory.block_size", false, usize_of, |o, v| o.block_size = v),
    opt!("block_based_table_factory.block_size_deviation", false, usize_of, |o, v| o
        .block_size_deviation =
        v),
    opt!("block_based_table_factory.block_restart_interval", false, usize_of, |o, v| o
        .block_restart_interval =
        v),
    opt!("block_based_table_factory.index_block_restart_interval", false, usize_of, |o, v| o
        .index_block_restart_interval =
        v),
    opt!("block_based_table_factory.metadata_block_size", false, usize_of, |o, v| o
        .metadata_block_size =
        v),
    opt!("block_based_table_factory.partition_filters", false, bool_of, |o, v| o
        .partition_filters =
        v),
    opt!("block_based_table_factory.block_align", false, bool_of, |o, v| o.block_align = v),
    opt!("block_based_table_factory.cache_index_and_filter_blocks", false, bool_of, |o, v| o
        .cache_index_and_filter_blocks =
        v),
    opt!(
        "block_based_table_factory.cache_index_and_filter_blocks_with_high_priority",
        false,
        bool_of,
        |o, v| o.cache_index_and_filter_blocks_with_high_priority = v
    ),
    opt!(
        "block_based_table_factory.pin_l0_filter_and_index_blocks_in_cache",
        false,
        bool_of,
        |o, v| o.pin_l0_filter_and_index_blocks_in_cache = v
    ),
    opt!("block_based_table_factory.pin_top_level_index_and_filter", false, bool_of, |o, v| o
        .pin_top_level_index_and_filter =
        v),
    opt!("block_based_table_factory.format_version", false, i32_of, |o, v| o
        .accepted
        .table
        .format_version = v),
    opt!("block_based_table_factory.whole_key_filtering", false, bool_of, |o, v| o
        .accepted
        .table
        .whole_key_filtering =
        v),
    opt!("block_based_table_factory.data_block_hash_table_util_ratio", false, f64_of, |o, v| o
        .accepted
        .table
        .data_block_hash_ratio =
        v),
    opt!("block_based_table_factory.optimize_filters_for_memory", false, bool_of, |o, v| o
        .accepted
        .table
        .optimize_filters_for_memory =
        v),
];

/// The entry named `name`.
pub(crate) fn entry(name: &str) -> Option<&'static Entry> {
    OPTIONS.iter().find(|e| e.name == name)
}

/// Sets option `name` to `value` on `opts`. With `require_mutable`, an option an open DB
/// cannot change is refused (for `Db::set_options`). Errors are `InvalidArgument` naming the
/// option and the form expected; `opts` is unchanged by a failed call.
pub(crate) fn apply_option(
    opts: &mut Options,
    name: &str,
    value: &str,
    require_mutable: bool,
) -> Result<()> {
    let Some(e) = entry(name) else {
        return Err(Error::InvalidArgument(format!("unknown option {name:?}")));
    };
    if require_mutable && !e.mutable {
        return Err(Error::InvalidArgument(format!(
            "option {name:?} cannot be changed on an open DB (set it at open)"
        )));
    }
    (e.set)(opts, value).map_err(|expected| {
        Error::InvalidArgument(format!(
            "option {name:?}: invalid value {value:?}, expected {expected}"
        ))
    })
}

/// The `(name, value)` pairs of an option string (module doc), nested maps flattened.
pub(crate) fn split_pairs(s: &str) -> Result<Vec<(String, String)>> {
    if s.contains('\0') {
        return Err(Error::InvalidArgument("an options string must not contain NUL bytes".into()));
    }
    let mut out = Vec::new();
    split_into(s, "", &mut out)?;
    Ok(out)
}

fn split_into(s: &str, prefix: &str, out: &mut Vec<(String, String)>) -> Result<()> {
    let bad = |why: String| Err(Error::InvalidArgument(why));
    let mut rest = s.trim();
    while !rest.is_empty() {
        let Some(eq) = rest.find('=') else {
            return bad(format!("option {rest:?} has no '=' (expected name=value)"));
        };
        let name = rest[..eq].trim();
        if name.is_empty() || name.contains(';') {
            return bad(format!("malformed option {:?} (expected name=value)", &rest[..eq]));
        }
        let after = rest[eq + 1..].trim_start();
        let full = if prefix.is_empty() { name.to_string() } else { format!("{prefix}.{name}") };
        if let Some(inner) = after.strip_prefix('{') {
            let mut depth = 1usize;
            let mut end = None;
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(i);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let Some(end) = end else {
                return bad(format!("option {full:?}: '{{' without its '}}'"));
            };
            split_into(&inner[..end], &full, out)?;
            rest = inner[end + 1..].trim_start();
            rest = rest.strip_prefix(';').unwrap_or(rest).trim_start();
            continue;
        }
        let (value, next) = match after.find(';') {
            Some(i) => (&after[..i], &after[i + 1..]),
            None => (after, ""),
        };
        out.push((full, value.trim().to_string()));
        rest = next.trim_start();
    }
    Ok(())
}

/// `opts` with every option of `s` applied (all or nothing).
pub(crate) fn options_from_string(opts: &Options, s: &str) -> Result<Options> {
    let mut o = opts.clone();
    for (name, value) in split_pairs(s)? {
        apply_option(&mut o, &name, &value, false)?;
    }
    Ok(o)
}

impl Options {
    /// These options with the RocksDB option string `s` applied (`"use_fsync=true;
    /// write_buffer_size=64m"`; `options/parse.rs` has the grammar and the names): a new
    /// `Options`, this one unchanged. An unknown name or a bad value is `InvalidArgument`
    /// naming it; so is a NUL byte in `s`.
    pub fn get_options_from_string<S: AsRef<str>>(&self, s: S) -> Result<Options> {
        options_from_string(self, s.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value of the right form for `name`'s parser, found by trying candidates.
    fn good_value(name: &str) -> &'static str {
        for v in [
            "true",
            "4",
            "0.5",
            "kSnappyCompression",
            "kCompactionStyleLevel",
            "kPointInTimeRecovery",
            "kCompactionStopStyleTotalSize",
            "VectorRepFactory",
            "-1",
        ] {
            if apply_option(&mut Options::default(), name, v, false).is_ok() {
                return v;
            }
        }
        panic!("no candidate value parses for {name}");
    }

    #[test]
    fn every_name_in_the_table_parses_and_bad_values_name_the_option() {
        let mut seen = std::collections::HashSet::new();
        for e in OPTIONS {
            assert!(seen.insert(e.name), "{} listed twice", e.name);
            let _ = good_value(e.name);
            let err = apply_option(&mut Options::default(), e.name, "not a value", false)
                .unwrap_err()
                .to_string();
            assert!(err.contains(e.name) && err.contains("expected"), "{err}");
        }
    }

    #[test]
    fn strings_apply_and_round_trip_the_values() {
        let o = Options::default()
            .get_options_from_string(
                " use_fsync=true; write_buffer_size=8m;max_write_buffer_number = 3;\
                 compression=kZlibCompression;disable_auto_compactions=true;\
                 block_based_table_factory={block_size=16k;format_version=5};\
                 compaction_options_fifo={max_table_files_size=1g};ttl=60;\
                 enable_write_thread_adaptive_yield=true;write_thread_max_yield_usec=50;\
                 write_thread_slow_yield_usec=5",
            )
            .unwrap();
        assert!(o.enable_write_thread_adaptive_yield);
        assert_eq!((o.write_thread_max_yield_usec, o.write_thread_slow_yield_usec), (50, 5));
        assert!(o.get_use_fsync());
        assert_eq!(o.write_buffer_size, 8 << 20);
        assert_eq!(o.max_write_buffer_number, 3);
        assert_eq!(o.compression, CompressionType::Zlib);
        assert!(o.disable_auto_compactions);
        assert_eq!(o.block_size, 16 << 10);
        assert_eq!(o.accepted.table.format_version, 5);
        assert_eq!(o.compaction_options_fifo.max_table_files_size, 1 << 30);
        assert_eq!(o.ttl, 60);
        assert!(!o.vector_memtable);
        let v = Options::default().get_options_from_string("memtable_factory=VectorRepFactory");
        assert!(v.unwrap().vector_memtable);
        let mut m = Options::default();
        m.set_memtable_factory(crate::MemtableFactory::Vector);
        assert!(m.vector_memtable);
        m.set_memtable_factory(crate::MemtableFactory::HashLinkList { bucket_count: 8 });
        assert!(!m.vector_memtable, "the hash memtables are served by the skiplist");
        assert!(Options::default().get_options_from_string("").is_ok());
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let o = Options::default();
        let e = o.get_options_from_string("notarealoptionstring").unwrap_err().to_string();
        assert!(e.contains("notarealoptionstring"), "{e}");
        let e = o.get_options_from_string("no_such_option=1").unwrap_err().to_string();
        assert!(e.contains("unknown option") && e.contains("no_such_option"), "{e}");
        let e = o.get_options_from_string("use_fsync=maybe").unwrap_err().to_string();
        assert!(e.contains("use_fsync") && e.contains("boolean"), "{e}");
        let e = o.get_options_from_string("use_fsync=false\0").unwrap_err().to_string();
        assert!(e.contains("must not contain NUL"), "{e}");
        let e = o.get_options_from_string("block_based_table_factory={block_size=1").unwrap_err();
        assert!(e.to_string().contains("block_based_table_factory"), "{e}");
        // All or nothing: a later error leaves the original untouched (it is never changed).
        assert!(o.get_options_from_string("write_buffer_size=1m;bogus=2").is_err());
        assert_eq!(o.write_buffer_size, Options::default().write_buffer_size);
    }

    #[test]
    fn only_mutable_options_change_on_an_open_db() {
        let mut o = Options::default();
        apply_option(&mut o, "write_buffer_size", "1m", true).unwrap();
        assert_eq!(o.write_buffer_size, 1 << 20);
        let e = apply_option(&mut o, "num_levels", "3", true).unwrap_err().to_string();
        assert!(e.contains("num_levels") && e.contains("open DB"), "{e}");
    }

    #[test]
    fn suffixes_and_overflow() {
        assert_eq!(u64_of("2k"), Ok(2048));
        assert_eq!(u64_of("3T"), Ok(3 << 40));
        assert!(u64_of("99999999999t").is_err());
        assert!(u64_of("-1").is_err());
    }
}
