//! Tiered compaction picking (Strata's write-optimised style, [`CompactionStyle::Tiered`]): a
//! pure function from a version, the files being compacted and the options to a plan. It uses
//! universal's sorted runs and output placement (`compaction/universal.rs`) with its own rules,
//! in this order:
//!
//! ```text
//!   sorted runs, newest first:  R0 R1 ... R(k-2) | R(k-1) = oldest
//!                               \___ tiers ____/   rewritten only by rule 1
//! ```
//!
//! 1. **Space bound**: once the runs above the oldest hold `max_size_amplification_percent`
//!    of the oldest run's bytes, every free run down to the oldest merges into it (the rule
//!    universal has too).
//! 2. **Tier merge**: the first span, newest first, of at least `fan_in` consecutive free runs
//!    above the oldest whose sizes are all within a factor of 2 of each other merges into one
//!    run (a run `fan_in` times larger: the next tier).
//! 3. **Run budget**: with more than `max_sorted_runs` free runs, the newest free ones merge,
//!    as many as it takes to get back within the budget (whatever their sizes).
//!
//! Cost model. Let B be the bytes of a flush, N the live data, P the bound as a fraction and
//! T the fan-in. Write amplification counts the flush (1), the tier merges and the rewrites of
//! the oldest run:
//!
//! - A byte moves up one tier per rewrite, and a tier merge never takes the oldest run, so
//!   the upper part costs about log_T(P·N / B) rewrites per byte. The runs above the oldest
//!   hold at most P·N bytes.
//! - Under overwrites, the oldest run (about N bytes) is rewritten once per P·N bytes
//!   written: 1/P per byte (0.5 at 200%).
//! - Reads pay for the runs: up to T - 1 per tier, capped by `max_sorted_runs`.
//!
//! So W ≈ 1 + log_T(P·N/B) + 1/P. Leveled pays roughly (T_level + 1)/2 rewrites per level
//! instead: about 1 + 3 · 5.5 at 3 levels of ratio 10. Universal merges any runs whose sizes chain within
//! `size_ratio` (about two at a time) and keeps only about `trigger` runs, so it rewrites
//! a byte more often in the upper part. Tiered keeps more runs per read instead.
//!
//! Lazy leveling (Dostoevsky: tiers above, one leveled last level) was considered and not
//! chosen. Its last level is merged each time the level above fills to 1/T of it, which
//! costs about T rewrites per byte there, against the 1/P of rule 1. Its space amplification
//! is lower (about 1/T), but its write amplification is above universal's. This style aims
//! at the opposite end of that trade-off.
//!
//! A key-set simulation of uniform random fill + overwrite (each pass writes every key once
//! on average; N/B flushes per pass; compactions instant; the script is in the report of
//! the tiered-compaction model) gives W and the sorted runs after each flush:
//!
//! ```text
//!   N/B   universal (trigger 8)    tiered T=8, budget 16    tiered T=12, budget 24
//!   17    W 2.24, runs 4.0 / 7     W 2.06, runs 4.3 / 9     W 1.95, runs 5.1 / 12
//!   35    W 2.48, runs 4.6 / 8     W 2.59, runs 5.5 / 12    W 2.02, runs 6.6 / 14
//!   52    W 2.62, runs 5.0 / 8     W 2.41, runs 6.0 / 12    W 2.32, runs 6.8 / 14
//!                                  (runs: mean / max)
//! ```
//!
//! The saving is bought with sorted runs, not free. Universal with a larger trigger buys it
//! the same way (trigger 12 at N/B = 17: W 1.87, runs 5.8 / 11). What tiered adds is the
//! shape of the bill: the oldest run costs exactly the bound's 1/P, and each tier costs one
//! rewrite. `fan_in` prices reads against writes directly. The defaults (8, 16) write less
//! than universal's defaults at 17 and 52 flushes per pass, but not at 35, where the tier
//! sizes fall between powers of 8. A fan-in of 12 writes less at all three sizes.

use std::collections::HashSet;

use super::picker::{CompactionPlan, PickerOptions};
use super::universal::{merge_plan, size_amp_span, sorted_runs, SortedRun};
#[cfg(doc)]
use crate::compaction::style::CompactionStyle;
use crate::types::FileNumber;
use crate::version::levels::Version;

/// Runs whose sizes are within this factor of each other belong to one tier.
const TIER_SPREAD: u64 = 2;

/// The tiered compaction to run next, if a rule above calls for one.
pub(crate) fn pick_tiered(
    v: &Version,
    o: &PickerOptions,
    busy: &HashSet<FileNumber>,
) -> Option<CompactionPlan> {
    let runs = sorted_runs(v, busy);
    if runs.len() < 2 {
        return None;
    }
    let t = &o.tiered;
    let plan = |(start, after): (usize, usize), reason| {
        // Every output compressed, no trivial moves: tiers are written once per fan-in.
        merge_plan(o, &runs, start, after, reason, -1, false)
    };
    if let Some(span) = size_amp_span(&runs, t.max_size_amplification_percent) {
        return Some(plan(span, "tiered size amplification"));
    }
    if let Some(span) = tier_span(&runs, t.fan_in as usize) {
        return Some(plan(span, "tiered tier merge"));
    }
    let free = runs.iter().filter(|r| !r.busy).count();
    let budget = t.max_sorted_runs as usize;
    if free > budget {
        if let Some(span) = newest_span(&runs, free - budget + 1) {
            return Some(plan(span, "tiered run budget"));
        }
    }
    None
}

/// The estimate of bytes compaction must still rewrite: the input bytes of the compaction the
/// picker would run next with nothing busy, else 0 (so compaction can always bring it to 0).
pub(crate) fn estimated_pending_compaction_bytes(v: &Version, o: &PickerOptions) -> u64 {
    pick_tiered(v, o, &HashSet::new()).map_or(0, |p| p.all_inputs().map(|(_, f)| f.file_size).sum())
}

/// The first span, newest first, of at least `fan_in` consecutive free runs above the oldest
/// whose sizes are within [`TIER_SPREAD`] of each other.
fn tier_span(runs: &[SortedRun], fan_in: usize) -> Option<(usize, usize)> {
    let oldest = runs.len() - 1;
    for first in 0..oldest {
        if runs[first].busy {
            continue;
        }
        let (mut lo, mut hi) = (runs[first].size, runs[first].size);
        let mut after = first + 1;
        while after < oldest && !runs[after].busy {
            let size = runs[after].size;
            let (nlo, nhi) = (lo.min(size), hi.max(size));
            if nhi > nlo.saturating_mul(TIER_SPREAD) {
                break;
            }
            (lo, hi) = (nlo, nhi);
            after += 1;
        }
        if after - first >= fan_in {
            return Some((first, after));
        }
    }
    None
}

/// The first span of `want` consecutive free runs, newest first (fewer if the free stretch is
/// shorter, but at least 2).
fn newest_span(runs: &[SortedRun], want: usize) -> Option<(usize, usize)> {
    let mut first = 0;
    while first < runs.len() {
        if runs[first].busy {
            first += 1;
            continue;
        }
        let mut after = first + 1;
        while after < runs.len() && after - first < want && !runs[after].busy {
            after += 1;
        }
        if after - first >= 2 {
            return Some((first, after));
        }
        first = after;
    }
    None
}

#[cfg(test)]
mod tests;
