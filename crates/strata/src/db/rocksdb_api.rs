//! `Db` methods in the `rocksdb` crate's shapes that Strata's own API spells differently or
//! lacks: the read-only and per-family-options opens, `write_without_wal`, `key_may_exist`,
//! `batched_multi_get_cf` and the column family metadata. Each is a thin layer over the
//! engine's own calls.

use std::path::Path;
use std::sync::atomic::Ordering;

use super::{ColumnFamilyDescriptor, Db, DbPinnableSlice};
use crate::column_family::AsColumnFamilyRef;
use crate::error::{Error, Result};
use crate::filename::{parse_file_name, FileKind};
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::write_batch::WriteBatch;

/// A column family's size and table count (the `rocksdb` crate's `ColumnFamilyMetaData`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnFamilyMetaData {
    /// Bytes of the family's live tables.
    pub size: u64,
    /// The family's name.
    pub name: String,
    /// Live tables of the family.
    pub file_count: usize,
}

/// With `error_if_log_file_exist`, `InvalidArgument` when the DB has a non-empty WAL: the
/// writes in it would be replayed by a read-only open, and the caller asked for a DB whose
/// state is all in its tables.
fn check_no_wal(opts: &Options, path: &Path, error_if_log_file_exist: bool) -> Result<()> {
    if !error_if_log_file_exist {
        return Ok(());
    }
    let dir = opts.wal_dir.as_deref().unwrap_or(path);
    for name in opts.fs.list(dir)? {
        if let Some(FileKind::Wal(_)) = parse_file_name(&name) {
            let file = dir.join(&name);
            if opts.fs.file_size(&file)? > 0 {
                return Err(Error::InvalidArgument(format!(
                    "read-only open with error_if_log_file_exist: WAL {} holds writes",
                    file.display()
                )));
            }
        }
    }
    Ok(())
}

impl Db {
    /// [`Db::open_read_only`] (the `rocksdb` crate's name); with `error_if_log_file_exist`,
    /// a DB with a non-empty WAL is refused (`InvalidArgument`).
    pub fn open_for_read_only(
        opts: &Options,
        path: impl AsRef<Path>,
        error_if_log_file_exist: bool,
    ) -> Result<Db> {
        check_no_wal(opts, path.as_ref(), error_if_log_file_exist)?;
        Db::open_read_only(opts, path)
    }

    /// [`Db::open_for_read_only`] with the families `names` (each with `opts`).
    pub fn open_cf_for_read_only<I, N>(
        opts: &Options,
        path: impl AsRef<Path>,
        names: I,
        error_if_log_file_exist: bool,
    ) -> Result<Db>
    where
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        let descriptors =
            names.into_iter().map(|n| ColumnFamilyDescriptor::new(n.as_ref(), opts.clone()));
        check_no_wal(opts, path.as_ref(), error_if_log_file_exist)?;
        Db::open_cf_descriptors_read_only(opts, path, descriptors)
    }

    /// Opens with families given as `(name, options)` pairs (the `rocksdb` crate's
    /// `open_cf_with_opts`; [`Db::open_cf_descriptors`] with those descriptors).
    pub fn open_cf_with_opts<I, N>(
        opts: &Options,
        path: impl AsRef<Path>,
        families: I,
    ) -> Result<Db>
    where
        I: IntoIterator<Item = (N, Options)>,
        N: AsRef<str>,
    {
        let descriptors =
            families.into_iter().map(|(n, o)| ColumnFamilyDescriptor::new(n.as_ref(), o));
        Db::open_cf_descriptors(opts, path, descriptors)
    }

    /// [`Db::open_cf_with_opts`], read-only (see [`Db::open_for_read_only`]).
    pub fn open_cf_with_opts_for_read_only<I, N>(
        opts: &Options,
        path: impl AsRef<Path>,
        families: I,
        error_if_log_file_exist: bool,
    ) -> Result<Db>
    where
        I: IntoIterator<Item = (N, Options)>,
        N: AsRef<str>,
    {
        let descriptors =
            families.into_iter().map(|(n, o)| ColumnFamilyDescriptor::new(n.as_ref(), o));
        check_no_wal(opts, path.as_ref(), error_if_log_file_exist)?;
        Db::open_cf_descriptors_read_only(opts, path, descriptors)
    }

    /// Writes `batch` without logging it to the WAL (lost in a crash until flushed).
    pub fn write_without_wal(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, &WriteOptions { disable_wal: true, ..WriteOptions::default() })
    }

    /// Whether `key` may exist: `false` means it certainly does not. Strata answers by a
    /// read, so the answer is exact (RocksDB's may be a false positive).
    pub fn key_may_exist(&self, key: impl AsRef<[u8]>) -> bool {
        self.key_may_exist_opt(key, &ReadOptions::default())
    }

    /// [`Db::key_may_exist`] with read options.
    pub fn key_may_exist_opt(&self, key: impl AsRef<[u8]>, opts: &ReadOptions) -> bool {
        may_exist(self.get_opt(key, opts)).0
    }

    /// [`Db::key_may_exist`] in family `cf`.
    pub fn key_may_exist_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) -> bool {
        self.key_may_exist_cf_opt(cf, key, &ReadOptions::default())
    }

    /// [`Db::key_may_exist_cf`] with read options.
    pub fn key_may_exist_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        opts: &ReadOptions,
    ) -> bool {
        may_exist(self.get_cf_opt(cf, key, opts)).0
    }

    /// [`Db::key_may_exist_cf_opt`], with the value when the read found it.
    pub fn key_may_exist_cf_opt_value(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        opts: &ReadOptions,
    ) -> (bool, Option<DbPinnableSlice>) {
        let (may, value) = may_exist(self.get_cf_opt(cf, key, opts));
        (may, value.map(DbPinnableSlice::owned))
    }

    /// The values of `keys` in family `cf`, in order, pinned where they can be (the
    /// `rocksdb` crate's `batched_multi_get_cf`; `sorted_input` is a hint Strata needs not).
    pub fn batched_multi_get_cf<'a, K, I>(
        &self,
        cf: &impl AsColumnFamilyRef,
        keys: I,
        sorted_input: bool,
    ) -> Vec<Result<Option<DbPinnableSlice>>>
    where
        K: AsRef<[u8]> + 'a + ?Sized,
        I: IntoIterator<Item = &'a K>,
    {
        self.batched_multi_get_cf_opt(cf, keys, sorted_input, &ReadOptions::default())
    }

    /// [`Db::batched_multi_get_cf`] with read options.
    pub fn batched_multi_get_cf_opt<'a, K, I>(
        &self,
        cf: &impl AsColumnFamilyRef,
        keys: I,
        _sorted_input: bool,
        opts: &ReadOptions,
    ) -> Vec<Result<Option<DbPinnableSlice>>>
    where
        K: AsRef<[u8]> + 'a + ?Sized,
        I: IntoIterator<Item = &'a K>,
    {
        keys.into_iter().map(|k| self.get_pinned_cf_opt(cf, k.as_ref(), opts)).collect()
    }

    /// Stops deleting obsolete files (compacted-away tables, WALs whose writes are in
    /// tables) until as many [`Db::enable_file_deletions`] calls, so their names stay valid
    /// for a copy made meanwhile.
    pub fn disable_file_deletions(&self) -> Result<()> {
        self.inner.file_deletions_disabled.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Undoes one [`Db::disable_file_deletions`]; the last one deletes the tables that became
    /// obsolete meanwhile (obsolete WALs go at the next flush). Without a matching disable it
    /// does nothing.
    pub fn enable_file_deletions(&self) -> Result<()> {
        let n = &self.inner.file_deletions_disabled;
        let prev = n.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| v.checked_sub(1));
        if prev == Ok(1) {
            super::obsolete::purge_obsolete_tables(&self.inner);
        }
        Ok(())
    }

    /// Drops the tables (not in L0) whose keys all lie in `[from, to]`, without tombstones:
    /// older versions of those keys in lower levels may show again (RocksDB's
    /// `DeleteFilesInRange`; the way to reclaim space fast, not a deletion of the range).
    pub fn delete_file_in_range(&self, from: impl AsRef<[u8]>, to: impl AsRef<[u8]>) -> Result<()> {
        self.check_writable()?;
        let cfd = &self.inner.default_cf;
        super::compact::delete_files_in_range(&self.inner, cfd, from.as_ref(), to.as_ref())
    }

    /// [`Db::delete_file_in_range`] in family `cf`.
    pub fn delete_file_in_range_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        from: impl AsRef<[u8]>,
        to: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.check_writable()?;
        super::compact::delete_files_in_range(
            &self.inner,
            self.cfd(cf)?,
            from.as_ref(),
            to.as_ref(),
        )
    }

    /// The DB's id, kept in its `IDENTITY` file from its first writable open on and carried
    /// by checkpoints (`db/identity.rs`). A read-only `Db` of a directory without one fails
    /// with `NotSupported`.
    pub fn get_db_identity(&self) -> Result<Vec<u8>> {
        match super::identity::read(self.inner.fs.as_ref(), &self.inner.dir)? {
            Some(id) => Ok(id.into_bytes()),
            None => Err(Error::NotSupported(format!(
                "{} has no IDENTITY (never opened for writing by a version that makes one)",
                self.inner.dir.display()
            ))),
        }
    }

    /// The default family's size and table count.
    pub fn get_column_family_metadata(&self) -> ColumnFamilyMetaData {
        self.metadata_of(self.inner.default_cf.id, &self.inner.default_cf.name)
    }

    /// Family `cf`'s size and table count.
    pub fn get_column_family_metadata_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
    ) -> ColumnFamilyMetaData {
        match self.cfd(cf) {
            Ok(cfd) => self.metadata_of(cfd.id, &cfd.name),
            Err(_) => ColumnFamilyMetaData { size: 0, name: String::new(), file_count: 0 },
        }
    }

    fn metadata_of(
        &self,
        id: crate::column_family::ColumnFamilyId,
        name: &str,
    ) -> ColumnFamilyMetaData {
        let Some(cfd) = self.family_by_id(id) else {
            return ColumnFamilyMetaData { size: 0, name: name.to_string(), file_count: 0 };
        };
        let sv = cfd.current_super_version();
        let (mut size, mut file_count) = (0, 0);
        for (_, f) in sv.version.files() {
            size += f.file_size;
            file_count += 1;
        }
        ColumnFamilyMetaData { size, name: name.to_string(), file_count }
    }
}

/// A read's answer as "may exist": a read that failed cannot rule the key out.
fn may_exist(r: Result<Option<Vec<u8>>>) -> (bool, Option<Vec<u8>>) {
    match r {
        Ok(Some(v)) => (true, Some(v)),
        Ok(None) => (false, None),
        Err(_) => (true, None),
    }
}
