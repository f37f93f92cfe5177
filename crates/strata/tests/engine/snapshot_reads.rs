//! Reads through a `Snapshot` (the `rocksdb` crate's `SnapshotWithThreadMode`):
//! `get`, `get_cf`, `multi_get`, `iterator`, `iterator_cf` see the DB as of the snapshot,
//! through later writes, flushes and compactions; a snapshot that outlives its `Db` fails its
//! reads cleanly and does not keep the DB locked.

use strata::{Db, Direction, Error, IteratorMode, Options, ReadOptions};

fn keys_values(it: strata::DbIterator) -> Vec<(String, String)> {
    it.map(|r| {
        let (k, v) = r.unwrap();
        (String::from_utf8(k.to_vec()).unwrap(), String::from_utf8(v.to_vec()).unwrap())
    })
    .collect()
}

#[test]
fn snapshot_reads_see_the_state_it_was_taken_at() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { write_buffer_size: 4 << 10, ..Options::default() };
    let db = Db::open(&opts, dir.path()).unwrap();
    let cf = db.create_cf_handle("side", &opts).unwrap();
    db.put("a", "1").unwrap();
    db.put("b", "1").unwrap();
    db.put_cf(&cf, "x", "1").unwrap();
    let snap = db.snapshot();
    db.put("a", "2").unwrap();
    db.delete("b").unwrap();
    db.put("c", "2").unwrap();
    db.put_cf(&cf, "x", "2").unwrap();
    db.flush().unwrap();
    db.flush_cf(&cf).unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();

    assert_eq!(snap.get("a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(snap.get("b").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(snap.get("c").unwrap(), None);
    assert_eq!(snap.get_cf(&cf, "x").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get_cf(&cf, "x").unwrap().as_deref(), Some(&b"2"[..]));
    let got = snap.multi_get(["c", "a", "b"]);
    let got: Vec<Option<Vec<u8>>> = got.into_iter().map(Result::unwrap).collect();
    assert_eq!(got, [None, Some(b"1".to_vec()), Some(b"1".to_vec())]);
    let got: Vec<_> = snap.multi_get_cf([(&cf, "x")]).into_iter().map(Result::unwrap).collect();
    assert_eq!(got, [Some(b"1".to_vec())]);

    let one = |k: &str| (k.to_string(), "1".to_string());
    assert_eq!(keys_values(snap.iterator(IteratorMode::Start)), [one("a"), one("b")]);
    assert_eq!(keys_values(snap.iterator(IteratorMode::End)), [one("b"), one("a")]);
    assert_eq!(
        keys_values(snap.iterator(IteratorMode::From(b"b", Direction::Forward))),
        [one("b")]
    );
    assert_eq!(keys_values(snap.iterator_cf(&cf, IteratorMode::Start)), [one("x")]);
    let mut ro = ReadOptions::default();
    ro.set_iterate_upper_bound(b"b".to_vec());
    assert_eq!(keys_values(snap.iterator_opt(IteratorMode::Start, ro)), [one("a")]);
    let mut raw = snap.raw_iterator();
    raw.seek_to_last();
    assert_eq!(raw.key(), Some(&b"b"[..]));
    // The DB itself moved on.
    assert_eq!(keys_values(db.iterator(IteratorMode::Start)).len(), 2);
    assert_eq!(db.get("b").unwrap(), None);
}

#[test]
fn a_snapshot_outliving_its_db_fails_cleanly_and_holds_no_lock() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&Options::default(), dir.path()).unwrap();
    db.put("k", "v").unwrap();
    let snap = db.snapshot();
    let live_iter = snap.iterator(IteratorMode::Start);
    assert_eq!(snap.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    drop(db);
    assert!(matches!(snap.get("k"), Err(Error::ShutdownInProgress)));
    assert!(matches!(snap.multi_get(["k"]).pop().unwrap(), Err(Error::ShutdownInProgress)));
    let mut it = snap.iterator(IteratorMode::Start);
    assert!(matches!(it.next(), Some(Err(Error::ShutdownInProgress))));
    assert!(it.next().is_none());
    // An iterator made before the close still reads its pinned view.
    assert_eq!(keys_values(live_iter), [("k".to_string(), "v".to_string())]);
    // The snapshot does not keep the DB locked: it reopens while the snapshot lives.
    let db = Db::open(&Options::default(), dir.path()).unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    assert!(snap.get("k").is_err(), "an old snapshot never reads a reopened DB");
}
