//! The `rocksdb` crate's backup API (`rocksdb::backup`): an engine opened on a directory
//! with `BackupEngineOptions` and an `Env`, ids as `u32`, restores given a DB and a WAL
//! directory, over Strata's own [`crate::BackupEngine`] (`docs/format/backup.md`).
//!
//! A Strata backup is the DB's tables and a MANIFEST, taken after a flush: it carries no WAL.
//! So `create_new_backup_flush(db, false)` flushes too (the backup holds the same data either
//! way), the restore's WAL directory receives nothing, `keep_log_files` has nothing to keep,
//! and every backup is synced whatever `set_sync` says.

use std::path::{Path, PathBuf};

use crate::db::Db;
use crate::error::{Error, Result};
use crate::options::{Env, Options};
use crate::utilities::{BackupEngine as StrataBackupEngine, BackupInfo};

/// Where backups go and how they are made (the `rocksdb` crate's `BackupEngineOptions`).
#[derive(Clone, Debug)]
pub struct BackupEngineOptions {
    dir: PathBuf,
    sync: bool,
    max_background_operations: i32,
}

impl BackupEngineOptions {
    /// Backups in `backup_dir` (created when the engine opens).
    pub fn new<P: AsRef<Path>>(backup_dir: P) -> Result<Self> {
        let dir = backup_dir.as_ref().to_path_buf();
        if dir.as_os_str().is_empty() {
            return Err(Error::InvalidArgument("backup directory path is empty".into()));
        }
        Ok(BackupEngineOptions { dir, sync: true, max_background_operations: 1 })
    }

    /// Threads copying files (Strata copies on the calling thread; kept).
    pub fn set_max_background_operations(&mut self, max_background_operations: i32) {
        self.max_background_operations = max_background_operations;
    }

    /// Whether backups are synced (they always are; kept for `get_sync`).
    pub fn set_sync(&mut self, sync: bool) {
        self.sync = sync;
    }

    /// The value `set_sync` gave (default true).
    pub fn get_sync(&mut self) -> bool {
        self.sync
    }
}

/// How a restore runs (the `rocksdb` crate's `RestoreOptions`).
#[derive(Clone, Debug, Default)]
pub struct RestoreOptions {
    keep_log_files: bool,
}

impl RestoreOptions {
    /// Keep the WAL files in the WAL directory (a Strata backup brings none; kept).
    pub fn set_keep_log_files(&mut self, keep_log_files: bool) {
        self.keep_log_files = keep_log_files;
    }
}

/// One backup, as `get_backup_info` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupEngineInfo {
    /// When it was made, in seconds since the Unix epoch.
    pub timestamp: i64,
    /// Its id (1, 2, ... in creation order).
    pub backup_id: u32,
    /// Its total bytes (shared tables counted in full).
    pub size: u64,
    /// Its files.
    pub num_files: u32,
}

/// Backs DBs up into one directory and restores them (the `rocksdb` crate's
/// `BackupEngine`).
pub struct BackupEngine {
    inner: StrataBackupEngine,
}

impl BackupEngine {
    /// Opens (creating) the backup directory of `opts` on `env`'s file system.
    pub fn open(opts: &BackupEngineOptions, env: &Env) -> Result<Self> {
        let o = Options { fs: env.file_system().clone(), ..Options::default() };
        Ok(BackupEngine { inner: StrataBackupEngine::open(&o, &opts.dir)? })
    }

    /// Backs `db` up (any DB type dereferencing to a [`Db`]).
    pub fn create_new_backup(&mut self, db: &Db) -> Result<()> {
        self.inner.create_new_backup(db).map(|_| ())
    }

    /// Backs `db` up; the memtables are flushed whatever `flush_before_backup` says (module
    /// docs).
    pub fn create_new_backup_flush(&mut self, db: &Db, flush_before_backup: bool) -> Result<()> {
        let _ = flush_before_backup;
        self.create_new_backup(db)
    }

    /// Deletes all but the `num_backups_to_keep` newest backups.
    pub fn purge_old_backups(&mut self, num_backups_to_keep: usize) -> Result<()> {
        self.inner.purge_old_backups(num_backups_to_keep)
    }

    /// Restores the newest backup into `db_dir` (`wal_dir` receives nothing: module docs).
    pub fn restore_from_latest_backup<D: AsRef<Path>, W: AsRef<Path>>(
        &mut self,
        db_dir: D,
        wal_dir: W,
        opts: &RestoreOptions,
    ) -> Result<()> {
        let _ = (wal_dir, opts);
        self.inner.restore_from_latest_backup(db_dir).map(|_| ())
    }

    /// Restores backup `backup_id` into `db_dir`.
    pub fn restore_from_backup<D: AsRef<Path>, W: AsRef<Path>>(
        &mut self,
        db_dir: D,
        wal_dir: W,
        opts: &RestoreOptions,
        backup_id: u32,
    ) -> Result<()> {
        let _ = (wal_dir, opts);
        self.inner.restore_from_backup(u64::from(backup_id), db_dir).map(|_| ())
    }

    /// Checks that backup `backup_id`'s files are all there with their recorded sizes and
    /// checksums.
    pub fn verify_backup(&self, backup_id: u32) -> Result<()> {
        self.inner.verify_backup(u64::from(backup_id))
    }

    /// The backups, oldest first. A directory that cannot be read lists none (the crate's
    /// signature has no error); `verify_backup` reports what is wrong.
    pub fn get_backup_info(&self) -> Vec<BackupEngineInfo> {
        self.inner.backups().unwrap_or_default().iter().filter_map(info).collect()
    }
}

/// A backup in the crate's terms; `None` for an id beyond `u32` (never made by Strata).
fn info(b: &BackupInfo) -> Option<BackupEngineInfo> {
    Some(BackupEngineInfo {
        timestamp: i64::try_from(b.timestamp).unwrap_or(i64::MAX),
        backup_id: u32::try_from(b.id).ok()?,
        size: b.size,
        num_files: u32::try_from(b.files).unwrap_or(u32::MAX),
    })
}
