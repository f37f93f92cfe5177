//! Table format version 3 (an index keyed by user keys, `docs/format/sstable.md`) beside
//! version 1 in one DB: tables written with `user_key_index` off, then on, then compacted
//! together, read as a model says through gets, iterators and snapshots, before and after
//! reopening; a table where one user key spans data blocks stays version 1.

use std::collections::BTreeMap;
use std::path::Path;

use strata::env::OsFs;
use strata::inspect::Table;
use strata::{Db, IteratorMode, Options};

/// (user-key index, version 1) counts of the DB's live tables.
fn table_kinds(db: &Db, dir: &Path) -> (usize, usize) {
    let mut kinds = (0, 0);
    for f in db.live_file_names() {
        let path = dir.join(&f);
        if path.extension().is_some_and(|e| e == "sst") {
            if Table::open(&OsFs, &path).unwrap().has_user_key_index() {
                kinds.0 += 1;
            } else {
                kinds.1 += 1;
            }
        }
    }
    kinds
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for i in (0..3000u32).step_by(7) {
        let k = format!("key{i:05}").into_bytes();
        assert_eq!(db.get(&k).unwrap(), model.get(&k).cloned(), "{k:?}");
    }
    let all: Vec<_> = db.iterator(IteratorMode::Start).map(|r| r.unwrap()).collect();
    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all.len(), want.len());
    assert!(all.iter().zip(&want).all(|((a, b), (c, d))| a[..] == c[..] && b[..] == d[..]));
    let back: Vec<_> = db.iterator(IteratorMode::End).map(|r| r.unwrap().0.to_vec()).collect();
    assert!(back.iter().eq(model.keys().rev()));
}

#[test]
fn version_1_and_3_tables_read_together() {
    let dir = tempfile::tempdir().unwrap();
    let small = Options { block_size: 256, disable_auto_compactions: true, ..Options::default() };
    let mut model = BTreeMap::new();
    {
        let opts = Options { user_key_index: false, ..small.clone() };
        let db = Db::open(&opts, dir.path()).unwrap();
        for i in 0..2000u32 {
            let (k, v) = (format!("key{i:05}"), format!("old{i}"));
            db.put(&k, &v).unwrap();
            model.insert(k.into_bytes(), v.into_bytes());
        }
        db.flush().unwrap();
        assert_eq!(table_kinds(&db, dir.path()), (0, 1));
    }
    let db = Db::open(&small, dir.path()).unwrap();
    check(&db, &model);
    let snap = db.snapshot();
    let at_snap = model.clone();
    for i in (1000..3000u32).step_by(3) {
        let (k, v) = (format!("key{i:05}"), format!("new{i}"));
        db.put(&k, &v).unwrap();
        model.insert(k.into_bytes(), v.into_bytes());
    }
    for i in (0..3000u32).step_by(11) {
        db.delete(format!("key{i:05}")).unwrap();
        model.remove(format!("key{i:05}").as_bytes());
    }
    db.flush().unwrap();
    assert_eq!(table_kinds(&db, dir.path()), (1, 1));
    check(&db, &model);
    for (k, v) in at_snap.iter().step_by(13) {
        assert_eq!(snap.get(k).unwrap().as_deref(), Some(&v[..]));
    }
    drop(snap);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let (v3, v1) = table_kinds(&db, dir.path());
    assert!(v3 >= 1 && v1 == 0, "{v3} user-key, {v1} version-1 tables after compaction");
    check(&db, &model);
    drop(db);
    let db = Db::open(&small, dir.path()).unwrap();
    check(&db, &model);
}

#[test]
fn a_user_key_spanning_blocks_keeps_version_1() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { block_size: 128, disable_auto_compactions: true, ..Options::default() };
    let db = Db::open(&opts, dir.path()).unwrap();
    // Versions of one key held apart by snapshots: a flush keeps them all, over many blocks.
    let mut snaps = Vec::new();
    for i in 0..200u32 {
        db.put("hot", format!("value {i:04} {}", "x".repeat(40))).unwrap();
        snaps.push(db.snapshot());
    }
    db.flush().unwrap();
    assert_eq!(table_kinds(&db, dir.path()), (0, 1));
    for (i, s) in snaps.iter().enumerate().step_by(17) {
        let want = format!("value {i:04} {}", "x".repeat(40));
        assert_eq!(s.get("hot").unwrap().as_deref(), Some(want.as_bytes()));
    }
}
