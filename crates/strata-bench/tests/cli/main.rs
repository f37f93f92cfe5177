//! strata-bench as a user runs it: every benchmark name, the flags db_bench takes, the catalog
//! against docs/db_bench.md, several column families, the cache script, RocksDB's own
//! benchmark.sh, the YCSB scripts, and one conformance run on every engine compiled in (the
//! peers behind their cargo features). One module per behaviour
//! (`crates/strata/tests/README.md` describes the layout).

mod all_benchmarks;
mod cache_script;
mod catalog;
mod deletes_among_writes;
mod fill_variants;
mod flags;
mod num_column_families;
mod peers;
mod rocksdb_benchmark_sh;
mod ycsb_scripts;
