//! Strata: an embedded, persistent LSM-tree key-value store.
//!
//! ```no_run
//! let db = strata::Db::open_default("/tmp/strata-doc").unwrap();
//! db.put(b"key", b"value").unwrap();
//! assert_eq!(db.get(b"key").unwrap().as_deref(), Some(&b"value"[..]));
//! ```

#![warn(missing_docs)]
// A panic in the engine is a defect: failures are `Error`s. Tests may unwrap.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod cache;
pub mod column_family;
pub mod compaction_filter;
pub mod env;
pub mod error;
pub mod inspect;
pub mod merge_operator;
pub mod options;
pub mod write_batch;

pub(crate) mod compaction;
pub(crate) mod db;
pub(crate) mod filename;
pub(crate) mod iterator;
pub(crate) mod key;
pub(crate) mod memtable;
pub(crate) mod prefix;
pub(crate) mod range_del;
pub(crate) mod snapshot;
pub(crate) mod sstable;
pub(crate) mod stats;
pub(crate) mod types;
pub(crate) mod util;
pub(crate) mod version;
pub(crate) mod wal;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz_api;
#[cfg(feature = "kill-points")]
pub use util::kill_point;

pub use cache::{CacheType, HyperClockCacheOptions, LruCacheOptions, Priority as CachePriority};
pub use column_family::{AsColumnFamilyRef, ColumnFamilyId, DEFAULT_COLUMN_FAMILY_NAME};
pub use compaction_filter::{
    CompactionFilter, CompactionFilterContext, CompactionFilterFactory, Decision,
    TableFileCreationReason,
};
pub use db::{
    BackupEngine, BackupInfo, Checkpoint, ColumnFamily, ColumnFamilyDescriptor, Db, DbIterator,
    DbRawIterator, DbWithTtl, Direction, IteratorMode, LiveFileMetaData, RepairReport, TtlClock,
    TtlIterator, TTL_SUFFIX_LEN,
};
pub use error::{Error, Result};
pub use merge_operator::MergeOperator;
pub use options::{
    CompactionStopStyle, CompactionStyle, FifoCompactionOptions, Options, PrefixExtractor,
    ReadOptions, TieredCompactionOptions, UniversalCompactionOptions, WriteOptions,
};
pub use snapshot::Snapshot;
pub use sstable::{Cache, CompressionType, IndexType};
pub use util::checksum::ChecksumType;
pub use wal::WalRecoveryMode;
pub use write_batch::{WriteBatch, WriteBatchIterator};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
