//! The `rocksdb` crate's checkpoint API (`rocksdb::checkpoint`): a checkpoint object bound to
//! its DB, then `create_checkpoint(dir)` per copy, over Strata's [`crate::Checkpoint`].
//!
//! Strata's checkpoint always flushes the memtables and carries no WAL (see
//! `utilities/checkpoint.rs` for why), so `create_checkpoint_with_log_size` makes the same
//! checkpoint whatever the threshold: its content is the DB at one moment either way; only
//! RocksDB's choice of copying the WAL instead of flushing is not made.

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

    /// Makes a checkpoint in `path`, which must not exist.
    pub fn create_checkpoint<P: AsRef<Path>>(&self, path: P) -> Result<()> {
        StrataCheckpoint::create(self.db, path).map(|_| ())
    }

    /// Makes a checkpoint in `path`; the memtables are flushed whatever `log_size_for_flush`
    /// is (module docs).
    pub fn create_checkpoint_with_log_size<P: AsRef<Path>>(
        &self,
        path: P,
        log_size_for_flush: u64,
    ) -> Result<()> {
        let _ = log_size_for_flush;
        self.create_checkpoint(path)
    }
}

/// Makes checkpoints of a transaction DB (the `rocksdb` crate's `TransactionDBCheckpoint`).
/// Prepared transactions live in the WAL, which a Strata checkpoint does not carry: the
/// checkpoint holds committed writes only.
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
