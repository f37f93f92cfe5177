//! `Db::live_files` names, sorted, every file a copy of the DB needs (CURRENT, the MANIFEST,
//! tables, blob files, the OPTIONS file, WALs), and a copy of them opens as the DB; `Db::get_approximate_sizes` follows the data in each range; after
//! `Db::cancel_all_background_work` flushes are refused while reads go on and the WAL keeps
//! the writes.

use std::path::Path;
use std::sync::Arc;

use strata::env::{FileSystem, MemFs};
use strata::{Db, Error, Options, Range, WaitForCompactOptions};

fn opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        create_if_missing: true,
        disable_auto_compactions: true,
        ..Options::default()
    }
}

#[test]
fn live_files_name_what_a_copy_needs() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    for i in 0..100 {
        db.put(format!("k{i:03}"), vec![b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.put(b"in-wal", b"x").unwrap();
    let live = db.live_file_names();
    assert!(live.contains(&"CURRENT".to_string()), "{live:?}");
    assert_eq!(live.iter().filter(|n| n.starts_with("MANIFEST-")).count(), 1, "{live:?}");
    assert_eq!(live.iter().filter(|n| n.ends_with("sst")).count(), 1, "{live:?}");
    assert!(live.iter().any(|n| n.ends_with("log")), "the WAL holding in-wal: {live:?}");
    for name in &live {
        assert!(fs.exists(&Path::new("/db").join(name)), "{name}");
    }
    let mut sorted = live.clone();
    sorted.sort();
    assert_eq!(live, sorted);
}

#[test]
fn a_copy_of_the_live_files_opens_as_the_db() {
    let fs = MemFs::new();
    let mut o = opts(&fs);
    o.set_enable_blob_files(true);
    o.set_min_blob_size(64);
    let db = Db::open(&o, "/db").unwrap();
    for i in 0..200 {
        db.put(format!("k{i:03}"), vec![b'a' + (i % 26) as u8; 100 + i]).unwrap();
    }
    db.flush().unwrap();
    db.put(b"small", b"in the WAL").unwrap();
    db.disable_file_deletions().unwrap();
    let live = db.live_file_names();
    assert!(live.iter().any(|n| n.contains(".blob")), "{live:?}");
    assert!(live.iter().any(|n| n.starts_with("OPTIONS-")), "{live:?}");
    fs.create_dir_all(Path::new("/copy")).unwrap();
    for name in &live {
        let bytes = fs.open(&Path::new("/db").join(name)).unwrap().read_all().unwrap();
        let mut f = fs.create(&Path::new("/copy").join(name)).unwrap();
        f.append(&bytes).unwrap();
        f.sync().unwrap();
    }
    db.enable_file_deletions().unwrap();
    let copy = Db::open(&o, "/copy").unwrap();
    let all = |d: &Db| -> Vec<Vec<u8>> {
        d.iterator(strata::IteratorMode::Start)
            .map(|kv| kv.map(|(k, v)| [&k[..], b"=", &v[..]].concat()).unwrap())
            .collect()
    };
    assert_eq!(all(&copy), all(&db));
    assert_eq!(all(&copy).len(), 201);
}

#[test]
fn approximate_sizes_follow_the_data() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    for i in 0..2000 {
        db.put(format!("k{i:05}"), vec![b'v'; 200]).unwrap();
    }
    db.flush().unwrap();
    let sizes = db.get_approximate_sizes(&[
        Range::new(b"k00000", b"k02000"),
        Range::new(b"k00000", b"k01000"),
        Range::new(b"a", b"b"),
        Range::new(b"z", b"a"),
    ]);
    let table: u64 = db.live_files_metadata().iter().map(|m| m.size).sum();
    assert!(sizes[0] > table * 9 / 10 && sizes[0] <= table, "{sizes:?} of {table}");
    assert!(sizes[1] > sizes[0] / 3 && sizes[1] < sizes[0] * 2 / 3, "{sizes:?}");
    assert_eq!(sizes[2], 0, "no data there");
    assert_eq!(sizes[3], 0, "an empty range");
}

#[test]
fn cancelled_background_work_refuses_flushes() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    db.put(b"a", b"1").unwrap();
    db.cancel_all_background_work(true);
    assert!(matches!(db.flush(), Err(Error::ShutdownInProgress)));
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]), "reads go on");
    drop(db);
    let db = Db::open(&opts(&fs), "/db").unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]), "the WAL kept it");
}

fn is_table(name: &str) -> bool {
    Path::new(name).extension().is_some_and(|x| x == "sst")
}

/// Regression: the purge after a compaction keeps the inputs a reader still holds, and
/// nothing deleted them once the reader was gone, so `wait_for_compact` returned with tables
/// on disk that no version needed.
#[test]
fn wait_for_compact_deletes_what_a_finished_reader_held() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    for round in 0..3 {
        for k in 0..10 {
            db.put(format!("k{k}"), format!("v{round}")).unwrap();
        }
        db.flush().unwrap();
    }
    let tables = || -> Vec<String> {
        let mut t: Vec<String> =
            fs.list(Path::new("/db")).unwrap().into_iter().filter(|n| is_table(n)).collect();
        t.sort();
        t
    };
    let live = || -> Vec<String> {
        let mut l: Vec<String> = db
            .live_file_names()
            .into_iter()
            .filter(|n| is_table(n))
            .map(|n| n.trim_start_matches('/').to_string())
            .collect();
        l.sort();
        l
    };
    let reader = db.raw_iterator();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(live().len(), 1);
    assert_eq!(tables().len(), 4, "the reader holds the three inputs");
    drop(reader);
    db.wait_for_compact(&WaitForCompactOptions::default()).unwrap();
    assert_eq!(tables(), live(), "no table only the reader needed is left");
}
