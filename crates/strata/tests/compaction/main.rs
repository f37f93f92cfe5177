//! Compaction: the leveled, universal, FIFO and tiered styles, compaction filters, manual
//! compactions (`compact_range`, `compact_files`), L0 carry-over, bottommost sequence-number
//! zeroing, per-level and parallel compression, and what a compaction holds, frees and
//! abandons. One module per behaviour (`tests/README.md`).

#[path = "../common/compaction_gate.rs"]
mod compaction_gate;
#[path = "../common/forward_fs.rs"]
mod forward_fs;

mod bottommost_seqno_zeroing;
mod close_abandons_compaction;
mod compact_files;
mod compact_range_depth;
mod compact_range_settled_bottom;
mod compact_range_under_writes;
mod compaction_filter;
mod compaction_releases_memtables;
mod compression_per_level;
mod fifo_compaction;
mod l0_carry_over;
mod obsolete_tables_after_readers;
mod tiered_compaction;
mod universal_compaction;
mod wait_for_compact_purges;
