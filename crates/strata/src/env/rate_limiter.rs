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

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The bucket holds at most this period's worth of bytes.
pub(crate) const REFILL_PERIOD: Duration = Duration::from_millis(100);

/// See the module documentation.
#[derive(Debug)]
pub struct RateLimiter {
    rate: u64,
    burst: u64,
    bucket: Mutex<Bucket>,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    refilled: Instant,
}

impl RateLimiter {
    /// A limiter of `bytes_per_sec` (at least 1).
    pub fn new(bytes_per_sec: u64) -> RateLimiter {
        let rate = bytes_per_sec.max(1);
        let burst = ((rate as f64 * REFILL_PERIOD.as_secs_f64()) as u64).max(1);
        RateLimiter {
            rate,
            burst,
            bucket: Mutex::new(Bucket { tokens: burst as f64, refilled: Instant::now() }),
        }
    }

    /// The configured rate.
    pub fn bytes_per_sec(&self) -> u64 {
        self.rate
    }

    /// Waits until `bytes` may be written, and takes them from the budget.
    pub fn request(&self, bytes: u64) {
        let mut left = bytes;
        while left > 0 {
            let part = left.min(self.burst);
            let wait = {
                let mut b = self.bucket.lock();
                let now = Instant::now();
                let refill = now.duration_since(b.refilled).as_secs_f64() * self.rate as f64;
                b.tokens = (b.tokens + refill).min(self.burst as f64);
                b.refilled = now;
                // Taken now, possibly into debt: the wait pays the debt off, and a writer
                // arriving meanwhile sees it and waits behind it.
                b.tokens -= part as f64;
                if b.tokens >= 0.0 {
                    None
                } else {
                    Some(Duration::from_secs_f64(-b.tokens / self.rate as f64))
                }
            };
            if let Some(w) = wait {
                std::thread::sleep(w);
            }
            left -= part;
        }
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
        let min_secs = (total.saturating_sub(rl.burst)) as f64 / rl.rate as f64;
        let took = start.elapsed().as_secs_f64();
        // Never faster than the rate allows (a lower bound only: never assert speed).
        assert!(took >= min_secs * 0.95, "{total} bytes in {took:.3} s, at least {min_secs:.3} s");
    }

    #[test]
    fn a_drained_bucket_makes_the_next_request_wait() {
        let rl = RateLimiter::new(10 << 20);
        rl.request(rl.burst);
        assert!(rl.bucket.lock().tokens < rl.burst as f64 / 2.0, "the burst was taken");
        let start = Instant::now();
        rl.request(rl.burst);
        let waited = start.elapsed().as_secs_f64();
        let owed = rl.burst as f64 / rl.rate as f64;
        assert!(waited >= owed * 0.8, "waited {waited:.3} s for {owed:.3} s of budget");
    }
}
