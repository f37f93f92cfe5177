//! Values in blob files (`enable_blob_files`) under a random workload: puts of sizes around
//! `min_blob_size`, overwrites, deletes, merges onto blob values, snapshots, reopens and
//! compactions in each style, with and without a blob cache, checked against a model; and
//! afterwards no blob file is leaked: those on disk are exactly those the DB holds, the force
//! threshold runs compactions of its own, and garbage collection over every blob file leaves
//! none of the old files and no garbage. With `write_blobs_at_commit`, the same with the
//! values going to blob files as they are written (the WAL and the memtables holding their
//! indexes), synced writes and WAL syncs among them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::{FileSystem, MemFs};
use strata::merge_operator::builtin_merge_operator;
use strata::{
    BlobOptions, Cache, CompactionStyle, CompressionType, Db, IteratorMode, Options, ReadOptions,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const MIN_BLOB: usize = 120;

fn opts(fs: &MemFs, style: CompactionStyle, gc: bool, at_commit: bool) -> Options {
    // With GC, values are also cached: in the block cache, small enough that it fills, so its
    // admission turns values away and evicts them (without GC, values are read from their
    // files each time).
    let cache = Cache::new_lru(64 << 10);
    Options {
        block_cache: Some(cache.clone()),
        fs: Arc::new(fs.clone()),
        compaction_style: style,
        write_buffer_size: 48 << 10,
        block_size: 1024,
        level0_file_num_compaction_trigger: 2,
        max_bytes_for_level_base: 32 << 10,
        max_bytes_for_level_multiplier: 4.0,
        target_file_size_base: 16 << 10,
        max_subcompactions: 2,
        max_background_jobs: 3,
        merge_operator: builtin_merge_operator("stringappend"),
        compression: CompressionType::None,
        blob: BlobOptions {
            enable_blob_files: true,
            min_blob_size: MIN_BLOB as u64,
            blob_file_size: 24 << 10,
            blob_compression_type: Some(if gc {
                CompressionType::Snappy
            } else {
                CompressionType::None
            }),
            enable_blob_gc: gc,
            blob_gc_age_cutoff: if gc { 0.5 } else { 0.25 },
            // With GC: compactions forced once a fifth of the old files is garbage.
            blob_gc_force_threshold: if gc { 0.2 } else { 1.0 },
            blob_cache: gc.then_some(cache),
            write_blobs_at_commit: at_commit,
            ..BlobOptions::default()
        },
        ..Options::default()
    }
}

fn scan(db: &Db, ro: &ReadOptions) -> Model {
    db.iterator_opt(IteratorMode::Start, ro)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap()
}

fn scan_back(db: &Db, ro: &ReadOptions) -> Model {
    db.iterator_opt(IteratorMode::End, ro)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A value of `len` bytes that names its key and round (so a value read for the wrong key,
/// or from the wrong version, is caught), compressible or not.
fn value(rng: &mut StdRng, k: &[u8], round: usize, len: usize) -> Vec<u8> {
    let mut v = format!("{}@{round}:", String::from_utf8_lossy(k)).into_bytes();
    if rng.gen_bool(0.5) {
        v.resize(len, b'a' + (round % 26) as u8);
    } else {
        while v.len() < len {
            v.push(rng.gen());
        }
    }
    v.truncate(len.max(1));
    v
}

fn blob_files_on_disk(fs: &MemFs) -> Vec<String> {
    let mut v: Vec<String> = fs
        .list(std::path::Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| Path::new(n).extension().is_some_and(|x| x == "blob"))
        .collect();
    v.sort();
    v
}

fn run(style: CompactionStyle, gc: bool, seed: u64) {
    run_with(style, gc, false, seed);
}

fn run_with(style: CompactionStyle, gc: bool, at_commit: bool, seed: u64) {
    let fs = MemFs::new();
    let mut rng = StdRng::seed_from_u64(seed);
    let opts = |fs: &MemFs, style, gc| opts(fs, style, gc, at_commit);
    let mut db = Db::open(&opts(&fs, style, gc), "/db").unwrap();
    let mut model = Model::new();
    let mut snaps: Vec<(strata::Snapshot, Model)> = Vec::new();
    for round in 0..24 {
        for _ in 0..500 {
            let k = format!("key{:04}", rng.gen_range(0..800)).into_bytes();
            match rng.gen_range(0..12) {
                0 => {
                    db.delete(&k).unwrap();
                    model.remove(&k);
                }
                1 => {
                    // An operand onto whatever the key holds (often a value in a blob file).
                    let op = format!("m{round}").into_bytes();
                    db.merge(&k, &op).unwrap();
                    let cur = model.get(&k).cloned();
                    let merged = match cur {
                        Some(mut c) => {
                            c.push(b',');
                            c.extend_from_slice(&op);
                            c
                        }
                        None => op,
                    };
                    model.insert(k, merged);
                }
                2 if at_commit => {
                    // A batch of two puts and a delete, synced now and then.
                    let k2 = format!("key{:04}", rng.gen_range(0..800)).into_bytes();
                    let (l, l2) = (
                        rng.gen_range(MIN_BLOB / 2..MIN_BLOB * 3),
                        rng.gen_range(MIN_BLOB..MIN_BLOB * 2),
                    );
                    let v = value(&mut rng, &k, round, l);
                    let v2 = value(&mut rng, &k2, round, l2);
                    let mut b = strata::WriteBatch::default();
                    b.put(&k, &v);
                    b.put(&k2, &v2);
                    b.delete(&k);
                    let mut wo = strata::WriteOptions::default();
                    wo.set_sync(rng.gen_bool(0.2));
                    db.write_opt(b, &wo).unwrap();
                    model.remove(&k);
                    model.insert(k2, v2);
                }
                3 if at_commit && rng.gen_bool(0.05) => db.flush_wal(true).unwrap(),
                _ => {
                    let len = rng.gen_range(MIN_BLOB / 2..MIN_BLOB * 3);
                    let v = value(&mut rng, &k, round, len);
                    db.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
            }
        }
        if rng.gen_bool(0.3) {
            snaps.push((db.snapshot(), model.clone()));
        }
        if snaps.len() > 3 {
            snaps.remove(0);
        }
        if round % 8 == 7 {
            drop(std::mem::take(&mut snaps));
            drop(db);
            db = Db::open(&opts(&fs, style, gc), "/db").unwrap();
        }
        for (snap, m) in &snaps {
            let mut ro = ReadOptions::default();
            ro.set_snapshot(snap);
            assert_eq!(&scan(&db, &ro), m, "{style:?} round {round}: snapshot view");
        }
        for _ in 0..100 {
            let k = format!("key{:04}", rng.gen_range(0..800)).into_bytes();
            assert_eq!(db.get(&k).unwrap().as_ref(), model.get(&k), "{style:?} round {round}");
        }
        let keys: Vec<Vec<u8>> =
            (0..20).map(|i| format!("key{:04}", i * 37).into_bytes()).collect();
        let got = db.multi_get(&keys);
        for (k, g) in keys.iter().zip(got) {
            assert_eq!(g.unwrap().as_deref(), model.get(k).map(Vec::as_slice), "multi_get");
        }
    }
    drop(snaps);
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    assert_eq!(scan(&db, &ReadOptions::default()), model);
    assert_eq!(scan_back(&db, &ReadOptions::default()), model);
    let int = |db: &Db, name: &str| db.property_int_value(name).unwrap().unwrap();
    assert!(int(&db, "rocksdb.num-blob-files") > 0, "values went to blob files");

    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    assert_eq!(scan(&db, &ReadOptions::default()), model);
    // No leak: the blob files on disk are the ones the DB holds.
    assert_eq!(blob_files_on_disk(&fs).len() as u64, int(&db, "rocksdb.num-blob-files"));
    if gc {
        // The force threshold made compactions of their own (the info LOG names them).
        let log: String = fs
            .list(Path::new("/db"))
            .unwrap()
            .into_iter()
            .filter(|n| n.starts_with("LOG"))
            .map(|n| {
                String::from_utf8_lossy(&fs.read_file(&Path::new("/db").join(n)).unwrap())
                    .into_owned()
            })
            .collect();
        assert!(log.contains("blob garbage"), "{style:?}: no forced blob collection ran");
        // Garbage collection over every blob file: a full compaction moves each live value
        // into a new blob file, and every old file (with its garbage) goes.
        let before = blob_files_on_disk(&fs);
        db.set_options(&[("blob_garbage_collection_age_cutoff", "1.0")]).unwrap();
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
        assert_eq!(scan(&db, &ReadOptions::default()), model);
        let after = blob_files_on_disk(&fs);
        assert!(after.iter().all(|f| !before.contains(f)), "{before:?} -> {after:?}");
        assert_eq!(int(&db, "rocksdb.live-blob-file-garbage-size"), 0);
        assert_eq!(after.len() as u64, int(&db, "rocksdb.num-blob-files"));
    }
    drop(db);
    let db = Db::open(&opts(&fs, style, gc), "/db").unwrap();
    assert_eq!(scan(&db, &ReadOptions::default()), model);
    if !gc {
        // Uncompressed, the blob bytes not counted as garbage hold at least every large value
        // of the model (values merged onto stay where their base was written).
        let large: u64 =
            model.values().filter(|v| v.len() >= MIN_BLOB).map(|v| v.len() as u64).sum();
        let live = int(&db, "rocksdb.live-blob-file-size")
            - int(&db, "rocksdb.live-blob-file-garbage-size");
        assert!(live >= large, "live blob bytes {live} hold the {large} bytes of large values");
    }
}

#[test]
fn blob_values_match_model_leveled() {
    run(CompactionStyle::Leveled, false, 7);
}

#[test]
fn blob_values_written_at_commit_match_model_leveled() {
    run_with(CompactionStyle::Leveled, false, true, 11);
}

#[test]
fn blob_values_written_at_commit_match_model_universal_with_gc() {
    run_with(CompactionStyle::Universal, true, true, 12);
}

#[test]
fn blob_values_match_model_leveled_with_gc() {
    run(CompactionStyle::Leveled, true, 8);
}

#[test]
fn blob_values_match_model_universal_with_gc() {
    run(CompactionStyle::Universal, true, 9);
}

#[test]
fn blob_values_match_model_tiered_with_gc() {
    run(CompactionStyle::Tiered, true, 10);
}
