//! Random sequences of put / wide-column entity put / delete / delete_range / batch / get /
//! flush / reopen, checked against a BTreeMap model (an entity read as its default column), on the in-memory and the real filesystem, with the write-stall and trigger options
//! drawn over their whole accepted range (zeros and inverted orders included), and tables of
//! both index formats (version 3, user keys, and version 1) in one DB; deleted tables'
//! blocks erased from the block cache or left there.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use strata::env::{FileSystem, MemFs, OsFs};
use strata::{Db, Options, ReadOptions, WriteBatch, WriteBatchWithIndex, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Clone, Debug)]
enum BatchOp {
    Put(u8, Vec<u8>),
    /// `put_entity` with the value as the default column beside another column.
    PutEntity(u8, Vec<u8>),
    Delete(u8),
    DeleteRange(u8, u8),
}

/// The options a case draws: stall and trigger settings, and WAL-less recovery.
#[derive(Clone, Debug)]
struct Knobs {
    trigger: usize,
    slowdown: usize,
    stop: usize,
    soft: u64,
    hard: u64,
    avoid_flush_during_recovery: bool,
    /// 0 ordered, 1 pipelined, 2 without concurrent memtable inserts, 3 unordered.
    write_mode: u8,
    /// 0 leveled, 1 universal, 2 FIFO (room for everything, intra-L0 merges), 3 tiered
    /// (fan-in 2, a budget of 4 runs).
    style: u8,
    /// Memtable budget: 0 none, 1 `db_write_buffer_size` 64 KiB, 2 the same at 2 MiB, 3 a
    /// `WriteBufferManager` of 128 KiB with stalls (the budget flushes almost every write).
    budget: u8,
    /// `user_key_index` at the first open; each `Reopen` flips it, so one DB holds tables of
    /// format version 3 and version 1 side by side.
    user_key_index: bool,
    /// `uncache_aggressiveness` 1: compaction erases deleted tables' blocks from the cache.
    uncache: bool,
    /// `index_block_restart_interval` (1, 3 or 8) and `block_size_deviation` (0, 10 or 50):
    /// whole or prefix-compressed index separators, data blocks cut at or before `block_size`.
    index_restart: usize,
    block_size_deviation: usize,
    /// `memtable_bloom_size_ratio`: 0 (no filter), 0.01, or one word (every probe a false
    /// positive once a key is in).
    memtable_bloom: f64,
    /// The vector memtable (entries appended, sorted when read or flushed).
    vector_memtable: bool,
    /// WAL records copied into a mapping of the zeros ahead (on the real file system).
    wal_mmap_writes: bool,
    /// `min_write_buffer_number_to_merge` (1-3, with four memtables at most): immutable
    /// memtables flushed together as one table.
    merge_memtables: usize,
    /// `max_total_wal_size` of 64 KiB: the write path flushes the family keeping the oldest
    /// WAL once the WALs kept outgrow it.
    wal_limit: bool,
    /// `file_checksums`: every table's CRC32C recorded, checked at each reopen and at the end.
    file_checksums: bool,
}

fn knobs_strategy() -> impl Strategy<Value = Knobs> {
    let limit = || prop_oneof![Just(0u64), Just(1), 1u64..(128 << 10), Just(64 << 30)];
    let budget = prop_oneof![3 => Just(0u8), 1 => 1u8..4];
    (
        1usize..6,
        0usize..10,
        0usize..12,
        limit(),
        limit(),
        any::<bool>(),
        0u8..4,
        0u8..4,
        budget,
        any::<bool>(),
        any::<bool>(),
        (
            prop_oneof![Just(1usize), Just(3), Just(8)],
            prop_oneof![Just(0usize), Just(10), Just(50)],
            prop_oneof![Just(0.0f64), Just(0.01), Just(1e-9)],
            any::<bool>(),
            any::<bool>(),
            1usize..4,
            any::<bool>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                trigger,
                slowdown,
                stop,
                soft,
                hard,
                avoid_flush_during_recovery,
                write_mode,
                style,
                budget,
                user_key_index,
                uncache,
                (
                    index_restart,
                    block_size_deviation,
                    memtable_bloom,
                    vector_memtable,
                    wal_mmap_writes,
                    merge_memtables,
                    wal_limit,
                    file_checksums,
                ),
            )| {
                Knobs {
                    trigger,
                    slowdown,
                    stop,
                    soft,
                    hard,
                    avoid_flush_during_recovery,
                    write_mode,
                    style,
                    budget,
                    user_key_index,
                    uncache,
                    index_restart,
                    block_size_deviation,
                    memtable_bloom,
                    vector_memtable,
                    wal_mmap_writes,
                    merge_memtables,
                    wal_limit,
                    file_checksums,
                }
            },
        )
}

#[derive(Clone, Debug)]
enum Op {
    /// `put` with `sync`, or with the WAL disabled (kept by the clean close of `Reopen`).
    Put(u8, Vec<u8>, bool),
    PutNoWal(u8, Vec<u8>),
    /// `put_entity` with the value as the default column beside another column.
    PutEntity(u8, Vec<u8>),
    Delete(u8),
    /// `delete_range(key(a), key(b))`; a no-op unless key(a) < key(b).
    DeleteRange(u8, u8),
    Batch(Vec<BatchOp>),
    Get(u8),
    /// `merge(key, operand)` with the `stringappend` operator.
    Merge(u8, Vec<u8>),
    /// Seek (or seek_for_prev when reverse) to `key(start)` and take `steps` steps.
    Scan {
        start: u8,
        reverse: bool,
        steps: u8,
    },
    /// Take a snapshot and remember the model's state with it.
    Snapshot,
    /// Check the view of a held snapshot (index modulo the number held), then release it.
    CheckSnapshot(u8),
    Flush,
    CompactRange,
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
        4 => (k.clone(), value_strategy()).prop_map(|(k, v)| Op::PutNoWal(k, v)),
        5 => (k.clone(), value_strategy()).prop_map(|(k, v)| Op::PutEntity(k, v)),
        10 => k.clone().prop_map(Op::Delete),
        4 => (k.clone(), k.clone()).prop_map(|(a, b)| Op::DeleteRange(a, b)),
        8 => proptest::collection::vec(
            prop_oneof![
                3 => (k.clone(), value_strategy()).prop_map(|(k, v)| BatchOp::Put(k, v)),
                1 => (k.clone(), value_strategy()).prop_map(|(k, v)| BatchOp::PutEntity(k, v)),
                1 => k.clone().prop_map(BatchOp::Delete),
                1 => (k.clone(), k.clone()).prop_map(|(a, b)| BatchOp::DeleteRange(a, b)),
            ],
            0..8
        ).prop_map(Op::Batch),
        20 => k.clone().prop_map(Op::Get),
        8 => (k.clone(), proptest::collection::vec(any::<u8>(), 0..6)).prop_map(|(k, v)| Op::Merge(k, v)),
        6 => (k, any::<bool>(), 0u8..12).prop_map(|(start, reverse, steps)| Op::Scan { start, reverse, steps }),
        3 => Just(Op::Snapshot),
        3 => any::<u8>().prop_map(Op::CheckSnapshot),
        3 => Just(Op::Flush),
        1 => Just(Op::CompactRange),
        2 => Just(Op::Reopen),
    ]
}

fn options(fs: Arc<dyn FileSystem>, knobs: &Knobs) -> Options {
    Options {
        fs,
        write_buffer_size: 32 << 10,
        block_size: 256,
        level0_file_num_compaction_trigger: knobs.trigger,
        level0_slowdown_writes_trigger: knobs.slowdown,
        level0_stop_writes_trigger: knobs.stop,
        soft_pending_compaction_bytes_limit: knobs.soft,
        hard_pending_compaction_bytes_limit: knobs.hard,
        avoid_flush_during_recovery: knobs.avoid_flush_during_recovery,
        enable_pipelined_write: knobs.write_mode == 1,
        allow_concurrent_memtable_write: knobs.write_mode != 2,
        unordered_write: knobs.write_mode == 3,
        max_bytes_for_level_base: 64 << 10,
        target_file_size_base: 32 << 10,
        merge_operator: strata::merge_operator::builtin_merge_operator("stringappend"),
        compaction_style: [
            strata::CompactionStyle::Leveled,
            strata::CompactionStyle::Universal,
            strata::CompactionStyle::Fifo,
            strata::CompactionStyle::Tiered,
        ][usize::from(knobs.style)],
        compaction_options_tiered: strata::TieredCompactionOptions {
            fan_in: 2,
            max_sorted_runs: 4,
            max_size_amplification_percent: 200,
            skewed_filter_bits: false,
        },
        compaction_options_fifo: strata::FifoCompactionOptions {
            max_table_files_size: 1 << 40,
            ttl_secs: 0,
            allow_compaction: true,
        },
        db_write_buffer_size: [0, 64 << 10, 2 << 20, 0][usize::from(knobs.budget)],
        write_buffer_manager: (knobs.budget == 3)
            .then(|| Arc::new(strata::WriteBufferManager::new(128 << 10, None, true))),
        user_key_index: knobs.user_key_index,
        uncache_aggressiveness: u32::from(knobs.uncache),
        index_block_restart_interval: knobs.index_restart,
        block_size_deviation: knobs.block_size_deviation,
        memtable_bloom_size_ratio: knobs.memtable_bloom,
        vector_memtable: knobs.vector_memtable,
        wal_mmap_writes: knobs.wal_mmap_writes,
        min_write_buffer_number_to_merge: knobs.merge_memtables,
        max_write_buffer_number: if knobs.merge_memtables > 1 { 4 } else { 2 },
        max_total_wal_size: if knobs.wal_limit { 64 << 10 } else { 0 },
        file_checksums: knobs.file_checksums,
        ..Options::default()
    }
}

/// The columns an entity put of `v` writes: `v` as the default column, and one beside it.
fn entity(v: &[u8]) -> [(&[u8], &[u8]); 2] {
    [(b"", v), (b"side", b"column")]
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

fn run(ops: &[Op], knobs: &Knobs, fs: Arc<dyn FileSystem>, path: &Path) {
    let mut opts = options(fs, knobs);
    let mut db = Db::open(&opts, path).unwrap();
    let mut model = Model::new();
    let mut snapshots: Vec<(strata::Snapshot, Model)> = Vec::new();
    for op in ops {
        match op {
            Op::Put(k, v, sync) => {
                db.put_opt(
                    key(*k),
                    v,
                    &WriteOptions { sync: *sync, disable_wal: false, ..WriteOptions::default() },
                )
                .unwrap();
                model.insert(key(*k), v.clone());
            }
            Op::PutNoWal(k, v) => {
                db.put_opt(
                    key(*k),
                    v,
                    &WriteOptions { sync: false, disable_wal: true, ..WriteOptions::default() },
                )
                .unwrap();
                model.insert(key(*k), v.clone());
            }
            Op::PutEntity(k, v) => {
                db.put_entity(key(*k), &entity(v)).unwrap();
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
                        BatchOp::PutEntity(k, v) => {
                            wb.put_entity(key(*k), &entity(v));
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
                if b.len() % 2 == 1 {
                    // The same batch through a WriteBatchWithIndex: read before the write, it
                    // shows the model after it.
                    let mut wbwi = WriteBatchWithIndex::new(0, true);
                    wbwi.append(&wb);
                    for o in b {
                        let (BatchOp::Put(k, _)
                        | BatchOp::PutEntity(k, _)
                        | BatchOp::Delete(k)
                        | BatchOp::DeleteRange(k, _)) = o;
                        let got = wbwi
                            .get_from_batch_and_db(&db, key(*k), &ReadOptions::default())
                            .unwrap();
                        assert_eq!(got, model.get(&key(*k)).cloned(), "key {k} through the batch");
                    }
                    db.write_wbwi(&wbwi).unwrap();
                } else {
                    db.write(wb).unwrap();
                }
            }
            Op::Get(k) => {
                assert_eq!(db.get(key(*k)).unwrap(), model.get(&key(*k)).cloned(), "get {k}");
                let columns = db.get_entity(key(*k)).unwrap();
                let default = columns.as_ref().map(|c| c.default_value().unwrap_or_default());
                assert_eq!(default, model.get(&key(*k)).map(Vec::as_slice), "get_entity {k}");
            }
            Op::Merge(k, v) => {
                db.merge(key(*k), v).unwrap();
                // stringappend: the existing value (if any), a comma, the operand.
                let merged = match model.get(&key(*k)) {
                    Some(cur) => [cur.as_slice(), b",", v.as_slice()].concat(),
                    None => v.clone(),
                };
                model.insert(key(*k), merged);
            }
            Op::Scan { start, reverse, steps } => {
                let mut it = db.raw_iterator();
                let target = key(*start);
                let expect: Vec<(&Vec<u8>, &Vec<u8>)> = if *reverse {
                    it.seek_for_prev(&target);
                    model.range(..=target.clone()).rev().take(usize::from(*steps) + 1).collect()
                } else {
                    it.seek(&target);
                    model.range(target.clone()..).take(usize::from(*steps) + 1).collect()
                };
                for (i, (k, v)) in expect.iter().enumerate() {
                    assert_eq!(it.key(), Some(k.as_slice()), "scan from {start} step {i}");
                    assert_eq!(it.value(), Some(v.as_slice()), "scan from {start} step {i}");
                    if *reverse {
                        it.prev();
                    } else {
                        it.next();
                    }
                }
                if expect.len() <= usize::from(*steps) {
                    assert!(!it.valid(), "scan from {start}: past the end");
                }
                it.status().unwrap();
            }
            Op::Snapshot => snapshots.push((db.snapshot(), model.clone())),
            Op::CheckSnapshot(i) => {
                if !snapshots.is_empty() {
                    let (snap, at) = snapshots.remove(usize::from(*i) % snapshots.len());
                    let mut ro = ReadOptions::default();
                    ro.set_snapshot(&snap);
                    let scanned: BTreeMap<Vec<u8>, Vec<u8>> = db
                        .iterator_opt(strata::IteratorMode::Start, &ro)
                        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
                        .collect::<Result<_, _>>()
                        .unwrap();
                    assert_eq!(scanned, at, "snapshot view");
                    for k in at.keys().take(8) {
                        assert_eq!(db.get_opt(k, &ro).unwrap().as_ref(), at.get(k), "snapshot get");
                    }
                }
            }
            Op::Flush => db.flush().unwrap(),
            Op::CompactRange => db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap(),
            Op::Reopen => {
                snapshots.clear();
                drop(db);
                opts.user_key_index = !opts.user_key_index;
                db = Db::open(&opts, path).unwrap();
                db.verify_file_checksums().unwrap();
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
        db.verify_file_checksums().unwrap();
        drop(db);
        db = Db::open(&opts, path).unwrap();
    }
}

proptest! {
    // Failing cases are saved beside this file, in `model_state_machine.proptest-regressions`,
    // and replayed first (by default proptest would keep them in
    // `tests/proptest-regressions/`, since the group's directory has a `main.rs`).
    #![proptest_config(ProptestConfig {
        cases: 1000,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    })]
    #[test]
    fn model_on_memfs(ops in proptest::collection::vec(op_strategy(), 1..120), knobs in knobs_strategy()) {
        let fs = MemFs::new();
        run(&ops, &knobs, Arc::new(fs), &PathBuf::from("/db"));
    }
}

proptest! {
    // Failing cases are saved beside this file, in `model_state_machine.proptest-regressions`,
    // and replayed first (by default proptest would keep them in
    // `tests/proptest-regressions/`, since the group's directory has a `main.rs`).
    #![proptest_config(ProptestConfig {
        cases: 100,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    })]
    #[test]
    fn model_on_real_fs(ops in proptest::collection::vec(op_strategy(), 1..60), knobs in knobs_strategy()) {
        let dir = tempfile::tempdir().unwrap();
        run(&ops, &knobs, Arc::new(OsFs), &dir.path().join("db"));
    }
}
