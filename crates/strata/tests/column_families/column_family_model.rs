//! Randomized model test of column families: puts, deletes, range deletes and cross-family
//! batches in several families, flushes and compactions of single families, drops and
//! re-creations, clean reopens and power losses (every write synced, so none may be lost),
//! checked against a `BTreeMap` per family after every step that can lose or move data. A DB
//! snapshot is held at times, and a family may be created with `snapshot_reads` off (its
//! flushes and compactions then keep no version for the snapshot, and a read of it through
//! the snapshot is refused): the latest state must not change either way.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::{CrashMode, MemFs};
use strata::{Db, Error, IteratorMode, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};

type Model = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

const NAMES: [&str; 3] = ["a", "b", "c"];

fn family_opts(fs: &MemFs, rng: &mut StdRng) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: [8 << 10, 32 << 10, 1 << 20][rng.gen_range(0..3)],
        level0_file_num_compaction_trigger: rng.gen_range(2..5),
        block_size: [256, 4096][rng.gen_range(0..2)],
        snapshot_reads: rng.gen_bool(0.5),
        ..Options::default()
    }
}

fn open(fs: &MemFs, model: &Model) -> Db {
    let opts = Options { fs: Arc::new(fs.clone()), ..Options::default() };
    let names: Vec<&str> = model.keys().filter(|n| *n != "default").map(String::as_str).collect();
    Db::open_cf(&opts, Path::new("/db"), names).expect("open")
}

fn check(fs: &MemFs, db: &Db, model: &Model, step: usize) {
    let opts = Options { fs: Arc::new(fs.clone()), ..Options::default() };
    let mut listed = Db::list_cf(&opts, "/db").expect("list_cf");
    listed.sort();
    assert_eq!(listed, model.keys().cloned().collect::<Vec<_>>(), "step {step}: list_cf");
    for (name, kv) in model {
        let cf = db.cf_handle(name).unwrap_or_else(|| panic!("step {step}: family {name} missing"));
        let got: Vec<(Vec<u8>, Vec<u8>)> = db
            .iterator_cf(&cf, IteratorMode::Start)
            .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).expect("iterate"))
            .collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> =
            kv.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(got, want, "step {step}: family {name}");
    }
}

fn key(rng: &mut StdRng) -> Vec<u8> {
    format!("k{:03}", rng.gen_range(0..200)).into_bytes()
}

fn run(seed: u64, steps: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let fs = MemFs::new();
    let mut model: Model = BTreeMap::from([("default".to_string(), BTreeMap::new())]);
    let mut db = open(&fs, &model);
    let sync = WriteOptions { sync: true, ..WriteOptions::default() };
    // The snapshot held now, if any, and the families created (in this process: a reopen
    // names every family with the default options) with `snapshot_reads` off.
    let mut held: Option<Snapshot<'static>> = None;
    let mut unsnapshotted: Vec<String> = Vec::new();
    for step in 0..steps {
        let live: Vec<String> = model.keys().cloned().collect();
        let pick = |rng: &mut StdRng| live[rng.gen_range(0..live.len())].clone();
        match rng.gen_range(0..100) {
            0..=44 => {
                let name = pick(&mut rng);
                let cf = db.cf_handle(&name).unwrap();
                let k = key(&mut rng);
                let v = format!("{seed}-{step}").into_bytes();
                db.put_cf_opt(&cf, &k, &v, &sync).unwrap();
                model.get_mut(&name).unwrap().insert(k, v);
            }
            45..=54 => {
                let name = pick(&mut rng);
                let cf = db.cf_handle(&name).unwrap();
                let k = key(&mut rng);
                db.delete_cf_opt(&cf, &k, &sync).unwrap();
                model.get_mut(&name).unwrap().remove(&k);
            }
            55..=59 => {
                let name = pick(&mut rng);
                let cf = db.cf_handle(&name).unwrap();
                let (mut lo, mut hi) = (key(&mut rng), key(&mut rng));
                if lo > hi {
                    std::mem::swap(&mut lo, &mut hi);
                }
                db.delete_range_cf_opt(&cf, &lo, &hi, &sync).unwrap();
                model.get_mut(&name).unwrap().retain(|k, _| *k < lo || *k >= hi);
            }
            60..=74 => {
                // One batch across families: all of it or none of it, always.
                let mut b = WriteBatch::new();
                let mut changes = Vec::new();
                for _ in 0..rng.gen_range(1..8) {
                    let name = pick(&mut rng);
                    let cf = db.cf_handle(&name).unwrap();
                    let k = key(&mut rng);
                    if rng.gen_bool(0.8) {
                        let v = format!("{seed}-{step}-b").into_bytes();
                        b.put_cf(&cf, &k, &v);
                        changes.push((name, k, Some(v)));
                    } else {
                        b.delete_cf(&cf, &k);
                        changes.push((name, k, None));
                    }
                }
                db.write_opt(b, &sync).unwrap();
                for (name, k, v) in changes {
                    let m = model.get_mut(&name).unwrap();
                    match v {
                        Some(v) => m.insert(k, v),
                        None => m.remove(&k),
                    };
                }
            }
            75..=77 => {
                let cf = db.cf_handle(pick(&mut rng)).unwrap();
                db.flush_cf(&cf).unwrap();
            }
            78..=79 => {
                held = if held.is_some() { None } else { Some(db.snapshot()) };
                if let Some(snap) = &held {
                    for name in &unsnapshotted {
                        let cf = db.cf_handle(name).unwrap();
                        let ro = ReadOptions {
                            snapshot: Some(snap.handle().clone()),
                            ..ReadOptions::default()
                        };
                        let r = db.get_cf_opt(&cf, key(&mut rng), &ro);
                        assert!(matches!(r, Err(Error::InvalidArgument(_))), "step {step}: {r:?}");
                    }
                }
            }
            80..=82 => {
                let cf = db.cf_handle(pick(&mut rng)).unwrap();
                db.compact_range_cf(&cf, None::<&[u8]>, None::<&[u8]>).unwrap();
            }
            83..=87 => {
                let absent: Vec<&str> =
                    NAMES.iter().copied().filter(|n| !model.contains_key(*n)).collect();
                if !absent.is_empty() {
                    let name = absent[rng.gen_range(0..absent.len())];
                    let opts = family_opts(&fs, &mut rng);
                    db.create_cf(name, &opts).unwrap();
                    if !opts.snapshot_reads {
                        unsnapshotted.push(name.to_string());
                    }
                    model.insert(name.to_string(), BTreeMap::new());
                } else {
                    let name = NAMES[rng.gen_range(0..NAMES.len())];
                    db.drop_cf(name).unwrap();
                    unsnapshotted.retain(|n| n != name);
                    model.remove(name);
                }
            }
            88..=93 => {
                (held, unsnapshotted) = (None, Vec::new());
                drop(db);
                db = open(&fs, &model);
                check(&fs, &db, &model, step);
            }
            _ => {
                // Every write, creation and drop was synced: power loss keeps them all.
                let mode = if rng.gen_bool(0.5) {
                    CrashMode::PowerLoss
                } else {
                    CrashMode::TornPowerLoss { seed: rng.gen() }
                };
                fs.crash(mode);
                (held, unsnapshotted) = (None, Vec::new());
                drop(db);
                db = open(&fs, &model);
                check(&fs, &db, &model, step);
            }
        }
    }
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    check(&fs, &db, &model, steps);
}

#[test]
fn families_match_the_model_through_drops_reopens_and_power_loss() {
    for seed in 0..12 {
        run(seed, 400);
    }
}
