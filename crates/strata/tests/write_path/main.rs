//! The write path: group commit and the write modes, WAL options and syncs, failed WAL writes,
//! write stalls and slowdowns, and the write buffer manager. One module per behaviour
//! (`tests/README.md`).

#[path = "../common/compaction_gate.rs"]
mod compaction_gate;
#[path = "../common/forward_fs.rs"]
mod forward_fs;

mod comparator_panic;
mod concurrent_writers;
mod db_write_buffer_size;
mod disable_wal_close;
mod flush_syncs_retired_wals;
mod flush_wal_off_lock;
mod flush_wal_sync;
mod memtable_filter_size;
mod merged_flushes;
mod read_your_writes_concurrent;
mod stall_after_changes;
mod stall_options;
mod synced_writers_in_flight;
mod wal_dir;
mod wal_failure;
mod wal_limit;
mod write_buffer_manager_cache_charge;
mod write_buffer_manager_release;
mod write_buffer_manager_shared_budget;
mod write_buffer_manager_stall;
mod write_modes;
mod write_slowdown_rate;
mod writer_syncs_only_when_asked;
mod writes_alone;
