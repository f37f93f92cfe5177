//! One optimistic transaction: its writes gather in a [`WriteBatchWithIndex`] (so its own
//! reads see them), and every key it reads for update or writes is *tracked* at a sequence
//! number: the transaction's snapshot when it took one, else the DB's last sequence number
//! when the key was first tracked. The commit writes the batch only if no tracked key was
//! written after its number (`optimistic.rs`), else fails with `Error::Busy` (or
//! `Error::TryAgain` when memory no longer tells).
//!
//! Save points stack the batch and the tracked keys; rolling back to one restores both.

use std::collections::btree_map::Entry;
use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::optimistic::OptimisticTransactionDb;
use crate::column_family::{AsColumnFamilyRef, ColumnFamilyId};
use crate::db::{Cfd, Changed, DbRawIterator, Direction, IteratorMode};
use crate::error::{Error, Result};
use crate::options::{ReadOptions, WriteOptions};
use crate::snapshot::Snapshot;
use crate::types::SeqNo;
use crate::utilities::wbwi::WriteBatchWithIndex;
use crate::write_batch::WriteBatch;

/// A key the commit checks: its family and the number it is checked from.
#[derive(Clone)]
struct Tracked {
    cfd: Arc<Cfd>,
    seq: SeqNo,
}

/// The keys a transaction tracks.
type TrackedKeys = BTreeMap<(ColumnFamilyId, Vec<u8>), Tracked>;

/// A transaction of an [`OptimisticTransactionDb`] (the `rocksdb` crate's `Transaction`).
/// Dropped without [`Transaction::commit`], it writes nothing.
pub struct Transaction<'db> {
    db: &'db OptimisticTransactionDb,
    write_opts: WriteOptions,
    snapshot: Option<Snapshot>,
    batch: WriteBatchWithIndex,
    tracked: TrackedKeys,
    save_points: Vec<(WriteBatchWithIndex, TrackedKeys)>,
}

impl<'db> Transaction<'db> {
    pub(crate) fn begin(
        db: &'db OptimisticTransactionDb,
        write_opts: WriteOptions,
        snapshot: bool,
    ) -> Self {
        Transaction {
            db,
            write_opts,
            snapshot: snapshot.then(|| db.snapshot()),
            batch: WriteBatchWithIndex::new(0, true),
            tracked: BTreeMap::new(),
            save_points: Vec::new(),
        }
    }

    /// The snapshot taken when the transaction began (`set_snapshot`), if any.
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    /// The writes gathered so far.
    pub fn get_writebatch(&self) -> WriteBatch {
        self.batch.write_batch().clone()
    }

    /// Tracks `key` of family `cf` (the default when `None`) for the commit's check.
    fn track(&mut self, cf: Option<&dyn AsColumnFamilyRef>, key: &[u8]) -> Result<()> {
        // The handle is checked to be this DB's on every call, tracked key or not.
        let cfd = self.db.family(cf)?;
        let id = cf.map_or(0, AsColumnFamilyRef::cf_id);
        if let Entry::Vacant(v) = self.tracked.entry((id, key.to_vec())) {
            let seq = match &self.snapshot {
                Some(s) => s.seq(),
                None => SeqNo(self.db.latest_sequence_number()),
            };
            v.insert(Tracked { cfd, seq });
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
        self.batch.get_from_batch_and_db(self.db, key, opts)
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
        self.batch.get_from_batch_and_db_cf(self.db, cf, key, opts)
    }

    /// Reads `key` and tracks it: the commit fails if it is written by someone else after
    /// the transaction's snapshot (or after this read when there is none). `exclusive` is
    /// accepted for the `rocksdb` crate's signature (an optimistic transaction takes no lock).
    pub fn get_for_update(
        &mut self,
        key: impl AsRef<[u8]>,
        exclusive: bool,
    ) -> Result<Option<Vec<u8>>> {
        self.get_for_update_opt(key, exclusive, &ReadOptions::default())
    }

    /// [`Transaction::get_for_update`] with read options.
    pub fn get_for_update_opt(
        &mut self,
        key: impl AsRef<[u8]>,
        exclusive: bool,
        opts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        let _ = exclusive;
        self.track(None, key.as_ref())?;
        self.get_opt(key, opts)
    }

    /// [`Transaction::get_for_update`] in column family `cf`.
    pub fn get_for_update_cf(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        exclusive: bool,
    ) -> Result<Option<Vec<u8>>> {
        self.get_for_update_cf_opt(cf, key, exclusive, &ReadOptions::default())
    }

    /// [`Transaction::get_for_update_opt`] in column family `cf`.
    pub fn get_for_update_cf_opt(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        exclusive: bool,
        opts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        let _ = exclusive;
        self.track(Some(cf), key.as_ref())?;
        self.get_cf_opt(cf, key, opts)
    }

    /// Sets `key` to `value` when the transaction commits.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.track(None, key.as_ref())?;
        self.batch.put(key, value);
        Ok(())
    }

    /// [`Transaction::put`] in column family `cf`.
    pub fn put_cf(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.track(Some(cf), key.as_ref())?;
        self.batch.put_cf(cf, key, value);
        Ok(())
    }

    /// Deletes `key` when the transaction commits.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        self.track(None, key.as_ref())?;
        self.batch.delete(key);
        Ok(())
    }

    /// [`Transaction::delete`] in column family `cf`.
    pub fn delete_cf(&mut self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) -> Result<()> {
        self.track(Some(cf), key.as_ref())?;
        self.batch.delete_cf(cf, key);
        Ok(())
    }

    /// Adds a merge operand for `key` when the transaction commits.
    pub fn merge(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.track(None, key.as_ref())?;
        self.batch.merge(key, value);
        Ok(())
    }

    /// [`Transaction::merge`] in column family `cf`.
    pub fn merge_cf(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.track(Some(cf), key.as_ref())?;
        self.batch.merge_cf(cf, key, value);
        Ok(())
    }

    /// A cursor over the DB with this transaction's writes on top (as they are now).
    pub fn raw_iterator(&self) -> DbRawIterator {
        self.raw_iterator_opt(ReadOptions::default())
    }

    /// [`Transaction::raw_iterator`] with read options.
    pub fn raw_iterator_opt(&self, opts: impl std::borrow::Borrow<ReadOptions>) -> DbRawIterator {
        self.batch.iterator_with_base(self.db.raw_iterator_opt(opts))
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
        self.batch.iterator_with_base_cf(self.db.raw_iterator_cf_opt(cf, opts), cf)
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

    /// Marks a save point: [`Transaction::rollback_to_savepoint`] returns to it.
    pub fn set_savepoint(&mut self) {
        self.save_points.push((self.batch.clone(), self.tracked.clone()));
    }

    /// Undoes the writes (and tracking) since the last save point, and removes it;
    /// `InvalidArgument` when there is none.
    pub fn rollback_to_savepoint(&mut self) -> Result<()> {
        let (batch, tracked) = self
            .save_points
            .pop()
            .ok_or_else(|| Error::InvalidArgument("no save point to roll back to".into()))?;
        self.batch = batch;
        self.tracked = tracked;
        Ok(())
    }

    /// Undoes every write and forgets every tracked key and save point.
    pub fn rollback(&mut self) -> Result<()> {
        self.batch.clear();
        self.tracked.clear();
        self.save_points.clear();
        Ok(())
    }

    /// Writes the transaction's batch if no tracked key was written by someone else since it
    /// was tracked; else writes nothing and fails with `Error::Busy`, or `Error::TryAgain`
    /// when the memtables no longer hold every write since (module docs).
    pub fn commit(self) -> Result<()> {
        let hashes = self.tracked.keys().map(|k| {
            let mut h = DefaultHasher::new();
            k.hash(&mut h);
            h.finish()
        });
        let _held = self.db.lock_stripes(hashes);
        for ((_, key), t) in &self.tracked {
            match self.db.changed_since(&t.cfd, key, t.seq) {
                Changed::No => {}
                Changed::Yes(at) => {
                    return Err(Error::Busy(format!(
                        "key {:?} of column family {:?} was written at sequence {} after {}",
                        String::from_utf8_lossy(key),
                        t.cfd.name,
                        at.0,
                        t.seq.0
                    )))
                }
                Changed::Unknown => {
                    return Err(Error::TryAgain(format!(
                        "the writes to column family {:?} since sequence {} are no longer all \
                         in memory: key {:?} cannot be checked",
                        t.cfd.name,
                        t.seq.0,
                        String::from_utf8_lossy(key)
                    )))
                }
            }
        }
        if self.batch.is_empty() {
            return Ok(());
        }
        let opts = self.write_opts;
        self.db.write_opt(self.batch.into_write_batch(), &opts)
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
