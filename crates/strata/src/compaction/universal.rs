//! Universal compaction picking: a pure function from a version, the files already being
//! compacted and the options to a plan (or nothing to do). RocksDB's rules, in this order:
//!
//! ```text
//!   sorted runs, newest first:  L0 file, L0 file, ..., L1, L2, ..., Ln   (non-empty levels)
//!                               R0       R1            ...              R(k-1) = oldest
//! ```
//!
//! - Nothing happens while there are fewer runs than `level0_file_num_compaction_trigger`.
//! - **Size amplification**: the runs above the oldest, from the newest free run down, are
//!   merged with the oldest when their bytes reach `max_size_amplification_percent` of the
//!   oldest run's (a busy run stops the span; a busy oldest run prevents the rule). With
//!   `incremental`, only a key range of the second oldest run is merged into the oldest
//!   when one is cheap enough (`universal/incremental.rs`).
//! - **Size ratio**: from each free run in turn (newest first), older runs are added while the
//!   next one is at most the bytes picked so far grown by `size_ratio` percent (with the
//!   similar-size stop style: while it and the last picked one are within that percentage),
//!   up to `max_merge_width` runs; the first span of at least `min_merge_width` runs wins.
//! - **Sorted-run count**: when more than `trigger` runs are free, the same walk without the
//!   size test merges `free - trigger + 1` runs (still at least `min_merge_width`).
//!
//! A merge's output goes where the age order of runs stays the level order: to the last
//! level when it includes the oldest run, into L0 (as one file) when the next older run is
//! an L0 file, else to the level just above the next older run (which is empty, or one of
//! the inputs). L0 outputs are never split; other outputs are cut at the target file size.
//! Outputs are compressed unless `compression_size_percent` >= 0 and the runs older than the
//! output already hold that share of all bytes. With `allow_trivial_move`, inputs of which no
//! two overlap are moved to the output level instead of rewritten.

use std::collections::HashSet;
use std::sync::Arc;

use super::picker::{CompactionPlan, PickerOptions};
use super::style::CompactionStopStyle;
use crate::comparator::KeyOrder;
use crate::key::user_key;
use crate::types::FileNumber;
use crate::version::levels::{TableFile, Version};

/// One sorted run: a single L0 file or a whole non-empty level >= 1.
#[derive(Clone, Debug)]
pub(crate) struct SortedRun {
    pub level: usize,
    pub files: Vec<Arc<TableFile>>,
    pub size: u64,
    /// One of its files is being compacted.
    pub busy: bool,
}

/// The sorted runs of `v`, newest first (L0 is ordered newest first; a level holds data
/// older than every level above it).
pub(crate) fn sorted_runs(v: &Version, busy: &HashSet<FileNumber>) -> Vec<SortedRun> {
    let mut runs: Vec<SortedRun> = v.levels[0]
        .iter()
        .map(|f| SortedRun {
            level: 0,
            files: vec![f.clone()],
            size: f.file_size,
            busy: busy.contains(&f.number),
        })
        .collect();
    for (level, files) in v.levels.iter().enumerate().skip(1) {
        if files.is_empty() {
            continue;
        }
        runs.push(SortedRun {
            level,
            files: files.clone(),
            size: files.iter().map(|f| f.file_size).sum(),
            busy: files.iter().any(|f| busy.contains(&f.number)),
        });
    }
    runs
}

/// Number of sorted runs (what universal's write stalls count instead of L0 files).
pub(crate) fn sorted_run_count(v: &Version) -> usize {
    v.num_files(0) + v.levels.iter().skip(1).filter(|l| !l.is_empty()).count()
}

/// Bytes the next compactions must rewrite to bring the runs within the rules: the bytes of
/// every run above the oldest while the picker has something to do, else 0 (RocksDB reports
/// 0 for universal; an estimate lets the pending-bytes stall limits work in this style too,
/// and since it is 0 once no rule fires, compaction can always bring it back to 0).
pub(crate) fn estimated_pending_compaction_bytes(v: &Version, o: &PickerOptions) -> u64 {
    if pick_universal(v, o, &HashSet::new()).is_none() {
        return 0;
    }
    bytes_above_oldest(v)
}

/// The bytes of every sorted run but the oldest.
pub(crate) fn bytes_above_oldest(v: &Version) -> u64 {
    let runs = sorted_runs(v, &HashSet::new());
    runs.split_last().map_or(0, |(_, newer)| newer.iter().map(|r| r.size).sum())
}

/// The universal compaction to run next, if the rules above call for one.
pub(crate) fn pick_universal(
    v: &Version,
    o: &PickerOptions,
    busy: &HashSet<FileNumber>,
) -> Option<CompactionPlan> {
    let runs = sorted_runs(v, busy);
    let trigger = o.level0_file_num_compaction_trigger.max(1);
    if runs.is_empty() || runs.len() < trigger {
        return None;
    }
    let amp = o.universal.max_size_amplification_percent;
    if let Some((start, after)) = size_amp_span(&runs, amp) {
        if o.universal.incremental {
            let newer: u64 = runs[start..after - 1].iter().map(|r| r.size).sum();
            if let Some(p) = incremental::pick_incremental(o, &runs[..after], newer) {
                return Some(p);
            }
        }
        return Some(build_plan(o, &runs, start, after, "universal size amplification"));
    }
    let ratio = Some(o.universal.size_ratio);
    if let Some(p) = pick_span(o, &runs, ratio, usize::MAX, "universal size ratio") {
        return Some(p);
    }
    let free = runs.iter().filter(|r| !r.busy).count();
    if free > trigger {
        return pick_span(o, &runs, None, free - trigger + 1, "universal sorted-run count");
    }
    None
}

/// The span `start..runs.len()` merging every free run above the oldest into it, when they
/// hold at least `percent`% of its bytes (and the oldest is free).
pub(crate) fn size_amp_span(runs: &[SortedRun], percent: u32) -> Option<(usize, usize)> {
    let end = runs.len().checked_sub(1)?;
    if runs[end].busy {
        return None;
    }
    let mut start = end;
    let mut newer = 0u64;
    while start > 0 && !runs[start - 1].busy {
        newer += runs[start - 1].size;
        start -= 1;
    }
    if start == end {
        return None;
    }
    let bound = u128::from(percent) * u128::from(runs[end].size);
    if u128::from(newer) * 100 < bound {
        return None;
    }
    Some((start, end + 1))
}

/// The first span of consecutive free runs, newest first, that the size test (`ratio`,
/// `None` = no test) lets grow to at least `min_merge_width` runs, at most `max_runs` (and
/// `max_merge_width`).
fn pick_span(
    o: &PickerOptions,
    runs: &[SortedRun],
    ratio: Option<u32>,
    max_runs: usize,
    reason: &'static str,
) -> Option<CompactionPlan> {
    let u = &o.universal;
    let min_width = (u.min_merge_width as usize).max(2);
    let max_runs = max_runs.min(u.max_merge_width as usize);
    let mut first = 0;
    while first < runs.len() {
        if runs[first].busy {
            first += 1;
            continue;
        }
        let mut picked = runs[first].size as f64;
        let mut count = 1;
        for next in &runs[first + 1..] {
            if count >= max_runs || next.busy {
                break;
            }
            if let Some(ratio) = ratio {
                let slack = (100.0 + f64::from(ratio)) / 100.0;
                let size = next.size as f64;
                if picked * slack < size {
                    break;
                }
                if u.stop_style == CompactionStopStyle::SimilarSize {
                    if size * slack < picked {
                        break;
                    }
                    picked = size;
                } else {
                    picked += size;
                }
            }
            count += 1;
        }
        if count >= min_width {
            return Some(build_plan(o, runs, first, first + count, reason));
        }
        first += 1;
    }
    None
}

/// The plan merging `runs[start..after]` with universal's compression and trivial-move options.
fn build_plan(
    o: &PickerOptions,
    runs: &[SortedRun],
    start: usize,
    after: usize,
    reason: &'static str,
) -> CompactionPlan {
    let u = &o.universal;
    merge_plan(o, runs, start, after, reason, u.compression_size_percent, u.allow_trivial_move)
}

/// The plan merging `runs[start..after]` into one run placed where age order stays level
/// order (see the module doc); `compression_size_percent` and `allow_trivial_move` as in
/// [`super::style::UniversalCompactionOptions`].
pub(crate) fn merge_plan(
    o: &PickerOptions,
    runs: &[SortedRun],
    start: usize,
    after: usize,
    reason: &'static str,
    compression_size_percent: i32,
    allow_trivial_move: bool,
) -> CompactionPlan {
    let last = o.num_levels - 1;
    let output_level = match runs.get(after) {
        None => last,
        Some(r) if r.level == 0 => 0,
        Some(r) => r.level - 1,
    };
    let start_level = runs[start].level;
    let mut inputs = Vec::new();
    let mut middle_inputs = Vec::new();
    let mut output_inputs = Vec::new();
    for r in &runs[start..after] {
        if r.level == start_level {
            inputs.extend(r.files.iter().cloned());
        } else if r.level == output_level {
            output_inputs.extend(r.files.iter().cloned());
        } else {
            middle_inputs.push((r.level, r.files.clone()));
        }
    }
    let compress = compression_size_percent < 0 || after == runs.len() || {
        let total: u128 = runs.iter().map(|r| u128::from(r.size)).sum();
        let older: u128 = runs[after..].iter().map(|r| u128::from(r.size)).sum();
        older * 100 < total * u128::from(compression_size_percent.unsigned_abs())
    };
    let target_file_size = target_file_size(o, output_level);
    let mut plan = CompactionPlan {
        start_level,
        output_level,
        inputs,
        middle_inputs,
        output_inputs,
        grandparents: Vec::new(),
        trivial_move: false,
        deletion: false,
        compress,
        reason,
        bottommost: after == runs.len(),
        target_file_size,
        max_compaction_bytes: u64::MAX,
        output_path_id: 0,
    };
    plan.trivial_move = allow_trivial_move && output_level > 0 && disjoint(&plan, &o.order);
    plan
}

/// The size outputs at `level` are cut at: unlimited in L0 (an L0 run is one file), else
/// the level's target file size.
pub(crate) fn target_file_size(o: &PickerOptions, level: usize) -> u64 {
    if level == 0 {
        return u64::MAX;
    }
    let steps = u32::try_from(level - 1).unwrap_or(u32::MAX);
    o.target_file_size_base
        .saturating_mul(o.target_file_size_multiplier.max(1).saturating_pow(steps))
}

/// No two input files of `plan` share a user key.
fn disjoint(plan: &CompactionPlan, order: &KeyOrder) -> bool {
    let mut files: Vec<&Arc<TableFile>> = plan.all_inputs().map(|(_, f)| f).collect();
    files.sort_by(|a, b| order.compare_internal(&a.smallest, &b.smallest));
    files.windows(2).all(|w| order.after_largest(user_key(&w[1].smallest), &w[0].largest))
}

mod incremental;
#[cfg(test)]
mod tests;
