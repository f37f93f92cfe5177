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
pub mod comparator;
pub(crate) mod cstr_like;
pub mod env;
pub mod error;
pub mod inspect;
pub mod merge_operator;
pub mod options;
pub mod perf;
pub mod statistics;
pub mod wide_columns;
pub mod write_batch;

pub(crate) mod blob;
pub(crate) mod compaction;
pub(crate) mod compat;
pub(crate) mod db;
pub(crate) mod filename;
pub(crate) mod iterator;
pub(crate) mod key;
pub(crate) mod memtable;
pub(crate) mod perf_context;
pub(crate) mod prefix;
pub(crate) mod range_del;
pub(crate) mod snapshot;
pub(crate) mod sstable;
pub(crate) mod stats;
pub(crate) mod types;
pub(crate) mod util;
pub(crate) mod utilities;
pub(crate) mod version;
pub(crate) mod wal;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz_api;
#[cfg(feature = "kill-points")]
pub use util::kill_point;

pub use cache::{
    Admission as BlockCacheAdmission, CacheType, HyperClockCacheOptions, LruCacheOptions,
    Priority as CachePriority,
};
pub use column_family::{AsColumnFamilyRef, ColumnFamilyId, DEFAULT_COLUMN_FAMILY_NAME};
pub use compaction_filter::{
    CompactionDecision, CompactionFilter, CompactionFilterContext, CompactionFilterFactory,
    Decision, EntityDecision, TableFileCreationReason,
};
pub use compat::{backup, checkpoint, properties};
pub use compat::{
    DBAccess, DBWithThreadMode, MultiThreaded, OptimisticTransactionDB, SingleThreaded, ThreadMode,
    TransactionDB, WithThreadMode,
};
pub use cstr_like::CStrLike;
pub use db::{
    ColumnFamily, ColumnFamilyDescriptor, ColumnFamilyMetaData, ColumnFamilyTtl, DBWALIterator, Db,
    DbIterator, DbPinnableSlice, DbRawIterator, DbRawIteratorWithThreadMode, Direction,
    GetMergeOperandsOptions, IngestExternalFileOptions, IteratorMode, LiveFile, LiveFileChecksum,
    LiveFileMetaData, MultiScan, PinnedSource, Range, Scan, Snapshot, StatsHistoryIterator,
};
pub use error::{Error, ErrorKind, Result};
pub use memtable::write_buffer_manager::CACHE_UNIT as WRITE_BUFFER_CACHE_UNIT;
pub use memtable::WriteBufferManager;
pub use merge_operator::MergeOperator;
pub use options::{
    BlobOptions, BlockBasedOptions, IterateBounds, MergeOperands, MultiScanArgs, PrefixRange,
    ScanRange, SliceTransform,
};
pub use options::{
    BlockBasedTablePinningTier, BottommostLevelCompaction, CompactOptions, CompactionPri,
    CuckooTableOptions, DBPath, DataBlockIndexType, Env, FifoCompactOptions, FlushOptions,
    InfoLogger, KeyEncodingType, LogLevel, MemtableFactory, PlainTableFactoryOptions, ReadTier,
    UniversalCompactOptions, UniversalCompactionStopStyle, WaitForCompactOptions,
};
pub use options::{
    CompactionStopStyle, CompactionStyle, FifoCompactionOptions, Options, PrefixExtractor,
    ReadOptions, TieredCompactionOptions, UniversalCompactionOptions, WriteOptions,
};
pub use perf::{PerfContext, PerfMetric, PerfStatsLevel};
pub use snapshot::{SnapshotHandle, SnapshotWithThreadMode};
pub use sstable::{Cache, CompressionType, IndexType};
pub use util::checksum::ChecksumType;
pub use utilities::{
    BackupEngine, BackupInfo, Checkpoint, DbWithTtl, ExternalSstFileInfo, OptimisticTransactionDb,
    OptimisticTransactionOptions, RepairReport, SstFileWriter, Transaction, TransactionDb,
    TransactionDbOptions, TransactionIterator, TransactionOptions, TransactionSnapshot, TtlClock,
    TtlIterator, WriteBatchWithIndex, TTL_SUFFIX_LEN,
};
pub use wal::WalRecoveryMode;
pub use wide_columns::{WideColumns, DEFAULT_COLUMN_NAME};
pub use write_batch::{
    WriteBatch, WriteBatchIterator, WriteBatchIteratorCf, WriteBatchWithTransaction,
};

// The `rocksdb` crate's names, so its users' programs port with renames of the `use` line
// only (`examples/rocksdb_port.rs`).
/// The `rocksdb` crate's name of [`Db`].
pub type DB = Db;
/// The `rocksdb` crate's name of [`DbIterator`].
pub type DBIterator = DbIterator;
/// The `rocksdb` crate's raw iterator over a [`Db`].
pub type DBRawIterator<'a> = DbRawIteratorWithThreadMode<'a, Db>;
/// The `rocksdb` crate's name of [`DbRawIteratorWithThreadMode`].
pub type DBRawIteratorWithThreadMode<'a, D> = DbRawIteratorWithThreadMode<'a, D>;
/// The `rocksdb` crate's name of [`TransactionDbOptions`].
pub type TransactionDBOptions = TransactionDbOptions;
/// The `rocksdb` crate's name of [`DbPinnableSlice`].
pub type DBPinnableSlice = DbPinnableSlice;
/// The `rocksdb` crate's name of [`CompressionType`].
pub type DBCompressionType = CompressionType;
/// The `rocksdb` crate's name of [`CompactionStyle`] (`DBCompactionStyle::Level` is
/// `CompactionStyle::Leveled`).
pub type DBCompactionStyle = CompactionStyle;
/// The `rocksdb` crate's name of [`WalRecoveryMode`].
pub type DBRecoveryMode = WalRecoveryMode;
/// The `rocksdb` crate's name of [`IndexType`].
pub type BlockBasedIndexType = IndexType;

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
