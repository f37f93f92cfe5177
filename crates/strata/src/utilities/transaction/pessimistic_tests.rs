//! Pessimistic transactions: locks and their timeouts, shared locks, deadlock detection,
//! expiration, save points, two-phase commit across reopens and memtable switches, and the
//! concurrent bank and serializability checks of `tests.rs` run on locks.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::tests::{committed_history_is_conflict_serializable, transfers_keep_the_books_exact};
use super::{TransactionDb, TransactionDbOptions, TransactionOptions};
use crate::error::{Error, ErrorKind};
use crate::options::{Options, WriteOptions};
use crate::write_batch::WriteBatch;

fn open_with(dir: &std::path::Path, o: &Options, t: &TransactionDbOptions) -> TransactionDb {
    TransactionDb::open(&Options { create_if_missing: true, ..o.clone() }, t, dir).unwrap()
}

fn quick_timeouts() -> TransactionDbOptions {
    let mut t = TransactionDbOptions::new();
    t.set_txn_lock_timeout(20);
    t.set_default_lock_timeout(20);
    t
}

#[test]
fn a_locked_key_times_out_others_until_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_with(dir.path(), &Options::default(), &quick_timeouts());
    db.put(b"k1", b"v1").unwrap();
    let t1 = db.transaction();
    t1.put(b"k1", b"v2").unwrap();
    assert_eq!(db.get(b"k1").unwrap(), Some(b"v1".to_vec()));
    let t2 = db.transaction();
    let e = t2.put(b"k1", b"v3").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
    assert!(e.to_string().contains("\"k1\""), "{e}");
    // A write outside a transaction waits for the lock as well.
    assert_eq!(db.put(b"k1", b"v4").unwrap_err().kind(), ErrorKind::TimedOut);
    // Other keys are free.
    t2.put(b"k2", b"x").unwrap();
    t1.commit().unwrap();
    assert_eq!(db.get(b"k1").unwrap(), Some(b"v2".to_vec()));
    t2.put(b"k1", b"v3").unwrap();
    t2.commit().unwrap();
    assert_eq!(db.get(b"k1").unwrap(), Some(b"v3".to_vec()));
    db.put(b"k1", b"v4").unwrap();
}

#[test]
fn a_waiter_gets_the_lock_when_it_is_released() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = TransactionDbOptions::new();
    o.set_txn_lock_timeout(-1); // without limit
    let db = open_with(dir.path(), &Options::default(), &o);
    let t1 = db.transaction();
    t1.put(b"k", b"first").unwrap();
    let waiting = AtomicBool::new(false);
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            let t2 = db.transaction();
            waiting.store(true, Ordering::SeqCst);
            let seen = t2.get_for_update(b"k", true).unwrap();
            t2.put(b"k", b"second").unwrap();
            t2.commit().unwrap();
            seen
        });
        while !waiting.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(30));
        t1.commit().unwrap();
        assert_eq!(h.join().unwrap(), Some(b"first".to_vec()), "it read after the commit");
    });
    assert_eq!(db.get(b"k").unwrap(), Some(b"second".to_vec()));
}

#[test]
fn shared_locks_admit_readers_and_hold_off_writers() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_with(dir.path(), &Options::default(), &quick_timeouts());
    db.put(b"k", b"v").unwrap();
    let (r1, r2, w) = (db.transaction(), db.transaction(), db.transaction());
    r1.get_for_update(b"k", false).unwrap();
    r2.get_for_update(b"k", false).unwrap();
    assert_eq!(w.get_for_update(b"k", true).unwrap_err().kind(), ErrorKind::TimedOut);
    assert_eq!(w.put(b"k", b"w").unwrap_err().kind(), ErrorKind::TimedOut);
    // A reader that shares the lock with another cannot upgrade it either.
    assert_eq!(r1.put(b"k", b"r1").unwrap_err().kind(), ErrorKind::TimedOut);
    drop(r2);
    // Alone, it can.
    r1.put(b"k", b"r1").unwrap();
    assert_eq!(w.get_for_update(b"k", false).unwrap_err().kind(), ErrorKind::TimedOut);
    r1.commit().unwrap();
    w.put(b"k", b"w").unwrap();
    w.commit().unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"w".to_vec()));
}

#[test]
fn a_wait_that_closes_a_cycle_is_a_deadlock_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = TransactionDbOptions::new();
    o.set_txn_lock_timeout(5000);
    let db = open_with(dir.path(), &Options::default(), &o);
    let mut to = TransactionOptions::new();
    to.set_deadlock_detect(true);
    let w = WriteOptions::default();
    let (t1, t2) = (db.transaction_opt(&w, &to), db.transaction_opt(&w, &to));
    t1.put(b"a", b"1").unwrap();
    t2.put(b"b", b"2").unwrap();
    let waiting = AtomicBool::new(false);
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            waiting.store(true, Ordering::SeqCst);
            t1.put(b"b", b"1") // waits for t2
        });
        while !waiting.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(50));
        let started = Instant::now();
        let e = t2.put(b"a", b"2").unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2), "detected, not timed out");
        assert!(matches!(e, Error::Deadlock(_)), "{e}");
        assert_eq!(e.kind(), ErrorKind::Busy);
        let text = e.to_string();
        assert!(text.contains("\"a\"") && text.contains("\"b\""), "{text}");
        // The victim rolls back; the other goes on.
        t2.rollback().unwrap();
        h.join().unwrap().unwrap();
    });
    t1.commit().unwrap();
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get(b"b").unwrap(), Some(b"1".to_vec()));
}

#[test]
fn an_expired_transaction_loses_its_locks_and_cannot_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_with(dir.path(), &Options::default(), &TransactionDbOptions::new());
    let mut to = TransactionOptions::new();
    to.set_expiration(30);
    let t1 = db.transaction_opt(&WriteOptions::default(), &to);
    t1.put(b"k", b"old").unwrap();
    // Before its expiration the lock holds (a short timeout, shorter than the expiration).
    let mut quick = TransactionOptions::new();
    quick.set_lock_timeout(0);
    let t2 = db.transaction_opt(&WriteOptions::default(), &quick);
    assert_eq!(t2.put(b"k", b"new").unwrap_err().kind(), ErrorKind::TimedOut);
    // A waiter past the expiration takes it (the default 1 s timeout outlasts 30 ms).
    let t3 = db.transaction();
    t3.put(b"k", b"new").unwrap();
    t3.commit().unwrap();
    let e = t1.put(b"other", b"x").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Expired, "{e}");
    assert_eq!(t1.commit().unwrap_err().kind(), ErrorKind::Expired);
    assert_eq!(db.get(b"k").unwrap(), Some(b"new".to_vec()));
    // A transaction that commits before its expiration is not disturbed.
    let mut long = TransactionOptions::new();
    long.set_expiration(60_000);
    let t = db.transaction_opt(&WriteOptions::default(), &long);
    t.put(b"k", b"kept").unwrap();
    t.commit().unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"kept".to_vec()));
}

#[test]
fn a_snapshot_transaction_refuses_a_key_written_since() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_with(dir.path(), &Options::default(), &quick_timeouts());
    let mut to = TransactionOptions::new();
    to.set_snapshot(true);
    let t = db.transaction_opt(&WriteOptions::default(), &to);
    db.put(b"k2", b"v2").unwrap();
    assert!(t.snapshot().get(b"k2").unwrap().is_none());
    assert_eq!(t.get(b"k2").unwrap(), Some(b"v2".to_vec()));
    let e = t.get_for_update(b"k2", true).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    // The refused key's lock was let go.
    db.put(b"k2", b"again").unwrap();
    t.put(b"k3", b"mine").unwrap();
    t.commit().unwrap();
    // Without a snapshot the view reads the latest state.
    let t = db.transaction();
    let view = t.snapshot();
    assert_eq!(view.get(b"k9").unwrap(), None);
    db.put(b"k9", b"v").unwrap();
    assert_eq!(view.get(b"k9").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn save_points_release_the_locks_taken_since() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_with(dir.path(), &Options::default(), &quick_timeouts());
    let t = db.transaction();
    t.rollback().unwrap();
    t.put(b"k1", b"v1").unwrap();
    t.set_savepoint();
    t.put(b"k2", b"v2").unwrap();
    assert_eq!(db.put(b"k2", b"x").unwrap_err().kind(), ErrorKind::TimedOut);
    t.rollback_to_savepoint().unwrap();
    assert_eq!(t.get(b"k1").unwrap(), Some(b"v1".to_vec()));
    assert!(t.get(b"k2").unwrap().is_none());
    db.put(b"k2", b"x").unwrap();
    assert_eq!(db.put(b"k1", b"x").unwrap_err().kind(), ErrorKind::TimedOut);
    t.rollback().unwrap();
    assert!(t.get(b"k1").unwrap().is_none());
    db.put(b"k1", b"x").unwrap();
    t.commit().unwrap();
    assert_eq!(db.get(b"k1").unwrap(), Some(b"x".to_vec()));
}

#[test]
fn limits_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = quick_timeouts();
    o.set_max_num_locks(2);
    let db = open_with(dir.path(), &Options::default(), &o);
    let t = db.transaction();
    t.put(b"a", b"1").unwrap();
    t.put(b"b", b"1").unwrap();
    assert_eq!(t.put(b"c", b"1").unwrap_err().kind(), ErrorKind::Busy);
    t.commit().unwrap();
    let mut to = TransactionOptions::new();
    to.set_max_write_batch_size(64);
    let t = db.transaction_opt(&WriteOptions::default(), &to);
    t.put(b"a", [0u8; 20]).unwrap();
    assert_eq!(t.put(b"b", [0u8; 60]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    drop(t);
    assert_eq!(db.delete_range(b"a", b"z").unwrap_err().kind(), ErrorKind::NotSupported);
    let mut b = WriteBatch::new();
    b.put(b"x", b"1");
    b.delete_range(b"a", b"b");
    assert_eq!(db.write(b).unwrap_err().kind(), ErrorKind::NotSupported);
    assert_eq!(db.get(b"x").unwrap(), None, "a refused batch writes nothing");
    // Two-phase commit needs a name, and the WAL.
    let t = db.transaction();
    t.put(b"k", b"v").unwrap();
    assert_eq!(t.prepare().unwrap_err().kind(), ErrorKind::InvalidArgument);
    t.set_name(b"n").unwrap();
    assert_eq!(t.set_name(b"m").unwrap_err().kind(), ErrorKind::InvalidArgument);
    let other = db.transaction();
    assert_eq!(other.set_name(b"n").unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(other.set_name(b"").unwrap_err().kind(), ErrorKind::InvalidArgument);
    drop(t);
    other.set_name(b"n").unwrap(); // the name is free once its transaction is gone
    let no_wal = WriteOptions { disable_wal: true, ..WriteOptions::default() };
    let t = db.transaction_opt(&no_wal, &TransactionOptions::new());
    t.set_name(b"w").unwrap();
    t.put(b"k", b"v").unwrap();
    assert_eq!(t.prepare().unwrap_err().kind(), ErrorKind::InvalidArgument);
    drop(t);
    // skip_prepare(false): a named transaction must be prepared first.
    let mut strict = TransactionOptions::new();
    strict.set_skip_prepare(false);
    let t = db.transaction_opt(&WriteOptions::default(), &strict);
    t.set_name(b"s").unwrap();
    t.put(b"k", b"v").unwrap();
    assert_eq!(t.commit().unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(db.get(b"k").unwrap(), None);
}

#[test]
fn prepared_transactions_survive_reopens_and_memtable_switches_with_their_locks() {
    let dir = tempfile::tempdir().unwrap();
    // Small memtables: the writes below switch WALs and flush many times while the
    // transactions are prepared.
    let o = Options { write_buffer_size: 16 << 10, ..Options::default() };
    let sync = WriteOptions { sync: true, ..WriteOptions::default() };
    {
        let db = open_with(dir.path(), &o, &quick_timeouts());
        for (name, key) in [(&b"t1"[..], &b"k1"[..]), (b"t2", b"k2"), (b"t3", b"k3")] {
            let t = db.transaction_opt(&sync, &TransactionOptions::new());
            t.put(key, name).unwrap();
            t.put(b"shared-prefix-".iter().chain(key).copied().collect::<Vec<_>>(), b"x").unwrap();
            t.set_name(name).unwrap();
            t.prepare().unwrap();
            assert_eq!(t.put(b"more", b"x").unwrap_err().kind(), ErrorKind::InvalidArgument);
            if name == b"t3" {
                t.commit().unwrap(); // resolved before the reopen
            }
            // t1 and t2 are dropped prepared: they stay prepared in the WAL.
        }
        let t = db.transaction();
        assert_eq!(t.set_name(b"t1").unwrap_err().kind(), ErrorKind::InvalidArgument);
        for i in 0..3000u32 {
            db.put(format!("filler{i:05}"), [7u8; 64]).unwrap();
        }
        db.flush().unwrap();
        assert_eq!(db.get(b"k1").unwrap(), None);
        assert_eq!(db.get(b"k3").unwrap(), Some(b"t3".to_vec()));
    }
    for round in 0..2 {
        let db = open_with(dir.path(), &o, &quick_timeouts());
        // Their locks are held again.
        assert_eq!(db.put(b"k1", b"x").unwrap_err().kind(), ErrorKind::TimedOut);
        assert_eq!(db.put(b"k2", b"x").unwrap_err().kind(), ErrorKind::TimedOut);
        db.put(b"k3", b"t3").unwrap();
        let mut txns = db.prepared_transactions();
        txns.sort_by_key(|t| t.get_name());
        let names: Vec<_> = txns.iter().map(|t| t.get_name().unwrap()).collect();
        assert_eq!(names, vec![b"t1".to_vec(), b"t2".to_vec()], "round {round}");
        assert_eq!(txns[0].get(b"k1").unwrap(), Some(b"t1".to_vec()), "its writes are seen");
        assert!(db.prepared_transactions().is_empty(), "handed out once");
        if round == 0 {
            continue; // dropped unresolved: prepared again at the next open
        }
        let mut it = txns.into_iter();
        it.next().unwrap().commit().unwrap();
        it.next().unwrap().rollback().unwrap();
        assert_eq!(db.get(b"k1").unwrap(), Some(b"t1".to_vec()));
        assert_eq!(db.get(b"shared-prefix-k1").unwrap(), Some(b"x".to_vec()));
        assert_eq!(db.get(b"k2").unwrap(), None);
        db.put(b"k2", b"free").unwrap();
    }
    let db = open_with(dir.path(), &o, &quick_timeouts());
    assert!(db.prepared_transactions().is_empty());
    assert_eq!(db.get(b"k1").unwrap(), Some(b"t1".to_vec()));
    assert_eq!(db.get(b"k2").unwrap(), Some(b"free".to_vec()));
    // A name is free again once resolved.
    let t = db.transaction();
    t.set_name(b"t1").unwrap();
    t.prepare().unwrap(); // empty
    t.commit().unwrap();
}

fn retry_on_locks(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::Busy)
}

#[test]
fn concurrent_transfers_on_locks_keep_the_books_exact() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_with(dir.path(), &Options::default(), &TransactionDbOptions::new());
    let mut to = TransactionOptions::new();
    to.set_deadlock_detect(true);
    let w = WriteOptions::default();
    transfers_keep_the_books_exact(&db, &|| db.transaction_opt(&w, &to), retry_on_locks);
}

#[test]
fn committed_transactions_on_locks_are_conflict_serializable() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = TransactionDbOptions::new();
    o.set_txn_lock_timeout(5); // no deadlock detection: cycles end in timeouts
    let db = open_with(dir.path(), &Options::default(), &o);
    committed_history_is_conflict_serializable(&db, &|| db.transaction(), retry_on_locks);
}

#[test]
fn a_prepared_transaction_spans_column_families_and_commits_them_together() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        create_if_missing: true,
        create_missing_column_families: true,
        ..Options::default()
    };
    {
        let db = TransactionDb::open_cf(&o, &quick_timeouts(), dir.path(), ["a", "b"]).unwrap();
        let (a, b) = (db.cf_handle("a").unwrap(), db.cf_handle("b").unwrap());
        let t = db.transaction();
        t.put_cf(&a, b"k", b"in a").unwrap();
        t.put_cf(&b, b"k", b"in b").unwrap();
        t.put(b"k", b"in default").unwrap();
        assert_eq!(db.put_cf(&b, b"k", b"x").unwrap_err().kind(), ErrorKind::TimedOut);
        db.put_cf(&a, b"other", b"free").unwrap(); // a family's other keys are not locked
        t.set_name(b"cross").unwrap();
        t.prepare().unwrap();
    }
    let db = TransactionDb::open_cf(&o, &quick_timeouts(), dir.path(), ["a", "b"]).unwrap();
    let (a, b) = (db.cf_handle("a").unwrap(), db.cf_handle("b").unwrap());
    assert_eq!(db.put_cf(&a, b"k", b"x").unwrap_err().kind(), ErrorKind::TimedOut);
    let mut txns = db.prepared_transactions();
    assert_eq!(txns.len(), 1);
    let t = txns.pop().unwrap();
    assert_eq!(t.get_cf(&b, b"k").unwrap(), Some(b"in b".to_vec()));
    let snap = db.snapshot();
    t.commit().unwrap();
    assert_eq!(db.get_cf(&a, b"k").unwrap(), Some(b"in a".to_vec()));
    assert_eq!(db.get_cf(&b, b"k").unwrap(), Some(b"in b".to_vec()));
    assert_eq!(db.get(b"k").unwrap(), Some(b"in default".to_vec()));
    assert_eq!(snap.get_cf(&b, b"k").unwrap(), None, "none of it before the commit");
    db.put_cf(&a, b"k", b"after").unwrap();
}

#[test]
fn a_transaction_rebuilt_from_a_batch_locks_its_keys_and_writes_them() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        create_if_missing: true,
        create_missing_column_families: true,
        ..Options::default()
    };
    let db = TransactionDb::open_cf(&o, &quick_timeouts(), dir.path(), ["c"]).unwrap();
    let cf = db.cf_handle("c").unwrap();
    db.put(b"gone", b"x").unwrap();
    let mut b = WriteBatch::new();
    b.put(b"a", b"1");
    b.put_cf(&cf, b"a", b"in c");
    b.delete(b"gone");
    let t = db.transaction();
    t.rebuild_from_writebatch(&b).unwrap();
    assert_eq!(db.put(b"a", b"x").unwrap_err().kind(), ErrorKind::TimedOut);
    assert_eq!(t.get_cf(&cf, b"a").unwrap(), Some(b"in c".to_vec()));
    assert_eq!(t.get(b"gone").unwrap(), None);
    t.commit().unwrap();
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get_cf(&cf, b"a").unwrap(), Some(b"in c".to_vec()));
    assert_eq!(db.get(b"gone").unwrap(), None);
    let mut r = WriteBatch::new();
    r.delete_range(b"a", b"b");
    assert_eq!(
        db.transaction().rebuild_from_writebatch(&r).unwrap_err().kind(),
        ErrorKind::NotSupported
    );
}
