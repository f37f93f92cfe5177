//! strata-bench: a db_bench-compatible benchmark tool (flags, workloads and output of RocksDB's
//! `db_bench`) for Strata, RocksDB and SQLite. What it implements of db_bench, and where it
//! differs: `docs/db_bench.md`.
//!
//! Layout: [`flags`] parses the command line, [`config`] validates it (against what each engine
//! can do: [`engine_kind`]), [`catalog`] lists the benchmarks, [`runner`] runs them against an
//! [`engine::Engine`], [`stats`]/[`histogram`] measure and print ([`io`]: the storage traffic of
//! each step), and [`report`] turns the logs of the seeds' suite (`bench/run.sh`) into tables
//! and a chart.

pub mod cache_bench;
pub mod catalog;
pub mod config;
pub mod engine;
pub mod engine_kind;
pub mod expiry;
pub mod flags;
pub mod header;
pub mod histogram;
pub mod io;
pub mod keys;
pub mod mixgraph;
pub mod printf;
pub mod random;
pub mod rate_limiter;
pub mod report;
pub mod runner;
pub mod stats;
pub mod values;
