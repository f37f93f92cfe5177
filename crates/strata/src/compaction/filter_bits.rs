//! Filter bits skewed towards the smaller, newer sorted runs (tiered style with
//! `TieredCompactionOptions::skewed_filter_bits`; after Monkey and Dostoevsky).
//!
//! A point lookup of a key probes the filter of every run above the one holding it, and of
//! every run for a missing key: the I/O wasted is the *sum* of the runs' false-positive rates.
//! With b bits per key a Bloom filter's rate is about `exp(-b · ln²2)`. For a fixed memory
//! budget `Σ nᵢ·bᵢ` (nᵢ keys in run i), the sum `Σ pᵢ` is smallest when each rate is
//! proportional to its run's size, `pᵢ ∝ nᵢ`, that is
//!
//! ```text
//!   bᵢ = b̄ + (H − ln nᵢ) / ln²2        H = Σ (nⱼ/N) · ln nⱼ   (size-weighted mean of ln n)
//! ```
//!
//! which keeps the size-weighted mean of the bᵢ at b̄ (the configured `bloom_bits_per_key`):
//! the largest run, holding most keys, gets slightly fewer bits than b̄, and each run `T` times
//! smaller gets `log₂T · 1.44` more bits per key. With uniform bits every run has the same
//! rate, so `k` runs cost `k·p`; skewed, the sum is dominated by the largest run's.
//!
//! A table gets its bits when it is written, from the sizes of the runs the tree will hold
//! once it is installed (its own included); bits are whole numbers, clamped to
//! `1..=3·b̄`.

use std::collections::HashSet;

use super::picker::CompactionPlan;
use super::universal::sorted_runs;
use crate::types::FileNumber;
use crate::version::levels::Version;

/// Bits per key for a table of `out_bytes` joining runs of `other_runs` bytes each, with a
/// budget of `base` bits per key on average (0: no filter, stays 0).
pub(crate) fn skewed_bits_per_key(base: u32, other_runs: &[u64], out_bytes: u64) -> u32 {
    if base == 0 {
        return 0;
    }
    let sizes = other_runs.iter().chain(std::iter::once(&out_bytes)).filter(|&&n| n > 0);
    let total: f64 = sizes.clone().map(|&n| n as f64).sum();
    if total <= 0.0 || out_bytes == 0 {
        return base;
    }
    let h: f64 = sizes.map(|&n| n as f64 / total * (n as f64).ln()).sum();
    let ln2_sq = std::f64::consts::LN_2 * std::f64::consts::LN_2;
    let bits = f64::from(base) + (h - (out_bytes as f64).ln()) / ln2_sq;
    let max = base.saturating_mul(3);
    // In range after the clamp, so the conversion is exact.
    bits.round().clamp(1.0, f64::from(max)) as u32
}

/// The bits per key for the outputs of `plan` over `v`: the runs it does not take stay beside
/// its output, which is at most the bytes of its inputs.
pub(crate) fn bits_for_plan(base: u32, v: &Version, plan: &CompactionPlan) -> u32 {
    let inputs: HashSet<FileNumber> = plan.all_inputs().map(|(_, f)| f.number).collect();
    let out: u64 = plan.all_inputs().map(|(_, f)| f.file_size).sum();
    let others: Vec<u64> = sorted_runs(v, &HashSet::new())
        .iter()
        .filter(|r| !r.files.iter().all(|f| inputs.contains(&f.number)))
        .map(|r| r.size)
        .collect();
    skewed_bits_per_key(base, &others, out)
}

/// The bits per key for a flushed table joining the runs of `v`; its size is taken to be the
/// newest L0 file's (the previous flush), `fallback` when L0 is empty.
pub(crate) fn bits_for_flush(base: u32, v: &Version, fallback: u64) -> u32 {
    let out = v.levels[0].first().map_or(fallback, |f| f.file_size);
    let others: Vec<u64> = sorted_runs(v, &HashSet::new()).iter().map(|r| r.size).collect();
    skewed_bits_per_key(base, &others, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// False-positive rate of a Bloom filter with `bits` per key (optimal probes).
    fn fpr(bits: f64) -> f64 {
        (-bits * std::f64::consts::LN_2 * std::f64::consts::LN_2).exp()
    }

    #[test]
    fn one_run_and_no_filter_keep_the_budget() {
        assert_eq!(skewed_bits_per_key(10, &[], 1 << 20), 10);
        assert_eq!(skewed_bits_per_key(0, &[1 << 30], 1 << 10), 0);
        assert_eq!(skewed_bits_per_key(10, &[0, 0], 1 << 20), 10);
        // Equal runs: equal bits.
        assert_eq!(skewed_bits_per_key(10, &[1 << 20, 1 << 20], 1 << 20), 10);
    }

    /// Tiers of fan-in 8 (1, 8, 64, 512 units): the largest run gets about the budget, each
    /// smaller tier about 3 · 1.44 more; the memory stays within a few percent of the uniform
    /// budget's, and the summed false-positive rate drops by more than half.
    #[test]
    fn tiers_get_more_bits_the_smaller_they_are_within_the_same_memory() {
        let sizes = [1u64 << 20, 8 << 20, 64 << 20, 512 << 20];
        let bits: Vec<u32> = (0..sizes.len())
            .map(|i| {
                let others: Vec<u64> =
                    sizes.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, &s)| s).collect();
                skewed_bits_per_key(10, &others, sizes[i])
            })
            .collect();
        assert_eq!(bits, vec![22, 18, 14, 9]);
        let total: u64 = sizes.iter().sum();
        let memory: u64 = sizes.iter().zip(&bits).map(|(&s, &b)| s * u64::from(b)).sum();
        let uniform = total * 10;
        assert!(memory <= uniform * 105 / 100, "{memory} vs {uniform}");
        let skewed_fp: f64 = bits.iter().map(|&b| fpr(f64::from(b))).sum();
        let uniform_fp = 4.0 * fpr(10.0);
        assert!(skewed_fp < uniform_fp * 0.5, "{skewed_fp} vs {uniform_fp}");
    }

    #[test]
    fn bits_are_clamped() {
        // A tiny table beside a huge run: at most 3x the budget; a huge one: at least 1.
        assert_eq!(skewed_bits_per_key(4, &[1 << 40], 1), 12);
        assert_eq!(skewed_bits_per_key(1, &[1; 1000], 1 << 40), 1);
    }
}
