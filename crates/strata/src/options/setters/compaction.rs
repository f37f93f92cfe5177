//! The `rocksdb` crate's compaction setters beyond those of `setters.rs`.

use crate::compaction::style::{
    CompactionStyle, FifoCompactionOptions, UniversalCompactionOptions,
};
use crate::options::accepted::CompactOnDeletionCollector;
use crate::options::compact_opts::CompactionPri;
use crate::options::Options;
use crate::sstable::CompressionType;

/// A C `int` as a `usize`, negative as 0.
fn count(n: i32) -> usize {
    usize::try_from(n).unwrap_or(0)
}

impl Options {
    /// Leveled compaction sized for `memtable_memory_budget` bytes of memtables, as RocksDB's
    /// `OptimizeLevelStyleCompaction`: memtables of a quarter of it (up to 6 of them), L0
    /// compacted at 2 files, a base level of the budget with files of an eighth of it, and no
    /// compression on L0 and L1 (LZ4 below).
    pub fn optimize_level_style_compaction(&mut self, memtable_memory_budget: usize) {
        let budget = memtable_memory_budget.max(4096 * 4);
        self.write_buffer_size = budget / 4;
        self.min_write_buffer_number_to_merge = 2;
        self.max_write_buffer_number = 6;
        self.level0_file_num_compaction_trigger = 2;
        self.target_file_size_base = (budget / 8) as u64;
        self.max_bytes_for_level_base = budget as u64;
        self.compaction_style = CompactionStyle::Leveled;
        self.compression_per_level = (0..self.num_levels)
            .map(|l| if l < 2 { CompressionType::None } else { CompressionType::Lz4 })
            .collect();
    }

    /// Universal compaction sized for `memtable_memory_budget` bytes of memtables, as
    /// RocksDB's `OptimizeUniversalStyleCompaction`: memtables of a quarter of it (up to 6),
    /// and outputs compressed only once older runs hold less than 80% of the data.
    pub fn optimize_universal_style_compaction(&mut self, memtable_memory_budget: usize) {
        let budget = memtable_memory_budget.max(4096 * 4);
        self.write_buffer_size = budget / 4;
        self.min_write_buffer_number_to_merge = 2;
        self.max_write_buffer_number = 6;
        self.level0_file_num_compaction_trigger = 2;
        self.compaction_style = CompactionStyle::Universal;
        self.compaction_options_universal.compression_size_percent = 80;
    }

    /// RocksDB's `periodic_compaction_seconds`: kept (`AcceptedOptions`).
    pub fn set_periodic_compaction_seconds(&mut self, secs: u64) {
        self.accepted.periodic_compaction_seconds = secs;
    }

    /// `ttl` (see the field: FIFO's file age limit).
    pub fn set_ttl(&mut self, ttl_secs: u64) {
        self.ttl = ttl_secs;
    }

    /// Settings for loading much data before reading it, as RocksDB's `PrepareForBulkLoad`:
    /// no automatic compaction, no L0 or pending-bytes stall, two levels, six memtables and
    /// 256 MiB output files. Compact the whole range before reading.
    pub fn prepare_for_bulk_load(&mut self) {
        self.disable_auto_compactions = true;
        self.level0_file_num_compaction_trigger = 1 << 30;
        self.level0_slowdown_writes_trigger = 1 << 30;
        self.level0_stop_writes_trigger = 1 << 30;
        self.soft_pending_compaction_bytes_limit = 0;
        self.hard_pending_compaction_bytes_limit = 0;
        self.num_levels = 2;
        self.max_write_buffer_number = 6;
        self.min_write_buffer_number_to_merge = 1;
        self.target_file_size_base = 256 << 20;
    }

    /// `compaction_pri`: kept ([`CompactionPri`]).
    pub fn set_compaction_pri(&mut self, pri: CompactionPri) {
        self.accepted.compaction_pri = pri;
    }

    /// `compaction_options_universal`.
    pub fn set_universal_compaction_options(&mut self, uco: &UniversalCompactionOptions) {
        self.compaction_options_universal = uco.clone();
    }

    /// `compaction_options_fifo`.
    pub fn set_fifo_compaction_options(&mut self, fco: &FifoCompactionOptions) {
        self.compaction_options_fifo = fco.clone();
    }

    /// Compaction threads: `max_background_jobs = n + 1` (Strata's jobs are one flush
    /// thread and the compaction threads). Below 1 means 1.
    pub fn set_max_background_compactions(&mut self, n: i32) {
        self.max_background_jobs = count(n).max(1) + 1;
    }

    /// Flush threads: kept (Strata runs one flush thread per DB, which flushes every
    /// family's memtables in turn).
    pub fn set_max_background_flushes(&mut self, n: i32) {
        self.accepted.max_background_flushes = n;
    }

    /// Per-level extra factors of the level size targets: kept (targets use
    /// `max_bytes_for_level_multiplier` alone).
    pub fn set_max_bytes_for_level_multiplier_additional(&mut self, level_values: &[i32]) {
        self.accepted.max_bytes_for_level_multiplier_additional = level_values.to_vec();
    }

    /// A `CompactOnDeletionCollector`: kept and printed in the LOG
    /// ([`CompactOnDeletionCollector`]).
    pub fn add_compact_on_deletion_collector_factory(
        &mut self,
        window_size: usize,
        num_dels_trigger: usize,
        deletion_ratio: f64,
    ) {
        self.accepted.compact_on_deletion = Some(CompactOnDeletionCollector {
            window_size,
            deletion_trigger: num_dels_trigger,
            deletion_ratio,
        });
    }

    /// `optimize_filters_for_hits`: kept.
    pub fn set_optimize_filters_for_hits(&mut self, optimize_for_hits: bool) {
        self.accepted.optimize_filters_for_hits = optimize_for_hits;
    }

    /// `min_write_buffer_number_to_merge` (the `rocksdb` crate's older name).
    pub fn set_min_write_buffer_number(&mut self, nbuf: i32) {
        self.set_min_write_buffer_number_to_merge(nbuf);
    }

    /// `min_write_buffer_number_to_merge` (the field; below 1 means 1).
    pub fn set_min_write_buffer_number_to_merge(&mut self, to_merge: i32) {
        self.min_write_buffer_number_to_merge = count(to_merge).max(1);
    }

    /// `max_write_buffer_size_to_maintain`: kept.
    pub fn set_max_write_buffer_size_to_maintain(&mut self, size: i64) {
        self.accepted.max_write_buffer_size_to_maintain = size;
    }

    /// `experimental_mempurge_threshold`: kept (memtables are flushed whole).
    pub fn set_experimental_mempurge_threshold(&mut self, threshold: f64) {
        self.accepted.experimental_mempurge_threshold = threshold;
    }

    /// `allow_ingest_behind`: kept; ingestions with `ingest_behind` are still refused
    /// (`AcceptedOptions::allow_ingest_behind`).
    pub fn set_allow_ingest_behind(&mut self, val: bool) {
        self.accepted.allow_ingest_behind = val;
    }
}
