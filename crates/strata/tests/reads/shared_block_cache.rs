//! One block cache shared by several DBs, for both cache kinds: each DB reads its own blocks
//! (same file numbers in both DBs never mix), the shared capacity bounds them all, and the
//! cache's counters see every DB's reads.

use std::sync::Arc;

use strata::env::MemFs;
use strata::{Cache, CacheType, Db, Options};

fn open(fs: &MemFs, path: &str, cache: &Cache) -> Db {
    let o = Options {
        fs: Arc::new(fs.clone()),
        block_cache: Some(cache.clone()),
        block_size: 1024,
        write_buffer_size: 64 << 10,
        ..Options::default()
    };
    Db::open(&o, path).unwrap()
}

fn check(cache: Cache) {
    let fs = MemFs::new();
    let a = open(&fs, "/a", &cache);
    let b = open(&fs, "/b", &cache);
    // The same keys in both, different values: a mixed-up block would show the other DB's.
    for i in 0..3000u32 {
        let k = format!("k{i:06}");
        a.put(&k, format!("a{i}").repeat(10)).unwrap();
        b.put(&k, format!("b{i}").repeat(10)).unwrap();
    }
    a.flush().unwrap();
    b.flush().unwrap();
    let hits = cache.hits();
    for round in 0..2 {
        for i in (0..3000u32).step_by(3) {
            let k = format!("k{i:06}");
            assert_eq!(
                a.get(&k).unwrap(),
                Some(format!("a{i}").repeat(10).into_bytes()),
                "round {round}"
            );
            assert_eq!(
                b.get(&k).unwrap(),
                Some(format!("b{i}").repeat(10).into_bytes()),
                "round {round}"
            );
        }
    }
    assert!(cache.hits() > hits, "both DBs read through the shared cache");
    assert!(
        cache.usage() <= cache.capacity(),
        "{:?}: usage {} over {}",
        cache.cache_type(),
        cache.usage(),
        cache.capacity()
    );
    assert!(cache.usage() > 0);
    for db in [&a, &b] {
        assert_eq!(
            db.property_int_value("rocksdb.block-cache-capacity").unwrap(),
            Some(cache.capacity() as u64)
        );
    }
}

#[test]
fn lru_cache_shared_by_two_dbs() {
    check(Cache::new_lru(256 << 10));
}

#[test]
fn clock_cache_shared_by_two_dbs() {
    let c = Cache::new_hyper_clock(256 << 10, 1024).unwrap();
    assert_eq!(c.cache_type(), CacheType::HyperClock);
    check(c);
}

#[test]
fn auto_sized_clock_cache_shared_by_two_dbs() {
    let c = Cache::new_hyper_clock(256 << 10, 0).unwrap();
    assert_eq!(c.cache_type(), CacheType::HyperClock);
    check(c);
}

#[test]
fn bad_cache_options_are_errors() {
    let mut o = strata::LruCacheOptions::new(1 << 20);
    o.high_pri_pool_ratio = 1.5;
    assert!(Cache::new_lru_opts(&o).is_err());
    o.high_pri_pool_ratio = 0.5;
    o.num_shard_bits = 9;
    assert!(Cache::new_lru_opts(&o).is_err());
    o.num_shard_bits = 2;
    assert!(Cache::new_lru_opts(&o).is_ok());
}
