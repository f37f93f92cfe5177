//! Block cache admission (`cache/admission.rs`, `cache/block_cache.rs`): a full cache takes
//! in a data block on its second miss within the window, not its first; a cache with room
//! takes every block; the block a thread just read and the cache passed over serves that
//! thread's next read of it without a second table read; `Admission::Always` takes every
//! block as RocksDB does. Table reads are counted with `FaultFs`'s recording; every value is
//! checked against a model (BTreeMap).

use std::collections::BTreeMap;
use std::sync::Arc;

use strata::env::{FaultFs, FaultOp, MemFs};
use strata::{
    BlockCacheAdmission as Admission, Cache, CompressionType, Db, HyperClockCacheOptions,
    LruCacheOptions, Options,
};

const KEYS: u64 = 20_000;
/// About 50 blocks of 1 KiB.
const CACHE: usize = 64 << 10;

fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    format!("{i:0100}").into_bytes()
}

/// One table of `KEYS` entries of about 110 bytes in 1 KiB blocks (about nine a block), read
/// through `cache`.
fn loaded(cache: &Cache) -> (Db, FaultFs) {
    let fs = FaultFs::new(Arc::new(MemFs::new()), 1);
    let opts = Options {
        fs: Arc::new(fs.clone()),
        block_size: 1024,
        block_cache: Some(cache.clone()),
        compression: CompressionType::None,
        target_file_size_base: 64 << 20,
        ..Options::default()
    };
    let db = Db::open(&opts, "/db").unwrap();
    for i in 0..KEYS {
        db.put(key(i), value(i)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    (db, fs)
}

fn lru(admission: Admission) -> Cache {
    Cache::new_lru_opts(&LruCacheOptions { admission, ..LruCacheOptions::new(CACHE) }).unwrap()
}

fn clock(admission: Admission) -> Cache {
    let mut o = HyperClockCacheOptions::new(CACHE, 1024);
    o.admission = admission;
    Cache::new_hyper_clock_opts(&o).unwrap()
}

fn caches(admission: Admission) -> [Cache; 2] {
    [lru(admission), clock(admission)]
}

/// Table reads since the last call (recording restarts).
fn table_reads(fs: &FaultFs) -> usize {
    let is_table = |p: &std::path::Path| p.extension().is_some_and(|e| e == "sst");
    let n = fs.recorded().iter().filter(|r| r.op == FaultOp::Read && is_table(&r.path)).count();
    fs.start_recording();
    n
}

fn get(db: &Db, i: u64) {
    assert_eq!(db.get(key(i)).unwrap(), Some(value(i)), "key {i}");
}

/// Reads keys 200 apart (distinct blocks) until the cache is full.
fn fill(db: &Db, cache: &Cache) {
    let mut i = 0;
    while cache.usage() + 2048 < cache.capacity() {
        get(db, i);
        i += 200;
        assert!(i < KEYS, "the cache did not fill: {} of {}", cache.usage(), cache.capacity());
    }
    // A few more blocks, taken in on their first miss or not.
    for j in 0..10 {
        get(db, 10_007 + j * 200);
    }
}

/// Per cache kind, over a full cache: the table reads of `x, y, x` (two blocks not read
/// before, `y` between the two misses of `x`), then those of one more read of `x`.
fn reads_of_x_y_x_then_x(admission: Admission) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    for cache in caches(admission) {
        let (db, fs) = loaded(&cache);
        fill(&db, &cache);
        let (x, y) = (15_003, 17_003);
        table_reads(&fs);
        get(&db, x);
        get(&db, y);
        get(&db, x);
        let first = table_reads(&fs);
        get(&db, x);
        out.push((format!("{:?}", cache.cache_type()), first, table_reads(&fs)));
    }
    out
}

#[test]
fn a_full_cache_takes_a_block_in_on_its_second_miss() {
    for (cache, first, then) in reads_of_x_y_x_then_x(Admission::SecondMiss) {
        // x's first miss is read and passed over, y's too (x is no longer kept), x's second
        // miss is read and taken in; the next read of x hits.
        assert_eq!((first, then), (3, 0), "{cache}");
    }
}

#[test]
fn always_takes_every_block_in() {
    for (cache, first, then) in reads_of_x_y_x_then_x(Admission::Always) {
        assert_eq!((first, then), (2, 0), "{cache}");
    }
}

#[test]
fn a_cache_with_room_takes_every_block_in() {
    for cache in caches(Admission::SecondMiss) {
        let (db, fs) = loaded(&cache);
        get(&db, 0); // opens the table (its own reads)
        table_reads(&fs);
        for i in [1_000, 3_000, 5_000, 1_000, 3_000, 5_000] {
            get(&db, i);
        }
        assert_eq!(table_reads(&fs), 3, "{:?}", cache.cache_type());
    }
}

#[test]
fn the_block_just_passed_over_serves_the_next_read_of_it() {
    for cache in caches(Admission::SecondMiss) {
        let (db, fs) = loaded(&cache);
        fill(&db, &cache);
        table_reads(&fs);
        // Neighbouring keys, one after the other: most pairs share a block, which must be
        // read once (without the kept block: twice, as the cache passes over its first miss).
        let pairs = 100;
        for p in 0..pairs {
            let i = 1 + p * 190;
            get(&db, i);
            get(&db, i + 1);
        }
        let reads = table_reads(&fs);
        assert!(reads <= pairs as usize * 5 / 4, "{:?}: {reads} reads", cache.cache_type());
    }
}

/// Hit ratio of a read mix over a full cache: half the reads go to 40 hot blocks (fewer than
/// the cache's ~55), half to the table's other blocks at random.
fn hot_hit_ratio(cache: Cache) -> f64 {
    let (db, _fs) = loaded(&cache);
    fill(&db, &cache);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (hits0, misses0) = (cache.hits(), cache.misses());
    for n in 0..20_000u64 {
        let i = if n % 2 == 0 { (rand() % 40) * 400 + 7 } else { rand() % KEYS };
        get(&db, i);
    }
    let (hits, misses) = (cache.hits() - hits0, cache.misses() - misses0);
    hits as f64 / (hits + misses) as f64
}

#[test]
fn hot_blocks_stay_while_cold_ones_pass() {
    for (second, always) in [
        (hot_hit_ratio(lru(Admission::SecondMiss)), hot_hit_ratio(lru(Admission::Always))),
        (hot_hit_ratio(clock(Admission::SecondMiss)), hot_hit_ratio(clock(Admission::Always))),
    ] {
        // Every cold read evicts a block under Always (often a hot one); under SecondMiss
        // cold blocks rarely get in, so the hot ones stay: most hot reads hit.
        assert!(second > 0.4, "hit ratio {second} with SecondMiss (Always: {always})");
        assert!(second >= always, "SecondMiss {second} vs Always {always}");
    }
}

#[test]
fn threads_read_right_values_through_a_thrashing_cache() {
    let model: BTreeMap<u64, Vec<u8>> = (0..KEYS).map(|i| (i, value(i))).collect();
    for cache in caches(Admission::SecondMiss) {
        let (db, _fs) = loaded(&cache);
        let db = Arc::new(db);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (db, model) = (Arc::clone(&db), &model);
                s.spawn(move || {
                    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (t + 1);
                    for _ in 0..5_000 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        // Runs of neighbours and jumps, so kept blocks are used and replaced.
                        let base = x % (KEYS - 3);
                        for i in base..base + (x >> 60) % 4 {
                            assert_eq!(db.get(key(i)).unwrap().as_ref(), model.get(&i), "key {i}");
                        }
                    }
                });
            }
        });
        assert!(cache.usage() <= cache.capacity() + 8 * 1024, "{:?}", cache.cache_type());
    }
}
