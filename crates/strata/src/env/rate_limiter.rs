//! [`RateLimiter`]: bounds the bytes per second that flushes and compactions write to table
//! files (`Options::rate_limiter_bytes_per_sec`), so background writes leave the device's
//! bandwidth to foreground reads and the WAL.
//!
//! A token bucket refilled continuously at `rate` bytes per second and holding at most one
//! refill period's worth ([`REFILL_PERIOD`], as RocksDB's 100 ms), so an idle limiter allows a
//! burst of that size and no more. [`RateLimiter::request`] takes tokens for a write, sleeping
//! while the bucket is short; a request larger than the bucket is taken in bucket-sized parts,
//! so any size passes. Writers are served in no particular order (no priorities: flushes and
//! compactions share the budget). The lock is held only to update the bucket, never while
//! sleeping.
//!
//! **Auto-tuned** ([`RateLimiter::new_auto_tuned`], RocksDB's `auto_tuned` mode): the
//! configured rate is a ceiling, and the rate in force moves within [ceiling / 20, ceiling],
//! starting at half the ceiling. A refill period is *drained* when some request in it found
//! the bucket short. Every [`TUNE_PERIODS`] periods the limiter looks at the share of drained
//! periods since the last tuning: above 90% the background writers want more and the rate
//! rises by 5%; below 50% they do not use what they have and it falls by 5% (so that when they
//! do need it, their bursts are spread out instead of hitting the device at full speed).
//! Tuning happens inside a request (no thread of its own); periods with no request at all
//! count as not drained. The step rule is [`tuned_rate`], a pure function.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The bucket holds at most this period's worth of bytes.
pub(crate) const REFILL_PERIOD: Duration = Duration::from_millis(100);
/// An auto-tuned limiter re-tunes after this many refill periods.
pub(crate) const TUNE_PERIODS: u32 = 100;
/// An auto-tuned rate never falls below the ceiling divided by this.
const TUNED_RANGE: u64 = 20;
/// Below this share of drained periods (percent) the rate falls.
const LOW_WATERMARK_PCT: u64 = 50;
/// Above this share of drained periods (percent) the rate rises.
const HIGH_WATERMARK_PCT: u64 = 90;
/// Each tuning step changes the rate by this percentage.
const ADJUST_PCT: u64 = 5;

/// See the module documentation.
#[derive(Debug)]
pub struct RateLimiter {
    /// The configured rate: the rate in force, or the ceiling of an auto-tuned limiter.
    max_rate: u64,
    auto_tuned: bool,
    period: Duration,
    tune_periods: u32,
    bucket: Mutex<Bucket>,
    /// Bytes requested so far.
    through: AtomicU64,
}

#[derive(Debug)]
struct Bucket {
    /// The rate in force and the bucket size it gives (one period's worth).
    rate: u64,
    burst: u64,
    tokens: f64,
    refilled: Instant,
    /// Auto-tuning: when the current tuning window began, how many of its periods were
    /// drained, and the index (within the window) of the last period counted.
    window_start: Instant,
    drained: u64,
    last_drained: Option<u64>,
}

/// The rate after one tuning step, from the rate in force, the ceiling, and how many of the
/// window's `periods` refill periods were drained (module doc).
pub(crate) fn tuned_rate(rate: u64, max: u64, drained: u64, periods: u64) -> u64 {
    let min = (max / TUNED_RANGE).max(1);
    let pct = u128::from(drained) * 100 / u128::from(periods.max(1));
    let rate = u128::from(rate);
    let next = if pct > u128::from(HIGH_WATERMARK_PCT) {
        rate * u128::from(100 + ADJUST_PCT) / 100
    } else if pct < u128::from(LOW_WATERMARK_PCT) {
        rate * 100 / u128::from(100 + ADJUST_PCT)
    } else {
        rate
    };
    u64::try_from(next).unwrap_or(u64::MAX).clamp(min, max.max(min))
}

fn burst_of(rate: u64, period: Duration) -> u64 {
    ((rate as f64 * period.as_secs_f64()) as u64).max(1)
}

impl RateLimiter {
    /// A limiter of `bytes_per_sec` (at least 1).
    pub fn new(bytes_per_sec: u64) -> RateLimiter {
        Self::with_tuning(bytes_per_sec, false, REFILL_PERIOD, TUNE_PERIODS)
    }

    /// An auto-tuned limiter whose rate moves within [`bytes_per_sec` / 20, `bytes_per_sec`]
    /// with the background writers' demand (module doc).
    pub fn new_auto_tuned(bytes_per_sec: u64) -> RateLimiter {
        Self::with_tuning(bytes_per_sec, true, REFILL_PERIOD, TUNE_PERIODS)
    }

    fn with_tuning(max: u64, auto_tuned: bool, period: Duration, tune_periods: u32) -> Self {
        let max_rate = max.max(1);
        let rate =
            if auto_tuned { (max_rate / 2).max((max_rate / TUNED_RANGE).max(1)) } else { max_rate };
        let burst = burst_of(rate, period);
        let now = Instant::now();
        RateLimiter {
            max_rate,
            auto_tuned,
            period,
            tune_periods: tune_periods.max(1),
            bucket: Mutex::new(Bucket {
                rate,
                burst,
                tokens: burst as f64,
                refilled: now,
                window_start: now,
                drained: 0,
                last_drained: None,
            }),
            through: AtomicU64::new(0),
        }
    }

    /// The configured rate (an auto-tuned limiter's ceiling).
    pub fn bytes_per_sec(&self) -> u64 {
        self.max_rate
    }

    /// The rate in force (below the configured one while an auto-tuned limiter is tuned down).
    pub fn current_bytes_per_sec(&self) -> u64 {
        self.bucket.lock().rate
    }

    /// The bytes requested through this limiter so far (RocksDB's `GetTotalBytesThrough`).
    pub fn total_bytes_through(&self) -> u64 {
        self.through.load(Ordering::Relaxed)
    }

    /// Whether the rate follows demand (module doc).
    pub fn is_auto_tuned(&self) -> bool {
        self.auto_tuned
    }

    /// Waits until `bytes` may be written, and takes them from the budget.
    pub fn request(&self, bytes: u64) {
        self.through.fetch_add(bytes, Ordering::Relaxed);
        let mut left = bytes;
        while left > 0 {
            let (part, wait) = self.take(left, Instant::now());
            if let Some(w) = wait {
                std::thread::sleep(w);
            }
            left -= part;
        }
    }

    /// Takes up to one bucket's worth of `left` at `now`: the bytes taken and how long the
    /// caller must wait before writing them.
    fn take(&self, left: u64, now: Instant) -> (u64, Option<Duration>) {
        let mut b = self.bucket.lock();
        if self.auto_tuned {
            self.maybe_tune(&mut b, now);
        }
        let part = left.min(b.burst);
        let refill = now.saturating_duration_since(b.refilled).as_secs_f64() * b.rate as f64;
        b.tokens = (b.tokens + refill).min(b.burst as f64);
        b.refilled = now.max(b.refilled);
        // Taken now, possibly into debt: the wait pays the debt off, and a writer arriving
        // meanwhile sees it and waits behind it.
        b.tokens -= part as f64;
        if b.tokens >= 0.0 {
            return (part, None);
        }
        if self.auto_tuned {
            let period = self.period_index(&b, now);
            if b.last_drained != Some(period) {
                b.last_drained = Some(period);
                b.drained += 1;
            }
        }
        (part, Some(Duration::from_secs_f64(-b.tokens / b.rate as f64)))
    }

    /// The index of the refill period `now` falls in, counted from the tuning window's start.
    fn period_index(&self, b: &Bucket, now: Instant) -> u64 {
        let nanos = now.saturating_duration_since(b.window_start).as_nanos();
        u64::try_from(nanos / self.period.as_nanos().max(1)).unwrap_or(u64::MAX)
    }

    /// Ends the tuning window when it has lasted `tune_periods` periods: sets the rate from
    /// its share of drained periods, and starts the next window.
    fn maybe_tune(&self, b: &mut Bucket, now: Instant) {
        let periods = self.period_index(b, now);
        if periods < u64::from(self.tune_periods) {
            return;
        }
        let rate = tuned_rate(b.rate, self.max_rate, b.drained, periods);
        if rate != b.rate {
            b.rate = rate;
            b.burst = burst_of(rate, self.period);
            b.tokens = b.tokens.min(b.burst as f64);
        }
        b.window_start = now;
        b.drained = 0;
        b.last_drained = None;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn throughput_follows_the_rate_across_threads() {
        // 4 MB/s; 4 threads write 0.6 MB in all, in writes of mixed sizes (some larger than
        // the bucket): about 0.15 s, the burst allowed up front.
        let rl = Arc::new(RateLimiter::new(4 << 20));
        let start = Instant::now();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let rl = rl.clone();
                std::thread::spawn(move || {
                    for i in 0..30u64 {
                        rl.request(
                            1000 + (i * 7919 + t) % 9000 + if i == 7 { 600_000 / 4 } else { 0 },
                        );
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let total: u64 = (0..4u64)
            .map(|t| (0..30u64).map(|i| 1000 + (i * 7919 + t) % 9000).sum::<u64>() + 150_000)
            .sum();
        let (burst, rate) = (rl.bucket.lock().burst, rl.max_rate);
        let min_secs = (total.saturating_sub(burst)) as f64 / rate as f64;
        let took = start.elapsed().as_secs_f64();
        // Never faster than the rate allows (a lower bound only: never assert speed).
        assert!(took >= min_secs * 0.95, "{total} bytes in {took:.3} s, at least {min_secs:.3} s");
    }

    #[test]
    fn a_drained_bucket_makes_the_next_request_wait() {
        let rl = RateLimiter::new(10 << 20);
        let burst = rl.bucket.lock().burst;
        rl.request(burst);
        assert!(rl.bucket.lock().tokens < burst as f64 / 2.0, "the burst was taken");
        let start = Instant::now();
        rl.request(burst);
        let waited = start.elapsed().as_secs_f64();
        let owed = burst as f64 / rl.max_rate as f64;
        assert!(waited >= owed * 0.8, "waited {waited:.3} s for {owed:.3} s of budget");
    }

    #[test]
    fn a_tuning_step_follows_the_drained_share() {
        let max = 100 << 20;
        // Above 90% drained: +5%; below 50%: -5%; in between: unchanged.
        assert_eq!(tuned_rate(10 << 20, max, 95, 100), (10 << 20) * 105 / 100);
        assert_eq!(tuned_rate(10 << 20, max, 49, 100), (10 << 20) * 100 / 105);
        assert_eq!(tuned_rate(10 << 20, max, 50, 100), 10 << 20);
        assert_eq!(tuned_rate(10 << 20, max, 90, 100), 10 << 20);
        // Clamped to [max / 20, max].
        assert_eq!(tuned_rate(max, max, 100, 100), max);
        assert_eq!(tuned_rate(max / 20, max, 0, 100), max / 20);
        assert_eq!(tuned_rate(max / 20 + 1, max, 0, 500), max / 20);
        // Degenerate inputs stay in range.
        assert_eq!(tuned_rate(7, 1, 0, 0), 1);
        assert_eq!(tuned_rate(u64::MAX, u64::MAX, 100, 100), u64::MAX);
    }

    /// Drives an auto-tuned limiter on virtual time (no sleeping): `demand` bytes requested
    /// at the start of each period for `periods` periods; returns the rate in force after.
    fn drive(rl: &RateLimiter, start: Instant, from: u32, periods: u32, demand: u64) -> u64 {
        for p in from..from + periods {
            let now = start + rl.period * p;
            let mut left = demand;
            while left > 0 {
                let (part, _wait) = rl.take(left, now);
                left -= part;
            }
        }
        rl.current_bytes_per_sec()
    }

    #[test]
    fn an_auto_tuned_rate_rises_under_demand_and_falls_when_idle() {
        let max = 64 << 20;
        let rl = RateLimiter::with_tuning(max, true, Duration::from_millis(100), 10);
        let start = rl.bucket.lock().window_start;
        assert_eq!(rl.current_bytes_per_sec(), max / 2, "starts at half the ceiling");
        // Demand twice the ceiling every period: every period is drained, so each window of
        // 10 periods raises the rate 5% until it reaches the ceiling and stays there.
        let after_one = drive(&rl, start, 0, 11, 2 * max / 10);
        assert!(after_one > max / 2, "one drained window raised the rate: {after_one}");
        let saturated = drive(&rl, start, 11, 300, 2 * max / 10);
        assert_eq!(saturated, max, "sustained demand reaches the ceiling");
        // A trickle far below the rate drains nothing: the rate falls, down to max / 20.
        let low = drive(&rl, start, 311, 1200, 1024);
        assert_eq!(low, max / 20, "idle writers bring the rate to its floor");
        // A fixed limiter never moves.
        let fixed = RateLimiter::with_tuning(max, false, Duration::from_millis(100), 10);
        let start = fixed.bucket.lock().window_start;
        assert_eq!(drive(&fixed, start, 0, 50, 2 * max / 10), max);
        assert_eq!(drive(&fixed, start, 50, 200, 1024), max);
    }
}
