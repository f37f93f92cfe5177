//! Put, get, delete, batches, flush and reopen on the real filesystem.

use strata::{Db, Error, Options, WriteBatch, WriteOptions};

fn small_opts() -> Options {
    Options { write_buffer_size: 64 << 10, ..Options::default() }
}

#[test]
fn put_get_delete_across_flush_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let db = Db::open(&small_opts(), &path).unwrap();
        assert_eq!(db.get(b"missing").unwrap(), None);
        db.put(b"k1", b"v1").unwrap();
        db.put(b"", b"empty key").unwrap();
        db.put(b"k2", b"").unwrap();
        assert_eq!(db.get(b"k1").unwrap().as_deref(), Some(&b"v1"[..]));
        assert_eq!(db.get(b"").unwrap().as_deref(), Some(&b"empty key"[..]));
        assert_eq!(db.get(b"k2").unwrap().as_deref(), Some(&b""[..]));
        db.flush().unwrap();
        assert_eq!(db.property_int_value("strata.num-files-at-level0").unwrap(), Some(1));
        db.put(b"k1", b"v1b").unwrap();
        db.delete(b"k2").unwrap();
        assert_eq!(db.get(b"k1").unwrap().as_deref(), Some(&b"v1b"[..]));
        assert_eq!(db.get(b"k2").unwrap(), None);
    }
    let db = Db::open(&small_opts(), &path).unwrap();
    assert_eq!(db.get(b"k1").unwrap().as_deref(), Some(&b"v1b"[..]));
    assert_eq!(db.get(b"k2").unwrap(), None);
    assert_eq!(db.get(b"").unwrap().as_deref(), Some(&b"empty key"[..]));
}

#[test]
fn batch_is_atomic_and_ordered() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&Options::default(), dir.path()).unwrap();
    let mut b = WriteBatch::new();
    b.put(b"a", b"1");
    b.put(b"a", b"2");
    b.delete(b"b");
    b.put(b"c", b"3");
    db.put(b"b", b"old").unwrap();
    db.write(b).unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"2"[..]), "later record in a batch wins");
    assert_eq!(db.get(b"b").unwrap(), None);
    assert_eq!(db.get(b"c").unwrap().as_deref(), Some(&b"3"[..]));
    db.write(WriteBatch::new()).unwrap();
}

#[test]
fn many_keys_through_several_memtables() {
    let dir = tempfile::tempdir().unwrap();
    let opts = small_opts();
    {
        let db = Db::open(&opts, dir.path()).unwrap();
        for i in 0..20_000u32 {
            db.put(format!("key{i:08}"), format!("value{i}").repeat(3)).unwrap();
        }
        for i in (0..20_000u32).step_by(3) {
            db.delete(format!("key{i:08}")).unwrap();
        }
        for i in (0..20_000u32).step_by(997) {
            let got = db.get(format!("key{i:08}")).unwrap();
            assert_eq!(got.is_none(), i % 3 == 0, "key {i}");
        }
        db.flush().unwrap();
        assert!(db.property_int_value("strata.num-files-at-level0").unwrap().unwrap() > 1);
    }
    let db = Db::open(&opts, dir.path()).unwrap();
    for i in 0..20_000u32 {
        let got = db.get(format!("key{i:08}")).unwrap();
        if i % 3 == 0 {
            assert_eq!(got, None, "key {i}");
        } else {
            assert_eq!(got.unwrap(), format!("value{i}").repeat(3).into_bytes(), "key {i}");
        }
    }
}

#[test]
fn second_open_fails_on_lock() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&Options::default(), dir.path()).unwrap();
    let err = Db::open(&Options::default(), dir.path()).unwrap_err();
    assert!(matches!(err, Error::Locked(_)), "{err}");
    assert!(err.to_string().contains("locked"));
    drop(db);
    Db::open(&Options::default(), dir.path()).unwrap();
}

#[test]
fn open_options_are_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope");
    let opts = Options { create_if_missing: false, ..Options::default() };
    assert!(matches!(Db::open(&opts, &path), Err(Error::InvalidArgument(_))));
    drop(Db::open(&Options::default(), &path).unwrap());
    let opts = Options { error_if_exists: true, ..Options::default() };
    assert!(matches!(Db::open(&opts, &path), Err(Error::InvalidArgument(_))));
    let bad = Options { write_buffer_size: 1, ..Options::default() };
    assert!(matches!(Db::open(&bad, dir.path().join("x")), Err(Error::InvalidArgument(_))));
    let bad = Options { index_block_restart_interval: 0, ..Options::default() };
    match Db::open(&bad, dir.path().join("y")) {
        Err(Error::InvalidArgument(m)) => {
            assert!(m.contains("index_block_restart_interval"), "{m}");
        }
        other => panic!("index_block_restart_interval 0 opened: {:?}", other.map(|_| ())),
    }
}

#[test]
fn sync_without_wal_is_rejected_and_disable_wal_survives_clean_close() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(&Options::default(), dir.path()).unwrap();
        let wo = WriteOptions { sync: true, disable_wal: true, ..WriteOptions::default() };
        assert!(matches!(db.put_opt(b"k", b"v", &wo), Err(Error::InvalidArgument(_))));
        let wo = WriteOptions { sync: false, disable_wal: true, ..WriteOptions::default() };
        db.put_opt(b"nowal", b"kept", &wo).unwrap();
        db.put_opt(
            b"synced",
            b"yes",
            &WriteOptions { sync: true, disable_wal: false, ..WriteOptions::default() },
        )
        .unwrap();
    }
    let db = Db::open(&Options::default(), dir.path()).unwrap();
    assert_eq!(db.get(b"nowal").unwrap().as_deref(), Some(&b"kept"[..]));
    assert_eq!(db.get(b"synced").unwrap().as_deref(), Some(&b"yes"[..]));
}

#[test]
fn large_values_and_keys() {
    let dir = tempfile::tempdir().unwrap();
    let big = vec![7u8; 3 << 20];
    let key = vec![b'k'; 10_000];
    {
        let db = Db::open(&small_opts(), dir.path()).unwrap();
        db.put(&key, &big).unwrap();
        db.put(b"small", b"x").unwrap();
        assert_eq!(db.get(&key).unwrap().unwrap(), big);
        db.flush().unwrap();
        assert_eq!(db.get(&key).unwrap().unwrap(), big);
    }
    let db = Db::open(&small_opts(), dir.path()).unwrap();
    assert_eq!(db.get(&key).unwrap().unwrap(), big);
}

#[test]
fn properties_answer_known_names() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&Options::default(), dir.path()).unwrap();
    db.put(b"a", b"b").unwrap();
    assert_eq!(db.property_int_value("strata.estimate-num-keys").unwrap(), Some(1));
    assert_eq!(db.property_int_value("rocksdb.num-files-at-level0").unwrap(), Some(0));
    assert!(db.property_value("strata.stats").unwrap().unwrap().contains("Level"));
    assert_eq!(db.property_value("strata.no-such-thing").unwrap(), None);
    assert_eq!(db.property_value("other.stats").unwrap(), None);
}

/// A one-byte block size (accepted, as RocksDB accepts it) writes a table per flush like any
/// other: the builder once cut an empty block before the first entry and the flush panicked
/// (a hang for its waiters). Shrunk: one put, then a reopen that flushes the recovered WAL.
#[test]
fn a_one_byte_block_size_flushes_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { block_size: 1, ..Options::default() };
    let db = Db::open(&opts, dir.path()).unwrap();
    db.put(b"k", b"v").unwrap();
    drop(db);
    let db = Db::open(&opts, dir.path()).unwrap();
    for i in 0..200u32 {
        db.put(i.to_be_bytes(), i.to_le_bytes()).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    for i in 0..200u32 {
        assert_eq!(db.get(i.to_be_bytes()).unwrap().as_deref(), Some(&i.to_le_bytes()[..]));
    }
}
