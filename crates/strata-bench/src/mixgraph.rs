//! The model behind db_bench's `mixgraph`: the workload fitted to Facebook's social-graph
//! RocksDB traces (Cao et al., "Characterizing, Modeling, and Benchmarking RocksDB Key-Value
//! Workloads at Facebook", FAST '20), as db_bench's `MixGraph` draws it (`docs/db_bench.md`
//! §5.12). Every draw of one operation starts from one random key number `r` in `0..num` and
//! `u = r / num`:
//!
//! - the query: `r mod R` against the cumulative shares of get, put and seek, each share
//!   `ceil(1000 * ratio / sum)` ([`QueryMix`]);
//! - the key: `r` itself when `--key_dist_a` or `--key_dist_b` is 0; with key ranges
//!   (`--keyrange_dist_*`), a range chosen by the two-term exponential
//!   `a e^(b x) + c e^(d x)` and a key inside it ([`KeyRanges`]); else the power model
//!   `u = a x^b` inverted into a seed, whose MT19937-64's first draw, as a signed remainder by
//!   `num`, is the key number (so about half the numbers are negative and wrap to keys past
//!   every loaded one, as in db_bench);
//! - a put's value size and a seek's scan length: the generalized Pareto
//!   `theta + sigma (u^-k - 1) / k` ([`pareto_inverse`]), a value at least 10 bytes and taken
//!   modulo the largest size above it, a scan modulo `--mix_max_scan_len`;
//! - with `--sine_mix_rate`, the operations per second follow `A sin(B t + C) + D`
//!   ([`sine_rate`]), shared between reads and writes by their ratios, changed every
//!   `--sine_mix_rate_interval_milliseconds`.
//!
//! Where db_bench's arithmetic is undefined (a division by zero, a modulo by zero) the flags
//! that lead there are refused by [`Model::new`] with what was expected.

use anyhow::{bail, Result};

use crate::flags::Flags;
use crate::random::Mt64;

/// What one mixgraph operation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    Get,
    Put,
    Seek,
}

/// The get / put / seek shares (db_bench's `QueryDecider`).
#[derive(Clone, Debug)]
pub struct QueryMix {
    /// Cumulative upper ends of get, put and seek in `0..range`.
    ends: [i64; 3],
    /// The ratios normalized to sum 1.
    pub ratios: [f64; 3],
}

impl QueryMix {
    /// From the three ratios (non-negative, some positive).
    pub fn new(get: f64, put: f64, seek: f64) -> Result<QueryMix> {
        let raw = [get, put, seek];
        if raw.iter().any(|r| !r.is_finite() || *r < 0.0) || raw.iter().sum::<f64>() <= 0.0 {
            bail!(
                "--mix_get_ratio={get} --mix_put_ratio={put} --mix_seek_ratio={seek}: the \
                 ratios must not be negative and one must be positive"
            );
        }
        let sum: f64 = raw.iter().sum();
        let mut ends = [0i64; 3];
        let mut end = 0i64;
        for (slot, r) in ends.iter_mut().zip(raw) {
            end += (1000.0 * (r / sum)).ceil() as i64;
            *slot = end;
        }
        Ok(QueryMix { ends, ratios: raw.map(|r| r / sum) })
    }

    /// The query for random number `r` (its absolute value modulo the range).
    pub fn pick(&self, r: i64) -> Query {
        let pos = r.unsigned_abs() % self.ends[2] as u64;
        match self.ends.iter().position(|&e| (pos as i64) < e) {
            Some(1) => Query::Put,
            Some(2) => Query::Seek,
            _ => Query::Get,
        }
    }
}

/// The inverse of the generalized Pareto distribution's CDF at `u`, rounded up, saturating
/// where it is not finite (`u` = 0).
pub fn pareto_inverse(u: f64, theta: f64, k: f64, sigma: f64) -> i64 {
    let x = if k == 0.0 { theta - sigma * u.ln() } else { theta + sigma * (u.powf(-k) - 1.0) / k };
    x.ceil() as i64
}

/// The inverse of the power CDF `u = a x^b`, rounded up.
pub fn power_inverse(u: f64, a: f64, b: f64) -> i64 {
    (u / a).powf(1.0 / b).ceil() as i64
}

/// `A sin(B t + C) + D` of the `--sine_*` flags, `t` in seconds.
pub fn sine_rate(f: &Flags, t: f64) -> f64 {
    f.sine_a * (f.sine_b * t + f.sine_c).sin() + f.sine_d
}

/// `rate` moved by up to half of `--sine_a` times `noise` either way (kept where the move
/// would make it negative, and not moved for a noise outside 0..1), `draw` a random number.
pub fn add_noise(rate: f64, noise: f64, sine_a: f64, draw: u64) -> f64 {
    let band = sine_a as i64;
    if !(0.0..=1.0).contains(&noise) || band <= 0 {
        return rate;
    }
    let delta = ((draw % band as u64) as i64 - band / 2) as f64 * noise;
    if rate + delta < 0.0 {
        rate
    } else {
        rate + delta
    }
}

/// One key range of [`KeyRanges`]: where its share of the draws starts and how big it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    start: i64,
    access: i64,
}

/// Key ranges of hotness `a e^(b x) + c e^(d x)` (db_bench's `GenerateTwoTermExpKeys`): the
/// key space split into `--keyrange_num` ranges of equal size, range `x` drawn with that
/// probability; the ranges are shuffled by a generator seeded with the total of the shares, so
/// the same parameters give the same layout.
#[derive(Clone, Debug)]
pub struct KeyRanges {
    ranges: Vec<Range>,
    /// The sum of the shares: a draw picks a range by its number modulo this.
    total: i64,
    /// Keys per range.
    size: i64,
}

impl KeyRanges {
    pub fn new(num: i64, keyrange_num: i64, a: f64, b: f64, c: f64, d: f64) -> Result<KeyRanges> {
        let n = keyrange_num.max(1);
        let size = num / n;
        if size == 0 {
            bail!("--keyrange_num={keyrange_num}: more key ranges than --num={num} has keys");
        }
        let mut ranges = Vec::with_capacity(n as usize);
        let (mut amplify, mut start) = (0i64, 0i64);
        for x in (1..=n).rev() {
            let mut p = a * (b * x as f64).exp() + c * (d * x as f64).exp();
            if p < 1e-16 {
                p = 0.0;
            }
            if amplify == 0 && p > 0.0 {
                amplify = (1.0 / p).floor() as i64 + 1;
            }
            let access = if p <= 0.0 { 0 } else { (amplify as f64 * p).floor() as i64 };
            ranges.push(Range { start, access });
            start += access;
        }
        if start <= 0 {
            bail!(
                "--keyrange_dist_a={a} --keyrange_dist_b={b} --keyrange_dist_c={c} \
                 --keyrange_dist_d={d}: every key range gets a share of 0 (a e^(b x) + c e^(d x) \
                 must be positive for some x in 1..={n})"
            );
        }
        let mut shuffle = Mt64::new(start as u64);
        for i in 0..keyrange_num.max(0) as usize {
            let pos = (shuffle.next_u64() % keyrange_num as u64) as usize;
            ranges.swap(i, pos);
        }
        let mut offset = 0;
        for r in &mut ranges {
            r.start = offset;
            offset += r.access;
        }
        Ok(KeyRanges { ranges, total: start, size })
    }

    /// The key number for random number `r` (in `0..num`), inside the range `r` picks:
    /// uniform there without a key model, else by the power model seeded as
    /// [`Model::key`]'s.
    pub fn key(&self, r: i64, key_dist_a: f64, key_dist_b: f64) -> i64 {
        let pick = r % self.total;
        let (mut lo, mut hi) = (0usize, self.ranges.len());
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if pick < self.ranges[mid].start {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        let offset = if key_dist_a == 0.0 || key_dist_b == 0.0 {
            r % self.size
        } else {
            let u = (r % self.size) as f64 / self.size as f64;
            let seed = power_inverse(u, key_dist_a, key_dist_b);
            (Mt64::new(seed as u64).next_u64() % self.size as u64) as i64
        };
        self.size * lo as i64 + offset
    }
}

/// Everything a mixgraph thread draws from, built once from the flags.
#[derive(Clone, Debug)]
pub struct Model {
    pub queries: QueryMix,
    ranges: Option<KeyRanges>,
    key_dist: Option<(f64, f64)>,
    num: i64,
    /// The largest value size: `--mix_max_value_size`, at most 1 MiB.
    pub value_max: i64,
    pub scan_max: i64,
}

impl Model {
    pub fn new(f: &Flags, num: i64) -> Result<Model> {
        let queries = QueryMix::new(f.mix_get_ratio, f.mix_put_ratio, f.mix_seek_ratio)?;
        let dist = [f.keyrange_dist_a, f.keyrange_dist_b, f.keyrange_dist_c, f.keyrange_dist_d];
        let ranges = if dist.iter().any(|&v| v != 0.0) {
            let [a, b, c, d] = dist;
            Some(KeyRanges::new(num, f.keyrange_num, a, b, c, d)?)
        } else {
            None
        };
        let key_dist =
            (f.key_dist_a != 0.0 && f.key_dist_b != 0.0).then_some((f.key_dist_a, f.key_dist_b));
        if f.mix_max_value_size < 1 {
            bail!("--mix_max_value_size={}: must be at least 1", f.mix_max_value_size);
        }
        if f.mix_max_scan_len < 1 {
            bail!("--mix_max_scan_len={}: must be at least 1", f.mix_max_scan_len);
        }
        if f.sine_mix_rate && f.sine_mix_rate_interval_milliseconds == 0 {
            bail!(
                "--sine_mix_rate_interval_milliseconds=0: must be at least 1 with --sine_mix_rate"
            );
        }
        Ok(Model {
            queries,
            ranges,
            key_dist,
            num,
            value_max: f.mix_max_value_size.min(1 << 20),
            scan_max: f.mix_max_scan_len,
        })
    }

    /// The key number for random number `r` (in `0..num`); may lie outside `0..num` (module
    /// doc).
    pub fn key(&self, r: i64) -> u64 {
        let (a, b) = self.key_dist.unwrap_or((0.0, 0.0));
        let k = match (&self.ranges, self.key_dist) {
            (_, None) => r,
            (Some(ranges), Some(_)) => ranges.key(r, a, b),
            (None, Some(_)) => {
                let u = r as f64 / self.num as f64;
                let seed = power_inverse(u, a, b);
                Mt64::new(seed as u64).next_u64() as i64 % self.num
            }
        };
        k as u64
    }

    /// A put's value size for `u`.
    pub fn value_size(&self, u: f64, f: &Flags) -> usize {
        let v = pareto_inverse(u, f.value_theta, f.value_k, f.value_sigma);
        let v = if v < 10 {
            10
        } else if v > self.value_max {
            v % self.value_max
        } else {
            v
        };
        v as usize
    }

    /// A seek's scan length for `u`.
    pub fn scan_len(&self, u: f64, f: &Flags) -> u64 {
        pareto_inverse(u, f.iter_theta, f.iter_k, f.iter_sigma).rem_euclid(self.scan_max) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_shares_follow_the_ratios() {
        let q = QueryMix::new(0.83, 0.14, 0.03).expect("mix");
        assert_eq!(q.ends, [830, 970, 1000]);
        assert_eq!(
            (q.pick(829), q.pick(830), q.pick(969), q.pick(970)),
            (Query::Get, Query::Put, Query::Put, Query::Seek)
        );
        assert_eq!(q.pick(1000), Query::Get, "modulo the range");
        let only_gets = QueryMix::new(1.0, 0.0, 0.0).expect("gets");
        assert!((0..3000).all(|r| only_gets.pick(r) == Query::Get));
        assert!(QueryMix::new(0.0, 0.0, 0.0).is_err());
        assert!(QueryMix::new(1.0, -0.5, 0.0).is_err());
    }

    #[test]
    fn the_inverse_cdfs() {
        // Pareto with db_bench's value defaults: u = 1 is theta, small u the long tail.
        assert_eq!(pareto_inverse(1.0, 0.0, 0.2615, 25.45), 0);
        assert_eq!(pareto_inverse(0.5, 0.0, 0.2615, 25.45), 20);
        assert_eq!(pareto_inverse(0.001, 0.0, 0.2615, 25.45), 496);
        assert_eq!(pareto_inverse(0.5, 1.0, 0.0, 2.0), 3, "k = 0: the exponential");
        assert_eq!(pareto_inverse(0.0, 0.0, 0.2615, 25.45), i64::MAX, "u = 0 saturates");
        assert_eq!(power_inverse(0.5, 0.002312, 0.3467), 5_430_977);
    }

    // The rates below are sums of halves: exact in binary.
    #[allow(clippy::float_cmp)]
    #[test]
    fn noise_stays_in_its_band_and_never_makes_a_rate_negative() {
        assert_eq!(add_noise(100.0, 0.5, 1000.0, 0), 100.0, "-250 would make it negative");
        assert_eq!(add_noise(1000.0, 0.5, 1000.0, 0), 750.0);
        assert_eq!(add_noise(1000.0, 0.5, 1000.0, 999), 1249.5);
        assert_eq!(add_noise(1000.0, 1.5, 1000.0, 0), 1000.0, "noise outside 0..1");
        assert_eq!(add_noise(1000.0, 0.5, 0.5, 7), 1000.0, "a band of 0");
    }

    #[test]
    fn key_ranges_split_the_key_space_by_hotness() {
        // The FAST '20 paper's fit: 30 ranges, most draws in a few of them.
        let r = KeyRanges::new(3000, 30, 14.18, -2.917, 0.0164, -0.08082).expect("ranges");
        assert_eq!(r.size, 100);
        assert_eq!(r.ranges.iter().map(|x| x.access).sum::<i64>(), r.total);
        let mut hits = vec![0u32; 30];
        for i in 0..3000 {
            hits[(r.key(i, 0.0, 0.0) / 100) as usize] += 1;
        }
        hits.sort_unstable();
        assert!(hits[29] + hits[28] + hits[27] > 2000, "three hot ranges take most: {hits:?}");
        assert!((0..3000).all(|i| (0..3000).contains(&r.key(i, 0.002312, 0.3467))));
        // The layout depends only on the parameters.
        let again = KeyRanges::new(3000, 30, 14.18, -2.917, 0.0164, -0.08082).expect("ranges");
        assert_eq!(again.ranges, r.ranges);
        assert!(KeyRanges::new(10, 30, 1.0, 0.0, 0.0, 0.0).is_err(), "ranges of no key");
        assert!(KeyRanges::new(3000, 30, 0.0, 0.0, 0.0, 0.0).is_err(), "no share");
    }

    fn flags(args: &[&str]) -> Flags {
        crate::config::Config::from_args(args).expect("config").flags
    }

    #[test]
    fn the_power_model_wraps_negative_key_numbers_as_db_bench() {
        let f = flags(&["--key_dist_a=0.002312", "--key_dist_b=0.3467", "--db=/tmp/x"]);
        let m = Model::new(&f, 1000).expect("model");
        let keys: Vec<u64> = (0..1000).map(|r| m.key(r)).collect();
        let past = keys.iter().filter(|&&k| k >= 1000).count();
        assert!(past > 300 && past < 700, "about half wrap: {past}");
        assert!(keys.iter().all(|&k| !(1000..=u64::MAX - 1000).contains(&k)));
        let uniform = Model::new(&flags(&["--db=/tmp/x"]), 1000).expect("model");
        assert_eq!(uniform.key(417), 417);
    }

    #[test]
    fn value_sizes_and_scans_stay_in_their_bounds() {
        let f = flags(&["--mix_max_value_size=300", "--mix_max_scan_len=50", "--db=/tmp/x"]);
        let m = Model::new(&f, 1000).expect("model");
        assert_eq!(m.value_size(1.0, &f), 10, "at least 10 bytes");
        assert_eq!(m.value_size(0.5, &f), 20);
        assert_eq!(m.value_size(0.001, &f), 496 % 300);
        assert!((1..1000).all(|i| m.scan_len(i as f64 / 1000.0, &f) < 50));
        let bad = flags(&["--mix_max_scan_len=0", "--db=/tmp/x"]);
        assert!(Model::new(&bad, 1000).is_err());
    }
}
