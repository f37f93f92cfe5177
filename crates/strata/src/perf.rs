//! The `rocksdb` crate's `perf` module: the calling thread's perf context
//! ([`PerfContext`], [`set_perf_stats`]; `perf_context.rs` has the contract), and the
//! approximate memory of DBs and caches ([`get_memory_usage_stats`], [`MemoryUsageBuilder`]).
//!
//! Memory figures, as RocksDB's `MemoryUtil` defines them, summed over the DBs (all their
//! column families) and caches given (a cache given twice counts once):
//! - `mem_table_total`: every memtable the DBs hold in memory (`size-all-mem-tables`);
//! - `mem_table_unflushed`: those not flushed yet (`cur-size-all-mem-tables`); Strata keeps no
//!   flushed memtables, so it equals the total;
//! - `mem_table_readers_total`: what open table readers keep outside the block cache
//!   (`estimate-table-readers-mem`);
//! - `cache_total`: the caches' charge plus their own structures (which exist even when
//!   empty); a DB's block cache counts only when given as a cache.
//!
//! Each figure is read when [`MemoryUsageBuilder::build`] runs: a [`MemoryUsage`] is a
//! snapshot.

use crate::db::Db;
use crate::sstable::Cache;

pub use crate::perf_context::{
    perf_stats_level, set_perf_stats, PerfContext, PerfMetric, PerfStatsLevel,
};

/// Approximate memory of DBs and caches (module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryUsageStats {
    /// Memory of all the memtables.
    pub mem_table_total: u64,
    /// Memory of the memtables not flushed yet.
    pub mem_table_unflushed: u64,
    /// Memory table readers keep outside the block cache.
    pub mem_table_readers_total: u64,
    /// Memory of the caches.
    pub cache_total: u64,
}

/// The memory of the DBs and caches a [`MemoryUsageBuilder`] was given, when it was built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryUsage {
    stats: MemoryUsageStats,
}

impl MemoryUsage {
    /// Memory of all the memtables.
    pub fn approximate_mem_table_total(&self) -> u64 {
        self.stats.mem_table_total
    }

    /// Memory of the memtables not flushed yet.
    pub fn approximate_mem_table_unflushed(&self) -> u64 {
        self.stats.mem_table_unflushed
    }

    /// Memory table readers keep outside the block cache.
    pub fn approximate_mem_table_readers_total(&self) -> u64 {
        self.stats.mem_table_readers_total
    }

    /// Memory of the caches.
    pub fn approximate_cache_total(&self) -> u64 {
        self.stats.cache_total
    }
}

/// Gathers DBs and caches, then measures them ([`Self::build`]). It borrows them: it cannot
/// outlive a DB or cache it was given.
#[derive(Default)]
pub struct MemoryUsageBuilder<'a> {
    dbs: Vec<&'a Db>,
    caches: Vec<&'a Cache>,
}

impl<'a> MemoryUsageBuilder<'a> {
    /// An empty builder (never fails; a `Result` as in the `rocksdb` crate).
    pub fn new() -> crate::Result<Self> {
        Ok(MemoryUsageBuilder::default())
    }

    /// Counts the memtables and table readers of `db` (a `TransactionDB` or
    /// `OptimisticTransactionDB` is given as the DB it wraps: `add_db(&txn_db)`).
    pub fn add_db(&mut self, db: &'a Db) {
        self.dbs.push(db);
    }

    /// [`Self::add_db`] under the `rocksdb` crate's name for transaction DBs.
    pub fn add_tx_db(&mut self, db: &'a Db) {
        self.add_db(db);
    }

    /// Counts the memory of `cache` (once however often given).
    pub fn add_cache(&mut self, cache: &'a Cache) {
        self.caches.push(cache);
    }

    /// Measures the DBs and caches now.
    pub fn build(&self) -> crate::Result<MemoryUsage> {
        let mut stats = MemoryUsageStats::default();
        for db in &self.dbs {
            let m = db.memory_figures();
            stats.mem_table_total += m.mem_tables;
            stats.mem_table_unflushed += m.unflushed_mem_tables;
            stats.mem_table_readers_total += m.table_readers;
        }
        let mut seen: Vec<&Cache> = Vec::with_capacity(self.caches.len());
        for c in &self.caches {
            if !seen.iter().any(|s| Cache::ptr_eq(s, c)) {
                seen.push(c);
                stats.cache_total += c.approximate_memory_usage() as u64;
            }
        }
        Ok(MemoryUsage { stats })
    }
}

/// The memory of `dbs` and `caches` now (module doc).
pub fn get_memory_usage_stats(
    dbs: Option<&[&Db]>,
    caches: Option<&[&Cache]>,
) -> crate::Result<MemoryUsageStats> {
    let mut builder = MemoryUsageBuilder::new()?;
    for db in dbs.unwrap_or_default() {
        builder.add_db(db);
    }
    for cache in caches.unwrap_or_default() {
        builder.add_cache(cache);
    }
    Ok(builder.build()?.stats)
}
