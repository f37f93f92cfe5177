//! How a writer waits for its slot (`queue.rs`: its leader's word, or the publication of a
//! group that finished before an earlier one): a short spin, then (with
//! `enable_write_thread_adaptive_yield`, while yielding has been paying off) yields of its CPU
//! for up to `write_thread_max_yield_usec`, and only then sleep.
//!
//! Sleeping costs both sides a system call: the waiter's futex wait, and a futex wake from the
//! leader for every member of every group, before the leader can lead on. With more writers
//! than cores, most waits are shorter than that: a group's WAL append and memtable inserts
//! take microseconds. A yield hands the CPU to a runnable thread (often the leader) and comes
//! back at once when there is none; a waiter that is yielding rather than asleep is answered
//! with a store alone.
//!
//! Yielding is wasted when the wait is long (a synced group's fdatasync) or when other
//! threads keep the CPU (each yield then takes a scheduler slice): a yield that takes
//! `write_thread_slow_yield_usec` or more is slow, and after [`MAX_SLOW_YIELDS`] of them the
//! writer sleeps. Whether to yield at all follows a credit the DB's writers share: every
//! [`SAMPLE_EVERY`]th wait of a thread yields regardless and adds to the credit when yielding
//! ended the wait, or takes from it when it did not; the others yield only while the credit is
//! not negative. So a workload of long waits soon stops yielding, and one of short waits keeps
//! on. (RocksDB's write thread decides the same way, with the same options.)
//!
//! The yields are off by default: with more writers than cores they took CPU from flushes and
//! compactions (`docs/measurements.md`, "Write path").

use std::cell::Cell;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// Spins before the first yield (or the sleep): a few microseconds at most (a spin-loop hint
/// takes from tens to about 140 cycles, by CPU), which a wait for a leader's memtable insert
/// of a few records often is.
const SPINS: u32 = 64;

/// Slow yields after which a writer stops yielding and sleeps.
const MAX_SLOW_YIELDS: u32 = 3;

/// A thread's every this-many-th wait yields whatever the credit, to keep it current.
const SAMPLE_EVERY: u32 = 256;

/// How much one sampled wait moves the credit. The credit decays by 1/1024 per sample, so it
/// stays within ±1024 × this (no overflow of an `i32`).
const CREDIT_STEP: i32 = 1 << 17;

thread_local! {
    /// The calling thread's waits, counted for sampling.
    static WAITS: Cell<u32> = const { Cell::new(0) };
}

/// How a DB's writers wait (`Options::enable_write_thread_adaptive_yield`,
/// `write_thread_max_yield_usec`, `write_thread_slow_yield_usec`).
#[derive(Debug)]
pub(crate) struct YieldPolicy {
    /// Longest time a wait yields; zero: it spins, then sleeps.
    max_yield: Duration,
    /// A yield at least this long is slow.
    slow_yield: Duration,
    /// Positive: yielding has ended most sampled waits.
    credit: AtomicI32,
}

impl YieldPolicy {
    /// `adaptive` off (or a zero `max_yield_usec`): no yields.
    pub(crate) fn new(adaptive: bool, max_yield_usec: u64, slow_yield_usec: u64) -> YieldPolicy {
        YieldPolicy {
            max_yield: if adaptive {
                Duration::from_micros(max_yield_usec)
            } else {
                Duration::ZERO
            },
            slow_yield: Duration::from_micros(slow_yield_usec.max(1)),
            credit: AtomicI32::new(0),
        }
    }

    /// Spins, then yields while the policy allows, until `done` holds: true if it did, false
    /// if the caller should sleep until it does.
    pub(crate) fn spin_until(&self, done: impl Fn() -> bool) -> bool {
        for _ in 0..SPINS {
            if done() {
                return true;
            }
            std::hint::spin_loop();
        }
        if self.max_yield.is_zero() {
            return false;
        }
        let sampled = WAITS.with(|w| {
            let n = w.get().wrapping_add(1);
            w.set(n);
            n % SAMPLE_EVERY == 0
        });
        if !sampled && self.credit.load(Ordering::Relaxed) < 0 {
            return false;
        }
        let start = Instant::now();
        let mut last = start;
        let mut slow = 0;
        let (ended, update) = loop {
            std::thread::yield_now();
            if done() {
                break (true, sampled);
            }
            let now = Instant::now();
            if now.duration_since(last) >= self.slow_yield {
                slow += 1;
                if slow >= MAX_SLOW_YIELDS {
                    // Other threads hold the CPU: say so at once rather than at the next sample.
                    break (false, true);
                }
            }
            if now.duration_since(start) > self.max_yield {
                break (false, sampled);
            }
            last = now;
        };
        if update {
            // Samples may race; a lost update only delays the credit's drift.
            let c = self.credit.load(Ordering::Relaxed);
            let step = if ended { CREDIT_STEP } else { -CREDIT_STEP };
            self.credit.store(c - c / 1024 + step, Ordering::Relaxed);
        }
        ended
    }

    #[cfg(test)]
    fn credit(&self) -> i32 {
        self.credit.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_condition_already_true_ends_the_wait_without_yielding() {
        let p = YieldPolicy::new(true, 100, 3);
        assert!(p.spin_until(|| true));
        assert_eq!(p.credit(), 0);
    }

    #[test]
    fn without_adaptive_yield_a_wait_spins_then_gives_up() {
        let p = YieldPolicy::new(false, 100, 3);
        let start = Instant::now();
        assert!(!p.spin_until(|| false));
        assert!(start.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn a_wait_that_outlasts_the_yield_time_gives_up_and_lowers_the_credit() {
        let p = YieldPolicy::new(true, 50, 1_000_000);
        // Every wait here is sampled once per SAMPLE_EVERY; run enough to take samples.
        for _ in 0..SAMPLE_EVERY {
            assert!(!p.spin_until(|| false));
        }
        assert!(p.credit() < 0, "credit {}", p.credit());
        // With a negative credit an unsampled wait no longer yields: it returns after the spins.
        let start = Instant::now();
        assert!(!p.spin_until(|| false));
        assert!(start.elapsed() < Duration::from_millis(50));
    }

    #[test]
    fn a_condition_set_by_another_thread_during_the_yields_ends_the_wait() {
        let p = YieldPolicy::new(true, 10_000_000, 1_000_000);
        let flag = Arc::new(AtomicBool::new(false));
        let setter = {
            let flag = flag.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                flag.store(true, Ordering::Release);
            })
        };
        assert!(p.spin_until(|| flag.load(Ordering::Acquire)));
        setter.join().unwrap();
    }
}
