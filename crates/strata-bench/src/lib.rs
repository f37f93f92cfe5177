//! strata-bench: a db_bench-compatible benchmark tool (flags, workloads and output of RocksDB's
//! `db_bench`, spec: `shared/docs/db_bench_compat.md`) for Strata, RocksDB and SQLite.
//!
//! Layout: [`flags`] parses the command line, [`config`] validates it, [`runner`] runs the
//! benchmarks against an [`engine::Engine`], [`stats`]/[`histogram`] measure and print, and
//! [`report`] turns the logs of the seeds' suite (`bench/run.sh`) into tables and a chart.

pub mod catalog;
pub mod config;
pub mod engine;
pub mod flags;
pub mod header;
pub mod histogram;
pub mod keys;
pub mod random;
pub mod rate_limiter;
pub mod report;
pub mod runner;
pub mod stats;
pub mod values;
