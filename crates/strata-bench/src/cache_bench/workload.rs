//! The measured loop and its report (RocksDB's cache_bench output lines, plus CPU per op).

use std::collections::VecDeque;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use anyhow::{anyhow, bail, Result};

use super::caches::{BenchCache, Key, StrataCache, Value};
use super::CacheBenchFlags;

/// wyrand: a per-thread generator of a few instructions (a skewed key takes `1 + -skew`
/// draws, so the generator's cost is part of every operation; its quality is ample for picking
/// keys and operations).
struct Rng(u64);

impl Rng {
    #[inline]
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = u128::from(self.0) * u128::from(self.0 ^ 0xe703_7ed1_a0b4_28db);
        (t >> 64) as u64 ^ t as u64
    }
}

#[inline]
fn key_for(rng: &mut Rng, max_key: u64, skew: u32) -> Key {
    let mut raw = rng.next();
    for _ in 0..skew {
        raw = raw.min(rng.next());
    }
    let k = ((u128::from(raw) * u128::from(max_key)) >> 64) as u64;
    [k, k]
}

fn new_value(rng: &mut Rng, bytes: u32) -> Arc<Value> {
    let mut v = Vec::with_capacity(bytes as usize + 8);
    while v.len() < bytes as usize {
        v.extend_from_slice(&rng.next().to_le_bytes());
    }
    v.truncate(bytes as usize);
    Arc::new(v)
}

/// Inserts until 100 inserts in a row do not raise the entry count or 100 keys in a row are
/// found already cached (RocksDB's procedure); returns the highest entry count.
fn populate<C: BenchCache>(cache: &C, f: &CacheBenchFlags, max_key: u64) -> Result<usize> {
    let mut rng = Rng(f.seed);
    let (mut max_occ, mut since_increase, mut since_missing) = (0, 0, 0);
    while since_increase < 100 && since_missing < 100 {
        let key = key_for(&mut rng, max_key, f.skew);
        if cache.lookup(&key).is_some() {
            since_missing += 1;
            continue;
        }
        since_missing = 0;
        cache.insert(key, new_value(&mut rng, f.value_bytes), f.value_bytes as usize);
        if cache.lookup(&key).is_none() {
            return Err(anyhow!("Failed to lookup key just inserted."));
        }
        let occ = cache.occupancy();
        if occ > max_occ {
            max_occ = occ;
            since_increase = 0;
        } else {
            since_increase += 1;
        }
    }
    Ok(max_occ)
}

struct ThreadResult {
    hits: u64,
    misses: u64,
    pinned: usize,
    micros: u64,
    checksum: u64,
    /// When the thread's loop began and ended.
    start: Instant,
    end: Instant,
}

/// A handle the thread keeps: one the cache gave, or a value the thread inserted and keeps a
/// reference to (the same for every cache).
/// Never read: each is held for its `Drop` (which releases the entry or the reference).
#[allow(dead_code)]
enum Pinned<H> {
    Cached(H),
    Own(Arc<Value>),
}

/// The measured loop, one copy per cache type (monomorphized), so every cache runs the same
/// code: the same key generator and value sizes, handles held and released the same way.
fn operate<C: BenchCache>(
    cache: &C,
    f: &CacheBenchFlags,
    tid: u32,
    max_key: u64,
    start: &Barrier,
) -> ThreadResult {
    let hundredth = u64::MAX / 100;
    let t_lookup_insert = hundredth * u64::from(f.lookup_insert_percent);
    let t_insert = t_lookup_insert + hundredth * u64::from(f.insert_percent);
    let t_blind = t_insert + hundredth * u64::from(f.blind_insert_percent);
    let t_lookup = t_blind + hundredth * u64::from(f.lookup_percent);
    let total_pins =
        ((f.cache_size as f64 * f.pinned_ratio) / f64::from(f.value_bytes) + 0.999_999) as usize;
    let pin_count = (total_pins + tid as usize) / f.threads as usize;
    // The handles kept (RocksDB's tool keeps its most recent ones); inserted values are kept
    // as the caller's own reference.
    let mut pinned: VecDeque<Pinned<C::Handle<'_>>> = VecDeque::with_capacity(pin_count + 1);
    let mut rng = Rng(f.seed.wrapping_add(1 + u64::from(tid)));
    let charge = f.value_bytes as usize;
    let (mut hits, mut misses, mut checksum) = (0u64, 0u64, 0u64);
    let use_value = |v: &Value| if f.lean { 0 } else { xxhash_rust::xxh3::xxh3_64(v) };
    start.wait();
    let t0 = Instant::now();
    for _ in 0..f.ops_per_thread {
        let key = key_for(&mut rng, max_key, f.skew);
        let op = rng.next();
        if op < t_lookup_insert {
            if let Some(v) = cache.lookup(&key) {
                hits += 1;
                checksum = checksum.wrapping_add(use_value(&v));
                pinned.push_back(Pinned::Cached(v));
            } else {
                misses += 1;
                let v = new_value(&mut rng, f.value_bytes);
                cache.insert(key, v.clone(), charge);
                pinned.push_back(Pinned::Own(v));
            }
        } else if op < t_insert {
            let v = new_value(&mut rng, f.value_bytes);
            cache.insert(key, v.clone(), charge);
            pinned.push_back(Pinned::Own(v));
        } else if op < t_blind {
            cache.insert(key, new_value(&mut rng, f.value_bytes), charge);
        } else if op < t_lookup {
            if let Some(v) = cache.lookup(&key) {
                hits += 1;
                checksum = checksum.wrapping_add(use_value(&v));
                pinned.push_back(Pinned::Cached(v));
            } else {
                misses += 1;
            }
        } else {
            cache.erase(&key);
        }
        while pinned.len() > pin_count {
            pinned.pop_front();
        }
    }
    let end = Instant::now();
    let micros = end.duration_since(t0).as_micros() as u64;
    ThreadResult { hits, misses, pinned: pinned.len(), micros, checksum, start: t0, end }
}

/// The run's wall time: from the first thread's start to the last one's end (measured by the
/// threads themselves: the main thread may be descheduled past their whole run when there are
/// fewer cores than threads).
fn parallel_secs(results: &[ThreadResult]) -> f64 {
    let first = results.iter().map(|r| r.start).min();
    let last = results.iter().map(|r| r.end).max();
    match (first, last) {
        (Some(a), Some(b)) => b.duration_since(a).as_secs_f64().max(1e-9),
        _ => 1e-9,
    }
}

/// Process CPU time (user + system) in microseconds.
fn cpu_micros() -> u64 {
    crate::io::process_cpu().map_or(0, |c| c.user_us + c.sys_us)
}

fn human_bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 4] =
        [(1 << 40, "TB"), (1 << 30, "GB"), (1 << 20, "MB"), (1 << 10, "KB")];
    for (size, name) in UNITS {
        if n >= size {
            return format!("{:.2} {name}", n as f64 / size as f64);
        }
    }
    format!("{n} B")
}

/// Runs the benchmark on `-engine`'s cache and prints RocksDB's report.
pub fn run(f: &CacheBenchFlags) -> Result<()> {
    match f.engine.as_str() {
        "strata" => run_on(&StrataCache::new(f)?, f),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => run_on(&super::rocks_cache::RocksCache::new(f)?, f),
        other => bail!("-engine={other}: {}", super::flags::ENGINES),
    }
}

fn run_on<C: BenchCache>(cache: &C, f: &CacheBenchFlags) -> Result<()> {
    let max_key = f.key_space();
    if f.populate_cache {
        let occ = populate(cache, f, max_key)?;
        println!(
            "Population complete ({occ} entries, {} average charge)",
            f.cache_size as f64 / occ.max(1) as f64
        );
    }
    println!("----------------------------");
    println!("{}", cache.version_line());
    println!("Cache impl name     : {}", cache.impl_name());
    println!("Number of threads   : {}", f.threads);
    println!("Ops per thread      : {}", f.ops_per_thread);
    println!("Cache size          : {}", human_bytes(cache.capacity() as u64));
    println!("Num shard bits      : {}", cache.num_shard_bits());
    println!("Max key             : {max_key}");
    println!("Resident ratio      : {}", f.resident_ratio);
    println!("Skew degree         : {}", f.skew);
    println!("Populate cache      : {}", i32::from(f.populate_cache));
    println!("Lookup+Insert pct   : {}%", f.lookup_insert_percent);
    println!("Insert percentage   : {}%", f.insert_percent);
    println!("Lookup percentage   : {}%", f.lookup_percent);
    println!("Erase percentage    : {}%", f.erase_percent);
    println!("Gather stats        : disabled");
    println!("----------------------------");
    let start = Barrier::new(f.threads as usize + 1);
    let cpu0 = cpu_micros();
    let results: Vec<ThreadResult> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..f.threads)
            .map(|tid| {
                let start = &start;
                s.spawn(move || operate(cache, f, tid, max_key, start))
            })
            .collect();
        start.wait();
        handles.into_iter().map(|h| h.join().expect("worker thread panicked")).collect()
    });
    let cpu = cpu_micros().saturating_sub(cpu0);
    let total_ops = u64::from(f.threads) * f.ops_per_thread;
    let secs = parallel_secs(&results);
    println!(
        "Complete in {secs:.3} s; Rough parallel ops/sec = {}",
        (total_ops as f64 / secs) as u64
    );
    let thread_secs: f64 = results.iter().map(|r| r.micros as f64 * 1e-6).sum();
    println!("Thread ops/sec = {}", (total_ops as f64 / thread_secs) as u64);
    let (hits, misses): (u64, u64) =
        results.iter().fold((0, 0), |(h, m), r| (h + r.hits, m + r.misses));
    println!("Lookup hit ratio: {}", hits as f64 / (hits + misses).max(1) as f64);
    let occ = cache.occupancy();
    match cache.table_slots() {
        Some(slots) => {
            println!("Final load factor: {} ({occ} / {slots})", occ as f64 / slots as f64);
        }
        None => println!("Final load factor: n/a ({occ} entries; the LRU table grows)"),
    }
    println!("Final usage: {} ({} bytes)", human_bytes(cache.usage() as u64), cache.usage());
    println!("Final pinned count: {}", results.iter().map(|r| r.pinned).sum::<usize>());
    println!("CPU (user+sys) per op: {:.4} us", cpu as f64 / total_ops as f64);
    if results.iter().fold(0u64, |a, r| a.wrapping_add(r.checksum)) == 1 {
        println!("You are extremely unlucky(2). Try again.");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(cache_type: &str) -> CacheBenchFlags {
        CacheBenchFlags {
            threads: 2,
            cache_size: 1 << 20,
            ops_per_thread: 2000,
            value_bytes: 1024,
            cache_type: cache_type.into(),
            ..CacheBenchFlags::default()
        }
    }

    /// Populates, runs one thread's loop, and checks hits and the byte budget.
    fn exercise<C: BenchCache>(cache: &C, f: &CacheBenchFlags, slack: usize) {
        let name = cache.impl_name();
        let occ = populate(cache, f, f.key_space()).unwrap();
        assert!(occ > 500 && occ <= 1024, "{name}: populated {occ}");
        let start = Barrier::new(1);
        let r = operate(cache, f, 0, f.key_space(), &start);
        assert!(r.hits > 0, "{name}: a populated cache hits");
        assert!(r.pinned > 0, "{name}: the thread keeps handles");
        assert!(cache.usage() <= (1 << 20) + slack, "{name}: usage {}", cache.usage());
        assert!(r.end >= r.start);
    }

    #[test]
    fn parallel_time_spans_the_threads() {
        let t = Instant::now();
        let ms = std::time::Duration::from_millis;
        let r = |a: u64, b: u64| ThreadResult {
            hits: 0,
            misses: 0,
            pinned: 0,
            micros: (b - a) * 1000,
            checksum: 0,
            start: t + ms(a),
            end: t + ms(b),
        };
        // From the first start to the last end, whatever the main thread saw.
        let secs = parallel_secs(&[r(5, 20), r(0, 10), r(8, 30)]);
        assert!((secs - 0.030).abs() < 1e-9, "{secs}");
    }

    #[test]
    fn strata_caches_run_the_workload() {
        for cache_type in ["lru_cache", "hyper_clock_cache", "auto_hyper_clock_cache"] {
            let f = small(cache_type);
            exercise(&StrataCache::new(&f).unwrap(), &f, 1024);
        }
    }

    #[cfg(feature = "rocksdb")]
    #[test]
    fn rocksdb_caches_run_the_workload() {
        for cache_type in ["lru_cache", "hyper_clock_cache", "auto_hyper_clock_cache"] {
            let f = CacheBenchFlags { engine: "rocksdb".into(), ..small(cache_type) };
            // RocksDB also charges each entry's metadata, and may exceed by a value.
            exercise(&super::super::rocks_cache::RocksCache::new(&f).unwrap(), &f, 2048);
        }
    }

    #[test]
    fn unknown_cache_type_is_refused() {
        let f = CacheBenchFlags { cache_type: "clock_cache".into(), ..CacheBenchFlags::default() };
        assert!(StrataCache::new(&f).is_err());
        let f = CacheBenchFlags { cache_type: "lru".into(), ..CacheBenchFlags::default() };
        assert!(StrataCache::new(&f).is_err());
    }
}
