//! `OptimisticTransactionDb`: a [`Db`] whose transactions take no lock while they run and
//! are checked for conflicts when they commit (the `rocksdb` crate's
//! `OptimisticTransactionDB`).
//!
//! A commit locks the stripes of the keys the transaction read for update or wrote (a fixed
//! table of mutexes, taken in index order, so two commits never wait on each other in a
//! cycle), checks each key with [`Db::changed_since`] against the sequence number it was
//! tracked at, writes the batch if none changed, and unlocks. Another transaction's commit
//! touching one of the keys waits for the stripe, and by then the first one's write is
//! published: it sees it. A plain `Db` write is not held back by the stripes; a transaction
//! sees it only if it is published before the check (as in RocksDB).

use std::ops::Deref;
use std::path::Path;

use parking_lot::{Mutex, MutexGuard};

use super::txn::Transaction;
use crate::db::{ColumnFamilyDescriptor, Db};
use crate::error::Result;
use crate::options::{Options, WriteOptions};

/// Lock stripes of the commit check: enough that unrelated keys rarely share one.
const STRIPES: usize = 1024;

/// Settings of one optimistic transaction.
#[derive(Clone, Debug, Default)]
pub struct OptimisticTransactionOptions {
    pub(crate) set_snapshot: bool,
}

impl OptimisticTransactionOptions {
    /// Default settings: keys are checked from when the transaction first reads them for
    /// update or writes them.
    pub fn new() -> Self {
        Self::default()
    }

    /// `true`: the transaction takes a snapshot when it begins, and every key it reads for
    /// update or writes is checked for writes since then.
    pub fn set_snapshot(&mut self, snapshot: bool) {
        self.set_snapshot = snapshot;
    }
}

/// A [`Db`] with optimistic transactions (module docs). Every `Db` method is available
/// through `Deref`.
pub struct OptimisticTransactionDb {
    db: Db,
    stripes: Vec<Mutex<()>>,
}

impl Deref for OptimisticTransactionDb {
    type Target = Db;
    fn deref(&self) -> &Db {
        &self.db
    }
}

impl OptimisticTransactionDb {
    fn wrap(db: Db) -> Self {
        OptimisticTransactionDb { db, stripes: (0..STRIPES).map(|_| Mutex::new(())).collect() }
    }

    /// Opens (or creates) the DB in `path` (as [`Db::open`]).
    pub fn open(opts: &Options, path: impl AsRef<Path>) -> Result<Self> {
        Db::open(opts, path).map(Self::wrap)
    }

    /// Opens with default options.
    pub fn open_default(path: impl AsRef<Path>) -> Result<Self> {
        Db::open_default(path).map(Self::wrap)
    }

    /// Opens with column families `names` (as [`Db::open_cf`]).
    pub fn open_cf<I, N>(opts: &Options, path: impl AsRef<Path>, names: I) -> Result<Self>
    where
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        Db::open_cf(opts, path, names).map(Self::wrap)
    }

    /// Opens with the families `descriptors` describe (as [`Db::open_cf_descriptors`]).
    pub fn open_cf_descriptors<I>(
        opts: &Options,
        path: impl AsRef<Path>,
        descriptors: I,
    ) -> Result<Self>
    where
        I: IntoIterator<Item = ColumnFamilyDescriptor>,
    {
        Db::open_cf_descriptors(opts, path, descriptors).map(Self::wrap)
    }

    /// The underlying DB.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Begins a transaction with default options.
    pub fn transaction(&self) -> Transaction<'_> {
        self.transaction_opt(&WriteOptions::default(), &OptimisticTransactionOptions::default())
    }

    /// Begins a transaction that commits with `write_opts`.
    pub fn transaction_opt(
        &self,
        write_opts: &WriteOptions,
        txn_opts: &OptimisticTransactionOptions,
    ) -> Transaction<'_> {
        Transaction::optimistic(self, *write_opts, txn_opts.set_snapshot)
    }

    /// Locks the stripes of `hashes` (sorted, deduplicated here) for a commit's check.
    pub(crate) fn lock_stripes(
        &self,
        hashes: impl Iterator<Item = u64>,
    ) -> Vec<MutexGuard<'_, ()>> {
        let mut idx: Vec<usize> = hashes.map(|h| (h % STRIPES as u64) as usize).collect();
        idx.sort_unstable();
        idx.dedup();
        idx.into_iter().map(|i| self.stripes[i].lock()).collect()
    }
}
