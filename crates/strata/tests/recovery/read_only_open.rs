//! `Db::open_read_only`: it sees the DB as of its open, WAL contents included,
//! while a read-write `Db` keeps writing; it changes nothing on disk (names, sizes, mtimes);
//! it refuses writes; a missing or damaged DB fails clearly.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use strata::env::{FileSystem, MemFs};
use strata::{Db, Error, IteratorMode, Options, PrefixRange, ReadOptions, WriteBatch};

/// Name -> (size, mtime) of every entry of `dir`. An entry that vanishes between the
/// directory read and its `stat` is left out: with a writer open, a background compaction
/// may delete its inputs at any moment.
fn listing(dir: &Path) -> BTreeMap<String, (u64, SystemTime)> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            let m = match e.metadata() {
                Ok(m) => m,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
                Err(err) => panic!("stat {}: {err}", e.path().display()),
            };
            Some((e.file_name().to_string_lossy().into_owned(), (m.len(), m.modified().unwrap())))
        })
        .collect()
}

fn small_memtables() -> Options {
    Options { write_buffer_size: 32 << 10, ..Options::default() }
}

#[test]
fn sees_tables_and_wal_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::open(&Options { create_if_missing: true, ..small_memtables() }, &dir).unwrap();
    for i in 0..2000u32 {
        db.put(format!("k{i:05}"), format!("v{i}")).unwrap();
    }
    db.flush().unwrap();
    db.put(b"only-in-wal", b"w").unwrap();
    db.delete(b"k00007").unwrap();
    let before = listing(&dir);
    // The writer is still open (it holds the lock): the read-only open needs none.
    let ro = Db::open_read_only(&Options::default(), &dir).unwrap();
    assert!(ro.is_read_only());
    assert_eq!(ro.get(b"only-in-wal").unwrap().as_deref(), Some(&b"w"[..]));
    assert_eq!(ro.get(b"k00007").unwrap(), None);
    assert_eq!(ro.get(b"k01999").unwrap().as_deref(), Some(&b"v1999"[..]));
    assert_eq!(ro.iterator(IteratorMode::Start).count(), 2000);
    assert_eq!(ro.latest_sequence_number(), db.latest_sequence_number());
    // Its live files are the writer's as of the open (the MANIFEST named by CURRENT).
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    assert!(
        ro.live_file_names().contains(&current.trim_end().to_string()),
        "{:?}",
        ro.live_file_names()
    );
    assert_eq!(ro.live_files_metadata(), db.live_files_metadata());
    // Writes made after the open are not seen.
    db.put(b"later", b"x").unwrap();
    assert_eq!(ro.get(b"later").unwrap(), None);
    // Every change is refused.
    for r in [
        ro.put(b"a", b"b"),
        ro.delete(b"a"),
        ro.write(WriteBatch::new()),
        ro.flush(),
        ro.flush_wal(true),
        ro.compact_range(None::<&[u8]>, None::<&[u8]>),
    ] {
        assert!(matches!(r, Err(Error::NotSupported(_))), "{r:?}");
    }
    drop(ro);
    drop(db);
    // After the writer closed: a read-only open and close leave every file as it was.
    let before_ro = listing(&dir);
    let ro = Db::open_read_only(&Options::default(), &dir).unwrap();
    assert_eq!(ro.get(b"later").unwrap().as_deref(), Some(&b"x"[..]));
    assert_eq!(ro.iterator(IteratorMode::Start).count(), 2001, "2000 - k00007 + two");
    drop(ro);
    assert_eq!(listing(&dir), before_ro);
    assert!(before.keys().any(|n| n.ends_with("sst")), "{before:?}");
}

#[test]
fn a_concurrent_writer_is_seen_at_one_point() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Arc::new(
        Db::open(&Options { create_if_missing: true, ..small_memtables() }, &dir).unwrap(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            // Batch i sets a/i and b/i to i and overwrites "last": a reader at any point sees
            // a prefix of the batches, each whole.
            let mut i = 0u32;
            while !stop.load(Ordering::Relaxed) || i < 3000 {
                let mut b = WriteBatch::new();
                b.put(format!("a/{i:06}"), i.to_string());
                b.put(format!("b/{i:06}"), i.to_string());
                b.put(b"last", i.to_string());
                db.write(b).unwrap();
                i += 1;
            }
            i
        })
    };
    // Many opens, while the writer rolls WALs: one may read a WAL's end before the writer
    // finishes it and then find the next WAL saying it was synced whole (a race the open
    // retries, once took for damage).
    let mut opens = 0;
    while opens < 40 {
        let ro = Db::open_read_only(&Options::default(), &dir).unwrap();
        let a: Vec<_> = prefixed(&ro, b"a/");
        let b: Vec<_> = prefixed(&ro, b"b/");
        assert_eq!(a.len(), b.len(), "every batch whole");
        for (n, (k, v)) in a.iter().enumerate() {
            assert_eq!(**k, *format!("a/{n:06}").as_bytes(), "a prefix of the batches");
            assert_eq!(**v, *n.to_string().as_bytes());
        }
        let last = ro.get(b"last").unwrap();
        match a.len() {
            0 => assert_eq!(last, None),
            n => assert_eq!(last.unwrap(), (n - 1).to_string().into_bytes()),
        }
        opens += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().unwrap();
    drop(db);
    let ro = Db::open_read_only(&Options::default(), &dir).unwrap();
    assert_eq!(prefixed(&ro, b"a/").len(), written as usize);
}

#[test]
fn missing_or_damaged_db_fails_clearly() {
    let fs = MemFs::new();
    let opts = Options { fs: Arc::new(fs.clone()), ..Options::default() };
    let e = Db::open_read_only(&opts, "/nothing").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(e.to_string().contains("/nothing"), "{e}");
    fs.create_dir_all(Path::new("/empty")).unwrap();
    let e = Db::open_read_only(&opts, "/empty").unwrap_err();
    assert!(e.to_string().contains("no CURRENT"), "{e}");
    assert!(fs.paths().is_empty(), "nothing created: {:?}", fs.paths());

    drop(Db::open(&Options { create_if_missing: true, ..opts.clone() }, "/db").unwrap());
    fs.write_file(Path::new("/db/CURRENT"), b"garbage\n");
    let e = Db::open_read_only(&opts, "/db").unwrap_err();
    assert!(e.is_corruption(), "{e}");
    assert!(e.to_string().contains("CURRENT"), "{e}");
}

/// A key and its value as iterators yield them.
type Pair = (Box<[u8]>, Box<[u8]>);

/// Every pair whose key starts with `prefix`.
fn prefixed(db: &Db, prefix: &[u8]) -> Vec<Pair> {
    let mut ro = ReadOptions::default();
    ro.set_iterate_range(PrefixRange(prefix));
    db.iterator_opt(IteratorMode::Start, ro).map(|r| r.unwrap()).collect()
}
