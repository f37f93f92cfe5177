//! `Options::wal_dir`: WAL files live in their own directory; recovery, obsolete-
//! file deletion and power loss work there as in the DB directory, and switching the option on
//! an existing DB loses nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::env::{CrashMode, FaultFs, MemFs};
use strata::{Db, Error, Options, WriteOptions};

fn files(fs: &MemFs, dir: &str, ext: &str) -> usize {
    use strata::env::FileSystem;
    fs.list(Path::new(dir)).map_or(0, |n| n.iter().filter(|f| f.ends_with(ext)).count())
}

fn opts(mem: &MemFs, wal_dir: Option<&str>) -> Options {
    Options {
        fs: Arc::new(FaultFs::new(Arc::new(mem.clone()), 1)),
        write_buffer_size: 16 << 10,
        wal_dir: wal_dir.map(PathBuf::from),
        ..Options::default()
    }
}

#[test]
fn wals_live_in_wal_dir_and_survive_power_loss() {
    let mem = MemFs::new();
    let sync = WriteOptions { sync: true, disable_wal: false, ..WriteOptions::default() };
    {
        let fs = FaultFs::new(Arc::new(mem.clone()), 1);
        let o = Options { fs: Arc::new(fs.clone()), ..opts(&mem, Some("/wal")) };
        let db = Db::open(&o, "/db").unwrap();
        for i in 0..300u32 {
            db.put_opt(format!("k{i:04}"), vec![i as u8; 200], &sync).unwrap();
        }
        assert_eq!(files(&mem, "/db", ".log"), 0, "no WAL in the DB directory");
        assert!(files(&mem, "/wal", ".log") >= 1);
        assert!(files(&mem, "/db", ".sst") >= 1, "memtables were flushed");
        // Power is cut with the DB open: only synced bytes and synced directory entries stay
        // (the DB is cut off first, so its close writes nothing).
        fs.kill();
        mem.crash(CrashMode::PowerLoss);
    }
    let db = Db::open(&opts(&mem, Some("/wal")), "/db").unwrap();
    for i in 0..300u32 {
        assert_eq!(db.get(format!("k{i:04}")).unwrap(), Some(vec![i as u8; 200]), "key {i}");
    }
    // Flushes made the older WALs obsolete; only the live ones remain.
    db.flush().unwrap();
    assert!(files(&mem, "/wal", ".log") <= 2, "obsolete WALs were deleted");
}

#[test]
fn setting_wal_dir_on_an_existing_db_keeps_its_unflushed_writes() {
    let mem = MemFs::new();
    {
        let db = Db::open(&opts(&mem, None), "/db").unwrap();
        db.put(b"before", b"1").unwrap();
    }
    assert_eq!(files(&mem, "/db", ".log"), 1);
    {
        let db = Db::open(&opts(&mem, Some("/wal")), "/db").unwrap();
        assert_eq!(db.get(b"before").unwrap().as_deref(), Some(&b"1"[..]));
        db.put(b"after", b"2").unwrap();
        assert_eq!(files(&mem, "/db", ".log"), 0, "the old WAL was replayed and deleted");
    }
    let db = Db::open(&opts(&mem, Some("/wal")), "/db").unwrap();
    assert_eq!(db.get(b"after").unwrap().as_deref(), Some(&b"2"[..]));
}

#[test]
fn a_needed_wal_in_another_directory_is_reported_not_skipped() {
    let mem = MemFs::new();
    {
        let db = Db::open(&opts(&mem, Some("/wal")), "/db").unwrap();
        db.put(b"k", b"unflushed").unwrap();
    }
    // Opened without the WAL directory the writes' WAL is nowhere to be seen: refuse, naming
    // it, rather than open without them.
    match Db::open(&opts(&mem, None), "/db") {
        Err(e @ Error::Corruption { .. }) => assert!(e.to_string().contains("wal_dir"), "{e}"),
        Err(e) => panic!("expected Corruption, got {e}"),
        Ok(db) => panic!("opened without the WAL; k = {:?}", db.get(b"k").unwrap()),
    }
    let db = Db::open(&opts(&mem, Some("/wal")), "/db").unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"unflushed"[..]));
}

#[test]
fn the_same_wal_in_both_directories_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (db_dir, wal_dir) = (dir.path().join("db"), dir.path().join("wal"));
    let o = Options { wal_dir: Some(wal_dir.clone()), ..Options::default() };
    drop(Db::open(&o, &db_dir).unwrap());
    let wal = std::fs::read_dir(&wal_dir).unwrap().next().unwrap().unwrap().path();
    std::fs::copy(&wal, db_dir.join(wal.file_name().unwrap())).unwrap();
    let err = Db::open(&o, &db_dir).unwrap_err();
    assert!(err.is_corruption() && err.to_string().contains("also exists"), "{err}");
}
