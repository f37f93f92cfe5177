//! `Db::destroy`: deleting a whole DB.
//!
//! Contract: only the engine's own files go (names `filename::parse_file_name` knows, and
//! the info LOGs); the DB's lock is held throughout, so a DB open anywhere is never touched;
//! CURRENT goes first, so a destroy cut short leaves a directory that no longer opens as a DB
//! rather than one missing some of its tables.

use std::path::Path;

use crate::db::info_log::is_info_log_name;
use crate::db::Db;
use crate::error::Result;
use crate::filename::{current_path, lock_path, parse_file_name, FileKind};
use crate::options::Options;

impl Db {
    /// Deletes the DB in `path`: every file the engine names (CURRENT, MANIFESTs, WALs in the
    /// DB and WAL directories, tables, temporary files, LOGs; tables in the table paths
    /// `opts.db_paths` and `opts.cf_paths` too), then the LOCK file and the directories if
    /// they are empty. Fails with `Locked` while a `Db` has it open; files
    /// it does not own are left, and so is the directory holding them. A missing directory is
    /// not an error.
    pub fn destroy(opts: &Options, path: impl AsRef<Path>) -> Result<()> {
        destroy(opts, path.as_ref())
    }
}

fn destroy(opts: &Options, dir: &Path) -> Result<()> {
    let fs = opts.fs.as_ref();
    if !fs.exists(dir) {
        return Ok(());
    }
    let lock = fs.lock(&lock_path(dir))?;
    if fs.exists(&current_path(dir)) {
        fs.remove(&current_path(dir))?;
        fs.sync_dir(dir)?;
    }
    let wal_dir = opts.wal_dir.clone().unwrap_or_else(|| dir.to_path_buf());
    let mut dirs = vec![dir];
    if wal_dir != dir && fs.exists(&wal_dir) {
        dirs.push(&wal_dir);
    }
    for d in dirs {
        for name in fs.list(d)? {
            let ours = match parse_file_name(&name) {
                Some(FileKind::Lock) => false,
                Some(FileKind::Wal(_)) => true,
                Some(_) => d == dir,
                None => d == dir && is_info_log_name(&name),
            };
            if ours {
                fs.remove(&d.join(&name))?;
            }
        }
        fs.sync_dir(d)?;
    }
    // The table paths (as RocksDB's DestroyDB: those the options name): their tables.
    let table_dirs: Vec<&Path> = opts
        .db_paths
        .iter()
        .chain(&opts.cf_paths)
        .map(crate::options::DBPath::path)
        .filter(|d| *d != dir && fs.is_dir(d))
        .collect();
    for &d in &table_dirs {
        for name in fs.list(d)? {
            if let Some(FileKind::Table(_)) = parse_file_name(&name) {
                fs.remove(&d.join(&name))?;
            }
        }
        fs.sync_dir(d)?;
    }
    // The WAL archive (`Options::wal_ttl_seconds`): its WALs, then the directory if empty.
    let archive = crate::filename::archive_dir(&wal_dir);
    if fs.is_dir(&archive) {
        for name in fs.list(&archive)? {
            if let Some(FileKind::Wal(_)) = parse_file_name(&name) {
                fs.remove(&archive.join(&name))?;
            }
        }
        if fs.list(&archive).is_ok_and(|l| l.is_empty()) {
            fs.remove_dir(&archive)?;
        }
        fs.sync_dir(&wal_dir)?;
    }
    drop(lock);
    // The lock file and the directories go last, and only when nothing else is left.
    let _ = fs.remove(&lock_path(dir));
    if wal_dir != dir && fs.list(&wal_dir).is_ok_and(|l| l.is_empty()) {
        let _ = fs.remove_dir(&wal_dir);
    }
    for d in table_dirs {
        if fs.list(d).is_ok_and(|l| l.is_empty()) {
            let _ = fs.remove_dir(d);
        }
    }
    if fs.list(dir).is_ok_and(|l| l.is_empty()) {
        let _ = fs.remove_dir(dir);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use crate::db::Db;
    use crate::env::{FileSystem, MemFs};
    use crate::error::Error;
    use crate::options::Options;

    fn opts(fs: &MemFs) -> Options {
        Options { fs: Arc::new(fs.clone()), ..Options::default() }
    }

    #[test]
    fn destroy_removes_the_db_and_keeps_foreign_files() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        let db = Db::open(&opts(&fs), dir).unwrap();
        db.put(b"k", b"v").unwrap();
        db.flush().unwrap();
        assert!(matches!(Db::destroy(&opts(&fs), dir), Err(Error::Locked(_))), "open DB");
        drop(db);
        Db::destroy(&opts(&fs), dir).unwrap();
        assert!(!fs.exists(dir), "{:?}", fs.paths());

        let db = Db::open(&opts(&fs), dir).unwrap();
        drop(db);
        crate::env::write_file_synced(&fs, &dir.join("notes.txt"), b"mine").unwrap();
        Db::destroy(&opts(&fs), dir).unwrap();
        assert_eq!(fs.list(dir).unwrap(), vec!["notes.txt".to_string()]);
        // Destroying nothing is fine.
        Db::destroy(&opts(&fs), Path::new("/nothing")).unwrap();
    }
}
