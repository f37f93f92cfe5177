//! Latency histogram with RocksDB's bucket layout and text format (`docs/db_bench.md` §8.4),
//! so that `Percentiles:` / `Min:` lines parse exactly like db_bench's.

use std::fmt::Write as _;
use std::sync::OnceLock;

/// Bucket upper limits: 1, 2, then each previous (unrounded) limit times 1.5, cut to its two
/// leading digits (172 -> 170), up to `u64::MAX`.
pub fn bucket_limits() -> &'static [u64] {
    static LIMITS: OnceLock<Vec<u64>> = OnceLock::new();
    LIMITS.get_or_init(|| {
        let mut v = vec![1u64, 2];
        let mut x = 2.0f64;
        loop {
            x *= 1.5;
            if x > u64::MAX as f64 {
                break;
            }
            let mut b = x as u64;
            let mut scale = 1u64;
            while b / 10 > 10 {
                b /= 10;
                scale *= 10;
            }
            v.push(b * scale);
        }
        v
    })
}

/// A histogram of non-negative integer samples (microseconds).
#[derive(Clone, Debug)]
pub struct Histogram {
    buckets: Vec<u64>,
    min: u64,
    max: u64,
    count: u64,
    sum: u64,
    sum_squares: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    pub fn new() -> Self {
        Histogram {
            buckets: vec![0; bucket_limits().len()],
            min: u64::MAX,
            max: 0,
            count: 0,
            sum: 0,
            sum_squares: 0.0,
        }
    }

    #[inline]
    pub fn add(&mut self, v: u64) {
        let limits = bucket_limits();
        let i = limits.partition_point(|&l| l < v).min(limits.len() - 1);
        self.buckets[i] += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.count += 1;
        self.sum = self.sum.wrapping_add(v);
        self.sum_squares += (v as f64) * (v as f64);
    }

    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.count += o.count;
        self.sum = self.sum.wrapping_add(o.sum);
        self.sum_squares += o.sum_squares;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn min(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    pub fn sum(&self) -> u64 {
        self.sum
    }

    pub fn average(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// Population standard deviation.
    pub fn std_dev(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let n = self.count as f64;
        let s = self.sum as f64;
        ((self.sum_squares * n - s * s) / (n * n)).max(0.0).sqrt()
    }

    /// The `p`-th percentile, interpolated linearly inside its bucket and clamped to
    /// `[min, max]`.
    pub fn percentile(&self, p: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let limits = bucket_limits();
        let threshold = self.count as f64 * (p / 100.0);
        let mut cumulative = 0u64;
        for (b, &n) in self.buckets.iter().enumerate() {
            cumulative += n;
            if cumulative as f64 >= threshold {
                let left = if b == 0 { 0 } else { limits[b - 1] };
                let right = limits[b];
                let before = cumulative - n;
                let pos = if n == 0 { 0.0 } else { (threshold - before as f64) / n as f64 };
                let r = left as f64 + (right - left) as f64 * pos;
                return r.clamp(self.min() as f64, self.max as f64);
            }
        }
        self.max as f64
    }

    pub fn median(&self) -> f64 {
        self.percentile(50.0)
    }

    /// db_bench's `HistogramImpl::ToString()` text.
    pub fn to_text(&self) -> String {
        let mut r = String::new();
        let _ = writeln!(
            r,
            "Count: {} Average: {:.4}  StdDev: {:.2}",
            self.count,
            self.average(),
            self.std_dev()
        );
        let _ = writeln!(r, "Min: {}  Median: {:.4}  Max: {}", self.min(), self.median(), self.max);
        let _ = writeln!(
            r,
            "Percentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}",
            self.percentile(50.0),
            self.percentile(75.0),
            self.percentile(99.0),
            self.percentile(99.9),
            self.percentile(99.99)
        );
        r.push_str(&"-".repeat(54));
        r.push('\n');
        if self.count == 0 {
            return r;
        }
        let limits = bucket_limits();
        let mult = 100.0 / self.count as f64;
        let mut cumulative = 0u64;
        for (b, &n) in self.buckets.iter().enumerate() {
            if n == 0 {
                continue;
            }
            cumulative += n;
            let pct = mult * n as f64;
            let _ = write!(
                r,
                "{} {:>7}, {:>7} ] {:>8} {:>7.3}% {:>7.3}% ",
                if b == 0 { '[' } else { '(' },
                if b == 0 { 0 } else { limits[b - 1] },
                limits[b],
                n,
                pct,
                mult * cumulative as f64
            );
            let marks = (pct / 5.0 + 0.5) as usize;
            r.push_str(&"#".repeat(marks));
            r.push('\n');
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_layout() {
        let l = bucket_limits();
        assert_eq!(l.len(), 109);
        assert_eq!(
            &l[..30],
            &[
                1, 2, 3, 4, 6, 10, 15, 22, 34, 51, 76, 110, 170, 250, 380, 580, 870, 1300, 1900,
                2900, 4400, 6600, 9900, 14000, 22000, 33000, 50000, 75000, 110000, 170000
            ]
        );
    }

    #[test]
    fn text_format() {
        let mut h = Histogram::new();
        for v in [0, 1, 2, 3, 3, 5, 100] {
            h.add(v);
        }
        let t = h.to_text();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "Count: 7 Average: 16.2857  StdDev: 34.21");
        assert!(lines[1].starts_with("Min: 0  Median: "), "{}", lines[1]);
        assert!(lines[1].ends_with("  Max: 100"));
        assert!(lines[2].starts_with("Percentiles: P50: "));
        assert_eq!(lines[3], "-".repeat(54));
        assert_eq!(lines[4], "[       0,       1 ]        2  28.571%  28.571% ######");
        assert_eq!(lines[5], "(       1,       2 ]        1  14.286%  42.857% ###");
        assert_eq!(
            lines.last().copied(),
            Some("(      76,     110 ]        1  14.286% 100.000% ###")
        );
    }

    #[test]
    fn percentile_interpolates() {
        let mut h = Histogram::new();
        for _ in 0..100 {
            h.add(5); // bucket (4, 6]
        }
        assert!((h.percentile(50.0) - 5.0).abs() < 1e-9); // interpolated, within [min, max]
        let mut e = Histogram::new();
        assert!(e.percentile(99.0).abs() < 1e-9);
        e.merge(&h);
        assert_eq!(e.count(), 100);
        assert_eq!(e.min(), 5);
    }
}
