//! Values written to blob files as writes commit (`BlobOptions::write_blobs_at_commit`,
//! `db/blob_log.rs`): the WAL holds blob indexes, not the values; reads, merges, iterators
//! and `get_updates_since` see the values before and after the flush; a crash or power loss
//! keeps every synced write and recovery reads the values back; a blob file whose unsynced
//! tail was lost ends the replay there; an iterator's memtable keeps its blob file readable
//! through flushes and compactions; a checkpoint that would copy WALs flushes instead; the
//! files are written as foreground writes (no rate limit, no direct I/O), and the flush
//! counts those it adds and closes and deletes those it does not.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::forward_fs::{ForwardFs, Hooks};

use strata::env::{CrashMode, FileSystem, MemFs};
use strata::env::{RandomAccessFile, RateLimiter, WritableFile};
use strata::inspect::{
    all_intact, read_any_blob_file, read_blob_file, read_wal, verify_db, FileCheck, WalRecord,
};
use strata::statistics::Ticker;
use strata::{
    BlobOptions, Checkpoint, Db, IteratorMode, Options, WalRecoveryMode, WriteBatch, WriteOptions,
};

const MIN_BLOB: usize = 100;

fn opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        merge_operator: strata::merge_operator::builtin_merge_operator("stringappend"),
        blob: BlobOptions {
            enable_blob_files: true,
            min_blob_size: MIN_BLOB as u64,
            write_blobs_at_commit: true,
            ..BlobOptions::default()
        },
        ..Options::default()
    }
}

fn value(i: u32) -> Vec<u8> {
    format!("value{i:04}-").repeat(20).into_bytes()
}

fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.iterator(IteratorMode::Start)
        .map(|r| r.unwrap())
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect()
}

pub(crate) fn files_with(fs: &MemFs, ext: &str) -> Vec<String> {
    let mut v: Vec<String> = fs
        .list(Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| Path::new(n).extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

/// The kinds of the entries of every batch in the DB's WALs, in order.
fn wal_kinds(fs: &MemFs) -> Vec<&'static str> {
    let mut kinds = Vec::new();
    for w in files_with(fs, "log") {
        for r in read_wal(fs, &Path::new("/db").join(w)).unwrap().records {
            if let WalRecord::Batch { entries, .. } = r {
                kinds.extend(entries.iter().map(|e| e.kind));
            }
        }
    }
    kinds
}

/// The values of the WALs' entries of kind `kind`.
fn wal_values(fs: &MemFs, kind: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for w in files_with(fs, "log") {
        for r in read_wal(fs, &Path::new("/db").join(w)).unwrap().records {
            if let WalRecord::Batch { entries, .. } = r {
                out.extend(entries.into_iter().filter(|e| e.kind == kind).map(|e| e.value));
            }
        }
    }
    out
}

/// 50 keys, every other with a value large enough for a blob file.
fn fill(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    for i in 0..50u32 {
        let k = format!("key{i:04}").into_bytes();
        let v = if i % 2 == 0 { value(i) } else { format!("small{i}").into_bytes() };
        db.put(&k, &v).unwrap();
        m.insert(k, v);
    }
    m
}

#[test]
fn the_wal_and_the_memtable_hold_indexes_and_reads_see_the_values() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    let mut model = fill(&db);
    // Before any flush: one blob file (the memtable's), the WAL holding indexes for the
    // large values only, and every read path resolving them.
    assert_eq!(files_with(&fs, "blob").len(), 1);
    let kinds = wal_kinds(&fs);
    assert_eq!(kinds.iter().filter(|k| **k == "BLOB").count(), 25, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "PUT").count(), 25);
    // Each index is a few bytes where the value was 240.
    assert!(wal_values(&fs, "BLOB").iter().all(|v| v.len() < 24), "{:?}", wal_values(&fs, "BLOB"));
    assert_eq!(contents(&db), model);
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
        assert_eq!(db.get_pinned(k).unwrap().as_deref(), Some(v.as_slice()));
    }
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    for (k, got) in keys.iter().zip(db.multi_get(&keys)) {
        assert_eq!(got.unwrap().as_ref(), model.get(*k));
    }
    let back: Vec<Vec<u8>> =
        db.iterator(IteratorMode::End).map(|r| r.unwrap().1.to_vec()).collect();
    assert_eq!(back, model.values().rev().cloned().collect::<Vec<_>>());
    // A merge onto a value in the blob file, before and after the flush.
    db.merge("key0000", "m1").unwrap();
    let mut merged = value(0);
    merged.extend_from_slice(b",m1");
    model.insert(b"key0000".to_vec(), merged.clone());
    assert_eq!(db.get("key0000").unwrap(), Some(merged.clone()));
    // The flush finishes the memtable's blob file and adds it to the version (with the
    // merged value, which the flush itself writes to a blob file of its own).
    let log = files_with(&fs, "blob");
    db.flush().unwrap();
    assert_eq!(db.property_int_value("rocksdb.num-blob-files").unwrap(), Some(2));
    let after = files_with(&fs, "blob");
    assert!(after.len() == 2 && after.contains(&log[0]), "{log:?} -> {after:?}");
    assert_eq!(contents(&db), model);
    drop(db);
    let db = Db::open(&opts(&fs), "/db").unwrap();
    assert_eq!(contents(&db), model);
    assert_eq!(db.get("key0000").unwrap(), Some(merged));
}

#[test]
fn overwritten_values_are_garbage_and_an_unreferenced_file_goes() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    for round in 0..4u32 {
        for i in 0..10u32 {
            db.put(format!("key{i}"), value(round * 100 + i)).unwrap();
        }
    }
    db.flush().unwrap();
    let int = |p: &str| db.property_int_value(p).unwrap().unwrap();
    // One file of 40 records, 30 of them overwritten within the memtable.
    assert_eq!(int("rocksdb.num-blob-files"), 1);
    let (total, garbage) =
        (int("rocksdb.total-blob-file-size"), int("rocksdb.live-blob-file-garbage-size"));
    assert!(garbage * 4 >= total * 2 && garbage < total, "garbage {garbage} of {total}");
    // A memtable whose values are all deleted before its flush: its blob file is not added,
    // and is deleted.
    for i in 0..10u32 {
        db.put(format!("gone{i}"), value(i)).unwrap();
        db.delete(format!("gone{i}")).unwrap();
    }
    assert_eq!(files_with(&fs, "blob").len(), 2);
    db.flush().unwrap();
    assert_eq!(int("rocksdb.num-blob-files"), 1);
    assert_eq!(files_with(&fs, "blob").len(), 1);
    for i in 0..10u32 {
        assert_eq!(db.get(format!("key{i}")).unwrap(), Some(value(300 + i)));
        assert_eq!(db.get(format!("gone{i}")).unwrap(), None);
    }
}

#[test]
fn a_crash_keeps_the_values_and_a_power_loss_every_synced_write() {
    for mode in [CrashMode::ProcessKill, CrashMode::PowerLoss] {
        let fs = MemFs::new();
        let db = Db::open(&opts(&fs), "/db").unwrap();
        let mut model = fill(&db);
        let mut batch = WriteBatch::default();
        batch.put("synced-big", value(7));
        batch.put("synced-small", "s");
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        db.write_opt(batch, &wo).unwrap();
        // Power loss keeps the unsynced writes before the synced one too: its sync made
        // the WAL and the blob file durable up to it.
        model.insert(b"synced-big".to_vec(), value(7));
        model.insert(b"synced-small".to_vec(), b"s".to_vec());
        fs.crash(mode);
        drop(db);
        let db = Db::open(&opts(&fs), "/db").unwrap();
        assert_eq!(contents(&db), model, "{mode:?}");
        // The replay wrote the values out again: the blob files of the crashed run are gone.
        drop(db);
        let db = Db::open(&opts(&fs), "/db").unwrap();
        assert_eq!(contents(&db), model, "{mode:?}, reopened");
        let held = db.property_int_value("rocksdb.num-blob-files").unwrap().unwrap();
        assert_eq!(files_with(&fs, "blob").len() as u64, held, "{mode:?}");
    }
}

/// Power loss kept the WAL's record but not the blob file's bytes it points to (neither
/// was synced): the replay ends at that record, as at a torn WAL tail.
#[test]
fn a_lost_blob_file_tail_ends_the_replay_at_its_record() {
    let setup = || {
        let fs = MemFs::new();
        let db = Db::open(&opts(&fs), "/db").unwrap();
        db.put("a", value(1)).unwrap();
        db.put("b", "small").unwrap();
        db.put("c", value(3)).unwrap();
        db.put("d", "small").unwrap();
        drop(db);
        // Cut the blob file inside "c"'s record.
        let blob = Path::new("/db").join(&files_with(&fs, "blob")[0]);
        let mut data = fs.read_file(&blob).unwrap();
        data.truncate(data.len() - 10);
        fs.write_file(&blob, &data);
        fs
    };
    let open = |fs: &MemFs, mode| {
        let mut o = opts(fs);
        o.wal_recovery_mode = mode;
        Db::open(&o, "/db")
    };
    for mode in [WalRecoveryMode::PointInTime, WalRecoveryMode::TolerateCorruptedTailRecords] {
        let fs = setup();
        let db = open(&fs, mode).unwrap();
        let got = contents(&db);
        let want: BTreeMap<Vec<u8>, Vec<u8>> =
            [(b"a".to_vec(), value(1)), (b"b".to_vec(), b"small".to_vec())].into();
        assert_eq!(got, want, "{mode:?}: the writes before the lost value, none after");
        let log = String::from_utf8(fs.read_file(Path::new("/db/LOG")).unwrap()).unwrap();
        assert!(log.contains("WAL replay ended at a value written at commit"), "{log}");
    }
    // Salvaging every intact record keeps "d".
    let fs = setup();
    let db = open(&fs, WalRecoveryMode::SkipAnyCorruptedRecords).unwrap();
    assert_eq!(
        contents(&db).keys().cloned().collect::<Vec<_>>(),
        [b"a".to_vec(), b"b".to_vec(), b"d".to_vec()]
    );
    // Absolute consistency refuses, naming the WAL and the blob file.
    let fs = setup();
    let e = open(&fs, WalRecoveryMode::AbsoluteConsistency).expect_err("refused").to_string();
    assert!(e.contains(".log") && e.contains(".blob"), "{e}");
}

#[test]
fn get_updates_since_hands_out_the_values() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    db.put("k1", value(1)).unwrap();
    db.put("k2", "small").unwrap();
    let mut seen = Vec::new();
    for item in db.get_updates_since(0).unwrap() {
        let (_, batch) = item.unwrap();
        struct Puts<'a>(&'a mut Vec<(Vec<u8>, Vec<u8>)>);
        impl strata::WriteBatchIterator for Puts<'_> {
            fn put(&mut self, k: &[u8], v: &[u8]) {
                self.0.push((k.to_vec(), v.to_vec()));
            }
            fn delete(&mut self, _: &[u8]) {}
        }
        batch.iterate(&mut Puts(&mut seen));
    }
    assert_eq!(seen, vec![(b"k1".to_vec(), value(1)), (b"k2".to_vec(), b"small".to_vec())]);
}

#[test]
fn an_iterator_keeps_its_memtables_blob_file_through_flush_and_compaction() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    db.put("k", value(1)).unwrap();
    let it = db.iterator(IteratorMode::Start);
    // The iterator's memtable is flushed (its blob file joins the version), the value is
    // overwritten in the next memtable, and a compaction drops it: no table refers to the
    // first blob file any more, and no version the iterator holds names it.
    db.flush().unwrap();
    db.put("k", value(2)).unwrap();
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.property_int_value("rocksdb.num-blob-files").unwrap(), Some(1));
    let seen: Vec<Vec<u8>> = it.map(|r| r.unwrap().1.to_vec()).collect();
    assert_eq!(seen, vec![value(1)]);
    assert_eq!(db.get("k").unwrap(), Some(value(2)));
}

#[test]
fn a_checkpoint_that_would_copy_wals_flushes_instead() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    let model = fill(&db);
    Checkpoint::create_with_log_size(&db, "/cp", u64::MAX).unwrap();
    drop(db);
    let cp = Db::open(&opts(&fs), "/cp").unwrap();
    assert_eq!(contents(&cp), model);
}

#[test]
fn unordered_writes_refuse_values_written_at_commit() {
    let fs = MemFs::new();
    let mut o = opts(&fs);
    o.unordered_write = true;
    let e = Db::open(&o, "/db").expect_err("refused").to_string();
    assert!(e.contains("write_blobs_at_commit"), "{e}");
}

#[test]
fn outside_bytes_never_carry_a_blob_index() {
    // A batch whose record has tag 5 (a blob index) is refused when given to the DB.
    let mut data = vec![0u8; 12];
    data[8] = 1; // count
    data.extend_from_slice(&[5, 1, b'k', 3, 1, 2, 3]);
    let e = WriteBatch::try_from_data(&data).expect_err("refused").to_string();
    assert!(e.contains("blob index"), "{e}");
}

/// Members of a write group that insert their own batch (16 records or more, with
/// concurrent memtable writes) would insert the values their batches hold while the WAL
/// holds indexes: the leader inserts a converted group whole. So a flush of writes that
/// overwrite nothing leaves no garbage. Synced writes on a real file system, so that writers
/// queue behind a sync and groups take followers (retried until one did, bounded).
#[test]
fn concurrent_batches_insert_the_indexes_the_wal_holds() {
    let stat = |db: &Db, name: &str| -> u64 {
        let stats = db.property_value("rocksdb.statistics").unwrap().unwrap();
        let line = stats.lines().find(|l| l.starts_with(name)).unwrap();
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let grouped = (0..10).any(|_| {
        let dir = tempfile::tempdir().unwrap();
        let mut o = opts(&MemFs::new());
        o.fs = Options::default().fs;
        o.enable_statistics();
        let db = Arc::new(Db::open(&o, dir.path()).unwrap());
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let db = db.clone();
                std::thread::spawn(move || {
                    let mut wo = WriteOptions::default();
                    wo.set_sync(true);
                    for b in 0..25u32 {
                        let mut batch = WriteBatch::default();
                        for i in 0..20u32 {
                            let v = value(t * 10_000 + b * 100 + i);
                            batch.put(format!("t{t}b{b:03}i{i:02}"), v);
                        }
                        db.write_opt(batch, &wo).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        db.flush().unwrap();
        let int = |p: &str| db.property_int_value(p).unwrap().unwrap();
        assert_eq!(int("rocksdb.live-blob-file-garbage-size"), 0);
        assert_eq!(stat(&db, "strata.write.member.inserts"), 0);
        assert_eq!(contents(&db).len(), 4 * 25 * 20);
        stat(&db, "rocksdb.write.other") > 0
    });
    assert!(grouped, "no write joined another's group in 10 runs");
}

/// A flush in a DB of several families syncs the retired WALs its memtable's writes are in
/// (they hold other families' writes too): after power loss the recovered writes are a
/// prefix, so a value written before the flushed one survives with it, and with it the bytes
/// its WAL record points to. Regression (found by the power-loss loop, seed 94): only a
/// synced write syncs the blob files, and recovery found such a WAL pointing at lost bytes.
#[test]
fn wals_synced_by_a_flush_keep_their_values_through_power_loss() {
    let fs = MemFs::new();
    let mut o = opts(&fs);
    o.create_missing_column_families = true;
    let open = |o: &Options| {
        let families = ["default", "b"].map(|n| strata::ColumnFamilyDescriptor::new(n, o.clone()));
        Db::open_cf_descriptors(o, "/db", families).unwrap()
    };
    let db = open(&o);
    let b = db.cf_handle("b").unwrap();
    db.put_cf(&b, "in-b", value(1)).unwrap();
    db.put("in-default", value(2)).unwrap();
    // The default family's flush makes "in-default" durable in a table, after syncing the
    // retired WAL, which holds "in-b" (written before it) as an index.
    assert_eq!(wal_kinds(&fs), ["BLOB", "BLOB"]);
    db.flush().unwrap();
    fs.crash(CrashMode::PowerLoss);
    drop(b);
    drop(db);
    let db = open(&o);
    let b = db.cf_handle("b").unwrap();
    assert_eq!(db.get("in-default").unwrap(), Some(value(2)));
    assert_eq!(db.get_cf(&b, "in-b").unwrap(), Some(value(1)), "the write before it");
}

/// Records the files created for direct writes.
#[derive(Default)]
struct DirectCreates(Mutex<Vec<PathBuf>>);

impl Hooks for DirectCreates {
    fn create_direct(&self, fs: &MemFs, path: &Path) -> strata::Result<Box<dyn WritableFile>> {
        self.0.lock().unwrap().push(path.to_path_buf());
        fs.create_direct(path)
    }
    fn open_direct(&self, fs: &MemFs, path: &Path) -> strata::Result<Arc<dyn RandomAccessFile>> {
        fs.open_direct(path)
    }
}

/// Regression: the blob file of a memtable's values was created as the flush's and
/// compactions' files are, so with a rate limiter every commit waited for its budget, and
/// with `use_direct_io_for_flush_and_compaction` wrote its values to the device, each holding
/// the WAL lock. It is a foreground write's file now; the flush's table and blob file still
/// take both.
#[test]
fn values_written_at_commit_skip_the_background_rate_limit_and_direct_writes() {
    let fs = MemFs::new();
    let hooks = Arc::new(ForwardFs(fs.clone(), DirectCreates::default()));
    let limiter = Arc::new(RateLimiter::new(1 << 30));
    let o = Options {
        fs: hooks.clone(),
        rate_limiter: Some(limiter.clone()),
        use_direct_io_for_flush_and_compaction: true,
        ..opts(&fs)
    };
    let db = Db::open(&o, "/db").unwrap();
    let model = fill(&db);
    let logs = files_with(&fs, "blob");
    assert_eq!(logs.len(), 1);
    assert_eq!(limiter.total_bytes_through(), 0, "the commits' values paid the rate limit");
    let direct = || hooks.1 .0.lock().unwrap().clone();
    assert!(direct().iter().all(|p| !p.ends_with(&logs[0])), "{:?}", direct());
    // A merge makes the flush write a value of its own to a blob file of its own.
    db.merge("key0000", "m").unwrap();
    db.flush().unwrap();
    let made = direct();
    let has = |ext: &str| made.iter().any(|p| p.extension().is_some_and(|x| x == ext));
    assert!(has("sst") && has("blob"), "{made:?}");
    assert!(made.iter().all(|p| !p.ends_with(&logs[0])), "{made:?}");
    assert!(limiter.total_bytes_through() > 0);
    let mut model = model;
    model.get_mut(b"key0000".as_slice()).unwrap().extend_from_slice(b",m");
    assert_eq!(contents(&db), model);
}

/// A flush adds the memtable's blob file with its records counted as the flush's output
/// (`rocksdb.flush.write.bytes`, the compaction stats' `Wblob`), as the blob files it writes
/// itself: a benchmark's write amplification counts the values once.
#[test]
fn the_flush_counts_the_blob_file_it_adds() {
    let fs = MemFs::new();
    let mut o = opts(&fs);
    o.enable_statistics();
    let db = Db::open(&o, "/db").unwrap();
    fill(&db);
    db.flush().unwrap();
    let size = |p: &str| db.property_int_value(p).unwrap().unwrap();
    assert_eq!(size("rocksdb.num-blob-files"), 1);
    // Header (20 bytes) and footer (28) are not counted, as for the flush's own blob files.
    let records = size("rocksdb.total-blob-file-size") - 48;
    assert!(records > 25 * 200, "{records}");
    assert_eq!(
        o.get_ticker_count(Ticker::FlushWriteBytes),
        size("rocksdb.total-sst-files-size") + records
    );
}

/// A memtable's blob file that its flush finds no table referring to is left as it is (no
/// footer, no sync) for the readers still holding the memtable, and when the last one lets
/// go, deleted with its reader closed (an open reader would keep the deleted file's space).
#[test]
fn an_unreferenced_blob_file_is_abandoned_unfinished_and_closed_when_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let o =
        Options { fs: Arc::new(strata::env::OsFs), create_if_missing: true, ..opts(&MemFs::new()) };
    let db = Db::open(&o, &path).unwrap();
    for i in 0..10u32 {
        db.put(format!("gone{i}"), value(i)).unwrap();
    }
    // A read opens the file's reader; the iterator holds the memtable.
    assert_eq!(db.get("gone3").unwrap(), Some(value(3)));
    let it = db.iterator(IteratorMode::Start);
    for i in 0..10u32 {
        db.delete(format!("gone{i}")).unwrap();
    }
    let blob_files = || -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "blob"))
            .collect();
        v.sort();
        v
    };
    let log = blob_files();
    assert_eq!(log.len(), 1);
    let len = std::fs::metadata(&log[0]).unwrap().len();
    db.flush().unwrap();
    assert_eq!(db.property_int_value("rocksdb.num-blob-files").unwrap(), Some(0));
    assert_eq!(std::fs::metadata(&log[0]).unwrap().len(), len, "a footer was written");
    let seen: Vec<Vec<u8>> = it.map(|r| r.unwrap().1.to_vec()).collect();
    assert_eq!(seen, (0..10).map(value).collect::<Vec<_>>());
    assert!(blob_files().is_empty(), "{:?}", blob_files());
    // No descriptor of this process still names the deleted file.
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        let open: Vec<PathBuf> =
            fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok()).collect();
        let name = log[0].to_string_lossy().into_owned();
        assert!(
            !open.iter().any(|p| p.to_string_lossy().starts_with(&name)),
            "{name} is still open"
        );
    }
    assert_eq!(db.get("gone3").unwrap(), None);
}

/// `verify` checks the blob files the WALs' indexes point into, which have no footer yet: a
/// torn tail is intact (recovery stops there), a damaged record before other records is not;
/// with the MANIFEST unreadable such a file is read without its footer, not called damaged.
/// `read_any_blob_file` (`strata dump-blob`) reads it; `read_blob_file` wants a footer.
#[test]
fn verify_checks_the_blob_files_written_at_commit() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    let model = fill(&db);
    fs.crash(CrashMode::ProcessKill);
    drop(db);
    let log = Path::new("/db").join(&files_with(&fs, "blob")[0]);
    let verify = || verify_db(&opts(&fs), Path::new("/db")).unwrap();
    let of = |checks: &[FileCheck]| -> Result<String, String> {
        let c = checks.iter().find(|c| c.path == log).expect("the WALs' blob file is checked");
        c.result.as_ref().map(String::clone).map_err(ToString::to_string)
    };
    let checks = verify();
    assert!(all_intact(&checks), "{checks:?}");
    let said = of(&checks).unwrap();
    assert!(said.starts_with("25 blob records") && said.contains("no footer yet"), "{said}");
    let f = read_any_blob_file(&fs, &log).unwrap();
    assert!(!f.finished && f.torn_tail_bytes == 0 && f.records.len() == 25);
    assert_eq!(f.records[0].value, value(0));
    assert!(read_blob_file(&fs, &log).is_err());

    // The last record cut short, as a crash may leave it.
    let data = fs.read_file(&log).unwrap();
    fs.write_file(&log, &data[..data.len() - 7]);
    let checks = verify();
    assert!(all_intact(&checks), "{checks:?}");
    let said = of(&checks).unwrap();
    assert!(said.starts_with("24 blob records") && said.contains("bytes of torn tail"), "{said}");

    // A flipped byte in a record with others after it: damage, at that record.
    let mut bad = data.clone();
    let at = f.records[12].offset;
    bad[at as usize + 20] ^= 1;
    fs.write_file(&log, &bad);
    let checks = verify();
    let e = of(&checks).unwrap_err();
    assert!(e.contains(&at.to_string()) && e.contains("checksum"), "{e}");
    assert_eq!(checks.iter().filter(|c| c.result.is_err()).count(), 1, "{checks:?}");

    // The MANIFEST unreadable: every file is checked, the footer-less one read as such.
    fs.write_file(&log, &data);
    let names = fs.list(Path::new("/db")).unwrap();
    let manifest = Path::new("/db").join(names.iter().find(|n| n.starts_with("MANIFEST")).unwrap());
    let kept = fs.read_file(&manifest).unwrap();
    fs.write_file(&manifest, b"not a manifest");
    let checks = verify();
    assert!(of(&checks).unwrap().contains("no footer yet"), "{checks:?}");
    assert!(!all_intact(&checks));
    fs.write_file(&manifest, &kept);
    assert_eq!(contents(&Db::open(&opts(&fs), "/db").unwrap()), model);
}
