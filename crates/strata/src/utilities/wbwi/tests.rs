//! `WriteBatchWithIndex` against a model: random updates, some written to the DB (and some of
//! those flushed), the rest in the batch; every read through the batch must equal the model
//! of the DB after the batch, and writing the batch must make the DB equal it.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;

use super::WriteBatchWithIndex;
use crate::db::Db;
use crate::merge_operator::StringAppendOperator;
use crate::options::{Options, ReadOptions};
use crate::write_batch::WriteBatch;

#[derive(Clone, Debug)]
enum Op {
    Put(u8, u8),
    Delete(u8),
    Merge(u8, u8),
    DeleteRange(u8, u8),
}

fn key(k: u8) -> Vec<u8> {
    format!("k{k:02}").into_bytes()
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..24, any::<u8>()).prop_map(|(k, v)| Op::Put(k, v)),
        2 => (0u8..24).prop_map(Op::Delete),
        3 => (0u8..24, any::<u8>()).prop_map(|(k, v)| Op::Merge(k, v)),
        1 => (0u8..24, 0u8..6).prop_map(|(k, n)| Op::DeleteRange(k, k + n)),
    ]
}

/// Applies `op` to the model (string-append merges with ',').
fn apply(model: &mut BTreeMap<Vec<u8>, Vec<u8>>, op: &Op) {
    match op {
        Op::Put(k, v) => {
            model.insert(key(*k), vec![b'a' + v % 26]);
        }
        Op::Delete(k) => {
            model.remove(&key(*k));
        }
        Op::Merge(k, v) => {
            let e = model.entry(key(*k)).or_default();
            if !e.is_empty() {
                e.push(b',');
            }
            e.push(b'a' + v % 26);
        }
        Op::DeleteRange(b, e) => {
            let doomed: Vec<_> = model.range(key(*b)..key(*e)).map(|(k, _)| k.clone()).collect();
            for k in doomed {
                model.remove(&k);
            }
        }
    }
}

fn add_to_batch(b: &mut WriteBatch, op: &Op) {
    match op {
        Op::Put(k, v) => b.put(key(*k), [b'a' + v % 26]),
        Op::Delete(k) => b.delete(key(*k)),
        Op::Merge(k, v) => b.merge(key(*k), [b'a' + v % 26]),
        Op::DeleteRange(s, e) => b.delete_range(key(*s), key(*e)),
    }
}

fn add_to_wbwi(b: &mut WriteBatchWithIndex, op: &Op) {
    match op {
        Op::Put(k, v) => b.put(key(*k), [b'a' + v % 26]),
        Op::Delete(k) => b.delete(key(*k)),
        Op::Merge(k, v) => b.merge(key(*k), [b'a' + v % 26]),
        Op::DeleteRange(s, e) => b.delete_range(key(*s), key(*e)),
    }
}

fn options() -> Options {
    Options {
        create_if_missing: true,
        merge_operator: Some(Arc::new(StringAppendOperator::new(b","))),
        ..Options::default()
    }
}

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Every key forward and backward through the cursor, within `[lo, hi)`.
fn scan(db: &Db, b: &WriteBatchWithIndex, lo: Option<u8>, hi: Option<u8>) -> (Pairs, Pairs) {
    let ro = ReadOptions {
        iterate_lower_bound: lo.map(key),
        iterate_upper_bound: hi.map(key),
        ..ReadOptions::default()
    };
    let mut it = b.iterator_with_base(db.raw_iterator_opt(&ro));
    let mut fwd = Vec::new();
    it.seek_to_first();
    while let Some((k, v)) = it.item() {
        fwd.push((k.to_vec(), v.to_vec()));
        it.next();
    }
    it.status().unwrap();
    let mut back = Vec::new();
    it.seek_to_last();
    while let Some((k, v)) = it.item() {
        back.push((k.to_vec(), v.to_vec()));
        it.prev();
    }
    it.status().unwrap();
    back.reverse();
    (fwd, back)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn reads_through_the_batch_equal_the_db_after_it(
        written in proptest::collection::vec(op(), 0..40),
        flush_at in 0usize..40,
        pending in proptest::collection::vec(op(), 0..40),
        lo in proptest::option::of(0u8..24),
        span in 0u8..30,
        seeks in proptest::collection::vec((0u8..26, any::<bool>(), 0u8..4), 0..8),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&options(), dir.path()).unwrap();
        let mut model = BTreeMap::new();
        for (i, op) in written.iter().enumerate() {
            let mut b = WriteBatch::new();
            add_to_batch(&mut b, op);
            db.write(b).unwrap();
            apply(&mut model, op);
            if i == flush_at {
                db.flush().unwrap();
            }
        }
        let mut wbwi = WriteBatchWithIndex::new(0, true);
        for op in &pending {
            add_to_wbwi(&mut wbwi, op);
            apply(&mut model, op);
        }
        // Point reads.
        for k in 0u8..26 {
            let got = wbwi.get_from_batch_and_db(&db, key(k), &ReadOptions::default()).unwrap();
            prop_assert_eq!(got, model.get(&key(k)).cloned(), "key {}", k);
        }
        // Scans, whole and bounded.
        let all: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let (fwd, back) = scan(&db, &wbwi, None, None);
        prop_assert_eq!(&fwd, &all);
        prop_assert_eq!(&back, &all);
        let hi = lo.map(|l| l.saturating_add(span));
        let bounded: Vec<_> = all
            .iter()
            .filter(|(k, _)| lo.is_none_or(|l| *k >= key(l)) && hi.is_none_or(|h| *k < key(h)))
            .cloned()
            .collect();
        let (fwd, back) = scan(&db, &wbwi, lo, hi);
        prop_assert_eq!(&fwd, &bounded);
        prop_assert_eq!(&back, &bounded);
        // Seeks, then steps either way (a change of direction included).
        let mut it = wbwi.iterator_with_base(db.raw_iterator());
        for (target, forward, steps) in seeks {
            let t = key(target);
            let mut pos: Option<usize> = if forward {
                it.seek(&t);
                all.iter().position(|(k, _)| *k >= t)
            } else {
                it.seek_for_prev(&t);
                all.iter().rposition(|(k, _)| *k <= t)
            };
            for s in 0..=steps {
                let want = pos.map(|p| (all[p].0.as_slice(), all[p].1.as_slice()));
                prop_assert_eq!(it.item(), want);
                if pos.is_none() {
                    break;
                }
                let p = pos.unwrap_or_default();
                // Alternate: forward, back, forward...
                if (s % 2 == 0) == forward {
                    it.next();
                    pos = (p + 1 < all.len()).then_some(p + 1);
                } else {
                    it.prev();
                    pos = p.checked_sub(1);
                }
            }
        }
        // Written, the DB holds what the batch showed.
        db.write_wbwi(&wbwi).unwrap();
        let mut it = db.raw_iterator();
        it.seek_to_first();
        let mut after = Vec::new();
        while let Some((k, v)) = it.item() {
            after.push((k.to_vec(), v.to_vec()));
            it.next();
        }
        prop_assert_eq!(after, all);
    }
}

#[test]
fn a_key_only_merged_in_the_batch_is_read_with_the_db() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&options(), dir.path()).unwrap();
    db.put(b"a", b"x").unwrap();
    let mut b = WriteBatchWithIndex::new(0, false);
    b.merge(b"a", b"y");
    b.put(b"b", b"1");
    b.merge(b"b", b"2");
    let o = options();
    assert!(b.get_from_batch(b"a", &o).unwrap_err().to_string().contains("get_from_batch_and_db"));
    assert_eq!(b.get_from_batch(b"b", &o).unwrap(), Some(b"1,2".to_vec()));
    assert_eq!(b.get_from_batch(b"c", &o).unwrap(), None);
    assert_eq!(
        b.get_from_batch_and_db(&db, b"a", &ReadOptions::default()).unwrap(),
        Some(b"x,y".to_vec())
    );
    // Without a merge operator, a merged key cannot be read: an error names it.
    let err = b.get_from_batch(b"b", &Options::default()).unwrap_err();
    assert!(err.to_string().contains("no merge operator"), "{err}");
}

#[test]
fn the_batch_is_read_in_its_column_family_and_over_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&options(), dir.path()).unwrap();
    let cf = db.create_cf_handle("other", &options()).unwrap();
    db.put_cf(&cf, b"k", b"old").unwrap();
    let snap = db.snapshot();
    db.put_cf(&cf, b"k", b"new").unwrap();
    let mut b = WriteBatchWithIndex::new(0, true);
    b.merge_cf(&cf, b"k", b"m");
    b.put(b"k", b"default");
    let ro = ReadOptions { snapshot: Some(snap.handle().clone()), ..ReadOptions::default() };
    assert_eq!(b.get_from_batch_and_db_cf(&db, &cf, b"k", &ro).unwrap(), Some(b"old,m".to_vec()));
    assert_eq!(
        b.get_from_batch_and_db_cf(&db, &cf, b"k", &ReadOptions::default()).unwrap(),
        Some(b"new,m".to_vec())
    );
    let mut it = b.iterator_with_base_cf(db.raw_iterator_cf(&cf), &cf);
    it.seek_to_first();
    assert_eq!(it.item(), Some((&b"k"[..], &b"new,m"[..])));
    let mut it = b.iterator_with_base(db.raw_iterator());
    it.seek_to_first();
    assert_eq!(it.item(), Some((&b"k"[..], &b"default"[..])));
    // A cursor keeps the batch as it was when made.
    b.delete(b"k");
    it.seek_to_first();
    assert_eq!(it.item(), Some((&b"k"[..], &b"default"[..])));
    db.write_wbwi(&b).unwrap();
    assert_eq!(db.get_cf(&cf, b"k").unwrap(), Some(b"new,m".to_vec()));
    assert_eq!(db.get(b"k").unwrap(), None);
}

#[test]
fn batch_keys_keep_to_the_cursors_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = options();
    o.set_prefix_extractor(crate::options::SliceTransform::create_fixed_prefix(2));
    let db = Db::open(&o, dir.path()).unwrap();
    db.put(b"aa1", b"db").unwrap();
    db.put(b"ab1", b"db").unwrap();
    let mut b = WriteBatchWithIndex::new(0, true);
    b.put(b"aa2", b"batch");
    b.put(b"ab0", b"batch");
    b.put(b"a", b"batch");
    let ro = ReadOptions { prefix_same_as_start: true, ..ReadOptions::default() };
    let mut it = b.iterator_with_base(db.raw_iterator_opt(&ro));
    it.seek(b"aa");
    let mut seen = Vec::new();
    while let Some((k, _)) = it.key().zip(it.value()) {
        seen.push(k.to_vec());
        it.next();
    }
    assert_eq!(seen, vec![b"aa1".to_vec(), b"aa2".to_vec()]);
    it.seek_for_prev(b"ab5");
    assert_eq!(it.key(), Some(&b"ab1"[..]));
    it.prev();
    assert_eq!(it.key(), Some(&b"ab0"[..]));
    it.prev();
    assert_eq!(it.key(), None, "aa2 has another prefix");
}

#[test]
fn an_appended_batch_is_indexed_in_its_families() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&options(), dir.path()).unwrap();
    let cf = db.create_cf_handle("other", &options()).unwrap();
    db.put_cf(&cf, b"a", b"1").unwrap();
    db.put_cf(&cf, b"b", b"2").unwrap();
    let mut plain = WriteBatch::new();
    plain.merge_cf(&cf, b"a", b"x");
    plain.delete_range_cf(&cf, b"b", b"c");
    plain.put(b"d", b"default");
    let mut b = WriteBatchWithIndex::new(0, false);
    b.put_cf(&cf, b"z", b"first");
    b.append(&plain);
    assert_eq!(b.len(), 4);
    let ro = ReadOptions::default();
    assert_eq!(b.get_from_batch_and_db_cf(&db, &cf, b"a", &ro).unwrap(), Some(b"1,x".to_vec()));
    assert_eq!(b.get_from_batch_and_db_cf(&db, &cf, b"b", &ro).unwrap(), None);
    assert_eq!(b.get_from_batch_and_db(&db, b"d", &ro).unwrap(), Some(b"default".to_vec()));
    db.write_wbwi(&b).unwrap();
    assert_eq!(db.get_cf(&cf, b"a").unwrap(), Some(b"1,x".to_vec()));
    assert_eq!(db.get_cf(&cf, b"z").unwrap(), Some(b"first".to_vec()));
}
