//! A `WriteBufferManager`'s count returns to exactly 0 once every DB sharing it is closed and
//! everything that held a memtable is gone: flushes, dropped column families, memtables kept
//! from WAL replay, and an iterator that outlives its DB. No byte is released twice (the
//! count would underflow and the test would see a huge number).

use std::sync::Arc;

use strata::env::MemFs;
use strata::{Db, IteratorMode, Options, WriteBufferManager};

fn opts(fs: &MemFs, m: &Arc<WriteBufferManager>) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 256 << 10,
        create_missing_column_families: true,
        write_buffer_manager: Some(m.clone()),
        ..Options::default()
    }
}

fn open(fs: &MemFs, path: &str, m: &Arc<WriteBufferManager>) -> Db {
    let o = opts(fs, m);
    let cfs = [strata::ColumnFamilyDescriptor::new("one", o.clone())];
    Db::open_cf_descriptors(&o, path, cfs).unwrap()
}

fn fill(db: &Db, n: u32) {
    let one = db.cf_handle("one").unwrap();
    for i in 0..n {
        db.put(format!("k{i:06}"), [i as u8; 300]).unwrap();
        db.put_cf(&one, format!("k{i:06}"), [i as u8; 200]).unwrap();
    }
}

#[test]
fn usage_returns_to_zero_after_every_db_closes() {
    let m = Arc::new(WriteBufferManager::new(32 << 20, None, false));
    let fs = MemFs::new();
    let (a, b) = (open(&fs, "/a", &m), open(&fs, "/b", &m));
    // A dropped family's memtables go with it (nothing else runs yet: no flush in flight).
    let extra = b.create_cf_handle("extra", &opts(&fs, &m)).unwrap();
    // Less than its write buffer: no switch, no flush in flight.
    for i in 0..200 {
        b.put_cf(&extra, format!("e{i}"), [1u8; 500]).unwrap();
    }
    let with_extra = m.memory_usage();
    b.drop_cf("extra").unwrap();
    drop(extra);
    // Its whole-key filter: the default ratio of the write buffer, in 8-byte words.
    let filter =
        ((256 << 10) as f64 * Options::default().memtable_bloom_size_ratio) as usize / 8 * 8;
    assert_eq!(
        with_extra - m.memory_usage(),
        4096 + (1 << 20) + filter,
        "the dropped family's memtable (first chunk, one standard chunk, filter) was released"
    );
    fill(&a, 3000); // several memtable switches (256 KiB buffers)
    fill(&b, 500);
    let used = m.memory_usage();
    assert!(used > 0 && m.mutable_memtable_memory_usage() <= used);

    // An iterator outliving its DB keeps its memtables (and their count) until it goes.
    let it = a.iterator(IteratorMode::Start);
    a.flush().unwrap();
    drop(a);
    assert!(m.memory_usage() > 0);
    assert_eq!(it.count(), 3000, "the iterator still reads its memtable");
    drop(b);
    assert_eq!(m.memory_usage(), 0, "everything released, nothing twice");
    assert_eq!(m.mutable_memtable_memory_usage(), 0);

    // Reopened with the WAL kept in memtables (no flush at recovery): they count, as
    // immutable memtables, until flushed (in the background, right after the open).
    let o = Options { avoid_flush_during_recovery: true, ..opts(&fs, &m) };
    let cfs = [strata::ColumnFamilyDescriptor::new("one", o.clone())];
    let b = Db::open_cf_descriptors(&o, "/b", cfs).unwrap();
    assert!(m.memory_usage() >= m.mutable_memtable_memory_usage());
    assert_eq!(b.get("k000499").unwrap(), Some(vec![243u8; 300]));
    b.flush().unwrap();
    b.flush_cf(&b.cf_handle("one").unwrap()).unwrap();
    // The flushed memtables are freed by whoever drops their last reference: soon.
    let t = std::time::Instant::now();
    while m.memory_usage() > 2 * (4096 + filter) {
        assert!(t.elapsed().as_secs() < 30, "flushed memtables never freed");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    drop(b);
    assert_eq!(m.memory_usage(), 0);
}
