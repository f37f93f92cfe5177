//! A `WriteBufferManager` given a block cache charges the memtables' memory to it, for both
//! cache kinds: `block-cache-usage` covers the memtables (in whole reservation units), data
//! blocks are evicted to make room (re-reads miss), the cache stays within its capacity, and
//! the charge goes when the memtables are flushed and the DB closes.
//!
//! Regression: a reservation unit (256 KiB) used to be held whole in one shard; this cache's
//! 16 shards hold 512 KiB each, so two units took a shard whole, and the clock cache (not
//! strict) then let that shard's blocks past its capacity: the usage ended above the cache's
//! capacity after the re-reads below. Units are now split over all shards.

use std::sync::Arc;

use strata::env::MemFs;
use strata::{Cache, Db, Options, WriteBufferManager, WRITE_BUFFER_CACHE_UNIT as UNIT};

const CAPACITY: usize = 8 << 20;

fn value(i: u32) -> Vec<u8> {
    // Not compressible, so the tables (and their cached blocks) are as large as the data.
    let mut x = u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..1000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn usage(db: &Db) -> usize {
    db.property_int_value("rocksdb.block-cache-usage").unwrap().unwrap() as usize
}

/// Waits until only the fresh memtable's first chunk is counted: flushed memtables are freed
/// by whoever drops their last reference, right after the flush.
fn settle(m: &WriteBufferManager) {
    let t = std::time::Instant::now();
    while m.memory_usage() != 4096 {
        assert!(t.elapsed().as_secs() < 30, "flushed memtables never freed");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

fn check(cache: Cache) {
    let kind = cache.cache_type();
    let m = Arc::new(WriteBufferManager::new(0, Some(cache.clone()), false));
    assert!(m.cost_to_cache() && !m.enabled());
    let fs = MemFs::new();
    let o = Options {
        fs: Arc::new(fs.clone()),
        block_cache: Some(cache.clone()),
        write_buffer_size: 64 << 20,
        write_buffer_manager: Some(m.clone()),
        // Exact units below: an empty memtable is its first chunk alone, without a filter.
        memtable_bloom_size_ratio: 0.0,
        ..Options::default()
    };
    let db = Db::open(&o, "/db").unwrap();
    // The empty memtable's first chunk is charged: one unit.
    assert_eq!(usage(&db), UNIT, "{kind:?}");
    // 12 MiB of tables, read once: the cache fills with their blocks.
    let n = 12_000u32;
    for i in 0..n {
        db.put(format!("k{i:08}"), value(i)).unwrap();
    }
    db.flush().unwrap();
    for i in 0..n {
        assert_eq!(db.get(format!("k{i:08}")).unwrap(), Some(value(i)));
    }
    settle(&m);
    let full = usage(&db);
    assert!(full > CAPACITY * 3 / 4 && full <= CAPACITY, "{kind:?}: {full}");
    // Recently read keys are cached.
    let hot = (n - 200..n).map(|i| format!("k{i:08}")).collect::<Vec<_>>();
    let misses = cache.misses();
    for k in &hot {
        db.get(k).unwrap();
    }
    assert_eq!(cache.misses(), misses, "{kind:?}: the hot keys' blocks are cached");

    // 5 MiB into the memtable (no flush: 64 MiB buffer, no budget).
    for i in 0..5000u32 {
        db.put(format!("m{i:08}"), value(i)).unwrap();
    }
    let mem = m.memory_usage();
    assert!(mem >= 5 << 20, "{kind:?}: {mem}");
    let charged = mem.div_ceil(UNIT) * UNIT;
    let now = usage(&db);
    assert!(now >= charged, "{kind:?}: block-cache-usage {now} covers the memtables {charged}");
    assert!(now <= CAPACITY, "{kind:?}: {now} over the capacity");
    // The memtables pushed out blocks: reading all the old keys again misses.
    let misses = cache.misses();
    for i in (0..n).step_by(7) {
        assert_eq!(db.get(format!("k{i:08}")).unwrap(), Some(value(i)));
    }
    let missed = cache.misses() - misses;
    assert!(missed > 100, "{kind:?}: only {missed} misses");
    let after = usage(&db);
    assert!(after <= CAPACITY, "{kind:?}: {after} over the capacity after the re-reads");
    assert!(usage(&db) >= charged, "{kind:?}: reading never evicts the charge");

    // Flushed and freed: the charge goes back to one unit.
    db.flush().unwrap();
    settle(&m);
    let blocks = usage(&db) - UNIT;
    assert!(blocks <= CAPACITY - UNIT);
    drop(db);
    assert_eq!(m.memory_usage(), 0);
    // Only blocks remain (no reservation): the usage fell by the last unit.
    assert!(cache.usage() <= blocks, "{kind:?}: {} > {blocks}", cache.usage());
}

#[test]
fn lru_cache_is_charged() {
    check(Cache::new_lru(CAPACITY));
}

#[test]
fn clock_cache_is_charged() {
    check(Cache::new_hyper_clock(CAPACITY, 0).unwrap());
}

#[test]
fn charge_alone_follows_memory_in_units() {
    // No block is ever read: the cache holds the memtables' charge and nothing else.
    for cache in [Cache::new_lru(CAPACITY), Cache::new_hyper_clock(CAPACITY, 4096).unwrap()] {
        let m = Arc::new(WriteBufferManager::new(64 << 20, Some(cache.clone()), false));
        let fs = MemFs::new();
        let o = Options {
            fs: Arc::new(fs.clone()),
            block_cache: Some(cache.clone()),
            write_buffer_manager: Some(m.clone()),
            ..Options::default()
        };
        let dbs: Vec<Db> = ["/x", "/y"].iter().map(|p| Db::open(&o, p).unwrap()).collect();
        for (d, db) in dbs.iter().enumerate() {
            for i in 0..(1000 * (d as u32 + 1)) {
                db.put(format!("k{i:08}"), value(i)).unwrap();
                assert_eq!(cache.usage(), m.memory_usage().div_ceil(UNIT) * UNIT);
            }
        }
        drop(dbs);
        assert_eq!((m.memory_usage(), cache.usage()), (0, 0));
    }
}
