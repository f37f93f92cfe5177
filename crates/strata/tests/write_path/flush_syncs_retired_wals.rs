//! The flush job syncs the retired WALs its memtable's writes are in only when the DB has
//! several families (their writes share those WALs, and a table must not outlive the rest
//! of its batches) or archives its WALs (`get_updates_since` reads them back): a DB of one
//! family without an archive drops them unsynced once the flush is installed, as RocksDB
//! does. Either way power loss keeps a prefix with every flushed write.
//!
//! A flush syncs its directory once: the sync after its table also makes durable the entries
//! of the WALs created before it when they live in the same directory (the WAL its edit
//! names among them), so the WAL directory is synced again only when it is another one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::env::{CrashMode, FaultFs, FaultOp, FileSystem, MemFs};
use strata::{Db, Options};

fn options(fs: Arc<dyn FileSystem>) -> Options {
    Options {
        fs,
        write_buffer_size: 64 << 10,
        max_write_buffer_number: 64,
        create_if_missing: true,
        ..Options::default()
    }
}

/// Writes 1.5 MB through 64 KB memtables (into `family` too when given), flushes, and
/// returns how many syncs of WAL files the DB made meanwhile (no write asked for one).
fn wal_syncs(fs: &FaultFs, db: &Db, family: Option<&str>) -> usize {
    fs.start_recording();
    let cf = family.map(|f| db.cf_handle(f).unwrap());
    for i in 0..3_000u32 {
        db.put(format!("k{i:05}"), [i as u8; 512]).unwrap();
        if let Some(cf) = &cf {
            db.put_cf(cf, format!("k{i:05}"), [1]).unwrap();
        }
    }
    db.flush().unwrap();
    let is_wal = |p: &Path| p.extension().is_some_and(|x| x == "log");
    fs.recorded().iter().filter(|r| r.op == FaultOp::Sync && is_wal(&r.path)).count()
}

/// A DB on a recording file system over `mem`, with the options it was opened with.
fn open(mem: &MemFs) -> (FaultFs, Db, Options) {
    let fs = FaultFs::new(Arc::new(mem.clone()), 1);
    let opts = options(Arc::new(fs.clone()));
    let db = Db::open(&opts, Path::new("/db")).unwrap();
    (fs, db, opts)
}

#[test]
fn one_family_flushes_without_syncing_retired_wals() {
    let mem = MemFs::new();
    let (fs, db, _) = open(&mem);
    let path = PathBuf::from("/db");
    assert_eq!(wal_syncs(&fs, &db, None), 0, "a DB of one family synced a retired WAL");
    fs.kill();
    drop(db);
    mem.crash(CrashMode::PowerLoss);
    // The flushed writes are in synced tables.
    let db = Db::open(&options(Arc::new(mem.clone())), &path).unwrap();
    for i in 0..3_000u32 {
        assert_eq!(db.get(format!("k{i:05}")).unwrap(), Some(vec![i as u8; 512]), "{i}");
    }
}

#[test]
fn several_families_sync_the_retired_wals_a_flush_covers() {
    let (fs, db, opts) = open(&MemFs::new());
    db.create_cf("other", &opts).unwrap();
    assert!(wal_syncs(&fs, &db, Some("other")) > 0, "no retired WAL was synced");
}

/// Regression: with the WAL archive on, one family's flushes dropped the retired WALs
/// unsynced too. A power loss between a flush's install and the archiving of its WALs (which
/// syncs each one again before the move) then left the archive short of writes a table held,
/// and `get_updates_since(0)` failed with a gap below the DB's last sequence number. Each
/// archived WAL is now synced by the flush and again by the archive step.
#[test]
fn an_archiving_db_syncs_the_retired_wals_a_flush_covers() {
    let mem = MemFs::new();
    let fs = FaultFs::new(Arc::new(mem.clone()), 1);
    let archiving = |fs: Arc<dyn FileSystem>| Options { wal_ttl_seconds: 3600, ..options(fs) };
    let db = Db::open(&archiving(Arc::new(fs.clone())), Path::new("/db")).unwrap();
    assert!(wal_syncs(&fs, &db, None) > 0, "no retired WAL was synced");
    // The archive listed before the syncs are counted: the archiving goes on in the
    // background, and a WAL it moves after the count would lack its second sync there.
    let archived = mem.list(Path::new("/db/archive")).unwrap();
    let mut syncs = std::collections::BTreeMap::<PathBuf, usize>::new();
    for r in fs.recorded().iter().filter(|r| r.op == FaultOp::Sync) {
        if r.path.extension().is_some_and(|x| x == "log") {
            *syncs.entry(r.path.clone()).or_default() += 1;
        }
    }
    assert!(archived.len() > 5, "{archived:?}");
    for name in &archived {
        let n = syncs.get(&Path::new("/db").join(name)).copied().unwrap_or(0);
        assert!(n >= 2, "{name:?} synced {n} times: {syncs:?}");
    }
    fs.kill();
    drop(db);
    mem.crash(CrashMode::PowerLoss);
    let db = Db::open(&archiving(Arc::new(mem.clone())), Path::new("/db")).unwrap();
    let batches: Vec<u64> = db.get_updates_since(0).unwrap().map(|b| b.unwrap().0).collect();
    assert_eq!(batches.len(), 3_000);
    assert_eq!(db.latest_sequence_number(), 3_000);
}

/// Writes 1.5 MB through 64 KB memtables and flushes; returns the tables created and the
/// directory syncs of `dir` made meanwhile.
fn dir_syncs_per_flush(fs: &FaultFs, db: &Db, dir: &Path) -> (usize, usize) {
    fs.start_recording();
    for i in 0..3_000u32 {
        db.put(format!("k{i:05}"), [i as u8; 512]).unwrap();
    }
    db.flush().unwrap();
    let ops = fs.recorded();
    let tables = ops
        .iter()
        .filter(|r| r.op == FaultOp::Create && r.path.extension().is_some_and(|x| x == "sst"))
        .count();
    let syncs = ops.iter().filter(|r| r.op == FaultOp::SyncDir && r.path == dir).count();
    (tables, syncs)
}

/// Regression: each flush synced the DB directory twice, once after its table and once for
/// the WALs' entries, which the first sync had already made durable.
#[test]
fn a_flush_syncs_its_directory_once() {
    let mem = MemFs::new();
    let (fs, db, _) = open(&mem);
    let (tables, syncs) = dir_syncs_per_flush(&fs, &db, Path::new("/db"));
    assert!(tables > 5, "{tables} tables");
    assert_eq!(syncs, tables, "directory syncs for {tables} flushes");
    fs.kill();
    drop(db);
    mem.crash(CrashMode::PowerLoss);
    let db = Db::open(&options(Arc::new(mem.clone())), Path::new("/db")).unwrap();
    for i in 0..3_000u32 {
        assert_eq!(db.get(format!("k{i:05}")).unwrap(), Some(vec![i as u8; 512]), "{i}");
    }
}

#[test]
fn a_wal_directory_of_its_own_is_still_synced_by_the_flushes() {
    let mem = MemFs::new();
    let fs = FaultFs::new(Arc::new(mem.clone()), 1);
    let opts = Options { wal_dir: Some(PathBuf::from("/wal")), ..options(Arc::new(fs.clone())) };
    let db = Db::open(&opts, Path::new("/db")).unwrap();
    let (tables, syncs) = dir_syncs_per_flush(&fs, &db, Path::new("/wal"));
    assert!(tables > 5, "{tables} tables");
    // One sync covers every WAL created before it, so several flushes may share one.
    assert!(syncs >= 1, "the WAL directory was not synced in {tables} flushes");
    fs.kill();
    drop(db);
    mem.crash(CrashMode::PowerLoss);
    let reopened =
        Options { wal_dir: Some(PathBuf::from("/wal")), ..options(Arc::new(mem.clone())) };
    let db = Db::open(&reopened, Path::new("/db")).unwrap();
    for i in 0..3_000u32 {
        assert_eq!(db.get(format!("k{i:05}")).unwrap(), Some(vec![i as u8; 512]), "{i}");
    }
}
