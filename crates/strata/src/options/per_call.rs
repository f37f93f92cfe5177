//! The `rocksdb` crate's per-call options beyond `options.rs`'s fields' own setters: the
//! flush options, the read tier, and the setters of `ReadOptions` and `WriteOptions` fields
//! whose meaning each field documents.

use std::time::Duration;

use super::{ReadOptions, WriteOptions};

/// Options of one manual flush (`Db::flush_opt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlushOptions {
    /// Return once the flush is done (true, the default) or once it is scheduled.
    pub wait: bool,
}

impl Default for FlushOptions {
    fn default() -> Self {
        FlushOptions { wait: true }
    }
}

impl FlushOptions {
    /// Default flush options (waiting).
    pub fn new() -> FlushOptions {
        FlushOptions::default()
    }

    /// `wait`.
    pub fn set_wait(&mut self, wait: bool) {
        self.wait = wait;
    }
}

/// Which data a read may touch (RocksDB's `ReadTier`).
#[derive(Debug, Copy, Clone, PartialEq, Eq, Default)]
#[repr(i32)]
pub enum ReadTier {
    /// Memtables, block cache and files. Default.
    #[default]
    All = 0,
    /// Memtables and the block cache only: a point read that would have to read a block from
    /// a file fails with `Incomplete` (the key may or may not exist), as RocksDB's.
    BlockCache,
    /// Persisted data only. Strata reads the memtables too (what they hold is in the WAL,
    /// unless written with `disable_wal`), so this reads as `All`.
    Persisted,
    /// Memtables only. Strata reads as for `BlockCache` (tables' cached blocks too): a read
    /// needing a file read fails with `Incomplete`.
    Memtable,
}

impl WriteOptions {
    /// `ignore_missing_column_families`.
    pub fn set_ignore_missing_column_families(&mut self, ignore: bool) {
        self.ignore_missing_column_families = ignore;
    }

    /// `no_slowdown`.
    pub fn set_no_slowdown(&mut self, no_slowdown: bool) {
        self.no_slowdown = no_slowdown;
    }

    /// `low_pri`.
    pub fn set_low_pri(&mut self, v: bool) {
        self.low_pri = v;
    }

    /// `memtable_insert_hint_per_batch`.
    pub fn set_memtable_insert_hint_per_batch(&mut self, v: bool) {
        self.memtable_insert_hint_per_batch = v;
    }
}

impl ReadOptions {
    /// `read_tier`.
    pub fn set_read_tier(&mut self, tier: ReadTier) {
        self.read_tier = tier;
    }

    /// `total_order_seek`.
    pub fn set_total_order_seek(&mut self, v: bool) {
        self.total_order_seek = v;
    }

    /// `max_skippable_internal_keys`.
    pub fn set_max_skippable_internal_keys(&mut self, num: u64) {
        self.max_skippable_internal_keys = num;
    }

    /// `background_purge_on_iterator_cleanup`.
    pub fn set_background_purge_on_iterator_cleanup(&mut self, v: bool) {
        self.background_purge_on_iterator_cleanup = v;
    }

    /// `ignore_range_deletions`.
    pub fn set_ignore_range_deletions(&mut self, v: bool) {
        self.ignore_range_deletions = v;
    }

    /// `auto_readahead_size`.
    pub fn set_auto_readahead_size(&mut self, v: bool) {
        self.auto_readahead_size = v;
    }

    /// `deadline`, in microseconds (0: none).
    pub fn set_deadline(&mut self, microseconds: u64) {
        self.deadline = (microseconds > 0).then(|| Duration::from_micros(microseconds));
    }

    /// `io_timeout`, in microseconds (0: none).
    pub fn set_io_timeout(&mut self, microseconds: u64) {
        self.io_timeout = (microseconds > 0).then(|| Duration::from_micros(microseconds));
    }

    /// `tailing`.
    pub fn set_tailing(&mut self, v: bool) {
        self.tailing = v;
    }

    /// `pin_data`.
    pub fn set_pin_data(&mut self, v: bool) {
        self.pin_data = v;
    }

    /// `async_io`.
    pub fn set_async_io(&mut self, v: bool) {
        self.async_io = v;
    }

    /// Whether this read may only use memory (memtables and cached blocks).
    pub(crate) fn cache_only(&self) -> bool {
        matches!(self.read_tier, ReadTier::BlockCache | ReadTier::Memtable)
    }
}
