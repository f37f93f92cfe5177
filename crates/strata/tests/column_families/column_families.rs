//! Column families: creation, listing, reopening, per-family options and flushes, atomic
//! cross-family batches, drops with live readers, WAL retention across families, and the
//! errors a wrong handle or a missing family gives.

use std::path::Path;
use std::sync::Arc;

use strata::env::{CrashMode, MemFs};
use strata::merge_operator::StringAppendOperator;
use strata::{ColumnFamilyDescriptor, Db, Error, IteratorMode, Options, WriteBatch, WriteOptions};

fn mem_opts(fs: &MemFs) -> Options {
    Options { fs: Arc::new(fs.clone()), ..Options::default() }
}

fn wal_count(fs: &MemFs, dir: &Path) -> usize {
    fs.paths()
        .iter()
        .filter(|p| p.parent() == Some(dir) && p.extension().is_some_and(|e| e == "log"))
        .count()
}

#[test]
fn families_are_created_listed_and_reopened() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let opts = mem_opts(&fs);
    {
        let db = Db::open(&opts, dir).unwrap();
        let a = db.create_cf_handle("a", &opts).unwrap();
        let b = db.create_cf_handle("b", &opts).unwrap();
        assert!(matches!(db.create_cf("a", &opts), Err(Error::InvalidArgument(_))));
        db.put(b"k", b"default").unwrap();
        db.put_cf(&a, b"k", b"in a").unwrap();
        db.put_cf(&b, b"k", b"in b").unwrap();
        db.flush_cf(&a).unwrap(); // a's value in a table, b's and default's in the WAL
        assert_eq!(db.get_cf(&a, b"k").unwrap().as_deref(), Some(&b"in a"[..]));
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"default"[..]));
    }
    assert_eq!(Db::list_cf(&opts, dir).unwrap(), ["default", "a", "b"]);
    // Every family must be opened.
    let e = Db::open(&opts, dir).unwrap_err();
    assert!(e.to_string().contains("not opened: a, b"), "{e}");
    let e = Db::open_cf(&opts, dir, ["a"]).unwrap_err();
    assert!(e.to_string().contains("not opened: b"), "{e}");
    // A family the DB lacks is refused, or created when asked.
    let e = Db::open_cf(&opts, dir, ["a", "b", "c"]).unwrap_err();
    assert!(e.to_string().contains("do not exist"), "{e}");
    let create = Options { create_missing_column_families: true, ..opts.clone() };
    let db = Db::open_cf(&create, dir, ["a", "b", "c"]).unwrap();
    let (a, b, c) =
        (db.cf_handle("a").unwrap(), db.cf_handle("b").unwrap(), db.cf_handle("c").unwrap());
    assert_eq!(db.get_cf(&a, b"k").unwrap().as_deref(), Some(&b"in a"[..]));
    assert_eq!(db.get_cf(&b, b"k").unwrap().as_deref(), Some(&b"in b"[..]));
    assert_eq!(db.get_cf(&c, b"k").unwrap(), None);
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"default"[..]));
    assert!(db.cf_handle("nope").is_none());
    drop(db);
    assert_eq!(Db::list_cf(&opts, dir).unwrap(), ["default", "a", "b", "c"]);
}

#[test]
fn each_family_keeps_its_options_and_flushes_alone() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let opts = mem_opts(&fs);
    let small = Options { write_buffer_size: 16 << 10, ..opts.clone() };
    let db = Db::open_cf_descriptors(
        &Options { create_missing_column_families: true, ..opts.clone() },
        dir,
        [ColumnFamilyDescriptor::new("small", small)],
    )
    .unwrap();
    let small = db.cf_handle("small").unwrap();
    for i in 0..2_000u32 {
        db.put_cf(&small, format!("k{i:05}"), [1u8; 100]).unwrap();
        db.put(format!("k{i:05}"), [2u8; 100]).unwrap();
    }
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    let files = |cf: &strata::ColumnFamily| {
        db.live_files_metadata().iter().filter(|f| f.column_family_name == cf.name()).count()
    };
    // 16 KiB memtables: the small family flushed many times; default (64 MiB) never.
    assert!(files(&small) > 0);
    assert_eq!(files(&db.cf_handle("default").unwrap()), 0);
    assert_eq!(db.property_int_value("strata.num-files-at-level0").unwrap(), Some(0));
    let small_entries =
        db.property_int_value_cf(&small, "strata.estimate-num-keys").unwrap().unwrap();
    assert!(small_entries >= 2_000, "{small_entries}");
    // A family's iterator sees its own keys only.
    assert_eq!(db.iterator_cf(&small, IteratorMode::Start).count(), 2_000);
    let v = db.get_cf(&small, b"k01999").unwrap().unwrap();
    assert_eq!(v, [1u8; 100]);
    assert_eq!(db.get(b"k01999").unwrap().unwrap(), [2u8; 100]);
}

#[test]
fn a_cross_family_batch_is_atomic_across_power_loss() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let opts = Options { create_missing_column_families: true, ..mem_opts(&fs) };
    let names = ["x", "y", "z"];
    {
        let db = Db::open_cf(&opts, dir, names).unwrap();
        let cfs: Vec<_> = names.iter().map(|n| db.cf_handle(n).unwrap()).collect();
        for i in 0..500u32 {
            let mut b = WriteBatch::new();
            for cf in &cfs {
                b.put_cf(cf, format!("k{}", i % 50), i.to_le_bytes());
            }
            b.put(format!("k{}", i % 50), i.to_le_bytes());
            let sync = i == 300;
            db.write_opt(b, &WriteOptions { sync, ..WriteOptions::default() }).unwrap();
            if i == 200 {
                db.flush_cf(&cfs[1]).unwrap();
            }
        }
        fs.crash(CrashMode::PowerLoss);
    }
    let db = Db::open_cf(&opts, dir, names).unwrap();
    let mut seen = Vec::new();
    for k in 0..50 {
        let key = format!("k{k}");
        let vals: Vec<Option<Vec<u8>>> = std::iter::once(db.get(&key).unwrap())
            .chain(names.iter().map(|n| db.get_cf(&db.cf_handle(n).unwrap(), &key).unwrap()))
            .collect();
        assert!(vals.iter().all(|v| *v == vals[0]), "key {key}: families disagree: {vals:?}");
        let v = u32::from_le_bytes(vals[0].clone().unwrap().try_into().unwrap());
        seen.push(v);
    }
    // Everything up to the synced write survived.
    assert!(seen.iter().all(|&v| v >= 300 - 49), "{seen:?}");
}

#[test]
fn a_dropped_family_stays_readable_through_old_handles_and_iterators() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let opts = mem_opts(&fs);
    let db = Db::open(&opts, dir).unwrap();
    let t = db.create_cf_handle("t", &opts).unwrap();
    for i in 0..100u32 {
        db.put_cf(&t, format!("k{i:03}"), b"v").unwrap();
    }
    db.flush_cf(&t).unwrap();
    db.put_cf(&t, b"k999", b"in memtable").unwrap();
    let it = db.iterator_cf(&t, IteratorMode::Start);
    db.drop_cf("t").unwrap();
    assert!(db.cf_handle("t").is_none());
    assert!(matches!(db.drop_cf("t"), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.drop_cf("default"), Err(Error::InvalidArgument(_))));
    // The iterator and the old handle still read the data as of the drop.
    assert_eq!(it.count(), 101);
    assert_eq!(db.get_cf(&t, b"k999").unwrap().as_deref(), Some(&b"in memtable"[..]));
    // Writes to it are refused; a family of the same name is a new, empty one.
    assert!(matches!(db.put_cf(&t, b"a", b"b"), Err(Error::InvalidArgument(_))));
    let t2 = db.create_cf_handle("t", &opts).unwrap();
    assert_eq!(db.get_cf(&t2, b"k000").unwrap(), None);
    db.put_cf(&t2, b"new", b"1").unwrap();
    drop((t, t2));
    drop(db);
    let db = Db::open_cf(&opts, dir, ["t"]).unwrap();
    let t = db.cf_handle("t").unwrap();
    assert_eq!(db.get_cf(&t, b"k000").unwrap(), None);
    assert_eq!(db.get_cf(&t, b"new").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.iterator_cf(&t, IteratorMode::Start).count(), 1);
    // The dropped family's tables are gone from disk after the reopen.
    let live: Vec<String> = db.live_files_metadata().into_iter().map(|f| f.name).collect();
    let tables = fs
        .paths()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .filter(|p| !live.iter().any(|n| p.ends_with(n)))
        .count();
    assert_eq!(tables, 0);
}

#[test]
fn a_wal_is_kept_until_every_family_flushed_past_it() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let opts = Options { write_buffer_size: 32 << 10, ..mem_opts(&fs) };
    {
        let db = Db::open(&opts, dir).unwrap();
        let idle = db.create_cf_handle("idle", &opts).unwrap();
        db.put_cf(&idle, b"kept", b"only in the first WAL").unwrap();
        for i in 0..3_000u32 {
            db.put(format!("k{i:05}"), [0u8; 100]).unwrap();
        }
        db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
        // Default flushed many times; the WAL holding `kept` stays, and the ones after it.
        assert!(wal_count(&fs, dir) > 2, "{}", wal_count(&fs, dir));
        db.flush_cf(&idle).unwrap();
        db.put(b"one more", b"x").unwrap();
        db.flush().unwrap();
        // The flush thread deletes obsolete WALs just after the flush `flush()` waits for is
        // installed: wait for that deletion (bounded), not for a fixed count at once.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while wal_count(&fs, dir) > 2 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(wal_count(&fs, dir) <= 2, "{}", wal_count(&fs, dir));
        db.put_cf(&idle, b"late", b"x").unwrap();
        fs.crash(CrashMode::ProcessKill);
    }
    let db = Db::open_cf(&opts, dir, ["idle"]).unwrap();
    let idle = db.cf_handle("idle").unwrap();
    assert_eq!(db.get_cf(&idle, b"kept").unwrap().as_deref(), Some(&b"only in the first WAL"[..]));
    assert_eq!(db.get_cf(&idle, b"late").unwrap().as_deref(), Some(&b"x"[..]));
    assert_eq!(db.get(b"k02999").unwrap().map(|v| v.len()), Some(100));
}

#[test]
fn merge_operators_and_handles_are_per_family() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let db = Db::open(&opts, "/db").unwrap();
    let merging =
        Options { merge_operator: Some(Arc::new(StringAppendOperator::new(b""))), ..opts.clone() };
    let m = db.create_cf_handle("m", &merging).unwrap();
    let plain = db.create_cf_handle("plain", &opts).unwrap();
    db.merge_cf(&m, b"k", b"a").unwrap();
    db.merge_cf(&m, b"k", b"b").unwrap();
    assert_eq!(db.get_cf(&m, b"k").unwrap().as_deref(), Some(&b"ab"[..]));
    // Refused at the call where the family has no operator, alone or in a batch.
    assert!(matches!(db.merge_cf(&plain, b"k", b"a"), Err(Error::NotSupported(_))));
    let mut b = WriteBatch::new();
    b.put_cf(&m, b"x", b"1");
    b.merge_cf(&plain, b"k", b"a");
    assert!(matches!(db.write(b), Err(Error::NotSupported(_))));
    assert_eq!(db.get_cf(&m, b"x").unwrap(), None, "nothing of the refused batch is applied");
    // A handle of another DB is refused.
    let other = Db::open(&opts, "/other").unwrap();
    let foreign = other.create_cf_handle("m", &opts).unwrap();
    assert!(matches!(db.get_cf(&foreign, b"k"), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.put_cf(&foreign, b"k", b"v"), Err(Error::InvalidArgument(_))));
    let mut it = db.iterator_cf(&foreign, IteratorMode::Start);
    assert!(matches!(it.next(), Some(Err(Error::InvalidArgument(_)))));
    assert!(it.next().is_none());
}
