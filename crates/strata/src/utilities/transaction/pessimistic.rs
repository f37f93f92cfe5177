//! `TransactionDb`: a [`Db`] whose transactions lock the keys they write or read for update
//! as they go (the `rocksdb` crate's `TransactionDB`, RocksDB's write-committed pessimistic
//! transactions), with lock timeouts, deadlock detection, expiration and two-phase commit.
//!
//! Every write through the `TransactionDb` itself (`put`, `delete`, `merge`, `write`, ...)
//! locks its keys as a one-write transaction would (waiting at most `default_lock_timeout`),
//! so it never lands between a transaction's lock and its commit. Range deletions cannot be
//! locked key by key and are refused (`NotSupported`); reads, iterators, snapshots, flushes
//! and the family calls are the `Db`'s (through `Deref`).
//!
//! At open, the transactions the WAL holds as prepared (`db/write/two_phase.rs`) take their
//! locks again; [`TransactionDb::prepared_transactions`] hands them out to be committed or
//! rolled back.

use std::collections::HashSet;
use std::ops::Deref;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::lock::{LockKey, LockTable, Owner, TxnId, Wait};
use super::txn::{Pessimistic, Transaction};
use crate::column_family::AsColumnFamilyRef;
use crate::db::{Cfd, ColumnFamilyDescriptor, Db};
use crate::error::{Error, Result};
use crate::options::{Options, WriteOptions};
use crate::types::ValueType;
use crate::utilities::wbwi::WriteBatchWithIndex;
use crate::write_batch::WriteBatch;

/// Settings of a [`TransactionDb`] (the `rocksdb` crate's `TransactionDBOptions`).
#[derive(Clone, Debug)]
pub struct TransactionDbOptions {
    pub(crate) default_lock_timeout: i64,
    pub(crate) txn_lock_timeout: i64,
    pub(crate) max_num_locks: i64,
    pub(crate) num_stripes: usize,
}

impl Default for TransactionDbOptions {
    fn default() -> Self {
        TransactionDbOptions {
            default_lock_timeout: 1000,
            txn_lock_timeout: 1000,
            max_num_locks: -1,
            num_stripes: 16,
        }
    }
}

impl TransactionDbOptions {
    /// RocksDB's defaults: 1 s lock timeouts, no lock limit, 16 stripes.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long, in milliseconds, a write outside a transaction waits for a key's lock
    /// (negative: without limit; 0: not at all).
    pub fn set_default_lock_timeout(&mut self, ms: i64) {
        self.default_lock_timeout = ms;
    }

    /// How long, in milliseconds, a transaction waits for a key's lock unless its own options
    /// say otherwise (negative: without limit; 0: not at all).
    pub fn set_txn_lock_timeout(&mut self, ms: i64) {
        self.txn_lock_timeout = ms;
    }

    /// The most keys locked at once (negative: no limit); past it a lock fails with `Busy`.
    pub fn set_max_num_locks(&mut self, n: i64) {
        self.max_num_locks = n;
    }

    /// How many parts the lock table is split into (more: less contention on its mutexes).
    pub fn set_num_stripes(&mut self, n: usize) {
        self.num_stripes = n;
    }
}

/// Settings of one pessimistic transaction (the `rocksdb` crate's `TransactionOptions`).
#[derive(Clone, Debug)]
pub struct TransactionOptions {
    pub(crate) set_snapshot: bool,
    pub(crate) deadlock_detect: bool,
    pub(crate) lock_timeout: i64,
    pub(crate) expiration: i64,
    pub(crate) deadlock_detect_depth: i64,
    pub(crate) max_write_batch_size: usize,
    pub(crate) skip_prepare: bool,
}

impl Default for TransactionOptions {
    fn default() -> Self {
        TransactionOptions {
            set_snapshot: false,
            deadlock_detect: false,
            lock_timeout: -1,
            expiration: -1,
            deadlock_detect_depth: 50,
            max_write_batch_size: 0,
            skip_prepare: true,
        }
    }
}

impl TransactionOptions {
    /// RocksDB's defaults: no snapshot, no deadlock detection, the DB's lock timeout, no
    /// expiration.
    pub fn new() -> Self {
        Self::default()
    }

    /// `true`: the transaction takes a snapshot when it begins, and a key it locks that was
    /// written since fails the call with `Busy`.
    pub fn set_snapshot(&mut self, snapshot: bool) {
        self.set_snapshot = snapshot;
    }

    /// `true`: a lock wait that would close a cycle of waiting transactions fails with
    /// `Error::Deadlock` instead of waiting for the timeout.
    pub fn set_deadlock_detect(&mut self, detect: bool) {
        self.deadlock_detect = detect;
    }

    /// How long, in milliseconds, this transaction waits for a lock (negative: the DB's
    /// `txn_lock_timeout`; 0: not at all).
    pub fn set_lock_timeout(&mut self, ms: i64) {
        self.lock_timeout = ms;
    }

    /// Milliseconds after which other transactions may take this one's locks (negative: never);
    /// it then fails with `Error::Expired`.
    pub fn set_expiration(&mut self, ms: i64) {
        self.expiration = ms;
    }

    /// How many waits deadlock detection follows.
    pub fn set_deadlock_detect_depth(&mut self, depth: i64) {
        self.deadlock_detect_depth = depth;
    }

    /// Largest batch the transaction may gather, in bytes (0: no limit).
    pub fn set_max_write_batch_size(&mut self, bytes: usize) {
        self.max_write_batch_size = bytes;
    }

    /// `false`: once named, the transaction must be prepared before it commits.
    pub fn set_skip_prepare(&mut self, skip: bool) {
        self.skip_prepare = skip;
    }
}

/// A prepared transaction found in the WAL at open, holding its locks until handed out.
struct Recovered {
    name: Vec<u8>,
    batch: WriteBatch,
    owner: Arc<Owner>,
    tracked: Vec<(LockKey, Arc<Cfd>)>,
}

/// A [`Db`] with pessimistic transactions (module docs). Reads and every other `Db` method
/// are available through `Deref`; its own write methods lock.
pub struct TransactionDb {
    db: Db,
    opts: TransactionDbOptions,
    locks: LockTable,
    next_id: AtomicU64,
    /// Names of live and prepared transactions.
    names: Mutex<HashSet<Vec<u8>>>,
    recovered: Mutex<Vec<Recovered>>,
}

impl Deref for TransactionDb {
    type Target = Db;
    fn deref(&self) -> &Db {
        &self.db
    }
}

/// A lock timeout in milliseconds as a wait (negative: without limit).
fn timeout(ms: i64) -> Option<Duration> {
    (ms >= 0).then(|| Duration::from_millis(ms as u64))
}

impl TransactionDb {
    fn wrap(db: Db, opts: &TransactionDbOptions) -> Result<Self> {
        let max_locks = (opts.max_num_locks >= 0).then_some(opts.max_num_locks as usize);
        let tdb = TransactionDb {
            db,
            opts: opts.clone(),
            locks: LockTable::new(opts.num_stripes, max_locks),
            next_id: AtomicU64::new(1),
            names: Mutex::new(HashSet::new()),
            recovered: Mutex::new(Vec::new()),
        };
        // Prepared transactions take their locks again before anyone else can write.
        for (name, batch) in tdb.db.prepared_in_wal()? {
            let owner = Owner::new(tdb.new_id(), None);
            let mut tracked = Vec::new();
            for key in Self::batch_keys(&batch)? {
                let cfd = tdb.db.family_by_id(key.0).ok_or_else(|| Error::Corruption {
                    file: tdb.db.path().to_path_buf(),
                    offset: 0,
                    reason: format!(
                        "prepared transaction {:?} writes column family {}, which does not \
                             exist",
                        String::from_utf8_lossy(&name),
                        key.0
                    ),
                })?;
                let wait = Wait { timeout: Some(Duration::ZERO), deadlock_depth: None };
                tdb.locks.lock(&owner, &key, true, wait)?;
                tracked.push((key, cfd));
            }
            tdb.names.lock().insert(name.clone());
            tdb.recovered.lock().push(Recovered { name, batch, owner, tracked });
        }
        Ok(tdb)
    }

    /// Opens (or creates) the DB in `path` (as [`Db::open`]).
    pub fn open(
        opts: &Options,
        txn_db_opts: &TransactionDbOptions,
        path: impl AsRef<Path>,
    ) -> Result<Self> {
        Self::wrap(Db::open(opts, path)?, txn_db_opts)
    }

    /// Opens with default options, creating the DB if missing.
    pub fn open_default(path: impl AsRef<Path>) -> Result<Self> {
        let opts = Options { create_if_missing: true, ..Options::default() };
        Self::open(&opts, &TransactionDbOptions::default(), path)
    }

    /// Opens with column families `names` (as [`Db::open_cf`]).
    pub fn open_cf<I, N>(
        opts: &Options,
        txn_db_opts: &TransactionDbOptions,
        path: impl AsRef<Path>,
        names: I,
    ) -> Result<Self>
    where
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        Self::wrap(Db::open_cf(opts, path, names)?, txn_db_opts)
    }

    /// Opens with the families `descriptors` describe (as [`Db::open_cf_descriptors`]).
    pub fn open_cf_descriptors<I>(
        opts: &Options,
        txn_db_opts: &TransactionDbOptions,
        path: impl AsRef<Path>,
        descriptors: I,
    ) -> Result<Self>
    where
        I: IntoIterator<Item = ColumnFamilyDescriptor>,
    {
        Self::wrap(Db::open_cf_descriptors(opts, path, descriptors)?, txn_db_opts)
    }

    /// The underlying DB (its writes take no lock: use the `TransactionDb`'s own).
    pub fn db(&self) -> &Db {
        &self.db
    }

    pub(crate) fn locks(&self) -> &LockTable {
        &self.locks
    }

    fn new_id(&self) -> TxnId {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Begins a transaction with default options.
    pub fn transaction(&self) -> Transaction<'_, TransactionDb> {
        self.transaction_opt(&WriteOptions::default(), &TransactionOptions::default())
    }

    /// Begins a transaction that commits with `write_opts`.
    pub fn transaction_opt(
        &self,
        write_opts: &WriteOptions,
        txn_opts: &TransactionOptions,
    ) -> Transaction<'_, TransactionDb> {
        let lock_timeout = if txn_opts.lock_timeout < 0 {
            self.opts.txn_lock_timeout
        } else {
            txn_opts.lock_timeout
        };
        let expires = (txn_opts.expiration >= 0)
            .then(|| Instant::now() + Duration::from_millis(txn_opts.expiration as u64));
        let p = Pessimistic {
            tdb: self,
            owner: Owner::new(self.new_id(), expires),
            wait: Wait {
                timeout: timeout(lock_timeout),
                deadlock_depth: txn_opts
                    .deadlock_detect
                    .then_some(txn_opts.deadlock_detect_depth.max(1) as usize),
            },
            skip_prepare: txn_opts.skip_prepare,
            max_write_batch_size: txn_opts.max_write_batch_size,
        };
        Transaction::pessimistic(p, *write_opts, txn_opts.set_snapshot)
    }

    /// The transactions found prepared at open, to be committed or rolled back (each holds
    /// its keys' locks until then). Handed out once: a second call returns none.
    pub fn prepared_transactions(&self) -> Vec<Transaction<'_, TransactionDb>> {
        let recovered = std::mem::take(&mut *self.recovered.lock());
        recovered
            .into_iter()
            .map(|r| {
                let p = Pessimistic {
                    tdb: self,
                    owner: r.owner,
                    wait: Wait {
                        timeout: timeout(self.opts.txn_lock_timeout),
                        deadlock_depth: None,
                    },
                    skip_prepare: true,
                    max_write_batch_size: 0,
                };
                Transaction::recovered(p, r.name, &r.batch, r.tracked)
            })
            .collect()
    }

    pub(crate) fn register_name(&self, name: &[u8]) -> Result<()> {
        if !self.names.lock().insert(name.to_vec()) {
            return Err(Error::InvalidArgument(format!(
                "a transaction named {:?} exists (running, or prepared and not yet resolved)",
                String::from_utf8_lossy(name)
            )));
        }
        Ok(())
    }

    pub(crate) fn unregister_name(&self, name: &[u8]) {
        self.names.lock().remove(name);
    }

    /// The keys `batch` writes; range deletions are refused. (A family that does not exist
    /// is the write's to refuse.)
    fn batch_keys(batch: &WriteBatch) -> Result<Vec<LockKey>> {
        let mut out = Vec::with_capacity(batch.len());
        for r in batch.iter() {
            if r.value_type == ValueType::RangeDeletion {
                return Err(Error::NotSupported(
                    "a TransactionDb cannot lock a range: delete the keys one by one (or write \
                     through TransactionDb::db())"
                        .into(),
                ));
            }
            out.push((r.cf, r.key.to_vec()));
        }
        Ok(out)
    }

    /// Writes `batch` holding the exclusive locks of its keys (module docs).
    pub fn write_opt(&self, batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
        let mut keys = Self::batch_keys(&batch)?;
        keys.sort_unstable();
        keys.dedup();
        let owner = Owner::new(self.new_id(), None);
        let wait = Wait { timeout: timeout(self.opts.default_lock_timeout), deadlock_depth: None };
        let mut taken = 0;
        let mut result = Ok(());
        for k in &keys {
            if let Err(e) = self.locks.lock(&owner, k, true, wait) {
                result = Err(e);
                break;
            }
            taken += 1;
        }
        if result.is_ok() {
            result = self.db.write_opt(batch, opts);
        }
        self.locks.unlock(owner.id, &keys[..taken]);
        result
    }

    /// [`TransactionDb::write_opt`] with default write options.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, &WriteOptions::default())
    }

    /// Writes an indexed batch's writes (locking as [`TransactionDb::write_opt`]).
    pub fn write_wbwi(&self, batch: &WriteBatchWithIndex) -> Result<()> {
        self.write_wbwi_opt(batch, &WriteOptions::default())
    }

    /// [`TransactionDb::write_wbwi`] with write options.
    pub fn write_wbwi_opt(&self, batch: &WriteBatchWithIndex, opts: &WriteOptions) -> Result<()> {
        self.write_opt(batch.write_batch().clone(), opts)
    }

    /// Sets `key` to `value`, locking it.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(key, value, &WriteOptions::default())
    }

    /// [`TransactionDb::put`] with write options.
    pub fn put_opt(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        opts: &WriteOptions,
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write_opt(b, opts)
    }

    /// [`TransactionDb::put`] in column family `cf`.
    pub fn put_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.put_cf_opt(cf, key, value, &WriteOptions::default())
    }

    /// [`TransactionDb::put_cf`] with write options.
    pub fn put_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        opts: &WriteOptions,
    ) -> Result<()> {
        self.db.family(Some(cf))?;
        let mut b = WriteBatch::new();
        b.put_cf(cf, key, value);
        self.write_opt(b, opts)
    }

    /// Removes `key`, locking it.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_opt(key, &WriteOptions::default())
    }

    /// [`TransactionDb::delete`] with write options.
    pub fn delete_opt(&self, key: impl AsRef<[u8]>, opts: &WriteOptions) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write_opt(b, opts)
    }

    /// [`TransactionDb::delete`] in column family `cf`.
    pub fn delete_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_cf_opt(cf, key, &WriteOptions::default())
    }

    /// [`TransactionDb::delete_cf`] with write options.
    pub fn delete_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        opts: &WriteOptions,
    ) -> Result<()> {
        self.db.family(Some(cf))?;
        let mut b = WriteBatch::new();
        b.delete_cf(cf, key);
        self.write_opt(b, opts)
    }

    /// Adds a merge operand for `key`, locking it.
    pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.merge_opt(key, operand, &WriteOptions::default())
    }

    /// [`TransactionDb::merge`] with write options.
    pub fn merge_opt(
        &self,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
        opts: &WriteOptions,
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.merge(key, operand);
        self.write_opt(b, opts)
    }

    /// [`TransactionDb::merge`] in column family `cf`.
    pub fn merge_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.merge_cf_opt(cf, key, operand, &WriteOptions::default())
    }

    /// [`TransactionDb::merge_cf`] with write options.
    pub fn merge_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
        opts: &WriteOptions,
    ) -> Result<()> {
        self.db.family(Some(cf))?;
        let mut b = WriteBatch::new();
        b.merge_cf(cf, key, operand);
        self.write_opt(b, opts)
    }

    /// Refused: a range cannot be locked key by key (module docs).
    pub fn delete_range(&self, begin: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range(begin.as_ref(), end.as_ref());
        self.write_opt(b, &WriteOptions::default())
    }

    /// Refused: a range cannot be locked key by key (module docs).
    pub fn delete_range_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        begin: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range_cf(cf, begin.as_ref(), end.as_ref());
        self.write_opt(b, &WriteOptions::default())
    }

    pub(crate) fn prepare_in_wal(
        &self,
        name: &[u8],
        batch: &WriteBatch,
        opts: WriteOptions,
    ) -> Result<()> {
        self.db.prepare_in_wal(name, batch, opts)
    }

    pub(crate) fn commit_prepared(
        &self,
        name: &[u8],
        batch: WriteBatch,
        opts: WriteOptions,
    ) -> Result<()> {
        self.db.commit_prepared(name, batch, opts)
    }

    pub(crate) fn rollback_prepared(&self, name: &[u8], opts: WriteOptions) -> Result<()> {
        self.db.rollback_prepared(name, opts)
    }
}
