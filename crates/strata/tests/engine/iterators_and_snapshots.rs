//! DB iterators over data in the memtable, immutable memtables and tables, with bounds,
//! prefixes and snapshots, against a BTreeMap model; an open iterator and a held snapshot stay
//! correct while flushes run.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::MemFs;
use strata::merge_operator::builtin_merge_operator;
use strata::{Db, Direction, IteratorMode, Options, PrefixExtractor, PrefixRange, ReadOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn opts() -> Options {
    Options {
        fs: Arc::new(MemFs::new()),
        write_buffer_size: 8 << 10,
        block_size: 256,
        merge_operator: builtin_merge_operator("stringappend"),
        prefix_extractor: Some(PrefixExtractor::Fixed(3)),
        ..Options::default()
    }
}

fn scan(db: &Db, ro: &ReadOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.iterator_opt(IteratorMode::Start, ro)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap()
}

fn scan_back(db: &Db, ro: &ReadOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v: Vec<_> = db
        .iterator_opt(IteratorMode::End, ro)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap();
    v.reverse();
    v
}

fn in_bounds(model: &Model, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Vec<(Vec<u8>, Vec<u8>)> {
    model
        .iter()
        .filter(|(k, _)| {
            lo.is_none_or(|l| k.as_slice() >= l) && hi.is_none_or(|h| k.as_slice() < h)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[test]
fn random_workload_iterators_match_model() {
    let mut rng = StdRng::seed_from_u64(7);
    let db = Db::open(&opts(), "/db").unwrap();
    let mut model = Model::new();
    let mut snapshots: Vec<(strata::Snapshot, Model)> = Vec::new();
    for round in 0..30 {
        for _ in 0..rng.gen_range(10..200) {
            let k = format!("{:02}{}", rng.gen_range(0..30), "x".repeat(rng.gen_range(0..3)))
                .into_bytes();
            match rng.gen_range(0..10) {
                0..=1 => {
                    db.delete(&k).unwrap();
                    model.remove(&k);
                }
                2..=3 => {
                    let v = format!("m{round}").into_bytes();
                    db.merge(&k, &v).unwrap();
                    let cur = model.get(&k).cloned();
                    let new = match cur {
                        Some(mut c) => {
                            c.push(b',');
                            c.extend_from_slice(&v);
                            c
                        }
                        None => v,
                    };
                    model.insert(k, new);
                }
                _ => {
                    let v = format!("v{round}-{}", rng.gen::<u16>()).into_bytes();
                    db.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
            }
        }
        if rng.gen_bool(0.3) {
            db.flush().unwrap();
        }
        if rng.gen_bool(0.3) {
            snapshots.push((db.snapshot(), model.clone()));
        }
        let ro = ReadOptions::default();
        assert_eq!(scan(&db, &ro), in_bounds(&model, None, None), "round {round}");
        assert_eq!(scan_back(&db, &ro), in_bounds(&model, None, None), "round {round} back");
        let mut ro = ReadOptions::default();
        ro.set_iterate_lower_bound(b"05".to_vec());
        ro.set_iterate_upper_bound(b"17".to_vec());
        let want = in_bounds(&model, Some(b"05"), Some(b"17"));
        assert_eq!(scan(&db, &ro), want, "round {round} bounded");
        assert_eq!(scan_back(&db, &ro), want, "round {round} bounded back");
        for (snap, smodel) in &snapshots {
            let mut ro = ReadOptions::default();
            ro.set_snapshot(snap);
            assert_eq!(scan(&db, &ro), in_bounds(smodel, None, None), "snapshot scan");
            for k in smodel.keys().take(5) {
                assert_eq!(db.get_opt(k, &ro).unwrap().as_ref(), smodel.get(k), "snapshot get");
            }
        }
        for (k, v) in model.iter().take(20) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
        }
    }
}

#[test]
fn seek_prefix_and_raw_moves() {
    let db = Db::open(&opts(), "/db").unwrap();
    for k in ["aa1", "aa2", "ab1", "ab2", "ab3", "b"] {
        db.put(k, k.to_uppercase()).unwrap();
    }
    db.flush().unwrap();
    db.put("ab0", "AB0").unwrap();
    let mut it = db.raw_iterator();
    assert!(!it.valid());
    it.seek("ab");
    assert_eq!(it.key(), Some(&b"ab0"[..]));
    it.prev();
    assert_eq!(it.key(), Some(&b"aa2"[..]));
    it.seek_for_prev("ab25");
    assert_eq!(it.key(), Some(&b"ab2"[..]));
    it.next();
    assert_eq!(it.item(), Some((&b"ab3"[..], &b"AB3"[..])));
    it.next();
    it.next();
    assert!(!it.valid());
    it.status().unwrap();

    let mut ro = ReadOptions::default();
    ro.set_iterate_range(PrefixRange("ab"));
    let got: Vec<Vec<u8>> =
        db.iterator_opt(IteratorMode::Start, ro).map(|r| r.unwrap().0.to_vec()).collect();
    assert_eq!(got, vec![b"ab0".to_vec(), b"ab1".to_vec(), b"ab2".to_vec(), b"ab3".to_vec()]);
    // `prefix_iterator` stops where the extractor's prefix (3 bytes here) changes.
    let got: Vec<Vec<u8>> = db.prefix_iterator("aa1").map(|r| r.unwrap().0.to_vec()).collect();
    assert_eq!(got, vec![b"aa1".to_vec()]);

    let mut ro = ReadOptions::default();
    ro.set_prefix_same_as_start(true);
    let mut it = db.raw_iterator_opt(&ro);
    it.seek("aa1");
    let mut n = 0;
    while it.valid() {
        assert!(it.key().unwrap().starts_with(b"aa1"));
        n += 1;
        it.next();
    }
    assert_eq!(n, 1, "Fixed(3) prefix of aa1 is aa1");

    let back: Vec<Vec<u8>> = db
        .iterator(IteratorMode::From(b"ab1", Direction::Reverse))
        .map(|r| r.unwrap().0.to_vec())
        .collect();
    assert_eq!(back, vec![b"ab1".to_vec(), b"ab0".to_vec(), b"aa2".to_vec(), b"aa1".to_vec()]);
}

#[test]
fn open_iterator_and_snapshot_survive_flushes() {
    let db = Db::open(&opts(), "/db").unwrap();
    for i in 0..500 {
        db.put(format!("k{i:04}"), format!("old{i}")).unwrap();
    }
    let snap = db.snapshot();
    let mut it = db.raw_iterator();
    it.seek_to_first();
    // Overwrite and delete everything, flushing several times, while the iterator is open.
    for i in 0..500 {
        if i % 2 == 0 {
            db.delete(format!("k{i:04}")).unwrap();
        } else {
            db.put(format!("k{i:04}"), format!("new{i}")).unwrap();
        }
        if i % 100 == 0 {
            db.flush().unwrap();
        }
    }
    db.flush().unwrap();
    let mut n = 0;
    while it.valid() {
        assert_eq!(it.key().unwrap(), format!("k{n:04}").as_bytes());
        assert_eq!(it.value().unwrap(), format!("old{n}").as_bytes());
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, 500);
    let mut ro = ReadOptions::default();
    ro.set_snapshot(&snap);
    for i in (0..500).step_by(7) {
        assert_eq!(
            db.get_opt(format!("k{i:04}"), &ro).unwrap().unwrap(),
            format!("old{i}").into_bytes()
        );
        let now = db.get(format!("k{i:04}")).unwrap();
        assert_eq!(now, (i % 2 == 1).then(|| format!("new{i}").into_bytes()));
    }
}

#[test]
fn multi_get_matches_get_in_input_order() {
    let db = Db::open(&opts(), "/db").unwrap();
    for i in (0..300).step_by(2) {
        db.put(format!("k{i:03}"), format!("v{i}")).unwrap();
    }
    db.flush().unwrap();
    db.put("k001", "v1").unwrap();
    let snap = db.snapshot();
    db.delete("k000").unwrap();
    let keys: Vec<String> =
        [299, 1, 0, 150, 151, 0, 42].iter().map(|i| format!("k{i:03}")).collect();
    let got: Vec<Option<Vec<u8>>> = db.multi_get(&keys).into_iter().map(Result::unwrap).collect();
    let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| db.get(k).unwrap()).collect();
    assert_eq!(got, want);
    assert_eq!(got[1].as_deref(), Some(&b"v1"[..]));
    assert_eq!(got[2], None);
    let mut ro = ReadOptions::default();
    ro.set_snapshot(&snap);
    let at_snap = db.multi_get_opt(["k000"], &ro);
    assert_eq!(at_snap[0].as_ref().unwrap().as_deref(), Some(&b"v0"[..]));
}
