//! Compaction: which entries survive ([`stream`]), which files to compact (a pure picker per
//! style: [`picker`] leveled, [`universal`], [`fifo`], [`tiered`]; [`pick`] dispatches), running a plan
//! ([`job`]), where its output files end ([`cut`]), which table path they go to
//! ([`output_path`]), whether a key has older data below the output ([`below`]), and the
//! compactions that empty old blob files ([`blob_gc`]).

use std::collections::HashSet;

use crate::types::FileNumber;
use crate::version::levels::Version;
use picker::{CompactionPlan, PickerOptions};
use style::CompactionStyle;

pub(crate) mod below;
pub(crate) mod blob_gc;
pub(crate) mod cut;
pub(crate) mod fifo;
pub(crate) mod filter_bits;
pub(crate) mod job;
pub(crate) mod l0_batch;
pub(crate) mod output_path;
pub(crate) mod picker;
pub(crate) mod stream;
pub(crate) mod style;
pub(crate) mod tiered;
pub(crate) mod universal;

/// The compaction to run next in the style of `o`, if any; `now_secs` (seconds since the Unix
/// epoch) is read by FIFO's TTL only.
pub(crate) fn pick(
    v: &Version,
    o: &PickerOptions,
    busy: &HashSet<FileNumber>,
    now_secs: u64,
) -> Option<CompactionPlan> {
    // When no compaction is due: the one forced blob garbage collection asks for, if any.
    let forced_blob_gc =
        || o.blob_gc.and_then(|(cutoff, force)| blob_gc::pick_forced(v, o, busy, cutoff, force));
    match o.style {
        CompactionStyle::Leveled => picker::pick_compaction(v, o, busy).or_else(forced_blob_gc),
        CompactionStyle::Universal => universal::pick_universal(v, o, busy).or_else(forced_blob_gc),
        CompactionStyle::Fifo => fifo::pick_fifo(v, o, busy, now_secs),
        CompactionStyle::Tiered => tiered::pick_tiered(v, o, busy).or_else(forced_blob_gc),
    }
}

/// The estimate of bytes compaction must still rewrite, for the pending-bytes write stalls
/// and the `estimate-pending-compaction-bytes` property.
pub(crate) fn estimated_pending_compaction_bytes(v: &Version, o: &PickerOptions) -> u64 {
    match o.style {
        CompactionStyle::Leveled => picker::estimated_pending_compaction_bytes(v, o),
        CompactionStyle::Universal => universal::estimated_pending_compaction_bytes(v, o),
        CompactionStyle::Tiered => tiered::estimated_pending_compaction_bytes(v, o),
        // Deleting files costs no rewrite; intra-L0 merges are optional.
        CompactionStyle::Fifo => 0,
    }
}

/// What the L0 write-stall triggers count: L0 files, or in universal and tiered style the
/// sorted runs (each L0 file and each non-empty level), as RocksDB does for universal.
pub(crate) fn stall_count(v: &Version, o: &PickerOptions) -> usize {
    match o.style {
        CompactionStyle::Universal | CompactionStyle::Tiered => universal::sorted_run_count(v),
        CompactionStyle::Leveled | CompactionStyle::Fifo => v.num_files(0),
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
