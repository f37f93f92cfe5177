//! `cache_bench`: RocksDB's cache micro-benchmark (`cache/cache_bench_tool.cc`) for Strata's
//! caches and, with the `rocksdb` feature and `-engine=rocksdb`, RocksDB's own: the same flags,
//! workload and output, so runs compare line by line.
//!
//! The workload (per thread, `-ops_per_thread` operations): pick a key (uniform, skewed toward
//! small keys by taking the minimum of `1 + -skew` draws), then by the percentages:
//! lookup and insert on a miss (`-lookup_insert_percent`), insert (`-insert_percent`), insert
//! without keeping the handle (`-blind_insert_percent`), lookup (`-lookup_percent`) or erase
//! (`-erase_percent`). A hit hashes the value (unless `-lean`); values are `-value_bytes` of
//! random data charged at their size. As RocksDB's tool, each thread keeps the most recent
//! handles it looked up or inserted pinned, `-pinned_ratio` of the cache in all: a lookup
//! keeps the cache's own handle (Strata's clock cache holds the slot, its LRU cache gives a
//! clone of the value's `Arc`, RocksDB's caches a `Cache::Handle` released on drop); an
//! inserted value is pinned as the caller's own `Arc` reference. Keys are drawn with wyrand, a
//! generator of a few instructions, so that the `1 + -skew` draws per operation weigh little
//! next to the cache. `-max_key` defaults to `cache_size / resident_ratio / value_bytes`.
//!
//! One loop for every cache: `workload.rs` is generic over [`caches::BenchCache`] and
//! monomorphized per engine, so both engines run the same key generator, value sizes and
//! handle discipline; the only difference is the call into the cache. RocksDB's caches are
//! reached through a C++ shim (`rocks_cache_shim.cc`, `rocks_cache.rs`): neither the `rocksdb`
//! crate nor RocksDB's C API can insert into or look up in a cache. That adds one non-inlined
//! call per operation on RocksDB's side (its caches are virtual calls anyway).
//!
//! Caches (`-cache_type`, the same for both engines): `lru_cache` (high-priority pool ratio
//! 0.5, as RocksDB's tool sets); `fixed_hyper_clock_cache`, a clock cache with fixed tables
//! sized for `-value_bytes_estimate`, or `-value_bytes` when that is 0;
//! `auto_hyper_clock_cache` and a bare `hyper_clock_cache` (as RocksDB 11's own tool reads it),
//! the same cache with tables that grow (no estimate). RocksDB charges each entry's metadata to the capacity as well (its default
//! policy), so it holds slightly fewer entries at one `-cache_size`.
//!
//! Differences from RocksDB's tool: no latency histograms, stats thread, secondary cache or
//! capacity variation. Timing adds the process's CPU time (user + system) per operation,
//! which shows the cost difference even where the machine has fewer cores than threads.

mod caches;
mod flags;
#[cfg(feature = "rocksdb")]
mod rocks_cache;
mod workload;

pub use flags::CacheBenchFlags;
pub use workload::run;
