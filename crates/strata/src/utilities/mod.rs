//! Features built on the `Db` handle, above the engine core (RocksDB's `utilities/`): they use
//! the public `Db` API and a few crate-internal entry points the core offers for them (a
//! point-in-time capture of every family's tables, the level-0 table writer, the WAL file
//! list), and the core never calls them.
//!
//! - `checkpoint.rs`: `Checkpoint::create`, a consistent copy of an open DB;
//! - `backup.rs`: `BackupEngine`, incremental backups sharing tables;
//! - `ttl.rs`: `DbWithTtl`, values that expire;
//! - `sst_file_writer.rs`: `SstFileWriter`, external tables for ingestion;
//! - `repair.rs`: `Db::repair`, rebuilding a lost MANIFEST;
//! - `destroy.rs`: `Db::destroy`, deleting a whole DB;
//! - `wbwi/`: `WriteBatchWithIndex`, a write batch readable before it is written;
//! - `transaction/`: `OptimisticTransactionDb` and its transactions.

mod backup;
mod checkpoint;
mod destroy;
mod repair;
mod sst_file_writer;
mod transaction;
mod ttl;
pub(crate) mod wbwi;

pub use backup::{BackupEngine, BackupInfo};
pub use checkpoint::Checkpoint;
pub use repair::RepairReport;
pub use sst_file_writer::{ExternalSstFileInfo, SstFileWriter};
pub use transaction::{
    OptimisticTransactionDb, OptimisticTransactionOptions, Transaction, TransactionDb,
    TransactionDbOptions, TransactionIterator, TransactionOptions, TransactionSnapshot,
};
pub use ttl::{DbWithTtl, TtlClock, TtlIterator, TTL_SUFFIX_LEN};
pub use wbwi::WriteBatchWithIndex;
