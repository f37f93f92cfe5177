//! The compaction styles and their options: leveled (the default), universal (tiered sorted
//! runs, RocksDB's rules), FIFO (a time-ordered log that drops its oldest files) and tiered
//! (Strata's write-optimised size tiering, `compaction/tiered.rs`).
//!
//! Every option documents its default and its trade-off; [`CompactionStyle::validate`]
//! refuses values the pickers cannot honour, naming the option and what was expected.

/// How the LSM tree is shaped (RocksDB's `compaction_style`, with the same numbers for the
/// three RocksDB styles).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CompactionStyle {
    /// Each level >= 1 is one sorted run about `max_bytes_for_level_multiplier` times the one
    /// above: low space and read amplification, the highest write amplification. Default.
    #[default]
    Leveled,
    /// Every L0 file and every non-empty level is a sorted run; runs of similar size merge
    /// (see [`UniversalCompactionOptions`]). Lower write amplification than leveled, at the
    /// price of more runs per read and up to `max_size_amplification_percent` extra space.
    Universal,
    /// Files stay in L0 and the oldest are deleted once the total exceeds
    /// `max_table_files_size` or they outlive the TTL (see [`FifoCompactionOptions`]). For
    /// data that expires (logs, time series): write amplification 1, but old data is lost.
    Fifo,
    /// Write-optimised size tiering (Strata only; RocksDB has no equivalent): sorted runs of
    /// similar size merge only `fan_in` at a time, the oldest run is rewritten only when the
    /// space-amplification bound requires it, and a sorted-run budget bounds reads (see
    /// [`TieredCompactionOptions`] and the cost model in `compaction/tiered.rs`). The lowest
    /// write amplification of the styles that keep all data, at the price of more sorted runs
    /// per read than universal and up to `max_size_amplification_percent` extra space.
    Tiered,
}

impl CompactionStyle {
    /// The style of RocksDB's number (`--compaction_style`): 0 leveled, 1 universal, 2 FIFO
    /// (RocksDB's 3, "none", is not offered). Tiered has no RocksDB number.
    pub fn from_rocksdb_number(n: i64) -> Option<CompactionStyle> {
        match n {
            0 => Some(CompactionStyle::Leveled),
            1 => Some(CompactionStyle::Universal),
            2 => Some(CompactionStyle::Fifo),
            _ => None,
        }
    }
}

/// When a size-ratio pick stops adding older runs (RocksDB's `stop_style`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CompactionStopStyle {
    /// Add the next older run while it is at most the total size picked so far grown by
    /// `size_ratio` percent. Default.
    #[default]
    TotalSize,
    /// Add the next older run while it and the last picked run are within `size_ratio`
    /// percent of each other.
    SimilarSize,
}

/// Options of universal compaction (RocksDB's `CompactionOptionsUniversal`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UniversalCompactionOptions {
    /// Percentage of slack in the size comparison of the size-ratio rule: a run joins a
    /// merge when it is at most (100 + size_ratio)% of the runs picked before it. Larger
    /// merges more often (fewer runs, more write amplification). Default: 1.
    pub size_ratio: u32,
    /// Fewest runs a size-ratio merge takes (at least 2). Default: 2.
    pub min_merge_width: u32,
    /// Most runs one size-ratio or run-count merge takes. Default: unlimited (`u32::MAX`).
    pub max_merge_width: u32,
    /// Once the runs above the oldest one hold more than this percentage of the oldest run's
    /// bytes, everything is merged into one run: the bound on space amplification (200 means
    /// the DB may take up to 3x its live data). Smaller bounds space more tightly and rewrites
    /// the largest run more often. Default: 200.
    pub max_size_amplification_percent: u32,
    /// With a value >= 0, a merge's output is compressed only when the runs older than it
    /// hold less than this percentage of all bytes (the young, soon rewritten runs stay
    /// uncompressed); -1 compresses every output. Default: -1.
    pub compression_size_percent: i32,
    /// Move the inputs of a merge to its output level without rewriting them when no two of
    /// them overlap (sequential inserts). Default: false.
    pub allow_trivial_move: bool,
    /// See [`CompactionStopStyle`]. Default: total size.
    pub stop_style: CompactionStopStyle,
    /// Incremental size-amplification compactions: when the size-amplification rule fires
    /// and the second oldest run is a level, merge only a key range of it (about half of
    /// `max_compaction_bytes` with what it overlaps in the oldest run, the range overlapping
    /// the fewest oldest-run bytes per byte) into the oldest run, instead of every run at
    /// once. Bounds each compaction's size and the transient space of a full merge; falls
    /// back to the full merge when no range is cheap enough. Default: false.
    pub incremental: bool,
}

impl Default for UniversalCompactionOptions {
    fn default() -> Self {
        UniversalCompactionOptions {
            size_ratio: 1,
            min_merge_width: 2,
            max_merge_width: u32::MAX,
            max_size_amplification_percent: 200,
            compression_size_percent: -1,
            allow_trivial_move: false,
            stop_style: CompactionStopStyle::TotalSize,
            incremental: false,
        }
    }
}

/// Options of FIFO compaction (RocksDB's `CompactionOptionsFIFO` and `ttl`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FifoCompactionOptions {
    /// Once the table files hold more bytes than this, the oldest are deleted until they fit.
    /// Default: 1 GiB.
    pub max_table_files_size: u64,
    /// Table files whose newest data is older than this many seconds are deleted; 0 keeps
    /// files regardless of age. Default: 0.
    pub ttl_secs: u64,
    /// Merge runs of small L0 files into one (intra-L0 compaction) once
    /// `level0_file_num_compaction_trigger` files are each at most `write_buffer_size`
    /// bytes: fewer files per read, each write rewritten once more. Default: false.
    pub allow_compaction: bool,
}

impl Default for FifoCompactionOptions {
    fn default() -> Self {
        FifoCompactionOptions {
            max_table_files_size: 1 << 30,
            ttl_secs: 0,
            allow_compaction: false,
        }
    }
}

/// Options of tiered compaction ([`CompactionStyle::Tiered`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TieredCompactionOptions {
    /// Sorted runs of similar size (within a factor of 2 of each other) that merge together:
    /// each byte is rewritten about once per factor of `fan_in` its run grows by. Larger
    /// rewrites less and leaves up to `fan_in - 1` runs of each size class (more runs per
    /// read). At least 2. Default: 8.
    pub fan_in: u32,
    /// The sorted-run budget: with more runs than this (none of them being compacted), the
    /// newest runs are merged until the budget holds, whatever their sizes. Bounds the runs a
    /// read visits; at least `fan_in`. Default: 16.
    pub max_sorted_runs: u32,
    /// Once the runs above the oldest hold this percentage of the oldest run's bytes,
    /// everything is merged into one run (the only rule that rewrites the oldest run): the
    /// bound on space amplification, and the price of it in writes, about
    /// 100 / this percentage per byte written. Default: 200.
    pub max_size_amplification_percent: u32,
    /// Give each table written the filter bits per key that minimise the summed
    /// false-positive rate of all runs for the same memory (Monkey): more than
    /// `bloom_bits_per_key` for small, new runs, slightly fewer for the largest
    /// (`compaction/filter_bits.rs`). Fewer wasted probes per lookup, the most with many
    /// runs; filter memory stays about the same. Default: false.
    pub skewed_filter_bits: bool,
}

impl Default for TieredCompactionOptions {
    fn default() -> Self {
        TieredCompactionOptions {
            fan_in: 8,
            max_sorted_runs: 16,
            max_size_amplification_percent: 200,
            skewed_filter_bits: false,
        }
    }
}

impl TieredCompactionOptions {
    /// Refuses values tiered compaction cannot honour.
    pub(crate) fn validate(&self) -> crate::Result<()> {
        if self.fan_in < 2 {
            return invalid(format!(
                "compaction_options_tiered.fan_in must be at least 2, got {}",
                self.fan_in
            ));
        }
        if self.max_sorted_runs < self.fan_in {
            return invalid(format!(
                "compaction_options_tiered.max_sorted_runs ({}) must be at least fan_in ({})",
                self.max_sorted_runs, self.fan_in
            ));
        }
        if self.max_size_amplification_percent == 0 {
            return invalid(
                "compaction_options_tiered.max_size_amplification_percent must be positive".into(),
            );
        }
        Ok(())
    }
}

fn invalid(msg: String) -> crate::Result<()> {
    Err(crate::Error::InvalidArgument(msg))
}

impl UniversalCompactionOptions {
    /// Refuses values universal compaction cannot honour.
    pub(crate) fn validate(&self) -> crate::Result<()> {
        if self.min_merge_width < 2 {
            return invalid(format!(
                "compaction_options_universal.min_merge_width must be at least 2, got {}",
                self.min_merge_width
            ));
        }
        if self.max_merge_width < self.min_merge_width {
            return invalid(format!(
                "compaction_options_universal.max_merge_width ({}) must be at least \
                 min_merge_width ({})",
                self.max_merge_width, self.min_merge_width
            ));
        }
        if self.max_size_amplification_percent == 0 {
            return invalid(
                "compaction_options_universal.max_size_amplification_percent must be positive"
                    .into(),
            );
        }
        if !(-1..=100).contains(&self.compression_size_percent) {
            return invalid(format!(
                "compaction_options_universal.compression_size_percent must be -1 or between 0 \
                 and 100, got {}",
                self.compression_size_percent
            ));
        }
        Ok(())
    }
}

impl FifoCompactionOptions {
    /// Refuses values FIFO compaction cannot honour.
    pub(crate) fn validate(&self) -> crate::Result<()> {
        if self.max_table_files_size == 0 {
            return invalid(
                "compaction_options_fifo.max_table_files_size must be positive (it would delete \
                 every file as soon as it is written)"
                    .into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_values_name_their_option() {
        assert!(UniversalCompactionOptions::default().validate().is_ok());
        assert!(FifoCompactionOptions::default().validate().is_ok());
        let cases = [
            (UniversalCompactionOptions { min_merge_width: 1, ..Default::default() }, "min_merge"),
            (
                UniversalCompactionOptions {
                    min_merge_width: 4,
                    max_merge_width: 3,
                    ..Default::default()
                },
                "max_merge_width",
            ),
            (
                UniversalCompactionOptions {
                    max_size_amplification_percent: 0,
                    ..Default::default()
                },
                "max_size_amplification_percent",
            ),
            (
                UniversalCompactionOptions { compression_size_percent: 101, ..Default::default() },
                "compression_size_percent",
            ),
        ];
        for (o, name) in cases {
            let e = o.validate().unwrap_err().to_string();
            assert!(e.contains(name), "{e}");
        }
        let e = FifoCompactionOptions { max_table_files_size: 0, ..Default::default() }
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_table_files_size"), "{e}");
        assert!(TieredCompactionOptions::default().validate().is_ok());
        let tiered = [
            (TieredCompactionOptions { fan_in: 1, ..Default::default() }, "fan_in must"),
            (
                TieredCompactionOptions { fan_in: 8, max_sorted_runs: 7, ..Default::default() },
                "max_sorted_runs (7)",
            ),
            (
                TieredCompactionOptions { max_size_amplification_percent: 0, ..Default::default() },
                "max_size_amplification_percent",
            ),
        ];
        for (o, name) in tiered {
            let e = o.validate().unwrap_err().to_string();
            assert!(e.contains(name) && e.contains("compaction_options_tiered"), "{e}");
        }
    }

    #[test]
    fn rocksdb_numbers() {
        assert_eq!(CompactionStyle::from_rocksdb_number(0), Some(CompactionStyle::Leveled));
        assert_eq!(CompactionStyle::from_rocksdb_number(1), Some(CompactionStyle::Universal));
        assert_eq!(CompactionStyle::from_rocksdb_number(2), Some(CompactionStyle::Fifo));
        assert_eq!(CompactionStyle::from_rocksdb_number(3), None);
    }
}
