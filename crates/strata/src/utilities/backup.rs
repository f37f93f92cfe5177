//! `BackupEngine`: incremental backups of a DB into a directory, tables shared between
//! backups.
//!
//! ```text
//! <backup dir>/
//!   shared/NNNNNN_CCCCCCCC_SIZE.sst   a table: its number in the DB, the CRC32C of its bytes
//!                                     (8 lowercase hex digits) and its size; one copy serves
//!                                     every backup that holds this table
//!   private/<id>/MANIFEST-NNNNNN      backup <id>'s MANIFEST: exactly its tables, no WAL
//!   private/<id>/OPTIONS-NNNNNN       the source's newest OPTIONS file (`db/options_file.rs`)
//!   meta/<id>                         backup <id>'s description (below); a backup exists
//!                                     exactly when this file does
//!   meta/<id>.tmp, *.tmp              an interrupted backup's leftovers (removed on open)
//! ```
//!
//! A meta file is text, one item per line (on-disk: never change the keywords):
//!
//! ```text
//! strata-backup 1                                  format version
//! timestamp <seconds since the epoch>
//! sequence <the DB's sequence number the backup is at>
//! file <path in the backup dir> <name in the DB> <size> <crc32c, 8 hex digits>
//! ...                                              one line per file
//! end
//! ```
//!
//! Protocol of `create_new_backup`: flush and capture one version (as a checkpoint does);
//! copy each table not yet in `shared/` (from its table directory: `db_paths`, `cf_paths`)
//! to a `.tmp` name, sync it, rename it, sync `shared/`;
//! write the private MANIFEST and sync it; write `meta/<id>.tmp`, sync it, rename it to
//! `meta/<id>`, sync `meta/`. So a crash at any point leaves either no backup `<id>` or a
//! complete one, and never touches the source DB's files (they are only read).
//!
//! Every file's checksum is verified on restore (while copying) and by `verify_backup`; a
//! restore is built in `<target>.restore-tmp` and renamed into place, as a checkpoint is.
//! A restored DB is one directory: the private MANIFEST puts every table at table path 0, so
//! it opens with default options whatever table paths the source had.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::checkpoint::remove_leftover_dir;
use crate::db::capture::capture;
use crate::db::Db;
use crate::env::{copy_file_crc32c, file_crc32c, parent_dir, write_file_synced, FileSystem};
use crate::error::{Error, Result};
use crate::filename::{blob_file_name, blob_path, manifest_name, table_file_name};
use crate::options::Options;
use crate::types::FileNumber;
use crate::version::set::{set_current, write_manifest_for, Counters, FamilySnapshot};

const META_MAGIC: &str = "strata-backup 1";
const SHARED: &str = "shared";
const PRIVATE: &str = "private";
const META: &str = "meta";

/// One backup, as [`BackupEngine::backups`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupInfo {
    /// The backup's id (1, 2, ... in creation order).
    pub id: u64,
    /// When it was made, in seconds since the Unix epoch.
    pub timestamp: u64,
    /// The source DB's sequence number it is at.
    pub sequence: u64,
    /// Files in the backup (tables and MANIFEST).
    pub files: usize,
    /// Their total bytes (shared tables counted in full).
    pub size: u64,
}

/// One file of a backup.
#[derive(Clone, Debug, PartialEq, Eq)]
struct BackupFile {
    /// Path relative to the backup directory.
    stored: String,
    /// Its name in the DB directory.
    name: String,
    size: u64,
    crc: u32,
}

/// A backup's meta file, decoded.
struct Meta {
    info: BackupInfo,
    files: Vec<BackupFile>,
}

/// Backups of DBs in one directory. Only one `BackupEngine` may use a directory at a time.
pub struct BackupEngine {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
}

impl std::fmt::Debug for BackupEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackupEngine").field("dir", &self.dir).finish_non_exhaustive()
    }
}

impl BackupEngine {
    /// Opens (creating it if needed) the backup directory `dir` on `opts.fs`, removing what
    /// interrupted backups left.
    pub fn open(opts: &Options, dir: impl AsRef<Path>) -> Result<BackupEngine> {
        let engine = BackupEngine { fs: opts.fs.clone(), dir: dir.as_ref().to_path_buf() };
        for d in [SHARED, PRIVATE, META] {
            engine.fs.create_dir_all(&engine.dir.join(d))?;
        }
        engine.fs.sync_dir(&engine.dir)?;
        engine.remove_leftovers()?;
        Ok(engine)
    }

    /// Backs up `db`: flushes it and copies the tables not already in the backup directory.
    pub fn create_new_backup(&self, db: &Db) -> Result<BackupInfo> {
        if db.is_read_only() {
            return Err(Error::NotSupported(format!(
                "backup: {} is open read-only; open it read-write to back it up",
                db.path().display()
            )));
        }
        let id = self.ids()?.last().map_or(1, |&i| i + 1);
        let (families, counters) = capture(db)?;
        let fs = self.fs.as_ref();
        let mut files = Vec::new();
        for f in families.iter().flat_map(|f| f.version.files().map(|(_, t)| t)) {
            files.push(self.store_table(&f.path_in(db.path()), f.number, "sst")?);
            crate::kill_point!("backup.table");
        }
        for n in families.iter().flat_map(|f| f.version.blobs().numbers()) {
            files.push(self.store_table(&blob_path(db.path(), n), n, "blob")?);
        }
        self.fs.sync_dir(&self.dir.join(SHARED))?;
        let private = self.dir.join(PRIVATE).join(id.to_string());
        remove_leftover_dir(fs, &private)?;
        fs.create_dir_all(&private)?;
        fs.sync_dir(&self.dir.join(PRIVATE))?;
        let manifest = FileNumber(counters.next_file.0);
        let backup_counters = Counters {
            log_number: FileNumber(0),
            next_file: FileNumber(manifest.0 + 1),
            last_sequence: counters.last_sequence,
            max_column_family: counters.max_column_family,
        };
        // A restore is one directory: every table at table path 0 (module docs).
        let families =
            families.iter().map(FamilySnapshot::in_one_directory).collect::<Result<Vec<_>>>()?;
        // The options the source was last opened or changed with, for `Options::load_latest`
        // on a restore; before the MANIFEST, whose CURRENT's directory sync covers it.
        if let Some((n, src)) = crate::db::options_file::newest(fs, db.path())? {
            let name = crate::filename::options_file_name(n);
            let (size, crc) = copy_file_crc32c(fs, &src, &private.join(&name))?;
            files.push(BackupFile { stored: format!("{PRIVATE}/{id}/{name}"), name, size, crc });
        }
        write_manifest_for(fs, &private, manifest, &families, &backup_counters)?;
        let name = manifest_name(manifest);
        let (size, crc) = file_crc32c(fs, &private.join(&name))?;
        files.push(BackupFile { stored: format!("{PRIVATE}/{id}/{name}"), name, size, crc });
        let info = BackupInfo {
            id,
            timestamp: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            sequence: counters.last_sequence.0,
            files: files.len(),
            size: files.iter().map(|f| f.size).sum(),
        };
        crate::kill_point!("backup.meta");
        let meta_dir = self.dir.join(META);
        let tmp = meta_dir.join(format!("{id}.tmp"));
        write_file_synced(fs, &tmp, encode_meta(&info, &files).as_bytes())?;
        crate::kill_point!("backup.meta_rename");
        fs.rename(&tmp, &meta_dir.join(id.to_string()))?;
        fs.sync_dir(&meta_dir)?;
        Ok(info)
    }

    /// Every complete backup, oldest first.
    pub fn backups(&self) -> Result<Vec<BackupInfo>> {
        self.ids()?.into_iter().map(|id| Ok(self.read_meta(id)?.info)).collect()
    }

    /// Checks that every file of backup `id` exists with its recorded size and checksum.
    pub fn verify_backup(&self, id: u64) -> Result<()> {
        for f in self.read_meta(id)?.files {
            let path = self.dir.join(&f.stored);
            let (size, crc) = file_crc32c(self.fs.as_ref(), &path)?;
            check_file(&path, &f, size, crc)?;
        }
        Ok(())
    }

    /// Deletes every backup but the newest `keep`, and the tables no remaining backup holds.
    pub fn purge_old_backups(&self, keep: usize) -> Result<()> {
        let ids = self.ids()?;
        let fs = self.fs.as_ref();
        let meta_dir = self.dir.join(META);
        for id in &ids[..ids.len().saturating_sub(keep)] {
            // The meta file first: from then on the backup does not exist.
            fs.remove(&meta_dir.join(id.to_string()))?;
            fs.sync_dir(&meta_dir)?;
            remove_leftover_dir(fs, &self.dir.join(PRIVATE).join(id.to_string()))?;
        }
        self.remove_unreferenced_tables()
    }

    /// Restores the newest backup into `db_dir` (which must not exist, or be empty).
    pub fn restore_from_latest_backup(&self, db_dir: impl AsRef<Path>) -> Result<BackupInfo> {
        let Some(&id) = self.ids()?.last() else {
            return Err(Error::InvalidArgument(format!(
                "restore: {} holds no backup",
                self.dir.display()
            )));
        };
        self.restore_from_backup(id, db_dir)
    }

    /// Restores backup `id` into `db_dir` (which must not exist, or be empty), verifying every
    /// file's checksum; the result opens as a DB equal to the source at the backup's sequence
    /// number.
    pub fn restore_from_backup(&self, id: u64, db_dir: impl AsRef<Path>) -> Result<BackupInfo> {
        let db_dir = db_dir.as_ref();
        let fs = self.fs.as_ref();
        let meta = self.read_meta(id)?;
        if fs.exists(db_dir) {
            if !fs.list(db_dir)?.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "restore: {} exists and is not empty",
                    db_dir.display()
                )));
            }
            fs.remove_dir(db_dir)?;
        }
        let name = db_dir.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
            Error::InvalidArgument(format!("restore: {} has no directory name", db_dir.display()))
        })?;
        let tmp = parent_dir(db_dir).join(format!("{name}.restore-tmp"));
        remove_leftover_dir(fs, &tmp)?;
        fs.create_dir_all(&tmp)?;
        let mut manifest = None;
        for f in &meta.files {
            let from = self.dir.join(&f.stored);
            let (size, crc) = copy_file_crc32c(fs, &from, &tmp.join(&f.name))?;
            check_file(&from, f, size, crc)?;
            if let Some(rest) = f.name.strip_prefix("MANIFEST-") {
                manifest = rest.parse::<u64>().ok().map(FileNumber);
            }
        }
        let manifest = manifest.ok_or_else(|| {
            Error::corruption(self.meta_path(id), 0, "backup lists no MANIFEST file")
        })?;
        set_current(fs, &tmp, manifest)?;
        fs.rename(&tmp, db_dir)?;
        fs.sync_dir(&parent_dir(db_dir))?;
        Ok(meta.info)
    }

    fn meta_path(&self, id: u64) -> PathBuf {
        self.dir.join(META).join(id.to_string())
    }

    /// Ids of the complete backups, ascending.
    fn ids(&self) -> Result<Vec<u64>> {
        let mut ids: Vec<u64> =
            self.fs.list(&self.dir.join(META))?.iter().filter_map(|n| n.parse().ok()).collect();
        ids.sort_unstable();
        Ok(ids)
    }

    fn read_meta(&self, id: u64) -> Result<Meta> {
        let path = self.meta_path(id);
        if !self.fs.exists(&path) {
            return Err(Error::InvalidArgument(format!(
                "backup {id} does not exist in {}",
                self.dir.display()
            )));
        }
        let data = self.fs.open(&path)?.read_all()?;
        decode_meta(id, &path, &data)
    }

    /// Copies table (or blob file, `ext` "blob") `n` into `shared/` unless a copy with the
    /// same contents is there.
    fn store_table(&self, src: &Path, n: FileNumber, ext: &str) -> Result<BackupFile> {
        let fs = self.fs.as_ref();
        let (size, crc) = file_crc32c(fs, src)?;
        let stored = format!("{SHARED}/{n}_{crc:08x}_{size}.{ext}");
        let dst = self.dir.join(&stored);
        if !fs.exists(&dst) {
            let tmp = self.dir.join(format!("{stored}.tmp"));
            let (copied, copied_crc) = copy_file_crc32c(fs, src, &tmp)?;
            if (copied, copied_crc) != (size, crc) {
                let _ = fs.remove(&tmp);
                return Err(Error::corruption(
                    src,
                    0,
                    "the table changed while it was being backed up",
                ));
            }
            fs.rename(&tmp, &dst)?;
        }
        let name = if ext == "blob" { blob_file_name(n) } else { table_file_name(n) };
        Ok(BackupFile { stored, name, size, crc })
    }

    /// Removes `.tmp` files, private directories without a meta file, and unreferenced
    /// tables: what interrupted backups and purges leave.
    fn remove_leftovers(&self) -> Result<()> {
        let fs = self.fs.as_ref();
        let ids = self.ids()?;
        for d in [SHARED, META] {
            let dir = self.dir.join(d);
            for name in fs.list(&dir)? {
                // Only this engine names files here, and always in lowercase.
                if Path::new(&name).extension().is_some_and(|e| e == "tmp") {
                    fs.remove(&dir.join(name))?;
                }
            }
        }
        let private = self.dir.join(PRIVATE);
        for name in fs.list(&private)? {
            if !name.parse::<u64>().is_ok_and(|id| ids.contains(&id)) {
                remove_leftover_dir(fs, &private.join(name))?;
            }
        }
        self.remove_unreferenced_tables()
    }

    fn remove_unreferenced_tables(&self) -> Result<()> {
        let fs = self.fs.as_ref();
        let mut used = std::collections::HashSet::new();
        for id in self.ids()? {
            used.extend(self.read_meta(id)?.files.into_iter().map(|f| f.stored));
        }
        let shared = self.dir.join(SHARED);
        for name in fs.list(&shared)? {
            if !used.contains(&format!("{SHARED}/{name}")) {
                fs.remove(&shared.join(name))?;
            }
        }
        fs.sync_dir(&shared)
    }
}

fn check_file(path: &Path, f: &BackupFile, size: u64, crc: u32) -> Result<()> {
    if size != f.size {
        return Err(Error::corruption(
            path,
            0,
            format!("backup file has {size} bytes, its backup recorded {}", f.size),
        ));
    }
    if crc != f.crc {
        return Err(Error::ChecksumMismatch {
            file: path.to_path_buf(),
            offset: 0,
            expected: f.crc,
            actual: crc,
        });
    }
    Ok(())
}

fn encode_meta(info: &BackupInfo, files: &[BackupFile]) -> String {
    let mut s = format!("{META_MAGIC}\ntimestamp {}\nsequence {}\n", info.timestamp, info.sequence);
    for f in files {
        let _ = writeln!(s, "file {} {} {} {:08x}", f.stored, f.name, f.size, f.crc);
    }
    s.push_str("end\n");
    s
}

fn decode_meta(id: u64, path: &Path, data: &[u8]) -> Result<Meta> {
    let bad = |line: usize, why: &str| {
        Error::corruption(path, line as u64, format!("backup meta file, line {}: {why}", line + 1))
    };
    let text = std::str::from_utf8(data).map_err(|_| bad(0, "not UTF-8 text"))?;
    let lines: Vec<&str> = text.lines().collect();
    if lines.first() != Some(&META_MAGIC) {
        return Err(bad(0, "does not start with the format line `strata-backup 1`"));
    }
    if lines.last() != Some(&"end") {
        return Err(bad(lines.len().saturating_sub(1), "does not end with `end` (cut short)"));
    }
    let (mut timestamp, mut sequence, mut files) = (None, None, Vec::new());
    for (i, line) in lines.iter().enumerate().take(lines.len() - 1).skip(1) {
        let parts: Vec<&str> = line.split(' ').collect();
        match parts.as_slice() {
            ["timestamp", t] => timestamp = t.parse().ok(),
            ["sequence", s] => sequence = s.parse().ok(),
            ["file", stored, name, size, crc] => {
                let safe = |p: &str| !p.split('/').any(|c| c == ".." || c.is_empty());
                let (Ok(size), Ok(crc)) = (size.parse(), u32::from_str_radix(crc, 16)) else {
                    return Err(bad(i, "bad size or checksum"));
                };
                if !safe(stored) || name.contains('/') {
                    return Err(bad(i, "file path leaves the backup directory"));
                }
                files.push(BackupFile {
                    stored: (*stored).to_string(),
                    name: (*name).to_string(),
                    size,
                    crc,
                });
            }
            _ => return Err(bad(i, "unknown line")),
        }
    }
    let (Some(timestamp), Some(sequence)) = (timestamp, sequence) else {
        return Err(bad(0, "timestamp or sequence missing"));
    };
    let info = BackupInfo {
        id,
        timestamp,
        sequence,
        files: files.len(),
        size: files.iter().map(|f| f.size).sum(),
    };
    Ok(Meta { info, files })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_round_trips_and_damage_is_named() {
        let info = BackupInfo { id: 7, timestamp: 1, sequence: 42, files: 1, size: 10 };
        let files = vec![BackupFile {
            stored: "shared/000005_0000abcd_10.sst".into(),
            name: "000005.sst".into(),
            size: 10,
            crc: 0xabcd,
        }];
        let text = encode_meta(&info, &files);
        let m = decode_meta(7, Path::new("meta/7"), text.as_bytes()).unwrap();
        assert_eq!((m.info, m.files), (info, files));
        let cut = &text[..text.len() - 4];
        let e = decode_meta(7, Path::new("meta/7"), cut.as_bytes()).err().unwrap();
        assert!(e.to_string().contains("cut short"), "{e}");
        let evil = text.replace("shared/", "../");
        assert!(decode_meta(7, Path::new("meta/7"), evil.as_bytes()).is_err());
    }
}
