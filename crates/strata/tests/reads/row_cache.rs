//! The row cache (`Options::row_cache`): a second read of a key in a table comes from it;
//! what it keeps for a read covered by a newer range tombstone still serves a read that is
//! not; reads at snapshots older than a table get their own rows; DBs sharing one cache keep
//! their own rows; and a random workload of puts, merges, deletes, range deletes, blob values,
//! snapshots, flushes and compactions reads as a model says, through a cache small enough to
//! evict, with pinned, multi and uncached reads among the gets.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::env::MemFs;
use strata::merge_operator::builtin_merge_operator;
use strata::statistics::Ticker;
use strata::{
    BlobOptions, BlockCacheAdmission as Admission, Cache, Db, LruCacheOptions, Options, ReadOptions,
};

fn options(fs: &MemFs, rows: &Cache) -> Options {
    let mut o = Options {
        fs: Arc::new(fs.clone()),
        row_cache: Some(rows.clone()),
        merge_operator: builtin_merge_operator("stringappend"),
        disable_auto_compactions: true,
        bloom_bits_per_key: 10,
        ..Options::default()
    };
    o.enable_statistics();
    o
}

fn counts(o: &Options) -> (u64, u64) {
    (o.get_ticker_count(Ticker::RowCacheHit), o.get_ticker_count(Ticker::RowCacheMiss))
}

#[test]
fn a_second_read_of_a_key_in_a_table_comes_from_the_row_cache() {
    let fs = MemFs::new();
    let rows = Cache::new_lru(1 << 20);
    let o = options(&fs, &rows);
    let db = Db::open(&o, "/db").unwrap();
    db.put("a", "1").unwrap();
    db.put("b", "2").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(counts(&o), (0, 1), "the first read misses and keeps the row");
    let blocks =
        o.get_ticker_count(Ticker::BlockCacheHit) + o.get_ticker_count(Ticker::BlockCacheMiss);
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get_pinned("a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(
        db.multi_get(["a", "b"]).into_iter().map(Result::unwrap).collect::<Vec<_>>(),
        [Some(b"1".to_vec()), Some(b"2".to_vec())]
    );
    assert_eq!(counts(&o), (3, 2), "a, pinned a and multi-get's a hit; multi-get's b missed");
    let blocks_after =
        o.get_ticker_count(Ticker::BlockCacheHit) + o.get_ticker_count(Ticker::BlockCacheMiss);
    assert_eq!(blocks_after - blocks, 1, "only b's read looked for a block");
    assert!(rows.usage() > 0, "the rows are charged to the cache");
    // A key the table's filter rules out asks the row cache nothing.
    assert_eq!(db.get("aa").unwrap(), None);
    assert_eq!(counts(&o), (3, 2));
    // A read that asks not to fill caches takes a row but keeps none.
    let uncached = ReadOptions { fill_cache: false, ..ReadOptions::default() };
    db.put("c", "3").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get_opt("c", &uncached).unwrap().as_deref(), Some(&b"3"[..]));
    assert_eq!(db.get_opt("c", &uncached).unwrap().as_deref(), Some(&b"3"[..]));
    assert_eq!(counts(&o), (3, 4));
    assert_eq!(db.get_opt("a", &uncached).unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(counts(&o), (4, 4));
}

/// With no filter to rule a table out, a read of a key the table lacks asks the row cache and
/// keeps no row (there is nothing to replay).
#[test]
fn a_table_without_the_key_keeps_no_row() {
    let fs = MemFs::new();
    let rows = Cache::new_lru(1 << 20);
    let o = Options { bloom_bits_per_key: 0, ..options(&fs, &rows) };
    let db = Db::open(&o, "/db").unwrap();
    db.put("a", "1").unwrap();
    db.put("b", "2").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get("aa").unwrap(), None);
    assert_eq!(db.get("aa").unwrap(), None);
    assert_eq!(counts(&o), (0, 2));
    assert_eq!(rows.usage(), 0);
}

/// A table holding a key's merge, its base and a range tombstone over both: a read that sees
/// the tombstone and one under a snapshot taken before it keep a row each, and each replays
/// its own (the older one the operand and the base below it).
#[test]
fn reads_on_either_side_of_a_tables_own_tombstone_keep_their_own_rows() {
    let fs = MemFs::new();
    let rows = Cache::new_lru(1 << 20);
    let o = options(&fs, &rows);
    let db = Db::open(&o, "/db").unwrap();
    db.put("k", "base").unwrap();
    db.merge("k", "op").unwrap();
    let before = db.snapshot();
    db.delete_range("a", "z").unwrap();
    db.merge("m", "alone").unwrap();
    db.flush().unwrap();
    for round in 0..2 {
        assert_eq!(db.get("k").unwrap(), None, "round {round}: the tombstone covers the key");
        assert_eq!(before.get("k").unwrap().as_deref(), Some(&b"base,op"[..]), "round {round}");
        assert_eq!(db.get("m").unwrap().as_deref(), Some(&b"alone"[..]), "round {round}");
    }
    assert_eq!(counts(&o), (3, 3));
}

#[test]
fn a_snapshot_older_than_a_table_reads_its_own_row() {
    let fs = MemFs::new();
    let rows = Cache::new_lru(1 << 20);
    let o = options(&fs, &rows);
    let db = Db::open(&o, "/db").unwrap();
    db.put("k", "old").unwrap();
    let old = db.snapshot();
    db.put("k", "new").unwrap();
    db.delete("gone").unwrap();
    db.flush().unwrap();
    for _ in 0..2 {
        assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"new"[..]));
        assert_eq!(old.get("k").unwrap().as_deref(), Some(&b"old"[..]));
        assert_eq!(db.get("gone").unwrap(), None);
    }
    assert_eq!(counts(&o), (3, 3), "three rows, each read twice");
}

#[test]
fn dbs_sharing_a_row_cache_keep_their_own_rows() {
    let fs = MemFs::new();
    let rows = Cache::new_lru(1 << 20);
    let a = Db::open(&options(&fs, &rows), "/a").unwrap();
    let b = Db::open(&options(&fs, &rows), "/b").unwrap();
    // The same key in tables of the same number in both DBs.
    a.put("k", "from a").unwrap();
    b.put("k", "from b").unwrap();
    a.flush().unwrap();
    b.flush().unwrap();
    for _ in 0..2 {
        assert_eq!(a.get("k").unwrap().as_deref(), Some(&b"from a"[..]));
        assert_eq!(b.get("k").unwrap().as_deref(), Some(&b"from b"[..]));
    }
    // A reopened DB reads under a new owner: no row of the old open answers for it.
    drop(a);
    let o = options(&fs, &rows);
    let a = Db::open(&o, "/a").unwrap();
    assert_eq!(a.get("k").unwrap().as_deref(), Some(&b"from a"[..]));
    assert_eq!(counts(&o), (0, 1));
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// Random values around the blob threshold, so some are kept in blob files.
fn value(rng: &mut StdRng, n: u32) -> Vec<u8> {
    let len = rng.gen_range(1..200);
    let mut v = format!("v{n}-").into_bytes();
    v.resize(len.max(v.len()), b'x');
    v
}

fn check(db: &Db, model: &Model, rng: &mut StdRng, keys: u32, step: usize) {
    for _ in 0..40 {
        let k = key(rng.gen_range(0..keys));
        let want = model.get(&k);
        match rng.gen_range(0..4) {
            0 => assert_eq!(db.get(&k).unwrap().as_ref(), want, "step {step}"),
            1 => assert_eq!(
                db.get_pinned(&k).unwrap().as_deref(),
                want.map(Vec::as_slice),
                "step {step}"
            ),
            2 => {
                let ro = ReadOptions { fill_cache: false, ..ReadOptions::default() };
                assert_eq!(db.get_opt(&k, &ro).unwrap().as_ref(), want, "step {step}");
            }
            _ => {
                let k2 = key(rng.gen_range(0..keys));
                let got: Vec<_> = db.multi_get([&k, &k2]).into_iter().map(Result::unwrap).collect();
                assert_eq!(got, [want.cloned(), model.get(&k2).cloned()], "step {step}");
            }
        }
    }
}

#[test]
fn random_reads_through_a_small_row_cache_match_a_model() {
    for seed in 0..3u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let fs = MemFs::new();
        // Small: rows are evicted and read again all along; half the seeds take every row
        // in, the others only a row missed twice when the cache is full (the default).
        let admission = if seed % 2 == 0 { Admission::Always } else { Admission::SecondMiss };
        let rows =
            Cache::new_lru_opts(&LruCacheOptions { admission, ..LruCacheOptions::new(16 << 10) })
                .unwrap();
        let mut o = options(&fs, &rows);
        o.disable_auto_compactions = false;
        o.write_buffer_size = 16 << 10;
        o.level0_file_num_compaction_trigger = 3;
        o.blob =
            BlobOptions { enable_blob_files: true, min_blob_size: 100, ..BlobOptions::default() };
        let path = Path::new("/db");
        let mut db = Db::open(&o, path).unwrap();
        let keys = 300;
        let mut model = Model::new();
        let mut snaps = Vec::new();
        for step in 0..3000usize {
            let k = key(rng.gen_range(0..keys));
            match rng.gen_range(0..100) {
                0..=44 => {
                    let v = value(&mut rng, step as u32);
                    db.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
                45..=59 => {
                    let op = format!("m{step}").into_bytes();
                    db.merge(&k, &op).unwrap();
                    // stringappend: "old,new", or the operand alone on no base.
                    let e = model.entry(k).or_default();
                    *e = if e.is_empty() { op } else { [&e[..], b",", &op[..]].concat() };
                }
                60..=69 => {
                    db.delete(&k).unwrap();
                    model.remove(&k);
                }
                70..=71 => {
                    let hi = key(rng.gen_range(0..keys));
                    let (lo, hi) = if k <= hi { (k, hi) } else { (hi, k) };
                    db.delete_range(&lo, &hi).unwrap();
                    model.retain(|x, _| !(lo <= *x && *x < hi));
                }
                72..=73 => {
                    snaps.push((db.snapshot(), model.clone()));
                    if snaps.len() > 3 {
                        snaps.remove(0);
                    }
                }
                74..=75 => db.flush().unwrap(),
                76 => db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap(),
                77 => {
                    snaps.clear();
                    drop(db);
                    db = Db::open(&o, path).unwrap();
                }
                _ => check(&db, &model, &mut rng, keys, step),
            }
            for (snap, m) in &snaps {
                let k = key(rng.gen_range(0..keys));
                assert_eq!(snap.get(&k).unwrap().as_ref(), m.get(&k), "seed {seed} step {step}");
            }
        }
        let (hits, misses) = counts(&o);
        assert!(hits > 1000 && misses > 2000, "seed {seed}: {hits} hits, {misses} misses");
    }
}
