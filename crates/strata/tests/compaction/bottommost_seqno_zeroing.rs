//! Values that reach the bottom level visible to every snapshot are rewritten with sequence
//! number 0 (as RocksDB does). Reads at a held snapshot and at the latest state must not
//! change, a key under a range tombstone keeps its number while the tombstone is in the
//! compaction's input, and once everything is at the bottom with no snapshot, every table's
//! sequence range is `[0 .. 0]`, across a reopen.

use std::collections::BTreeMap;
use std::sync::Arc;

use strata::env::MemFs;
use strata::merge_operator::builtin_merge_operator;
use strata::{CompressionType, Db, IteratorMode, Options, ReadOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 32 << 10,
        block_size: 512,
        level0_file_num_compaction_trigger: 2,
        max_bytes_for_level_base: 64 << 10,
        target_file_size_base: 16 << 10,
        merge_operator: builtin_merge_operator("stringappend"),
        compression: CompressionType::Snappy,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn check(db: &Db, model: &Model, ro: &ReadOptions, what: &str) {
    let got: Vec<(Vec<u8>, Vec<u8>)> = db
        .iterator_opt(IteratorMode::Start, ro)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(got.len(), want.len(), "{what}: scan length");
    assert!(got == want, "{what}: scan differs");
    for i in (0..3200).step_by(7) {
        let k = key(i);
        assert_eq!(db.get_opt(&k, ro).unwrap().as_ref(), model.get(&k), "{what}: get {i}");
    }
}

/// `(smallest_seqno, largest_seqno)` of every table, from `strata.sstables`.
fn seq_ranges(db: &Db) -> Vec<(u64, u64)> {
    let text = db.property_value("strata.sstables").unwrap().unwrap();
    text.lines()
        .filter(|l| l.starts_with(' '))
        .map(|l| {
            let r = &l[l.find('[').unwrap() + 1..l.find(']').unwrap()];
            let (a, b) = r.split_once(" .. ").unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect()
}

#[test]
fn bottom_values_drop_their_seqno_without_changing_any_read() {
    let fs = MemFs::new();
    let o = opts(&fs);
    let db = Db::open(&o, "/db").unwrap();
    let mut latest = Model::new();
    for i in 0..3000 {
        let v = format!("v1-{i}").into_bytes();
        db.put(key(i), &v).unwrap();
        latest.insert(key(i), v);
    }
    let snap = db.snapshot();
    let at_snap = latest.clone();
    for i in (0..1500).step_by(3) {
        let v = format!("v2-{i}").into_bytes();
        db.put(key(i), &v).unwrap();
        latest.insert(key(i), v);
    }
    db.delete_range(key(500), key(1000)).unwrap();
    latest.retain(|k, _| !(k >= &key(500) && k < &key(1000)));
    db.put(key(700), "v3").unwrap();
    latest.insert(key(700), b"v3".to_vec());
    for i in 2000..2100 {
        db.merge(key(i), "m").unwrap();
        latest.get_mut(&key(i)).unwrap().extend_from_slice(b",m");
    }
    for i in 3000..3100 {
        db.merge(key(i), "only").unwrap();
        latest.insert(key(i), b"only".to_vec());
    }

    let at = ReadOptions { snapshot: Some(snap.handle().clone()), ..ReadOptions::default() };
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    check(&db, &latest, &ReadOptions::default(), "latest, snapshot held");
    check(&db, &at_snap, &at, "at the snapshot");
    // The writes after the snapshot keep their numbers while it is held.
    assert!(seq_ranges(&db).iter().any(|&(_, hi)| hi > 0));

    drop(at);
    drop(snap);
    // First pass: the tombstone is in the input, so key 700 (under it) keeps its number; the
    // tombstone itself is dropped at the bottom. Second pass: nothing covers anything.
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    check(&db, &latest, &ReadOptions::default(), "latest, first pass");
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    check(&db, &latest, &ReadOptions::default(), "latest, second pass");
    let ranges = seq_ranges(&db);
    assert!(!ranges.is_empty());
    assert!(ranges.iter().all(|&r| r == (0, 0)), "{ranges:?}");

    // New writes land above the zeroed bottom and win; a reopen reads the same.
    db.put(key(1), "after").unwrap();
    latest.insert(key(1), b"after".to_vec());
    check(&db, &latest, &ReadOptions::default(), "write after zeroing");
    drop(db);
    let db = Db::open(&o, "/db").unwrap();
    check(&db, &latest, &ReadOptions::default(), "after reopen");
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    check(&db, &latest, &ReadOptions::default(), "after reopen and compaction");
}
