//! `Checkpoint::create` (issue #18): a checkpoint taken while a writer runs opens as a DB equal
//! to the source at one sequence number; its tables are hard links (or copies where links
//! fail); it is independent of the source afterwards; a target that exists is refused and a
//! leftover temporary directory is cleaned up.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use strata::env::{FileLock, FileSystem, MemFs, RandomAccessFile, WritableFile};
use strata::{Checkpoint, Db, Error, IteratorMode, Options, Result};

fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.iterator(IteratorMode::Start)
        .map(|r| r.unwrap())
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect()
}

/// The DB after the first `n` writes of the writer below.
fn model(n: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    for i in 0..n {
        m.insert(format!("key{:03}", i % 97).into_bytes(), format!("value{i}").into_bytes());
    }
    m
}

#[test]
fn checkpoint_under_writes_is_the_db_at_one_sequence() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let opts =
        Options { create_if_missing: true, write_buffer_size: 16 << 10, ..Options::default() };
    let db = Arc::new(Db::open(&opts, &dir).unwrap());
    let base = db.latest_sequence_number();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            // One writer, one put per write: write i has sequence number base + i + 1.
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) || i < 2000 {
                db.put(format!("key{:03}", i % 97), format!("value{i}")).unwrap();
                i += 1;
            }
        })
    };
    let mut seen = Vec::new();
    for round in 0..4 {
        let cp_dir = tmp.path().join(format!("cp{round}"));
        let cp = Checkpoint::create(&db, &cp_dir).unwrap();
        assert!(cp.tables_copied == 0, "same filesystem: links");
        let copy = Db::open(&Options::default(), &cp_dir).unwrap();
        assert_eq!(copy.latest_sequence_number(), cp.sequence);
        assert_eq!(contents(&copy), model(cp.sequence - base), "checkpoint at {}", cp.sequence);
        // The checkpoint is a DB of its own: writing to it leaves the source alone.
        copy.put(b"only-in-checkpoint", b"x").unwrap();
        copy.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        drop(copy);
        assert_eq!(db.get(b"only-in-checkpoint").unwrap(), None);
        seen.push(cp.sequence);
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    // The source still opens whole after its tables were linked.
    let n = db.latest_sequence_number() - base;
    drop(db);
    let db = Db::open(&Options::default(), &dir).unwrap();
    assert_eq!(contents(&db), model(n));
}

#[test]
fn existing_target_is_refused_and_leftovers_are_removed() {
    let fs = MemFs::new();
    let opts = Options { fs: Arc::new(fs.clone()), create_if_missing: true, ..Options::default() };
    let db = Db::open(&opts, "/db").unwrap();
    db.put(b"a", b"1").unwrap();
    fs.create_dir_all(Path::new("/taken")).unwrap();
    let e = Checkpoint::create(&db, "/taken").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)) && e.to_string().contains("/taken"), "{e}");
    // What an interrupted checkpoint leaves: a temporary directory, never the target.
    fs.create_dir_all(Path::new("/cp.checkpoint-tmp")).unwrap();
    fs.write_file(Path::new("/cp.checkpoint-tmp/000005.sst"), b"half");
    let cp = Checkpoint::create(&db, "/cp").unwrap();
    assert!(!fs.exists(Path::new("/cp.checkpoint-tmp")));
    assert_eq!(cp.tables_linked, 1);
    let copy = Db::open(&opts, "/cp").unwrap();
    assert_eq!(copy.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    // A read-only DB cannot flush, so it makes no checkpoint.
    drop(copy);
    let ro = Db::open_read_only(&opts, "/cp").unwrap();
    assert!(matches!(Checkpoint::create(&ro, "/cp2"), Err(Error::NotSupported(_))));
}

/// MemFs without hard links, as a filesystem boundary between source and target makes it.
struct NoLinks(MemFs);

impl FileSystem for NoLinks {
    fn create(&self, p: &Path) -> Result<Box<dyn WritableFile>> {
        self.0.create(p)
    }
    fn open(&self, p: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.0.open(p)
    }
    fn rename(&self, a: &Path, b: &Path) -> Result<()> {
        self.0.rename(a, b)
    }
    fn remove(&self, p: &Path) -> Result<()> {
        self.0.remove(p)
    }
    fn list(&self, p: &Path) -> Result<Vec<String>> {
        self.0.list(p)
    }
    fn create_dir_all(&self, p: &Path) -> Result<()> {
        self.0.create_dir_all(p)
    }
    fn sync_dir(&self, p: &Path) -> Result<()> {
        self.0.sync_dir(p)
    }
    fn sync_file(&self, p: &Path) -> Result<()> {
        self.0.sync_file(p)
    }
    fn exists(&self, p: &Path) -> bool {
        self.0.exists(p)
    }
    fn file_size(&self, p: &Path) -> Result<u64> {
        self.0.file_size(p)
    }
    fn lock(&self, p: &Path) -> Result<Box<dyn FileLock>> {
        self.0.lock(p)
    }
    fn remove_dir(&self, p: &Path) -> Result<()> {
        self.0.remove_dir(p)
    }
}

#[test]
fn tables_are_copied_where_links_fail() {
    let mem = MemFs::new();
    let opts = Options {
        fs: Arc::new(NoLinks(mem.clone())),
        create_if_missing: true,
        // Four L0 tables would start a compaction merging them.
        disable_auto_compactions: true,
        ..Options::default()
    };
    let db = Db::open(&opts, "/db").unwrap();
    for i in 0..100 {
        db.put(format!("k{i}"), b"v").unwrap();
        if i % 40 == 0 {
            db.flush().unwrap();
        }
    }
    let cp = Checkpoint::create(&db, "/cp").unwrap();
    assert_eq!((cp.tables_linked, cp.tables_copied), (0, 4));
    let copy = Db::open(&opts, "/cp").unwrap();
    assert_eq!(contents(&copy), contents(&db));
}
