//! The data types' commands through a running server: strings, hashes, lists, sets, sorted
//! sets, streams, HyperLogLogs, key expiry, pop tombstones, and the compaction filter that
//! drops expired data. One module per behaviour (`tests/README.md`).

#[path = "../common/mod.rs"]
mod common;

mod bitops;
mod compaction_filter;
mod dump_restore;
mod geo;
mod hashes;
mod hyperloglog;
mod keys_expiry;
mod list_edits;
mod lists;
mod pop_tombstones;
mod repeated_names;
mod sets;
mod slot_layout;
mod sort;
mod stream_groups;
mod streams;
mod string_edits;
mod string_options;
mod strings;
mod zset_algebra;
mod zset_ranges;
mod zsets;
