//! `Db::get_pinned` returns the value where the read found it, without a copy:
//! two pinned reads of one key yield the same bytes at the same address (a copy would be a
//! fresh allocation each time), from the memtable and from a cached table block; the slice
//! stays valid after the memtable is flushed away; merge results are owned.

use strata::{Db, DbPinnableSlice, Options, PinnedSource, ReadOptions};

fn open(dir: &std::path::Path, cache_bytes: usize) -> Db {
    let mut opts = Options { block_cache_size: cache_bytes, ..Options::default() };
    opts.set_merge_operator_associative("concat", |_k, existing, ops| {
        let mut v = existing.map(<[u8]>::to_vec).unwrap_or_default();
        for op in ops {
            v.extend_from_slice(op);
        }
        Some(v)
    });
    Db::open(&opts, dir).unwrap()
}

fn addr(s: &DbPinnableSlice) -> *const u8 {
    s.as_ptr()
}

#[test]
fn memtable_values_are_pinned_in_place_and_outlive_the_flush() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 8 << 20);
    let value = vec![7u8; 1000];
    db.put(b"k", &value).unwrap();
    let a = db.get_pinned(b"k").unwrap().unwrap();
    let b = db.get_pinned(b"k").unwrap().unwrap();
    assert_eq!(a.source(), PinnedSource::Memtable);
    assert_eq!(addr(&a), addr(&b), "two pinned reads of one memtable entry share its bytes");
    assert_eq!(&*a, &value[..]);
    // The memtable is flushed and retired; the slice keeps it alive.
    db.flush().unwrap();
    db.put(b"k", b"newer").unwrap();
    assert_eq!(&*a, &value[..]);
    assert_eq!(&*db.get_pinned(b"k").unwrap().unwrap(), b"newer");
    assert!(db.get_pinned(b"missing").unwrap().is_none());
}

#[test]
fn table_values_are_pinned_in_the_cached_block() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 8 << 20);
    for i in 0..200u32 {
        db.put(format!("key{i:05}"), format!("value-{i}-{}", "x".repeat(50))).unwrap();
    }
    db.flush().unwrap();
    let a = db.get_pinned(b"key00042").unwrap().unwrap();
    let b = db.get_pinned(b"key00042").unwrap().unwrap();
    assert_eq!(a.source(), PinnedSource::Block);
    assert_eq!(addr(&a), addr(&b), "both slices point into the one cached block");
    assert_eq!(&*a, format!("value-42-{}", "x".repeat(50)).as_bytes());
    assert_eq!(db.get(b"key00042").unwrap().as_deref(), Some(&*a));
    // Other keys of the same block: the same block's bytes, at other offsets.
    let c = db.get_pinned(b"key00043").unwrap().unwrap();
    assert_eq!(c.source(), PinnedSource::Block);
    assert_ne!(addr(&a), addr(&c));
    // A read that does not fill the cache still pins the block it read (no copy), a fresh one.
    let ro = ReadOptions { fill_cache: false, ..ReadOptions::default() };
    let d = db.get_pinned_opt(b"key00042", &ro).unwrap().unwrap();
    assert_eq!(d.source(), PinnedSource::Block);
    assert_eq!(&*d, &*a);
}

#[test]
fn without_a_block_cache_each_read_pins_its_own_block() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 0);
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    let a = db.get_pinned(b"k").unwrap().unwrap();
    let b = db.get_pinned(b"k").unwrap().unwrap();
    assert_eq!((a.source(), b.source()), (PinnedSource::Block, PinnedSource::Block));
    assert_ne!(addr(&a), addr(&b), "two uncached reads are two blocks");
    assert_eq!((&*a, &*b), (&b"v"[..], &b"v"[..]));
}

#[test]
fn merge_results_are_owned_and_families_and_snapshots_work() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 8 << 20);
    db.put(b"m", b"a").unwrap();
    db.merge(b"m", b"b").unwrap();
    let snap = db.snapshot();
    db.merge(b"m", b"c").unwrap();
    let v = db.get_pinned(b"m").unwrap().unwrap();
    assert_eq!(v.source(), PinnedSource::Owned);
    assert_eq!(&*v, b"abc");
    let mut ro = ReadOptions::default();
    ro.set_snapshot(&snap);
    assert_eq!(&*db.get_pinned_opt(b"m", &ro).unwrap().unwrap(), b"ab");
    assert_eq!(&*snap.get_pinned(b"m").unwrap().unwrap(), b"ab");
    let cf = db.create_cf_handle("other", &Options::default()).unwrap();
    db.put_cf(&cf, b"k", b"in-other").unwrap();
    assert_eq!(&*db.get_pinned_cf(&cf, b"k").unwrap().unwrap(), b"in-other");
    assert!(db.get_pinned(b"k").unwrap().is_none());
    // Slices cross threads.
    let v = db.get_pinned_cf(&cf, b"k").unwrap().unwrap();
    std::thread::spawn(move || assert_eq!(&*v, b"in-other")).join().unwrap();
}
