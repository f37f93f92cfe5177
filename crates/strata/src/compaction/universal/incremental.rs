//! Incremental size-amplification compaction (`UniversalCompactionOptions::incremental`): when
//! the size-amplification rule fires, merge one key range of the second oldest run into the
//! oldest run instead of merging every run at once.
//!
//! ```text
//!   second oldest run (a level):   [f0][f1][f2][f3][f4][f5]      files, key order
//!                                        \__window__/
//!   oldest run:                    [b0 ][b1 ][b2  ][b3][b4 ]     files overlapping the window
//!                                        \____________/           are its output inputs
//! ```
//!
//! - Windows are ranges `f[s..=e]` of consecutive files of the second oldest run. From each
//!   start `s` a window grows until its bytes plus the oldest-run bytes it overlaps exceed
//!   half of `max_compaction_bytes` (or the run ends); that window is a candidate.
//! - A candidate's cost is its *fanout*: overlapped oldest-run bytes per window byte (what
//!   is rewritten per byte moved down). The cheapest candidate wins, first on ties.
//! - A full size-amplification merge rewrites the oldest run once for all the newer bytes,
//!   a fanout of `oldest / newer`; a window only moves the second oldest run's bytes, so it
//!   is taken only when its fanout is below [`FANOUT_PENALTY`] times that. Otherwise (or when
//!   the second oldest run is an L0 file, which cannot be split) the caller merges in full.
//!
//! Invariant kept: every user key's versions stay in age order down the levels. The window
//! moves from its level to the oldest run's level, which holds only older versions of its
//! keys; files of the second oldest run outside the window hold other keys (a level's files
//! do not overlap), and the runs above hold newer versions. The output is the new oldest
//! run's data for the overlapped range (bottommost: tombstones there can be dropped) and is
//! cut at the output level's target file size.

use super::{target_file_size, SortedRun};
use crate::compaction::picker::{CompactionPlan, PickerOptions};
use crate::comparator::KeyOrder;
use crate::key::user_key;
use crate::version::levels::TableFile;
use std::sync::Arc;

/// How much more fanout than the full merge's an incremental window may have: moving only
/// the second oldest run leaves the runs above it for a later merge, so a window somewhat
/// worse than the full merge still saves writes over the full merge's rewrite of everything.
pub(crate) const FANOUT_PENALTY: f64 = 1.8;

/// The incremental plan for the size-amplification span ending at the oldest of `runs`, whose
/// runs above the oldest hold `newer_bytes`; `None`: merge the span in full.
pub(crate) fn pick_incremental(
    o: &PickerOptions,
    runs: &[SortedRun],
    newer_bytes: u64,
) -> Option<CompactionPlan> {
    let (oldest, rest) = runs.split_last()?;
    let second = rest.last()?;
    if second.level == 0 || second.busy || oldest.busy || newer_bytes == 0 {
        return None;
    }
    let full_fanout = oldest.size as f64 / newer_bytes as f64;
    let order = &o.order;
    let (s, e, fanout) =
        cheapest_window(&second.files, &oldest.files, o.max_compaction_bytes / 2, order)?;
    if fanout >= full_fanout * FANOUT_PENALTY {
        return None;
    }
    let window = second.files[s..=e].to_vec();
    let lo = user_key(&window[0].smallest);
    let hi = user_key(&window[window.len() - 1].largest);
    let (a, b) = overlap(&oldest.files, lo, hi, order);
    let output_inputs = oldest.files[a..b].to_vec();
    let trivial_move = o.universal.allow_trivial_move && output_inputs.is_empty();
    Some(CompactionPlan {
        start_level: second.level,
        output_level: oldest.level,
        inputs: window,
        middle_inputs: Vec::new(),
        output_inputs,
        grandparents: Vec::new(),
        trivial_move,
        deletion: false,
        compress: true, // no run is older than the output
        reason: "universal incremental size amplification",
        bottommost: true,
        target_file_size: target_file_size(o, oldest.level),
        max_compaction_bytes: u64::MAX,
        output_path_id: 0,
    })
}

/// The indexes `a..b` of the files of `level` (key order, disjoint) that share a user key
/// with `[lo, hi]`.
fn overlap(level: &[Arc<TableFile>], lo: &[u8], hi: &[u8], order: &KeyOrder) -> (usize, usize) {
    let a = level.partition_point(|f| order.lt(user_key(&f.largest), lo));
    let b = level.partition_point(|f| order.le(user_key(&f.smallest), hi));
    (a, b.max(a))
}

/// The window `files[s..=e]` with the lowest fanout over `bottom` among the candidates (see
/// the module doc), as `(s, e, fanout)`.
fn cheapest_window(
    files: &[Arc<TableFile>],
    bottom: &[Arc<TableFile>],
    limit: u64,
    order: &KeyOrder,
) -> Option<(usize, usize, f64)> {
    // prefix[i]: bytes of bottom[..i].
    let mut prefix = vec![0u64];
    for f in bottom {
        prefix.push(prefix[prefix.len() - 1] + f.file_size);
    }
    let mut best: Option<(usize, usize, f64)> = None;
    for s in 0..files.len() {
        let mut bytes = 0u64;
        for e in s..files.len() {
            bytes += files[e].file_size;
            let (lo, hi) = (user_key(&files[s].smallest), user_key(&files[e].largest));
            let (a, b) = overlap(bottom, lo, hi, order);
            let overlapped = prefix[b] - prefix[a];
            if bytes + overlapped > limit || e + 1 == files.len() {
                if bytes > 0 {
                    let fanout = overlapped as f64 / bytes as f64;
                    if best.is_none_or(|(_, _, f)| fanout < f) {
                        best = Some((s, e, fanout));
                    }
                }
                break;
            }
        }
    }
    best
}
