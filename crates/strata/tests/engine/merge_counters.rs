//! `uint64add` counters stay exact after one million merges across flushes and reopens.

use std::sync::Arc;

use strata::env::MemFs;
use strata::merge_operator::builtin_merge_operator;
use strata::{Db, Error, Options, WriteBatch};

#[test]
fn million_merges_stay_exact() {
    let fs = MemFs::new();
    let opts = Options {
        fs: Arc::new(fs),
        merge_operator: builtin_merge_operator("uint64add"),
        write_buffer_size: 1 << 20,
        ..Options::default()
    };
    let counters = 1000u64;
    let total = 1_000_000u64;
    let mut db = Db::open(&opts, "/db").unwrap();
    let mut expect = vec![0u64; counters as usize];
    let mut batch = WriteBatch::new();
    for i in 0..total {
        let c = (i * 7919) % counters;
        let add = i % 5;
        expect[c as usize] += add;
        batch.merge(format!("counter{c:04}"), add.to_le_bytes());
        if batch.len() == 100 {
            db.write(std::mem::take(&mut batch)).unwrap();
        }
        if i % 250_000 == 0 && i > 0 {
            drop(db);
            db = Db::open(&opts, "/db").unwrap();
        }
    }
    db.write(batch).unwrap();
    let check = |db: &Db| {
        for c in 0..counters {
            let v = db.get(format!("counter{c:04}")).unwrap().unwrap();
            assert_eq!(
                u64::from_le_bytes(v.try_into().unwrap()),
                expect[c as usize],
                "counter {c}"
            );
        }
        let mut n = 0;
        for item in db.iterator(strata::IteratorMode::Start) {
            let (k, v) = item.unwrap();
            let c: usize = std::str::from_utf8(&k[7..]).unwrap().parse().unwrap();
            assert_eq!(u64::from_le_bytes((*v).try_into().unwrap()), expect[c]);
            n += 1;
        }
        assert_eq!(n, counters);
    };
    check(&db);
    db.flush().unwrap();
    check(&db);
    drop(db);
    let db = Db::open(&opts, "/db").unwrap();
    check(&db);
}

#[test]
fn merge_without_operator_is_a_clear_error() {
    let mem = MemFs::new();
    let opts = Options { fs: Arc::new(mem.clone()), ..Options::default() };
    {
        // Refused at the call, as RocksDB does: nothing is stored.
        let db = Db::open(&opts, "/db").unwrap();
        let err = db.merge(b"k", b"x").unwrap_err();
        assert!(matches!(err, Error::NotSupported(_)), "{err}");
        assert!(err.to_string().contains("merge operator"));
        assert_eq!(db.get(b"k").unwrap(), None);
    }
    {
        let with = Options {
            merge_operator: strata::merge_operator::builtin_merge_operator("stringappend"),
            ..opts.clone()
        };
        Db::open(&with, "/db").unwrap().merge(b"k", b"x").unwrap();
    }
    // Operands stored earlier and read by a DB opened without the operator: a clear error.
    let db = Db::open(&opts, "/db").unwrap();
    let err = db.get(b"k").unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(err.to_string().contains("merge operator"));
    db.put(b"k", b"v").unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}
