//! The `rocksdb` crate's checkpoint API (`rocksdb::checkpoint`): a checkpoint object bound to
//! its DB, then `create_checkpoint(dir)` per copy, over Strata's
//! [`crate::Checkpoint::create_with_log_size`] (RocksDB's layout: with `log_size_for_flush` 0,
//! the default, the memtables are flushed and the checkpoint has one empty WAL; above the
//! size of the WALs holding unflushed writes, those WALs are copied instead).

use std::path::Path;

use crate::db::Db;
use crate::error::Result;
use crate::utilities::Checkpoint as StrataCheckpoint;

/// Makes checkpoints of one DB (the `rocksdb` crate's `Checkpoint`).
pub struct Checkpoint<'db> {
    db: &'db Db,
}

impl<'db> Checkpoint<'db> {
    /// A checkpoint maker for `db` (any DB type dereferencing to a [`Db`]).
    pub fn new(db: &'db Db) -> Result<Self> {
        Ok(Checkpoint { db })
    }

    /// Makes a checkpoint in `path`, which must not exist (`log_size_for_flush` 0).
    pub fn create_checkpoint<P: AsRef<Path>>(&self, path: P) -> Result<()> {
        self.create_checkpoint_with_log_size(path, 0)
    }

    /// Makes a checkpoint in `path`, flushing first unless the WALs holding unflushed writes
    /// total fewer than `log_size_for_flush` bytes (then they are copied).
    pub fn create_checkpoint_with_log_size<P: AsRef<Path>>(
        &self,
        path: P,
        log_size_for_flush: u64,
    ) -> Result<()> {
        StrataCheckpoint::create_with_log_size(self.db, path, log_size_for_flush).map(|_| ())
    }
}

/// Makes checkpoints of a transaction DB (the `rocksdb` crate's `TransactionDBCheckpoint`).
/// Prepared transactions live in the WAL: a checkpoint that copies the WALs carries them (its
/// open recovers them prepared); one that flushes holds committed writes only.
pub struct TransactionDBCheckpoint<'db> {
    inner: Checkpoint<'db>,
}

impl<'db> TransactionDBCheckpoint<'db> {
    /// A checkpoint maker for the transaction DB `db`.
    pub fn new(db: &'db Db) -> Result<Self> {
        Ok(TransactionDBCheckpoint { inner: Checkpoint::new(db)? })
    }

    /// Makes a checkpoint in `path`, which must not exist.
    pub fn create_checkpoint<P: AsRef<Path>>(&self, path: P) -> Result<()> {
        self.inner.create_checkpoint(path)
    }

    /// As [`Checkpoint::create_checkpoint_with_log_size`].
    pub fn create_checkpoint_with_log_size<P: AsRef<Path>>(
        &self,
        path: P,
        log_size_for_flush: u64,
    ) -> Result<()> {
        self.inner.create_checkpoint_with_log_size(path, log_size_for_flush)
    }
}
