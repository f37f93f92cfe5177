//! Optimistic transactions: own writes seen, conflicts caught at commit, save points, and
//! concurrent bank transfers whose committed history keeps every balance exact.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{OptimisticTransactionDb, OptimisticTransactionOptions, Transaction};
use crate::db::{Db, Direction, IteratorMode};
use crate::error::Error;
use crate::options::{Options, ReadOptions, WriteOptions};

fn open(dir: &std::path::Path) -> OptimisticTransactionDb {
    let o = Options { create_if_missing: true, ..Options::default() };
    OptimisticTransactionDb::open(&o, dir).unwrap()
}

#[test]
fn a_transaction_sees_its_writes_and_writes_them_only_on_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.put(b"a", b"1").unwrap();
    let t = db.transaction();
    t.put(b"b", b"2").unwrap();
    t.delete(b"a").unwrap();
    assert_eq!(t.get(b"b").unwrap(), Some(b"2".to_vec()));
    assert_eq!(t.get(b"a").unwrap(), None);
    let seen: Vec<_> = t.iterator(IteratorMode::Start).map(|r| r.unwrap()).collect();
    assert_eq!(seen, vec![(b"b".to_vec().into(), b"2".to_vec().into())]);
    let back: Vec<_> =
        t.iterator(IteratorMode::From(b"z", Direction::Reverse)).map(|r| r.unwrap().0).collect();
    assert_eq!(back, vec![b"b".to_vec().into()]);
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get(b"b").unwrap(), None);
    t.commit().unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
    // Dropped without a commit: nothing.
    let t = db.transaction();
    t.put(b"c", b"3").unwrap();
    drop(t);
    assert_eq!(db.get(b"c").unwrap(), None);
}

#[test]
fn a_key_read_for_update_and_written_meanwhile_fails_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.put(b"x", b"0").unwrap();
    let t = db.transaction();
    assert_eq!(t.get_for_update(b"x", true).unwrap(), Some(b"0".to_vec()));
    t.put(b"y", b"1").unwrap();
    db.put(b"x", b"other").unwrap();
    let err = t.commit().unwrap_err();
    assert!(matches!(err, Error::Busy(_)), "{err}");
    assert!(err.to_string().contains("\"x\""), "{err}");
    assert_eq!(db.get(b"y").unwrap(), None, "nothing of a failed commit is written");
    // A plain get does not track: a write meanwhile does not matter.
    let t = db.transaction();
    t.get(b"x").unwrap();
    t.put(b"y", b"1").unwrap();
    db.put(b"x", b"again").unwrap();
    t.commit().unwrap();
    // Without a snapshot a key is checked from when it is first tracked...
    db.put(b"k", b"before").unwrap();
    let t = db.transaction();
    t.put(b"k", b"mine").unwrap();
    t.commit().unwrap();
    // ... with one, from the beginning.
    let mut o = OptimisticTransactionOptions::new();
    o.set_snapshot(true);
    let t = db.transaction_opt(&WriteOptions::default(), &o);
    db.put(b"k", b"theirs").unwrap();
    t.put(b"k", b"mine").unwrap();
    assert!(matches!(t.commit(), Err(Error::Busy(_))));
    assert_eq!(db.get(b"k").unwrap(), Some(b"theirs".to_vec()));
}

#[test]
fn a_range_deletion_meanwhile_is_a_conflict_and_a_flush_makes_it_try_again() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.put(b"k5", b"v").unwrap();
    let t = db.transaction();
    t.get_for_update(b"k5", false).unwrap();
    db.delete_range(b"k0", b"k9").unwrap();
    assert!(matches!(t.commit(), Err(Error::Busy(_))));
    // Writes since the snapshot flushed away: the check cannot tell, and says so.
    let mut o = OptimisticTransactionOptions::new();
    o.set_snapshot(true);
    let t = db.transaction_opt(&WriteOptions::default(), &o);
    t.put(b"a", b"1").unwrap();
    db.put(b"unrelated", b"x").unwrap();
    db.flush().unwrap();
    let err = t.commit().unwrap_err();
    assert!(matches!(err, Error::TryAgain(_)), "{err}");
    // Flushed before the transaction began: nothing to tell, it commits.
    let t = db.transaction_opt(&WriteOptions::default(), &o);
    t.put(b"a", b"1").unwrap();
    t.commit().unwrap();
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
}

#[test]
fn save_points_undo_writes_and_tracking() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db.transaction();
    t.put(b"a", b"1").unwrap();
    t.set_savepoint();
    t.put(b"a", b"2").unwrap();
    t.put(b"b", b"2").unwrap();
    assert_eq!(t.get(b"a").unwrap(), Some(b"2".to_vec()));
    t.rollback_to_savepoint().unwrap();
    assert_eq!(t.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(t.get(b"b").unwrap(), None);
    assert!(t.rollback_to_savepoint().unwrap_err().to_string().contains("no save point"));
    // "b" is no longer tracked: a write to it does not fail the commit.
    db.put(b"b", b"theirs").unwrap();
    t.commit().unwrap();
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get(b"b").unwrap(), Some(b"theirs".to_vec()));
}

#[test]
fn a_commit_spans_column_families_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options { create_if_missing: true, ..Options::default() };
    let db = OptimisticTransactionDb::open(&o, dir.path()).unwrap();
    let cf = db.create_cf_handle("other", &o).unwrap();
    let t = db.transaction();
    t.put(b"k", b"default").unwrap();
    t.put_cf(&cf, b"k", b"other").unwrap();
    assert_eq!(t.get_cf(&cf, b"k").unwrap(), Some(b"other".to_vec()));
    let snap = db.snapshot();
    t.commit().unwrap();
    let ro = ReadOptions { snapshot: Some(snap.into_handle()), ..ReadOptions::default() };
    assert_eq!(db.get_cf_opt(&cf, b"k", &ro).unwrap(), None);
    assert_eq!(db.get_cf(&cf, b"k").unwrap(), Some(b"other".to_vec()));
    // A conflict in one family fails the whole commit.
    let t = db.transaction();
    t.get_for_update_cf(&cf, b"k", true).unwrap();
    t.put(b"k", b"new").unwrap();
    db.put_cf(&cf, b"k", b"theirs").unwrap();
    assert!(matches!(t.commit(), Err(Error::Busy(_))));
    assert_eq!(db.get(b"k").unwrap(), Some(b"default".to_vec()));
}

/// Threads move money between accounts, each transfer a transaction reading both balances
/// for update; conflicts (whatever `retry` accepts) are retried. A lost update would break the
/// books: every account must end at its opening balance plus the committed transfers' deltas,
/// and the total never changes (checked by readers meanwhile, at snapshots). Returns how many
/// attempts were retried.
pub(super) fn transfers_keep_the_books_exact<'db, DB>(
    db: &'db Db,
    begin: &(dyn Fn() -> Transaction<'db, DB> + Sync),
    retry: fn(&Error) -> bool,
) -> u64 {
    const ACCOUNTS: u64 = 8;
    const THREADS: u64 = 4;
    const TRANSFERS: u64 = 300;
    let acct = |i: u64| format!("acct{i}").into_bytes();
    for i in 0..ACCOUNTS {
        db.put(acct(i), 1000u64.to_le_bytes()).unwrap();
    }
    let deltas: Vec<AtomicU64> = (0..ACCOUNTS).map(|_| AtomicU64::new(0)).collect();
    let conflicts = AtomicU64::new(0);
    let balance = |v: Option<Vec<u8>>| u64::from_le_bytes(v.unwrap().try_into().unwrap());
    // The writers start together, so their transfers overlap however the threads are
    // scheduled.
    let start = std::sync::Barrier::new(THREADS as usize);
    std::thread::scope(|s| {
        for th in 0..THREADS {
            let (deltas, conflicts, start) = (&deltas, &conflicts, &start);
            s.spawn(move || {
                start.wait();
                let mut seed = th * 7919 + 1;
                let mut rnd = move || {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed
                };
                for _ in 0..TRANSFERS {
                    let (from, to) = (rnd() % ACCOUNTS, rnd() % ACCOUNTS);
                    if from == to {
                        continue;
                    }
                    let amount = rnd() % 50;
                    loop {
                        let attempt = (|| {
                            let t = begin();
                            let a = balance(t.get_for_update(acct(from), true)?);
                            let b = balance(t.get_for_update(acct(to), true)?);
                            let amount = amount.min(a);
                            t.put(acct(from), (a - amount).to_le_bytes())?;
                            t.put(acct(to), (b + amount).to_le_bytes())?;
                            t.commit().map(|()| amount)
                        })();
                        match attempt {
                            Ok(amount) => {
                                deltas[from as usize].fetch_sub(amount, Ordering::SeqCst);
                                deltas[to as usize].fetch_add(amount, Ordering::SeqCst);
                                break;
                            }
                            Err(e) if retry(&e) => {
                                conflicts.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            });
        }
        // A reader: at any snapshot, the total is whole.
        s.spawn(move || {
            for _ in 0..200 {
                let snap = db.snapshot();
                let ro =
                    ReadOptions { snapshot: Some(snap.into_handle()), ..ReadOptions::default() };
                let total: u64 =
                    (0..ACCOUNTS).map(|i| balance(db.get_opt(acct(i), &ro).unwrap())).sum();
                assert_eq!(total, 1000 * ACCOUNTS);
            }
        });
    });
    for i in 0..ACCOUNTS {
        let want = 1000u64.wrapping_add(deltas[i as usize].load(Ordering::SeqCst));
        assert_eq!(balance(db.get(acct(i)).unwrap()), want, "account {i}");
    }
    conflicts.load(Ordering::Relaxed)
}

#[test]
fn concurrent_transfers_keep_the_books_exact() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let retry = |e: &Error| matches!(e, Error::Busy(_) | Error::TryAgain(_));
    // Whether writers collide is up to the scheduler (2 cores shared with other tests): the
    // run is repeated, the books checked each time, until one did.
    let collided =
        (0..20).any(|_| transfers_keep_the_books_exact(&db, &|| db.transaction(), retry) > 0);
    assert!(collided, "the threads never collided in 20 runs");
}

/// A committed transaction of the serializability check: what it read (key, the id of the
/// transaction whose write it saw, 0 for the initial value) and which keys it wrote.
struct Committed {
    id: u64,
    reads: Vec<(u64, u64)>,
    writes: Vec<u64>,
}

/// Transactions under contention read three keys for update and write one or two of them
/// (read-modify-write, the value being the writer's id). The committed history must be
/// conflict-serializable: each key's versions form one chain (no two commits overwrote the
/// same version), and the graph of write-read, write-write and read-write dependencies has
/// no cycle. `retry`: the errors after which a transaction is tried again.
pub(super) fn committed_history_is_conflict_serializable<'db, DB>(
    db: &'db Db,
    begin: &(dyn Fn() -> Transaction<'db, DB> + Sync),
    retry: fn(&Error) -> bool,
) {
    const KEYS: u64 = 6;
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = 150;
    let key = |i: u64| format!("key{i}").into_bytes();
    for k in 0..KEYS {
        db.put(key(k), 0u64.to_le_bytes()).unwrap();
    }
    let history = parking_lot::Mutex::new(Vec::<Committed>::new());
    std::thread::scope(|s| {
        for th in 0..THREADS {
            let history = &history;
            s.spawn(move || {
                let mut seed = th * 104_729 + 17;
                let mut rnd = move || {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed
                };
                for n in 0..PER_THREAD {
                    let id = th * PER_THREAD + n + 1;
                    let mut picked = Vec::new();
                    while picked.len() < 3 {
                        let k = rnd() % KEYS;
                        if !picked.contains(&k) {
                            picked.push(k);
                        }
                    }
                    let writes: Vec<u64> = picked[..=((rnd() % 2) as usize)].to_vec();
                    loop {
                        let attempt = (|| {
                            let t = begin();
                            let mut reads = Vec::new();
                            for k in &picked {
                                let v = t.get_for_update(key(*k), true)?.unwrap();
                                reads.push((*k, u64::from_le_bytes(v.try_into().unwrap())));
                            }
                            for k in &writes {
                                t.put(key(*k), id.to_le_bytes())?;
                            }
                            t.commit().map(|()| reads)
                        })();
                        match attempt {
                            Ok(reads) => {
                                history.lock().push(Committed { id, reads, writes });
                                break;
                            }
                            Err(e) if retry(&e) => {}
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            });
        }
    });
    let history = std::mem::take(&mut *history.lock());
    assert_eq!(history.len() as u64, THREADS * PER_THREAD);
    // Each key's versions: which commit overwrote each version.
    let mut overwrote: HashMap<(u64, u64), u64> = HashMap::new();
    for c in &history {
        for k in &c.writes {
            let seen = c.reads.iter().find(|(rk, _)| rk == k).map(|(_, v)| *v).unwrap();
            if let Some(other) = overwrote.insert((*k, seen), c.id) {
                panic!(
                    "key {k}: version {seen} overwritten by both {other} and {} (a lost update)",
                    c.id
                );
            }
        }
    }
    // Dependencies between commits.
    let mut edges: HashMap<u64, Vec<u64>> = HashMap::new();
    for c in &history {
        for (k, v) in &c.reads {
            if *v != 0 {
                edges.entry(*v).or_default().push(c.id); // write-read, write-write
            }
            if !c.writes.contains(k) {
                if let Some(w) = overwrote.get(&(*k, *v)) {
                    edges.entry(c.id).or_default().push(*w); // read-write
                }
            }
        }
    }
    // No cycle: Kahn's topological sort consumes every commit.
    let mut indegree: HashMap<u64, usize> = history.iter().map(|c| (c.id, 0)).collect();
    for to in edges.values().flatten() {
        *indegree.get_mut(to).unwrap() += 1;
    }
    let mut ready: Vec<u64> =
        indegree.iter().filter(|(_, d)| **d == 0).map(|(id, _)| *id).collect();
    let mut ordered = 0;
    while let Some(id) = ready.pop() {
        ordered += 1;
        for to in edges.get(&id).into_iter().flatten() {
            let d = indegree.get_mut(to).unwrap();
            *d -= 1;
            if *d == 0 {
                ready.push(*to);
            }
        }
    }
    assert_eq!(ordered, history.len(), "the dependency graph has a cycle");
    // Each key ends at the last version of its chain.
    for k in 0..KEYS {
        let mut v = 0;
        while let Some(w) = overwrote.get(&(k, v)) {
            v = *w;
        }
        let stored = u64::from_le_bytes(db.get(key(k)).unwrap().unwrap().try_into().unwrap());
        assert_eq!(stored, v, "key {k}");
    }
}

#[test]
fn committed_transactions_under_contention_are_conflict_serializable() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let retry = |e: &Error| matches!(e, Error::Busy(_) | Error::TryAgain(_));
    committed_history_is_conflict_serializable(&db, &|| db.transaction(), retry);
}

#[test]
fn a_range_is_written_since_a_sequence_number_when_memory_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let cf = db.create_cf_handle("c", &Options::default()).unwrap();
    db.put_cf(&cf, b"k1", b"v").unwrap();
    let seq = db.latest_sequence_number();
    assert_eq!(db.written_since_cf(&cf, b"k", b"l", seq).unwrap(), Some(false));
    db.put_cf(&cf, b"m", b"v").unwrap();
    assert_eq!(db.written_since_cf(&cf, b"k", b"l", seq).unwrap(), Some(false));
    db.put_cf(&cf, b"k7", b"v").unwrap();
    assert_eq!(db.written_since_cf(&cf, b"k", b"l", seq).unwrap(), Some(true));
    assert_eq!(db.written_since_cf(&cf, b"k7\0", b"l", seq).unwrap(), Some(false));
    let seq = db.latest_sequence_number();
    db.delete_range_cf(&cf, b"a", b"kk").unwrap();
    assert_eq!(db.written_since_cf(&cf, b"k", b"l", seq).unwrap(), Some(true));
    assert_eq!(db.written_since_cf(&cf, b"x", b"y", seq).unwrap(), Some(false));
    db.flush_cf(&cf).unwrap();
    assert_eq!(db.written_since_cf(&cf, b"x", b"y", seq).unwrap(), None, "flushed away");
    let seq = db.latest_sequence_number();
    assert_eq!(db.written_since_cf(&cf, b"x", b"y", seq).unwrap(), Some(false));
}

/// An empty memtable that was already active at the sequence number holds every later write
/// of its family: writes to other families since do not make the answer unknown (a
/// regression: a family never written, or just flushed, answered "unknown" after any write
/// anywhere, and strata-server's WATCH aborted EXECs for it).
#[test]
fn an_empty_family_answers_for_writes_made_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let quiet = db.create_cf_handle("quiet", &Options::default()).unwrap();
    let busy = db.create_cf_handle("busy", &Options::default()).unwrap();
    db.put_cf(&busy, b"a", b"v").unwrap();
    let seq = db.latest_sequence_number();
    db.put_cf(&busy, b"b", b"v").unwrap();
    assert_eq!(db.written_since_cf(&quiet, b"k", b"l", seq).unwrap(), Some(false));
    // Flushed: its new memtable starts at the flush, after `seq` was taken before it...
    db.put_cf(&quiet, b"k1", b"v").unwrap();
    db.flush_cf(&quiet).unwrap();
    assert_eq!(db.written_since_cf(&quiet, b"k", b"l", seq).unwrap(), None, "flushed away");
    // ...and after it, later writes elsewhere leave the answer certain.
    let seq = db.latest_sequence_number();
    db.put_cf(&busy, b"c", b"v").unwrap();
    assert_eq!(db.written_since_cf(&quiet, b"k", b"l", seq).unwrap(), Some(false));
    db.put_cf(&quiet, b"k2", b"v").unwrap();
    assert_eq!(db.written_since_cf(&quiet, b"k", b"l", seq).unwrap(), Some(true));
    // After a reopen too: the memtables start at the recovered sequence number.
    drop((quiet, busy));
    drop(db);
    let o = Options { create_if_missing: true, ..Options::default() };
    let db = OptimisticTransactionDb::open_cf(&o, dir.path(), ["quiet", "busy"]).unwrap();
    let (quiet, busy) = (db.cf_handle("quiet").unwrap(), db.cf_handle("busy").unwrap());
    db.flush_cf(&quiet).unwrap();
    let seq = db.latest_sequence_number();
    db.put_cf(&busy, b"d", b"v").unwrap();
    assert_eq!(db.written_since_cf(&quiet, b"k", b"l", seq).unwrap(), Some(false));
}
