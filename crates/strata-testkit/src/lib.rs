//! Strata's reliability harness: the tools that check the reliability contract of
//! `docs/contract.md` and report figures. See `docs/reliability.md` for how to run them.
//!
//! - [`crash`]: the kill -9 crash loop (parent process + `--child` writer, expected-state file).
//! - [`power`]: the in-process power-loss loop on `MemFs` + `FaultFs` (exact-prefix check).
//! - [`iofault`]: the I/O error loop (EIO, ENOSPC, failed fsync at the Nth I/O).
//! - [`ops_crash`]: crashes inside checkpoints, backups, ingestions, OPTIONS file writes and
//!   TTL compactions.
//! - [`corruption`]: the corruption matrix (flips, zeroed pages, truncation, garbage, deletion).
//! - [`fuzz`]: the fuzz targets' bodies, shared by `fuzz/` and the corpus replay test.
//! - [`expected`], [`value`], [`workload`], [`verify`]: the oracle, the self-checking values,
//!   the multi-threaded write workload and the checks they share.

pub mod corruption;
pub mod crash;
pub mod expected;
pub mod fuzz;
pub mod iofault;
pub mod ops_crash;
pub mod power;
mod ts_crash;
mod two_phase_crash;
pub mod value;
pub mod verify;
pub mod workload;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::Rng;
use strata::env::FileSystem;
use strata::{
    ChecksumType, CompactionStyle, CompressionType, FifoCompactionOptions, Options,
    TieredCompactionOptions, UniversalCompactionOptions, WalRecoveryMode,
};

/// The WAL directory the loops may use for a DB at `db`: a sibling directory, so WAL files and
/// tables live apart (as on two devices).
pub fn wal_dir_for(db: &std::path::Path) -> std::path::PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push("-wal");
    db.with_file_name(name)
}

/// The WAL directory of a whole run of a loop: runs with an odd seed keep the WAL apart from
/// the tables (every cycle, and the verifier, must agree: a DB opened without the directory its
/// WAL is in refuses to open rather than lose the WAL's writes).
pub fn run_wal_dir(seed: u64, db: &std::path::Path) -> Option<std::path::PathBuf> {
    (seed % 2 == 1).then(|| wal_dir_for(db))
}

/// The table paths (`Options::db_paths`) the loops may use for a DB at `db`: two sibling
/// directories, the first with a target of 256 KiB (with the loops' level sizes it holds the
/// flushes and at most L0's worth of compaction output, so compactions move data to the
/// second), the second unbounded.
pub fn table_paths_for(db: &std::path::Path) -> Vec<strata::DBPath> {
    let name = db.file_name().unwrap_or_default().to_string_lossy().into_owned();
    [("tables0", 256 << 10), ("tables1", u64::MAX)]
        .into_iter()
        .map(|(suffix, size)| {
            strata::DBPath::new(db.with_file_name(format!("{name}-{suffix}")), size)
                .expect("no NUL in a loop's path")
        })
        .collect()
}

/// The table paths of a whole run of a loop: runs whose seed has bit 1 clear (the default
/// seed 1 among them) spread the tables over [`table_paths_for`] (every cycle, and the
/// verifier, must agree: a DB opened with fewer paths than its tables use refuses to open).
pub fn run_db_paths(seed: u64, db: &std::path::Path) -> Vec<strata::DBPath> {
    if (seed >> 1) & 1 == 0 {
        table_paths_for(db)
    } else {
        Vec::new()
    }
}

/// The key order of a whole run of a loop: runs whose seed has bit 2 clear (the default seed
/// 1 among them) order keys through a program's comparator (every cycle, and the verifier,
/// must agree: a DB opened with another order refuses to open). See [`loop_key_order`].
pub fn run_key_order(seed: u64) -> strata::comparator::KeyOrder {
    if (seed >> 2) & 1 == 0 {
        loop_key_order()
    } else {
        strata::comparator::KeyOrder::Bytewise
    }
}

/// The non-bytewise order of [`run_key_order`]: reverse bytewise, so tables, levels, index
/// separators and iterators run the other way round from bytewise order. The engine takes
/// every path of a non-bytewise order (no fences, no seek hints, whole index separators, the
/// order's name in the MANIFEST and the tables); a single-key range deletion ends where
/// [`single_key_range_end`] says.
pub fn loop_key_order() -> strata::comparator::KeyOrder {
    strata::comparator::KeyOrder::custom(
        "strata-testkit.ReverseBytewise",
        Box::new(|a: &[u8], b: &[u8]| b.cmp(a)),
    )
}

/// The exclusive end, in `order` (bytewise or [`loop_key_order`]), of a range that holds
/// only `key` among the loops' keys (`value::key`: nine ASCII bytes). Bytewise, `key\0`. In
/// reverse bytewise order the range `[key, end)` holds the keys bytewise in `(end, key]`:
/// with `end` = `key` with its last byte decremented and 16 bytes `0xff` appended, that is
/// `key` and keys longer than 25 bytes starting with `end`, none of them the loops'.
pub fn single_key_range_end(order: &strata::comparator::KeyOrder, key: &[u8]) -> Vec<u8> {
    let mut end = key.to_vec();
    if order.is_bytewise() {
        end.push(0);
        return end;
    }
    match end.last_mut() {
        Some(last) if *last > 0 => *last -= 1,
        _ => panic!("single_key_range_end: {key:?} does not end in a byte above 0"),
    }
    end.extend_from_slice(&[0xff; 16]);
    debug_assert!(order.lt(key, &end), "{key:?} must come before its range end in {order:?}");
    end
}

/// Random engine options for one cycle of the DB at `db`. `small` picks the small memtables
/// and levels the in-memory loops use, so that flushes and compactions happen within a short
/// cycle. `wal_dir` is the run's WAL directory ([`run_wal_dir`]).
/// The column family every crash-loop write also goes to, in the same batch: after any
/// crash it must agree with `default` key for key (cross-family batches are atomic). Its
/// memtable is half the size of `default`'s, so the two flush at different moments.
pub const SHADOW_CF: &str = "shadow";

/// Opens the crash loops' DB: `default` and [`SHADOW_CF`] (created when missing).
pub fn open_db(opts: &Options, dir: impl AsRef<std::path::Path>) -> strata::Result<strata::Db> {
    let opts = Options { create_missing_column_families: true, ..opts.clone() };
    let shadow =
        Options { write_buffer_size: (opts.write_buffer_size / 2).max(4096), ..opts.clone() };
    strata::Db::open_cf_descriptors(
        &opts,
        dir,
        [strata::ColumnFamilyDescriptor::new(SHADOW_CF, shadow)],
    )
}

pub fn random_options(
    rng: &mut StdRng,
    fs: Arc<dyn FileSystem>,
    small: bool,
    wal_dir: Option<std::path::PathBuf>,
) -> Options {
    let wbs = if small {
        [16 << 10, 64 << 10, 256 << 10][rng.gen_range(0..3)]
    } else {
        [64 << 10, 256 << 10, 1 << 20, 4 << 20][rng.gen_range(0..4)]
    };
    let mut o = Options {
        fs,
        merge_operator: strata::merge_operator::builtin_merge_operator("uint64add"),
        write_buffer_size: wbs,
        max_write_buffer_number: rng.gen_range(2..=4),
        // From one byte (a block per entry) up.
        block_size: [1, 256, 1024, 4096, 16384][rng.gen_range(0..5)],
        block_restart_interval: [1, 4, 16][rng.gen_range(0..3)],
        bloom_bits_per_key: [0, 10][rng.gen_range(0..2)],
        compression: [
            CompressionType::None,
            CompressionType::Snappy,
            CompressionType::Lz4,
            CompressionType::Zstd,
            CompressionType::Zlib,
            CompressionType::Bz2,
            CompressionType::Lz4hc,
        ][rng.gen_range(0..7)],
        checksum: [ChecksumType::Crc32c, ChecksumType::Xxh3][rng.gen_range(0..2)],
        block_cache_size: [0, 1 << 20, 8 << 20][rng.gen_range(0..3)],
        paranoid_checks: rng.gen_bool(0.5),
        level0_file_num_compaction_trigger: [2, 4][rng.gen_range(0..2)],
        max_bytes_for_level_base: if small {
            [256 << 10, 1 << 20][rng.gen_range(0..2)]
        } else {
            [1 << 20, 8 << 20][rng.gen_range(0..2)]
        },
        target_file_size_base: [64 << 10, 256 << 10, 1 << 20][rng.gen_range(0..3)],
        level_compaction_dynamic_level_bytes: rng.gen_bool(0.5),
        max_subcompactions: rng.gen_range(1..=2),
        max_background_jobs: rng.gen_range(2..=3),
        wal_recovery_mode: [
            WalRecoveryMode::PointInTime,
            WalRecoveryMode::TolerateCorruptedTailRecords,
        ][rng.gen_range(0..2)],
        // The stall options over their whole accepted range, zeros and inverted orders
        // included (the DB sanitizes them as RocksDB does; none may block writes for good).
        level0_slowdown_writes_trigger: [0, 1, 3, 8, 20][rng.gen_range(0..5)],
        level0_stop_writes_trigger: [0, 2, 4, 12, 36][rng.gen_range(0..5)],
        soft_pending_compaction_bytes_limit: [0, 1, 256 << 10, 64 << 30][rng.gen_range(0..4)],
        hard_pending_compaction_bytes_limit: [0, 1, 4 << 20, 256 << 30][rng.gen_range(0..4)],
        delayed_write_rate: [1 << 20, 16 << 20][rng.gen_range(0..2)],
        avoid_flush_during_recovery: rng.gen_bool(0.3),
        // Drawn last, so the earlier draws of a seed are what they were before.
        recycle_log_file_num: [0, 0, 1, 4][rng.gen_range(0..4)],
        wal_bytes_per_sync: [0, 64 << 10][rng.gen_range(0..2)],
        compaction_style: [
            CompactionStyle::Leveled,
            CompactionStyle::Universal,
            CompactionStyle::Fifo,
            CompactionStyle::Tiered,
        ][rng.gen_range(0..4)],
        compaction_options_universal: UniversalCompactionOptions {
            size_ratio: [1, 20][rng.gen_range(0..2)],
            max_size_amplification_percent: [25, 200][rng.gen_range(0..2)],
            allow_trivial_move: rng.gen_bool(0.5),
            compression_size_percent: [-1, 50][rng.gen_range(0..2)],
            ..UniversalCompactionOptions::default()
        },
        // FIFO with room for everything (the oracle expects no write to vanish) and intra-L0
        // merges, which rewrite data like any compaction.
        compaction_options_fifo: FifoCompactionOptions {
            max_table_files_size: 1 << 40,
            ttl_secs: 0,
            allow_compaction: true,
        },
        compaction_options_tiered: {
            let fan_in = [2, 4][rng.gen_range(0..2)];
            TieredCompactionOptions {
                fan_in,
                max_sorted_runs: [fan_in, 8][rng.gen_range(0..2)],
                max_size_amplification_percent: [25, 200][rng.gen_range(0..2)],
                skewed_filter_bits: false, // drawn below
            }
        },
        wal_dir,
        ..write_mode(rng)
    };
    // Drawn after the rest, so a seed's earlier draws stay what they were. Small windows
    // (a few target-size files) make the incremental size-amplification merges partial.
    if o.compaction_style == CompactionStyle::Universal && rng.gen_bool(0.5) {
        o.compaction_options_universal.incremental = true;
        o.max_compaction_bytes = o.target_file_size_base * [2, 8][rng.gen_range(0..2)];
    }
    if o.compaction_style == CompactionStyle::Tiered {
        o.compaction_options_tiered.skewed_filter_bits = rng.gen_bool(0.5);
    }
    // A DB-wide memtable budget below the families' buffers now and then, so its flushes
    // (largest family first) go through crashes and recovery too.
    if rng.gen_bool(0.25) {
        o.db_write_buffer_size = [128 << 10, 1 << 20, 4 << 20][rng.gen_range(0..3)];
    }
    // Values in blob files now and then: the larger stress values (`value.rs`) go there at
    // flushes and compactions, with garbage collection and files rolled small.
    if rng.gen_bool(0.3) {
        o.blob = strata::BlobOptions {
            enable_blob_files: true,
            min_blob_size: [0, 64, 512][rng.gen_range(0..3)],
            blob_file_size: [4 << 10, 64 << 10, 1 << 20][rng.gen_range(0..3)],
            blob_compression_type: [
                None,
                Some(CompressionType::Snappy),
                Some(CompressionType::Zstd),
            ][rng.gen_range(0..3)],
            enable_blob_gc: rng.gen_bool(0.5),
            blob_gc_age_cutoff: [0.25, 1.0][rng.gen_range(0..2)],
            blob_gc_force_threshold: [0.5, 1.0][rng.gen_range(0..2)],
            ..strata::BlobOptions::default()
        };
    }
    // Immutable memtables flushed together now and then (one L0 table for several, their
    // versions and range deletions resolved across them), through crashes and recovery.
    if rng.gen_bool(0.25) {
        o.min_write_buffer_number_to_merge = rng.gen_range(2..=3);
    }
    // A small bound on the WALs kept now and then: families holding the oldest WAL are
    // switched and flushed by the write path (`db/write/wal_limit.rs`).
    if rng.gen_bool(0.25) {
        o.max_total_wal_size = [64 << 10, 1 << 20][rng.gen_range(0..2)];
    }
    // Tables' blocks compressed on helper threads now and then (the same bytes, written in
    // order by the flush or compaction as they come back).
    if rng.gen_bool(0.25) {
        o.compression_parallel_threads = rng.gen_range(2..=3);
    }
    // Half the DBs with blob files write their large values at commit: the WAL and the
    // memtable hold indexes into each memtable's blob file (`db/blob_log.rs`).
    if o.blob.enable_blob_files && !o.unordered_write && rng.gen_bool(0.5) {
        o.blob.write_blobs_at_commit = true;
    }
    // Half the DBs record each table's whole-file checksum, which verification checks
    // (`verify::read_all`).
    o.file_checksums = rng.gen_bool(0.5);
    o
}

/// Default options with one of the write modes drawn: ordered (the default), pipelined,
/// without concurrent memtable inserts, or unordered; and a small or the default group bound.
fn write_mode(rng: &mut StdRng) -> Options {
    let mode = rng.gen_range(0..4);
    Options {
        enable_pipelined_write: mode == 1,
        allow_concurrent_memtable_write: mode != 2,
        unordered_write: mode == 3,
        max_write_batch_group_size_bytes: [4 << 10, 1 << 20][rng.gen_range(0..2)],
        wal_zeros_ahead: rng.gen_bool(0.75),
        // On the memory file system direct handles are the plain ones: this covers the
        // engine's choice of handles (`env/direct_tables.rs`), not the alignment.
        use_direct_reads: rng.gen_bool(0.25),
        use_direct_io_for_flush_and_compaction: rng.gen_bool(0.25),
        // Table writes handed to writeback as they grow, and paying a (generous) rate limit.
        bytes_per_sync: [0, 32 << 10][rng.gen_range(0..2)],
        // Half of the limiters auto-tuned: their rate starts at half the ceiling and moves.
        rate_limiter: rng.gen_bool(0.25).then(|| {
            std::sync::Arc::new(if rng.gen_bool(0.5) {
                strata::env::RateLimiter::new_auto_tuned(256 << 20)
            } else {
                strata::env::RateLimiter::new(256 << 20)
            })
        }),
        ..metadata_mode(rng)
    }
}

/// Default options with the placement and layout of index and filter blocks drawn: kept by
/// the table or read through the block cache (pinned for L0 or not), one index block or a
/// partitioned index (with or without partitioned filters, small partitions so tables have
/// several), prefix-compressed index blocks or not, and aligned data blocks.
fn metadata_mode(rng: &mut StdRng) -> Options {
    let cached = rng.gen_bool(0.5);
    Options {
        cache_index_and_filter_blocks: cached,
        cache_index_and_filter_blocks_with_high_priority: rng.gen_bool(0.75),
        pin_l0_filter_and_index_blocks_in_cache: cached && rng.gen_bool(0.5),
        pin_top_level_index_and_filter: rng.gen_bool(0.5),
        index_type: if rng.gen_bool(0.5) {
            strata::IndexType::TwoLevel
        } else {
            strata::IndexType::BinarySearch
        },
        partition_filters: rng.gen_bool(0.5),
        metadata_block_size: [128, 4096][rng.gen_range(0..2)],
        block_align: rng.gen_bool(0.25),
        compaction_filter_factory: rng.gen_bool(0.5).then(stress_filter),
        index_block_restart_interval: [1, 3, 8][rng.gen_range(0..3)],
        block_size_deviation: [0, 10, 50][rng.gen_range(0..3)],
        // No memtable filter, the default, or one word (every lookup a false positive).
        memtable_bloom_size_ratio: [0.0, 0.01, 1e-9][rng.gen_range(0..3)],
        // The vector memtable in one run of four: appended entries, sorted when read, in the
        // flush and in recovery.
        vector_memtable: rng.gen_bool(0.25),
        // Half the runs copy WAL records into a mapping of the zeros ahead (the OS's file
        // system only; the simulated ones write as before).
        wal_mmap_writes: rng.gen_bool(0.5),
        ..Options::default()
    }
}

/// The crash loops' compaction filter: removes dead values (`value::dead_value`), so the
/// filter's removals go through flushes, compactions, crashes and recovery without changing
/// what any read means.
pub fn stress_filter() -> Arc<dyn strata::CompactionFilterFactory> {
    Arc::new(DeadValueFilter)
}

struct DeadValueFilter;

impl strata::CompactionFilter for DeadValueFilter {
    fn filter(&mut self, _level: u32, _key: &[u8], v: &[u8]) -> strata::Decision {
        if value::decode_dead_value(v).is_some() {
            strata::Decision::Remove
        } else {
            strata::Decision::Keep
        }
    }
    fn name(&self) -> &str {
        "stress-dead-values"
    }
}

impl strata::CompactionFilterFactory for DeadValueFilter {
    fn create(&self, _: &strata::CompactionFilterContext) -> Box<dyn strata::CompactionFilter> {
        Box::new(DeadValueFilter)
    }
    fn name(&self) -> &str {
        "stress-dead-values"
    }
}

/// The options `random_options` varies, for failure reports.
pub fn describe_options(o: &Options) -> String {
    format!(
        "write_buffer_size={} max_write_buffer_number={} to_merge={} max_total_wal={} \
         block_size={} restart={} bloom={} compression={:?} checksum={:?} cache={} \
         paranoid={} l0_trigger={} level_base={} \
         target_file={} dynamic={} subcompactions={} jobs={} wal_recovery={:?} \
         l0_slowdown={} l0_stop={} soft_pending={} hard_pending={} delayed_rate={} \
         avoid_flush_during_recovery={} recycle_log_file_num={} wal_bytes_per_sync={} \
         wal_dir={:?} pipelined={} concurrent_memtable={} unordered={} group_bytes={} \
         wal_zeros_ahead={} direct_reads={} direct_writes={} bytes_per_sync={} \
         rate_limiter={:?} compaction_style={:?} universal={:?} tiered={:?} \
         cache_index_and_filter={} high_pri={} pin_l0={} pin_top={} index_type={:?} \
         partition_filters={} metadata_block_size={} block_align={} compaction_filter={} \
         db_write_buffer_size={} index_restart={} block_size_deviation={} \
         memtable_bloom={} vector_memtable={} wal_mmap_writes={} db_paths={:?} comparator={} \
         compression_threads={} blob_files={} min_blob={} blob_file_size={} blob_compression={:?} \
         blob_gc={} blobs_at_commit={} file_checksums={}",
        o.write_buffer_size,
        o.max_write_buffer_number,
        o.min_write_buffer_number_to_merge,
        o.max_total_wal_size,
        o.block_size,
        o.block_restart_interval,
        o.bloom_bits_per_key,
        o.compression,
        o.checksum,
        o.block_cache_size,
        o.paranoid_checks,
        o.level0_file_num_compaction_trigger,
        o.max_bytes_for_level_base,
        o.target_file_size_base,
        o.level_compaction_dynamic_level_bytes,
        o.max_subcompactions,
        o.max_background_jobs,
        o.wal_recovery_mode,
        o.level0_slowdown_writes_trigger,
        o.level0_stop_writes_trigger,
        o.soft_pending_compaction_bytes_limit,
        o.hard_pending_compaction_bytes_limit,
        o.delayed_write_rate,
        o.avoid_flush_during_recovery,
        o.recycle_log_file_num,
        o.wal_bytes_per_sync,
        o.wal_dir,
        o.enable_pipelined_write,
        o.allow_concurrent_memtable_write,
        o.unordered_write,
        o.max_write_batch_group_size_bytes,
        o.wal_zeros_ahead,
        o.use_direct_reads,
        o.use_direct_io_for_flush_and_compaction,
        o.bytes_per_sync,
        o.rate_limiter.as_ref().map(|r| (r.bytes_per_sec(), r.is_auto_tuned())),
        o.compaction_style,
        o.compaction_options_universal,
        o.compaction_options_tiered,
        o.cache_index_and_filter_blocks,
        o.cache_index_and_filter_blocks_with_high_priority,
        o.pin_l0_filter_and_index_blocks_in_cache,
        o.pin_top_level_index_and_filter,
        o.index_type,
        o.partition_filters,
        o.metadata_block_size,
        o.block_align,
        o.compaction_filter_factory.as_ref().map_or("none", |f| f.name()),
        o.db_write_buffer_size,
        o.index_block_restart_interval,
        o.block_size_deviation,
        o.memtable_bloom_size_ratio,
        o.vector_memtable,
        o.wal_mmap_writes,
        o.db_paths.iter().map(|p| (p.path(), p.target_size())).collect::<Vec<_>>(),
        o.comparator.name(),
        o.compression_parallel_threads,
        o.blob.enable_blob_files,
        o.blob.min_blob_size,
        o.blob.blob_file_size,
        o.blob.blob_compression_type,
        o.blob.enable_blob_gc,
        o.blob.write_blobs_at_commit,
        o.file_checksums
    )
}

/// Options for opening a DB to verify it (the merge operator and the run's WAL directory are
/// what matter).
pub fn verify_options(fs: Arc<dyn FileSystem>, wal_dir: Option<std::path::PathBuf>) -> Options {
    Options {
        fs,
        merge_operator: strata::merge_operator::builtin_merge_operator("uint64add"),
        wal_dir,
        ..Options::default()
    }
}

/// The figures a crash or power-loss run reports.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    pub mode: String,
    pub seed: u64,
    pub seconds: f64,
    pub cycles: u64,
    /// Cycles ended by SIGKILL from the parent / by a kill point / by crash mode (power).
    pub endings: BTreeMap<String, u64>,
    pub acked_sync: u64,
    pub acked_nosync: u64,
    /// Acknowledged writes that had to survive and did not.
    pub lost: u64,
    /// Garbage values, values no write produced, live reads that disagreed with the oracle.
    pub wrong: u64,
    /// Batches found partly applied.
    pub torn_batches: u64,
    /// Power loss: recovered states that are no prefix of the acknowledged history.
    pub prefix_violations: u64,
    /// Power loss: acknowledged non-sync writes dropped (allowed by the contract).
    pub unsynced_dropped: u64,
    /// Pending (unacknowledged) writes found applied / not applied after recovery.
    pub pending_new: u64,
    pub pending_old: u64,
    /// Checkpoints and restored backups taken while writers ran, opened and checked.
    pub copies_checked: u64,
    /// Of those, copies whose families disagree or that are no prefix of the writes holding
    /// every write acknowledged before the copy was asked for.
    pub torn_copies: u64,
    /// Kill loop: times another process (the parent) was refused the DB a child held.
    pub lock_refusals: u64,
    /// Recovery (`Db::open` after a crash) times in microseconds.
    pub recovery_us: Vec<u64>,
    pub kill_point_hits: BTreeMap<String, u64>,
    pub kill_point_fired: BTreeMap<String, u64>,
    /// Failures, each with the seed that reproduces it.
    pub failures: Vec<String>,
}

impl Summary {
    pub fn violations(&self) -> u64 {
        self.lost + self.wrong + self.torn_batches + self.prefix_violations + self.torn_copies
    }

    pub fn passed(&self) -> bool {
        self.violations() == 0 && self.failures.is_empty()
    }

    /// The report printed at the end of a run.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let (p50, p99, max) = verify::percentiles(&self.recovery_us);
        let ms = |us: u64| us as f64 / 1000.0;
        let _ = writeln!(s, "== strata-stress {} (seed {}) ==", self.mode, self.seed);
        let _ = writeln!(s, "duration:                    {:.1} s", self.seconds);
        let _ = writeln!(s, "cycles:                      {}", self.cycles);
        let endings: Vec<String> = self.endings.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(s, "cycle endings:               {}", endings.join(", "));
        let _ = writeln!(
            s,
            "acknowledged writes:         {} (sync {}, non-sync {})",
            self.acked_sync + self.acked_nosync,
            self.acked_sync,
            self.acked_nosync
        );
        let _ = writeln!(s, "acknowledged writes lost:    {}", self.lost);
        let _ = writeln!(s, "wrong values:                {}", self.wrong);
        let _ = writeln!(s, "torn batches:                {}", self.torn_batches);
        let _ = writeln!(s, "prefix violations:           {}", self.prefix_violations);
        if self.copies_checked > 0 {
            let _ = writeln!(
                s,
                "copies under writes:         {} checked, {} torn",
                self.copies_checked, self.torn_copies
            );
        }
        if self.lock_refusals > 0 {
            let _ = writeln!(s, "second-process opens refused: {}", self.lock_refusals);
        }
        if self.mode.starts_with("power") {
            let _ = writeln!(
                s,
                "unsynced acked writes dropped by power loss (allowed): {}",
                self.unsynced_dropped
            );
        }
        let _ = writeln!(
            s,
            "unacknowledged writes found applied / not applied: {} / {}",
            self.pending_new, self.pending_old
        );
        let _ = writeln!(
            s,
            "recovery time:               p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} opens)",
            ms(p50),
            ms(p99),
            ms(max),
            self.recovery_us.len()
        );
        if !self.kill_point_hits.is_empty() {
            let hits: Vec<String> =
                self.kill_point_hits.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(s, "kill points hit:             {}", hits.join(" "));
            let fired: Vec<String> =
                self.kill_point_fired.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(s, "kill points fired:           {}", fired.join(" "));
        }
        for f in &self.failures {
            let _ = writeln!(s, "FAILURE: {f}");
        }
        let _ = writeln!(
            s,
            "result: {}",
            if self.passed() { "PASS".to_string() } else { format!("FAIL (seed {})", self.seed) }
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In both loop orders a single-key range holds its key and none of the loops' others.
    #[test]
    fn single_key_ranges_hold_only_their_key() {
        for order in [strata::comparator::KeyOrder::Bytewise, loop_key_order()] {
            let keys: Vec<Vec<u8>> = (0..3000).step_by(7).map(value::key).collect();
            for k in &keys {
                let end = single_key_range_end(&order, k);
                let inside: Vec<&Vec<u8>> =
                    keys.iter().filter(|x| order.le(k, x) && order.lt(x, &end)).collect();
                assert_eq!(inside, [k], "{order:?}");
            }
        }
    }
}
