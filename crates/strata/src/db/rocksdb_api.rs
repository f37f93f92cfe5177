//! `Db` methods in the `rocksdb` crate's shapes that Strata's own API spells differently or
//! lacks: the read-only, secondary and per-family-options opens (and the refused TTL opens),
//! a secondary's catch-up, `set_options`, the flush and compaction calls taking the crate's
//! option types, file deletions off and on, `delete_file_in_range`, `key_may_exist`,
//! `batched_multi_get_cf`, the DB identity and the column family metadata. Each is a thin
//! layer over the engine's own calls (`docs/rocksdb-compat.md` lists them).

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{ColumnFamilyDescriptor, Db, DbPinnableSlice};
use crate::column_family::AsColumnFamilyRef;
use crate::error::{Error, Result};
use crate::options::{
    apply_option, BottommostLevelCompaction, CompactOptions, FlushOptions, Options, ReadOptions,
    WriteOptions,
};
use crate::write_batch::WriteBatch;

/// A `[start, end)` key range of `Db::get_approximate_sizes` (the `rocksdb` crate's
/// `Range`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range<'a> {
    pub(crate) start_key: &'a [u8],
    pub(crate) end_key: &'a [u8],
}

impl<'a> Range<'a> {
    /// The keys from `start_key` (inclusive) to `end_key` (exclusive).
    pub fn new(start_key: &'a [u8], end_key: &'a [u8]) -> Range<'a> {
        Range { start_key, end_key }
    }
}

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
    let wal_dir = opts.wal_dir.as_deref().unwrap_or(path);
    for file in super::files::find_wals(opts.fs.as_ref(), path, wal_dir)?.values() {
        if opts.fs.file_size(file)? > 0 {
            return Err(Error::InvalidArgument(format!(
                "read-only open with error_if_log_file_exist: WAL {} holds writes",
                file.display()
            )));
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
        Db::open_descriptors_read_only(opts, path, descriptors)
    }

    /// [`Db::open_for_read_only`] with the families `descriptors` describe (every family the
    /// DB has must be named).
    pub fn open_cf_descriptors_read_only<I>(
        opts: &Options,
        path: impl AsRef<Path>,
        descriptors: I,
        error_if_log_file_exist: bool,
    ) -> Result<Db>
    where
        I: IntoIterator<Item = ColumnFamilyDescriptor>,
    {
        check_no_wal(opts, path.as_ref(), error_if_log_file_exist)?;
        Db::open_descriptors_read_only(opts, path, descriptors)
    }

    /// Opens (or creates) the DB in `path` with a time to live: values are stored with their
    /// write time and flushes and compactions drop those older than `ttl` (the `rocksdb`
    /// crate's, RocksDB's `DBWithTTL`; contract in `db/ttl.rs`). Reads return a value until a
    /// compaction has dropped it. `Duration::ZERO`: never expire.
    pub fn open_with_ttl(opts: &Options, path: impl AsRef<Path>, ttl: Duration) -> Result<Db> {
        Self::open_cf_descriptors_with_ttl(opts, path, Vec::new(), ttl)
    }

    /// [`Db::open_with_ttl`] with the families `names`, each with default options (as the
    /// crate's) and the DB's TTL.
    pub fn open_cf_with_ttl<I, N>(
        opts: &Options,
        path: impl AsRef<Path>,
        names: I,
        ttl: Duration,
    ) -> Result<Db>
    where
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        let descriptors: Vec<_> = names
            .into_iter()
            .map(|n| ColumnFamilyDescriptor::new(n.as_ref(), Options::default()))
            .collect();
        Self::open_cf_descriptors_with_ttl(opts, path, descriptors, ttl)
    }

    /// [`Db::open_with_ttl`] with family descriptors, each with its own TTL
    /// ([`ColumnFamilyTtl`](super::ColumnFamilyTtl): `SameAsDb` takes `ttl`, `Disabled` never
    /// expires). `default`, unless named, gets `opts` and `ttl`.
    pub fn open_cf_descriptors_with_ttl<I>(
        opts: &Options,
        path: impl AsRef<Path>,
        descriptors: I,
        ttl: Duration,
    ) -> Result<Db>
    where
        I: IntoIterator<Item = ColumnFamilyDescriptor>,
    {
        let clock = super::ttl::system_clock();
        Self::open_cf_descriptors_with_ttl_clock(opts, path, descriptors, ttl, clock)
    }

    /// [`Db::open_cf_descriptors_with_ttl`] with a clock of the caller's (seconds since the
    /// Unix epoch; for tests and simulations of time).
    pub fn open_cf_descriptors_with_ttl_clock<I>(
        opts: &Options,
        path: impl AsRef<Path>,
        descriptors: I,
        ttl: Duration,
        clock: super::ttl::TtlClock,
    ) -> Result<Db>
    where
        I: IntoIterator<Item = ColumnFamilyDescriptor>,
    {
        let descriptors = ttl_descriptors(opts, descriptors, ttl, &clock);
        Self::open_with(opts, path.as_ref(), descriptors, Some(clock))
    }

    /// Opens the DB in `primary_path` as a secondary (the `rocksdb` crate's): a read-only
    /// `Db` of the primary's state at the call, which may be open for writing meanwhile
    /// ([`Db::open_read_only`]). Strata writes nothing for it, so `secondary_path` (where
    /// RocksDB keeps the secondary's LOG) is not used. See
    /// [`Db::try_catch_up_with_primary`].
    pub fn open_as_secondary(
        opts: &Options,
        primary_path: impl AsRef<Path>,
        secondary_path: impl AsRef<Path>,
    ) -> Result<Db> {
        let _ = secondary_path.as_ref();
        Db::open_read_only(opts, primary_path)
    }

    /// [`Db::open_as_secondary`] with the families `names` (each with `opts`).
    pub fn open_cf_as_secondary<I, N>(
        opts: &Options,
        primary_path: impl AsRef<Path>,
        secondary_path: impl AsRef<Path>,
        names: I,
    ) -> Result<Db>
    where
        I: IntoIterator<Item = N>,
        N: AsRef<str>,
    {
        let _ = secondary_path.as_ref();
        Db::open_cf_for_read_only(opts, primary_path, names, false)
    }

    /// [`Db::open_as_secondary`] with family descriptors.
    pub fn open_cf_descriptors_as_secondary<I>(
        opts: &Options,
        primary_path: impl AsRef<Path>,
        secondary_path: impl AsRef<Path>,
        descriptors: I,
    ) -> Result<Db>
    where
        I: IntoIterator<Item = ColumnFamilyDescriptor>,
    {
        let _ = secondary_path.as_ref();
        Db::open_descriptors_read_only(opts, primary_path, descriptors)
    }

    /// Brings a read-only `Db` (a secondary) up to the state its DB directory holds now: the
    /// MANIFEST and WALs are read again, as by a new read-only open, and each family's
    /// tables and replayed memtables replace the ones it read at (iterators already made keep
    /// reading theirs; a snapshot taken before is only a sequence number, and versions the
    /// primary has since compacted away are gone for it, as for a RocksDB secondary).
    /// Families the primary created meanwhile stay unseen, as in RocksDB. On a read-write
    /// `Db` (a primary) it is `NotSupported`.
    pub fn try_catch_up_with_primary(&self) -> Result<()> {
        let inner = &self.inner;
        if !inner.read_only {
            return Err(Error::NotSupported(
                "try_catch_up_with_primary: this Db is open for writing (a primary)".into(),
            ));
        }
        // The families the DB has now (a read-only open must name them all), each with the
        // options this Db opened it with; one created meanwhile is read and left unseen.
        let families = inner.families();
        let descriptors: Vec<ColumnFamilyDescriptor> = Db::list_cf(&inner.opts, &inner.dir)?
            .into_iter()
            .filter(|n| n != crate::DEFAULT_COLUMN_FAMILY_NAME)
            .map(|n| {
                let o = families.iter().find(|c| c.name == n).map_or(&inner.opts, |c| &c.opts);
                ColumnFamilyDescriptor::new(n, o.clone())
            })
            .collect();
        let fresh = super::open::open_read_only(&inner.opts, &inner.dir, &descriptors)?;
        let fresh_families = fresh.families();
        {
            let mut st = inner.state.lock();
            let mut fst = fresh.state.lock();
            for cfd in &families {
                let Some(new) = fresh_families.iter().find(|c| c.name == cfd.name) else {
                    continue; // dropped by the primary: keep what this Db read
                };
                if let (Some(cs), Some(ns)) = (st.cfs.get_mut(&cfd.id), fst.cfs.get_mut(&new.id)) {
                    cs.mem = ns.mem.clone();
                    cs.mem_log = ns.mem_log;
                    cs.imm = std::mem::take(&mut ns.imm);
                }
                cfd.adopt_super_version(&new.current_super_version());
            }
        }
        std::mem::swap(&mut *inner.versions.lock(), &mut *fresh.versions.lock());
        let seq = fresh.visible_sequence.load(Ordering::Acquire);
        inner.visible_sequence.fetch_max(seq, Ordering::AcqRel);
        Ok(())
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
        Db::open_descriptors_read_only(opts, path, descriptors)
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

    /// Flushes the default family's memtable; with `opts.wait` false, returns once the flush is
    /// scheduled.
    pub fn flush_opt(&self, opts: &FlushOptions) -> Result<()> {
        self.check_writable()?;
        let cfd = self.inner.default_cf.clone();
        super::flush::flush_families(&self.inner, &[cfd], opts.wait)
    }

    /// [`Db::flush_opt`] of family `cf`.
    pub fn flush_cf_opt(&self, cf: &impl AsColumnFamilyRef, opts: &FlushOptions) -> Result<()> {
        self.check_writable()?;
        let cfd = self.cfd(cf)?.clone();
        super::flush::flush_families(&self.inner, &[cfd], opts.wait)
    }

    /// Flushes the memtables of `cfs`, cut at one point of the write order (a batch written
    /// to several of them is in all their flushed tables or in none).
    pub fn flush_cfs_opt(
        &self,
        cfs: &[&impl AsColumnFamilyRef],
        opts: &FlushOptions,
    ) -> Result<()> {
        self.check_writable()?;
        let cfds = cfs.iter().map(|cf| self.cfd(*cf).cloned()).collect::<Result<Vec<_>>>()?;
        super::flush::flush_families(&self.inner, &cfds, opts.wait)
    }

    /// [`Db::compact_range`] with the `rocksdb` crate's compaction options. Of them,
    /// `bottommost_level_compaction` decides whether the last level's files are rewritten in
    /// place (`Skip`: never; `IfHaveCompactionFilter`: when the family has a compaction
    /// filter; `Force`/`ForceOptimized`: always). A manual compaction always runs with
    /// automatic ones paused (`exclusive_manual_compaction`). With `change_level`, the tables
    /// of the deepest level are then moved to `target_level` (-1: the highest empty level that
    /// holds them), as RocksDB's refit.
    pub fn compact_range_opt(
        &self,
        begin: Option<impl AsRef<[u8]>>,
        end: Option<impl AsRef<[u8]>>,
        opts: &CompactOptions,
    ) -> Result<()> {
        self.check_writable()?;
        let cfd = self.inner.default_cf.clone();
        self.compact_with(
            &cfd,
            begin.as_ref().map(AsRef::as_ref),
            end.as_ref().map(AsRef::as_ref),
            opts,
        )
    }

    /// [`Db::compact_range_opt`] in family `cf`.
    pub fn compact_range_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        begin: Option<impl AsRef<[u8]>>,
        end: Option<impl AsRef<[u8]>>,
        opts: &CompactOptions,
    ) -> Result<()> {
        self.check_writable()?;
        let cfd = self.cfd(cf)?.clone();
        self.compact_with(
            &cfd,
            begin.as_ref().map(AsRef::as_ref),
            end.as_ref().map(AsRef::as_ref),
            opts,
        )
    }

    fn compact_with(
        &self,
        cfd: &std::sync::Arc<super::Cfd>,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
        opts: &CompactOptions,
    ) -> Result<()> {
        if let Some(ts) = &opts.full_history_ts_low {
            // RocksDB's: the compaction first raises the family's low (which only rises).
            let raises = match (cfd.full_history_ts_low(), &cfd.opts.timestamps) {
                (Some(low), Some(t)) => t.compare_ts(ts, &low) == std::cmp::Ordering::Greater,
                _ => true,
            };
            if raises {
                self.raise_full_history_ts_low(cfd, ts)?;
            }
        }
        use super::compact::Bottom;
        let bottom = match opts.bottommost_level_compaction {
            BottommostLevelCompaction::Skip => Bottom::Skip,
            BottommostLevelCompaction::IfHaveCompactionFilter => {
                if cfd.opts.compaction_filter_factory.is_some() {
                    Bottom::All
                } else {
                    Bottom::Skip
                }
            }
            BottommostLevelCompaction::Force | BottommostLevelCompaction::ForceOptimized => {
                Bottom::All
            }
        };
        super::compact::compact_range(&self.inner, cfd, begin, end, bottom)?;
        if opts.change_level {
            super::compact::refit_level(&self.inner, cfd, opts.target_level)?;
        }
        Ok(())
    }

    /// Changes options of the default family while the DB is open (the `rocksdb` crate's
    /// `set_options`): see [`Db::set_options_cf`].
    pub fn set_options(&self, opts: &[(&str, &str)]) -> Result<()> {
        let cfd = self.inner.default_cf.clone();
        self.set_live(&cfd, opts)
    }

    /// Changes options of family `cf` while the DB is open: the ones RocksDB calls mutable,
    /// by their RocksDB names (`options/parse.rs`), all or none. The compaction triggers and
    /// targets, `disable_auto_compactions`, the stall thresholds and the memtable size and
    /// count apply at once; accepted-only settings are recorded. Refused with
    /// `InvalidArgument` (and nothing changed): an empty list, a NUL in a name or value, an
    /// unknown name or bad value, an option fixed at open, a DB-wide option (RocksDB's
    /// `SetOptions` takes family options only), and the compression settings (Strata builds
    /// a family's table settings at open).
    pub fn set_options_cf(&self, cf: &impl AsColumnFamilyRef, opts: &[(&str, &str)]) -> Result<()> {
        let cfd = self.cfd(cf)?.clone();
        self.set_live(&cfd, opts)
    }

    fn set_live(&self, cfd: &std::sync::Arc<super::Cfd>, pairs: &[(&str, &str)]) -> Result<()> {
        self.check_writable()?;
        if pairs.is_empty() {
            return Err(Error::InvalidArgument("set_options: no options given".into()));
        }
        let mut next = (*cfd.live_opts()).clone();
        for &(name, value) in pairs {
            if name.contains('\0') || value.contains('\0') {
                return Err(Error::InvalidArgument(format!(
                    "set_options: option {name:?} = {value:?}: names and values must not contain NUL"
                )));
            }
            apply_option(&mut next, name, value, true)?;
        }
        next.validate()?;
        cfd.set_live_opts(next);
        let list: Vec<String> = pairs.iter().map(|(n, v)| format!("{n}={v}")).collect();
        self.log_info(&format!(
            "SetOptions() on column family [{}]: {}",
            cfd.name,
            list.join("; ")
        ));
        // New triggers or automatic compactions turned on may make work to do.
        self.inner.bg_cv.notify_all();
        super::options_file::persist_options(&self.inner)
    }

    /// The default family's size and table count.
    pub fn get_column_family_metadata(&self) -> ColumnFamilyMetaData {
        metadata_of(&self.inner.default_cf)
    }

    /// Family `cf`'s size and table count. The crate's signature has no error: a handle of
    /// another DB reads as an empty, nameless family, and the mistake goes to the info LOG.
    pub fn get_column_family_metadata_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
    ) -> ColumnFamilyMetaData {
        match self.cfd(cf) {
            Ok(cfd) => metadata_of(cfd),
            Err(e) => {
                self.log_info(&format!("get_column_family_metadata_cf: {e}"));
                ColumnFamilyMetaData { size: 0, name: String::new(), file_count: 0 }
            }
        }
    }
}

/// Family `cfd`'s size and table count in its current version.
fn metadata_of(cfd: &super::Cfd) -> ColumnFamilyMetaData {
    let sv = cfd.current_super_version();
    let (mut size, mut file_count) = (0, 0);
    for (_, f) in sv.version.files() {
        size += f.file_size;
        file_count += 1;
    }
    ColumnFamilyMetaData { size, name: cfd.name.clone(), file_count }
}

/// A read's answer as "may exist": a read that failed cannot rule the key out.
fn may_exist(r: Result<Option<Vec<u8>>>) -> (bool, Option<Vec<u8>>) {
    match r {
        Ok(Some(v)) => (true, Some(v)),
        Ok(None) => (false, None),
        Err(_) => (true, None),
    }
}

/// The descriptors of a TTL open: each family's options with the TTL filter and merge
/// wrapper for its TTL in seconds, `default` added (with `opts`) when not named.
fn ttl_descriptors(
    opts: &Options,
    descriptors: impl IntoIterator<Item = ColumnFamilyDescriptor>,
    ttl: Duration,
    clock: &super::ttl::TtlClock,
) -> Vec<ColumnFamilyDescriptor> {
    let mut out: Vec<ColumnFamilyDescriptor> = descriptors
        .into_iter()
        .map(|d| {
            let secs = match d.ttl {
                super::ColumnFamilyTtl::Disabled => 0,
                super::ColumnFamilyTtl::Duration(t) => t.as_secs(),
                super::ColumnFamilyTtl::SameAsDb => ttl.as_secs(),
            };
            let options = super::ttl::ttl_options(&d.options, secs, clock);
            ColumnFamilyDescriptor { options, ..d }
        })
        .collect();
    if !out.iter().any(|d| d.name == crate::column_family::DEFAULT_COLUMN_FAMILY_NAME) {
        out.push(ColumnFamilyDescriptor::new(
            crate::column_family::DEFAULT_COLUMN_FAMILY_NAME,
            super::ttl::ttl_options(opts, ttl.as_secs(), clock),
        ));
    }
    out
}
