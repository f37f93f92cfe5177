//! Randomized model test of external file ingestion: puts, merges, deletes, flushes,
//! compactions (manual and automatic), ingestions of random external files (puts, merges,
//! deletes and range deletions; overlapping existing data or not; several per call, with
//! random options), snapshots and clean reopens, checked against a `BTreeMap` after every
//! step: point reads, a forward scan, a backward scan, and every held snapshot.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::{FileSystem, MemFs};
use strata::merge_operator::StringAppendOperator;
use strata::{
    CompactionStyle, Db, IngestExternalFileOptions, IteratorMode, Options, ReadOptions,
    SstFileWriter,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const KEYS: usize = 60;

fn key(i: usize) -> Vec<u8> {
    format!("key{i:03}").into_bytes()
}

fn merged(model: &Model, k: &[u8], operand: &[u8]) -> Vec<u8> {
    match model.get(k) {
        Some(v) => [v.as_slice(), b",", operand].concat(),
        None => operand.to_vec(),
    }
}

fn options(fs: &MemFs, style: CompactionStyle) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        merge_operator: Some(Arc::new(StringAppendOperator::new(b","))),
        write_buffer_size: 4 << 10,
        level0_file_num_compaction_trigger: 2,
        num_levels: 4,
        block_size: 256,
        compaction_style: style,
        ..Options::default()
    }
}

fn check(db: &Db, model: &Model, ro: &ReadOptions, what: &str) {
    for i in 0..KEYS {
        let k = key(i);
        assert_eq!(db.get_opt(&k, ro).unwrap(), model.get(&k).cloned(), "{what}: get {i}");
    }
    let fwd: Vec<(Vec<u8>, Vec<u8>)> = db
        .iterator_opt(IteratorMode::Start, ro)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(fwd, want, "{what}: forward scan");
    let back: Vec<Vec<u8>> =
        db.iterator_opt(IteratorMode::End, ro).map(|r| r.unwrap().0.to_vec()).collect();
    let want_back: Vec<Vec<u8>> = model.keys().rev().cloned().collect();
    assert_eq!(back, want_back, "{what}: backward scan");
}

/// Writes a random external file over keys `lo..hi` and applies it to `model`.
fn random_file(
    opts: &Options,
    rng: &mut StdRng,
    path: &Path,
    lo: usize,
    hi: usize,
    model: &mut Model,
) {
    let mut w = SstFileWriter::create(opts);
    w.open(path).unwrap();
    let mut next: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
    let mut deleted: Vec<Vec<u8>> = Vec::new();
    // The file's range deletion hides older data only, not the file's own entries.
    if rng.gen_bool(0.2) {
        let a = rng.gen_range(lo..hi);
        let b = rng.gen_range(a..=hi);
        w.delete_range(key(a), key(b)).unwrap();
        for i in a..b {
            deleted.push(key(i));
        }
    }
    let mut wrote = false;
    for i in lo..hi {
        if !rng.gen_bool(0.5) && (wrote || i + 1 < hi) {
            continue;
        }
        wrote = true;
        let k = key(i);
        match rng.gen_range(0..10) {
            0..=5 => {
                let v = format!("f{}", rng.gen_range(0..1000)).into_bytes();
                w.put(&k, &v).unwrap();
                next.insert(k, Some(v));
            }
            6..=7 => {
                let op = format!("m{}", rng.gen_range(0..1000)).into_bytes();
                w.merge(&k, &op).unwrap();
                let base = if deleted.contains(&k) { Model::new() } else { model.clone() };
                next.insert(k.clone(), Some(merged(&base, &k, &op)));
            }
            _ => {
                w.delete(&k).unwrap();
                next.insert(k, None);
            }
        }
    }
    w.finish().unwrap();
    for k in deleted {
        model.remove(&k);
    }
    for (k, v) in next {
        match v {
            Some(v) => model.insert(k, v),
            None => model.remove(&k),
        };
    }
}

fn run(seed: u64, style: CompactionStyle) {
    let mut rng = StdRng::seed_from_u64(seed);
    let fs = MemFs::new();
    let opts = options(&fs, style);
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let mut db = Db::open(&opts, "/db").unwrap();
    let mut model = Model::new();
    let mut snapshots: Vec<(strata::Snapshot, Model)> = Vec::new();
    let mut files = 0usize;
    for step in 0..300 {
        match rng.gen_range(0..100) {
            0..=34 => {
                let k = key(rng.gen_range(0..KEYS));
                let v = format!("v{step}").into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            35..=41 => {
                let k = key(rng.gen_range(0..KEYS));
                db.delete(&k).unwrap();
                model.remove(&k);
            }
            42..=47 => {
                let k = key(rng.gen_range(0..KEYS));
                let op = format!("d{step}").into_bytes();
                db.merge(&k, &op).unwrap();
                let v = merged(&model, &k, &op);
                model.insert(k, v);
            }
            48..=51 => db.flush().unwrap(),
            52..=54 => db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap(),
            55..=79 => {
                // One to three files over disjoint key ranges; sometimes beyond all data.
                let n = rng.gen_range(1..=3);
                let mut bounds: Vec<usize> = (0..n * 2).map(|_| rng.gen_range(0..KEYS)).collect();
                bounds.sort_unstable();
                let mut paths: Vec<PathBuf> = Vec::new();
                let mut next_model = model.clone();
                for pair in bounds.chunks(2) {
                    let (lo, hi) = (pair[0], pair[1].max(pair[0] + 1).min(KEYS));
                    files += 1;
                    let p = PathBuf::from(format!("/ext/{files}.sst"));
                    random_file(&opts, &mut rng, &p, lo, hi, &mut next_model);
                    paths.push(p);
                }
                let io = IngestExternalFileOptions {
                    move_files: rng.gen_bool(0.5),
                    ..Default::default()
                };
                // Two files may share a key (an empty pair is widened by one): the later one
                // wins, as the model applied them in order.
                db.ingest_external_file_opts(&io, &paths)
                    .unwrap_or_else(|e| panic!("step {step}: {e}"));
                model = next_model;
            }
            80..=87 => {
                if snapshots.len() < 4 {
                    snapshots.push((db.snapshot(), model.clone()));
                } else {
                    snapshots.remove(rng.gen_range(0..snapshots.len()));
                }
            }
            88..=91 => {
                snapshots.clear();
                drop(db);
                db = Db::open(&opts, "/db").unwrap();
            }
            _ => db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap(),
        }
        check(&db, &model, &ReadOptions::default(), &format!("seed {seed} step {step}"));
        for (i, (snap, smodel)) in snapshots.iter().enumerate() {
            let mut ro = ReadOptions::default();
            ro.set_snapshot(snap);
            check(&db, smodel, &ro, &format!("seed {seed} step {step} snapshot {i}"));
        }
    }
    snapshots.clear();
    drop(db);
    let db = Db::open(&opts, "/db").unwrap();
    check(&db, &model, &ReadOptions::default(), &format!("seed {seed} final reopen"));
}

#[test]
fn leveled_ingestion_matches_the_model() {
    for seed in 0..6 {
        run(seed, CompactionStyle::Leveled);
    }
}

#[test]
fn universal_ingestion_matches_the_model() {
    for seed in 100..103 {
        run(seed, CompactionStyle::Universal);
    }
}
