//! Redis's latency monitor and per-command latency histograms, served by LATENCY
//! (`commands::latency`).
//!
//! - [`Histogram`]: each command's run times in buckets that double from 1,024 ns, each cut
//!   in [`SUB`] equal parts (a log-linear histogram, as an HDR one is, to within 1/16 of a
//!   value). LATENCY HISTOGRAM reports the doubling buckets, as Redis 7.0 reads its HDR
//!   histogram by powers of two: per bucket where the count grows, its bound in microseconds
//!   (1, 2, 4, 8, 16, 32, 65, 131, ...) and the calls at or under it. INFO's `latencystats`
//!   reports percentiles from the parts: the bound of the part where the percentile falls.
//!   A command's counters are allocated at its first run.
//! - [`Monitor`]: with `latency-monitor-threshold` above 0 (milliseconds), an event (a
//!   command's run, `command` or `fast-command`; an active expiry round, `expire-cycle`) that
//!   takes at least that long is recorded: per event its samples (one per second, the
//!   largest of that second) up to the last [`HISTORY_LEN`], and its all-time largest.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// Doubling buckets of a [`Histogram`]: the last holds everything from about 73 minutes up.
pub const BUCKETS: usize = 43;

/// Equal parts of each doubling bucket.
pub const SUB: usize = 16;

/// Run times by bucket and part (module doc).
#[derive(Debug, Default)]
pub struct Histogram {
    /// `BUCKETS * SUB` counts, bucket by bucket; allocated at the first run.
    counts: std::sync::OnceLock<Box<[AtomicU64]>>,
}

/// The doubling bucket of a run of `ns` nanoseconds: the least `k` with `ns <= 1024 << k`.
fn bucket(ns: u64) -> usize {
    let k = if ns <= 1024 { 0 } else { 64 - ((ns - 1) >> 10).leading_zeros() as usize };
    k.min(BUCKETS - 1)
}

/// Where bucket `k` starts (exclusive; bucket 0 holds 0 to 1,024 ns) and how wide it is.
fn span(k: usize) -> (u64, u64) {
    if k == 0 {
        (0, 1024)
    } else {
        (512 << k, 512 << k)
    }
}

/// The slot (bucket and part) of a run of `ns` nanoseconds.
fn slot(ns: u64) -> usize {
    if ns > 1024 << (BUCKETS - 1) {
        return BUCKETS * SUB - 1;
    }
    let k = bucket(ns);
    let (start, width) = span(k);
    let part = (ns.saturating_sub(start).saturating_sub(1) * SUB as u64 / width) as usize;
    k * SUB + part.min(SUB - 1)
}

/// The largest run time, in nanoseconds, that falls in `slot`.
fn slot_bound(slot: usize) -> u64 {
    let (start, width) = span(slot / SUB);
    start + width * (slot % SUB + 1) as u64 / SUB as u64
}

impl Histogram {
    /// Counts a run of `ns` nanoseconds.
    pub fn record(&self, ns: u64) {
        let counts =
            self.counts.get_or_init(|| (0..BUCKETS * SUB).map(|_| AtomicU64::new(0)).collect());
        counts[slot(ns)].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts, slot by slot (none before the first run).
    fn counts(&self) -> impl Iterator<Item = u64> + '_ {
        self.counts.get().into_iter().flat_map(|c| c.iter().map(|n| n.load(Ordering::Relaxed)))
    }

    /// Per doubling bucket where the count grows: its bound in microseconds and the runs at or
    /// under it (LATENCY HISTOGRAM's `histogram_usec`).
    pub fn cumulative(&self) -> Vec<(u64, u64)> {
        let counts: Vec<u64> = self.counts().collect();
        let mut total = 0;
        let mut out = Vec::new();
        for (k, parts) in counts.chunks(SUB).enumerate() {
            let n: u64 = parts.iter().sum();
            if n > 0 {
                total += n;
                out.push(((1024u64 << k) / 1000, total));
            }
        }
        out
    }

    /// The run time, in microseconds, at or under which `percent` of the runs fall (the
    /// bound of the part it falls in); `None` before the first run.
    pub fn percentile(&self, percent: f64) -> Option<f64> {
        let counts: Vec<u64> = self.counts().collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let wanted = ((percent / 100.0 * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        let at = counts.iter().position(|&n| {
            seen += n;
            seen >= wanted
        })?;
        Some(slot_bound(at) as f64 / 1000.0)
    }

    /// Forgets every run (CONFIG RESETSTAT).
    pub fn reset(&self) {
        if let Some(counts) = self.counts.get() {
            for c in counts {
                c.store(0, Ordering::Relaxed);
            }
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
        assert!(h.cumulative().is_empty() && h.percentile(50.0).is_none());
        for ns in [500, 900, 1500, 3000, 3000, 70_000] {
            h.record(ns);
        }
        assert_eq!(h.cumulative(), vec![(1, 2), (2, 3), (4, 5), (131, 6)]);
        h.reset();
        assert!(h.cumulative().is_empty());
    }

    #[test]
    fn each_bucket_is_cut_in_equal_parts_and_percentiles_name_a_part_s_bound() {
        // Bucket 0 (0 to 1,024 ns) in parts of 64; bucket 1 (1,024 to 2,048) in parts of 64;
        // bucket 2 (2,048 to 4,096) in parts of 128.
        assert_eq!((slot(0), slot(64), slot(65), slot(1024)), (0, 0, 1, 15));
        assert_eq!((slot(1025), slot(1088), slot(1089), slot(2048)), (16, 16, 17, 31));
        assert_eq!((slot(2049), slot(2176), slot(2177), slot(4096)), (32, 32, 33, 47));
        assert_eq!(
            (slot_bound(0), slot_bound(15), slot_bound(16), slot_bound(33)),
            (64, 1024, 1088, 2304)
        );
        for ns in [1, 1000, 1025, 5000, 123_456_789, 1 << 40, u64::MAX] {
            let s = slot(ns);
            assert!(ns <= slot_bound(s) || s == BUCKETS * SUB - 1, "{ns}");
            assert!(s == 0 || ns > slot_bound(s - 1), "{ns}: the least slot that holds it");
        }
        let h = Histogram::default();
        for us in 1..=100u64 {
            h.record(us * 1000);
        }
        // The 50th run took 50 µs: its part ends within 1/16 of a bucket above it.
        let p50 = h.percentile(50.0).unwrap();
        assert!((50.0..=50.0 * 1.07).contains(&p50), "{p50}");
        let p100 = h.percentile(100.0).unwrap();
        assert!((100.0..=100.0 * 1.07).contains(&p100), "{p100}");
        assert_eq!(h.percentile(0.0), h.percentile(1.0), "at least one run");
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
