//! `cache_bench`: RocksDB's cache micro-benchmark (`cache/cache_bench_tool.cc`) for Strata's
//! caches: the same flags, workload and output, so runs compare line by line.
//!
//! The workload (per thread, `-ops_per_thread` operations): pick a key (uniform, skewed toward
//! small keys by taking the minimum of `1 + -skew` draws), then by the percentages:
//! lookup and insert on a miss (`-lookup_insert_percent`), insert (`-insert_percent`), insert
//! without keeping the handle (`-blind_insert_percent`), lookup (`-lookup_percent`) or erase
//! (`-erase_percent`). A hit hashes the value (unless `-lean`); values are `-value_bytes` of
//! random data charged at their size. As RocksDB's tool, each thread keeps the most recent
//! handles it looked up or inserted pinned, `-pinned_ratio` of the cache in all: a lookup
//! takes each cache's own handle (`AnyCache::lookup_handle`: the clock cache's holds the slot,
//! the LRU cache's is a clone of the value's `Arc`); an inserted value is pinned as the
//! caller's `Arc`. Keys are drawn with wyrand, a generator of a few instructions, so that the
//! `1 + -skew` draws per operation weigh little next to the cache.
//! `-max_key` defaults to `cache_size / resident_ratio / value_bytes`.
//!
//! Differences: the LRU cache is Strata's (high-priority pool ratio 0.5, as the tool sets);
//! `hyper_clock_cache` is Strata's clock cache with a fixed table sized for
//! `-value_bytes_estimate` or `-value_bytes` entries, `auto_hyper_clock_cache` the same cache
//! with tables that grow (no estimate). No latency histograms, stats thread, secondary cache or
//! capacity variation. Timing adds the process's CPU time (user + system) per operation,
//! which shows the cost difference even where the machine has fewer cores than threads.

mod flags;
mod workload;

pub use flags::CacheBenchFlags;
pub use workload::run;
