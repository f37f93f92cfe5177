//! Random sequences of put / delete / delete_range / batch / get / flush / reopen, checked against a BTreeMap
//! model, on the in-memory and the real filesystem.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;
use strata::env::{FileSystem, MemFs, OsFs};
use strata::{Db, Options, WriteBatch, WriteOptions};

#[derive(Clone, Debug)]
enum BatchOp {
    Put(u8, Vec<u8>),
    Delete(u8),
    DeleteRange(u8, u8),
}

#[derive(Clone, Debug)]
enum Op {
    Put(u8, Vec<u8>, bool),
    Delete(u8),
    /// `delete_range(key(a), key(b))`; a no-op unless key(a) < key(b).
    DeleteRange(u8, u8),
    Batch(Vec<BatchOp>),
    Get(u8),
    Flush,
    Reopen,
}

fn key(k: u8) -> Vec<u8> {
    // Some keys share long prefixes, one is empty.
    if k == 0 {
        Vec::new()
    } else {
        format!("key-{:03}-{}", k % 40, "x".repeat(usize::from(k / 40))).into_bytes()
    }
}

fn value_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => proptest::collection::vec(any::<u8>(), 0..40),
        1 => (1usize..20_000).prop_map(|n| vec![b'v'; n]),
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let k = 0u8..120;
    prop_oneof![
        30 => (k.clone(), value_strategy(), proptest::bool::weighted(0.1)).prop_map(|(k, v, s)| Op::Put(k, v, s)),
        10 => k.clone().prop_map(Op::Delete),
        4 => (k.clone(), k.clone()).prop_map(|(a, b)| Op::DeleteRange(a, b)),
        8 => proptest::collection::vec(
            prop_oneof![
                3 => (k.clone(), value_strategy()).prop_map(|(k, v)| BatchOp::Put(k, v)),
                1 => k.clone().prop_map(BatchOp::Delete),
                1 => (k.clone(), k.clone()).prop_map(|(a, b)| BatchOp::DeleteRange(a, b)),
            ],
            0..8
        ).prop_map(Op::Batch),
        20 => k.prop_map(Op::Get),
        3 => Just(Op::Flush),
        2 => Just(Op::Reopen),
    ]
}

fn options(fs: Arc<dyn FileSystem>) -> Options {
    Options { fs, write_buffer_size: 32 << 10, block_size: 256, ..Options::default() }
}

/// The range of keys `a` and `b` with begin <= end (begin == end deletes nothing).
fn ordered_range(a: u8, b: u8) -> (Vec<u8>, Vec<u8>) {
    let (ka, kb) = (key(a), key(b));
    if ka <= kb {
        (ka, kb)
    } else {
        (kb, ka)
    }
}

/// Applies `delete_range(lo, hi)` to the model.
fn model_delete_range(model: &mut BTreeMap<Vec<u8>, Vec<u8>>, lo: &[u8], hi: &[u8]) {
    model.retain(|k, _| !(k.as_slice() >= lo && k.as_slice() < hi));
}

fn run(ops: &[Op], fs: Arc<dyn FileSystem>, path: &Path) {
    let opts = options(fs);
    let mut db = Db::open(&opts, path).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for op in ops {
        match op {
            Op::Put(k, v, sync) => {
                db.put_opt(key(*k), v, &WriteOptions { sync: *sync, disable_wal: false }).unwrap();
                model.insert(key(*k), v.clone());
            }
            Op::Delete(k) => {
                db.delete(key(*k)).unwrap();
                model.remove(&key(*k));
            }
            Op::DeleteRange(a, b) => {
                let (lo, hi) = ordered_range(*a, *b);
                db.delete_range(&lo, &hi).unwrap();
                model_delete_range(&mut model, &lo, &hi);
            }
            Op::Batch(b) => {
                let mut wb = WriteBatch::new();
                for o in b {
                    match o {
                        BatchOp::Put(k, v) => {
                            wb.put(key(*k), v);
                            model.insert(key(*k), v.clone());
                        }
                        BatchOp::Delete(k) => {
                            wb.delete(key(*k));
                            model.remove(&key(*k));
                        }
                        BatchOp::DeleteRange(a, b) => {
                            let (lo, hi) = ordered_range(*a, *b);
                            wb.delete_range(&lo, &hi);
                            model_delete_range(&mut model, &lo, &hi);
                        }
                    }
                }
                db.write(wb).unwrap();
            }
            Op::Get(k) => {
                assert_eq!(db.get(key(*k)).unwrap(), model.get(&key(*k)).cloned(), "get {k}");
            }
            Op::Flush => db.flush().unwrap(),
            Op::Reopen => {
                drop(db);
                db = Db::open(&opts, path).unwrap();
            }
        }
    }
    // Final full check, before and after a reopen.
    for pass in 0..2 {
        for k in 0..120u8 {
            assert_eq!(db.get(key(k)).unwrap(), model.get(&key(k)).cloned(), "final {pass} {k}");
        }
        let scanned: BTreeMap<Vec<u8>, Vec<u8>> = db
            .iterator(strata::IteratorMode::Start)
            .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(scanned, model, "final scan {pass}");
        drop(db);
        db = Db::open(&opts, path).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]
    #[test]
    fn model_on_memfs(ops in proptest::collection::vec(op_strategy(), 1..120)) {
        let fs = MemFs::new();
        run(&ops, Arc::new(fs), &PathBuf::from("/db"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]
    #[test]
    fn model_on_real_fs(ops in proptest::collection::vec(op_strategy(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        run(&ops, Arc::new(OsFs), &dir.path().join("db"));
    }
}
