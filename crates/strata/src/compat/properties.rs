//! The `rocksdb` crate's property names (`rocksdb::properties`): constants for every
//! `rocksdb.*` property and the per-level name builders, usable wherever a property name is
//! taken (`Db::property_value` takes any [`CStrLike`]). Which ones Strata answers is listed in
//! `docs/rocksdb-compat.md`; an unknown one reads as `None`, as in RocksDB.

use std::borrow::Cow;
use std::ffi::{CStr, CString};

use crate::cstr_like::CStrLike;
use crate::error::Result;

/// A borrowed property name: a NUL-terminated string without interior NULs.
#[repr(transparent)]
#[derive(PartialEq, Eq, Hash)]
pub struct PropName(CStr);

impl PropName {
    const fn from_c_str(c: &CStr) -> &PropName {
        let p: *const CStr = c;
        // SAFETY: `PropName` is `repr(transparent)` over `CStr`, so both pointers have the
        // same layout and metadata, and the lifetime is carried over unchanged.
        unsafe { &*(p as *const PropName) }
    }

    /// The name as a C string.
    pub fn as_c_str(&self) -> &CStr {
        &self.0
    }

    /// The name as text (every name here is ASCII).
    pub fn as_str(&self) -> &str {
        self.0.to_str().unwrap_or_default()
    }
}

impl std::ops::Deref for PropName {
    type Target = CStr;
    fn deref(&self) -> &CStr {
        &self.0
    }
}

impl AsRef<CStr> for PropName {
    fn as_ref(&self) -> &CStr {
        &self.0
    }
}

impl AsRef<str> for PropName {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl ToOwned for PropName {
    type Owned = PropertyName;
    fn to_owned(&self) -> PropertyName {
        PropertyName(self.0.to_owned())
    }
}

impl std::fmt::Display for PropName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for PropName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl PartialEq<str> for PropName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for PropName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<PropName> for str {
    fn eq(&self, other: &PropName) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<PropName> for &str {
    fn eq(&self, other: &PropName) -> bool {
        *self == other.as_str()
    }
}

impl CStrLike for PropName {
    fn to_name(&self) -> Result<Cow<'_, str>> {
        self.0.to_name()
    }
}

/// An owned property name (what the per-level builders return).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PropertyName(CString);

impl PropertyName {
    /// The name as a C string.
    pub fn into_c_string(self) -> CString {
        self.0
    }

    /// The name as text.
    pub fn into_string(self) -> String {
        self.0.into_string().unwrap_or_default()
    }
}

impl std::ops::Deref for PropertyName {
    type Target = PropName;
    fn deref(&self) -> &PropName {
        PropName::from_c_str(&self.0)
    }
}

impl std::borrow::Borrow<PropName> for PropertyName {
    fn borrow(&self) -> &PropName {
        self
    }
}

impl AsRef<CStr> for PropertyName {
    fn as_ref(&self) -> &CStr {
        &self.0
    }
}

impl AsRef<str> for PropertyName {
    fn as_ref(&self) -> &str {
        (**self).as_str()
    }
}

impl std::fmt::Display for PropertyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl std::fmt::Debug for PropertyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl PartialEq<String> for PropertyName {
    fn eq(&self, other: &String) -> bool {
        (**self).as_str() == other
    }
}

impl CStrLike for PropertyName {
    fn to_name(&self) -> Result<Cow<'_, str>> {
        self.0.to_name()
    }
}

/// `rocksdb.<name><level>`.
fn level_property(name: &str, level: usize) -> PropertyName {
    // The names below hold no NUL, nor does a number.
    PropertyName(CString::new(format!("rocksdb.{name}{level}")).unwrap_or_default())
}

/// `rocksdb.num-files-at-level<N>`.
pub fn num_files_at_level(level: usize) -> PropertyName {
    level_property("num-files-at-level", level)
}

/// `rocksdb.compression-ratio-at-level<N>`.
pub fn compression_ratio_at_level(level: usize) -> PropertyName {
    level_property("compression-ratio-at-level", level)
}

/// `rocksdb.aggregated-table-properties-at-level<N>`.
pub fn aggregated_table_properties_at_level(level: usize) -> PropertyName {
    level_property("aggregated-table-properties-at-level", level)
}

macro_rules! names {
    ($($(#[$doc:meta])* $name:ident = $lit:literal;)*) => {
        $($(#[$doc])* pub const $name: &PropName = PropName::from_c_str($lit);)*
    };
}

names! {
    /// The DB-wide and per-family statistics report.
    STATS = c"rocksdb.stats";
    /// The tables of each level.
    SSTABLES = c"rocksdb.sstables";
    /// The family's statistics.
    CFSTATS = c"rocksdb.CFSTATS";
    /// The family's statistics without the file histogram.
    CFSTATS_NO_FILE_HISTOGRAM = c"rocksdb.cfstats-no-file-histogram";
    /// The family's file read-latency histogram.
    CF_FILE_HISTOGRAM = c"rocksdb.cf-file-histogram";
    /// The DB-wide statistics.
    DBSTATS = c"rocksdb.dbstats";
    /// Files and bytes per level.
    LEVELSTATS = c"rocksdb.levelstats";
    /// Immutable memtables not yet flushed.
    NUM_IMMUTABLE_MEM_TABLE = c"rocksdb.num-immutable-mem-table";
    /// Immutable memtables already flushed.
    NUM_IMMUTABLE_MEM_TABLE_FLUSHED = c"rocksdb.num-immutable-mem-table-flushed";
    /// 1 when a flush is pending.
    MEM_TABLE_FLUSH_PENDING = c"rocksdb.mem-table-flush-pending";
    /// Flushes running.
    NUM_RUNNING_FLUSHES = c"rocksdb.num-running-flushes";
    /// 1 when a compaction is pending.
    COMPACTION_PENDING = c"rocksdb.compaction-pending";
    /// Compactions running.
    NUM_RUNNING_COMPACTIONS = c"rocksdb.num-running-compactions";
    /// Background errors so far.
    BACKGROUND_ERRORS = c"rocksdb.background-errors";
    /// Bytes of the active memtable.
    CUR_SIZE_ACTIVE_MEM_TABLE = c"rocksdb.cur-size-active-mem-table";
    /// Bytes of the active and unflushed immutable memtables.
    CUR_SIZE_ALL_MEM_TABLES = c"rocksdb.cur-size-all-mem-tables";
    /// Bytes of every memtable, pinned ones included.
    SIZE_ALL_MEM_TABLES = c"rocksdb.size-all-mem-tables";
    /// Entries in the active memtable.
    NUM_ENTRIES_ACTIVE_MEM_TABLE = c"rocksdb.num-entries-active-mem-table";
    /// Entries in the immutable memtables.
    NUM_ENTRIES_IMM_MEM_TABLES = c"rocksdb.num-entries-imm-mem-tables";
    /// Deletions in the active memtable.
    NUM_DELETES_ACTIVE_MEM_TABLE = c"rocksdb.num-deletes-active-mem-table";
    /// Deletions in the immutable memtables.
    NUM_DELETES_IMM_MEM_TABLES = c"rocksdb.num-deletes-imm-mem-tables";
    /// Estimated number of keys.
    ESTIMATE_NUM_KEYS = c"rocksdb.estimate-num-keys";
    /// Memory of the table readers (indexes and filters outside the cache).
    ESTIMATE_TABLE_READERS_MEM = c"rocksdb.estimate-table-readers-mem";
    /// 1 when obsolete files are deleted.
    IS_FILE_DELETIONS_ENABLED = c"rocksdb.is-file-deletions-enabled";
    /// Live snapshots.
    NUM_SNAPSHOTS = c"rocksdb.num-snapshots";
    /// Unix time of the oldest live snapshot.
    OLDEST_SNAPSHOT_TIME = c"rocksdb.oldest-snapshot-time";
    /// Live versions of the tree.
    NUM_LIVE_VERSIONS = c"rocksdb.num-live-versions";
    /// The current super version's number.
    CURRENT_SUPER_VERSION_NUMBER = c"rocksdb.current-super-version-number";
    /// Estimated bytes of live data.
    ESTIMATE_LIVE_DATA_SIZE = c"rocksdb.estimate-live-data-size";
    /// The oldest WAL number still needed.
    MIN_LOG_NUMBER_TO_KEEP = c"rocksdb.min-log-number-to-keep";
    /// The oldest obsolete table number still kept.
    MIN_OBSOLETE_SST_NUMBER_TO_KEEP = c"rocksdb.min-obsolete-sst-number-to-keep";
    /// Bytes of every table file, obsolete ones still referenced included.
    TOTAL_SST_FILES_SIZE = c"rocksdb.total-sst-files-size";
    /// Bytes of the live table files.
    LIVE_SST_FILES_SIZE = c"rocksdb.live-sst-files-size";
    /// The level L0 compacts into.
    BASE_LEVEL = c"rocksdb.base-level";
    /// Estimated bytes compaction must rewrite to bring levels under their targets.
    ESTIMATE_PENDING_COMPACTION_BYTES = c"rocksdb.estimate-pending-compaction-bytes";
    /// The table properties of every table, aggregated.
    AGGREGATED_TABLE_PROPERTIES = c"rocksdb.aggregated-table-properties";
    /// The current delayed write rate (0: not delayed).
    ACTUAL_DELAYED_WRITE_RATE = c"rocksdb.actual-delayed-write-rate";
    /// 1 when writes are stopped.
    IS_WRITE_STOPPED = c"rocksdb.is-write-stopped";
    /// Estimated time of the oldest key.
    ESTIMATE_OLDEST_KEY_TIME = c"rocksdb.estimate-oldest-key-time";
    /// The block cache's capacity.
    BLOCK_CACHE_CAPACITY = c"rocksdb.block-cache-capacity";
    /// The block cache's usage.
    BLOCK_CACHE_USAGE = c"rocksdb.block-cache-usage";
    /// The block cache's pinned usage.
    BLOCK_CACHE_PINNED_USAGE = c"rocksdb.block-cache-pinned-usage";
    /// The statistics report (`Options::get_statistics`).
    OPTIONS_STATISTICS = c"rocksdb.options-statistics";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_conversions() {
        assert_eq!(STATS.as_str(), "rocksdb.stats");
        let c: &CStr = STATS;
        assert_eq!(c.to_bytes(), b"rocksdb.stats");
        let owned: PropertyName = STATS.to_owned();
        assert_eq!(owned.clone().into_string(), "rocksdb.stats");
        assert_eq!(num_files_at_level(5).into_string(), "rocksdb.num-files-at-level5");
        assert_eq!(STATS.to_name().unwrap(), "rocksdb.stats");
        assert_eq!(owned.to_name().unwrap(), "rocksdb.stats");
    }
}
