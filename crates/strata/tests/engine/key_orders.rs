//! Key orders other than bytewise (`Options::set_comparator`, `crate::comparator`): the order
//! is kept by every part of the engine and recorded with the family, so that opening with
//! another one is refused; a family's order lives beside others' in one DB; external files,
//! write batches with index, transactions, checkpoints and the file tools follow it.

use std::cmp::Ordering;
use std::sync::Arc;

use strata::comparator::KeyOrder;
use strata::{
    ColumnFamilyDescriptor, Db, Error, IngestExternalFileOptions, IteratorMode, Options,
    ReadOptions, SstFileWriter, TransactionDb, TransactionDbOptions, WriteBatchWithIndex,
};

fn reverse() -> KeyOrder {
    KeyOrder::custom("test.reverse", Box::new(|a: &[u8], b: &[u8]| b.cmp(a)))
}

fn opts(order: Option<KeyOrder>) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    if let Some(order) = order {
        o.set_key_order(order);
    }
    o
}

fn keys(db: &Db) -> Vec<Vec<u8>> {
    db.iterator(IteratorMode::Start).map(|r| r.unwrap().0.to_vec()).collect()
}

#[test]
fn the_crate_shaped_comparator_orders_every_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(None);
    // The `rocksdb` crate's signature: a boxed closure without `Send` in its type.
    let reverse_fn: Box<strata::options::CompareFn> = Box::new(|a, b| b.cmp(a));
    o.set_comparator("test.reverse", reverse_fn);
    let db = Db::open(&o, dir.path()).unwrap();
    for k in ["b", "d", "a", "c"] {
        db.put(k, k).unwrap();
    }
    assert_eq!(keys(&db), [b"d", b"c", b"b", b"a"]);
    db.flush().unwrap();
    db.put("e", "e").unwrap();
    assert_eq!(keys(&db), [b"e", b"d", b"c", b"b", b"a"]);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let mut it = db.raw_iterator();
    it.seek(b"cc");
    assert_eq!(it.key(), Some(&b"c"[..]), "the first key at or after cc in reverse order");
    it.seek_for_prev(b"cc");
    assert_eq!(it.key(), Some(&b"d"[..]));
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"b"[..]));
    // A range in reverse order: d down to (not including) b.
    db.delete_range("d", "b").unwrap();
    assert_eq!(keys(&db), [b"e", b"b", b"a"]);
    let e = db.delete_range("a", "e").unwrap_err();
    assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("after end key")), "{e}");
}

#[test]
fn a_family_keeps_its_order_and_another_order_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(&opts(Some(reverse())), dir.path()).unwrap();
        db.put("a", "1").unwrap();
        db.put("b", "2").unwrap();
        db.flush().unwrap();
    }
    let e = Db::open(&opts(None), dir.path()).unwrap_err();
    let m = e.to_string();
    assert!(matches!(e, Error::InvalidArgument(_)) && m.contains("test.reverse"), "{m}");
    let other = KeyOrder::custom("test.other", Box::new(|a: &[u8], b: &[u8]| b.cmp(a)));
    let e = Db::open(&opts(Some(other)), dir.path()).unwrap_err();
    assert!(e.to_string().contains("test.reverse"), "{e}");
    // The family list needs no order; the right one opens.
    assert_eq!(Db::list_cf(&opts(None), dir.path()).unwrap(), ["default"]);
    let db = Db::open(&opts(Some(reverse())), dir.path()).unwrap();
    assert_eq!(keys(&db), [b"b", b"a"]);
    // A bytewise DB refuses a comparator too.
    let bytewise = dir.path().join("bytewise");
    drop(Db::open(&opts(None), &bytewise).unwrap());
    let e = Db::open(&opts(Some(reverse())), &bytewise).unwrap_err();
    assert!(e.to_string().contains("strata.BytewiseComparator"), "{e}");
}

#[test]
fn families_of_different_orders_live_in_one_db() {
    let dir = tempfile::tempdir().unwrap();
    let descriptors = || {
        vec![
            ColumnFamilyDescriptor::new("rev", opts(Some(reverse()))),
            ColumnFamilyDescriptor::new("plain", opts(None)),
        ]
    };
    {
        let db = Db::open_cf_descriptors(&opts(None), dir.path(), descriptors()).unwrap();
        let made = db.create_cf_handle("made", &opts(Some(reverse()))).unwrap();
        for name in ["rev", "plain"] {
            let cf = db.cf_handle(name).unwrap();
            for k in ["x", "y", "z"] {
                db.put_cf(&cf, k, k).unwrap();
            }
        }
        db.put_cf(&made, "1", "").unwrap();
        db.put_cf(&made, "2", "").unwrap();
        db.flush_cf(&made).unwrap();
        db.flush_cf(&db.cf_handle("rev").unwrap()).unwrap();
    }
    let mut all = descriptors();
    all.push(ColumnFamilyDescriptor::new("made", opts(Some(reverse()))));
    let db = Db::open_cf_descriptors(&opts(None), dir.path(), all).unwrap();
    let scan = |name: &str| -> Vec<Vec<u8>> {
        let cf = db.cf_handle(name).unwrap();
        db.iterator_cf(&cf, IteratorMode::Start).map(|r| r.unwrap().0.to_vec()).collect()
    };
    assert_eq!(scan("rev"), [b"z", b"y", b"x"]);
    assert_eq!(scan("plain"), [b"x", b"y", b"z"]);
    assert_eq!(scan("made"), [b"2", b"1"]);
    drop(db);
    // `made` opened without its comparator is refused, naming the family.
    let mut wrong = descriptors();
    wrong.push(ColumnFamilyDescriptor::new("made", opts(None)));
    let e = Db::open_cf_descriptors(&opts(None), dir.path(), wrong).unwrap_err();
    assert!(e.to_string().contains("\"made\""), "{e}");
}

#[test]
fn external_files_follow_the_family_order() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(Some(reverse()));
    let db = Db::open(&o, dir.path().join("db")).unwrap();
    db.put("m", "db").unwrap();
    let sst = dir.path().join("rev.sst");
    let mut w = SstFileWriter::create(&o);
    w.open(&sst).unwrap();
    w.put("z", "1").unwrap();
    w.put("y", "2").unwrap();
    let e = w.put("za", "3").unwrap_err();
    assert!(e.to_string().contains("must sort after"), "{e}");
    w.finish().unwrap();
    db.ingest_external_file(vec![&sst]).unwrap();
    assert_eq!(keys(&db), [b"z", b"y", b"m"]);
    // A file in bytewise order does not go into a family in reverse order.
    let plain = dir.path().join("plain.sst");
    let mut w = SstFileWriter::create(&opts(None));
    w.open(&plain).unwrap();
    w.put("a", "1").unwrap();
    w.finish().unwrap();
    let e = db
        .ingest_external_file_opts(&IngestExternalFileOptions::default(), vec![&plain])
        .unwrap_err();
    assert!(e.to_string().contains("strata.BytewiseComparator"), "{e}");
    // The file tools read a table in its order only when told it.
    db.flush().unwrap();
    let table = db.live_files().unwrap().into_iter().next().unwrap();
    let path = dir.path().join("db").join(&table.name);
    let fs = strata::env::OsFs;
    let e = strata::inspect::Table::open(&fs, &path).err().unwrap();
    assert!(e.to_string().contains("test.reverse"), "{e}");
    let t = strata::inspect::Table::open_in(&fs, &path, &reverse()).unwrap();
    t.verify().unwrap();
}

#[test]
fn batches_with_index_and_transactions_read_in_the_family_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&opts(Some(reverse())), dir.path().join("db")).unwrap();
    for k in ["a", "c", "e"] {
        db.put(k, "db").unwrap();
    }
    let cf = db.cf_handle("default").unwrap();
    let mut b = WriteBatchWithIndex::new(0, true);
    b.put_cf(&cf, "d", "batch");
    b.delete_range_cf(&cf, "c", "a"); // c down to a, a kept
    let it = b.iterator_with_base_cf(db.raw_iterator(), &cf);
    let mut it = it;
    it.seek_to_first();
    let mut got = Vec::new();
    while let Some(k) = it.key() {
        got.push(k.to_vec());
        it.next();
    }
    assert_eq!(got, [b"e".to_vec(), b"d".to_vec(), b"a".to_vec()]);
    assert_eq!(b.get_from_batch_and_db_cf(&db, &cf, "b", &ReadOptions::default()).unwrap(), None);
    // Written without the handle, the default family's keys were indexed bytewise: refused.
    let mut plain = WriteBatchWithIndex::new(0, true);
    plain.put("d", "x");
    let e = plain.get_from_batch_and_db(&db, "d", &ReadOptions::default()).unwrap_err();
    assert!(e.to_string().contains("for_db"), "{e}");
    let mut it = plain.iterator_with_base(db.raw_iterator());
    it.seek_to_first();
    assert!(!it.valid() && it.status().is_err());
    // A batch made for the DB indexes it in the DB's order.
    let mut ok = WriteBatchWithIndex::for_db(&db);
    ok.put("b", "x");
    assert_eq!(ok.get_from_batch_and_db(&db, "b", &ReadOptions::default()).unwrap().unwrap(), b"x");
    drop(db);

    let o = opts(Some(reverse()));
    let tdb =
        TransactionDb::open(&o, &TransactionDbOptions::default(), dir.path().join("t")).unwrap();
    tdb.put("a", "1").unwrap();
    tdb.put("c", "3").unwrap();
    let txn = tdb.transaction();
    txn.put("b", "2").unwrap();
    let got: Vec<Vec<u8>> =
        txn.iterator(IteratorMode::Start).map(|r| r.unwrap().0.to_vec()).collect();
    assert_eq!(got, [b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
    txn.commit().unwrap();
    let got: Vec<Vec<u8>> =
        tdb.iterator(IteratorMode::Start).map(|r| r.unwrap().0.to_vec()).collect();
    assert_eq!(got, [b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
}

#[test]
fn checkpoints_keep_the_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&opts(Some(reverse())), dir.path().join("db")).unwrap();
    for k in ["a", "b", "c"] {
        db.put(k, k).unwrap();
    }
    strata::Checkpoint::create(&db, dir.path().join("cp")).unwrap();
    assert!(Db::open(&opts(None), dir.path().join("cp")).is_err());
    let cp = Db::open(&opts(Some(reverse())), dir.path().join("cp")).unwrap();
    assert_eq!(keys(&cp), [b"c", b"b", b"a"]);
}

#[test]
fn a_comparator_need_not_be_called_for_one_key() {
    // rust-rocksdb's `test_comparator_lifetime`: a DB holding one key never compares two.
    let never = || {
        KeyOrder::custom(
            "test.never",
            Box::new(|_: &[u8], _: &[u8]| -> Ordering { panic!("the comparator was called") }),
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let first = Db::open(&opts(Some(never())), dir.path().join("1")).unwrap();
    {
        let second = Db::open(&opts(Some(never())), dir.path().join("2")).unwrap();
        second.put("k", "v").unwrap();
    }
    first.put("k", "v").unwrap();
    first.flush().unwrap();
    let _ = Arc::new(first);
}

#[test]
fn a_double_ended_prefix_iterator_in_another_order_walks_back_within_the_prefix() {
    // Regression: the back end kept `prefix_same_as_start` on, took the prefix of the last
    // key in the family's order and stopped at its edge, so `.rev()` of a prefix other than
    // the last one yielded nothing.
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(Some(reverse()));
    o.prefix_extractor = Some(strata::PrefixExtractor::Fixed(1));
    let db = Db::open(&o, dir.path()).unwrap();
    for k in ["a1", "a2", "b1", "b2", "b3", "c1"] {
        db.put(k, k).unwrap();
    }
    let ro = || ReadOptions { prefix_same_as_start: true, ..ReadOptions::default() };
    let walk = |mode: IteratorMode<'_>, back: bool| -> Vec<Vec<u8>> {
        let it = db.iterator_opt(mode, ro());
        let items: Vec<_> = if back { it.rev().collect() } else { it.collect() };
        items.into_iter().map(|r| r.unwrap().0.to_vec()).collect()
    };
    let from_b = || IteratorMode::From(b"b9", strata::Direction::Forward);
    assert_eq!(walk(from_b(), false), [b"b3", b"b2", b"b1"]);
    assert_eq!(walk(from_b(), true), [b"b1", b"b2", b"b3"]);
    let back_from_b = || IteratorMode::From(b"b2", strata::Direction::Reverse);
    assert_eq!(walk(back_from_b(), false), [b"b2", b"b3"]);
    assert_eq!(walk(back_from_b(), true), [b"b3", b"b2"]);
    // Both ends of one iterator meet within the prefix.
    let mut it = db.iterator_opt(from_b(), ro());
    assert_eq!(&*it.next().unwrap().unwrap().0, b"b3");
    assert_eq!(&*it.next_back().unwrap().unwrap().0, b"b1");
    assert_eq!(&*it.next().unwrap().unwrap().0, b"b2");
    assert!(it.next_back().is_none() && it.next().is_none());
}

#[test]
fn a_multi_range_scan_follows_the_familys_order() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options { block_size: 64, ..opts(Some(reverse())) };
    let db = Db::open(&o, dir.path()).unwrap();
    for k in ["a", "b", "c", "d", "e", "f", "g"] {
        db.put(k, k).unwrap();
    }
    db.flush().unwrap();
    // In reverse order "f" comes before "d": the ranges [f, d) and [c, a).
    let mut args = strata::MultiScanArgs::new();
    args.insert("f", "d");
    args.insert("c", "a");
    for reverse_walk in [false, true] {
        args.reverse = reverse_walk;
        let mut ms = db.multi_scan(&ReadOptions::default(), &args).unwrap();
        let mut got = Vec::new();
        while let Some(scan) = ms.next_scan() {
            got.push(scan.map(|r| r.unwrap().0.to_vec()).collect::<Vec<_>>());
        }
        let mut want = vec![vec![b"f".to_vec(), b"e".to_vec()], vec![b"c".to_vec(), b"b".to_vec()]];
        if reverse_walk {
            for w in &mut want {
                w.reverse();
            }
        }
        assert_eq!(got, want, "reverse walk {reverse_walk}");
    }
    // Ranges out of the family's order are refused.
    let mut args = strata::MultiScanArgs::new();
    args.insert("a", "c");
    let e = db.multi_scan(&ReadOptions::default(), &args).err().expect("a is after c here");
    assert!(e.to_string().contains("start is not below limit"), "{e}");
}
