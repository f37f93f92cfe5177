//! One transaction, of an [`OptimisticTransactionDb`] or of a [`TransactionDb`] (the `rocksdb`
//! crate's `Transaction<'db, DB>`; its methods take `&self`, as the crate's do).
//!
//! Writes gather in a [`WriteBatchWithIndex`] (so the transaction's reads see them), and every
//! key it reads for update or writes is *tracked*:
//! - optimistic: at a sequence number, its snapshot's when it took one, else the DB's last
//!   sequence number when the key was first tracked; the commit writes the batch only if no
//!   tracked key was written after its number (`optimistic.rs`), else fails with `Error::Busy`
//!   (`Error::TryAgain` when memory no longer tells);
//! - pessimistic: by a lock taken at once (`lock.rs`: exclusive for a write, shared or
//!   exclusive for `get_for_update`), waiting at most the lock timeout; with a snapshot, a key
//!   written since the snapshot fails the call with `Error::Busy` (its lock is let go). Locks
//!   are released when the transaction commits, rolls back or is dropped.
//!
//! Two-phase commit (pessimistic only): `set_name`, then `prepare` writes the batch to the WAL
//! under the name (`db/write/two_phase.rs`); `commit` or `rollback` then resolves it. A prepared
//! transaction dropped without either stays prepared in the WAL: after a reopen it is among
//! [`TransactionDb::prepared_transactions`] (holding its locks again).
//!
//! Save points stack the batch and the tracked keys; rolling back to one restores both and,
//! pessimistic, releases the locks taken since.

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::sync::Arc;

use parking_lot::Mutex;

use super::lock::{expired, LockKey, Owner, Wait};
use super::optimistic::OptimisticTransactionDb;
use super::pessimistic::TransactionDb;
use crate::column_family::AsColumnFamilyRef;
use crate::db::{Cfd, Changed, Db, DbPinnableSlice, DbRawIterator, Direction, IteratorMode};
use crate::error::{Error, Result};
use crate::options::{ReadOptions, WriteOptions};
use crate::snapshot::SnapshotHandle;
use crate::types::{SeqNo, ValueType};
use crate::utilities::wbwi::WriteBatchWithIndex;
use crate::wide_columns::WideColumns;
use crate::write_batch::WriteBatch;

/// A key the transaction tracks: its family, the number an optimistic commit checks it from,
/// and (pessimistic) whether its lock is exclusive.
#[derive(Clone)]
struct Tracked {
    cfd: Arc<Cfd>,
    seq: SeqNo,
    exclusive: bool,
}

/// The keys a transaction tracks.
type TrackedKeys = BTreeMap<LockKey, Tracked>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Started,
    Prepared,
    /// Prepared, then rolled back: nothing more can be done with it.
    RolledBack,
    Committed,
}

struct State {
    batch: WriteBatchWithIndex,
    tracked: TrackedKeys,
    save_points: Vec<(WriteBatchWithIndex, TrackedKeys)>,
    name: Option<Vec<u8>>,
    phase: Phase,
}

/// A pessimistic transaction's link to its DB's lock table.
pub(crate) struct Pessimistic<'db> {
    pub tdb: &'db TransactionDb,
    pub owner: Arc<Owner>,
    pub wait: Wait,
    /// `false`: a named transaction must be prepared before it commits.
    pub skip_prepare: bool,
    /// Largest batch in bytes (0: no limit).
    pub max_write_batch_size: usize,
}

enum Kind<'db> {
    Optimistic(&'db OptimisticTransactionDb),
    Pessimistic(Pessimistic<'db>),
}

/// A transaction (module docs; the `rocksdb` crate's `Transaction`). `DB` names the kind of
/// DB it belongs to, as in the crate. Dropped without [`Transaction::commit`], it writes
/// nothing (a prepared one stays prepared).
pub struct Transaction<'db, DB = OptimisticTransactionDb> {
    db: &'db Db,
    kind: Kind<'db>,
    write_opts: WriteOptions,
    snapshot: Option<SnapshotHandle>,
    st: Mutex<State>,
    _db: PhantomData<fn() -> &'db DB>,
}

fn new_state(db: &Db) -> Mutex<State> {
    Mutex::new(State {
        batch: WriteBatchWithIndex::for_db(db),
        tracked: BTreeMap::new(),
        save_points: Vec::new(),
        name: None,
        phase: Phase::Started,
    })
}

impl<'db> Transaction<'db, OptimisticTransactionDb> {
    pub(crate) fn optimistic(
        db: &'db OptimisticTransactionDb,
        write_opts: WriteOptions,
        snapshot: bool,
    ) -> Self {
        Transaction {
            db,
            kind: Kind::Optimistic(db),
            write_opts,
            snapshot: snapshot.then(|| db.snapshot().into_handle()),
            st: new_state(db),
            _db: PhantomData,
        }
    }
}

impl<'db> Transaction<'db, TransactionDb> {
    pub(crate) fn pessimistic(
        p: Pessimistic<'db>,
        write_opts: WriteOptions,
        snapshot: bool,
    ) -> Self {
        let db: &Db = p.tdb;
        Transaction {
            db,
            snapshot: snapshot.then(|| db.snapshot().into_handle()),
            kind: Kind::Pessimistic(p),
            write_opts,
            st: new_state(db),
            _db: PhantomData,
        }
    }

    /// A transaction recovered prepared: `batch` is its writes, whose keys `p.owner` already
    /// holds locked.
    pub(crate) fn recovered(
        p: Pessimistic<'db>,
        name: Vec<u8>,
        batch: &WriteBatch,
        tracked: Vec<(LockKey, Arc<Cfd>)>,
    ) -> Self {
        let t = Self::pessimistic(p, WriteOptions::default(), false);
        {
            let mut st = t.st.lock();
            st.batch.append(batch);
            st.name = Some(name);
            st.phase = Phase::Prepared;
            for (k, cfd) in tracked {
                st.tracked.insert(k, Tracked { cfd, seq: SeqNo(0), exclusive: true });
            }
        }
        t
    }
}

impl<'db, DB> Transaction<'db, DB> {
    /// The DB the transaction reads and writes.
    pub(crate) fn base_db(&self) -> &'db Db {
        self.db
    }

    /// The snapshot the transaction reads at, if it took one.
    pub(crate) fn read_snapshot(&self) -> Option<&SnapshotHandle> {
        self.snapshot.as_ref()
    }

    /// A view reading through this transaction at its snapshot (the one taken when it began
    /// with `set_snapshot`; without one, the DB's latest state), its own writes included.
    pub fn snapshot(&self) -> TransactionSnapshot<'_, 'db, DB> {
        TransactionSnapshot { txn: self }
    }

    /// The writes gathered so far.
    pub fn get_writebatch(&self) -> WriteBatch {
        self.st.lock().batch.write_batch().clone()
    }

    /// Tracks `key` of family `cf` (the default when `None`): module docs.
    fn track(
        &self,
        st: &mut State,
        cf: Option<&dyn AsColumnFamilyRef>,
        key: &[u8],
        exclusive: bool,
    ) -> Result<()> {
        if st.phase != Phase::Started {
            return Err(Error::InvalidArgument(format!(
                "the transaction is {}: it takes no more writes or reads for update",
                phase_name(st.phase)
            )));
        }
        // The handle is checked to be this DB's on every call, tracked key or not.
        let cfd = self.db.family(cf)?;
        let k: LockKey = (cfd.id, key.to_vec());
        let seq = match &self.snapshot {
            Some(s) => s.seq(),
            None => SeqNo(self.db.latest_sequence_number()),
        };
        match &self.kind {
            Kind::Optimistic(_) => {
                st.tracked.entry(k).or_insert(Tracked { cfd, seq, exclusive });
            }
            Kind::Pessimistic(p) => {
                let held = st.tracked.get(&k).map(|t| t.exclusive);
                if held == Some(true) || (held == Some(false) && !exclusive) {
                    return Ok(());
                }
                p.tdb.locks().lock(&p.owner, &k, exclusive, p.wait)?;
                if let Some(s) = &self.snapshot {
                    let refused = match self.db.changed_since(&cfd, key, s.seq()) {
                        Changed::No => None,
                        Changed::Yes(at) => Some(busy(&cfd, key, at, s.seq())),
                        Changed::Unknown => Some(try_again(&cfd, key, s.seq())),
                    };
                    if let Some(e) = refused {
                        if held.is_none() {
                            p.tdb.locks().unlock(p.owner.id, [&k]);
                        }
                        return Err(e);
                    }
                }
                st.tracked.entry(k).or_insert(Tracked { cfd, seq, exclusive }).exclusive |=
                    exclusive;
            }
        }
        Ok(())
    }

    /// Refuses a write that would take the batch past `max_write_batch_size`.
    fn check_size(&self, st: &State, adding: usize) -> Result<()> {
        if let Kind::Pessimistic(p) = &self.kind {
            let after = st.batch.size_in_bytes() + adding;
            if p.max_write_batch_size > 0 && after > p.max_write_batch_size {
                return Err(Error::InvalidArgument(format!(
                    "the transaction's batch would hold {after} bytes, over its \
                     max_write_batch_size of {}",
                    p.max_write_batch_size
                )));
            }
        }
        Ok(())
    }

    /// `key`'s value as this transaction sees it: its own writes over the DB read with
    /// default options.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }

    /// [`Transaction::get`] with read options (the DB is read at their snapshot, if any).
    pub fn get_opt(&self, key: impl AsRef<[u8]>, opts: &ReadOptions) -> Result<Option<Vec<u8>>> {
        self.st.lock().batch.get_from_batch_and_db(self.db, key, opts)
    }

    /// [`Transaction::get`] in column family `cf`.
    pub fn get_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        self.get_cf_opt(cf, key, &ReadOptions::default())
    }

    /// [`Transaction::get_opt`] in column family `cf`.
    pub fn get_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        opts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        self.st.lock().batch.get_from_batch_and_db_cf(self.db, cf, key, opts)
    }

    /// `key`'s wide columns as this transaction sees them (RocksDB's `Transaction::GetEntity`):
    /// its own writes over the DB's, as [`Transaction::get`] the value.
    pub fn get_entity(&self, key: impl AsRef<[u8]>) -> Result<Option<WideColumns>> {
        self.get_entity_opt(key, &ReadOptions::default())
    }

    /// [`Transaction::get_entity`] with read options.
    pub fn get_entity_opt(
        &self,
        key: impl AsRef<[u8]>,
        opts: &ReadOptions,
    ) -> Result<Option<WideColumns>> {
        self.st.lock().batch.get_entity_from_batch_and_db(self.db, key, opts)
    }

    /// [`Transaction::get_entity_opt`] in column family `cf`.
    pub fn get_entity_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        opts: &ReadOptions,
    ) -> Result<Option<WideColumns>> {
        self.st.lock().batch.get_entity_from_batch_and_db_cf(self.db, cf, key, opts)
    }

    /// [`Transaction::get_entity`], tracking the key for update as
    /// [`Transaction::get_for_update`] (RocksDB's `GetEntityForUpdate`).
    pub fn get_entity_for_update(
        &self,
        key: impl AsRef<[u8]>,
        exclusive: bool,
    ) -> Result<Option<WideColumns>> {
        self.get_entity_for_update_opt(key, exclusive, &ReadOptions::default())
    }

    /// [`Transaction::get_entity_for_update`] with read options.
    pub fn get_entity_for_update_opt(
        &self,
        key: impl AsRef<[u8]>,
        exclusive: bool,
        opts: &ReadOptions,
    ) -> Result<Option<WideColumns>> {
        let mut st = self.st.lock();
        self.track(&mut st, None, key.as_ref(), exclusive)?;
        st.batch.get_entity_from_batch_and_db(self.db, key, opts)
    }

    /// [`Transaction::get_entity_for_update_opt`] in column family `cf`.
    pub fn get_entity_for_update_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        exclusive: bool,
        opts: &ReadOptions,
    ) -> Result<Option<WideColumns>> {
        let mut st = self.st.lock();
        self.track(&mut st, Some(cf), key.as_ref(), exclusive)?;
        st.batch.get_entity_from_batch_and_db_cf(self.db, cf, key, opts)
    }

    /// [`Transaction::get`] of each key, in order.
    pub fn multi_get<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        self.multi_get_opt(keys, &ReadOptions::default())
    }

    /// [`Transaction::multi_get`] with read options.
    pub fn multi_get_opt<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
        opts: &ReadOptions,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        keys.into_iter().map(|k| self.get_opt(k, opts)).collect()
    }

    /// [`Transaction::get_cf`] of each (family, key), in order.
    pub fn multi_get_cf<'c, C, K, I>(&self, keys: I) -> Vec<Result<Option<Vec<u8>>>>
    where
        C: AsColumnFamilyRef + 'c,
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'c C, K)>,
    {
        keys.into_iter().map(|(cf, k)| self.get_cf(cf, k)).collect()
    }

    /// Reads `key` and tracks it for update (module docs): optimistic, the commit fails if it
    /// is written by someone else meanwhile; pessimistic, it is locked (`exclusive`, or shared
    /// with other readers) until the transaction ends.
    pub fn get_for_update(
        &self,
        key: impl AsRef<[u8]>,
        exclusive: bool,
    ) -> Result<Option<Vec<u8>>> {
        self.get_for_update_opt(key, exclusive, &ReadOptions::default())
    }

    /// [`Transaction::get_for_update`] with read options.
    pub fn get_for_update_opt(
        &self,
        key: impl AsRef<[u8]>,
        exclusive: bool,
        opts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        let mut st = self.st.lock();
        self.track(&mut st, None, key.as_ref(), exclusive)?;
        st.batch.get_from_batch_and_db(self.db, key, opts)
    }

    /// [`Transaction::get_for_update`] in column family `cf`.
    pub fn get_for_update_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        exclusive: bool,
    ) -> Result<Option<Vec<u8>>> {
        self.get_for_update_cf_opt(cf, key, exclusive, &ReadOptions::default())
    }

    /// [`Transaction::get_for_update_opt`] in column family `cf`.
    pub fn get_for_update_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        exclusive: bool,
        opts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        let mut st = self.st.lock();
        self.track(&mut st, Some(cf), key.as_ref(), exclusive)?;
        st.batch.get_from_batch_and_db_cf(self.db, cf, key, opts)
    }

    /// [`Transaction::get_for_update`] as a pinnable slice (the `rocksdb` crate's
    /// `get_pinned_for_update`; the value is an owned copy: it may come from the
    /// transaction's own writes).
    pub fn get_pinned_for_update(
        &self,
        key: impl AsRef<[u8]>,
        exclusive: bool,
    ) -> Result<Option<DbPinnableSlice>> {
        Ok(self.get_for_update(key, exclusive)?.map(DbPinnableSlice::owned))
    }

    /// [`Transaction::get_pinned_for_update`] with read options.
    pub fn get_pinned_for_update_opt(
        &self,
        key: impl AsRef<[u8]>,
        exclusive: bool,
        opts: &ReadOptions,
    ) -> Result<Option<DbPinnableSlice>> {
        Ok(self.get_for_update_opt(key, exclusive, opts)?.map(DbPinnableSlice::owned))
    }

    /// [`Transaction::get_pinned_for_update`] in column family `cf`.
    pub fn get_pinned_for_update_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        exclusive: bool,
    ) -> Result<Option<DbPinnableSlice>> {
        Ok(self.get_for_update_cf(cf, key, exclusive)?.map(DbPinnableSlice::owned))
    }

    /// [`Transaction::get_pinned_for_update_cf`] with read options.
    pub fn get_pinned_for_update_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        exclusive: bool,
        opts: &ReadOptions,
    ) -> Result<Option<DbPinnableSlice>> {
        Ok(self.get_for_update_cf_opt(cf, key, exclusive, opts)?.map(DbPinnableSlice::owned))
    }

    /// Tracks the key (exclusively), then adds the write to the batch.
    fn write_op(
        &self,
        cf: Option<&dyn AsColumnFamilyRef>,
        key: &[u8],
        bytes: usize,
        add: impl FnOnce(&mut WriteBatchWithIndex),
    ) -> Result<()> {
        let mut st = self.st.lock();
        self.check_size(&st, bytes)?;
        self.track(&mut st, cf, key, true)?;
        add(&mut st.batch);
        Ok(())
    }

    /// Sets `key` to `value` when the transaction commits.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let (k, v) = (key.as_ref(), value.as_ref());
        self.write_op(None, k, k.len() + v.len(), |b| b.put(k, v))
    }

    /// Puts the wide-column entity `columns` to `key` when the transaction commits
    /// (RocksDB's `Transaction::PutEntity`); plain reads through the transaction see its
    /// default column, [`Transaction::get_entity`] its columns
    /// ([`WriteBatchWithIndex::put_entity`]).
    pub fn put_entity<K: AsRef<[u8]>, N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        key: K,
        columns: &[(N, V)],
    ) -> Result<()> {
        let k = key.as_ref();
        let bytes = columns.iter().map(|(n, v)| n.as_ref().len() + v.as_ref().len()).sum::<usize>();
        self.write_op(None, k, k.len() + bytes, |b| b.put_entity(k, columns))
    }

    /// [`Transaction::put_entity`] in column family `cf`.
    pub fn put_entity_cf<K: AsRef<[u8]>, N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        columns: &[(N, V)],
    ) -> Result<()> {
        let k = key.as_ref();
        let bytes = columns.iter().map(|(n, v)| n.as_ref().len() + v.as_ref().len()).sum::<usize>();
        self.write_op(Some(cf), k, k.len() + bytes, |b| b.put_entity_cf(cf, k, columns))
    }

    /// [`Transaction::put`] in column family `cf`.
    pub fn put_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        let (k, v) = (key.as_ref(), value.as_ref());
        self.write_op(Some(cf), k, k.len() + v.len(), |b| b.put_cf(cf, k, v))
    }

    /// Deletes `key` when the transaction commits.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let k = key.as_ref();
        self.write_op(None, k, k.len(), |b| b.delete(k))
    }

    /// [`Transaction::delete`] in column family `cf`.
    pub fn delete_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) -> Result<()> {
        let k = key.as_ref();
        self.write_op(Some(cf), k, k.len(), |b| b.delete_cf(cf, k))
    }

    /// Adds a merge operand for `key` when the transaction commits.
    pub fn merge(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let (k, v) = (key.as_ref(), value.as_ref());
        self.write_op(None, k, k.len() + v.len(), |b| b.merge(k, v))
    }

    /// [`Transaction::merge`] in column family `cf`.
    pub fn merge_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        let (k, v) = (key.as_ref(), value.as_ref());
        self.write_op(Some(cf), k, k.len() + v.len(), |b| b.merge_cf(cf, k, v))
    }

    /// Adds every write of `batch` to the transaction as its own `put`, `delete` or `merge`
    /// would (tracking or locking each key, in the batch's order; RocksDB's
    /// `RebuildFromWriteBatch`). A range deletion is refused (`NotSupported`); a failure
    /// leaves the writes before it in the transaction.
    pub fn rebuild_from_writebatch(&self, batch: &WriteBatch) -> Result<()> {
        batch.validate()?;
        for r in batch.iter() {
            let handle = if r.cf == 0 {
                None
            } else {
                let cfd = self.db.family_by_id(r.cf).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "write batch names column family {}, which does not exist (dropped?)",
                        r.cf
                    ))
                })?;
                Some(
                    self.db
                        .cf_handle(&cfd.name)
                        .ok_or_else(|| Error::ColumnFamilyDropped(cfd.name.clone()))?,
                )
            };
            let (k, v) = (r.key, r.value);
            match (r.value_type, &handle) {
                (ValueType::Value, None) => self.put(k, v)?,
                (ValueType::Value, Some(cf)) => self.put_cf(cf, k, v)?,
                (ValueType::Deletion | ValueType::SingleDeletion, None) => self.delete(k)?,
                (ValueType::Deletion | ValueType::SingleDeletion, Some(cf)) => {
                    self.delete_cf(cf, k)?;
                }
                (ValueType::Merge, None) => self.merge(k, v)?,
                (ValueType::Merge, Some(cf)) => self.merge_cf(cf, k, v)?,
                (ValueType::Entity, _) => {
                    let columns = crate::wide_columns::WideColumns::decode(v)?.into_vec();
                    match &handle {
                        None => self.put_entity(k, &columns)?,
                        Some(cf) => self.put_entity_cf(cf, k, &columns)?,
                    }
                }
                (ValueType::RangeDeletion, _) => {
                    return Err(Error::NotSupported(
                        "a transaction cannot take a range deletion".into(),
                    ))
                }
                // Never decoded from a batch (`write_batch::next_entry` refuses it).
                (ValueType::BlobIndex, _) => {}
            }
        }
        Ok(())
    }

    /// A cursor over the DB with this transaction's writes on top (as they are now).
    pub fn raw_iterator(&self) -> DbRawIterator {
        self.raw_iterator_opt(ReadOptions::default())
    }

    /// [`Transaction::raw_iterator`] with read options.
    pub fn raw_iterator_opt(&self, opts: impl std::borrow::Borrow<ReadOptions>) -> DbRawIterator {
        self.st.lock().batch.iterator_with_base(self.db.raw_iterator_opt(opts))
    }

    /// [`Transaction::raw_iterator`] in column family `cf`.
    pub fn raw_iterator_cf(&self, cf: &impl AsColumnFamilyRef) -> DbRawIterator {
        self.raw_iterator_cf_opt(cf, ReadOptions::default())
    }

    /// [`Transaction::raw_iterator_opt`] in column family `cf`.
    pub fn raw_iterator_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        opts: impl std::borrow::Borrow<ReadOptions>,
    ) -> DbRawIterator {
        self.st.lock().batch.iterator_with_base_cf(self.db.raw_iterator_cf_opt(cf, opts), cf)
    }

    /// [`Transaction::iterator`] in total key order (the `rocksdb` crate's `full_iterator`:
    /// Strata's iterators never skip by prefix, so this is `iterator`).
    pub fn full_iterator(&self, mode: IteratorMode<'_>) -> TransactionIterator {
        self.iterator(mode)
    }

    /// [`Transaction::full_iterator`] in column family `cf`.
    pub fn full_iterator_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        mode: IteratorMode<'_>,
    ) -> TransactionIterator {
        self.iterator_cf(cf, mode)
    }

    /// The pairs from `mode`, this transaction's writes included (as they are now).
    pub fn iterator(&self, mode: IteratorMode<'_>) -> TransactionIterator {
        TransactionIterator::new(self.raw_iterator(), mode)
    }

    /// [`Transaction::iterator`] with read options.
    pub fn iterator_opt(&self, mode: IteratorMode<'_>, opts: ReadOptions) -> TransactionIterator {
        TransactionIterator::new(self.raw_iterator_opt(opts), mode)
    }

    /// [`Transaction::iterator`] in column family `cf`.
    pub fn iterator_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        mode: IteratorMode<'_>,
    ) -> TransactionIterator {
        TransactionIterator::new(self.raw_iterator_cf(cf), mode)
    }

    /// [`Transaction::iterator_opt`] in column family `cf`.
    pub fn iterator_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        opts: ReadOptions,
        mode: IteratorMode<'_>,
    ) -> TransactionIterator {
        TransactionIterator::new(self.raw_iterator_cf_opt(cf, opts), mode)
    }

    /// Marks a save point: [`Transaction::rollback_to_savepoint`] returns to it.
    pub fn set_savepoint(&self) {
        let mut st = self.st.lock();
        let point = (st.batch.clone(), st.tracked.clone());
        st.save_points.push(point);
    }

    /// Undoes the writes (and tracking) since the last save point, and removes it;
    /// pessimistic, the locks taken since are released. `InvalidArgument` when there is none.
    pub fn rollback_to_savepoint(&self) -> Result<()> {
        let mut st = self.st.lock();
        if st.phase != Phase::Started {
            return Err(Error::InvalidArgument(format!(
                "the transaction is {}: it has no save point to roll back to",
                phase_name(st.phase)
            )));
        }
        let (batch, tracked) = st
            .save_points
            .pop()
            .ok_or_else(|| Error::InvalidArgument("no save point to roll back to".into()))?;
        if let Kind::Pessimistic(p) = &self.kind {
            let since = st.tracked.keys().filter(|k| !tracked.contains_key(*k));
            p.tdb.locks().unlock(p.owner.id, since);
        }
        st.batch = batch;
        st.tracked = tracked;
        Ok(())
    }

    /// Undoes every write and forgets every tracked key (releasing its lock) and save point.
    /// A prepared transaction is rolled back in the WAL, and can do nothing more.
    pub fn rollback(&self) -> Result<()> {
        let mut st = self.st.lock();
        if let Kind::Pessimistic(p) = &self.kind {
            match st.phase {
                Phase::Prepared => {
                    let name = st.name.clone().unwrap_or_default();
                    p.tdb.rollback_prepared(&name, self.write_opts)?;
                    st.phase = Phase::RolledBack;
                }
                Phase::Started => {}
                Phase::RolledBack | Phase::Committed => {
                    return Err(Error::InvalidArgument(format!(
                        "the transaction is {}",
                        phase_name(st.phase)
                    )))
                }
            }
            p.tdb.locks().unlock(p.owner.id, st.tracked.keys());
        }
        st.batch.clear();
        st.tracked.clear();
        st.save_points.clear();
        Ok(())
    }

    /// Names the transaction (needed before [`Transaction::prepare`]); the name must be
    /// unique among the DB's live and prepared transactions. Pessimistic only.
    pub fn set_name(&self, name: &[u8]) -> Result<()> {
        let Kind::Pessimistic(p) = &self.kind else {
            return Err(Error::NotSupported(
                "an optimistic transaction has no name (two-phase commit is pessimistic only)"
                    .into(),
            ));
        };
        let mut st = self.st.lock();
        if let Some(old) = &st.name {
            return Err(Error::InvalidArgument(format!(
                "the transaction is already named {:?}",
                String::from_utf8_lossy(old)
            )));
        }
        if name.is_empty() {
            return Err(Error::InvalidArgument("a transaction's name cannot be empty".into()));
        }
        p.tdb.register_name(name)?;
        st.name = Some(name.to_vec());
        Ok(())
    }

    /// The name given with [`Transaction::set_name`].
    pub fn get_name(&self) -> Option<Vec<u8>> {
        self.st.lock().name.clone()
    }

    /// Writes the transaction's batch to the WAL as prepared under its name (module docs):
    /// from then on it survives a crash, holds its locks and takes no more writes, until
    /// [`Transaction::commit`] or [`Transaction::rollback`]. Pessimistic only.
    pub fn prepare(&self) -> Result<()> {
        let Kind::Pessimistic(p) = &self.kind else {
            return Err(Error::NotSupported(
                "an optimistic transaction cannot be prepared (two-phase commit is pessimistic \
                 only)"
                    .into(),
            ));
        };
        let mut st = self.st.lock();
        if st.phase != Phase::Started {
            return Err(Error::InvalidArgument(format!(
                "the transaction is {}",
                phase_name(st.phase)
            )));
        }
        let Some(name) = st.name.clone() else {
            return Err(Error::InvalidArgument(
                "a transaction needs a name (set_name) before it is prepared".into(),
            ));
        };
        if !p.owner.seal() {
            return Err(expired(p.owner.id));
        }
        p.tdb.prepare_in_wal(&name, st.batch.write_batch(), self.write_opts)?;
        st.phase = Phase::Prepared;
        st.save_points.clear();
        Ok(())
    }

    /// Writes the transaction's batch. Optimistic: only if no tracked key was written by
    /// someone else since it was tracked (else `Error::Busy`, or `Error::TryAgain` when the
    /// memtables no longer hold every write since). Pessimistic: its locks make it safe; it
    /// fails with `Error::Expired` if it ran past its expiration and lost a lock, and a named
    /// transaction begun with `skip_prepare(false)` must be prepared first.
    pub fn commit(self) -> Result<()> {
        match &self.kind {
            Kind::Optimistic(db) => self.commit_optimistic(db),
            Kind::Pessimistic(p) => {
                let mut st = self.st.lock();
                match st.phase {
                    Phase::Prepared => {
                        let name = st.name.clone().unwrap_or_default();
                        let batch =
                            std::mem::replace(&mut st.batch, WriteBatchWithIndex::for_db(self.db));
                        p.tdb.commit_prepared(&name, batch.into_write_batch(), self.write_opts)?;
                    }
                    Phase::Started => {
                        if st.name.is_some() && !p.skip_prepare {
                            return Err(Error::InvalidArgument(
                                "the transaction is named and skip_prepare is off: prepare it \
                                 before it commits"
                                    .into(),
                            ));
                        }
                        if !p.owner.seal() {
                            return Err(expired(p.owner.id));
                        }
                        if !st.batch.is_empty() {
                            let batch = std::mem::replace(
                                &mut st.batch,
                                WriteBatchWithIndex::for_db(self.db),
                            );
                            self.db.write_opt(batch.into_write_batch(), &self.write_opts)?;
                        }
                    }
                    Phase::RolledBack | Phase::Committed => {
                        return Err(Error::InvalidArgument(format!(
                            "the transaction is {}",
                            phase_name(st.phase)
                        )))
                    }
                }
                st.phase = Phase::Committed;
                Ok(())
            }
        }
    }

    fn commit_optimistic(&self, db: &OptimisticTransactionDb) -> Result<()> {
        let mut st = self.st.lock();
        let hashes = st.tracked.keys().map(|k| {
            let mut h = DefaultHasher::new();
            k.hash(&mut h);
            h.finish()
        });
        let _held = db.lock_stripes(hashes);
        for ((_, key), t) in &st.tracked {
            match self.db.changed_since(&t.cfd, key, t.seq) {
                Changed::No => {}
                Changed::Yes(at) => return Err(busy(&t.cfd, key, at, t.seq)),
                Changed::Unknown => return Err(try_again(&t.cfd, key, t.seq)),
            }
        }
        if st.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::replace(&mut st.batch, WriteBatchWithIndex::for_db(self.db));
        self.db.write_opt(batch.into_write_batch(), &self.write_opts)
    }
}

impl<DB> Drop for Transaction<'_, DB> {
    fn drop(&mut self) {
        if let Kind::Pessimistic(p) = &self.kind {
            let st = self.st.get_mut();
            p.tdb.locks().unlock(p.owner.id, st.tracked.keys());
            // A prepared transaction keeps its name: the WAL still holds it under it.
            if let (Some(name), false) = (&st.name, st.phase == Phase::Prepared) {
                p.tdb.unregister_name(name);
            }
        }
    }
}

fn phase_name(p: Phase) -> &'static str {
    match p {
        Phase::Started => "running",
        Phase::Prepared => "prepared",
        Phase::RolledBack => "rolled back",
        Phase::Committed => "committed",
    }
}

fn busy(cfd: &Cfd, key: &[u8], at: SeqNo, since: SeqNo) -> Error {
    Error::Busy(format!(
        "key {:?} of column family {:?} was written at sequence {} after {}",
        String::from_utf8_lossy(key),
        cfd.name,
        at.0,
        since.0
    ))
}

fn try_again(cfd: &Cfd, key: &[u8], since: SeqNo) -> Error {
    Error::TryAgain(format!(
        "the writes to column family {:?} since sequence {} are no longer all in memory: key \
         {:?} cannot be checked",
        cfd.name,
        since.0,
        String::from_utf8_lossy(key)
    ))
}

/// Reads through a transaction at its snapshot ([`Transaction::snapshot`]).
pub struct TransactionSnapshot<'t, 'db, DB> {
    txn: &'t Transaction<'db, DB>,
}

impl<DB> TransactionSnapshot<'_, '_, DB> {
    fn read_opts(&self) -> ReadOptions {
        let mut o = ReadOptions::default();
        if let Some(s) = &self.txn.snapshot {
            o.set_snapshot(s);
        }
        o
    }

    /// `key` as the transaction sees it at its snapshot.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.txn.get_opt(key, &self.read_opts())
    }

    /// [`TransactionSnapshot::get`] in column family `cf`.
    pub fn get_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        self.txn.get_cf_opt(cf, key, &self.read_opts())
    }

    /// [`TransactionSnapshot::get`] of each key, in order.
    pub fn multi_get<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        self.txn.multi_get_opt(keys, &self.read_opts())
    }

    /// The pairs from `mode` at the snapshot, the transaction's writes included.
    pub fn iterator(&self, mode: IteratorMode<'_>) -> TransactionIterator {
        self.txn.iterator_opt(mode, self.read_opts())
    }
}

/// The pairs of a transaction's view (its writes over the DB), a Rust iterator in the
/// direction of its mode; an error is yielded once, then the iteration ends.
pub struct TransactionIterator {
    raw: DbRawIterator,
    forward: bool,
    started: bool,
    done: bool,
    start: Option<(Vec<u8>, Direction)>,
}

impl TransactionIterator {
    fn new(raw: DbRawIterator, mode: IteratorMode<'_>) -> Self {
        let (forward, start) = match mode {
            IteratorMode::Start => (true, None),
            IteratorMode::End => (false, None),
            IteratorMode::From(k, d) => (d == Direction::Forward, Some((k.to_vec(), d))),
        };
        TransactionIterator { raw, forward, started: false, done: false, start }
    }
}

impl Iterator for TransactionIterator {
    type Item = Result<(Box<[u8]>, Box<[u8]>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.started {
            if self.forward {
                self.raw.next();
            } else {
                self.raw.prev();
            }
        } else {
            self.started = true;
            match (&self.start, self.forward) {
                (Some((k, _)), true) => self.raw.seek(k),
                (Some((k, _)), false) => self.raw.seek_for_prev(k),
                (None, true) => self.raw.seek_to_first(),
                (None, false) => self.raw.seek_to_last(),
            }
        }
        match self.raw.item() {
            Some((k, v)) => Some(Ok((k.into(), v.into()))),
            None => {
                self.done = true;
                self.raw.status().err().map(Err)
            }
        }
    }
}
