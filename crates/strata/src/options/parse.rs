//! RocksDB option strings: `"name=value;name2=value2"`, with RocksDB's option names (those of
//! its OPTIONS files), the one parser behind `Options::get_options_from_string`,
//! `Db::set_options` and the OPTIONS files (`db/options_file.rs`), which also write each
//! option through its entry here: every entry shows its value in a form it reads back.
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
use crate::sstable::{CompressionType, IndexType};
use crate::util::checksum::ChecksumType;
use crate::wal::WalRecoveryMode;

/// A setter: parses the value and writes it, or says what form was expected.
type Setter = fn(&mut Options, &str) -> std::result::Result<(), String>;

/// RocksDB's `compression_opts.level` for "the codec's default level".
const NO_LEVEL: i32 = 32767;

/// A getter: the value as an OPTIONS file writes it, in a form the setter reads back.
type Getter = fn(&Options) -> String;

/// Where an option is written in an OPTIONS file (`db/options_file.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// `[DBOptions]`: the whole DB's.
    Db,
    /// `[CFOptions "<family>"]`: a column family's.
    Family,
    /// `[TableOptions/BlockBasedTable "<family>"]`: a family's table settings, named here
    /// with the `block_based_table_factory.` prefix of option strings.
    Table,
}

/// One option name.
pub(crate) struct Entry {
    /// RocksDB's name.
    pub name: &'static str,
    /// Whether `Db::set_options` may change it on an open DB: RocksDB's mutable family
    /// options that Strata applies while open (or keeps, for hints). RocksDB's DB-wide
    /// mutable options (it changes them with `SetDBOptions`, which Strata lacks) and the
    /// compression settings (Strata builds a family's table settings at open) are not.
    pub mutable: bool,
    pub scope: Scope,
    set: Setter,
    /// `None` for an alias of another option, which OPTIONS files leave out.
    pub get: Option<Getter>,
}

/// A type an option holds: read from its text, and shown so that reading it back gives the
/// same value (an OPTIONS file's round trip).
trait OptionValue: Sized {
    fn parse(v: &str) -> std::result::Result<Self, String>;
    fn show(&self) -> String;
}

macro_rules! display_value {
    ($($t:ty => $parse:ident),* $(,)?) => {$(
        impl OptionValue for $t {
            fn parse(v: &str) -> std::result::Result<Self, String> {
                $parse(v)
            }
            fn show(&self) -> String {
                self.to_string()
            }
        }
    )*};
}

display_value!(bool => bool_of, u64 => u64_of, usize => usize_of, u32 => u32_of, i32 => i32_of,
    i64 => i64_of, f64 => f64_of);

/// An enum's options-file names, both ways.
macro_rules! named_value {
    ($t:ty, $expected:literal, {
        $($variant:path => $name:literal $(| $alias:literal)*),* $(,)?
    }) => {
        impl OptionValue for $t {
            fn parse(v: &str) -> std::result::Result<Self, String> {
                match v {
                    $($name $(| $alias)* => Ok($variant),)*
                    _ => Err($expected.into()),
                }
            }
            fn show(&self) -> String {
                match self {
                    $($variant => $name,)*
                }
                .to_string()
            }
        }
    };
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

named_value!(CompressionType, "a compression name (kNoCompression, kSnappyCompression, \
    kZlibCompression, kBZip2Compression, kLZ4Compression, kLZ4HCCompression or kZSTD)", {
    CompressionType::None => "kNoCompression" | "None" | "none",
    CompressionType::Snappy => "kSnappyCompression" | "Snappy" | "snappy",
    CompressionType::Zlib => "kZlibCompression" | "Zlib" | "zlib",
    CompressionType::Bz2 => "kBZip2Compression" | "Bz2" | "bzip2",
    CompressionType::Lz4 => "kLZ4Compression" | "Lz4" | "lz4",
    CompressionType::Lz4hc => "kLZ4HCCompression" | "Lz4hc" | "lz4hc",
    CompressionType::Zstd => "kZSTD" | "kZSTDNotFinalCompression" | "Zstd" | "zstd",
});

/// RocksDB's compression names (and Strata's type names).
pub(crate) fn compression_of(v: &str) -> std::result::Result<CompressionType, String> {
    CompressionType::parse(v)
}

/// A compression that may be unset (`bottommost_compression`): RocksDB writes the unset one
/// as `kDisableCompressionOption`.
impl OptionValue for Option<CompressionType> {
    fn parse(v: &str) -> std::result::Result<Self, String> {
        match v {
            "kDisableCompressionOption" => Ok(None),
            _ => compression_of(v).map(Some).map_err(|e| e + " or kDisableCompressionOption"),
        }
    }
    fn show(&self) -> String {
        self.as_ref().map_or_else(|| "kDisableCompressionOption".into(), CompressionType::show)
    }
}

/// RocksDB's `compression_per_level`: names separated by `:`.
impl OptionValue for Vec<CompressionType> {
    fn parse(v: &str) -> std::result::Result<Self, String> {
        compression_list_of(v)
    }
    fn show(&self) -> String {
        self.iter().map(CompressionType::show).collect::<Vec<_>>().join(":")
    }
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
/// RocksDB's file checksum generators: its crc32c one (`Options::file_checksums`) or none.
fn file_checksum_factory_of(v: &str) -> std::result::Result<bool, String> {
    match v {
        "FileChecksumGenCrc32cFactory" => Ok(true),
        "nullptr" | "" => Ok(false),
        _ => Err("FileChecksumGenCrc32cFactory or nullptr (the generators Strata has)".into()),
    }
}

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

named_value!(CompactionStyle, "kCompactionStyleLevel, kCompactionStyleUniversal, \
    kCompactionStyleFIFO or kCompactionStyleTiered (Strata's)", {
    CompactionStyle::Leveled => "kCompactionStyleLevel",
    CompactionStyle::Universal => "kCompactionStyleUniversal",
    CompactionStyle::Fifo => "kCompactionStyleFIFO",
    CompactionStyle::Tiered => "kCompactionStyleTiered",
});

named_value!(WalRecoveryMode, "kTolerateCorruptedTailRecords, kAbsoluteConsistency, \
    kPointInTimeRecovery or kSkipAnyCorruptedRecords", {
    WalRecoveryMode::TolerateCorruptedTailRecords => "kTolerateCorruptedTailRecords",
    WalRecoveryMode::AbsoluteConsistency => "kAbsoluteConsistency",
    WalRecoveryMode::PointInTime => "kPointInTimeRecovery",
    WalRecoveryMode::SkipAnyCorruptedRecords => "kSkipAnyCorruptedRecords",
});

named_value!(CompactionStopStyle, "kCompactionStopStyleSimilarSize or \
    kCompactionStopStyleTotalSize", {
    CompactionStopStyle::SimilarSize => "kCompactionStopStyleSimilarSize",
    CompactionStopStyle::TotalSize => "kCompactionStopStyleTotalSize",
});

named_value!(IndexType, "kBinarySearch or kTwoLevelIndexSearch", {
    IndexType::BinarySearch => "kBinarySearch",
    IndexType::TwoLevel => "kTwoLevelIndexSearch",
});

named_value!(ChecksumType, "kCRC32c or kXXH3", {
    ChecksumType::Crc32c => "kCRC32c",
    ChecksumType::Xxh3 => "kXXH3",
});

/// A table filter as RocksDB writes it: `bloomfilter:<bits per key>:<use block-based
/// builder>` (also `ribbonfilter:<bits>`, taken as a Bloom filter of as many bits), or
/// `nullptr` for none; the bits per key Strata keeps (0 for none). Fractional bits round to
/// the nearest whole bit.
fn filter_policy_of(v: &str) -> std::result::Result<u32, String> {
    let expected = || "nullptr, or bloomfilter:<bits per key>[:<true|false>]".to_string();
    if v.is_empty() || v == "nullptr" {
        return Ok(0);
    }
    let mut parts = v.split(':');
    let (Some("bloomfilter" | "ribbonfilter"), Some(bits)) = (parts.next(), parts.next()) else {
        return Err(expected());
    };
    if parts.next().is_some_and(|b| bool_of(b).is_err()) || parts.next().is_some() {
        return Err(expected());
    }
    let bits = f64_of(bits).map_err(|_| expected())?;
    if !(0.0..=1000.0).contains(&bits) {
        return Err(expected());
    }
    Ok(bits.round() as u32)
}

/// An entry: `scope`, `name`, mutable or not, then either the field it sets (its type's
/// [`OptionValue`] reads and shows it) or `set =` and `get =` functions.
macro_rules! opt {
    ($scope:ident, $name:literal, $mutable:expr, $($f:ident).+) => {
        Entry {
            name: $name,
            mutable: $mutable,
            scope: Scope::$scope,
            set: |o: &mut Options, s: &str| {
                o.$($f).+ = OptionValue::parse(s)?;
                Ok(())
            },
            get: Some(|o: &Options| OptionValue::show(&o.$($f).+)),
        }
    };
    ($scope:ident, $name:literal, $mutable:expr, set = $set:expr, get = $get:expr) => {
        Entry { name: $name, mutable: $mutable, scope: Scope::$scope, set: $set, get: $get }
    };
}

/// Every option name the parser knows, with RocksDB's names. `true` marks the options an open
/// DB may change (`Db::set_options`).
pub(crate) const OPTIONS: &[Entry] = &[
    // DB-wide.
    opt!(Db, "create_if_missing", false, create_if_missing),
    opt!(Db, "create_missing_column_families", false, create_missing_column_families),
    opt!(Db, "error_if_exists", false, error_if_exists),
    opt!(Db, "paranoid_checks", false, paranoid_checks),
    opt!(
        Db,
        "file_checksum_gen_factory",
        false,
        set = |o, s| {
            o.file_checksums = file_checksum_factory_of(s)?;
            Ok(())
        },
        get = Some(|o| {
            if o.file_checksums { "FileChecksumGenCrc32cFactory" } else { "nullptr" }.to_string()
        })
    ),
    opt!(Db, "use_fsync", false, accepted.use_fsync),
    opt!(Db, "max_open_files", false, max_open_files),
    opt!(Db, "max_background_jobs", false, max_background_jobs),
    // An alias of `max_background_jobs` (set to it plus one): not written to OPTIONS files.
    opt!(
        Db,
        "max_background_compactions",
        false,
        set = |o, s| {
            o.set_max_background_compactions(i32::parse(s)?);
            Ok(())
        },
        get = None
    ),
    opt!(Db, "max_background_flushes", false, accepted.max_background_flushes),
    opt!(Db, "max_subcompactions", false, max_subcompactions),
    opt!(Db, "db_write_buffer_size", false, db_write_buffer_size),
    opt!(Db, "delayed_write_rate", false, delayed_write_rate),
    opt!(Db, "max_total_wal_size", false, max_total_wal_size),
    opt!(Db, "stats_dump_period_sec", false, stats_dump_period_sec),
    opt!(Db, "stats_persist_period_sec", false, stats_persist_period_sec),
    opt!(Db, "stats_history_buffer_size", false, stats_history_buffer_size),
    opt!(Db, "bytes_per_sync", false, bytes_per_sync),
    opt!(Db, "wal_bytes_per_sync", false, wal_bytes_per_sync),
    opt!(Db, "compaction_readahead_size", false, compaction_readahead_size),
    opt!(Db, "writable_file_max_buffer_size", false, accepted.writable_file_max_buffer_size),
    opt!(
        Db,
        "delete_obsolete_files_period_micros",
        false,
        accepted.delete_obsolete_files_period_micros
    ),
    opt!(Db, "keep_log_file_num", false, keep_log_file_num),
    opt!(Db, "recycle_log_file_num", false, recycle_log_file_num),
    opt!(Db, "wal_recovery_mode", false, wal_recovery_mode),
    opt!(Db, "manual_wal_flush", false, manual_wal_flush),
    opt!(Db, "avoid_flush_during_recovery", false, avoid_flush_during_recovery),
    opt!(Db, "use_direct_reads", false, use_direct_reads),
    opt!(
        Db,
        "use_direct_io_for_flush_and_compaction",
        false,
        use_direct_io_for_flush_and_compaction
    ),
    opt!(Db, "advise_random_on_open", false, advise_random_on_open),
    opt!(Db, "enable_pipelined_write", false, enable_pipelined_write),
    opt!(Db, "unordered_write", false, unordered_write),
    opt!(Db, "allow_concurrent_memtable_write", false, allow_concurrent_memtable_write),
    opt!(Db, "max_write_batch_group_size_bytes", false, max_write_batch_group_size_bytes),
    opt!(Db, "enable_write_thread_adaptive_yield", false, enable_write_thread_adaptive_yield),
    opt!(Db, "write_thread_max_yield_usec", false, write_thread_max_yield_usec),
    opt!(Db, "write_thread_slow_yield_usec", false, write_thread_slow_yield_usec),
    opt!(Db, "use_adaptive_mutex", false, accepted.use_adaptive_mutex),
    opt!(Db, "allow_mmap_reads", false, allow_mmap_reads),
    opt!(Db, "allow_mmap_writes", false, accepted.allow_mmap_writes),
    opt!(Db, "is_fd_close_on_exec", false, accepted.is_fd_close_on_exec),
    opt!(Db, "max_manifest_file_size", false, accepted.max_manifest_file_size),
    opt!(Db, "manifest_preallocation_size", false, accepted.manifest_preallocation_size),
    opt!(Db, "table_cache_numshardbits", false, accepted.table_cache_num_shard_bits),
    opt!(Db, "max_file_opening_threads", false, accepted.max_file_opening_threads),
    opt!(Db, "max_log_file_size", false, accepted.max_log_file_size),
    opt!(Db, "log_file_time_to_roll", false, accepted.log_file_time_to_roll),
    opt!(Db, "skip_stats_update_on_db_open", false, accepted.skip_stats_update_on_db_open),
    opt!(Db, "dump_malloc_stats", false, accepted.dump_malloc_stats),
    opt!(Db, "atomic_flush", false, accepted.atomic_flush),
    opt!(Db, "avoid_unnecessary_blocking_io", false, accepted.avoid_unnecessary_blocking_io),
    opt!(
        Db,
        "track_and_verify_wals_in_manifest",
        false,
        accepted.track_and_verify_wals_in_manifest
    ),
    opt!(Db, "write_dbid_to_manifest", false, accepted.write_dbid_to_manifest),
    opt!(Db, "allow_ingest_behind", false, accepted.allow_ingest_behind),
    opt!(Db, "WAL_ttl_seconds", false, wal_ttl_seconds),
    opt!(Db, "WAL_size_limit_MB", false, wal_size_limit_mb),
    // Per column family.
    opt!(Family, "write_buffer_size", true, write_buffer_size),
    opt!(Family, "max_write_buffer_number", true, max_write_buffer_number),
    opt!(Family, "min_write_buffer_number_to_merge", false, min_write_buffer_number_to_merge),
    opt!(
        Family,
        "max_write_buffer_size_to_maintain",
        false,
        accepted.max_write_buffer_size_to_maintain
    ),
    opt!(
        Family,
        "memtable_factory",
        false,
        set = |o, s| {
            o.vector_memtable = memtable_factory_of(s)?;
            Ok(())
        },
        get = Some(|o| {
            if o.vector_memtable { "VectorRepFactory" } else { "SkipListFactory" }.to_string()
        })
    ),
    opt!(
        Family,
        "memtable_prefix_bloom_size_ratio",
        true,
        set = |o, s| {
            o.set_memtable_prefix_bloom_ratio(f64::parse(s)?);
            Ok(())
        },
        get = Some(|o| o.memtable_bloom_size_ratio.show())
    ),
    opt!(Family, "memtable_whole_key_filtering", true, accepted.memtable_whole_key_filtering),
    opt!(Family, "memtable_huge_page_size", true, accepted.memtable_huge_page_size),
    opt!(Family, "arena_block_size", true, accepted.arena_block_size),
    opt!(Family, "max_successive_merges", true, accepted.max_successive_merges),
    opt!(Family, "inplace_update_support", false, accepted.inplace_update_support),
    opt!(Family, "inplace_update_num_locks", true, accepted.inplace_update_locks),
    opt!(Family, "bloom_locality", false, accepted.bloom_locality),
    opt!(Family, "experimental_mempurge_threshold", true, accepted.experimental_mempurge_threshold),
    opt!(Family, "num_levels", false, num_levels),
    opt!(Family, "disable_auto_compactions", true, disable_auto_compactions),
    opt!(Family, "level0_file_num_compaction_trigger", true, level0_file_num_compaction_trigger),
    opt!(Family, "level0_slowdown_writes_trigger", true, level0_slowdown_writes_trigger),
    opt!(Family, "level0_stop_writes_trigger", true, level0_stop_writes_trigger),
    opt!(Family, "target_file_size_base", true, target_file_size_base),
    opt!(Family, "target_file_size_multiplier", true, target_file_size_multiplier),
    opt!(Family, "max_bytes_for_level_base", true, max_bytes_for_level_base),
    opt!(Family, "max_bytes_for_level_multiplier", true, max_bytes_for_level_multiplier),
    opt!(
        Family,
        "level_compaction_dynamic_level_bytes",
        false,
        level_compaction_dynamic_level_bytes
    ),
    opt!(Family, "max_compaction_bytes", true, max_compaction_bytes),
    opt!(Family, "soft_pending_compaction_bytes_limit", true, soft_pending_compaction_bytes_limit),
    opt!(Family, "hard_pending_compaction_bytes_limit", true, hard_pending_compaction_bytes_limit),
    opt!(Family, "compaction_style", false, compaction_style),
    opt!(Family, "compression", false, compression),
    opt!(Family, "bottommost_compression", false, bottommost_compression),
    opt!(Family, "compression_per_level", false, compression_per_level),
    opt!(Family, "ttl", true, ttl),
    opt!(Family, "periodic_compaction_seconds", true, accepted.periodic_compaction_seconds),
    opt!(Family, "optimize_filters_for_hits", false, accepted.optimize_filters_for_hits),
    opt!(Family, "report_bg_io_stats", true, accepted.report_bg_io_stats),
    opt!(Family, "paranoid_file_checks", true, accepted.paranoid_file_checks),
    opt!(
        Family,
        "max_sequential_skip_in_iterations",
        true,
        accepted.max_sequential_skip_in_iterations
    ),
    opt!(Family, "enable_blob_files", true, blob.enable_blob_files),
    opt!(Family, "min_blob_size", true, blob.min_blob_size),
    opt!(Family, "blob_file_size", true, blob.blob_file_size),
    opt!(Family, "write_blobs_at_commit", false, blob.write_blobs_at_commit),
    // Unset is no compression: written as kNoCompression.
    opt!(
        Family,
        "blob_compression_type",
        true,
        set = |o, s| {
            o.blob.blob_compression_type = Some(compression_of(s)?);
            Ok(())
        },
        get = Some(|o| o.blob.blob_compression_type.unwrap_or(CompressionType::None).show())
    ),
    opt!(Family, "enable_blob_garbage_collection", true, blob.enable_blob_gc),
    opt!(Family, "blob_garbage_collection_age_cutoff", true, blob.blob_gc_age_cutoff),
    opt!(Family, "blob_garbage_collection_force_threshold", true, blob.blob_gc_force_threshold),
    opt!(Family, "blob_compaction_readahead_size", true, blob.blob_compaction_readahead_size),
    // Nested: compression settings (RocksDB's `compression_opts` and the bottommost ones).
    opt!(Family, "compression_opts.window_bits", false, accepted.compression_opts.window_bits),
    // A level other than RocksDB's "codec default" sentinel is the Zstandard level used.
    opt!(
        Family,
        "compression_opts.level",
        false,
        set = |o, s| {
            let level = i32::parse(s)?;
            o.accepted.compression_opts.level = level;
            if level != NO_LEVEL {
                o.zstd_level = level;
            }
            Ok(())
        },
        get = Some(|o| match o.accepted.compression_opts.level {
            NO_LEVEL if o.zstd_level != Options::default().zstd_level => o.zstd_level.show(),
            level => level.show(),
        })
    ),
    opt!(Family, "compression_opts.strategy", false, accepted.compression_opts.strategy),
    opt!(
        Family,
        "compression_opts.max_dict_bytes",
        false,
        accepted.compression_opts.max_dict_bytes
    ),
    opt!(
        Family,
        "compression_opts.zstd_max_train_bytes",
        false,
        accepted.compression_opts.zstd_max_train_bytes
    ),
    opt!(Family, "compression_opts.enabled", false, accepted.compression_opts.enabled),
    opt!(
        Family,
        "bottommost_compression_opts.window_bits",
        false,
        accepted.bottommost_compression_opts.window_bits
    ),
    opt!(
        Family,
        "bottommost_compression_opts.level",
        false,
        accepted.bottommost_compression_opts.level
    ),
    opt!(
        Family,
        "bottommost_compression_opts.strategy",
        false,
        accepted.bottommost_compression_opts.strategy
    ),
    opt!(
        Family,
        "bottommost_compression_opts.max_dict_bytes",
        false,
        accepted.bottommost_compression_opts.max_dict_bytes
    ),
    opt!(
        Family,
        "bottommost_compression_opts.zstd_max_train_bytes",
        false,
        accepted.bottommost_compression_opts.zstd_max_train_bytes
    ),
    opt!(
        Family,
        "bottommost_compression_opts.enabled",
        false,
        accepted.bottommost_compression_opts.enabled
    ),
    // Strata's own style (`kCompactionStyleTiered`) and its settings.
    opt!(Family, "compaction_options_tiered.fan_in", false, compaction_options_tiered.fan_in),
    opt!(
        Family,
        "compaction_options_tiered.max_sorted_runs",
        false,
        compaction_options_tiered.max_sorted_runs
    ),
    opt!(
        Family,
        "compaction_options_tiered.max_size_amplification_percent",
        false,
        compaction_options_tiered.max_size_amplification_percent
    ),
    opt!(
        Family,
        "compaction_options_tiered.skewed_filter_bits",
        false,
        compaction_options_tiered.skewed_filter_bits
    ),
    // Nested: compaction style options.
    opt!(
        Family,
        "compaction_options_fifo.max_table_files_size",
        true,
        compaction_options_fifo.max_table_files_size
    ),
    opt!(
        Family,
        "compaction_options_fifo.allow_compaction",
        true,
        compaction_options_fifo.allow_compaction
    ),
    opt!(
        Family,
        "compaction_options_universal.size_ratio",
        true,
        compaction_options_universal.size_ratio
    ),
    opt!(
        Family,
        "compaction_options_universal.min_merge_width",
        true,
        compaction_options_universal.min_merge_width
    ),
    opt!(
        Family,
        "compaction_options_universal.max_merge_width",
        true,
        compaction_options_universal.max_merge_width
    ),
    opt!(
        Family,
        "compaction_options_universal.max_size_amplification_percent",
        true,
        compaction_options_universal.max_size_amplification_percent
    ),
    opt!(
        Family,
        "compaction_options_universal.compression_size_percent",
        true,
        compaction_options_universal.compression_size_percent
    ),
    opt!(
        Family,
        "compaction_options_universal.stop_style",
        true,
        compaction_options_universal.stop_style
    ),
    opt!(
        Family,
        "compaction_options_universal.allow_trivial_move",
        true,
        compaction_options_universal.allow_trivial_move
    ),
    // Nested: the block-based table.
    opt!(Table, "block_based_table_factory.block_size", false, block_size),
    opt!(Table, "block_based_table_factory.block_size_deviation", false, block_size_deviation),
    opt!(Table, "block_based_table_factory.block_restart_interval", false, block_restart_interval),
    opt!(
        Table,
        "block_based_table_factory.index_block_restart_interval",
        false,
        index_block_restart_interval
    ),
    opt!(Table, "block_based_table_factory.metadata_block_size", false, metadata_block_size),
    opt!(Table, "block_based_table_factory.partition_filters", false, partition_filters),
    opt!(Table, "block_based_table_factory.block_align", false, block_align),
    opt!(
        Table,
        "block_based_table_factory.cache_index_and_filter_blocks",
        false,
        cache_index_and_filter_blocks
    ),
    opt!(
        Table,
        "block_based_table_factory.cache_index_and_filter_blocks_with_high_priority",
        false,
        cache_index_and_filter_blocks_with_high_priority
    ),
    opt!(
        Table,
        "block_based_table_factory.pin_l0_filter_and_index_blocks_in_cache",
        false,
        pin_l0_filter_and_index_blocks_in_cache
    ),
    opt!(
        Table,
        "block_based_table_factory.pin_top_level_index_and_filter",
        false,
        pin_top_level_index_and_filter
    ),
    opt!(Table, "block_based_table_factory.format_version", false, accepted.table.format_version),
    opt!(
        Table,
        "block_based_table_factory.whole_key_filtering",
        false,
        accepted.table.whole_key_filtering
    ),
    opt!(
        Table,
        "block_based_table_factory.data_block_hash_table_util_ratio",
        false,
        accepted.table.data_block_hash_ratio
    ),
    opt!(
        Table,
        "block_based_table_factory.optimize_filters_for_memory",
        false,
        accepted.table.optimize_filters_for_memory
    ),
    opt!(
        Table,
        "block_based_table_factory.filter_policy",
        false,
        set = |o, s| {
            o.bloom_bits_per_key = filter_policy_of(s)?;
            Ok(())
        },
        get = Some(|o| match o.bloom_bits_per_key {
            0 => "nullptr".to_string(),
            n => format!("bloomfilter:{n}:false"),
        })
    ),
    opt!(Table, "block_based_table_factory.index_type", false, index_type),
    opt!(Table, "block_based_table_factory.checksum", false, checksum),
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
            "bloomfilter:10:false",
            "kBinarySearch",
            "kCRC32c",
            "FileChecksumGenCrc32cFactory",
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
