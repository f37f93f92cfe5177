//! Stage 1 of the command line: gflags-style parsing into raw, typed [`Flags`].
//!
//! Accepted syntax (as gflags): `--name=value`, `-name=value`, `--name value` (non-boolean
//! flags), `--name` (boolean true), `--noname` (boolean false), booleans as
//! `true|false|1|0|yes|no|t|f|y|n`, `--` ends the flags. `--undefok=a,b` lists names whose
//! absence is not an error. Stage 2 ([`crate::config`]) validates the values.
//!
//! Every flag has a [`Class`]: whether the tool itself honours it, or the engine must, or it is
//! a RocksDB tuning knob that other engines cannot apply (accepted with a printed note).

use std::collections::BTreeSet;
use std::fmt;
use std::fmt::Write as _;

/// How a flag is honoured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Workload and reporting: implemented by the tool for every engine.
    Tool,
    /// Engine configuration: each engine lists the ones it honours; a non-default value of
    /// any other is rejected (never silently ignored).
    Engine,
    /// A RocksDB implementation knob (cache sharding, memtable representation, ...) that does not
    /// change what is measured; an engine without it accepts the flag and prints a note.
    Hint,
    /// A db_bench workload flag strata-bench does not implement yet: a non-default value is
    /// refused for every engine (never silently ignored).
    Unsupported,
}

/// The type of a flag's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Int,
    Uint,
    Double,
    Str,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Bool => "bool",
            Kind::Int => "int64",
            Kind::Uint => "uint64",
            Kind::Double => "double",
            Kind::Str => "string",
        })
    }
}

/// Static description of one flag.
#[derive(Clone, Copy, Debug)]
pub struct FlagInfo {
    pub name: &'static str,
    pub kind: Kind,
    pub class: Class,
    pub default: &'static str,
    pub help: &'static str,
}

/// A value type a flag can have.
pub trait FlagValue: Sized {
    const KIND: Kind;
    fn parse_flag(name: &str, text: &str) -> Result<Self, String>;
}

impl FlagValue for bool {
    const KIND: Kind = Kind::Bool;
    fn parse_flag(name: &str, text: &str) -> Result<Self, String> {
        match text.to_ascii_lowercase().as_str() {
            "true" | "t" | "yes" | "y" | "1" => Ok(true),
            "false" | "f" | "no" | "n" | "0" => Ok(false),
            _ => Err(format!("illegal value '{text}' specified for bool flag '{name}'")),
        }
    }
}

fn split_radix(text: &str) -> (bool, &str, u32) {
    let (neg, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    match rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
        Some(hex) => (neg, hex, 16),
        None => (neg, rest, 10),
    }
}

impl FlagValue for i64 {
    const KIND: Kind = Kind::Int;
    fn parse_flag(name: &str, text: &str) -> Result<Self, String> {
        let (neg, digits, radix) = split_radix(text.trim());
        let v = i128::from_str_radix(digits, radix)
            .ok()
            .map(|v| if neg { -v } else { v })
            .and_then(|v| i64::try_from(v).ok());
        v.ok_or_else(|| format!("illegal value '{text}' specified for int64 flag '{name}'"))
    }
}

impl FlagValue for u64 {
    const KIND: Kind = Kind::Uint;
    fn parse_flag(name: &str, text: &str) -> Result<Self, String> {
        let (neg, digits, radix) = split_radix(text.trim());
        let v = if neg { None } else { u64::from_str_radix(digits, radix).ok() };
        v.ok_or_else(|| format!("illegal value '{text}' specified for uint64 flag '{name}'"))
    }
}

impl FlagValue for f64 {
    const KIND: Kind = Kind::Double;
    fn parse_flag(name: &str, text: &str) -> Result<Self, String> {
        match text.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(format!("illegal value '{text}' specified for double flag '{name}'")),
        }
    }
}

impl FlagValue for String {
    const KIND: Kind = Kind::Str;
    fn parse_flag(_name: &str, text: &str) -> Result<Self, String> {
        Ok(text.to_string())
    }
}

macro_rules! define_flags {
    ($( $name:ident : $ty:ty = $default:expr, $class:ident, $help:literal; )*) => {
        /// Every flag, typed, with db_bench's defaults (RocksDB v11 where versions differ).
        #[derive(Clone, Debug, PartialEq)]
        #[allow(non_snake_case)] // db_bench's `wal_size_limit_MB`
        pub struct Flags {
            $( #[doc = $help] pub $name: $ty, )*
        }

        impl Default for Flags {
            fn default() -> Self {
                Flags { $( $name: <$ty>::from($default), )* }
            }
        }

        /// The flag table, in definition order.
        pub const FLAG_TABLE: &[FlagInfo] = &[
            $( FlagInfo {
                name: stringify!($name),
                kind: <$ty as FlagValue>::KIND,
                class: Class::$class,
                default: stringify!($default),
                help: $help,
            }, )*
        ];

        impl Flags {
            /// Sets flag `name` from `text`; `Ok(false)` when there is no such flag.
            fn set_text(&mut self, name: &str, text: &str) -> Result<bool, String> {
                match name {
                    $( stringify!($name) => {
                        self.$name = <$ty as FlagValue>::parse_flag(name, text)?;
                        Ok(true)
                    } )*
                    _ => Ok(false),
                }
            }

            /// Whether flag `name` holds its default value (compared exactly: a flag equals its
            /// default only when given that very value).
            #[allow(clippy::float_cmp)]
            pub fn is_default(&self, name: &str) -> bool {
                let d = Flags::default();
                match name {
                    $( stringify!($name) => self.$name == d.$name, )*
                    _ => true,
                }
            }

            /// The current value of flag `name`, as text.
            pub fn value_text(&self, name: &str) -> Option<String> {
                match name {
                    $( stringify!($name) => Some(format!("{}", self.$name)), )*
                    _ => None,
                }
            }
        }
    };
}

const DEFAULT_BENCHMARKS: &str = "fillseq,fillrandom,overwrite,readrandom,readseq,readreverse,\
seekrandom,readrandomwriterandom,updaterandom,deleteseq,fillrandom,deleterandom,crc32c,xxh3,\
compress,uncompress,stats";

define_flags! {
    // ---- workload / sizing ----
    benchmarks: String = DEFAULT_BENCHMARKS, Tool, "Comma-separated list of benchmarks; name[X<n>-W<m>] repeats n times after m warm-up runs";
    engine: String = "strata", Tool, "Engine under test: strata, rocksdb (feature `rocksdb`), sqlite (feature `sqlite`), leveldb, kyoto, fjall, redb (features of the same names), memory (in-process BTreeMap, for tests)";
    num: i64 = 1000000i64, Tool, "Number of keys: key space and default operation count";
    reads: i64 = -1i64, Tool, "Reads per thread (-1: --num)";
    writes: i64 = -1i64, Tool, "Writes per thread (-1: --num)";
    deletes: i64 = -1i64, Tool, "Deletes per thread (-1: --num)";
    merge_keys: i64 = -1i64, Tool, "Key space of mergerandom / readrandommergerandom (-1: --num)";
    numdistinct: i64 = 1000i64, Tool, "Distinct keys of randomwithverify and randomreplacekeys";
    deletepercent: i64 = 2i64, Tool, "randomwithverify: percent of deletes (the rest of --readwritepercent's complement are puts)";
    stddev: f64 = 2000.0f64, Tool, "randomreplacekeys: standard deviation of the normal distribution keys are picked by";
    use_single_deletes: bool = true, Tool, "randomreplacekeys: SingleDelete instead of Delete (an engine without it deletes)";
    threads: i64 = 1i64, Tool, "Worker threads; each does the full per-thread count";
    duration: i64 = 0i64, Tool, "Seconds to run (0: count-driven); also bounds crc32c/xxh3/compress/uncompress here";
    ops_between_duration_checks: i64 = 1000i64, Tool, "Operations between two checks of --duration";
    key_size: i64 = 16i64, Tool, "Key size in bytes";
    value_size: i64 = 100i64, Tool, "Value size in bytes (fixed distribution)";
    value_size_distribution_type: String = "fixed", Tool, "fixed, uniform or normal";
    value_size_min: i64 = 100i64, Tool, "Minimum value size of the uniform/normal distributions";
    value_size_max: i64 = 102400i64, Tool, "Maximum value size of the uniform/normal distributions";
    compression_ratio: f64 = 0.5f64, Tool, "Fraction of a value that is random (the rest repeats it)";
    same_value_percentage: i64 = 0i64, Tool, "Percentage of values that are the same bytes";
    batch_size: i64 = 1i64, Tool, "Keys per write batch / per MultiGet";
    seed: u64 = 0u64, Tool, "Random seed base (0: the current time in microseconds)";
    seek_nexts: i64 = 0i64, Tool, "Next()/Prev() calls after each seek";
    reverse_iterator: bool = false, Tool, "seekrandom scans with Prev() instead of Next()";
    max_scan_distance: i64 = 0i64, Tool, "seekrandom: iterator bound at the seek key +/- this many keys (0: none)";
    use_tailing_iterator: bool = false, Engine, "seekrandom: one tailing iterator per thread";
    readwritepercent: i64 = 90i64, Tool, "readrandomwriterandom: percent of reads";
    mergereadpercent: i64 = 70i64, Tool, "readrandommergerandom: percent of merges";
    read_random_exp_range: f64 = 0.0f64, Tool, "Exponential skew of random read keys (0: uniform)";
    mix_get_ratio: f64 = 1.0f64, Tool, "mixgraph: share of gets";
    mix_put_ratio: f64 = 0.0f64, Tool, "mixgraph: share of puts";
    mix_seek_ratio: f64 = 0.0f64, Tool, "mixgraph: share of seeks (each a new iterator and a scan)";
    mix_max_scan_len: i64 = 10000i64, Tool, "mixgraph: scan lengths are taken modulo this";
    mix_max_value_size: i64 = 1024i64, Tool, "mixgraph: value sizes above this (at most 1 MiB) are taken modulo it";
    mix_accesses: i64 = -1i64, Tool, "Accepted as db_bench accepts it: mixgraph runs --reads operations (or --duration), not this";
    sine_mix_rate: bool = false, Tool, "mixgraph: operations per second follow --sine_a * sin(--sine_b * t + --sine_c) + --sine_d";
    sine_mix_rate_interval_milliseconds: u64 = 10000u64, Tool, "mixgraph with --sine_mix_rate: how often the rate follows the sine";
    sine_mix_rate_noise: f64 = 0.0f64, Tool, "mixgraph with --sine_mix_rate: noise on the rate, up to this fraction of --sine_a / 2 either way";
    sine_a: f64 = 1.0f64, Tool, "A of the sine rate A sin(B t + C) + D";
    sine_b: f64 = 1.0f64, Tool, "B of the sine rate A sin(B t + C) + D";
    sine_c: f64 = 0.0f64, Tool, "C of the sine rate A sin(B t + C) + D";
    sine_d: f64 = 1.0f64, Tool, "D of the sine rate A sin(B t + C) + D";
    keyrange_dist_a: f64 = 0.0f64, Tool, "mixgraph: a of the key ranges' hotness a e^(b x) + c e^(d x) (all four 0: no key ranges)";
    keyrange_dist_b: f64 = 0.0f64, Tool, "mixgraph: b of the key ranges' hotness a e^(b x) + c e^(d x)";
    keyrange_dist_c: f64 = 0.0f64, Tool, "mixgraph: c of the key ranges' hotness a e^(b x) + c e^(d x)";
    keyrange_dist_d: f64 = 0.0f64, Tool, "mixgraph: d of the key ranges' hotness a e^(b x) + c e^(d x)";
    keyrange_num: i64 = 1i64, Tool, "mixgraph: key ranges of equal size the key space is split into";
    key_dist_a: f64 = 0.0f64, Tool, "mixgraph: a of the keys' power model u = a x^b (0: uniform keys)";
    key_dist_b: f64 = 0.0f64, Tool, "mixgraph: b of the keys' power model u = a x^b (0: uniform keys)";
    value_theta: f64 = 0.0f64, Tool, "mixgraph: theta of the value sizes' generalized Pareto distribution";
    value_k: f64 = 0.2615f64, Tool, "mixgraph: k of the value sizes' generalized Pareto distribution";
    value_sigma: f64 = 25.45f64, Tool, "mixgraph: sigma of the value sizes' generalized Pareto distribution";
    iter_theta: f64 = 0.0f64, Tool, "mixgraph: theta of the scan lengths' generalized Pareto distribution";
    iter_k: f64 = 2.517f64, Tool, "mixgraph: k of the scan lengths' generalized Pareto distribution";
    iter_sigma: f64 = 14.236f64, Tool, "mixgraph: sigma of the scan lengths' generalized Pareto distribution";
    multiread_stride: i64 = 0i64, Tool, "multireadrandom: keys of a batch are this far apart (0: random)";
    multiread_batched: bool = false, Hint, "multireadrandom: use the batched MultiGet API";
    bgwriter_num: i64 = 0i64, Tool, "Key space of the background writer (0: --num)";
    finish_after_writes: bool = false, Tool, "The background writer stops only after --writes writes";
    benchmark_write_rate_limit: u64 = 0u64, Tool, "Write rate limit in bytes/second (0: none)";
    benchmark_read_rate_limit: u64 = 0u64, Tool, "Read rate limit in operations/second (0: none)";
    fio_baseline_iops: f64 = 0.0f64, Tool, "Read IOPS of fio on the DB's device at this thread count (the io_eff denominator; 0: none)";
    prefix_size: i64 = 0i64, Engine, "Fixed prefix extractor length (0: none)";
    num_multi_db: i64 = 1i64, Tool, "DBs to run on (db_bench's <db>/<i>); strata-bench runs on one, values above 1 are refused";
    num_column_families: i64 = 1i64, Engine, "Column families the keys are spread over (key number modulo N; family 0 is default, then column_family_name_000001..)";
    keys_per_prefix: i64 = 0i64, Tool, "Keys that share one prefix (0: prefixes not used in keys)";
    seek_missing_prefix: bool = false, Tool, "Seek keys get byte 8 set to '1' (needs --prefix_size > 8)";
    use_existing_db: bool = false, Tool, "Keep the DB; fresh-DB benchmarks are skipped";
    transaction_db: bool = false, Engine, "Open a pessimistic transaction DB (randomtransaction; the DB's own writes lock their keys)";
    optimistic_transaction_db: bool = false, Engine, "Open an optimistic transaction DB (randomtransaction)";
    transaction_lock_timeout: i64 = 100i64, Engine, "randomtransaction with --transaction_db: milliseconds a transaction waits for a lock";
    transaction_set_snapshot: bool = false, Tool, "randomtransaction: transactions begin with a snapshot (with --transaction_db they always read at one, as db_bench's)";
    transaction_sets: i64 = 2i64, Tool, "randomtransaction: key sets each transaction increments one key of (1..9999)";
    use_existing_keys: bool = false, Tool, "Read the DB's keys when it is opened and use them as the key space: --num becomes their count (needs --use_existing_db)";
    readonly: bool = false, Engine, "Open the DB read-only (implies --use_existing_db)";
    db: String = "", Tool, "DB directory (default: $TEST_TMPDIR/dbbench or <tmp>/strata-bench-<uid>/dbbench)";
    wal_dir: String = "", Engine, "WAL directory (empty: inside --db)";
    backup_dir: String = "", Tool, "backup: the backup directory (its earlier backups are deleted first); restore: the one restored from";
    restore_dir: String = "", Tool, "restore: the directory the newest backup of --backup_dir is restored into (its DB, if any, replaced)";
    backup_rate_limit: u64 = 0u64, Tool, "backup: bytes/second (0: none; the engines' backup APIs here take no rate limiter, so others are refused)";
    restore_rate_limit: u64 = 0u64, Tool, "restore: bytes/second (0: none; the engines' backup APIs here take no rate limiter, so others are refused)";
    // ---- reporting ----
    histogram: bool = false, Tool, "Print per-operation latency histograms";
    statistics: bool = false, Tool, "Print engine statistics at exit (STATISTICS:)";
    stats_level: i64 = 3i64, Hint, "RocksDB statistics level";
    stats_interval: i64 = 0i64, Tool, "Per-thread progress line every N operations (0: none)";
    stats_interval_seconds: i64 = 0i64, Tool, "Progress lines every N seconds (sets --stats_interval=1000)";
    stats_per_interval: i64 = 0i64, Tool, "With progress lines, thread 0 also dumps the engine stats";
    report_interval_seconds: i64 = 0i64, Tool, "Write throughput every N seconds to --report_file (0: off)";
    report_file: String = "report.csv", Tool, "CSV file of --report_interval_seconds";
    slow_usecs: i64 = 1000000i64, Tool, "With --histogram, report operations slower than this on stderr";
    progress_reports: bool = true, Tool, "Show progress on stderr (a progress bar when stderr is a terminal)";
    perf_level: i64 = 1i64, Engine, "RocksDB PerfContext level (1: disabled)";
    confidence_interval_only: bool = false, Tool, "With repeats, print only the confidence interval lines";
    report_file_operations: bool = false, Hint, "RocksDB file operation counters";
    report_open_timing: bool = false, Tool, "Print how long opening the DB took";
    thread_status_per_interval: i64 = 0i64, Hint, "RocksDB thread status dumps";
    print_malloc_stats: bool = false, Hint, "RocksDB malloc statistics";
    compaction_measure_io_stats: bool = false, Hint, "RocksDB: time compaction I/O in the compaction stats";
    // ---- engine configuration ----
    cache_size: i64 = 33554432i64, Engine, "Block cache capacity in bytes (<= 0: no block cache)";
    cache_type: String = "hyper_clock_cache", Hint, "RocksDB block cache implementation";
    cache_numshardbits: i64 = -1i64, Hint, "RocksDB block cache shard bits";
    cache_high_pri_pool_ratio: f64 = 0.0f64, Hint, "RocksDB LRU high-priority pool ratio";
    cache_low_pri_pool_ratio: f64 = 0.0f64, Hint, "RocksDB LRU low-priority pool ratio";
    block_cache_admission: String = "second_miss", Engine, "Strata: data blocks a full block cache takes in (second_miss: missed twice within its window; always: every one, as RocksDB)";
    cache_index_and_filter_blocks: bool = false, Engine, "Index and filter blocks in the block cache (charged)";
    pin_l0_filter_and_index_blocks_in_cache: bool = false, Engine, "Pin L0 index/filter blocks in the block cache";
    pin_top_level_index_and_filter: bool = true, Engine, "Pin the top level of a partitioned index/filter";
    partition_index_and_filters: bool = false, Engine, "Partitioned index and filters (two-level index)";
    partition_index: bool = false, Engine, "Partitioned index (two-level index), full filters";
    index_type: i64 = 0i64, Engine, "Index type: 0 binary search, 2 two-level (partitioned)";
    metadata_block_size: i64 = 4096i64, Engine, "Target size of index/filter partitions";
    block_align: bool = false, Engine, "Data blocks never straddle a block_size boundary";
    row_cache_size: i64 = 0i64, Engine, "Row cache capacity in bytes";
    compressed_cache_size: i64 = -1i64, Engine, "Compressed block cache capacity";
    bloom_bits: i64 = -1i64, Engine, "Bloom filter bits per key (< 0: table default = none, 0: none)";
    use_ribbon_filter: bool = false, Engine, "Ribbon instead of Bloom filter";
    whole_key_filtering: bool = true, Engine, "Filter on whole keys";
    block_size: i64 = 4096i64, Engine, "Data block size in bytes (also the crc32c/compress input size)";
    block_restart_interval: i64 = 16i64, Engine, "Keys between restart points in a data block";
    index_block_restart_interval: i64 = 0i64, Engine, "Keys between restart points in an index block (0: the engine's default: RocksDB 1, Strata 8)";
    format_version: i64 = 7i64, Hint, "RocksDB table format version";
    compression_type: String = "snappy", Engine, "none, snappy, zlib, bzip2, lz4, lz4hc, xpress, zstd; lzo, lzma (Kyoto Cabinet only)";
    compression_level: i64 = 32767i64, Engine, "Compression level (32767: library default)";
    compression_max_dict_bytes: i64 = 0i64, Engine, "Compression dictionary size";
    compression_parallel_threads: i64 = 1i64, Engine, "Threads compressing each table's data blocks as it is written (1: on the flush or compaction thread)";
    min_level_to_compress: i64 = -1i64, Engine, "Levels below this are not compressed (-1: all compressed)";
    write_buffer_size: i64 = 67108864i64, Engine, "Memtable size in bytes";
    max_write_buffer_number: i64 = 2i64, Engine, "Memtables (active + immutable) before writes stall";
    min_write_buffer_number_to_merge: i64 = 1i64, Engine, "Memtables merged into one flush";
    db_write_buffer_size: i64 = 0i64, Engine, "Memtable budget over all column families (0: none); with it or --cost_write_buffer_to_cache, a write buffer manager charged to the block cache";
    cost_write_buffer_to_cache: bool = false, Engine, "Charge memtable memory to the block cache (a write buffer manager of --db_write_buffer_size bytes)";
    memtable_bloom_size_ratio: f64 = -1.0f64, Engine, "Memtable filter bits as a fraction of the write buffer, at most 0.25 (negative: the engine's default: RocksDB 0, none; Strata 0.01, whole keys)";
    memtable_whole_key_filtering: bool = false, Engine, "The memtable filter holds whole keys (else prefixes, with --prefix_size); Strata's memtable filter holds whole keys only";
    memtablerep: String = "skip_list", Hint, "RocksDB memtable representation";
    allow_concurrent_memtable_write: bool = true, Engine, "Group members insert their own (large) batches into the memtable in parallel";
    enable_pipelined_write: bool = true, Engine, "The next write group's WAL write overlaps this group's memtable insert";
    unordered_write: bool = false, Engine, "Publish a group once it is in the WAL; writers insert unordered (weaker snapshots)";
    max_write_batch_group_size_bytes: u64 = 1048576u64, Engine, "The most bytes of batches one write group takes";
    enable_write_thread_adaptive_yield: String = String::new(), Engine, "A writer waiting for its group spins and yields its CPU before it sleeps, while that keeps paying: true or false (empty: the engine's default: RocksDB true, Strata false)";
    write_thread_max_yield_usec: u64 = 100u64, Engine, "The longest a waiting writer yields before it sleeps (microseconds)";
    write_thread_slow_yield_usec: u64 = 3u64, Engine, "A yield this long or longer is slow; after three, a waiting writer sleeps (microseconds)";
    wal_zeros_ahead: bool = true, Engine, "Strata only: new WAL files are zero-filled ahead of their records, so a synced write changes no file size";
    wal_mmap_writes: bool = true, Engine, "Strata only: records reach a WAL written with zeros ahead through a shared mapping, not a write call per group";
    max_background_jobs: i64 = 2i64, Engine, "Background flush and compaction threads";
    max_background_compactions: i64 = -1i64, Engine, "Background compaction threads (-1: from max_background_jobs)";
    max_background_flushes: i64 = -1i64, Engine, "Background flush threads (-1: from max_background_jobs)";
    subcompactions: i64 = 1i64, Engine, "Threads of one compaction";
    trim_heap_after_compaction: bool = true, Engine, "Strata only: after each compaction, hand the C allocator's free pages back to the OS (glibc malloc_trim)";
    level0_compaction_batching: bool = true, Engine, "Strata only: under write pressure an L0 compaction waits for the files that would arrive while it runs (leveled style)";
    compaction_style: i64 = 0i64, Engine, "0 level, 1 universal, 2 FIFO, 3 none, 4 tiered (Strata only)";
    compaction_pri: i64 = 3i64, Engine, "Compaction file picking priority (3: min overlapping ratio)";
    num_levels: i64 = 7i64, Engine, "Number of LSM levels";
    target_file_size_base: i64 = 67108864i64, Engine, "Target table file size at level 1";
    target_file_size_multiplier: i64 = 1i64, Engine, "Target file size growth per level";
    max_compaction_bytes: u64 = 0u64, Engine, "Bound on one compaction's bytes (0: 25 x target_file_size_base)";
    max_bytes_for_level_base: u64 = 268435456u64, Engine, "Level 1 size budget";
    max_bytes_for_level_multiplier: f64 = 10.0f64, Engine, "Level size growth per level";
    level_compaction_dynamic_level_bytes: bool = false, Engine, "Size levels from the bottom up";
    level0_file_num_compaction_trigger: i64 = 4i64, Engine, "L0 files that start a compaction";
    level0_slowdown_writes_trigger: i64 = 20i64, Engine, "L0 files that slow writes down";
    level0_stop_writes_trigger: i64 = 36i64, Engine, "L0 files that stop writes";
    soft_pending_compaction_bytes_limit: u64 = 68719476736u64, Engine, "Pending compaction bytes that slow writes down";
    hard_pending_compaction_bytes_limit: u64 = 137438953472u64, Engine, "Pending compaction bytes that stop writes";
    delayed_write_rate: u64 = 8388608u64, Engine, "Write rate while slowed down (bytes/second)";
    disable_auto_compactions: bool = false, Engine, "No automatic compactions";
    universal_size_ratio: i64 = 0i64, Engine, "Universal compaction size ratio (0: engine default)";
    universal_min_merge_width: i64 = 0i64, Engine, "Universal compaction minimum merge width";
    universal_max_merge_width: i64 = 0i64, Engine, "Universal compaction maximum merge width";
    universal_max_size_amplification_percent: i64 = 0i64, Engine, "Universal compaction size amplification";
    universal_compression_size_percent: i64 = -1i64, Engine, "Universal compaction compressed percent";
    universal_allow_trivial_move: bool = false, Engine, "Universal compaction trivial moves";
    universal_incremental: bool = false, Engine, "Universal size-amplification compactions merge key ranges of the second oldest run";
    fifo_compaction_max_table_files_size_mb: u64 = 0u64, Engine, "FIFO compaction size budget";
    fifo_compaction_ttl: u64 = 0u64, Engine, "FIFO compaction TTL";
    fifo_compaction_allow_compaction: bool = true, Engine, "FIFO compaction may compact";
    universal_stop_style: i64 = 0i64, Engine, "Universal compaction stop style: 0 total size, 1 similar size";
    tiered_fan_in: i64 = 0i64, Engine, "Tiered compaction (--compaction_style=4, Strata only) fan-in (0: engine default)";
    tiered_max_sorted_runs: i64 = 0i64, Engine, "Tiered compaction sorted-run budget (0: engine default)";
    tiered_max_size_amplification_percent: i64 = 0i64, Engine, "Tiered compaction size amplification bound (0: engine default)";
    tiered_skewed_filter_bits: bool = false, Engine, "Tiered compaction: filter bits per key skewed towards smaller, newer runs (Monkey)";
    sync: bool = false, Engine, "Sync every write (WriteOptions.sync)";
    disable_wal: bool = false, Engine, "Write without the WAL (WriteOptions.disableWAL)";
    use_fsync: bool = false, Engine, "fsync instead of fdatasync";
    bytes_per_sync: u64 = 0u64, Engine, "Start writing table files out every this many bytes (0: never)";
    wal_bytes_per_sync: u64 = 0u64, Engine, "Start writing the WAL out every this many bytes (0: never)";
    recycle_log_file_num: i64 = 0i64, Engine, "Obsolete WAL files kept and reused (overwritten in place)";
    manual_wal_flush: bool = false, Engine, "WAL bytes stay in the process buffer until it fills or a synced write";
    open_files: i64 = -1i64, Engine, "Table files kept open (-1: all)";
    mmap_read: bool = false, Engine, "Read files with mmap (Strata: its own default, mapped reads where they pay, unless given)";
    mmap_write: bool = false, Engine, "Write files with mmap";
    use_direct_reads: bool = false, Engine, "O_DIRECT reads";
    advise_random_on_open: bool = true, Engine, "Advise the OS of random reads on table files (no kernel readahead)";
    use_direct_io_for_flush_and_compaction: bool = false, Engine, "O_DIRECT background writes";
    verify_checksum: bool = true, Engine, "Verify block checksums on reads";
    paranoid_checks: bool = true, Engine, "Check every table when the DB is opened";
    merge_operator: String = "", Engine, "Merge operator: put, uint64add, max, stringappend, bytesxor";
    max_successive_merges: i64 = 0i64, Engine, "Merges of one key in a memtable before it is collapsed";
    rate_limiter_bytes_per_sec: u64 = 0u64, Engine, "Background I/O rate limit";
    compaction_readahead_size: u64 = 2097152u64, Engine, "Compaction input read this many bytes at a time (0: automatic readahead)";
    num_high_pri_threads: i64 = 0i64, Hint, "RocksDB's high-priority (flush) thread pool (0: sized from the background jobs)";
    num_low_pri_threads: i64 = 0i64, Hint, "RocksDB's low-priority (compaction) thread pool (0: sized from the background jobs)";
    num_bottom_pri_threads: i64 = 0i64, Hint, "RocksDB's bottom-priority thread pool (universal compaction; 0: none)";
    async_io: bool = false, Hint, "RocksDB: reads prefetch asynchronously (ReadOptions.async_io)";
    initial_auto_readahead_size: u64 = 8192u64, Hint, "RocksDB: an iterator's first automatic readahead, in bytes";
    max_auto_readahead_size: u64 = 262144u64, Hint, "RocksDB: the automatic readahead's ceiling, in bytes";
    num_file_reads_for_auto_readahead: u64 = 2u64, Hint, "RocksDB: sequential reads of a file before readahead starts";
    rate_limiter_auto_tuned: bool = false, Engine, "The rate limit is a ceiling; the rate follows demand within [limit/20, limit]";
    delete_obsolete_files_period_micros: u64 = 0u64, Hint, "Ignored by RocksDB itself (kept for compatibility)";
    enable_blob_files: bool = false, Engine, "Key-value separation (BlobDB)";
    min_blob_size: u64 = 0u64, Engine, "BlobDB minimum blob size";
    blob_file_size: u64 = 268435456u64, Engine, "BlobDB file size";
    write_blobs_at_commit: bool = false, Engine, "BlobDB values of at least min_blob_size go to blob files as writes commit, not at the flush (Strata's write_blobs_at_commit)";
    blob_compression_type: String = "none", Engine, "BlobDB compression";
    enable_blob_garbage_collection: bool = false, Engine, "BlobDB garbage collection";
    blob_garbage_collection_age_cutoff: f64 = 0.25f64, Engine, "BlobDB GC age cutoff";
    blob_garbage_collection_force_threshold: f64 = 1.0f64, Engine, "BlobDB GC force threshold";
    blob_file_starting_level: i64 = 0i64, Engine, "BlobDB starting level";
    use_blob_cache: bool = false, Engine, "BlobDB blob cache";
    use_shared_block_and_blob_cache: bool = true, Engine, "BlobDB shares the block cache";
    blob_cache_size: i64 = 8388608i64, Engine, "BlobDB blob cache size";
    blob_cache_numshardbits: i64 = 6i64, Hint, "BlobDB blob cache shard bits";
    prepopulate_blob_cache: i64 = 0i64, Engine, "BlobDB prepopulate blob cache";
    prepopulate_block_cache: i64 = 0i64, Hint, "RocksDB: warm the block cache on flush";
    options_file: String = "", Engine, "RocksDB OPTIONS file";
    // ---- more workload flags ----
    overwrite_probability: f64 = 0.0f64, Tool, "filluniquerandom: chance that a write overwrites one of the last --overwrite_window_size keys written instead of a new key";
    overwrite_window_size: u64 = 1u64, Tool, "filluniquerandom with --overwrite_probability: how many of the latest new keys an overwrite picks from (at least 1)";
    disposable_entries_batch_size: u64 = 0u64, Tool, "filluniquerandom / fillanddeleteuniquerandom: keys written in a row that are deleted later (0: no deletes)";
    disposable_entries_delete_delay: u64 = 0u64, Tool, "fillanddeleteuniquerandom: microseconds at least between the last disposable key of a set and its deletes";
    disposable_entries_value_size: i64 = 64i64, Tool, "fillanddeleteuniquerandom: value size of the keys that are deleted later";
    persistent_entries_batch_size: u64 = 0u64, Tool, "fillanddeleteuniquerandom: keys written, never deleted, just before each set of deletes";
    persistent_entries_value_size: i64 = 64i64, Tool, "fillanddeleteuniquerandom: value size of the keys that are never deleted";
    transaction_sleep: i64 = 0i64, Tool, "randomtransaction: no effect (db_bench 11 defines it and reads it nowhere)";
    build_info: bool = false, Tool, "Print how strata-bench was built and the engines in it, then exit";
    writes_per_range_tombstone: i64 = 0i64, Tool, "Writes between range deletions in the fills and the background writer (0: none; Strata, RocksDB, or point deletes with --expand_range_tombstones)";
    writes_before_delete_range: i64 = 0i64, Tool, "With --writes_per_range_tombstone: writes before the first range deletion";
    range_tombstone_width: i64 = 100i64, Tool, "With --writes_per_range_tombstone: keys one range deletion covers";
    max_num_range_tombstones: i64 = 0i64, Tool, "With --writes_per_range_tombstone: the most range deletions written";
    expand_range_tombstones: bool = false, Tool, "With --writes_per_range_tombstone: point deletes instead of a range deletion";
    seek_nexts_to_delete: i64 = 0i64, Tool, "seekrandom: after the --seek_nexts steps, delete this many more keys, stepping on";
    explicit_snapshot: bool = false, Unsupported, "Iterators read at a snapshot taken for them";
    auto_refresh_iterator_with_snapshot: bool = false, Unsupported, "Long-lived iterators at a snapshot refresh their state as they go";
    sine_write_rate: bool = false, Tool, "The write rate limit follows --sine_a sin(--sine_b t + --sine_c) + --sine_d bytes/s (t: seconds of the fill)";
    sine_write_rate_interval_milliseconds: u64 = 10000u64, Tool, "With --sine_write_rate: how often the rate is changed";
    column_family_distribution: String = "", Unsupported, "Percentages of operations per column family";
    num_hot_column_families: i64 = 0i64, Unsupported, "Column families written at one time (0: all)";
    trace_file: String = "", Unsupported, "Trace the workload's operations to this file";
    trace_replay_fast_forward: f64 = 1.0f64, Tool, "replay: speed-up of the trace's timing";
    trace_replay_threads: i64 = 1i64, Tool, "replay: threads";
    block_cache_trace_file: String = "", Unsupported, "Trace block cache accesses to this file";
    block_cache_trace_sampling_frequency: i64 = 1i64, Tool, "With --block_cache_trace_file: trace one block of this many";
    block_cache_trace_max_trace_file_size_in_bytes: i64 = 68719476736i64, Tool, "With --block_cache_trace_file: the trace's size bound";
    fault_injection_read_after_reads: i64 = 0i64, Unsupported, "Inject a read error after this many reads (0: none)";
    truth_db: String = "/dev/shm/truth_db/dbbench", Tool, "verify: the DB holding the expected keys and values";
    key_id_range: i64 = 100000i64, Tool, "timeseries: distinct ids";
    time_range: u64 = 100000u64, Tool, "timeseries: the key space's time range";
    expire_style: String = "none", Tool, "timeseries: how expired entries go (none, compaction_filter, delete)";
    num_deletion_threads: i64 = 1i64, Tool, "timeseries with expire_style delete: deleting threads";
    multiscan_size: i64 = 10i64, Tool, "multiscan: ranges per multi-scan";
    multiscan_stride: i64 = 100i64, Tool, "multiscan: keys between one range's end and the next one's start";
    use_multiscan: bool = true, Tool, "multiscanrandom: the multi-scan API (else seek and next per range)";
    multiscan_coalesce_threshold: u64 = 16384u64, Tool, "multiscan: reads this close together are made one";
    multiscan_max_prefetch_size: u64 = 0u64, Tool, "multiscan: bytes prefetched per table at most (0: no bound)";
    multiscan_use_async_io: bool = false, Tool, "multiscan: asynchronous reads";
    io_dispatcher_max_prefetch_memory_bytes: u64 = 0u64, Tool, "multiscan: memory for prefetching over all scans (0: no bound)";
    coro_jobs_per_thread: i64 = 1i64, Tool, "readrandomcoroutine, multireadrandomcoroutine: jobs per executor thread";
    ingest_external_file_batch_size: i64 = 10i64, Tool, "ingestexternalfile: files per ingestion";
    ingest_external_file_num_batches: i64 = 1i64, Tool, "ingestexternalfile: ingestions";
    ingest_external_file_file_opening_threads: i64 = 1i64, Tool, "ingestexternalfile: threads opening the ingested files";
    ingest_external_file_fill_cache: bool = true, Tool, "ingestexternalfile: the ingestion's reads fill the block cache";
    ingest_external_file_prefetch_lmax_index_and_filter_blocks: bool = true, Tool, "ingestexternalfile: prefetch the index and filter of files going to the last level";
    ingest_external_file_use_file_info: bool = false, Tool, "ingestexternalfile: pass the files' metadata along";
    openandcompact_allow_resumption: bool = false, Tool, "openandcompact: resume an interrupted compaction";
    openandcompact_test_cancel_on_odd: bool = false, Tool, "openandcompact: cancel odd runs";
    openandcompact_cancel_after_millseconds: u64 = 1u64, Tool, "openandcompact: when odd runs are cancelled";
    num_wide_columns: i64 = 4i64, Tool, "fillembeddedentity: large columns per entity";
    num_short_wide_columns: i64 = 1i64, Tool, "fillembeddedentity: small columns per entity";
    embedded_blob_min_size: u64 = 2048u64, Tool, "fillembeddedentity, fillembeddedblob: values this large are embedded blobs";
    read_with_latest_user_timestamp: bool = true, Tool, "With --user_timestamp_size: read at the latest timestamp";
    // ---- more engine configuration ----
    user_timestamp_size: i64 = 0i64, Engine, "Bytes of a user-defined timestamp on every key (0: none)";
    use_uint64_comparator: bool = false, Engine, "Keys ordered as little-endian 64-bit integers";
    readahead_size: i64 = 0i64, Engine, "Iterators read ahead this many bytes (0: automatic)";
    total_order_seek: bool = false, Engine, "Iterators seek in total order even with a prefix extractor";
    prefix_same_as_start: bool = false, Engine, "Iterators stop at the first key whose prefix differs from the seek key's";
    auto_prefix_mode: bool = false, Engine, "Seeks use the prefix filter only where the result is the same as a total-order seek";
    max_total_wal_size: u64 = 0u64, Engine, "WALs' total size that forces the oldest memtables out (0: 4 x the write buffers)";
    wal_ttl_seconds: u64 = 0u64, Engine, "Obsolete WALs are archived and deleted after this many seconds";
    wal_size_limit_MB: u64 = 0u64, Engine, "Obsolete WALs are archived, the archive kept within this many MiB";
    checksum_type: i64 = 4i64, Engine, "Table block checksum: 0 none, 1 crc32c, 2 xxhash, 3 xxhash64, 4 xxh3";
    periodic_compaction_seconds: u64 = 18446744073709551614u64, Engine, "Tables older than this are compacted again (RocksDB's default: 30 days with a compaction filter, else off)";
    ttl_seconds: u64 = 18446744073709551614u64, Engine, "Tables whose data is older than this are compacted down (FIFO: deleted)";
    use_direct_io_for_compaction_reads: bool = false, Engine, "O_DIRECT reads of compaction inputs only";
    inplace_update_support: bool = false, Engine, "Puts update a memtable value in place when it fits";
    inplace_update_num_locks: u64 = 10000u64, Engine, "With --inplace_update_support: locks over the memtable's values";
    wal_compression: String = "none", Engine, "WAL compression: none or zstd";
    max_bytes_for_level_multiplier_additional: String = "", Engine, "Extra size factors per level, comma-separated";
    experimental_mempurge_threshold: f64 = 0.0f64, Engine, "Garbage-collect memtables instead of flushing them below this useful share";
    preserve_internal_time_seconds: i64 = 0i64, Engine, "Keep sequence-number-to-time mappings this long";
    preclude_last_level_data_seconds: i64 = 0i64, Engine, "Data younger than this stays above the last level";
    compression_zstd_max_train_bytes: i64 = 0i64, Engine, "ZSTD dictionary training sample bytes";
    compression_max_dict_buffer_bytes: u64 = 0u64, Engine, "Bytes buffered for dictionary samples (0: no bound)";
    compression_use_zstd_dict_trainer: bool = true, Engine, "Train ZSTD dictionaries (else finalize them from samples)";
    sample_for_compression: i64 = 0i64, Engine, "Sample every Nth block's compressibility (0: none)";
    min_tombstones_for_range_conversion: u64 = 0u64, Engine, "Point deletes in a row a scan turns into a range deletion (0: never)";
    memtable_op_scan_flush_trigger: u64 = 0u64, Engine, "Flush a memtable once a scan steps over this many of its entries (0: never)";
    read_triggered_compaction_threshold: f64 = 0.0f64, Engine, "Mark a table for compaction once its sampled reads per byte exceed this (0: off)";
    universal_max_read_amp: i64 = -1i64, Engine, "Universal compaction: sorted runs at most (-1: the L0 trigger)";
    universal_reduce_file_locking: bool = true, Engine, "Universal compaction: pick files without holding the DB lock throughout";
    fifo_age_for_warm: u64 = 0u64, Engine, "FIFO: tables older than this move to warm storage";
    fifo_compaction_max_data_files_size_mb: u64 = 0u64, Engine, "FIFO: table and blob bytes budget (0: the table budget)";
    fifo_compaction_use_kv_ratio_compaction: bool = false, Engine, "FIFO with blob files: size-derived intra-L0 compactions";
    enable_blob_direct_write: bool = false, Engine, "BlobDB: writes put large values straight into blob files";
    blob_direct_write_partitions: u64 = 1u64, Engine, "BlobDB direct writes: blob files written at once";
    blob_compaction_readahead_size: u64 = 0u64, Engine, "BlobDB: compaction readahead in blob files";
    use_blob_db: bool = false, Engine, "Stacked BlobDB (the older blob store)";
    blob_db_enable_gc: bool = false, Tool, "With --use_blob_db: garbage collection";
    blob_db_max_db_size: u64 = 0u64, Tool, "With --use_blob_db: blob directory size bound";
    blob_db_max_ttl_range: u64 = 0u64, Tool, "With --use_blob_db: TTLs of written values up to this many seconds";
    blob_db_ttl_range_secs: u64 = 3600u64, Tool, "With --use_blob_db: time span of one blob file";
    blob_db_file_size: u64 = 268435456u64, Tool, "With --use_blob_db: blob file size";
    use_plain_table: bool = false, Engine, "Plain tables instead of block-based ones";
    use_cuckoo_table: bool = false, Engine, "Cuckoo hash tables instead of block-based ones";
    cuckoo_hash_ratio: f64 = 0.9f64, Tool, "With --use_cuckoo_table: hash table fill ratio";
    identity_as_first_hash: bool = false, Tool, "With --use_cuckoo_table: the first hash is the key itself";
    use_keep_filter: bool = false, Engine, "A compaction filter that keeps every entry";
    use_secondary_db: bool = false, Engine, "Open a secondary instance following another process's DB";
    secondary_path: String = "", Tool, "With --use_secondary_db: the secondary's own directory";
    secondary_update_interval: i64 = 5i64, Tool, "With --use_secondary_db: seconds between catch-ups";
    open_as_follower: bool = false, Engine, "Open as a follower of another process's DB";
    leader_path: String = "", Tool, "With --open_as_follower: the leader's DB";
    file_checksum: bool = false, Engine, "Record a whole-file CRC32C checksum of each table (verifyfilechecksums)";
    use_compressed_secondary_cache: bool = false, Engine, "A compressed secondary block cache";
    compressed_secondary_cache_size: i64 = 33554432i64, Tool, "With --use_compressed_secondary_cache: its capacity";
    compressed_secondary_cache_numshardbits: i64 = 6i64, Tool, "With --use_compressed_secondary_cache: shard bits";
    compressed_secondary_cache_high_pri_pool_ratio: f64 = 0.0f64, Tool, "With --use_compressed_secondary_cache: high-priority share";
    compressed_secondary_cache_low_pri_pool_ratio: f64 = 0.0f64, Tool, "With --use_compressed_secondary_cache: low-priority share";
    compressed_secondary_cache_compression_type: String = "lz4", Tool, "With --use_compressed_secondary_cache: its compression";
    compressed_secondary_cache_compression_level: i64 = 32767i64, Tool, "With --use_compressed_secondary_cache: its compression level";
    use_tiered_cache: bool = false, Tool, "With --use_compressed_secondary_cache: one budget over both caches";
    tiered_adm_policy: String = "auto", Tool, "With --use_tiered_cache: admission policy";
    simcache_size: i64 = -1i64, Engine, "A simulated cache of this many bytes beside the block cache (< 0: none)";
    cache_uri: String = "", Engine, "Block cache made from this registry URI";
    secondary_cache_uri: String = "", Engine, "Secondary cache made from this registry URI";
    env_uri: String = "", Engine, "Env made from this registry URI";
    fs_uri: String = "", Engine, "File system made from this registry URI";
    simulate_hdd: bool = false, Engine, "Add a hard disk's latency to file reads and writes";
    simulate_hybrid_fs_file: String = "", Engine, "Simulate a hybrid file system, metadata in this file";
    simulate_hybrid_hdd_multipliers: i64 = 1i64, Tool, "With --simulate_hdd or --simulate_hybrid_fs_file: disks simulated";
    read_cache_path: String = "", Engine, "A persistent read cache in this directory";
    read_cache_size: i64 = 4294967296i64, Tool, "With --read_cache_path: its size";
    read_cache_direct_write: bool = true, Tool, "With --read_cache_path: O_DIRECT writes to it";
    read_cache_direct_read: bool = true, Tool, "With --read_cache_path: O_DIRECT reads from it";
    statistics_string: String = "", Engine, "Statistics object made from this string";
    compression_manager: String = "none", Engine, "Compression manager (none: the built-in compressors)";
    hash_bucket_count: i64 = 1048576i64, Tool, "With a hash memtable (--memtablerep): buckets";
    data_block_hash_table_util_ratio: f64 = 0.75f64, Tool, "With --use_data_block_hash_index: hash table fill ratio";
    // ---- more RocksDB tuning knobs ----
    optimize_filters_for_hits: bool = false, Hint, "RocksDB: no filters in the last level";
    optimize_filters_for_memory: bool = true, Hint, "RocksDB: filter sizes rounded to the allocator's sizes";
    decouple_partitioned_filters: bool = true, Hint, "RocksDB: filter partitions cut apart from index partitions";
    enable_index_compression: bool = true, Hint, "RocksDB: compress index blocks";
    index_shortening_mode: i64 = 2i64, Hint, "RocksDB: index separator shortening (0 none, 1 separators, 2 separators and successor)";
    index_with_first_key: bool = false, Hint, "RocksDB: index entries carry their block's first key";
    index_block_search_type: String = "binary_search", Hint, "RocksDB: index block search (binary_search, interpolation_search, auto_search)";
    use_trie_index: bool = false, Hint, "RocksDB: a succinct trie index";
    use_data_block_hash_index: bool = false, Hint, "RocksDB: data blocks carry a hash index";
    use_hash_search: bool = false, Hint, "RocksDB: hash search index (with a prefix extractor)";
    separate_key_value_in_data_block: bool = false, Hint, "RocksDB: data blocks keep keys and values apart";
    super_block_alignment_size: u64 = 0u64, Hint, "RocksDB: super block alignment (0: none)";
    super_block_alignment_space_overhead_ratio: u64 = 128u64, Hint, "RocksDB: space spent on super block alignment, 1/N";
    uniform_cv_threshold: f64 = -1.0f64, Hint, "RocksDB: index blocks with keys this uniform use interpolation search";
    read_amp_bytes_per_bit: i64 = 0i64, Hint, "RocksDB: read amplification bitmap granularity (0: none)";
    bloom_locality: i64 = 0i64, Hint, "RocksDB: Bloom probes in one cache line";
    block_protection_bytes_per_key: u64 = 0u64, Hint, "RocksDB: per-entry checksum bytes in cached blocks";
    memtable_protection_bytes_per_key: u64 = 0u64, Hint, "RocksDB: per-entry checksum bytes in memtables";
    write_batch_protection_bytes_per_key: u64 = 0u64, Hint, "RocksDB: per-entry checksum bytes in write batches";
    memtable_verify_per_key_checksum_on_seek: bool = false, Hint, "RocksDB: check memtable entry checksums on seeks";
    paranoid_memory_checks: bool = false, Hint, "RocksDB: check memtable key order on reads";
    verify_compression: bool = false, Hint, "RocksDB: decompress each block after compressing it, to check it";
    force_consistency_checks: bool = true, Hint, "RocksDB: check the LSM's shape on every change";
    verify_manifest_content_on_close: bool = false, Hint, "RocksDB: check the MANIFEST when the DB closes";
    allow_data_in_errors: bool = false, Hint, "RocksDB: keys and values may appear in error messages";
    track_and_verify_wals_in_manifest: bool = false, Hint, "RocksDB: record WALs in the MANIFEST";
    track_and_verify_wals: bool = false, Hint, "RocksDB: check the WALs' continuity on recovery";
    async_wal_precreate: bool = false, Hint, "RocksDB: create the next WAL in the background";
    avoid_flush_during_recovery: bool = false, Hint, "RocksDB: keep recovered WAL data in memtables instead of flushing it";
    avoid_flush_during_shutdown: bool = false, Hint, "RocksDB: do not flush memtables when the DB closes";
    max_manifest_file_size: i64 = 1073741824i64, Hint, "RocksDB: MANIFEST size that starts a new one";
    max_manifest_space_amp_pct: i64 = 500i64, Hint, "RocksDB: MANIFEST space amplification that starts a new one";
    arena_block_size: i64 = 0i64, Hint, "RocksDB: memtable arena block size (0: from the write buffer)";
    max_write_buffer_size_to_maintain: i64 = 0i64, Hint, "RocksDB: flushed memtable bytes kept for conflict checks";
    memtable_use_huge_page: bool = false, Hint, "RocksDB: memtable arenas in huge pages";
    memtable_batch_lookup_optimization: bool = false, Hint, "RocksDB: batched memtable lookups for MultiGet";
    memtable_insert_with_hint_prefix_size: i64 = 0i64, Hint, "RocksDB: memtable inserts hinted by a prefix of this length";
    skip_list_lookahead: i64 = 0i64, Hint, "RocksDB: skip list linear search steps before searching";
    strict_max_successive_merges: bool = false, Hint, "RocksDB: read files to keep --max_successive_merges exact";
    uncache_aggressiveness: u64 = 0u64, Hint, "RocksDB: erase obsolete tables' blocks from the cache";
    table_cache_numshardbits: i64 = 4i64, Hint, "RocksDB: table cache shard bits";
    file_opening_threads: i64 = 16i64, Hint, "RocksDB: threads opening table files at DB open";
    open_files_async: bool = false, Hint, "RocksDB: open table files in the background at DB open";
    skip_stats_update_on_db_open: bool = false, Hint, "RocksDB: no table property reads at DB open";
    log_readahead_size: i64 = 0i64, Hint, "RocksDB: WAL and MANIFEST readahead at recovery";
    writable_file_max_buffer_size: i64 = 1048576i64, Hint, "RocksDB: write buffer of a writable file";
    use_adaptive_mutex: bool = false, Hint, "RocksDB: spin before blocking on the DB mutex";
    enable_numa: bool = false, Hint, "RocksDB: bind threads and memory to NUMA nodes";
    enable_io_prio: bool = false, Hint, "RocksDB: lower the I/O priority of background threads";
    enable_cpu_prio: bool = false, Hint, "RocksDB: lower the CPU priority of background threads";
    io_uring_enabled: bool = true, Hint, "RocksDB: io_uring where the platform has it";
    optimize_multiget_for_io: bool = true, Hint, "RocksDB: MultiGet reads several levels at once";
    adaptive_readahead: bool = false, Hint, "RocksDB: readahead size carried from file to file";
    auto_readahead_size: bool = false, Hint, "RocksDB: iterator readahead sized by the upper bound";
    rate_limit_user_ops: bool = false, Hint, "RocksDB: user reads charged to the rate limiter";
    rate_limit_auto_wal_flush: bool = false, Hint, "RocksDB: WAL flushes charged to the rate limiter";
    rate_limit_bg_reads: bool = false, Hint, "RocksDB: compaction reads charged to the rate limiter";
    rate_limiter_refill_period_us: i64 = 100000i64, Hint, "RocksDB: rate limiter refill period";
    rate_limiter_single_burst_bytes: i64 = 0i64, Hint, "RocksDB: rate limiter burst (0: the refill's bytes)";
    max_compaction_trigger_wakeup_seconds: u64 = 43200u64, Hint, "RocksDB: longest sleep before time-based compaction checks";
    disable_seek_compaction: i64 = 0i64, Hint, "RocksDB: no effect (kept for old scripts)";
    charge_compression_dictionary_building_buffer: bool = false, Hint, "RocksDB: charge dictionary building to the block cache";
    charge_filter_construction: bool = false, Hint, "RocksDB: charge filter building to the block cache";
    charge_table_reader: bool = false, Hint, "RocksDB: charge table readers to the block cache";
    charge_file_metadata: bool = false, Hint, "RocksDB: charge file metadata to the block cache";
    charge_blob_cache: bool = false, Hint, "RocksDB: charge the blob cache to the block cache";
    use_cache_jemalloc_no_dump_allocator: bool = false, Hint, "RocksDB: cache memory left out of core dumps (jemalloc)";
    use_cache_memkind_kmem_allocator: bool = false, Hint, "RocksDB: cache memory from memkind";
    dump_malloc_stats: bool = true, Hint, "RocksDB: malloc statistics in the LOG";
    stats_dump_period_sec: u64 = 600u64, Hint, "RocksDB: seconds between stats dumps to the LOG";
    stats_persist_period_sec: u64 = 600u64, Hint, "RocksDB: seconds between stats snapshots";
    persist_stats_to_disk: bool = false, Hint, "RocksDB: stats snapshots into a column family";
    stats_history_buffer_size: u64 = 1048576u64, Hint, "RocksDB: memory for stats snapshots";
    report_bg_io_stats: bool = false, Hint, "RocksDB: time compaction I/O";
    show_table_properties: bool = false, Hint, "RocksDB: table properties with the periodic stats";
    use_stderr_info_logger: bool = false, Hint, "RocksDB: the info log to stderr instead of LOG";
    fatal_shutdown_watchdog_seconds: u64 = 180u64, Hint, "db_bench: abort if closing takes longer than this after a fatal error";
    tolerate_io_errors_for_remote_dbs: bool = false, Hint, "db_bench: go on after I/O errors of remote DBs";
}

/// Result of stage 1.
#[derive(Clone, Debug)]
pub struct ParsedFlags {
    pub flags: Flags,
    /// Names given on the command line (after `no` prefixes are resolved).
    pub set: BTreeSet<&'static str>,
    /// `--help` was given.
    pub help: bool,
    /// `--version` was given.
    pub version: bool,
}

/// A command-line error, printed as gflags would (`ERROR: ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagError(pub String);

impl fmt::Display for FlagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ERROR: {}", self.0)
    }
}

impl std::error::Error for FlagError {}

pub fn info(name: &str) -> Option<&'static FlagInfo> {
    FLAG_TABLE.iter().find(|f| f.name == name)
}

/// Parses `args` (without the program name).
pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<ParsedFlags, FlagError> {
    let mut flags = Flags::default();
    let mut set = BTreeSet::new();
    let mut unknown: Vec<String> = Vec::new();
    let mut undefok: Vec<String> = Vec::new();
    let mut help = false;
    let mut version = false;
    let mut i = 0;
    // The previous argument was an unknown flag without `=value`: a following non-flag
    // argument is taken as its value (gflags leaves it as a positional argument).
    let mut after_unknown = false;
    while i < args.len() {
        let arg = args[i].as_ref();
        i += 1;
        let was_after_unknown = std::mem::take(&mut after_unknown);
        if arg == "--" {
            if let Some(rest) = args.get(i) {
                return Err(FlagError(format!("unexpected argument '{}'", rest.as_ref())));
            }
            break;
        }
        let body = match arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) {
            Some(b) if !b.is_empty() => b,
            _ if was_after_unknown => continue,
            _ => {
                return Err(FlagError(format!("unexpected argument '{arg}' (flags start with --)")))
            }
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        match name {
            "help" | "helpfull" | "h" => {
                help = true;
                continue;
            }
            "version" => {
                version = true;
                continue;
            }
            "undefok" => {
                let v = match inline {
                    Some(v) => v.to_string(),
                    None => match args.get(i) {
                        Some(v) => {
                            i += 1;
                            v.as_ref().to_string()
                        }
                        None => {
                            return Err(FlagError("flag 'undefok' is missing its argument".into()))
                        }
                    },
                };
                undefok.extend(v.split(',').filter(|s| !s.is_empty()).map(str::to_string));
                continue;
            }
            _ => {}
        }
        if let Some(fi) = info(name) {
            let text: String = match (fi.kind, inline) {
                (_, Some(v)) => v.to_string(),
                (Kind::Bool, None) => "true".to_string(),
                (_, None) => match args.get(i) {
                    Some(v) => {
                        i += 1;
                        v.as_ref().to_string()
                    }
                    None => {
                        return Err(FlagError(format!("flag '{name}' is missing its argument")))
                    }
                },
            };
            flags.set_text(fi.name, &text).map_err(FlagError)?;
            set.insert(fi.name);
            continue;
        }
        if let Some(base) = name.strip_prefix("no") {
            if let Some(fi) = info(base) {
                if fi.kind != Kind::Bool {
                    return Err(FlagError(format!(
                        "boolean value (no{base}) specified for {} command line flag",
                        fi.kind
                    )));
                }
                if inline.is_some() {
                    return Err(FlagError(format!("flag 'no{base}' takes no value")));
                }
                flags.set_text(fi.name, "false").map_err(FlagError)?;
                set.insert(fi.name);
                continue;
            }
        }
        unknown.push(name.to_string());
        after_unknown = inline.is_none();
    }
    let is_ok =
        |n: &str| undefok.iter().any(|u| u == n || n.strip_prefix("no").is_some_and(|b| b == u));
    if let Some(bad) = unknown.iter().find(|n| !is_ok(n)) {
        return Err(FlagError(format!("unknown command line flag '{bad}'")));
    }
    Ok(ParsedFlags { flags, set, help, version })
}

/// The `--help` text.
pub fn usage() -> String {
    let mut s = String::from(
        "strata-bench: a db_bench-compatible benchmark for Strata (and RocksDB/SQLite)\n\n\
         Usage: strata-bench --benchmarks=fillseq,readrandom [--flag=value ...]\n\n\
         Classes: [tool] honoured for every engine; [engine] honoured only by engines that\n\
         support it (a non-default value is rejected otherwise); [hint] RocksDB tuning knob,\n\
         a note is printed when the engine has no equivalent; [not implemented] a db_bench\n\
         flag strata-bench does not implement yet (a non-default value is refused).\n\nFlags:\n",
    );
    for f in FLAG_TABLE {
        let class = match f.class {
            Class::Tool => "tool",
            Class::Engine => "engine",
            Class::Hint => "hint",
            Class::Unsupported => "not implemented",
        };
        let default = f.default.trim_matches('"').trim_end_matches("i64").trim_end_matches("u64");
        let default = default.trim_end_matches("f64");
        let default = if f.name == "benchmarks" { DEFAULT_BENCHMARKS } else { default };
        let _ = writeln!(
            s,
            "  --{} ({}) [{}] default: {}\n      {}",
            f.name, f.kind, class, default, f.help
        );
    }
    s
}
