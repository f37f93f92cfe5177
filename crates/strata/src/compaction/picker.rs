//! Leveled compaction picking: a pure function from a version, the files already being
//! compacted and the options to a plan (or nothing to do).
//!
//! Rules (RocksDB's leveled compaction with dynamic level bytes):
//! - Level targets: with the largest level's size as the last level's target, each level
//!   above gets the next one's divided by the multiplier. The *base level* (where L0 compacts
//!   to) is the first non-empty level, moved up while its size would exceed
//!   `max_bytes_for_level_base`; levels above it are empty. No level's target is below
//!   `max_bytes_for_level_base`. Levels whose size under this rule would not even reach
//!   `max_bytes_for_level_base / multiplier` are *unnecessary* (the DB shrank) and drain
//!   downward. An empty DB has the last level as base.
//! - Scores: see [`level_scores`]. The highest score >= 1 that yields a compaction wins.
//! - L0 takes all its files (one L0 compaction at a time) plus the overlapping base-level
//!   files, once it has `level0_batch_files` of them or `max_bytes_for_level_base` in them
//!   (the batch is the trigger unless the DB batches L0 under write pressure, see
//!   [`super::l0_batch`]); while it waits, only levels scoring above it are picked. When
//!   writes paused after a batch was gathered, L0 may instead merge into one L0 file that
//!   waits for the next batch ([`carried_over`]), and when writes stay paused after that, L0
//!   drains into the base level whatever its file count (`level0_drain`). Another level takes
//!   the one file with the least overlap with the next level relative to its size
//!   (kMinOverlappingRatio), grown to the neighbours that add no file of the next level, plus
//!   the overlapping next-level files.
//! - A single input file with no overlap below is a trivial move (a MANIFEST-only change)
//!   unless it overlaps more than `max_compaction_bytes` of the level below its output.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use super::style::{
    CompactionStyle, FifoCompactionOptions, TieredCompactionOptions, UniversalCompactionOptions,
};
use crate::comparator::KeyOrder;
use crate::key::user_key;
use crate::types::FileNumber;
use crate::version::levels::{TableFile, Version};

/// The options the picker reads.
#[derive(Clone, Debug)]
pub(crate) struct PickerOptions {
    pub num_levels: usize,
    pub level0_file_num_compaction_trigger: usize,
    /// The free L0 files an L0 compaction that L0's file count calls for waits for: the
    /// trigger, or more while the DB batches L0 under write pressure ([`super::l0_batch`]).
    /// One that L0's bytes call for (at least `max_bytes_for_level_base`) never waits.
    pub level0_batch_files: usize,
    /// Set by the DB when writes paused after filling L0 faster than L0 -> base compactions
    /// drain it ([`super::l0_batch`]): an L0 compaction that L0's file count calls for then
    /// merges L0 into one L0 file, which waits for the next batch, when that writes far less
    /// than rewriting the base level (see [`carried_over`]).
    pub level0_carry_over: bool,
    /// Set by the DB when writes stayed paused after a carry-over ([`super::l0_batch`]): L0
    /// goes down to the base level, however few its files.
    pub level0_drain: bool,
    pub level0_slowdown_writes_trigger: usize,
    pub max_bytes_for_level_base: u64,
    pub max_bytes_for_level_multiplier: f64,
    pub dynamic_level_bytes: bool,
    pub target_file_size_base: u64,
    pub target_file_size_multiplier: u64,
    /// `Options::max_compaction_bytes`, its default resolved.
    pub max_compaction_bytes: u64,
    /// Which picker runs ([`crate::compaction::pick`]); this module is the leveled one.
    pub style: CompactionStyle,
    pub universal: UniversalCompactionOptions,
    pub fifo: FifoCompactionOptions,
    pub tiered: TieredCompactionOptions,
    /// `Options::write_buffer_size` (FIFO's intra-L0 compaction takes files up to this size).
    pub write_buffer_size: u64,
    /// The order of the family's keys (its versions' order).
    pub order: KeyOrder,
    /// Forced blob garbage collection: `(age cutoff, force threshold)` when garbage
    /// collection is on, the threshold below 1 and the style not FIFO ([`super::blob_gc`]).
    pub blob_gc: Option<(f64, f64)>,
}

impl PickerOptions {
    /// Leveled defaults with `num_levels` levels and an L0 trigger (tests start from these).
    #[cfg(test)]
    pub fn for_tests(num_levels: usize, trigger: usize) -> PickerOptions {
        PickerOptions {
            num_levels,
            level0_file_num_compaction_trigger: trigger,
            level0_batch_files: trigger,
            level0_carry_over: false,
            level0_drain: false,
            level0_slowdown_writes_trigger: 20,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10.0,
            dynamic_level_bytes: true,
            target_file_size_base: 64 << 20,
            target_file_size_multiplier: 1,
            max_compaction_bytes: 25 * (64 << 20),
            style: CompactionStyle::Leveled,
            universal: UniversalCompactionOptions::default(),
            fifo: FifoCompactionOptions::default(),
            tiered: TieredCompactionOptions::default(),
            write_buffer_size: 64 << 20,
            order: KeyOrder::Bytewise,
            blob_gc: None,
        }
    }
}

/// A compaction to run.
#[derive(Clone, Debug)]
pub(crate) struct CompactionPlan {
    pub start_level: usize,
    pub output_level: usize,
    /// Inputs from `start_level`.
    pub inputs: Vec<Arc<TableFile>>,
    /// Inputs from the levels strictly between `start_level` and `output_level`, each with
    /// its level (universal compaction merges several sorted runs at once); empty otherwise.
    pub middle_inputs: Vec<(usize, Vec<Arc<TableFile>>)>,
    /// Inputs from `output_level`.
    pub output_inputs: Vec<Arc<TableFile>>,
    /// Files of `output_level + 1` overlapping the inputs (limit output overlap).
    pub grandparents: Vec<Arc<TableFile>>,
    /// Move the input files to `output_level` without rewriting them (no two overlap, and
    /// nothing at `output_level` overlaps them).
    pub trivial_move: bool,
    /// Delete the inputs and write nothing (FIFO compaction drops its oldest files).
    pub deletion: bool,
    /// Compress the output (universal's `compression_size_percent` may turn it off).
    pub compress: bool,
    /// Why the picker chose this compaction, for the info LOG.
    pub reason: &'static str,
    /// No level below `output_level` holds data in the inputs' key range.
    pub bottommost: bool,
    pub target_file_size: u64,
    /// See [`crate::compaction::cut`].
    pub max_compaction_bytes: u64,
    /// Which of the family's table paths the outputs go to (`compaction::output_path`; the
    /// pickers leave 0, the DB places the plan).
    pub output_path_id: u32,
}

impl CompactionPlan {
    /// A plan over `inputs` of `level` only, writing to `output_level`, with no bound on
    /// its output files; the constructors below set what kind of job it is.
    fn simple(
        level: usize,
        output_level: usize,
        inputs: Vec<Arc<TableFile>>,
        reason: &'static str,
    ) -> CompactionPlan {
        CompactionPlan {
            start_level: level,
            output_level,
            inputs,
            middle_inputs: Vec::new(),
            output_inputs: Vec::new(),
            grandparents: Vec::new(),
            trivial_move: false,
            deletion: false,
            compress: true,
            reason,
            bottommost: false,
            target_file_size: u64::MAX,
            max_compaction_bytes: u64::MAX,
            output_path_id: 0,
        }
    }

    /// A merge of `inputs` (L0 files, consecutive in L0's order) into one L0 file.
    pub fn l0_merge(inputs: Vec<Arc<TableFile>>, reason: &'static str) -> CompactionPlan {
        Self::simple(0, 0, inputs, reason)
    }

    /// The deletion of `inputs`, files of `level`, without rewriting anything.
    pub fn deletion(
        level: usize,
        inputs: Vec<Arc<TableFile>>,
        reason: &'static str,
    ) -> CompactionPlan {
        CompactionPlan { deletion: true, ..Self::simple(level, level, inputs, reason) }
    }

    /// The move of `inputs`, files of `level`, unchanged to `output_level`.
    pub fn trivial_move(
        level: usize,
        output_level: usize,
        inputs: Vec<Arc<TableFile>>,
        reason: &'static str,
    ) -> CompactionPlan {
        CompactionPlan { trivial_move: true, ..Self::simple(level, output_level, inputs, reason) }
    }

    /// Every input file with its level.
    pub fn all_inputs(&self) -> impl Iterator<Item = (usize, &Arc<TableFile>)> {
        self.inputs
            .iter()
            .map(move |f| (self.start_level, f))
            .chain(self.middle_inputs.iter().flat_map(|(l, fs)| fs.iter().map(move |f| (*l, f))))
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
    /// Target bytes per level (index 0 unused; 0 for the empty levels above the base level).
    pub target: Vec<u64>,
    /// With dynamic level bytes: the levels from the first non-empty one down to this one
    /// hold data the LSM's shape does not need (the DB shrank, or options changed); they are
    /// drained into the levels below.
    pub lowest_unnecessary: Option<usize>,
}

pub(crate) fn level_targets(v: &Version, o: &PickerOptions) -> LevelTargets {
    let n = o.num_levels;
    let last = n - 1;
    let mut target = vec![0u64; n];
    let mult = o.max_bytes_for_level_multiplier;
    if !o.dynamic_level_bytes || n <= 2 {
        let mut t = o.max_bytes_for_level_base as f64;
        for slot in target.iter_mut().skip(1) {
            *slot = t as u64;
            t *= mult;
        }
        return LevelTargets { base_level: 1.min(last), target, lowest_unnecessary: None };
    }
    let max_size = (1..n).map(|l| v.level_bytes(l)).max().unwrap_or(0);
    let Some(first_non_empty) = (1..n).find(|&l| v.level_bytes(l) > 0) else {
        target[last] = o.max_bytes_for_level_base;
        return LevelTargets { base_level: last, target, lowest_unnecessary: None };
    };
    let base_max = o.max_bytes_for_level_base;
    let base_min = (base_max as f64 / mult) as u64;
    // The size the first non-empty level would get if the last level's target were the
    // largest level's size.
    let mut cur = max_size;
    let mut lowest_unnecessary = None;
    for l in (first_non_empty..last).rev() {
        cur = (cur as f64 / mult) as u64;
        if lowest_unnecessary.is_none() && cur <= base_min {
            lowest_unnecessary = Some(l);
        }
    }
    let (base_level, base_size) = if cur <= base_min {
        // Fewer levels would do: keep the base where the data is, at the smallest size.
        (first_non_empty, base_min + 1)
    } else {
        let mut base = first_non_empty;
        while base > 1 && cur > base_max {
            base -= 1;
            cur = (cur as f64 / mult) as u64;
        }
        (base, if cur > base_max { base_max } else { cur.max(1) })
    };
    // No level's target is below `max_bytes_for_level_base`: a level smaller than L0 would
    // win the scores over L0 and let L0 fill up.
    let mut size = base_size as f64;
    for (l, slot) in target.iter_mut().enumerate().skip(base_level) {
        if l > base_level {
            size *= mult;
        }
        *slot = (size as u64).max(base_max);
    }
    LevelTargets { base_level, target, lowest_unnecessary }
}

/// Scores of 1 and more are multiplied by this, which leaves room below it to rank
/// compactions that must run (RocksDB's scale).
const SCORE_SCALE: f64 = 10.0;

/// The compaction score of each level (0 for levels that are not inputs by score); a level
/// needs compaction at 1 and more.
///
/// - L0: files not being compacted / trigger, at least 1.01 when L0 drains
///   ([`PickerOptions::level0_drain`]) and has one. With dynamic level bytes, at least 1.01
///   once those files hold `max_bytes_for_level_base`, and at least their size over the base
///   level's (actual or target, the larger) once they outgrow the base level's target; then
///   scaled. Without: at least their size / `max_bytes_for_level_base`.
/// - A level >= 1: bytes not being compacted / target. With dynamic level bytes, a level at
///   or over its target divides instead by its target plus the bytes on their way down into
///   it (all of L0, the excess of each level above), then scaled: a level about to receive
///   much data waits, so L0 goes first. Unnecessary levels score just above the scale,
///   higher the nearer the top.
pub(crate) fn level_scores(
    v: &Version,
    o: &PickerOptions,
    busy: &HashSet<FileNumber>,
    t: &LevelTargets,
) -> Vec<f64> {
    let n = o.num_levels;
    let mut scores = vec![0.0; n];
    let free = |l: usize| v.levels[l].iter().filter(|f| !busy.contains(&f.number));
    let l0_files = free(0).count();
    let l0_bytes: u64 = free(0).map(|f| f.file_size).sum();
    let mut score = l0_files as f64 / o.level0_file_num_compaction_trigger.max(1) as f64;
    if o.level0_drain && l0_files > 0 {
        score = score.max(1.01);
    }
    if n == 1 {
        // One level (universal or FIFO): no level below L0 to size it against.
    } else if o.dynamic_level_bytes {
        if l0_bytes >= o.max_bytes_for_level_base {
            score = score.max(1.01);
        }
        let base_target = t.target[t.base_level.max(1)];
        if l0_bytes > base_target {
            let base_bytes = v.level_bytes(t.base_level);
            score = score.max(l0_bytes as f64 / base_bytes.max(base_target).max(1) as f64);
        }
        if score > 1.0 {
            score *= SCORE_SCALE;
        }
    } else {
        score = score.max(l0_bytes as f64 / o.max_bytes_for_level_base.max(1) as f64);
    }
    scores[0] = score;
    let mut down = v.level_bytes(0) as f64;
    for (l, slot) in scores.iter_mut().enumerate().take(n.saturating_sub(1)).skip(1) {
        let bytes: u64 = free(l).map(|f| f.file_size).sum();
        let total = v.level_bytes(l);
        let target = t.target[l].max(1);
        let unnecessary = t.lowest_unnecessary.is_some_and(|u| l <= u);
        let mut score = if !o.dynamic_level_bytes || bytes < target {
            bytes as f64 / target as f64
        } else {
            bytes as f64 / (target as f64 + down) * SCORE_SCALE
        };
        if o.dynamic_level_bytes && bytes > 0 && unnecessary {
            let above = t.lowest_unnecessary.unwrap_or(l) - l;
            score = score.max(SCORE_SCALE * (1.001 + 0.001 * above as f64));
        }
        if unnecessary {
            down += total as f64;
        } else if total > target {
            down += (total - target) as f64;
        }
        *slot = score;
    }
    scores
}

/// The smallest and largest internal key over `files` in `order` (None when there are none).
pub(crate) fn range_of<'a>(
    files: impl Iterator<Item = &'a Arc<TableFile>>,
    order: &KeyOrder,
) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut lo: Option<&[u8]> = None;
    let mut hi: Option<&[u8]> = None;
    for f in files {
        if lo.is_none_or(|l| order.compare_internal(&f.smallest, l) == Ordering::Less) {
            lo = Some(&f.smallest);
        }
        if hi.is_none_or(|h| order.compare_internal(&f.largest, h) == Ordering::Greater) {
            hi = Some(&f.largest);
        }
    }
    Some((lo?.to_vec(), hi?.to_vec()))
}

/// Files of `level` whose user-key range intersects [lo, hi] (internal keys; compared by user
/// key so that no version of a boundary key is left behind). A largest key that is a range
/// tombstone's end bound, in a file or as `hi`, is exclusive.
pub(crate) fn overlapping(v: &Version, level: usize, lo: &[u8], hi: &[u8]) -> Vec<Arc<TableFile>> {
    v.levels[level].iter().filter(|f| reaches(v.order(), f, lo, hi)).cloned().collect()
}

/// Whether file `f` holds a user key in [lo, hi] (as [`overlapping`] takes it).
fn reaches(o: &KeyOrder, f: &TableFile, lo: &[u8], hi: &[u8]) -> bool {
    !o.after_largest(user_key(lo), &f.largest) && !o.after_largest(user_key(&f.smallest), hi)
}

fn target_file_size(o: &PickerOptions, t: &LevelTargets, level: usize) -> u64 {
    let steps = level.saturating_sub(t.base_level.max(1)) as u32;
    o.target_file_size_base
        .saturating_mul(o.target_file_size_multiplier.max(1).saturating_pow(steps))
}

/// Whether no two of `files` share a user key (a range tombstone's exclusive end counts as
/// not shared, as in [`overlapping`]).
fn pairwise_disjoint(files: &[Arc<TableFile>], order: &KeyOrder) -> bool {
    let mut sorted: Vec<&Arc<TableFile>> = files.iter().collect();
    sorted.sort_by(|a, b| order.compare_internal(&a.smallest, &b.smallest));
    sorted.windows(2).all(|w| order.after_largest(user_key(&w[1].smallest), &w[0].largest))
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
    let (lo, hi) = range_of(inputs.iter(), v.order())?;
    let output_inputs = if output == start { Vec::new() } else { overlapping(v, output, &lo, &hi) };
    if output_inputs.iter().any(|f| busy.contains(&f.number)) {
        return None;
    }
    let (all_lo, all_hi) = range_of(inputs.iter().chain(output_inputs.iter()), v.order())?;
    let (grandparents, bottommost) = below_output(v, o, output, &all_lo, &all_hi);
    let target = target_file_size(o, t, output);
    let gp_bytes: u64 = grandparents.iter().map(|f| f.file_size).sum();
    // Several inputs move too when no two of them share a user key (L0 files of a sequential
    // load): the output level then holds them side by side, as a rewrite would.
    let trivial_move = start != output
        && output_inputs.is_empty()
        && gp_bytes <= o.max_compaction_bytes
        && pairwise_disjoint(&inputs, v.order());
    Some(CompactionPlan {
        start_level: start,
        output_level: output,
        inputs,
        middle_inputs: Vec::new(),
        output_inputs,
        grandparents,
        trivial_move,
        deletion: false,
        compress: true,
        reason: if start == 0 { "L0 files" } else { "level size" },
        bottommost,
        target_file_size: target,
        max_compaction_bytes: o.max_compaction_bytes,
        output_path_id: 0,
    })
}

/// Below a compaction into `output` of the keys [lo, hi]: the files of the next level that
/// the range reaches (its grandparents, which cut its outputs), and whether no level below
/// `output` holds a key in it (the output is bottommost).
fn below_output(
    v: &Version,
    o: &PickerOptions,
    output: usize,
    lo: &[u8],
    hi: &[u8],
) -> (Vec<Arc<TableFile>>, bool) {
    let grandparents =
        if output + 1 < o.num_levels { overlapping(v, output + 1, lo, hi) } else { Vec::new() };
    let bottommost = (output + 1..o.num_levels).all(|l| overlapping(v, l, lo, hi).is_empty());
    (grandparents, bottommost)
}

/// What [`plan_through`] found.
pub(crate) enum Through {
    /// A needed file is in another compaction: wait.
    Busy,
    /// Nothing below the start level takes part, or no two of the files share a user key:
    /// moves a level at a time write nothing, so the caller plans level by level.
    LevelByLevel,
    /// The one compaction into the level the data ends in.
    Plan(CompactionPlan),
}

/// A manual compaction's plan taking `inputs` at `start`, at every level between the files
/// `in_range` accepts (those of the call's key range) and those the inputs' key range
/// reaches, and the files of `output` the whole reaches, into `output` in one job: a
/// `compact_range` whose data ends in `output` then rewrites each key once, not once per level
/// it passes on the way.
pub(crate) fn plan_through(
    c: &PickContext<'_>,
    start: usize,
    output: usize,
    inputs: Vec<Arc<TableFile>>,
    in_range: impl Fn(&TableFile) -> bool,
) -> Through {
    let PickContext { v, o, t, busy } = *c;
    let order = v.order();
    let Some((mut lo, mut hi)) = range_of(inputs.iter(), order) else {
        return Through::LevelByLevel;
    };
    // Top down, each level's overlapping files widen the range the levels below are searched
    // in. A file of a level above that the widening reaches but that was not taken stays where
    // it is: its keys are not in any input taken from its level or above, so every version it
    // holds is newer than the ones this job moves below it.
    let mut middle_inputs = Vec::new();
    for level in start + 1..output {
        let files: Vec<Arc<TableFile>> = v.levels[level]
            .iter()
            .filter(|f| in_range(f) || reaches(order, f, &lo, &hi))
            .cloned()
            .collect();
        if files.is_empty() {
            continue;
        }
        if let Some((l, h)) = range_of(files.iter(), order) {
            if order.compare_internal(&l, &lo) == Ordering::Less {
                lo = l;
            }
            if order.compare_internal(&h, &hi) == Ordering::Greater {
                hi = h;
            }
        }
        middle_inputs.push((level, files));
    }
    let output_inputs = overlapping(v, output, &lo, &hi);
    let every: Vec<Arc<TableFile>> = inputs
        .iter()
        .chain(middle_inputs.iter().flat_map(|(_, fs)| fs))
        .chain(&output_inputs)
        .cloned()
        .collect();
    if every.iter().any(|f| busy.contains(&f.number)) {
        return Through::Busy;
    }
    if every.len() == inputs.len() || pairwise_disjoint(&every, order) {
        return Through::LevelByLevel;
    }
    let Some((all_lo, all_hi)) = range_of(every.iter(), order) else {
        return Through::LevelByLevel;
    };
    let (grandparents, bottommost) = below_output(v, o, output, &all_lo, &all_hi);
    Through::Plan(CompactionPlan {
        start_level: start,
        output_level: output,
        inputs,
        middle_inputs,
        output_inputs,
        grandparents,
        trivial_move: false,
        deletion: false,
        compress: true,
        reason: "manual, through the levels",
        bottommost,
        target_file_size: target_file_size(o, t, output),
        max_compaction_bytes: o.max_compaction_bytes,
        output_path_id: 0,
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
            if waits_for_batch(v, o) {
                // Nothing L0 outranks starts meanwhile: it would hold the thread when the
                // batch is in.
                break;
            }
            carried_over(v, o, &t).or_else(|| plan_for(&c, 0, t.base_level, v.levels[0].clone()))
        } else {
            pick_file_in_level(&c, level)
        };
        if plan.is_some() {
            return plan;
        }
    }
    None
}

/// Whether L0's compaction waits for more files ([`PickerOptions::level0_batch_files`]):
/// fewer than that many, and less than `max_bytes_for_level_base` in them, unless L0 drains.
/// (Called when no L0 file is busy.)
fn waits_for_batch(v: &Version, o: &PickerOptions) -> bool {
    !o.level0_drain
        && v.levels[0].len() < o.level0_batch_files
        && v.level_bytes(0) < o.max_bytes_for_level_base
}

/// With [`PickerOptions::level0_carry_over`], the merge of all of L0 into one L0 file in place
/// of its L0 -> base compaction, when that is the cheaper: L0 has at least two files and less
/// than `max_bytes_for_level_base` in them (the merged file calls for no compaction by size),
/// and the base level holds at least twice their bytes in their key range. The merge writes
/// L0's bytes now and once more when the merged file goes down with the next batch (whose
/// base rewrite happens anyway): at most two thirds of what the base rewrite would write now.
/// The base files need not be free. (Called when no L0 file is busy, so the merged file takes
/// L0's whole sequence-number range and keeps its place in L0's order.)
fn carried_over(v: &Version, o: &PickerOptions, t: &LevelTargets) -> Option<CompactionPlan> {
    let l0 = &v.levels[0];
    if !o.level0_carry_over || l0.len() < 2 || t.base_level == 0 {
        return None;
    }
    let l0_bytes = v.level_bytes(0);
    if l0_bytes >= o.max_bytes_for_level_base {
        return None;
    }
    let (lo, hi) = range_of(l0.iter(), v.order())?;
    let base_bytes: u64 = overlapping(v, t.base_level, &lo, &hi).iter().map(|f| f.file_size).sum();
    if base_bytes < l0_bytes.saturating_mul(2) {
        return None;
    }
    Some(CompactionPlan::l0_merge(l0.clone(), "L0 carry-over"))
}

/// kMinOverlappingRatio: the non-busy file with the least next-level overlap per byte whose
/// overlapping files are free, grown by [`grow_inputs`].
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
    let order = v.order();
    candidates
        .sort_by(|a, b| a.0.cmp(&b.0).then(order.compare_internal(&a.1.smallest, &b.1.smallest)));
    let (_, f) = candidates.first()?;
    let inputs = grow_inputs(c, level, vec![(*f).clone()]);
    plan_for(c, level, output, inputs)
}

/// The inputs of a `level` -> `level + 1` compaction, grown to more files of `level` when
/// that rewrites no more files of `level + 1`: first every file overlapping the key range of
/// the inputs and their next-level overlap, else the files wholly inside it. Growth stops at
/// busy files and at `max_compaction_bytes`. More bytes move down per byte of the next level
/// rewritten.
fn grow_inputs(
    c: &PickContext<'_>,
    level: usize,
    inputs: Vec<Arc<TableFile>>,
) -> Vec<Arc<TableFile>> {
    let PickContext { v, o, busy, .. } = *c;
    let output = level + 1;
    let order = v.order();
    let Some((lo, hi)) = range_of(inputs.iter(), order) else { return inputs };
    let below = overlapping(v, output, &lo, &hi);
    if below.is_empty() {
        return inputs;
    }
    let below_bytes: u64 = below.iter().map(|f| f.file_size).sum();
    let Some((all_lo, all_hi)) = range_of(inputs.iter().chain(below.iter()), order) else {
        return inputs;
    };
    let (ulo, uhi) = (user_key(&all_lo), user_key(&all_hi));
    let touching = overlapping(v, level, &all_lo, &all_hi);
    let inside: Vec<Arc<TableFile>> = touching
        .iter()
        .filter(|f| order.le(ulo, user_key(&f.smallest)) && order.le(user_key(&f.largest), uhi))
        .cloned()
        .collect();
    for grown in [touching, inside] {
        if grown.len() <= inputs.len() || grown.iter().any(|f| busy.contains(&f.number)) {
            continue;
        }
        let bytes: u64 = grown.iter().map(|f| f.file_size).sum();
        if bytes.saturating_add(below_bytes) >= o.max_compaction_bytes {
            continue;
        }
        let Some((glo, ghi)) = range_of(grown.iter(), order) else { continue };
        if overlapping(v, output, &glo, &ghi).len() == below.len() {
            return grown;
        }
    }
    inputs
}

#[cfg(test)]
pub(crate) mod tests;
