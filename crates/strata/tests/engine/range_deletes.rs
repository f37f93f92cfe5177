//! Range deletes (`delete_range`) against a BTreeMap model: a random workload of puts, deletes,
//! range deletes, merges, snapshots, flushes, manual compactions and reopens with tiny write
//! buffers and levels, so tombstones cross memtables, L0 and several levels; plus targeted
//! cases (newer writes inside a deleted range, overlapping tombstones, a tombstone spanning
//! many files, seeks into a huge deleted range).

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::MemFs;
use strata::merge_operator::builtin_merge_operator;
use strata::{CompressionType, Db, Error, IteratorMode, Options, ReadOptions, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 16 << 10,
        block_size: 512,
        level0_file_num_compaction_trigger: 2,
        max_bytes_for_level_base: 32 << 10,
        max_bytes_for_level_multiplier: 3.0,
        target_file_size_base: 8 << 10,
        max_subcompactions: 2,
        max_background_jobs: 3,
        merge_operator: builtin_merge_operator("uint64add"),
        compression: CompressionType::None,
        ..Options::default()
    }
}

/// Largest key space of the randomized workload.
const KEYS: u64 = 2000;

fn key(i: u64) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn counter(v: &[u8]) -> u64 {
    u64::from_le_bytes(v.try_into().unwrap())
}

fn model_delete_range(m: &mut Model, lo: &[u8], hi: &[u8]) {
    m.retain(|k, _| !(k.as_slice() >= lo && k.as_slice() < hi));
}

fn in_bounds(m: &Model, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.iter()
        .filter(|(k, _)| {
            lo.is_none_or(|l| k.as_slice() >= l) && hi.is_none_or(|h| k.as_slice() < h)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Forward and backward scans within random bounds, and random seeks with a few steps each
/// way, all compared with the model.
fn check_view(db: &Db, snap: Option<&strata::Snapshot>, m: &Model, rng: &mut StdRng, ctx: &str) {
    let bound = |rng: &mut StdRng| rng.gen_bool(0.5).then(|| key(rng.gen_range(0..KEYS + 100)));
    for _ in 0..3 {
        let (lo, hi) = (bound(rng), bound(rng));
        let mut ro = ReadOptions::default();
        if let Some(s) = snap {
            ro.set_snapshot(s);
        }
        ro.iterate_lower_bound.clone_from(&lo);
        ro.iterate_upper_bound.clone_from(&hi);
        let want = in_bounds(m, lo.as_deref(), hi.as_deref());
        let fwd: Vec<(Vec<u8>, Vec<u8>)> = db
            .iterator_opt(IteratorMode::Start, &ro)
            .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(fwd, want, "{ctx}: forward {lo:?}..{hi:?}");
        let mut back: Vec<(Vec<u8>, Vec<u8>)> = db
            .iterator_opt(IteratorMode::End, &ro)
            .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
            .collect::<Result<_, _>>()
            .unwrap();
        back.reverse();
        assert_eq!(back, want, "{ctx}: backward {lo:?}..{hi:?}");

        let mut it = db.raw_iterator_opt(&ro);
        for _ in 0..10 {
            let t = key(rng.gen_range(0..KEYS + 100));
            let ge = want.partition_point(|(k, _)| *k < t);
            it.seek(&t);
            for step in 0..3 {
                let expect = want.get(ge + step).map(|(k, v)| (k.as_slice(), v.as_slice()));
                assert_eq!(it.item(), expect, "{ctx}: seek {t:?} + {step}");
                it.next();
            }
            let le = want.partition_point(|(k, _)| *k <= t);
            it.seek_for_prev(&t);
            for step in 0..3 {
                let expect = (le > step)
                    .then(|| &want[le - 1 - step])
                    .map(|(k, v)| (k.as_slice(), v.as_slice()));
                assert_eq!(it.item(), expect, "{ctx}: seek_for_prev {t:?} - {step}");
                it.prev();
            }
            // Direction changes right after a seek.
            it.seek(&t);
            if it.valid() {
                it.prev();
                let expect = (ge > 0).then(|| want[ge - 1].0.as_slice());
                assert_eq!(it.key(), expect, "{ctx}: seek {t:?} then prev");
                if it.valid() {
                    it.next();
                    assert_eq!(it.key(), Some(want[ge].0.as_slice()), "{ctx}: prev then next");
                }
            }
            it.status().unwrap();
        }
    }
    for _ in 0..50 {
        let k = key(rng.gen_range(0..KEYS + 100));
        let mut ro = ReadOptions::default();
        if let Some(s) = snap {
            ro.set_snapshot(s);
        }
        assert_eq!(db.get_opt(&k, &ro).unwrap().as_ref(), m.get(&k), "{ctx}: get {k:?}");
    }
}

/// Seeds from `STRATA_RANGEDEL_SEEDS` (e.g. `0..50`) for longer runs; one seed by default.
#[test]
fn randomized_range_deletes_match_model() {
    let seeds = std::env::var("STRATA_RANGEDEL_SEEDS").ok().and_then(|s| {
        let (a, b) = s.split_once("..")?;
        Some(a.parse::<u64>().ok()?..b.parse::<u64>().ok()?)
    });
    for seed in seeds.unwrap_or(7..9) {
        randomized_run(seed);
    }
}

/// Odd seeds use a small key space: more overwrites, more overlapping tombstones.
fn randomized_run(seed: u64) {
    let keys = if seed.is_multiple_of(2) { KEYS } else { KEYS / 10 };
    let fs = MemFs::new();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut db = Db::open(&opts(&fs), "/db").unwrap();
    let mut model = Model::new();
    let mut snaps: Vec<(strata::Snapshot, Model)> = Vec::new();
    for round in 0..30 {
        for _ in 0..600 {
            let k = key(rng.gen_range(0..keys));
            match rng.gen_range(0..100) {
                0..=9 => {
                    db.delete(&k).unwrap();
                    model.remove(&k);
                }
                10..=12 => {
                    let a = rng.gen_range(0..keys);
                    let len = if rng.gen_bool(0.1) {
                        rng.gen_range(0..keys / 2)
                    } else {
                        rng.gen_range(0..keys / 50 + 2)
                    };
                    let (lo, hi) = (key(a), key(a + len));
                    if rng.gen_bool(0.2) {
                        let mut b = WriteBatch::new();
                        b.delete_range(&lo, &hi);
                        let v = rng.gen_range(0..1000u64).to_le_bytes();
                        b.put(&k, v);
                        db.write(b).unwrap();
                        model_delete_range(&mut model, &lo, &hi);
                        model.insert(k, v.to_vec());
                    } else {
                        db.delete_range(&lo, &hi).unwrap();
                        model_delete_range(&mut model, &lo, &hi);
                    }
                }
                13..=27 => {
                    let add = rng.gen_range(1..100u64);
                    db.merge(&k, add.to_le_bytes()).unwrap();
                    let cur = model.get(&k).map_or(0, |v| counter(v));
                    model.insert(k, (cur + add).to_le_bytes().to_vec());
                }
                _ => {
                    let v = rng.gen_range(0..1_000_000u64).to_le_bytes();
                    db.put(&k, v).unwrap();
                    model.insert(k, v.to_vec());
                }
            }
        }
        match rng.gen_range(0..6) {
            0 => db.flush().unwrap(),
            1 => {
                let a = rng.gen_range(0..keys);
                let (lo, hi) = (key(a), key(a + rng.gen_range(1..600)));
                db.compact_range(Some(&lo), Some(&hi)).unwrap();
            }
            2 if round % 5 == 4 => db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap(),
            _ => {}
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
            db = Db::open(&opts(&fs), "/db").unwrap();
        }
        check_view(&db, None, &model, &mut rng, &format!("seed {seed} round {round} latest"));
        for (i, (s, m)) in snaps.iter().enumerate() {
            let ctx = format!("seed {seed} round {round} snapshot {i}");
            check_view(&db, Some(s), m, &mut rng, &ctx);
        }
    }
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    check_view(&db, None, &model, &mut rng, "after compactions");
    let levels: Vec<u64> = (0..7)
        .map(|l| db.property_int_value(format!("strata.num-files-at-level{l}")).unwrap().unwrap())
        .collect();
    assert!(levels[2..].iter().sum::<u64>() > 0, "data reached several levels: {levels:?}");
    drop(snaps);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    check_view(&db, None, &model, &mut rng, "after full compaction");
    drop(db);
    let db = Db::open(&opts(&fs), "/db").unwrap();
    check_view(&db, None, &model, &mut rng, "after reopen");
}

fn scan(db: &Db, ro: &ReadOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.iterator_opt(IteratorMode::Start, ro)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap()
}

fn keys(db: &Db) -> Vec<String> {
    scan(db, &ReadOptions::default())
        .into_iter()
        .map(|(k, _)| String::from_utf8(k).unwrap())
        .collect()
}

#[test]
fn argument_rules() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    db.put("b", "1").unwrap();
    assert!(matches!(db.delete_range("c", "a"), Err(Error::InvalidArgument(_))));
    db.delete_range("b", "b").unwrap();
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"1"[..]));
    db.delete_range("a", "b").unwrap();
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"1"[..]), "end is exclusive");
    db.delete_range("b", "b\0").unwrap();
    assert_eq!(db.get("b").unwrap(), None);
}

#[test]
fn newer_writes_inside_a_deleted_range_are_visible() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    for stage in 0..3 {
        for i in 0..10 {
            db.put(format!("k{i}"), "old").unwrap();
        }
        if stage == 1 {
            db.flush().unwrap();
        }
        let before = db.snapshot();
        db.delete_range("k2", "k7").unwrap();
        let after = db.snapshot();
        db.put("k3", "new").unwrap();
        db.merge("k5", 5u64.to_le_bytes()).unwrap();
        if stage == 2 {
            db.flush().unwrap();
            db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        }
        assert_eq!(keys(&db), ["k0", "k1", "k3", "k5", "k7", "k8", "k9"], "stage {stage}");
        assert_eq!(db.get("k3").unwrap().as_deref(), Some(&b"new"[..]));
        assert_eq!(db.get("k5").unwrap().as_deref(), Some(&5u64.to_le_bytes()[..]));
        assert_eq!(db.get("k4").unwrap(), None);
        let mut ro = ReadOptions::default();
        ro.set_snapshot(&before);
        assert_eq!(scan(&db, &ro).len(), 10, "stage {stage}: old snapshot sees everything");
        assert_eq!(db.get_opt("k4", &ro).unwrap().as_deref(), Some(&b"old"[..]));
        ro.set_snapshot(&after);
        assert_eq!(scan(&db, &ro).len(), 5, "stage {stage}");
        assert_eq!(db.get_opt("k3", &ro).unwrap(), None);
        drop((before, after));
        db.delete_range("", "z").unwrap();
        assert!(keys(&db).is_empty());
    }
}

#[test]
fn overlapping_tombstones_across_sources() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:03}"), "v").unwrap();
    }
    db.flush().unwrap();
    db.delete_range("k010", "k040").unwrap();
    db.put("k020", "again").unwrap();
    db.flush().unwrap();
    db.delete_range("k030", "k060").unwrap();
    db.delete_range("k015", "k025").unwrap();
    db.put("k050", "again").unwrap();
    let mut want: Vec<String> =
        (0..100u32).filter(|i| !(10..60).contains(i)).map(|i| format!("k{i:03}")).collect();
    want.push("k050".into());
    want.sort();
    for pass in 0..3 {
        assert_eq!(keys(&db), want, "pass {pass}");
        let mut it = db.raw_iterator();
        it.seek_to_last();
        let mut back = Vec::new();
        while let Some(k) = it.key() {
            back.push(String::from_utf8(k.to_vec()).unwrap());
            it.prev();
        }
        back.reverse();
        assert_eq!(back, want, "pass {pass} backward");
        for i in 0..100u32 {
            let k = format!("k{i:03}");
            assert_eq!(db.get(&k).unwrap().is_some(), want.contains(&k), "pass {pass} {k}");
        }
        if pass == 0 {
            db.flush().unwrap();
        } else {
            db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        }
    }
}

#[test]
fn tombstone_spanning_many_files() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    let value = vec![b'x'; 100];
    for i in 0..3000u32 {
        db.put(format!("k{i:05}"), &value).unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let files: u64 = (0..7)
        .map(|l| db.property_int_value(format!("strata.num-files-at-level{l}")).unwrap().unwrap())
        .sum();
    assert!(files > 10, "{files} files");
    let snap = db.snapshot();
    db.delete_range("k00100", "k02900").unwrap();
    db.put("k01500", "mid").unwrap();
    let check = |db: &Db, ctx: &str| {
        let ks = keys(db);
        assert_eq!(ks.len(), 100 + 100 + 1, "{ctx}");
        assert_eq!(db.get("k00099").unwrap().as_ref(), Some(&value), "{ctx}");
        assert_eq!(db.get("k00100").unwrap(), None, "{ctx}");
        assert_eq!(db.get("k02899").unwrap(), None, "{ctx}");
        assert_eq!(db.get("k02900").unwrap().as_ref(), Some(&value), "{ctx}");
        assert_eq!(db.get("k01500").unwrap().as_deref(), Some(&b"mid"[..]), "{ctx}");
        let mut ro = ReadOptions::default();
        ro.set_snapshot(&snap);
        assert_eq!(scan(db, &ro).len(), 3000, "{ctx}: snapshot");
    };
    check(&db, "memtable");
    db.flush().unwrap();
    check(&db, "flushed");
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    check(&db, "compacted with snapshot");
    drop(snap);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let ks = keys(&db);
    assert_eq!(ks.len(), 201);
    let size = db.property_int_value("strata.total-sst-files-size").unwrap().unwrap();
    assert!(size < 201 * 200 * 2, "deleted data reclaimed: {size} bytes");
    drop(db);
    let db = Db::open(&opts(&fs), "/db").unwrap();
    assert_eq!(keys(&db), ks);
}

#[test]
fn tombstone_only_memtable_is_flushed_and_survives_reopen() {
    let fs = MemFs::new();
    let o = Options { disable_auto_compactions: true, ..opts(&fs) };
    let db = Db::open(&o, "/db").unwrap();
    for i in 0..50u32 {
        db.put(format!("k{i:02}"), "v").unwrap();
    }
    db.flush().unwrap();
    db.delete_range("k10", "k40").unwrap();
    db.flush().unwrap();
    assert_eq!(db.property_int_value("strata.num-files-at-level0").unwrap(), Some(2));
    assert_eq!(keys(&db).len(), 20);
    drop(db);
    let db = Db::open(&o, "/db").unwrap();
    assert_eq!(keys(&db).len(), 20);
    // Only in the WAL: replayed at open.
    db.delete_range("k00", "k05").unwrap();
    drop(db);
    let db = Db::open(&o, "/db").unwrap();
    assert_eq!(keys(&db).len(), 15);
    assert_eq!(db.get("k04").unwrap(), None);
    assert_eq!(db.get("k05").unwrap().as_deref(), Some(&b"v"[..]));
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(keys(&db).len(), 15);
}

/// One tombstone over 100k keys in older tables: seeks into the range jump over it instead of
/// stepping through the deleted keys.
#[test]
fn seeks_into_a_huge_deleted_range_are_cheap() {
    let fs = MemFs::new();
    let o = Options { write_buffer_size: 4 << 20, ..opts(&fs) };
    let db = Db::open(&o, "/db").unwrap();
    let mut b = WriteBatch::new();
    for i in 0..100_002u32 {
        b.put(format!("k{i:06}"), "v");
        if b.len() == 10_000 {
            db.write(std::mem::take(&mut b)).unwrap();
        }
    }
    db.write(b).unwrap();
    db.flush().unwrap();
    db.delete_range("k000001", "k100001").unwrap();
    let mut rng = StdRng::seed_from_u64(1);
    for stage in ["tombstone in memtable", "tombstone in L0"] {
        let mut it = db.raw_iterator();
        for _ in 0..1000 {
            let t = format!("k{:06}", rng.gen_range(1..100_001));
            it.seek(&t);
            assert_eq!(it.key(), Some(&b"k100001"[..]), "{stage}");
            it.seek_for_prev(&t);
            assert_eq!(it.key(), Some(&b"k000000"[..]), "{stage}");
        }
        it.seek_to_first();
        it.next();
        assert_eq!(it.key(), Some(&b"k100001"[..]));
        it.prev();
        assert_eq!(it.key(), Some(&b"k000000"[..]));
        let steps = it.internal_steps();
        assert!(steps < 20_000, "{stage}: {steps} internal steps for 2000 seeks");
        db.flush().unwrap();
    }
}

/// `compact_range` over part of L0 must not move a newer L0 file below an older one it
/// overlaps (range tombstones widen L0 files, making this common).
#[test]
fn partial_compact_range_keeps_l0_order() {
    let fs = MemFs::new();
    let o = Options { disable_auto_compactions: true, ..opts(&fs) };
    let db = Db::open(&o, "/db").unwrap();
    for c in b'm'..=b'z' {
        db.put([c], "old").unwrap();
    }
    db.flush().unwrap();
    for c in b'a'..=b'p' {
        db.put([c], "new").unwrap();
    }
    db.delete_range("c", "d").unwrap();
    db.flush().unwrap();
    db.compact_range(Some("a"), Some("b")).unwrap();
    assert_eq!(db.get("n").unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(db.get("c").unwrap(), None);
    assert_eq!(db.get("q").unwrap().as_deref(), Some(&b"old"[..]));
}
