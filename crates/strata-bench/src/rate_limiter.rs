//! A rate limiter shared by threads (`--benchmark_write_rate_limit` in bytes/second,
//! `--benchmark_read_rate_limit` in operations/second).
//!
//! Each request reserves the next `units / rate` seconds of a virtual timeline and sleeps until
//! its slot starts; up to one refill period (100 ms, as RocksDB's limiter) of unused time may
//! be spent as a burst. Only rate-limited benchmarks call it, once per batch.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const BURST: Duration = Duration::from_millis(100);

#[derive(Debug)]
pub struct RateLimiter {
    /// Units per second, an `f64`'s bits ([`RateLimiter::set_rate`] changes it).
    per_sec: AtomicU64,
    next_free: Mutex<Instant>,
}

impl RateLimiter {
    /// A limiter of `per_sec` units per second (must be > 0).
    pub fn new(per_sec: u64) -> Self {
        RateLimiter {
            per_sec: AtomicU64::new((per_sec.max(1) as f64).to_bits()),
            next_free: Mutex::new(Instant::now()),
        }
    }

    /// From now on, `per_sec` units per second (at least 1); requests already granted keep
    /// their slots.
    pub fn set_rate(&self, per_sec: f64) {
        self.per_sec.store(per_sec.max(1.0).to_bits(), Ordering::Relaxed);
    }

    /// Waits until `units` may proceed.
    pub fn request(&self, units: u64) {
        let per_sec = f64::from_bits(self.per_sec.load(Ordering::Relaxed));
        let cost = Duration::from_secs_f64(units as f64 / per_sec);
        let now = Instant::now();
        let start = {
            let mut next = match self.next_free.lock() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            let earliest = now.checked_sub(BURST).unwrap_or(now);
            let start = (*next).max(earliest);
            *next = start + cost;
            start
        };
        if start > now {
            std::thread::sleep(start - now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_throughput() {
        let rl = RateLimiter::new(10_000);
        let t = Instant::now();
        for _ in 0..30 {
            rl.request(100); // 30 * 100 units at 10000/s = 0.3 s, minus the 0.1 s burst
        }
        let e = t.elapsed();
        assert!(e >= Duration::from_millis(180), "{e:?}");
        assert!(e < Duration::from_millis(1500), "{e:?}");
    }
}
