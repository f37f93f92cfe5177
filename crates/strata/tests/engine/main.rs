//! The engine's API through the public interface: puts, gets, deletes and batches, merges,
//! range deletes, iterators (both directions, bounds, prefixes) and snapshots, properties, the
//! info LOG, the WAL iterator (`get_updates_since`), and the `rocksdb` crate's names. One
//! module per behaviour (`tests/README.md`).

mod api_fit;
mod basic_operations;
mod get_updates_since;
mod info_log;
mod iterators_and_snapshots;
mod key_orders;
mod memtable_stats;
mod merge_counters;
mod merge_without_operator;
mod multi_scan;
mod options_files;
mod prefix_same_as_start;
mod properties;
mod range_deletes;
mod reverse_iteration;
mod rocksdb_compat;
mod rocksdb_options;
mod rocksdb_port_example;
mod snapshot_reads;
mod statistics;
mod user_timestamps;
mod wide_columns;
mod write_batch_from_data;
