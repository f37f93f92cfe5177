//! Redis's latency monitor and per-command latency histograms, served by LATENCY
//! (`commands::latency`).
//!
//! - [`Histogram`]: each command's run times in buckets that double from 1,024 ns, as Redis
//!   7.0 keeps them (an HDR histogram read by powers of two): LATENCY HISTOGRAM reports, per
//!   bucket where the count grows, the bucket's bound in microseconds (1, 2, 4, 8, 16, 32,
//!   65, 131, ...) and the calls at or under it.
//! - [`Monitor`]: with `latency-monitor-threshold` above 0 (milliseconds), an event (a
//!   command's run, `command` or `fast-command`; an active expiry round, `expire-cycle`) that
//!   takes at least that long is recorded: per event its samples (one per second, the
//!   largest of that second) up to the last [`HISTORY_LEN`], and its all-time largest.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// Buckets of a [`Histogram`]: the last holds everything from about 73 minutes up.
pub const BUCKETS: usize = 43;

/// Run times by bucket (module doc).
#[derive(Debug)]
pub struct Histogram {
    counts: [AtomicU64; BUCKETS],
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram { counts: std::array::from_fn(|_| AtomicU64::new(0)) }
    }
}

/// The bucket of a run of `ns` nanoseconds: the least `k` with `ns <= 1024 << k`.
fn bucket(ns: u64) -> usize {
    let k = if ns <= 1024 { 0 } else { 64 - ((ns - 1) >> 10).leading_zeros() as usize };
    k.min(BUCKETS - 1)
}

impl Histogram {
    /// Counts a run of `ns` nanoseconds.
    pub fn record(&self, ns: u64) {
        self.counts[bucket(ns)].fetch_add(1, Ordering::Relaxed);
    }

    /// Per bucket where the count grows: its bound in microseconds and the runs at or under
    /// it (LATENCY HISTOGRAM's `histogram_usec`).
    pub fn cumulative(&self) -> Vec<(u64, u64)> {
        let mut total = 0;
        let mut out = Vec::new();
        for (k, c) in self.counts.iter().enumerate() {
            let n = c.load(Ordering::Relaxed);
            if n > 0 {
                total += n;
                out.push(((1024u64 << k) / 1000, total));
            }
        }
        out
    }

    /// Forgets every run (CONFIG RESETSTAT).
    pub fn reset(&self) {
        for c in &self.counts {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// Samples kept per event, as Redis keeps them.
pub const HISTORY_LEN: usize = 160;

/// One event's record.
#[derive(Debug, Default, Clone)]
pub struct EventRecord {
    /// `(unix seconds, milliseconds)`, oldest first; one per second.
    pub samples: std::collections::VecDeque<(u64, u64)>,
    /// The largest latency recorded since the last reset.
    pub max: u64,
}

/// The latency monitor (module doc).
#[derive(Debug, Default)]
pub struct Monitor {
    /// `latency-monitor-threshold` in milliseconds; 0: off.
    threshold_ms: AtomicU64,
    events: Mutex<BTreeMap<&'static str, EventRecord>>,
}

impl Monitor {
    /// A monitor recording what takes `threshold_ms` or more (0: nothing).
    pub fn new(threshold_ms: u64) -> Monitor {
        Monitor { threshold_ms: AtomicU64::new(threshold_ms), events: Mutex::default() }
    }

    /// Sets `latency-monitor-threshold`.
    pub fn set_threshold(&self, ms: u64) {
        self.threshold_ms.store(ms, Ordering::Relaxed);
    }

    /// Notes that `event` took `ms` milliseconds, at unix second `now`: recorded if the
    /// monitor is on and that reaches the threshold.
    pub fn note(&self, event: &'static str, ms: u64, now: u64) {
        let threshold = self.threshold_ms.load(Ordering::Relaxed);
        if threshold == 0 || ms < threshold {
            return;
        }
        let mut events = self.events.lock();
        let e = events.entry(event).or_default();
        e.max = e.max.max(ms);
        match e.samples.back_mut() {
            Some((t, worst)) if *t == now => *worst = (*worst).max(ms),
            _ => {
                if e.samples.len() == HISTORY_LEN {
                    e.samples.pop_front();
                }
                e.samples.push_back((now, ms));
            }
        }
    }

    /// Every event with samples, by name: its record.
    pub fn events(&self) -> Vec<(&'static str, EventRecord)> {
        self.events.lock().iter().map(|(k, v)| (*k, v.clone())).collect()
    }

    /// The record of `event`, if it has one.
    pub fn event(&self, event: &str) -> Option<EventRecord> {
        self.events.lock().get(event).cloned()
    }

    /// Forgets the named events (all when `names` is empty); how many had a record.
    pub fn reset(&self, names: &[&str]) -> usize {
        let mut events = self.events.lock();
        if names.is_empty() {
            let n = events.len();
            events.clear();
            return n;
        }
        names.iter().filter(|n| events.remove(**n).is_some()).count()
    }

    /// `latency-monitor-threshold`.
    pub fn threshold(&self) -> u64 {
        self.threshold_ms.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_fall_in_doubling_buckets_reported_cumulatively_in_microseconds() {
        assert_eq!((bucket(0), bucket(1024), bucket(1025), bucket(2048)), (0, 0, 1, 1));
        assert_eq!((bucket(2049), bucket(1_000_000)), (2, 10));
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        let h = Histogram::default();
        for ns in [500, 900, 1500, 3000, 3000, 70_000] {
            h.record(ns);
        }
        assert_eq!(h.cumulative(), vec![(1, 2), (2, 3), (4, 5), (131, 6)]);
        h.reset();
        assert!(h.cumulative().is_empty());
    }

    #[test]
    fn events_at_the_threshold_are_kept_one_per_second_with_their_largest() {
        let m = Monitor::new(0);
        m.note("command", 500, 10);
        assert!(m.events().is_empty(), "off at 0");
        m.set_threshold(100);
        m.note("command", 99, 10);
        assert!(m.events().is_empty(), "under the threshold");
        m.note("command", 100, 10);
        m.note("command", 300, 10);
        m.note("command", 200, 11);
        let e = m.event("command").unwrap();
        assert_eq!(Vec::from(e.samples), vec![(10, 300), (11, 200)]);
        assert_eq!(e.max, 300);
        for s in 0..200 {
            m.note("expire-cycle", 150, 100 + s);
        }
        let e = m.event("expire-cycle").unwrap();
        assert_eq!(e.samples.len(), HISTORY_LEN);
        assert_eq!(e.samples.front(), Some(&(140, 150)), "the oldest dropped");
        assert_eq!(m.reset(&["nosuch", "command"]), 1);
        assert_eq!(m.reset(&[]), 1);
        assert!(m.events().is_empty());
    }
}
