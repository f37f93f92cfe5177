//! Strata: an embedded, persistent LSM-tree key-value store.
//!
//! ```no_run
//! let db = strata::Db::open_default("/tmp/strata-doc").unwrap();
//! db.put(b"key", b"value").unwrap();
//! assert_eq!(db.get(b"key").unwrap().as_deref(), Some(&b"value"[..]));
//! ```

pub mod env;
pub mod error;
pub mod key;
pub mod merge_operator;
pub mod options;
pub mod types;
pub mod write_batch;

pub(crate) mod cache;
pub(crate) mod compaction;
pub(crate) mod db;
pub(crate) mod iterator;
pub(crate) mod memtable;
pub(crate) mod range_del;
pub(crate) mod sstable;
pub(crate) mod stats;
pub(crate) mod util;
pub(crate) mod version;
pub(crate) mod wal;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzz_api;
#[cfg(feature = "kill-points")]
pub use util::kill_point;

pub use db::{Db, DbIterator, DbRawIterator, Direction, IteratorMode, Snapshot};
pub use error::{Error, Result};
pub use merge_operator::MergeOperator;
pub use options::{Options, PrefixExtractor, ReadOptions, WriteOptions};
pub use sstable::CompressionType;
pub use types::{FileNumber, Level, SeqNo, ValueType};
pub use util::checksum::ChecksumType;
pub use wal::WalRecoveryMode;
pub use write_batch::WriteBatch;
