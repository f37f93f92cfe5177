//! `WriteBufferManager` stalls: with `allow_stall`, once the memtables of the DBs sharing the
//! manager hold the whole budget, writers of every DB wait until memory is freed, count it as
//! a stall of its own kind, and resume. An iterator pins a flushed memtable (its memory is
//! freed only when the iterator goes), which makes the stall deterministic: writes of both
//! DBs stop, and dropping the iterator lets them finish. A DB whose own memtable must be
//! flushed to free memory never waits for itself.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::env::MemFs;
use strata::{Db, IteratorMode, Options, WriteBufferManager};

const BUDGET: usize = 4 << 20;

fn open(fs: &MemFs, path: &str, m: &Arc<WriteBufferManager>) -> Arc<Db> {
    let o = Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 256 << 20,
        max_write_buffer_number: 4,
        write_buffer_manager: Some(m.clone()),
        ..Options::default()
    };
    Arc::new(Db::open(&o, path).unwrap())
}

fn value(i: u32) -> Vec<u8> {
    let mut v = format!("{i:08}").into_bytes();
    v.resize(1000, (i % 251) as u8);
    v
}

/// Writes keys `from..to` on a thread; the channel says when it is done.
fn writer(db: &Arc<Db>, from: u32, to: u32) -> mpsc::Receiver<strata::Result<()>> {
    let (tx, rx) = mpsc::channel();
    let db = db.clone();
    std::thread::spawn(move || {
        let r = (from..to).try_for_each(|i| db.put(format!("k{i:08}"), value(i)));
        drop(db); // before the answer: the test's own drop must be the DB's last
        let _ = tx.send(r);
    });
    rx
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(30), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn stops(db: &Db) -> u64 {
    db.property_int_value("strata.write-buffer-manager-stops").unwrap().unwrap()
}

#[test]
fn writers_of_every_db_wait_for_a_pinned_memtable_and_resume_when_it_goes() {
    let m = Arc::new(WriteBufferManager::new(BUDGET, None, true));
    let fs = MemFs::new();
    let (a, b) = (open(&fs, "/a", &m), open(&fs, "/b", &m));
    // Pin the memtable that will be switched out (an iterator holds its super version).
    a.put("first", "x").unwrap();
    let pin = a.iterator(IteratorMode::Start);
    // 8 MiB of writes cannot fit while the pinned memtable (about 7/8 of the budget once
    // switched) stays.
    let wa = writer(&a, 0, 8000);
    wait_until("a's writes to stop", || stops(&a) > 0);
    // a's memtable was switched and flushed, yet its memory is held by the iterator.
    wait_until("the pinned memtable's flush", || {
        a.property_int_value("rocksdb.num-immutable-mem-table").unwrap() == Some(0)
    });
    assert!(m.memory_usage() >= BUDGET, "usage {}", m.memory_usage());
    assert!(wa.try_recv().is_err(), "a's writer is stalled");
    // b's writers are held back too: a small write waits.
    let wb = writer(&b, 0, 1);
    assert!(wb.recv_timeout(Duration::from_millis(300)).is_err(), "b's write waits");
    assert!(stops(&b) > 0);
    assert_eq!(a.property_int_value("rocksdb.is-write-stopped").unwrap(), Some(1));
    // The iterator still reads what it pinned.
    let seen: Vec<_> = pin.map(|r| r.unwrap().0.to_vec()).collect();
    assert_eq!(seen, vec![b"first".to_vec()]);
    // (the iterator was consumed and dropped above: its memtable is freed)
    wa.recv_timeout(Duration::from_secs(60)).expect("a's writer finished").unwrap();
    wb.recv_timeout(Duration::from_secs(60)).expect("b's writer finished").unwrap();
    for i in (0..8000).step_by(211) {
        assert_eq!(a.get(format!("k{i:08}")).unwrap(), Some(value(i)));
    }
    assert_eq!(b.get(format!("k{:08}", 0)).unwrap(), Some(value(0)));
    let stats = a.property_value("rocksdb.stats").unwrap().unwrap();
    assert!(stats.contains("write-buffer-manager-limit-stops: "), "{stats}");
    assert!(!stats.contains("write-buffer-manager-limit-stops: 0"), "{stats}");
    drop((a, b));
    assert_eq!(m.memory_usage(), 0);
}

#[test]
fn a_db_whose_own_memtables_hold_the_budget_flushes_them_and_never_deadlocks() {
    // A tiny budget, several writers, two column families: the DB that must flush to free
    // memory is the writer's own.
    let m = Arc::new(WriteBufferManager::new(2 << 20, None, true));
    let fs = MemFs::new();
    let db = open(&fs, "/solo", &m);
    let cf_opts = Options { write_buffer_size: 256 << 20, ..Options::default() };
    let cf = db.create_cf_handle("other", &cf_opts).unwrap();
    let done: Vec<_> = (0..3u32).map(|t| writer(&db, t * 3000, t * 3000 + 3000)).collect();
    let (tx, rx) = mpsc::channel();
    {
        let (db, cf) = (db.clone(), cf.clone());
        std::thread::spawn(move || {
            let r = (0..3000u32).try_for_each(|i| db.put_cf(&cf, format!("c{i:08}"), value(i)));
            drop((db, cf));
            let _ = tx.send(r);
        });
    }
    for rx in done.iter().chain(std::iter::once(&rx)) {
        rx.recv_timeout(Duration::from_secs(120)).expect("writer finished (no deadlock)").unwrap();
    }
    for i in (0..9000).step_by(101) {
        assert_eq!(db.get(format!("k{i:08}")).unwrap(), Some(value(i)));
    }
    assert_eq!(db.get_cf(&cf, format!("c{:08}", 2999)).unwrap(), Some(value(2999)));
    drop(cf);
    drop(db);
    assert_eq!(m.memory_usage(), 0);
}
