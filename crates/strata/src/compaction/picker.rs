//! Leveled compaction picking: a pure function from a version, the files already being
//! compacted and the options to a plan (or nothing to do).
//!
//! Rules (RocksDB's leveled compaction with dynamic level bytes):
//! - Level targets: the largest level's size is the last level's target; each level above gets
//!   the next one's target divided by the multiplier. The *base level* (where L0 compacts to) is
//!   the deepest level whose target is at most `max_bytes_for_level_base`; levels between L0
//!   and the base level stay empty. An empty DB has the last level as base.
//! - Scores: L0 = files / `level0_file_num_compaction_trigger`; a level >= 1 = bytes not being
//!   compacted / target. A non-empty level above the base level always scores >= 1 (it must
//!   drain). The last level is never a compaction input by score.
//! - The highest score >= 1 that yields a compaction wins. L0 takes all its files (one L0
//!   compaction at a time) plus the overlapping base-level files; another level takes the one
//!   file with the least overlap with the next level relative to its size
//!   (kMinOverlappingRatio) plus the overlapping next-level files.
//! - A single input file with no overlap below is a trivial move (a MANIFEST-only change).

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use crate::key::{after_largest, compare_internal, user_key};
use crate::types::FileNumber;
use crate::version::levels::{TableFile, Version};

/// The options the picker reads.
#[derive(Clone, Debug)]
pub(crate) struct PickerOptions {
    pub num_levels: usize,
    pub level0_file_num_compaction_trigger: usize,
    pub max_bytes_for_level_base: u64,
    pub max_bytes_for_level_multiplier: f64,
    pub dynamic_level_bytes: bool,
    pub target_file_size_base: u64,
    pub target_file_size_multiplier: u64,
}

/// A compaction to run.
#[derive(Clone, Debug)]
pub(crate) struct CompactionPlan {
    pub start_level: usize,
    pub output_level: usize,
    /// Inputs from `start_level`.
    pub inputs: Vec<Arc<TableFile>>,
    /// Inputs from `output_level`.
    pub output_inputs: Vec<Arc<TableFile>>,
    /// Files of `output_level + 1` overlapping the inputs (limit output overlap).
    pub grandparents: Vec<Arc<TableFile>>,
    /// Move the single input file down without rewriting it.
    pub trivial_move: bool,
    /// No level below `output_level` holds data in the inputs' key range.
    pub bottommost: bool,
    pub target_file_size: u64,
    /// Stop an output file when its overlap with grandparents exceeds this.
    pub max_grandparent_overlap: u64,
}

impl CompactionPlan {
    /// Every input file with its level.
    pub fn all_inputs(&self) -> impl Iterator<Item = (usize, &Arc<TableFile>)> {
        self.inputs
            .iter()
            .map(move |f| (self.start_level, f))
            .chain(self.output_inputs.iter().map(move |f| (self.output_level, f)))
    }

    pub fn input_bytes(&self) -> u64 {
        self.all_inputs().map(|(_, f)| f.file_size).sum()
    }
}

/// Per-level targets and the base level.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LevelTargets {
    pub base_level: usize,
    /// Target bytes per level (index 0 unused; 0 for levels above the base level).
    pub target: Vec<u64>,
}

pub(crate) fn level_targets(v: &Version, o: &PickerOptions) -> LevelTargets {
    let n = o.num_levels;
    let last = n - 1;
    let mut target = vec![0u64; n];
    if !o.dynamic_level_bytes || n <= 2 {
        let mut t = o.max_bytes_for_level_base as f64;
        for slot in target.iter_mut().skip(1) {
            *slot = t as u64;
            t *= o.max_bytes_for_level_multiplier;
        }
        return LevelTargets { base_level: 1.min(last), target };
    }
    let max_size = (1..n).map(|l| v.level_bytes(l)).max().unwrap_or(0);
    if max_size == 0 {
        target[last] = o.max_bytes_for_level_base;
        return LevelTargets { base_level: last, target };
    }
    let mut t = max_size as f64;
    let mut base = last;
    target[last] = max_size;
    while base > 1 && t > o.max_bytes_for_level_base as f64 {
        t /= o.max_bytes_for_level_multiplier;
        base -= 1;
        target[base] = t as u64;
    }
    // Data left above the computed base (the DB shrank, or options changed) keeps the base
    // where it is, so that data has somewhere to go.
    let first_non_empty = (1..n).find(|&l| v.level_bytes(l) > 0).unwrap_or(last);
    if first_non_empty < base {
        let mut l = base;
        while l > first_non_empty {
            target[l - 1] = (target[l] as f64 / o.max_bytes_for_level_multiplier) as u64;
            l -= 1;
        }
        base = first_non_empty;
    }
    LevelTargets { base_level: base, target }
}

/// The compaction score of each level (0 for levels that are not inputs by score).
pub(crate) fn level_scores(
    v: &Version,
    o: &PickerOptions,
    busy: &HashSet<FileNumber>,
    t: &LevelTargets,
) -> Vec<f64> {
    let n = o.num_levels;
    let mut scores = vec![0.0; n];
    let l0_files = v.levels[0].iter().filter(|f| !busy.contains(&f.number)).count();
    scores[0] = l0_files as f64 / o.level0_file_num_compaction_trigger.max(1) as f64;
    for (l, score) in scores.iter_mut().enumerate().take(n.saturating_sub(1)).skip(1) {
        let bytes: u64 =
            v.levels[l].iter().filter(|f| !busy.contains(&f.number)).map(|f| f.file_size).sum();
        if bytes == 0 {
            continue;
        }
        *score = if l < t.base_level {
            // Must drain: at least 1, larger the more it holds.
            1.0 + bytes as f64 / o.max_bytes_for_level_base.max(1) as f64
        } else {
            bytes as f64 / t.target[l].max(1) as f64
        };
    }
    scores
}

fn range_of<'a>(files: impl Iterator<Item = &'a Arc<TableFile>>) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut lo: Option<&[u8]> = None;
    let mut hi: Option<&[u8]> = None;
    for f in files {
        if lo.is_none_or(|l| compare_internal(&f.smallest, l) == Ordering::Less) {
            lo = Some(&f.smallest);
        }
        if hi.is_none_or(|h| compare_internal(&f.largest, h) == Ordering::Greater) {
            hi = Some(&f.largest);
        }
    }
    Some((lo?.to_vec(), hi?.to_vec()))
}

/// Files of `level` whose user-key range intersects [lo, hi] (internal keys; compared by user
/// key so that no version of a boundary key is left behind). A largest key that is a range
/// tombstone's end bound, in a file or as `hi`, is exclusive.
pub(crate) fn overlapping(v: &Version, level: usize, lo: &[u8], hi: &[u8]) -> Vec<Arc<TableFile>> {
    let ulo = user_key(lo);
    v.levels[level]
        .iter()
        .filter(|f| !after_largest(ulo, &f.largest) && !after_largest(user_key(&f.smallest), hi))
        .cloned()
        .collect()
}

fn target_file_size(o: &PickerOptions, t: &LevelTargets, level: usize) -> u64 {
    let steps = level.saturating_sub(t.base_level.max(1)) as u32;
    o.target_file_size_base
        .saturating_mul(o.target_file_size_multiplier.max(1).saturating_pow(steps))
}

/// What every picking step looks at.
pub(crate) struct PickContext<'a> {
    pub v: &'a Version,
    pub o: &'a PickerOptions,
    pub t: &'a LevelTargets,
    pub busy: &'a HashSet<FileNumber>,
}

/// Builds the plan for moving `inputs` from `start` to `output`, or `None` if a needed file is
/// busy.
pub(crate) fn plan_for(
    c: &PickContext<'_>,
    start: usize,
    output: usize,
    inputs: Vec<Arc<TableFile>>,
) -> Option<CompactionPlan> {
    let PickContext { v, o, t, busy } = *c;
    if inputs.is_empty() || inputs.iter().any(|f| busy.contains(&f.number)) {
        return None;
    }
    let (lo, hi) = range_of(inputs.iter())?;
    let output_inputs = if output == start { Vec::new() } else { overlapping(v, output, &lo, &hi) };
    if output_inputs.iter().any(|f| busy.contains(&f.number)) {
        return None;
    }
    let (all_lo, all_hi) = range_of(inputs.iter().chain(output_inputs.iter()))?;
    let grandparents = if output + 1 < o.num_levels {
        overlapping(v, output + 1, &all_lo, &all_hi)
    } else {
        Vec::new()
    };
    let bottommost =
        (output + 1..o.num_levels).all(|l| overlapping(v, l, &all_lo, &all_hi).is_empty());
    let target = target_file_size(o, t, output);
    let max_gp = target.saturating_mul(10);
    let gp_bytes: u64 = grandparents.iter().map(|f| f.file_size).sum();
    let trivial_move =
        start != output && inputs.len() == 1 && output_inputs.is_empty() && gp_bytes <= max_gp;
    Some(CompactionPlan {
        start_level: start,
        output_level: output,
        inputs,
        output_inputs,
        grandparents,
        trivial_move,
        bottommost,
        target_file_size: target,
        max_grandparent_overlap: max_gp,
    })
}

/// RocksDB's estimate of the bytes compaction must rewrite to bring every level within its
/// target: L0 (with the base level) once it reaches its trigger, and each level's excess
/// plus the share of the next level it overlaps.
pub(crate) fn estimated_pending_compaction_bytes(v: &Version, o: &PickerOptions) -> u64 {
    let t = level_targets(v, o);
    let mut pending = 0u64;
    if v.num_files(0) >= o.level0_file_num_compaction_trigger {
        pending += v.level_bytes(0) + v.level_bytes(t.base_level);
    }
    let last = o.num_levels - 1;
    for l in t.base_level.max(1)..last {
        let bytes = v.level_bytes(l);
        let target = t.target[l];
        if bytes > target {
            let excess = bytes - target;
            let next = v.level_bytes(l + 1);
            pending +=
                excess + (u128::from(excess) * u128::from(next) / u128::from(bytes.max(1))) as u64;
        }
    }
    pending
}

/// The compaction to run next, if any level needs one.
pub(crate) fn pick_compaction(
    v: &Version,
    o: &PickerOptions,
    busy: &HashSet<FileNumber>,
) -> Option<CompactionPlan> {
    let t = level_targets(v, o);
    let scores = level_scores(v, o, busy, &t);
    let c = PickContext { v, o, t: &t, busy };
    let mut order: Vec<usize> = (0..scores.len()).filter(|&l| scores[l] >= 1.0).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    for level in order {
        let plan = if level == 0 {
            if v.levels[0].iter().any(|f| busy.contains(&f.number)) {
                continue; // one L0 compaction at a time
            }
            plan_for(&c, 0, t.base_level, v.levels[0].clone())
        } else {
            pick_file_in_level(&c, level)
        };
        if plan.is_some() {
            return plan;
        }
    }
    None
}

/// kMinOverlappingRatio: the non-busy file with the least next-level overlap per byte whose
/// overlapping files are free.
fn pick_file_in_level(c: &PickContext<'_>, level: usize) -> Option<CompactionPlan> {
    let PickContext { v, busy, .. } = *c;
    let output = level + 1;
    let mut candidates: Vec<(u128, &Arc<TableFile>)> = Vec::new();
    for f in &v.levels[level] {
        if busy.contains(&f.number) {
            continue;
        }
        let over = overlapping(v, output, &f.smallest, &f.largest);
        if over.iter().any(|g| busy.contains(&g.number)) {
            continue;
        }
        let over_bytes: u64 = over.iter().map(|g| g.file_size).sum();
        let ratio = u128::from(over_bytes) * 1024 / u128::from(f.file_size.max(1));
        candidates.push((ratio, f));
    }
    candidates.sort_by(|a, b| a.0.cmp(&b.0).then(compare_internal(&a.1.smallest, &b.1.smallest)));
    let (_, f) = candidates.first()?;
    plan_for(c, level, output, vec![(*f).clone()])
}

#[cfg(test)]
mod tests;
