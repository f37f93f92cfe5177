//! RocksDB's perf context: per-thread counts of the work this thread's reads and writes did
//! (blocks read, cache hits, memtables searched, ...), read back by [`PerfContext`] on the same
//! thread. The public face is `strata::perf`.
//!
//! Contract:
//! - Counts are the calling thread's alone, since the thread started or last reset them.
//! - [`set_perf_stats`] sets this thread's level: `Disable` counts nothing, `EnableCount`
//!   (each thread's default, as in RocksDB) counts, the `EnableTime*` levels also time the
//!   steps that have timers here.
//! - Counting is a thread-local add after one branch on the thread's level: no atomics.
//! - Metrics the engine does not maintain read 0; `docs/rocksdb_port.md` lists those that are
//!   maintained.

use std::cell::Cell;
use std::fmt::Write as _;
use std::marker::PhantomData;
use std::time::Instant;

/// What a thread's perf context records (RocksDB's `PerfLevel`).
#[derive(Debug, Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(i32)]
pub enum PerfStatsLevel {
    /// Not a level: [`set_perf_stats`] leaves the thread's level as it was.
    Uninitialized = 0,
    /// Nothing.
    Disable,
    /// Counts only (the default).
    EnableCount,
    /// Counts and times, except of mutexes.
    EnableTimeExceptForMutex,
    /// Counts, times and CPU times, except of mutexes.
    EnableTimeAndCPUTimeExceptForMutex,
    /// Counts and times.
    EnableTime,
    /// Not a level: [`set_perf_stats`] leaves the thread's level as it was.
    OutOfBound,
}

macro_rules! perf_metrics {
    ($($v:ident = $n:literal => $name:literal,)+) => {
        /// A counter of the perf context (RocksDB's `PerfContext` field of the same name).
        #[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        #[repr(i32)]
        pub enum PerfMetric {
            $(
                #[doc = concat!("`", $name, "`")]
                $v = $n,
            )+
            /// Not a metric: the number of metrics (reads 0).
            TotalMetricCount = 68,
        }

        /// RocksDB's field names, in metric order.
        const NAMES: [&str; NUM_METRICS] = [$($name,)+];

        const ALL: [PerfMetric; NUM_METRICS] = [$(PerfMetric::$v,)+];
    };
}

const NUM_METRICS: usize = 68;

perf_metrics! {
    UserKeyComparisonCount = 0 => "user_key_comparison_count",
    BlockCacheHitCount = 1 => "block_cache_hit_count",
    BlockReadCount = 2 => "block_read_count",
    BlockReadByte = 3 => "block_read_byte",
    BlockReadTime = 4 => "block_read_time",
    BlockChecksumTime = 5 => "block_checksum_time",
    BlockDecompressTime = 6 => "block_decompress_time",
    GetReadBytes = 7 => "get_read_bytes",
    MultigetReadBytes = 8 => "multiget_read_bytes",
    IterReadBytes = 9 => "iter_read_bytes",
    InternalKeySkippedCount = 10 => "internal_key_skipped_count",
    InternalDeleteSkippedCount = 11 => "internal_delete_skipped_count",
    InternalRecentSkippedCount = 12 => "internal_recent_skipped_count",
    InternalMergeCount = 13 => "internal_merge_count",
    GetSnapshotTime = 14 => "get_snapshot_time",
    GetFromMemtableTime = 15 => "get_from_memtable_time",
    GetFromMemtableCount = 16 => "get_from_memtable_count",
    GetPostProcessTime = 17 => "get_post_process_time",
    GetFromOutputFilesTime = 18 => "get_from_output_files_time",
    SeekOnMemtableTime = 19 => "seek_on_memtable_time",
    SeekOnMemtableCount = 20 => "seek_on_memtable_count",
    NextOnMemtableCount = 21 => "next_on_memtable_count",
    PrevOnMemtableCount = 22 => "prev_on_memtable_count",
    SeekChildSeekTime = 23 => "seek_child_seek_time",
    SeekChildSeekCount = 24 => "seek_child_seek_count",
    SeekMinHeapTime = 25 => "seek_min_heap_time",
    SeekMaxHeapTime = 26 => "seek_max_heap_time",
    SeekInternalSeekTime = 27 => "seek_internal_seek_time",
    FindNextUserEntryTime = 28 => "find_next_user_entry_time",
    WriteWalTime = 29 => "write_wal_time",
    WriteMemtableTime = 30 => "write_memtable_time",
    WriteDelayTime = 31 => "write_delay_time",
    WritePreAndPostProcessTime = 32 => "write_pre_and_post_process_time",
    DbMutexLockNanos = 33 => "db_mutex_lock_nanos",
    DbConditionWaitNanos = 34 => "db_condition_wait_nanos",
    MergeOperatorTimeNanos = 35 => "merge_operator_time_nanos",
    ReadIndexBlockNanos = 36 => "read_index_block_nanos",
    ReadFilterBlockNanos = 37 => "read_filter_block_nanos",
    NewTableBlockIterNanos = 38 => "new_table_block_iter_nanos",
    NewTableIteratorNanos = 39 => "new_table_iterator_nanos",
    BlockSeekNanos = 40 => "block_seek_nanos",
    FindTableNanos = 41 => "find_table_nanos",
    BloomMemtableHitCount = 42 => "bloom_memtable_hit_count",
    BloomMemtableMissCount = 43 => "bloom_memtable_miss_count",
    BloomSstHitCount = 44 => "bloom_sst_hit_count",
    BloomSstMissCount = 45 => "bloom_sst_miss_count",
    KeyLockWaitTime = 46 => "key_lock_wait_time",
    KeyLockWaitCount = 47 => "key_lock_wait_count",
    EnvNewSequentialFileNanos = 48 => "env_new_sequential_file_nanos",
    EnvNewRandomAccessFileNanos = 49 => "env_new_random_access_file_nanos",
    EnvNewWritableFileNanos = 50 => "env_new_writable_file_nanos",
    EnvReuseWritableFileNanos = 51 => "env_reuse_writable_file_nanos",
    EnvNewRandomRwFileNanos = 52 => "env_new_random_rw_file_nanos",
    EnvNewDirectoryNanos = 53 => "env_new_directory_nanos",
    EnvFileExistsNanos = 54 => "env_file_exists_nanos",
    EnvGetChildrenNanos = 55 => "env_get_children_nanos",
    EnvGetChildrenFileAttributesNanos = 56 => "env_get_children_file_attributes_nanos",
    EnvDeleteFileNanos = 57 => "env_delete_file_nanos",
    EnvCreateDirNanos = 58 => "env_create_dir_nanos",
    EnvCreateDirIfMissingNanos = 59 => "env_create_dir_if_missing_nanos",
    EnvDeleteDirNanos = 60 => "env_delete_dir_nanos",
    EnvGetFileSizeNanos = 61 => "env_get_file_size_nanos",
    EnvGetFileModificationTimeNanos = 62 => "env_get_file_modification_time_nanos",
    EnvRenameFileNanos = 63 => "env_rename_file_nanos",
    EnvLinkFileNanos = 64 => "env_link_file_nanos",
    EnvLockFileNanos = 65 => "env_lock_file_nanos",
    EnvUnlockFileNanos = 66 => "env_unlock_file_nanos",
    EnvNewLoggerNanos = 67 => "env_new_logger_nanos",
}

impl PerfMetric {
    /// RocksDB's name of the counter (`None` for `TotalMetricCount`).
    pub fn name(self) -> Option<&'static str> {
        NAMES.get(self as usize).copied()
    }
}

struct Context {
    level: Cell<i32>,
    counts: [Cell<u64>; NUM_METRICS],
}

thread_local! {
    static CONTEXT: Context = const {
        Context {
            level: Cell::new(PerfStatsLevel::EnableCount as i32),
            counts: [const { Cell::new(0) }; NUM_METRICS],
        }
    };
}

/// Sets this thread's perf level (`Uninitialized` and `OutOfBound` leave it unchanged).
pub fn set_perf_stats(level: PerfStatsLevel) {
    if matches!(level, PerfStatsLevel::Uninitialized | PerfStatsLevel::OutOfBound) {
        return;
    }
    let _ = CONTEXT.try_with(|c| c.level.set(level as i32));
}

/// This thread's perf level.
pub fn perf_stats_level() -> PerfStatsLevel {
    let level = CONTEXT.try_with(|c| c.level.get()).unwrap_or(PerfStatsLevel::Disable as i32);
    match level {
        1 => PerfStatsLevel::Disable,
        2 => PerfStatsLevel::EnableCount,
        3 => PerfStatsLevel::EnableTimeExceptForMutex,
        4 => PerfStatsLevel::EnableTimeAndCPUTimeExceptForMutex,
        _ => PerfStatsLevel::EnableTime,
    }
}

/// Adds `n` to this thread's `metric` when its level counts.
#[inline]
pub(crate) fn count(metric: PerfMetric, n: u64) {
    let _ = CONTEXT.try_with(|c| {
        if c.level.get() >= PerfStatsLevel::EnableCount as i32 {
            if let Some(cell) = c.counts.get(metric as usize) {
                cell.set(cell.get().wrapping_add(n));
            }
        }
    });
}

/// Times a step into this thread's `metric` (nanoseconds) when its level times, adding the
/// time when dropped.
pub(crate) struct PerfTimer {
    running: Option<(PerfMetric, Instant)>,
}

impl PerfTimer {
    /// Starts timing (reads the clock only when this thread's level times).
    #[inline]
    pub(crate) fn start(metric: PerfMetric) -> PerfTimer {
        let timing = CONTEXT
            .try_with(|c| c.level.get() >= PerfStatsLevel::EnableTimeExceptForMutex as i32)
            .unwrap_or(false);
        PerfTimer { running: timing.then(|| (metric, Instant::now())) }
    }
}

impl Drop for PerfTimer {
    #[inline]
    fn drop(&mut self) {
        if let Some((metric, start)) = self.running.take() {
            let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            count(metric, nanos);
        }
    }
}

/// The calling thread's perf counters. A handle, not a copy: each call reads (or resets) the
/// counters of the thread it is made on, as of that call. Not `Send`: it speaks for the
/// thread that made it.
#[derive(Debug, Default)]
pub struct PerfContext {
    _this_thread: PhantomData<*const ()>,
}

impl PerfContext {
    /// Sets every counter of this thread to 0.
    pub fn reset(&mut self) {
        let _ = CONTEXT.try_with(|c| c.counts.iter().for_each(|x| x.set(0)));
    }

    /// `name = value` for each counter (with `exclude_zero_counters`, each nonzero one),
    /// joined by `, ` (RocksDB's `PerfContext::ToString`).
    pub fn report(&self, exclude_zero_counters: bool) -> String {
        let mut s = String::new();
        for m in ALL {
            let v = self.metric(m);
            if exclude_zero_counters && v == 0 {
                continue;
            }
            if !s.is_empty() {
                s.push_str(", ");
            }
            let _ = write!(s, "{} = {v}", NAMES[m as usize]);
        }
        s
    }

    /// This thread's count of `id` (0 for `TotalMetricCount`).
    pub fn metric(&self, id: PerfMetric) -> u64 {
        CONTEXT.try_with(|c| c.counts.get(id as usize).map_or(0, Cell::get)).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_per_thread_and_obey_the_level() {
        let mut ctx = PerfContext::default();
        ctx.reset();
        count(PerfMetric::BlockReadCount, 2);
        count(PerfMetric::BlockReadByte, 100);
        assert_eq!(ctx.metric(PerfMetric::BlockReadCount), 2);
        assert_eq!(ctx.metric(PerfMetric::TotalMetricCount), 0);
        std::thread::spawn(|| {
            let ctx = PerfContext::default();
            assert_eq!(ctx.metric(PerfMetric::BlockReadCount), 0);
            count(PerfMetric::BlockReadCount, 5);
            assert_eq!(ctx.metric(PerfMetric::BlockReadCount), 5);
        })
        .join()
        .unwrap();
        assert_eq!(ctx.metric(PerfMetric::BlockReadCount), 2);
        assert_eq!(ctx.report(true), "block_read_count = 2, block_read_byte = 100");
        assert!(ctx.report(false).starts_with("user_key_comparison_count = 0, "));
        assert_eq!(ctx.report(false).matches(" = ").count(), NUM_METRICS);

        set_perf_stats(PerfStatsLevel::Disable);
        count(PerfMetric::BlockReadCount, 1);
        drop(PerfTimer::start(PerfMetric::BlockReadTime));
        assert_eq!(ctx.metric(PerfMetric::BlockReadCount), 2);
        set_perf_stats(PerfStatsLevel::OutOfBound);
        assert_eq!(perf_stats_level(), PerfStatsLevel::Disable);
        set_perf_stats(PerfStatsLevel::EnableTime);
        let t = PerfTimer::start(PerfMetric::BlockReadTime);
        std::thread::sleep(std::time::Duration::from_millis(1));
        drop(t);
        assert!(ctx.metric(PerfMetric::BlockReadTime) >= 1_000_000);
        ctx.reset();
        assert_eq!(ctx.report(true), "");
        set_perf_stats(PerfStatsLevel::EnableCount);
    }

    #[test]
    fn names_follow_the_variants() {
        assert_eq!(PerfMetric::UserKeyComparisonCount.name(), Some("user_key_comparison_count"));
        assert_eq!(PerfMetric::EnvNewLoggerNanos.name(), Some("env_new_logger_nanos"));
        assert_eq!(PerfMetric::TotalMetricCount.name(), None);
        for (i, m) in ALL.iter().enumerate() {
            assert_eq!(*m as usize, i);
        }
    }
}
