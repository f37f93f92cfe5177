use std::collections::HashMap;
use std::thread;

use super::*;
use crate::cache::CacheKey;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn key(file: u64, offset: u64) -> CacheKey {
    CacheKey { owner: 0, file, offset }
}

#[test]
fn thread_safety_markers() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<LruCache<CacheKey, Vec<u8>>>();
    send_sync::<LruCache<String, String>>();
}

#[test]
fn shard_count_follows_capacity() {
    let shards = |cap| LruCache::<CacheKey, u8>::new(cap).num_shards();
    assert_eq!(shards(0), 1);
    assert_eq!(shards(4096), 1);
    assert_eq!(shards((1 << 20) - 1), 1);
    assert_eq!(shards(1 << 20), 2);
    assert_eq!(shards(3 << 20), 4);
    assert_eq!(shards(8 << 20), 16);
    assert_eq!(shards(32 << 20), 64);
    assert_eq!(shards(8 << 30), 64);
    // Shard capacities add up to the total.
    let c = LruCache::<u64, u8>::with_shard_bits(1000, 3);
    let total: usize = c.shards.iter().map(|s| s.lru.lock().capacity_for_test()).sum();
    assert_eq!(total, 1000);
}

#[test]
fn lookup_insert_erase_and_counters() {
    let c: LruCache<CacheKey, Vec<u8>> = LruCache::new(1 << 20);
    assert_eq!(c.capacity(), 1 << 20);
    assert!(c.lookup(&key(1, 0)).is_none());
    c.insert(key(1, 0), Arc::new(vec![1; 10]), 10);
    c.insert(key(1, 4096), Arc::new(vec![2; 20]), 20);
    c.insert(key(2, 0), Arc::new(vec![3; 30]), 30);
    assert_eq!(c.usage(), 60);
    assert_eq!(c.len(), 3);
    assert_eq!(c.lookup(&key(1, 4096)).as_deref(), Some(&vec![2; 20]));
    assert_eq!(c.lookup(&key(2, 0)).as_deref(), Some(&vec![3; 30]));
    c.erase(&key(1, 4096));
    c.erase(&key(1, 4096)); // absent: no effect
    c.erase(&key(9, 9));
    assert!(c.lookup(&key(1, 4096)).is_none());
    assert_eq!(c.usage(), 40);
    assert_eq!(c.len(), 2);
    assert_eq!(c.hits(), 2);
    assert_eq!(c.misses(), 2);
    c.check();
}

#[test]
fn replace_same_key() {
    let c: LruCache<CacheKey, u32> = LruCache::new(1000);
    c.insert(key(1, 1), Arc::new(1), 100);
    c.insert(key(1, 1), Arc::new(2), 250);
    assert_eq!(c.lookup(&key(1, 1)).as_deref(), Some(&2));
    assert_eq!(c.usage(), 250);
    assert_eq!(c.len(), 1);
    c.insert(key(1, 1), Arc::new(3), 5);
    assert_eq!(c.usage(), 5);
    assert_eq!(c.lookup(&key(1, 1)).as_deref(), Some(&3));
    c.check();
}

#[test]
fn recently_looked_up_entry_survives() {
    // One shard so that order is global.
    let c: LruCache<u64, u64> = LruCache::with_shard_bits(10, 0);
    for k in 0..10 {
        c.insert(k, Arc::new(k), 1);
    }
    // Touch 0..5 in reverse: LRU order is now 5,6,7,8,9,4,3,2,1,0 (oldest first).
    for k in (0..5).rev() {
        assert!(c.lookup(&k).is_some());
    }
    for k in 10..15 {
        c.insert(k, Arc::new(k), 1);
    }
    for k in 5..10 {
        assert!(c.lookup(&k).is_none(), "{k} should have been evicted");
    }
    for k in (0..5).chain(10..15) {
        assert_eq!(c.lookup(&k).as_deref(), Some(&k));
    }
    // Evict exactly one: the least recently used is 0 (looked up first in the loop above).
    c.insert(99, Arc::new(99), 1);
    assert!(c.lookup(&0).is_none());
    assert!(c.lookup(&1).is_some());
    c.check();
}

#[test]
fn oversized_entry_is_not_cached() {
    let c: LruCache<u64, u64> = LruCache::with_shard_bits(100, 0);
    c.insert(1, Arc::new(1), 60);
    c.insert(2, Arc::new(2), 101);
    assert!(c.lookup(&2).is_none());
    assert_eq!(c.lookup(&1).as_deref(), Some(&1));
    // Replacing with an oversized value drops the stale one.
    c.insert(1, Arc::new(11), 500);
    assert!(c.lookup(&1).is_none());
    assert_eq!(c.usage(), 0);
    // Exactly the capacity fits, evicting everything else.
    c.insert(3, Arc::new(3), 40);
    c.insert(4, Arc::new(4), 100);
    assert!(c.lookup(&3).is_none());
    assert_eq!(c.lookup(&4).as_deref(), Some(&4));
    assert_eq!(c.usage(), 100);
    // A zero-capacity cache holds nothing with a charge.
    let z: LruCache<u64, u64> = LruCache::new(0);
    z.insert(1, Arc::new(1), 1);
    assert!(z.lookup(&1).is_none());
    c.check();
}

#[test]
fn evicted_value_stays_alive_for_holder() {
    let c: LruCache<u64, Vec<u8>> = LruCache::with_shard_bits(10, 0);
    c.insert(1, Arc::new(vec![7; 3]), 10);
    let held = c.lookup(&1).expect("present");
    c.insert(2, Arc::new(vec![8; 3]), 10); // evicts 1
    assert!(c.lookup(&1).is_none());
    assert_eq!(*held, vec![7; 3]);
    assert_eq!(Arc::strong_count(&held), 1);
}

#[test]
fn capacity_respected_under_random_inserts() {
    for (cap, bits) in [(50_000usize, 0), (2 << 20, 2), (300_000, 6)] {
        let c: LruCache<CacheKey, u64> = LruCache::with_shard_bits(cap, bits);
        let per_shard_max = cap / c.num_shards();
        let mut r = Rng(cap as u64 | 1);
        for i in 0..20_000u64 {
            let k = key(r.below(8), r.below(4000) * 4096);
            match r.below(10) {
                0 => c.erase(&k),
                1..=3 => {
                    let _ = c.lookup(&k);
                }
                _ => {
                    let charge = r.below(per_shard_max as u64 / 4 + 2) as usize;
                    c.insert(k, Arc::new(i), charge);
                    assert!(c.usage() <= cap, "usage {} > capacity {cap}", c.usage());
                }
            }
            if i % 2_000 == 0 {
                c.check();
            }
        }
        c.check();
        assert!(c.usage() <= cap);
        // Reasonably full: random charges average an eighth of a shard.
        assert!(c.usage() > cap / 2, "usage {} of {cap}", c.usage());
    }
}

#[test]
fn matches_model_when_nothing_is_evicted() {
    // Capacity never reached: the cache must behave exactly like a map.
    let c: LruCache<CacheKey, u64> = LruCache::with_shard_bits(usize::MAX, 3);
    let mut model = HashMap::new();
    let mut r = Rng(42);
    for i in 0..30_000u64 {
        let k = key(r.below(3), r.below(2000));
        match r.below(4) {
            0 => {
                c.erase(&k);
                model.remove(&k);
            }
            1 => assert_eq!(c.lookup(&k).map(|v| *v), model.get(&k).copied()),
            _ => {
                c.insert(k, Arc::new(i), 1);
                model.insert(k, i);
            }
        }
    }
    c.check();
    assert_eq!(c.len(), model.len());
    assert_eq!(c.usage(), model.len());
    for (k, v) in &model {
        assert_eq!(c.lookup(k).as_deref(), Some(v));
    }
}

#[test]
fn string_keys_work() {
    let c: LruCache<String, String> = LruCache::new(1 << 20);
    for i in 0..1000 {
        c.insert(format!("table-{i}"), Arc::new(format!("v{i}")), 10);
    }
    for i in 0..1000 {
        assert_eq!(c.lookup(&format!("table-{i}")).as_deref(), Some(&format!("v{i}")));
    }
    c.check();
}

/// Four threads insert, look up and erase. Each thread owns the keys whose file is its id and
/// keeps a model of their latest versions: a lookup of an own key returns either nothing
/// (evicted) or exactly the latest version. Lookups of other threads' keys must return values
/// that belong to the key looked up.
#[test]
fn concurrent_threads_with_model() {
    let ops = if cfg!(miri) { 300 } else { 50_000 };
    for (cap, bits) in [(1usize << 20, 0), (4 << 20, 3), (usize::MAX, 4)] {
        let c: Arc<LruCache<CacheKey, (CacheKey, u64)>> =
            Arc::new(LruCache::with_shard_bits(cap, bits));
        let handles: Vec<_> = (0..4u64)
            .map(|t| {
                let c = Arc::clone(&c);
                thread::spawn(move || {
                    let mut model: HashMap<CacheKey, u64> = HashMap::new();
                    let mut r = Rng(t * 7919 + 1);
                    for i in 0..ops {
                        let own = key(t, r.below(1500) * 4096);
                        match r.below(8) {
                            0 => {
                                c.erase(&own);
                                model.remove(&own);
                            }
                            1..=2 => {
                                let charge = 100 + r.below(2000) as usize;
                                c.insert(own, Arc::new((own, i)), charge);
                                model.insert(own, i);
                            }
                            3..=5 => {
                                if let Some(v) = c.lookup(&own) {
                                    assert_eq!(v.0, own);
                                    assert_eq!(Some(&v.1), model.get(&own), "stale or resurrected");
                                }
                            }
                            _ => {
                                let other = key(r.below(4), r.below(1500) * 4096);
                                if let Some(v) = c.lookup(&other) {
                                    assert_eq!(v.0, other);
                                }
                            }
                        }
                    }
                    model
                })
            })
            .collect();
        let mut models = Vec::new();
        for h in handles {
            models.push(h.join().expect("thread panicked"));
        }
        c.check();
        assert!(c.usage() <= cap);
        for model in &models {
            for (k, v) in model {
                if let Some(got) = c.lookup(k) {
                    assert_eq!(got.1, *v);
                }
            }
        }
        if cap == usize::MAX {
            // Nothing evicted: exactly the union of the models.
            let total: usize = models.iter().map(HashMap::len).sum();
            assert_eq!(c.len(), total);
            for model in &models {
                for (k, v) in model {
                    assert_eq!(c.lookup(k).map(|g| g.1), Some(*v));
                }
            }
        }
    }
}

#[test]
fn hit_and_miss_counts_from_threads() {
    let c: Arc<LruCache<u64, u64>> = Arc::new(LruCache::new(64 << 20));
    for k in 0..100 {
        c.insert(k, Arc::new(k), 1);
    }
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let c = Arc::clone(&c);
            thread::spawn(move || {
                for k in 0..200 {
                    let _ = c.lookup(&k);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread panicked");
    }
    assert_eq!(c.hits(), 400);
    assert_eq!(c.misses(), 400);
}

#[test]
fn a_reservation_evicts_entries_and_is_never_evicted() {
    let c: LruCache<CacheKey, u64> = LruCache::with_shard_bits(100, 0);
    for i in 0..10 {
        c.insert(key(1, i), Arc::new(i), 10);
    }
    assert_eq!(c.usage(), 100);
    c.reserve(0, 60);
    assert_eq!(c.usage(), 100);
    assert_eq!(c.len(), 4, "the least recently used entries made room");
    for i in 10..40 {
        c.insert(key(1, i), Arc::new(i), 10);
    }
    assert_eq!(c.usage(), 100);
    assert_eq!(c.len(), 4);
    c.check();
    // Beyond the capacity: every entry goes, the reservation stays.
    c.reserve(0, 60);
    assert_eq!((c.usage(), c.len()), (120, 0));
    c.insert(key(2, 0), Arc::new(0), 10);
    assert_eq!((c.usage(), c.len()), (120, 0));
    c.check();
    c.release(0, 60);
    c.release(0, 60);
    assert_eq!(c.usage(), 0);
    c.check();
}

/// Rough numbers; run with
/// `cargo test --release -p strata cache::tests::bench -- --ignored --nocapture`.
#[test]
#[ignore = "benchmark"]
fn bench_lookup() {
    use std::time::Instant;
    let c: LruCache<CacheKey, u64> = LruCache::new(8 << 20);
    let n = 100_000u64;
    for i in 0..n {
        c.insert(key(i % 7, i * 4096), Arc::new(i), 64);
    }
    let t = Instant::now();
    let mut hits = 0u64;
    for round in 0..10 {
        for i in 0..n {
            hits += u64::from(c.lookup(&key(i % 7, i * 4096 + round % 2)).is_some());
        }
    }
    let el = t.elapsed();
    assert_eq!(hits, n * 5);
    println!("cache lookup: {:.0} ns/op (half hits)", el.as_nanos() as f64 / (10 * n) as f64);
}

#[test]
fn set_capacity_evicts_to_fit_and_pinned_usage_counts_what_readers_hold() {
    let c: LruCache<CacheKey, u64> = LruCache::with_options(8 << 20, 2, 0.5, false);
    for i in 0..1000u64 {
        c.insert(key(1, i), Arc::new(i), 4096);
    }
    assert_eq!((c.usage(), c.pinned_usage()), (1000 * 4096, 0));
    let held: Vec<Arc<u64>> = (0..10).filter_map(|i| c.lookup(&key(1, i))).collect();
    assert_eq!(c.pinned_usage(), held.len() * 4096);
    c.set_capacity(1 << 20);
    assert_eq!(c.capacity(), 1 << 20);
    assert!(c.usage() <= 1 << 20, "{}", c.usage());
    assert!(held.iter().enumerate().all(|(i, v)| **v == i as u64), "held values stay readable");
    drop(held);
    assert_eq!(c.pinned_usage(), 0);
    c.set_capacity(16 << 20);
    for i in 0..3000u64 {
        c.insert(key(2, i), Arc::new(i), 4096);
    }
    assert!(c.usage() > 8 << 20, "the raised capacity is used: {}", c.usage());
    assert!(c.usage() <= 16 << 20);
}
