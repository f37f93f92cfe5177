//! Reads through a [`Snapshot`] (the `rocksdb` crate's `SnapshotWithThreadMode` methods):
//! each is the DB's read with `ReadOptions::snapshot` set to the snapshot.
//!
//! A snapshot holds its DB's core weakly (`snapshot.rs`): once the `Db` is dropped, every
//! read here fails with `ShutdownInProgress` (an iterator yields that error once), never
//! touching a closed DB.
//!
//! Also where every read takes its sequence from its `ReadOptions` ([`read_sequence`]) and
//! where flushes and compactions learn which snapshots to keep versions for ([`kept_for`]):
//! both answer for `Options::snapshot_reads`, so a family whose flushes keep nothing for
//! snapshots is never read through one.

use std::sync::Arc;

use super::iter::IterSource;
use super::pinnable::DbPinnableSlice;
use super::{cf, read, DbInner, DbIterator, DbRawIterator, IteratorMode};
use crate::column_family::AsColumnFamilyRef;
use crate::error::{Error, Result};
use crate::options::ReadOptions;
use crate::snapshot::SnapshotHandle;

impl SnapshotHandle {
    /// The DB the snapshot was taken from, while it is open.
    fn db(&self) -> Result<Arc<DbInner>> {
        let inner = self
            .source()
            .and_then(|a| a.downcast::<DbInner>().ok())
            .ok_or(Error::ShutdownInProgress)?;
        if inner.closing.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::ShutdownInProgress);
        }
        Ok(inner)
    }

    /// `opts` reading at this snapshot.
    fn at(&self, opts: &ReadOptions) -> ReadOptions {
        let mut o = opts.clone();
        o.snapshot = Some(self.clone());
        o
    }

    /// The value of `key` as of the snapshot.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }

    /// [`Snapshot::get`] with read options (their `snapshot` is replaced by this one).
    pub fn get_opt(&self, key: impl AsRef<[u8]>, opts: &ReadOptions) -> Result<Option<Vec<u8>>> {
        let db = self.db()?;
        read::get(&db, &db.default_cf, key.as_ref(), &self.at(opts))
    }

    /// [`Snapshot::get`] in column family `cf`.
    pub fn get_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        self.get_cf_opt(cf, key, &ReadOptions::default())
    }

    /// [`Snapshot::get_cf`] with read options.
    pub fn get_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        opts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        let db = self.db()?;
        read::get(&db, cf::resolve(db.instance, cf)?, key.as_ref(), &self.at(opts))
    }

    /// The columns of `key` as of the snapshot (`Db::get_entity`).
    pub fn get_entity(&self, key: impl AsRef<[u8]>) -> Result<Option<crate::WideColumns>> {
        let db = self.db()?;
        let ro = self.at(&ReadOptions::default());
        super::entity::get_entity(&db, &db.default_cf, key.as_ref(), &ro)
    }

    /// [`Snapshot::get_entity`] in column family `cf`.
    pub fn get_entity_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<crate::WideColumns>> {
        let db = self.db()?;
        let ro = self.at(&ReadOptions::default());
        super::entity::get_entity(&db, cf::resolve(db.instance, cf)?, key.as_ref(), &ro)
    }

    /// [`Snapshot::get`], pinned (see `Db::get_pinned`).
    pub fn get_pinned(&self, key: impl AsRef<[u8]>) -> Result<Option<DbPinnableSlice>> {
        let db = self.db()?;
        read::get_pinned(&db, &db.default_cf, key.as_ref(), &self.at(&ReadOptions::default()))
    }

    /// [`Snapshot::get_cf`], pinned (see `Db::get_pinned`).
    pub fn get_pinned_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<DbPinnableSlice>> {
        let db = self.db()?;
        let cfd = cf::resolve(db.instance, cf)?;
        read::get_pinned(&db, cfd, key.as_ref(), &self.at(&ReadOptions::default()))
    }

    /// The values of `keys` as of the snapshot, in the order given.
    pub fn multi_get<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        let keys: Vec<K> = keys.into_iter().collect();
        match self.db() {
            Ok(db) => read::multi_get(&db, &db.default_cf, keys, &self.at(&ReadOptions::default())),
            Err(_) => keys.iter().map(|_| Err(Error::ShutdownInProgress)).collect(),
        }
    }

    /// `(family, key)` pairs as of the snapshot, in the order given.
    pub fn multi_get_cf<'c, C, K, I>(&self, keys: I) -> Vec<Result<Option<Vec<u8>>>>
    where
        C: AsColumnFamilyRef + 'c,
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'c C, K)>,
    {
        let db = self.db();
        let ro = self.at(&ReadOptions::default());
        keys.into_iter()
            .map(|(cf, key)| {
                let db = db.as_ref().map_err(Error::duplicate)?;
                read::get(db, cf::resolve(db.instance, cf)?, key.as_ref(), &ro)
            })
            .collect()
    }

    /// An iterator over the DB as of the snapshot, from `mode`.
    pub fn iterator(&self, mode: IteratorMode<'_>) -> DbIterator {
        self.iterator_opt(mode, ReadOptions::default())
    }

    /// [`Snapshot::iterator`] with read options (bounds, prefix), by reference or by value.
    pub fn iterator_opt(
        &self,
        mode: IteratorMode<'_>,
        opts: impl std::borrow::Borrow<ReadOptions>,
    ) -> DbIterator {
        let src = self
            .db()
            .and_then(|db| IterSource::capture(&db, &db.default_cf, &self.at(opts.borrow())));
        match src {
            Ok(src) => DbIterator::from_source(src, mode),
            Err(e) => DbIterator::failed(e),
        }
    }

    /// [`Snapshot::iterator`] over column family `cf`.
    pub fn iterator_cf(&self, cf: &impl AsColumnFamilyRef, mode: IteratorMode<'_>) -> DbIterator {
        self.iterator_cf_opt(cf, ReadOptions::default(), mode)
    }

    /// [`Snapshot::iterator_cf`] with read options (before the mode, as `Db::iterator_cf_opt`).
    pub fn iterator_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        opts: impl std::borrow::Borrow<ReadOptions>,
        mode: IteratorMode<'_>,
    ) -> DbIterator {
        let r = self.db().and_then(|db| {
            let cfd = cf::resolve(db.instance, cf)?;
            IterSource::capture(&db, cfd, &self.at(opts.borrow()))
        });
        match r {
            Ok(src) => DbIterator::from_source(src, mode),
            Err(e) => DbIterator::failed(e),
        }
    }

    /// An unpositioned cursor over the DB as of the snapshot.
    pub fn raw_iterator(&self) -> DbRawIterator {
        let src = self.db().and_then(|db| {
            IterSource::capture(&db, &db.default_cf, &self.at(&ReadOptions::default()))
        });
        match src {
            Ok(src) => src.build(),
            Err(e) => DbRawIterator::new(super::iter::error_iter(e)),
        }
    }
}

/// The snapshots a flush or compaction of `cfd` keeps older entries for: the DB's, unless
/// the family is never read through one (`Options::snapshot_reads`), then none (only the
/// newest entry of each key is kept).
pub(crate) fn kept_for(inner: &DbInner, cfd: &cf::Cfd) -> Vec<crate::types::SeqNo> {
    if cfd.opts.snapshot_reads {
        inner.snapshots.sequences()
    } else {
        Vec::new()
    }
}

/// The sequence a read of `cfd` with `opts` reads at: its snapshot's, or the latest
/// published one. A snapshot of a family not kept for them (`Options::snapshot_reads`) is
/// refused: its flushes may have dropped what the snapshot saw.
pub(crate) fn read_sequence(
    inner: &DbInner,
    cfd: &cf::Cfd,
    opts: &ReadOptions,
) -> Result<crate::types::SeqNo> {
    match &opts.snapshot {
        None => Ok(crate::types::SeqNo(
            inner.visible_sequence.load(std::sync::atomic::Ordering::Acquire),
        )),
        Some(s) if cfd.opts.snapshot_reads => Ok(s.seq()),
        Some(_) => Err(Error::InvalidArgument(format!(
            "column family '{}' is not read through snapshots (its snapshot_reads option is off)",
            cfd.name
        ))),
    }
}
