//! The rate a write slowdown paces writes at, and how it follows the compaction debt (the role
//! of the delayed write rate in RocksDB's write controller).
//!
//! A slowdown (L0 at `level0_slowdown_writes_trigger` files, or pending compaction bytes at the
//! soft limit) paces writes at a rate that starts at `delayed_write_rate` and then moves with
//! the LSM's shape, looked at on every write's flow-control check and acted on only when it
//! changed (a flush or a compaction installed a new version):
//!
//! ```text
//!   event while slowed                         rate
//!   debt grew or held (a flush added a file)   x 0.8
//!   debt shrank (a compaction finished)        x 1.25
//!   near a stop, or just out of one            x 0.6   (L0 within 2 files of the stop
//!                                                        trigger, or pending bytes past 3/4
//!                                                        of the way from soft to hard limit)
//!   the slowdown ends                          x 1.4, kept for the next slowdown
//! ```
//!
//! Debt is the pair (pending compaction bytes, L0 files), compared in that order. The rate
//! stays within [`MIN_DELAYED_WRITE_RATE`, `delayed_write_rate`]; a configured rate below the
//! minimum is used as it is and never adjusted. Invariant: a slowed writer's rate is never
//! above `delayed_write_rate`, and writes that keep adding debt faster than compactions remove
//! it are paced slower and slower, down to the minimum, instead of running into a stop at a
//! fixed pace.
//!
//! Pure: [`DelayedRate`] is fed the shape and answers the rate; the DB holds one
//! (`DbInner::delayed_rate`) and `stall.rs` sleeps.

/// The slowest pace a slowdown goes down to (bytes per second).
pub(crate) const MIN_DELAYED_WRITE_RATE: u64 = 16 << 10;
const DEBT_GREW: f64 = 0.8;
const DEBT_SHRANK: f64 = 1.25;
const NEAR_STOP: f64 = 0.6;
const RECOVERED: f64 = 1.4;

/// What a slowdown's pace follows: the slowed family's compaction debt and L0 file count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Debt {
    pub pending_bytes: u64,
    pub l0_files: usize,
}

/// The delayed write rate of one DB.
#[derive(Debug)]
pub(crate) struct DelayedRate {
    max: u64,
    rate: u64,
    /// The debt at the last look while slowed; `None` outside a slowdown.
    last: Option<Debt>,
}

impl DelayedRate {
    /// A DB whose `delayed_write_rate` is `max` (positive).
    pub(crate) fn new(max: u64) -> DelayedRate {
        DelayedRate { max, rate: max, last: None }
    }

    /// The rate to pace a write at, in a slowdown whose family owes `debt` (`near_stop`: see
    /// the module doc; `after_stop`: the writer asking was stopped just before).
    pub(crate) fn slowed(&mut self, debt: Debt, near_stop: bool, after_stop: bool) -> u64 {
        if self.max > MIN_DELAYED_WRITE_RATE {
            let factor = match self.last {
                // The first look: the rate kept from the last slowdown, unless a stop or its
                // nearness says slower.
                None => (near_stop || after_stop).then_some(NEAR_STOP),
                Some(prev) if prev == debt && !after_stop => None,
                Some(_) if near_stop || after_stop => Some(NEAR_STOP),
                Some(prev) if debt >= prev => Some(DEBT_GREW),
                Some(_) => Some(DEBT_SHRANK),
            };
            if let Some(f) = factor {
                self.rate = ((self.rate as f64 * f) as u64).clamp(MIN_DELAYED_WRITE_RATE, self.max);
            }
        }
        self.last = Some(debt);
        self.rate
    }

    /// No slowdown any more: the rate recovers part of the way for the next one.
    pub(crate) fn not_slowed(&mut self) {
        if self.last.take().is_some() && self.max > MIN_DELAYED_WRITE_RATE {
            self.rate = ((self.rate as f64 * RECOVERED) as u64).min(self.max);
        }
    }

    /// The rate a slowdown paces at now (or would start at).
    pub(crate) fn rate(&self) -> u64 {
        self.rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: u64 = 16 << 20;

    fn debt(pending_bytes: u64, l0_files: usize) -> Debt {
        Debt { pending_bytes, l0_files }
    }

    #[test]
    fn starts_at_the_configured_rate_and_holds_while_nothing_changes() {
        let mut r = DelayedRate::new(MAX);
        assert_eq!(r.slowed(debt(100, 20), false, false), MAX);
        assert_eq!(r.slowed(debt(100, 20), false, false), MAX);
    }

    #[test]
    fn growing_debt_slows_down_and_shrinking_debt_speeds_up() {
        let mut r = DelayedRate::new(MAX);
        r.slowed(debt(100, 20), false, false);
        assert_eq!(r.slowed(debt(150, 21), false, false), (MAX as f64 * 0.8) as u64);
        let after_two = r.slowed(debt(150, 22), false, false); // more L0 files, same bytes: grew
        assert_eq!(after_two, ((MAX as f64 * 0.8) as u64 as f64 * 0.8) as u64);
        let up = r.slowed(debt(120, 20), false, false);
        assert_eq!(up, (after_two as f64 * 1.25) as u64);
        // Never above the configured rate.
        for i in 0..20 {
            r.slowed(debt(100 - i, 20), false, false);
        }
        assert_eq!(r.rate(), MAX);
    }

    #[test]
    fn debt_that_keeps_growing_reaches_the_minimum_and_stays_there() {
        let mut r = DelayedRate::new(MAX);
        for i in 0..100u64 {
            let rate = r.slowed(debt(1000 + i, 20), false, false);
            assert!((MIN_DELAYED_WRITE_RATE..=MAX).contains(&rate), "{rate}");
        }
        assert_eq!(r.rate(), MIN_DELAYED_WRITE_RATE);
    }

    #[test]
    fn near_a_stop_or_out_of_one_slows_down_more() {
        let mut r = DelayedRate::new(MAX);
        assert_eq!(r.slowed(debt(100, 34), true, false), (MAX as f64 * 0.6) as u64);
        let mut r = DelayedRate::new(MAX);
        r.slowed(debt(100, 20), false, false);
        // Out of a stop with the same debt: still slower.
        assert_eq!(r.slowed(debt(100, 20), false, true), (MAX as f64 * 0.6) as u64);
        // Near a stop with the debt unchanged: nothing new, no further slowing.
        assert_eq!(r.slowed(debt(100, 20), true, false), (MAX as f64 * 0.6) as u64);
    }

    #[test]
    fn the_rate_recovers_between_slowdowns_and_the_next_one_starts_from_it() {
        let mut r = DelayedRate::new(MAX);
        r.slowed(debt(100, 20), false, false);
        for i in 1..=5 {
            r.slowed(debt(100 + i, 20), false, false);
        }
        let low = r.rate();
        assert!(low < MAX / 2, "{low}");
        r.not_slowed();
        let recovered = (low as f64 * 1.4) as u64;
        assert_eq!(r.rate(), recovered);
        assert_eq!(r.slowed(debt(10, 20), false, false), recovered, "a new slowdown starts there");
        r.not_slowed();
        r.not_slowed(); // outside a slowdown: no second recovery
        assert_eq!(r.rate(), (recovered as f64 * 1.4) as u64);
    }

    #[test]
    fn a_configured_rate_below_the_minimum_is_never_adjusted() {
        let mut r = DelayedRate::new(4 << 10);
        assert_eq!(r.slowed(debt(1, 20), true, false), 4 << 10);
        assert_eq!(r.slowed(debt(2, 21), false, false), 4 << 10);
        r.not_slowed();
        assert_eq!(r.rate(), 4 << 10);
    }
}
