//! The histograms' storage: values counted in log-linear buckets (exact below 8, then four
//! buckets per power of two, so a bucket is at most a quarter of its lower bound wide), with
//! count, sum, sum of squares, minimum and maximum kept exactly. Percentiles interpolate
//! linearly inside the bucket they fall in and are clamped to the exact minimum and maximum.

use std::sync::atomic::{AtomicU64, Ordering};

/// Buckets: 8 exact ones, then 4 for each power of two from 8 to 2^63.
const NUM_BUCKETS: usize = 8 + 61 * 4;

/// The bucket of `v`.
#[inline]
fn bucket_of(v: u64) -> usize {
    if v < 8 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros() as usize; // 3..=63
    let sub = ((v >> (e - 2)) & 3) as usize;
    8 + (e - 3) * 4 + sub
}

/// The values bucket `i` holds: `[lo, hi)`.
fn bucket_bounds(i: usize) -> (f64, f64) {
    if i < 8 {
        return (i as f64, (i + 1) as f64);
    }
    let j = i - 8;
    let e = 3 + j / 4;
    let sub = (j % 4) as u128;
    let lo = (4 + sub) << (e - 2);
    let hi = (5 + sub) << (e - 2);
    (lo as f64, hi as f64)
}

/// One shard of one histogram: what the threads of that shard recorded.
#[repr(align(64))]
pub(crate) struct HistogramShard {
    sum: AtomicU64,
    /// An `f64`'s bits: squares overflow `u64` long before sums do.
    sum_squares: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
    buckets: [AtomicU64; NUM_BUCKETS],
}

impl Default for HistogramShard {
    fn default() -> Self {
        HistogramShard {
            sum: AtomicU64::new(0),
            sum_squares: AtomicU64::new(0f64.to_bits()),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl HistogramShard {
    pub(crate) fn add(&self, v: u64) {
        self.buckets[bucket_of(v)].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(v, Ordering::Relaxed);
        let sq = (v as f64) * (v as f64);
        let _ = self.sum_squares.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
            Some((f64::from_bits(b) + sq).to_bits())
        });
        self.min.fetch_min(v, Ordering::Relaxed);
        self.max.fetch_max(v, Ordering::Relaxed);
    }
}

/// A histogram's summary at the moment it was read (`Options::get_histogram_data`): all zero
/// for a histogram nothing was recorded in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistogramData {
    count: u64,
    sum: u64,
    min: f64,
    max: f64,
    average: f64,
    std_dev: f64,
    median: f64,
    p95: f64,
    p99: f64,
}

impl HistogramData {
    /// An empty summary (all zero).
    pub fn new() -> HistogramData {
        HistogramData::default()
    }

    /// The 50th percentile.
    pub fn median(&self) -> f64 {
        self.median
    }

    /// The mean.
    pub fn average(&self) -> f64 {
        self.average
    }

    /// The 95th percentile.
    pub fn p95(&self) -> f64 {
        self.p95
    }

    /// The 99th percentile.
    pub fn p99(&self) -> f64 {
        self.p99
    }

    /// The largest value.
    pub fn max(&self) -> f64 {
        self.max
    }

    /// The smallest value.
    pub fn min(&self) -> f64 {
        self.min
    }

    /// The sum of the values.
    pub fn sum(&self) -> u64 {
        self.sum
    }

    /// How many values.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The standard deviation.
    pub fn std_dev(&self) -> f64 {
        self.std_dev
    }

    /// The summary of the values recorded in `shards`.
    pub(crate) fn merged(shards: &[HistogramShard]) -> HistogramData {
        let mut buckets = [0u64; NUM_BUCKETS];
        let (mut sum, mut sum_squares, mut min, mut max) = (0u64, 0f64, u64::MAX, 0u64);
        for s in shards {
            for (b, a) in buckets.iter_mut().zip(&s.buckets) {
                *b += a.load(Ordering::Relaxed);
            }
            sum = sum.wrapping_add(s.sum.load(Ordering::Relaxed));
            sum_squares += f64::from_bits(s.sum_squares.load(Ordering::Relaxed));
            min = min.min(s.min.load(Ordering::Relaxed));
            max = max.max(s.max.load(Ordering::Relaxed));
        }
        // The buckets' total, not the shards' counters: the percentiles walk the buckets, and
        // a read racing with a writer may see one increment and not the other.
        let count: u64 = buckets.iter().sum();
        if count == 0 {
            return HistogramData::default();
        }
        let (min, max) = (min.min(max) as f64, max as f64);
        let n = count as f64;
        let average = sum as f64 / n;
        let variance = (sum_squares / n - average * average).max(0.0);
        let percentile = |p: f64| -> f64 {
            let threshold = n * p / 100.0;
            let mut seen = 0f64;
            for (i, &c) in buckets.iter().enumerate() {
                if c == 0 {
                    continue;
                }
                let before = seen;
                seen += c as f64;
                if seen >= threshold {
                    let (lo, hi) = bucket_bounds(i);
                    let at = lo + (hi - lo) * ((threshold - before) / c as f64);
                    return at.clamp(min, max);
                }
            }
            max
        };
        HistogramData {
            count,
            sum,
            min,
            max,
            average,
            std_dev: variance.sqrt(),
            median: percentile(50.0),
            p95: percentile(95.0),
            p99: percentile(99.0),
        }
    }
}

#[cfg(test)]
// The minimum and maximum are kept exactly, so they compare exactly.
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order() {
        let mut last = 0;
        for v in (0..5000u64).chain([u64::MAX / 3, u64::MAX - 1, u64::MAX]) {
            let b = bucket_of(v);
            assert!(b < NUM_BUCKETS);
            assert!(b >= last, "buckets grow with values");
            last = b;
            let (lo, hi) = bucket_bounds(b);
            assert!(lo <= v as f64 && (v as f64) < hi || v > (1 << 53), "{v} in [{lo}, {hi})");
        }
        assert_eq!(bucket_of(u64::MAX), NUM_BUCKETS - 1);
    }

    #[test]
    fn summary_of_known_values() {
        let shards: Vec<HistogramShard> = (0..2).map(|_| HistogramShard::default()).collect();
        for v in 1..=100u64 {
            shards[(v % 2) as usize].add(v);
        }
        let d = HistogramData::merged(&shards);
        assert_eq!(d.count(), 100);
        assert_eq!(d.sum(), 5050);
        assert_eq!(d.min(), 1.0);
        assert_eq!(d.max(), 100.0);
        assert!((d.average() - 50.5).abs() < 1e-9);
        assert!((d.std_dev() - 28.866).abs() < 0.01, "{}", d.std_dev());
        // Bucket widths are at most a quarter of their bounds.
        assert!((d.median() - 50.0).abs() <= 50.0 * 0.25, "{}", d.median());
        assert!((d.p95() - 95.0).abs() <= 95.0 * 0.25, "{}", d.p95());
        assert!(d.p99() <= 100.0 && d.p99() >= d.p95());
        assert_eq!(HistogramData::merged(&shards[..0]), HistogramData::default());
    }

    #[test]
    fn one_value_reads_back_exactly() {
        let s = [HistogramShard::default()];
        s[0].add(7);
        s[0].add(7);
        let d = HistogramData::merged(&s);
        assert_eq!((d.median(), d.p99(), d.max(), d.std_dev()), (7.0, 7.0, 7.0, 0.0));
    }
}
