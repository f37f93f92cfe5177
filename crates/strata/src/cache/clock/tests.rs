//! Clock cache tests: units, a randomized model test against a `HashMap`, a multi-threaded
//! stress test, and the slot protocol under Shuttle (`shuttle_`) and loom (`loom_tests`).

#[cfg(not(any(feature = "shuttle", feature = "loom")))]
mod units {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use super::super::table::ClockTable;
    use super::super::ClockCache;
    use crate::cache::Priority;

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

    fn cache(capacity: usize, estimate: usize, strict: bool) -> ClockCache<u64, u64> {
        ClockCache::new(capacity, estimate, 0, strict)
    }

    #[test]
    fn thread_safety_markers() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<ClockCache<u64, Vec<u8>>>();
        send_sync::<ClockCache<String, String>>();
    }

    #[test]
    fn set_capacity_evicts_to_fit_and_pinned_usage_counts_what_readers_hold() {
        let c = cache(1000, 10, false);
        for k in 0..50u64 {
            assert!(c.insert(k, Arc::new(k), 10, Priority::Low));
        }
        assert_eq!((c.usage(), c.pinned_usage()), (500, 0));
        let handle = c.lookup_handle(&3).unwrap();
        let shared = c.lookup(&4).unwrap();
        assert_eq!(c.pinned_usage(), 20, "a handle and a shared value");
        c.set_capacity(100);
        assert_eq!(c.capacity(), 100);
        assert!(c.usage() <= 100, "{}", c.usage());
        assert_eq!(*handle, 3, "a held entry stays readable");
        assert!(c.lookup(&3).is_some(), "a held entry is not evicted");
        drop(handle);
        drop(shared);
        assert_eq!(c.pinned_usage(), 0);
        c.erase(&3);
        c.set_capacity(2000);
        for k in 100..250u64 {
            c.insert(k, Arc::new(k), 10, Priority::Low);
        }
        assert!(c.usage() > 1000, "the raised capacity is used: {}", c.usage());
        c.check();
    }

    #[test]
    fn lookup_insert_replace_erase() {
        let c = cache(1000, 10, true);
        assert!(c.lookup(&1).is_none());
        assert!(c.insert(1, Arc::new(10), 10, Priority::Low));
        assert!(c.insert(2, Arc::new(20), 20, Priority::High));
        assert_eq!(c.lookup(&1).as_deref(), Some(&10));
        assert_eq!(c.lookup(&2).as_deref(), Some(&20));
        assert_eq!(c.usage(), 30);
        // Replace: new value and charge, one entry.
        assert!(c.insert(1, Arc::new(11), 5, Priority::Low));
        assert_eq!(c.lookup(&1).as_deref(), Some(&11));
        assert_eq!((c.usage(), c.occupancy()), (25, 2));
        c.erase(&1);
        assert!(c.lookup(&1).is_none());
        c.erase(&1);
        assert_eq!((c.usage(), c.occupancy()), (20, 1));
        assert_eq!((c.hits(), c.misses()), (3, 2));
        c.check();
    }

    #[test]
    fn a_held_value_outlives_its_eviction() {
        let c = cache(10, 10, true);
        c.insert(1, Arc::new(1), 10, Priority::Low);
        let held = c.lookup(&1).unwrap();
        c.insert(2, Arc::new(2), 10, Priority::Low);
        assert!(c.lookup(&1).is_none());
        assert_eq!(*held, 1);
        assert_eq!(c.usage(), 10);
        c.check();
    }

    #[test]
    fn a_handle_pins_its_entry_until_dropped() {
        // Strict: the pinned entry cannot be evicted, so an insert that needs its room fails.
        let c = cache(10, 10, true);
        c.insert(1, Arc::new(1), 10, Priority::Low);
        let h = c.lookup_handle(&1).unwrap();
        assert_eq!(*h, 1);
        assert!(!c.insert(2, Arc::new(2), 10, Priority::Low), "pinned: no room");
        assert_eq!(c.lookup(&1).as_deref(), Some(&1));
        drop(h);
        assert!(c.insert(2, Arc::new(2), 10, Priority::Low), "unpinned: evictable");
        assert!(c.lookup(&1).is_none());
        c.check();
    }

    #[test]
    fn an_erased_entry_is_freed_by_its_last_handle() {
        let c = cache(100, 10, true);
        c.insert(1, Arc::new(1), 10, Priority::Low);
        let (h1, h2) = (c.lookup_handle(&1).unwrap(), c.lookup_handle(&1).unwrap());
        c.erase(&1);
        assert!(c.lookup_handle(&1).is_none());
        assert_eq!((*h1, *h2), (1, 1));
        assert_eq!(c.usage(), 10, "still held");
        drop(h1);
        assert_eq!(c.usage(), 10, "still held by the second handle");
        drop(h2);
        assert_eq!((c.usage(), c.occupancy()), (0, 0));
        assert_eq!((c.hits(), c.misses()), (2, 1));
        c.check();
    }

    #[test]
    fn too_large_is_not_cached_and_drops_the_old_value() {
        let c = cache(100, 10, false);
        c.insert(1, Arc::new(1), 10, Priority::Low);
        assert!(!c.insert(1, Arc::new(2), 101, Priority::Low));
        assert!(c.lookup(&1).is_none(), "no stale value");
        assert_eq!(c.usage(), 0);
        c.check();
    }

    #[test]
    fn table_size_follows_the_estimate_and_bounds_the_entries() {
        let c = cache(64 * 100, 100, false);
        // 64 entries / 0.7 -> 91 -> 128 slots; at most 7/8 of them used.
        assert_eq!((c.table_slots(), c.live_table_slots()), (128, 128));
        for k in 0..1000 {
            c.insert(k, Arc::new(k), 1, Priority::Low);
        }
        assert!(c.occupancy() <= 112);
        assert!(c.occupancy() >= 100, "the slot budget, not the bytes, evicted");
        c.check();
    }

    #[test]
    fn a_growing_table_starts_small_and_keeps_every_entry() {
        // 1 MiB, one shard: the first generation is sized for 64 KiB entries (32 slots).
        let c = cache(1 << 20, 0, false);
        assert_eq!((c.table_slots(), c.max_generations()), (32, 1));
        for k in 0..5000 {
            assert!(c.insert(k, Arc::new(k), 100, Priority::Low));
        }
        // 500 KB fit in the bytes: the slots grew, nothing was evicted.
        assert_eq!(c.occupancy(), 5000);
        assert!(c.max_generations() >= 4, "{} generations", c.max_generations());
        assert!(c.table_slots() < 5000 * 4, "{} slots for 5000 entries", c.table_slots());
        // Each growth moved the older generations' entries into the new one.
        let occ = c.shards[0].generation_occupancy();
        assert_eq!(occ.iter().rev().skip(1).sum::<usize>(), 0, "older generations: {occ:?}");
        // The live slots are the newest generation's alone (a load factor's denominator); the
        // drained ones stay allocated.
        // (One shard; generations of 32, 128, 512, ... slots.)
        let newest = 32 << (2 * (c.max_generations() - 1));
        assert_eq!(c.live_table_slots(), newest);
        assert!(c.table_slots() > newest, "{} allocated", c.table_slots());
        for k in 0..5000 {
            assert_eq!(c.lookup(&k).as_deref(), Some(&k), "key {k} (older generations too)");
        }
        c.check();
        // Replacing and erasing reach entries in older generations.
        assert!(c.insert(3, Arc::new(33), 100, Priority::Low));
        assert_eq!(c.lookup(&3).as_deref(), Some(&33));
        c.erase(&4);
        assert!(c.lookup(&4).is_none());
        assert_eq!(c.occupancy(), 4999);
        c.check();
    }

    #[test]
    fn a_growing_table_drains_its_older_generations() {
        let c = cache(100_000, 0, true);
        for k in 0..1000 {
            c.insert(k, Arc::new(k), 100, Priority::Low);
        }
        let grown = c.max_generations();
        assert!(grown > 1);
        // New keys, never looked up again, push the first thousand out of every generation.
        for k in 1000..20_000 {
            c.insert(k, Arc::new(k), 100, Priority::Low);
            assert!(c.usage() <= 100_000);
        }
        assert!((0..1000).all(|k| c.lookup(&k).is_none()), "old generations drained");
        assert!(c.occupancy() >= 900, "the newest generation holds the bytes' worth");
        // The newest generation grows once more at most: to hold the bytes' worth alone.
        assert!(c.max_generations() <= grown + 1, "{} after {grown}", c.max_generations());
        c.check();
    }

    #[test]
    fn high_priority_entries_outlive_low_ones() {
        let c = cache(100, 1, true);
        for k in 0..50 {
            c.insert(k, Arc::new(k), 1, Priority::High);
        }
        for k in 1000..1050 {
            c.insert(k, Arc::new(k), 1, Priority::Low);
        }
        // Push 50 more low entries through: the sweep evicts low entries first.
        for k in 2000..2050 {
            c.insert(k, Arc::new(k), 1, Priority::Low);
        }
        let high = (0..50).filter(|k| c.lookup(k).is_some()).count();
        let low = (1000..1050).filter(|k| c.lookup(k).is_some()).count();
        assert_eq!(high, 50, "no high-priority entry evicted");
        assert!(low < 10, "old low-priority entries evicted ({low} left)");
        c.check();
    }

    #[test]
    fn recently_hit_entries_survive_the_sweep() {
        let c = cache(100, 1, true);
        for k in 0..100 {
            c.insert(k, Arc::new(k), 1, Priority::Low);
        }
        for _ in 0..3 {
            for k in 0..10 {
                assert!(c.lookup(&k).is_some());
            }
        }
        for k in 100..150 {
            c.insert(k, Arc::new(k), 1, Priority::Low);
        }
        assert_eq!((0..10).filter(|k| c.lookup(k).is_some()).count(), 10);
        c.check();
    }

    #[test]
    fn a_reservation_evicts_entries_and_is_never_evicted() {
        for strict in [false, true] {
            let c = cache(100, 10, strict);
            for k in 0..10 {
                assert!(c.insert(k, Arc::new(k), 10, Priority::Low));
            }
            assert_eq!(c.usage(), 100);
            assert!(c.reserve(0, 60));
            assert_eq!(c.usage(), 100, "entries evicted to make room");
            assert!(c.occupancy() <= 4);
            for k in 10..40 {
                c.insert(k, Arc::new(k), 10, Priority::High);
            }
            assert!(c.usage() <= 100 && c.usage() >= 60, "the reservation stays");
            c.check();
            c.release(0, 60);
            assert!(c.usage() <= 40);
            c.check();
        }
        // Strict: a reservation the unreferenced entries cannot make room for is refused.
        let c = cache(100, 10, true);
        assert!(c.insert(1, Arc::new(1), 10, Priority::Low));
        let pinned = c.lookup_handle(&1).expect("cached");
        assert!(!c.reserve(0, 95));
        assert_eq!(c.usage(), 10);
        drop(pinned);
        assert!(c.reserve(0, 95));
        assert_eq!(c.usage(), 95);
        c.check();
    }

    #[test]
    fn zero_capacity_holds_zero_charge_entries_only() {
        let c = cache(0, 1, true);
        assert!(!c.insert(1, Arc::new(1), 1, Priority::Low));
        assert!(c.insert(2, Arc::new(2), 0, Priority::Low));
        assert_eq!(c.lookup(&2).as_deref(), Some(&2));
        c.check();
    }

    /// Colliding probe sequences: every key shares one home slot, so lookups walk long
    /// displacement chains, and frees must undo displacements along the whole chain.
    #[test]
    fn colliding_hashes_keep_displacements_exact() {
        let t: ClockTable<u64, u64> = ClockTable::new(usize::MAX, 16, true);
        let mut model = HashMap::new();
        let mut r = Rng(7);
        for step in 0..20_000u64 {
            let key = r.below(20);
            let hash = (key % 3) << 32 | 5; // three probe sequences, one home
            match r.below(3) {
                0 => {
                    // The model holds what may be cached (the slot budget evicts silently).
                    let erased = t.erase(hash, &key);
                    assert!(erased <= usize::from(model.remove(&key).is_some()));
                    assert!(t.lookup(hash, &key).is_none());
                }
                _ => {
                    if t.insert(hash, key, Arc::new(step), 0, Priority::Low) {
                        model.insert(key, step);
                    } else {
                        model.remove(&key);
                    }
                }
            }
            let k = r.below(20);
            let got = t.lookup((k % 3) << 32 | 5, &k).map(|v| *v);
            match got {
                Some(v) => assert_eq!(Some(&v), model.get(&k), "step {step}: wrong value"),
                None => {
                    model.remove(&k); // evicted (the slot budget is 14 of 16)
                }
            }
            if step % 61 == 0 {
                t.check();
            }
        }
        t.check();
    }

    /// Random operations against a `HashMap` of what may be cached: a hit returns the value
    /// last inserted for its key; an insert that reports success is found at once; an erased
    /// or evicted key stays missing until inserted again; in strict mode the usage never
    /// exceeds the capacity; and the table's invariants hold between operations.
    #[test]
    fn model_random_operations() {
        // (seed, strict, capacity, typical charge, growing table)
        for (seed, strict, capacity, estimate, grow) in [
            (1, true, 2000, 40, false),
            (2, false, 2000, 40, false),
            (3, true, 500, 5, false),
            (4, false, 64, 64, false),
            (5, true, 600, 5, true),
            (6, false, 20_000, 8, true),
            (7, true, 2000, 40, true),
        ] {
            let c = cache(capacity, if grow { 0 } else { estimate }, strict);
            let mut model: HashMap<u64, u64> = HashMap::new();
            let mut r = Rng(seed * 0x9e37_79b9 + 1);
            for step in 0..30_000u64 {
                let key = r.below(200);
                match r.below(10) {
                    0..=3 => {
                        let got = c.lookup(&key).map(|v| *v);
                        match got {
                            Some(v) => {
                                assert_eq!(Some(&v), model.get(&key), "seed {seed} step {step}");
                            }
                            None => {
                                model.remove(&key);
                            }
                        }
                    }
                    4..=8 => {
                        let charge = r.below(2 * estimate as u64) as usize;
                        let prio = if r.below(4) == 0 { Priority::High } else { Priority::Low };
                        if c.insert(key, Arc::new(step), charge, prio) {
                            model.insert(key, step);
                            assert_eq!(c.lookup(&key).map(|v| *v), Some(step));
                        } else {
                            model.remove(&key);
                            assert!(c.lookup(&key).is_none());
                        }
                    }
                    _ => {
                        c.erase(&key);
                        model.remove(&key);
                        assert!(c.lookup(&key).is_none());
                    }
                }
                if strict {
                    assert!(c.usage() <= capacity, "seed {seed} step {step}: over capacity");
                }
                if step % 97 == 0 {
                    c.check();
                    // Every key the model holds as possibly cached and found has its value.
                    for (k, v) in &model {
                        if let Some(got) = c.lookup(k) {
                            assert_eq!(*got, *v);
                        }
                    }
                }
            }
            c.check();
        }
    }

    /// Threads hammer a small cache with lookups, inserts and erases of overlapping keys while
    /// a monitor checks the strict bound; values always carry their key, so a hit returning
    /// another key's value is caught.
    #[test]
    fn concurrent_stress_keeps_values_and_bounds() {
        for estimate in [16, 0] {
            stress(estimate);
        }
    }

    fn stress(estimate: usize) {
        let c: Arc<ClockCache<u64, (u64, u64)>> =
            Arc::new(ClockCache::new(4000, estimate, 2, true));
        let stop = Arc::new(AtomicBool::new(false));
        std::thread::scope(|s| {
            let monitor = {
                let (c, stop) = (c.clone(), stop.clone());
                s.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        assert!(c.usage() <= 4000);
                        std::thread::yield_now();
                    }
                })
            };
            let workers: Vec<_> = (0..4u64)
                .map(|t| {
                    let c = c.clone();
                    s.spawn(move || {
                        let mut r = Rng(t + 11);
                        for i in 0..40_000u64 {
                            let k = r.below(600);
                            match r.below(10) {
                                0..=2 => {
                                    if let Some(v) = c.lookup(&k) {
                                        assert_eq!(v.0, k, "a hit returned another key's value");
                                    }
                                }
                                3..=5 => {
                                    // A handle held across other operations of this thread.
                                    if let Some(h) = c.lookup_handle(&k) {
                                        assert_eq!(h.0, k, "a handle on another key's value");
                                        c.insert(k + 1, Arc::new((k + 1, i)), 1, Priority::Low);
                                        assert_eq!(h.0, k, "a held value changed");
                                    }
                                }
                                6..=8 => {
                                    let p = if i % 5 == 0 { Priority::High } else { Priority::Low };
                                    c.insert(k, Arc::new((k, i)), 1 + (k % 31) as usize, p);
                                }
                                _ => c.erase(&k),
                            }
                        }
                    })
                })
                .collect();
            for w in workers {
                w.join().unwrap();
            }
            stop.store(true, Ordering::Relaxed);
            monitor.join().unwrap();
        });
        c.check();
        assert!(c.hits() > 0 && c.misses() > 0);
    }
}

/// The slot protocol under Shuttle's randomized scheduler (`sync.rs` switches the atomics).
/// Run with `cargo test -p strata --lib --features shuttle shuttle_`.
#[cfg(feature = "shuttle")]
mod shuttle_tests {
    use std::sync::Arc;

    use super::super::table::ClockTable;
    use crate::cache::Priority;

    #[test]
    fn shuttle_clock_slots_lookup_insert_erase_evict() {
        shuttle::check_random(
            || {
                // 4 slots (3 usable), room for 2 entries of charge 1: inserts evict.
                let t = Arc::new(ClockTable::<u64, (u64, u64)>::new(2, 4, true));
                let threads: Vec<_> = (0..3u64)
                    .map(|w| {
                        let t = t.clone();
                        shuttle::thread::spawn(move || {
                            for i in 0..4u64 {
                                let k = (w + i) % 3;
                                let h = k << 32 | (k & 1); // two homes, distinct steps
                                match (w + i) % 3 {
                                    0 => {
                                        t.insert(h, k, Arc::new((k, w)), 1, Priority::Low);
                                    }
                                    1 => {
                                        if let Some(v) = t.lookup(h, &k) {
                                            assert_eq!(v.0, k);
                                        }
                                    }
                                    _ => {
                                        t.erase(h, &k);
                                    }
                                }
                                assert!(t.usage() <= 2);
                            }
                        })
                    })
                    .collect();
                for th in threads {
                    th.join().expect("worker");
                }
                t.check();
            },
            500,
        );
    }

    /// Inserts that grow a table (first generation 4 slots, room for 3) race lookups and
    /// each other: one thread grows, the others evict or retry, nothing is lost or found with
    /// another key's value, and the invariants hold in every generation.
    #[test]
    fn shuttle_clock_growth_races_lookups() {
        shuttle::check_random(
            || {
                let t = Arc::new(ClockTable::<u64, (u64, u64)>::growing(100, 4, true, 3));
                let threads: Vec<_> = (0..3u64)
                    .map(|w| {
                        let t = t.clone();
                        shuttle::thread::spawn(move || {
                            for i in 0..3u64 {
                                let k = w * 3 + i;
                                let h = k.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                                assert!(t.insert(h, k, Arc::new((k, w)), 1, Priority::Low));
                                let other = (k + 4) % 9;
                                let ho = other.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                                if let Some(v) = t.lookup(ho, &other) {
                                    assert_eq!(v.0, other);
                                }
                            }
                        })
                    })
                    .collect();
                for th in threads {
                    th.join().expect("worker");
                }
                t.check();
                // 9 entries of charge 1 fit in the bytes: growth (4, 16 slots) kept them all.
                for k in 0..9u64 {
                    let h = k.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                    assert_eq!(t.lookup(h, &k).map(|v| v.0), Some(k), "key {k}");
                }
            },
            300,
        );
    }
}

/// The slot protocol under loom: every interleaving (preemption bound 2) under the C++11
/// memory model, with the payload in loom's `UnsafeCell` (a payload read racing a write
/// fails the test). Run with `cargo test -p strata --lib --features loom loom_tests`.
#[cfg(all(feature = "loom", not(feature = "shuttle")))]
mod loom_tests {
    use std::sync::Arc;

    use super::super::table::ClockTable;
    use crate::cache::Priority;

    fn model() -> loom::model::Builder {
        let mut b = loom::model::Builder::new();
        b.preemption_bound = Some(2);
        b
    }

    /// A lookup racing an insert of its key sees nothing or the complete value.
    #[test]
    fn loom_clock_lookup_races_insert() {
        model().check(|| {
            let t = Arc::new(ClockTable::<u64, (u64, u64)>::new(10, 4, true));
            let reader = {
                let t = t.clone();
                loom::thread::spawn(move || t.lookup(1, &1).map(|v| *v))
            };
            assert!(t.insert(1, 1, Arc::new((1, 100)), 1, Priority::Low));
            let seen = reader.join().expect("reader");
            assert!(seen.is_none() || seen == Some((1, 100)));
            assert_eq!(t.lookup(1, &1).map(|v| *v), Some((1, 100)));
            t.check();
        });
    }

    /// An erase racing a lookup that holds a reference: the entry is freed exactly once (by
    /// whichever drops the last reference) and the slot ends empty.
    #[test]
    fn loom_clock_erase_races_lookup() {
        model().check(|| {
            let t = Arc::new(ClockTable::<u64, u64>::new(10, 4, true));
            t.insert(1, 1, Arc::new(7), 3, Priority::Low);
            let reader = {
                let t = t.clone();
                loom::thread::spawn(move || t.lookup(1, &1).map(|v| *v))
            };
            t.erase(1, &1);
            let seen = reader.join().expect("reader");
            assert!(seen.is_none() || seen == Some(7));
            assert!(t.lookup(1, &1).is_none());
            assert_eq!((t.usage(), t.occupancy()), (0, 0));
            t.check();
        });
    }

    /// Two inserts into a table with room for one entry: each evicts or is evicted, a racing
    /// lookup of a colliding key sees a complete value, and the budget holds.
    #[test]
    fn loom_clock_inserts_evict_under_lookup() {
        model().check(|| {
            let t = Arc::new(ClockTable::<u64, (u64, u64)>::new(1, 4, true));
            t.insert(0, 0, Arc::new((0, 0)), 1, Priority::Low);
            let other = {
                let t = t.clone();
                loom::thread::spawn(move || {
                    t.insert(1 << 32, 2, Arc::new((2, 2)), 1, Priority::Low);
                })
            };
            // Same home as key 0: the lookup walks over key 0's slot.
            if let Some(v) = t.lookup(3 << 32, &2) {
                assert_eq!(*v, (2, 2));
            }
            other.join().expect("inserter");
            assert!(t.usage() <= 1);
            t.check();
        });
    }

    /// An insert that grows the table (and moves the first generation's entries into the
    /// second) races a lookup of a moved entry and one of the key being inserted: the moved
    /// entry is found throughout, the new one is seen whole or not at all, and the new
    /// generation is seen initialised.
    #[test]
    fn loom_clock_growth_races_lookup() {
        model().check(|| {
            let t = Arc::new(ClockTable::<u64, (u64, u64)>::growing(10, 4, true, 2));
            for k in 0..3u64 {
                assert!(t.insert(k, k, Arc::new((k, k)), 1, Priority::Low));
            }
            let grower = {
                let t = t.clone();
                loom::thread::spawn(move || {
                    assert!(t.insert(3, 3, Arc::new((3, 3)), 1, Priority::Low));
                })
            };
            assert_eq!(t.lookup(1, &1).map(|v| *v), Some((1, 1)));
            if let Some(v) = t.lookup(3, &3) {
                assert_eq!(*v, (3, 3));
            }
            grower.join().expect("grower");
            assert_eq!(t.generation_count(), 2);
            assert_eq!(t.generation_occupancy(), vec![0, 4], "entries moved");
            assert_eq!(t.lookup(3, &3).map(|v| *v), Some((3, 3)));
            t.check();
        });
    }
}
