//! The `rocksdb` crate's compaction option types: the per-style option builders
//! (`UniversalCompactOptions`, `FifoCompactOptions`, which are Strata's own style options with
//! RocksDB's setters), the priority of leveled picks, and the options of one manual
//! compaction (`CompactOptions`) or of one wait for compactions (`WaitForCompactOptions`).
//! `Db::compact_range_opt` and `Db::wait_for_compact_opt` read the latter two.

use std::time::Duration;

use crate::compaction::style::{
    CompactionStopStyle, FifoCompactionOptions, UniversalCompactionOptions,
};

/// The `rocksdb` crate's name of [`UniversalCompactionOptions`].
pub type UniversalCompactOptions = UniversalCompactionOptions;
/// The `rocksdb` crate's name of [`FifoCompactionOptions`].
pub type FifoCompactOptions = FifoCompactionOptions;
/// The `rocksdb` crate's name of [`CompactionStopStyle`].
pub type UniversalCompactionStopStyle = CompactionStopStyle;

#[allow(non_upper_case_globals)]
impl CompactionStopStyle {
    /// The `rocksdb` crate's name of [`CompactionStopStyle::SimilarSize`].
    pub const Similar: CompactionStopStyle = CompactionStopStyle::SimilarSize;
    /// The `rocksdb` crate's name of [`CompactionStopStyle::TotalSize`].
    pub const Total: CompactionStopStyle = CompactionStopStyle::TotalSize;
}

/// A C `int` as a `u32`, negative as 0.
fn non_negative(n: i32) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

impl UniversalCompactionOptions {
    /// `size_ratio` (negative: 0).
    pub fn set_size_ratio(&mut self, ratio: i32) {
        self.size_ratio = non_negative(ratio);
    }

    /// `min_merge_width` (negative: 0, which opening refuses as below 2).
    pub fn set_min_merge_width(&mut self, num: i32) {
        self.min_merge_width = non_negative(num);
    }

    /// `max_merge_width` (negative: 0, which opening refuses as below `min_merge_width`).
    pub fn set_max_merge_width(&mut self, num: i32) {
        self.max_merge_width = non_negative(num);
    }

    /// `max_size_amplification_percent` (negative: 0, which opening refuses).
    pub fn set_max_size_amplification_percent(&mut self, v: i32) {
        self.max_size_amplification_percent = non_negative(v);
    }

    /// `compression_size_percent` (-1: compress every output).
    pub fn set_compression_size_percent(&mut self, v: i32) {
        self.compression_size_percent = v;
    }

    /// `stop_style`.
    pub fn set_stop_style(&mut self, style: CompactionStopStyle) {
        self.stop_style = style;
    }
}

impl FifoCompactionOptions {
    /// `max_table_files_size`.
    pub fn set_max_table_files_size(&mut self, nbytes: u64) {
        self.max_table_files_size = nbytes;
    }
}

/// Which files a leveled compaction picks first (RocksDB's `compaction_pri`). Strata's picker
/// has one order of its own (the file whose compaction rewrites the fewest bytes of the next
/// level per byte, as `MinOverlappingRatio`); the setting is kept for the LOG.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum CompactionPri {
    /// Larger files first, weighted by deletions.
    ByCompensatedSize = 0,
    /// Files whose newest data is oldest first.
    OldestLargestSeqFirst = 1,
    /// Files not compacted for longest first.
    OldestSmallestSeqFirst = 2,
    /// Files overlapping the least of the next level per byte first (RocksDB's default).
    MinOverlappingRatio = 3,
    /// Round-robin over the key space.
    RoundRobin = 4,
}

/// What a manual compaction does with the bottommost level (RocksDB's
/// `BottommostLevelCompaction`).
#[derive(Debug, Copy, Clone, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum BottommostLevelCompaction {
    /// Leave the bottommost level alone.
    Skip = 0,
    /// Rewrite it only when a compaction filter is set. Default.
    #[default]
    IfHaveCompactionFilter,
    /// Always rewrite it.
    Force,
    /// Always rewrite it, but not the files this compaction just wrote there.
    ForceOptimized,
}

/// Options of one manual compaction (`Db::compact_range_opt`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactOptions {
    /// No automatic compaction runs beside this one. Default true.
    pub exclusive_manual_compaction: bool,
    /// The bottommost level's treatment.
    pub bottommost_level_compaction: BottommostLevelCompaction,
    /// Move the result to `target_level` afterwards. Default false.
    pub change_level: bool,
    /// With `change_level`: the level to move to; -1 (default) the lowest level that fits.
    pub target_level: i32,
    /// Raises the family's `full_history_ts_low` to this before compacting
    /// (`set_full_history_ts_low`; a family with user-defined timestamps, `db/timestamps.rs`).
    /// Default: none.
    pub full_history_ts_low: Option<Vec<u8>>,
}

impl Default for CompactOptions {
    fn default() -> Self {
        CompactOptions {
            exclusive_manual_compaction: true,
            bottommost_level_compaction: BottommostLevelCompaction::IfHaveCompactionFilter,
            change_level: false,
            target_level: -1,
            full_history_ts_low: None,
        }
    }
}

impl CompactOptions {
    /// `exclusive_manual_compaction`.
    pub fn set_exclusive_manual_compaction(&mut self, v: bool) {
        self.exclusive_manual_compaction = v;
    }

    /// `bottommost_level_compaction`.
    pub fn set_bottommost_level_compaction(&mut self, lvl: BottommostLevelCompaction) {
        self.bottommost_level_compaction = lvl;
    }

    /// `change_level`.
    pub fn set_change_level(&mut self, v: bool) {
        self.change_level = v;
    }

    /// `target_level` (-1: the lowest level that fits).
    pub fn set_target_level(&mut self, lvl: i32) {
        self.target_level = lvl;
    }

    /// `full_history_ts_low` (see the field).
    pub fn set_full_history_ts_low<S: Into<Vec<u8>>>(&mut self, ts: S) {
        self.full_history_ts_low = Some(ts.into());
    }
}

/// Options of one wait for background compactions (`Db::wait_for_compact_opt`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitForCompactOptions {
    /// Return `Incomplete` instead of waiting while background work is paused. Default false.
    pub abort_on_pause: bool,
    /// Flush the memtables first. Default false.
    pub flush: bool,
    /// Give up with `TimedOut` after this long; `None` (default, or 0 µs) waits as long as
    /// it takes.
    pub timeout: Option<Duration>,
}

impl WaitForCompactOptions {
    /// `abort_on_pause`.
    pub fn set_abort_on_pause(&mut self, v: bool) {
        self.abort_on_pause = v;
    }

    /// `flush`.
    pub fn set_flush(&mut self, v: bool) {
        self.flush = v;
    }

    /// The timeout in microseconds; 0 waits without limit.
    pub fn set_timeout(&mut self, microseconds: u64) {
        self.timeout = (microseconds > 0).then(|| Duration::from_micros(microseconds));
    }
}
