//! The compaction threads' side of L0 batching (`compaction/l0_batch.rs`): a compaction that
//! waits for a batch does not start while the wait holds, and starts by itself, with no
//! write to wake it, once files stop coming; the files a batch gathered under pressure are
//! then carried over (merged in L0), and go down with the next batch.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::compaction::l0_batch::L0Pace;
use crate::env::MemFs;
use crate::{Db, Options};

fn l0_files(db: &Db) -> usize {
    db.inner.default_cf.current_super_version().version.levels[0].len()
}

fn options(batching: bool) -> Options {
    Options {
        fs: Arc::new(MemFs::new()),
        create_if_missing: true,
        write_buffer_size: 1 << 20,
        level0_file_num_compaction_trigger: 2,
        level0_slowdown_writes_trigger: 8,
        level0_stop_writes_trigger: 16,
        level0_compaction_batching: batching,
        ..Options::default()
    }
}

/// A base level to rewrite, then a pace of a file every `interval_secs` and compactions far
/// too slow to keep up (a batch of half the slowdown trigger, 4 files), then two L0 files.
/// Returns the DB and the numbers of the files below L0 before those two came.
fn two_l0_files_under_pressure(batching: bool, interval_secs: f64) -> (Db, Vec<u64>) {
    two_l0_files_under_pace(batching, interval_secs, 1000.0)
}

/// [`two_l0_files_under_pressure`] with compactions measured at `speed` bytes per second.
fn two_l0_files_under_pace(batching: bool, interval_secs: f64, speed: f64) -> (Db, Vec<u64>) {
    let db = Db::open(&options(batching), "/db").unwrap();
    let value = vec![b'v'; 100];
    for i in 0..2000u32 {
        db.put(format!("key{i:05}"), &value).unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(l0_files(&db), 0);
    let base = base_files(&db);
    {
        let mut st = db.inner.state.lock();
        let cs = st.cfs.get_mut(&0).unwrap();
        cs.l0_pace = L0Pace::measured(Instant::now(), interval_secs, speed);
    }
    for round in 0..2u32 {
        for i in (round..2000).step_by(7) {
            db.put(format!("key{i:05}"), format!("round {round}")).unwrap();
        }
        db.flush().unwrap();
    }
    (db, base)
}

fn wait_for_l0_below(db: &Db, files: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while l0_files(db) >= files {
        assert!(Instant::now() < deadline, "L0 still holds {} files", l0_files(db));
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_l0_batch_holds_while_files_come_and_ends_by_itself_when_they_stop() {
    // Seeded at 3 s between files, the two quick flushes bring the mean to about 1.5 s: the
    // batch holds for some 3 s after the second one.
    let (db, _) = two_l0_files_under_pressure(true, 3.0);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(l0_files(&db), 2, "the compaction started at the trigger");
    assert_eq!(db.get("key00007").unwrap().as_deref(), Some(&b"round 0"[..]));
    assert_eq!(db.get("key00008").unwrap().as_deref(), Some(&b"round 1"[..]));
    // Nothing else is written: the compaction thread wakes by itself when the wait ends.
    wait_for_l0_below(&db, 2);
    assert_eq!(db.get("key00007").unwrap().as_deref(), Some(&b"round 0"[..]));
    assert_eq!(db.get("key00008").unwrap().as_deref(), Some(&b"round 1"[..]));
    assert_eq!(db.get("key00009").unwrap().as_deref(), Some(&vec![b'v'; 100][..]));
}

fn base_files(db: &Db) -> Vec<u64> {
    let v = db.inner.default_cf.current_super_version().version.clone();
    v.levels[1..].iter().flatten().map(|f| f.number.0).collect()
}

#[test]
fn l0_files_gathered_under_pressure_are_carried_over_when_writes_pause() {
    let (db, base) = two_l0_files_under_pressure(true, 1.0);
    wait_for_l0_below(&db, 2);
    // Merged in L0: one file there, the base level untouched.
    assert_eq!(l0_files(&db), 1);
    assert_eq!(base_files(&db), base);
    assert_eq!(db.get("key00007").unwrap().as_deref(), Some(&b"round 0"[..]));
    assert_eq!(db.get("key00008").unwrap().as_deref(), Some(&b"round 1"[..]));
    assert_eq!(db.get("key00009").unwrap().as_deref(), Some(&vec![b'v'; 100][..]));
    // The next file brings L0 to the trigger again, in a fresh pace (no pressure measured):
    // the merged file goes down with it.
    db.inner.state.lock().cfs.get_mut(&0).unwrap().l0_pace = L0Pace::default();
    db.put("key00009", "later").unwrap();
    db.flush().unwrap();
    db.wait_for_compact(&crate::options::WaitForCompactOptions::default()).unwrap();
    assert_eq!(l0_files(&db), 0);
    assert_ne!(base_files(&db), base);
    assert_eq!(db.get("key00007").unwrap().as_deref(), Some(&b"round 0"[..]));
    assert_eq!(db.get("key00008").unwrap().as_deref(), Some(&b"round 1"[..]));
    assert_eq!(db.get("key00009").unwrap().as_deref(), Some(&b"later"[..]));
}

#[test]
fn a_carried_over_l0_drains_by_itself_when_writes_stay_paused() {
    // Files every 0.1 s, compactions reading 40 KB/s: the two files carry over once the
    // flushes stop, and with nothing written after them the merged file goes down about as
    // long after as its compaction takes (a second or two here).
    let (db, base) = two_l0_files_under_pace(true, 0.1, 40_000.0);
    // The drain is a compaction to come: the wait covers it (with or without the carry-over
    // done by then).
    db.wait_for_compact(&crate::options::WaitForCompactOptions::default()).unwrap();
    assert_eq!(l0_files(&db), 0, "drained");
    assert_ne!(base_files(&db), base);
    assert_eq!(db.get("key00007").unwrap().as_deref(), Some(&b"round 0"[..]));
    assert_eq!(db.get("key00008").unwrap().as_deref(), Some(&b"round 1"[..]));
    assert_eq!(db.get("key00009").unwrap().as_deref(), Some(&vec![b'v'; 100][..]));
    let log = db.inner.opts.fs.open(std::path::Path::new("/db/LOG")).unwrap().read_all().unwrap();
    let log = String::from_utf8_lossy(&log);
    let carried = log.find("L0 carry-over").expect("carried over");
    assert!(log.find("L0 drain").is_some_and(|d| d > carried), "{log}");
}

#[test]
fn the_drain_takes_the_writes_still_in_the_memtable_along() {
    // As above, with writes after the last flush: they go down with the drain instead of
    // staying behind as the one L0 file a flush or the next open's WAL replay would make.
    let (db, base) = two_l0_files_under_pace(true, 0.1, 40_000.0);
    for i in (3..2000u32).step_by(11) {
        db.put(format!("key{i:05}"), "unflushed").unwrap();
    }
    db.wait_for_compact(&crate::options::WaitForCompactOptions::default()).unwrap();
    assert_eq!(l0_files(&db), 0, "drained");
    assert_ne!(base_files(&db), base);
    assert!(db.inner.state.lock().cfs[&0].mem.is_empty(), "the memtable went down too");
    let log = db.inner.opts.fs.open(std::path::Path::new("/db/LOG")).unwrap().read_all().unwrap();
    let log = String::from_utf8_lossy(&log);
    assert!(log.contains("L0 drain: flushing the memtables"), "{log}");
    let fs = db.inner.opts.fs.clone();
    drop(db);
    let db = Db::open(&Options { fs, ..options(true) }, "/db").unwrap();
    assert_eq!(l0_files(&db), 0, "nothing left to replay into L0");
    assert_eq!(db.get("key00014").unwrap().as_deref(), Some(&b"unflushed"[..]));
    assert_eq!(db.get("key00007").unwrap().as_deref(), Some(&b"round 0"[..]));
    assert_eq!(db.get("key00009").unwrap().as_deref(), Some(&vec![b'v'; 100][..]));
}

/// `n` puts of 100-byte values from key `from` on.
fn put_range(db: &Db, from: u32, n: u32) {
    for i in from..from + n {
        db.put(format!("key{i:05}"), vec![b'w'; 100]).unwrap();
    }
}

fn memtables(db: &Db) -> (usize, bool) {
    let st = db.inner.state.lock();
    (st.cfs[&0].imm.len(), st.cfs[&0].mem.is_empty())
}

/// Regression: `wait_for_compact` waited for every immutable memtable, also one waiting for
/// more to merge with, which an idle DB never flushes: it never returned.
#[test]
fn wait_for_compact_returns_with_a_memtable_waiting_to_merge() {
    let opts = Options {
        min_write_buffer_number_to_merge: 2,
        max_write_buffer_number: 4,
        ..options(false)
    };
    let db = Db::open(&opts, "/db").unwrap();
    put_range(&db, 0, 9000);
    assert_eq!(memtables(&db).0, 1, "one memtable switched, waiting for a second");
    let wait = crate::options::WaitForCompactOptions {
        timeout: Some(Duration::from_secs(20)),
        ..Default::default()
    };
    db.wait_for_compact(&wait).unwrap();
    assert_eq!(memtables(&db).0, 1, "still waiting to merge");
}

#[test]
fn the_drain_flushes_memtables_waiting_to_merge() {
    let mut opts = options(true);
    opts.min_write_buffer_number_to_merge = 2;
    opts.max_write_buffer_number = 4;
    let db = Db::open(&opts, "/db").unwrap();
    let value = vec![b'v'; 100];
    for i in 0..2000u32 {
        db.put(format!("key{i:05}"), &value).unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    db.inner.state.lock().cfs.get_mut(&0).unwrap().l0_pace =
        L0Pace::measured(Instant::now(), 0.1, 40_000.0);
    for round in 0..2u32 {
        for i in (round..2000).step_by(7) {
            db.put(format!("key{i:05}"), format!("round {round}")).unwrap();
        }
        db.flush().unwrap();
    }
    // One memtable switched and waiting for a second to merge with, and writes after it.
    put_range(&db, 0, 9000);
    assert_eq!(memtables(&db).0, 1);
    let wait = crate::options::WaitForCompactOptions {
        timeout: Some(Duration::from_secs(60)),
        ..Default::default()
    };
    db.wait_for_compact(&wait).unwrap();
    assert_eq!(l0_files(&db), 0, "drained");
    assert_eq!(memtables(&db), (0, true), "every memtable went down too");
    assert_eq!(db.get("key08999").unwrap().as_deref(), Some(&vec![b'w'; 100][..]));
}

#[test]
fn without_batching_l0_compacts_at_the_trigger_under_the_same_pace() {
    let (db, base) = two_l0_files_under_pressure(false, 3.0);
    wait_for_l0_below(&db, 2);
    db.wait_for_compact(&crate::options::WaitForCompactOptions::default()).unwrap();
    // Into the base level, nothing carried over.
    assert_eq!(l0_files(&db), 0);
    assert_ne!(base_files(&db), base);
}

#[test]
fn wait_for_compact_returns_once_a_held_batch_is_compacted() {
    // A short hold (seeded 1 s between files): `wait_for_compact` sees the L0 compaction
    // pending and returns once the compaction thread, woken by the hold's end, ran it.
    let (db, _) = two_l0_files_under_pressure(true, 1.0);
    db.wait_for_compact(&crate::options::WaitForCompactOptions::default()).unwrap();
    assert!(l0_files(&db) < 2);
}

/// A trivial move frees nothing itself, but the purge after it may delete tables that an
/// earlier compaction left to a reader (the iterator that held them has gone since), freeing
/// their readers: the heap is trimmed then too, or their readers' memory would stay resident
/// when a reader held the old version at a rewrite's end and the trivial move after it purged
/// those tables.
#[test]
fn a_trivial_move_whose_purge_deleted_tables_trims_the_heap() {
    assert!(super::frees_memory(true, 0), "a rewrite frees its blocks and inputs");
    assert!(super::frees_memory(false, 3), "the purge freed three tables' readers");
    assert!(!super::frees_memory(false, 0), "a trivial move, nothing purged: no trim");
}

/// Regression: a purge (`Db::wait_for_compact`'s, say) that had the obsolete tables out of the
/// list while the compaction thread looked saw the thread go to sleep with no look scheduled,
/// and put back the ones an iterator held without waking it: they stayed on disk after the
/// iterator went, until the next flush or compaction.
#[test]
fn tables_put_back_by_a_purge_are_looked_at_again() {
    let db = Db::open(&options(false), "/db").unwrap();
    db.put("a", "1").unwrap();
    db.put("z", "1").unwrap();
    db.flush().unwrap();
    let it = db.iterator(crate::IteratorMode::Start);
    for round in 2..4 {
        db.put("a", format!("{round}")).unwrap();
        db.put("z", format!("{round}")).unwrap();
        db.flush().unwrap();
    }
    db.wait_for_compact(&crate::options::WaitForCompactOptions::default()).unwrap();
    // A purge's window: the list is empty while the thread looks, and it sleeps with nothing
    // scheduled (it looks within OBSOLETE_RETRY_MIN, then at most OBSOLETE_RETRY_MAX later).
    let taken = std::mem::take(&mut db.inner.state.lock().obsolete_tables);
    let fs = db.inner.opts.fs.clone();
    let on_disk = || taken.iter().filter(|(_, p)| fs.exists(p)).count();
    assert!(!taken.is_empty() && on_disk() == taken.len(), "held by the iterator");
    db.inner.bg_cv.notify_all();
    std::thread::sleep(super::OBSOLETE_RETRY_MIN * 8);
    crate::db::obsolete::keep_for_later(&db.inner, taken.clone());
    drop(it);
    let deadline = Instant::now() + super::OBSOLETE_RETRY_MAX;
    while on_disk() > 0 {
        assert!(Instant::now() < deadline, "{taken:?}: {} still on disk", on_disk());
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"3"[..]));
}
