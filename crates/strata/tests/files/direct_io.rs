//! Direct I/O (`docs/design.md`, "File I/O of tables"): `use_direct_reads` and
//! `use_direct_io_for_flush_and_compaction` on the OS file system. Tables written by flushes and
//! compactions with `O_DIRECT` (blob files too) and read back with it hold exactly what a model
//! (BTreeMap) holds, through point reads, iterators and a reopen; a file system without direct
//! I/O fails the open with a clear error. Skipped, with a message, where the temporary
//! directory's file system refuses `O_DIRECT`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata::env::{FileLock, FileSystem, OsFs, RandomAccessFile, WritableFile};
use strata::{Db, Error, IteratorMode, Options};

fn options(reads: bool, writes: bool) -> Options {
    Options {
        fs: Arc::new(OsFs),
        use_direct_reads: reads,
        use_direct_io_for_flush_and_compaction: writes,
        write_buffer_size: 64 << 10,
        target_file_size_base: 128 << 10,
        max_bytes_for_level_base: 512 << 10,
        block_cache_size: 64 << 10,
        ..Options::default()
    }
}

fn direct_io_supported(dir: &std::path::Path) -> bool {
    match Db::open(&options(true, true), dir.join("probe")) {
        Ok(_) => true,
        Err(e) => {
            eprintln!("skipped: {e}");
            false
        }
    }
}

#[test]
fn tables_written_and_read_with_direct_io_match_a_model() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_supported(dir.path()) {
        return;
    }
    for (reads, writes) in [(true, true), (true, false), (false, true)] {
        let path = dir.path().join(format!("db-{reads}-{writes}"));
        let mut model = BTreeMap::new();
        let db = Db::open(&options(reads, writes), &path).unwrap();
        for i in 0..6_000u32 {
            let k = format!("key{:06}", (i * 7919) % 4_000);
            let v = format!("{i}:{}", "x".repeat((i % 300) as usize));
            if i % 11 == 0 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        db.flush().unwrap();
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        check(&db, &model, &format!("({reads}, {writes})"));
        drop(db);
        let db = Db::open(&options(reads, writes), &path).unwrap();
        check(&db, &model, &format!("({reads}, {writes}) after reopen"));
    }
}

/// Tables of several megabytes: a direct writer hands its full windows to the I/O pool while it
/// fills the next, and a compaction reads each input's next window in the background
/// (`env/io_pool.rs`, `sstable/readahead.rs`). Flushes of overlapping keys, then compactions
/// that merge them: what they wrote holds exactly what the model holds.
#[test]
fn multi_megabyte_tables_written_and_compacted_in_the_background_match_a_model() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_supported(dir.path()) {
        return;
    }
    let opts = Options {
        write_buffer_size: 4 << 20,
        target_file_size_base: 4 << 20,
        max_bytes_for_level_base: 16 << 20,
        compaction_readahead_size: 2 << 20,
        ..options(true, true)
    };
    rounds_match_a_model(&opts, &dir.path().join("db"), 4, 12_000, |round, i| {
        let k = format!("key{:06}", (i * 7919 + round * 13) % 4_000);
        (k, format!("{round}:{i}:{}", "v".repeat(200 + (i % 900) as usize)))
    });
}

/// Blob files (`BlobOptions`) are table files to the I/O options: written and read with
/// `O_DIRECT`, including the readahead of a scan over them and garbage collection's reads.
#[test]
fn blob_files_written_and_read_with_direct_io_match_a_model() {
    let dir = tempfile::tempdir().unwrap();
    if !direct_io_supported(dir.path()) {
        return;
    }
    let opts = Options {
        blob: strata::BlobOptions {
            enable_blob_files: true,
            min_blob_size: 100,
            blob_file_size: 256 << 10,
            enable_blob_gc: true,
            blob_gc_age_cutoff: 0.5,
            ..strata::BlobOptions::default()
        },
        ..options(true, true)
    };
    let db = rounds_match_a_model(&opts, &dir.path().join("db"), 3, 4_000, |round, i| {
        let k = format!("key{:06}", (i * 7919 + round) % 4_000);
        (k, format!("{round}:{i}:{}", "b".repeat((i % 400) as usize)))
    });
    assert!(db.property_int_value("rocksdb.num-blob-files").unwrap().unwrap() > 0);
}

/// Writes `rounds` rounds of `per_round` puts of `entry(round, i)` into a new DB at `path`,
/// each round flushed, compacts everything, and checks the DB against a model after the
/// compaction and after a reopen; returns the reopened DB.
fn rounds_match_a_model(
    opts: &Options,
    path: &std::path::Path,
    rounds: u32,
    per_round: u32,
    entry: impl Fn(u32, u32) -> (String, String),
) -> Db {
    let mut model = BTreeMap::new();
    let db = Db::open(opts, path).unwrap();
    for round in 0..rounds {
        for i in 0..per_round {
            let (k, v) = entry(round, i);
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        db.flush().unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    check(&db, &model, "after the compaction");
    drop(db);
    let db = Db::open(opts, path).unwrap();
    check(&db, &model, "after reopen");
    db
}

/// Point reads of every seventh key (present or not) and a full scan, against the model.
fn check(db: &Db, model: &BTreeMap<String, String>, what: &str) {
    for i in (0..4_000u32).step_by(7) {
        let k = format!("key{i:06}");
        let got = db.get(&k).unwrap();
        assert_eq!(got.as_deref(), model.get(&k).map(String::as_bytes), "{k} {what}");
    }
    let scanned = db.iterator(IteratorMode::Start).collect::<strata::Result<Vec<_>>>().unwrap();
    assert_eq!(scanned.len(), model.len(), "{what}");
    for ((k, v), (mk, mv)) in scanned.iter().zip(model) {
        assert_eq!((&k[..], &v[..]), (mk.as_bytes(), mv.as_bytes()), "{what}");
    }
}

/// The OS file system without its direct I/O: what a file system that has none looks like.
struct NoDirectIo;

impl FileSystem for NoDirectIo {
    fn create(&self, p: &Path) -> strata::Result<Box<dyn WritableFile>> {
        OsFs.create(p)
    }
    fn open(&self, p: &Path) -> strata::Result<Arc<dyn RandomAccessFile>> {
        OsFs.open(p)
    }
    fn rename(&self, from: &Path, to: &Path) -> strata::Result<()> {
        OsFs.rename(from, to)
    }
    fn remove(&self, p: &Path) -> strata::Result<()> {
        OsFs.remove(p)
    }
    fn list(&self, dir: &Path) -> strata::Result<Vec<String>> {
        OsFs.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> strata::Result<()> {
        OsFs.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> strata::Result<()> {
        OsFs.sync_dir(dir)
    }
    fn sync_file(&self, p: &Path) -> strata::Result<()> {
        OsFs.sync_file(p)
    }
    fn exists(&self, p: &Path) -> bool {
        OsFs.exists(p)
    }
    fn file_size(&self, p: &Path) -> strata::Result<u64> {
        OsFs.file_size(p)
    }
    fn lock(&self, p: &Path) -> strata::Result<Box<dyn FileLock>> {
        OsFs.lock(p)
    }
    fn remove_dir(&self, dir: &Path) -> strata::Result<()> {
        OsFs.remove_dir(dir)
    }
}

#[test]
fn a_file_system_without_direct_io_fails_the_open_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    for (reads, writes) in [(true, false), (false, true)] {
        let opts = Options { fs: Arc::new(NoDirectIo), ..options(reads, writes) };
        match Db::open(&opts, &path) {
            Err(Error::NotSupported(msg)) => {
                assert!(msg.contains("no direct I/O") && msg.contains("use_direct_reads"), "{msg}");
            }
            Err(e) => panic!("expected NotSupported, got {e}"),
            Ok(_) => panic!("opened with direct I/O on a file system without it"),
        }
    }
    // Without direct I/O the same file system works, and the probe left nothing behind.
    let db =
        Db::open(&Options { fs: Arc::new(NoDirectIo), ..options(false, false) }, &path).unwrap();
    db.put(b"k", b"v").unwrap();
    assert!(!std::fs::read_dir(&path).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .contains("PROBE")));
}
