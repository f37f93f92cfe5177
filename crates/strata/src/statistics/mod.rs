//! RocksDB's `Statistics`: tickers (counters) and histograms (distributions) that every DB
//! opened with the same [`Statistics`] records into, read back by name, one at a time or as the
//! text dump of `Options::get_statistics`.
//!
//! Contract:
//! - A [`Statistics`] is made by `Options::enable_statistics` (or [`Statistics::new`]) and
//!   shared, through its `Arc`, by every clone of those options and every DB opened with them:
//!   their counts add up in it and outlive the DBs.
//! - Without one (the default) the engine records nothing here: a hot path pays one branch on
//!   an `Option` it already holds.
//! - [`StatsLevel`] says what is recorded: nothing (`DisableAll`), tickers only
//!   (`ExceptHistogramOrTimers`), tickers and histograms of sizes and counts but no clock reads
//!   (`ExceptTimers`), or everything this engine measures (`ExceptDetailedTimers`, the default,
//!   and above: the engine has no mutex or compression timers, so the higher levels add
//!   nothing).
//! - Timings are in microseconds, rounded up: an operation that was timed counts at least 1.
//! - Tickers and histograms the engine has no counterpart for stay 0 (the list is in
//!   `docs/rocksdb_port.md`); their names exist so that programs naming them compile.
//! - Counts are added with relaxed atomics spread over per-thread shards; a read sums the
//!   shards, so a read racing with writers sees each shard's value at some moment during it.

use std::cell::Cell;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

mod histogram;

pub use histogram::HistogramData;
use histogram::HistogramShard;

/// A name that is no ticker's or histogram's (from `str::parse`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameParseError;

impl std::fmt::Display for NameParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("unrecognized name")
    }
}

impl std::error::Error for NameParseError {}

/// Declares an enum of named variants numbered in list order, with `name()`, `iter()`,
/// `FromStr` and `Display` (the name).
macro_rules! named_list {
    ($(#[$m:meta])* $ty:ident { $($v:ident => $name:literal,)+ }) => {
        $(#[$m])*
        #[derive(Debug, Copy, Clone, PartialEq, Eq, Hash)]
        #[repr(u32)]
        pub enum $ty {
            $(
                #[doc = concat!("`", $name, "`")]
                $v,
            )+
        }

        impl $ty {
            /// Every variant, in number order.
            pub(crate) const ALL: &'static [$ty] = &[$($ty::$v,)+];

            /// RocksDB's name of this variant.
            pub const fn name(&self) -> &'static str {
                match self {
                    $($ty::$v => $name,)+
                }
            }

            /// Every variant, in number order.
            pub fn iter() -> std::slice::Iter<'static, $ty> {
                Self::ALL.iter()
            }
        }

        impl std::str::FromStr for $ty {
            type Err = $crate::statistics::NameParseError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok($ty::$v),)+
                    _ => Err($crate::statistics::NameParseError),
                }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

mod names;

pub use names::{Histogram, Ticker};

const NUM_TICKERS: usize = Ticker::ALL.len();
const NUM_HISTOGRAMS: usize = Histogram::ALL.len();
/// Shards of the ticker counters: threads spread over them, so counting from several cores
/// does not bounce one cache line between them.
const TICKER_SHARDS: usize = 16;
/// Shards of each histogram (each is about 2 KiB, allocated when first recorded into).
const HISTOGRAM_SHARDS: usize = 8;

/// What a [`Statistics`] records (the `rocksdb` crate's `StatsLevel`; the module doc says what
/// each level means here).
#[derive(Debug, Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum StatsLevel {
    /// Nothing.
    DisableAll = 0,
    /// Tickers only.
    ExceptHistogramOrTimers = 2,
    /// Tickers and histograms, without reading the clock.
    ExceptTimers,
    /// Everything but the time spent in mutexes and compression (the default).
    ExceptDetailedTimers,
    /// Everything but the time spent in mutexes.
    ExceptTimeForMutex,
    /// Everything.
    All,
}

impl StatsLevel {
    fn from_u8(v: u8) -> StatsLevel {
        match v {
            0 | 1 => StatsLevel::DisableAll,
            2 => StatsLevel::ExceptHistogramOrTimers,
            3 => StatsLevel::ExceptTimers,
            4 => StatsLevel::ExceptDetailedTimers,
            5 => StatsLevel::ExceptTimeForMutex,
            _ => StatsLevel::All,
        }
    }
}

#[repr(align(64))]
struct TickerShard([AtomicU64; NUM_TICKERS]);

thread_local! {
    static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// This thread's shard number (taken in order of first use; any `n` divides it).
#[inline]
fn thread_shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    SHARD
        .try_with(|c| {
            let i = c.get();
            if i != usize::MAX {
                return i;
            }
            let i = NEXT.fetch_add(1, Ordering::Relaxed);
            c.set(i);
            i
        })
        .unwrap_or(0)
}

/// The tickers and histograms of the DBs opened with it (module doc).
pub struct Statistics {
    level: AtomicU8,
    tickers: Box<[TickerShard]>,
    histograms: Box<[OnceLock<Box<[HistogramShard]>>]>,
}

impl Default for Statistics {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Statistics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Statistics").field("level", &self.level()).finish_non_exhaustive()
    }
}

impl Statistics {
    /// Empty statistics at level `ExceptDetailedTimers`.
    pub fn new() -> Statistics {
        Statistics {
            level: AtomicU8::new(StatsLevel::ExceptDetailedTimers as u8),
            tickers: (0..TICKER_SHARDS)
                .map(|_| TickerShard(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
            histograms: (0..NUM_HISTOGRAMS).map(|_| OnceLock::new()).collect(),
        }
    }

    /// What is recorded now.
    pub fn level(&self) -> StatsLevel {
        StatsLevel::from_u8(self.level.load(Ordering::Relaxed))
    }

    /// Changes what is recorded from now on (counts so far stay).
    pub fn set_level(&self, level: StatsLevel) {
        self.level.store(level as u8, Ordering::Relaxed);
    }

    /// The count of `ticker`.
    pub fn ticker_count(&self, ticker: Ticker) -> u64 {
        let i = ticker as usize;
        self.tickers.iter().fold(0u64, |s, sh| s.wrapping_add(sh.0[i].load(Ordering::Relaxed)))
    }

    /// The distribution `histogram` recorded (all zero when nothing was).
    pub fn histogram_data(&self, histogram: Histogram) -> HistogramData {
        match self.histograms.get(histogram as usize).and_then(OnceLock::get) {
            Some(shards) => HistogramData::merged(shards),
            None => HistogramData::default(),
        }
    }

    /// Adds `n` to `ticker` (unless the level is `DisableAll`).
    #[inline]
    pub(crate) fn tick(&self, ticker: Ticker, n: u64) {
        if self.level.load(Ordering::Relaxed) >= StatsLevel::ExceptHistogramOrTimers as u8 {
            let shard = thread_shard() % TICKER_SHARDS;
            self.tickers[shard].0[ticker as usize].fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Records `value` in `histogram` (when the level takes histograms).
    #[inline]
    pub(crate) fn record(&self, histogram: Histogram, value: u64) {
        if self.level.load(Ordering::Relaxed) >= StatsLevel::ExceptTimers as u8 {
            self.record_always(histogram, value);
        }
    }

    fn record_always(&self, histogram: Histogram, value: u64) {
        let Some(slot) = self.histograms.get(histogram as usize) else { return };
        let shards =
            slot.get_or_init(|| (0..HISTOGRAM_SHARDS).map(|_| HistogramShard::default()).collect());
        shards[thread_shard() % HISTOGRAM_SHARDS].add(value);
    }

    /// Whether operations are to be timed (the level reads the clock).
    #[inline]
    pub(crate) fn timers_enabled(&self) -> bool {
        self.level.load(Ordering::Relaxed) >= StatsLevel::ExceptDetailedTimers as u8
    }

    /// Records a duration the engine measured anyway, `micros`, in `histogram` (when the level
    /// takes timers).
    pub(crate) fn record_time(&self, histogram: Histogram, micros: u64) {
        if self.timers_enabled() {
            self.record_always(histogram, micros);
        }
    }

    /// Records `d`, a duration the engine measured while timing (`start_timer`), in
    /// whole microseconds rounded up in `histogram` (when the level takes timers).
    pub(crate) fn record_duration(&self, histogram: Histogram, d: std::time::Duration) {
        if self.timers_enabled() {
            self.record_always(histogram, whole_micros(d));
        }
    }

    /// Records the microseconds since `start` (rounded up) in `histogram`.
    pub(crate) fn record_since(&self, histogram: Histogram, start: Instant) {
        self.record_always(histogram, micros_since(start));
    }

    /// RocksDB's text dump: each ticker (`<name> COUNT : <n>`), then each histogram
    /// (`<name> P50 : .. P95 : .. P99 : .. P100 : .. COUNT : .. SUM : ..`), one a line, in
    /// list order.
    pub fn dump(&self) -> String {
        let mut s = String::with_capacity(32 * 1024);
        for t in Ticker::iter() {
            let _ = writeln!(s, "{} COUNT : {}", t.name(), self.ticker_count(*t));
        }
        for h in Histogram::iter() {
            let d = self.histogram_data(*h);
            let _ = writeln!(
                s,
                "{} P50 : {:.6} P95 : {:.6} P99 : {:.6} P100 : {:.6} COUNT : {} SUM : {}",
                h.name(),
                d.median(),
                d.p95(),
                d.p99(),
                d.max(),
                d.count(),
                d.sum()
            );
        }
        s
    }
}

/// Whole microseconds since `start`, rounded up.
fn micros_since(start: Instant) -> u64 {
    whole_micros(start.elapsed())
}

/// `d` in whole microseconds, rounded up.
fn whole_micros(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1000)).unwrap_or(u64::MAX)
}

/// The start of an operation [`stop_timer`] records: the clock read only when `stats` times
/// operations. For a timed operation that needs its owner mutably ([`StopWatch`] borrows
/// the statistics).
#[inline]
pub(crate) fn start_timer(stats: Option<&Arc<Statistics>>) -> Option<Instant> {
    match stats {
        Some(s) if s.timers_enabled() => Some(Instant::now()),
        _ => None,
    }
}

/// Records in `histogram` the operation [`start_timer`] started, if it was timed.
#[inline]
pub(crate) fn stop_timer(
    stats: Option<&Arc<Statistics>>,
    histogram: Histogram,
    start: Option<Instant>,
) {
    if let (Some(s), Some(start)) = (stats, start) {
        s.record_since(histogram, start);
    }
}

/// Times an operation into a histogram of `stats` (when given and timing), recording the
/// microseconds when dropped.
pub(crate) struct StopWatch<'a> {
    running: Option<(&'a Statistics, Histogram, Instant)>,
}

impl<'a> StopWatch<'a> {
    /// Starts timing (reads the clock only when `stats` times operations).
    #[inline]
    pub(crate) fn start(stats: Option<&'a Arc<Statistics>>, histogram: Histogram) -> Self {
        StopWatch {
            running: match stats {
                Some(s) if s.timers_enabled() => Some((&**s, histogram, Instant::now())),
                _ => None,
            },
        }
    }
}

impl Drop for StopWatch<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Some((s, h, start)) = self.running.take() {
            s.record_since(h, start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_numbers_and_parsing() {
        assert_eq!(Ticker::iter().count(), 263);
        assert_eq!(Histogram::iter().count(), 62);
        assert_eq!(Ticker::BlockCacheIndexMiss.to_string(), "rocksdb.block.cache.index.miss");
        assert_eq!(Histogram::AsyncReadBytes.name(), "rocksdb.async.read.bytes");
        for (i, t) in Ticker::iter().enumerate() {
            assert_eq!(*t as usize, i);
            assert_eq!(t.name().parse::<Ticker>(), Ok(*t));
        }
        for (i, h) in Histogram::iter().enumerate() {
            assert_eq!(*h as usize, i);
            assert_eq!(h.name().parse::<Histogram>(), Ok(*h));
        }
        assert_eq!("rocksdb.nope".parse::<Ticker>(), Err(NameParseError));
    }

    #[test]
    fn tickers_sum_over_threads_and_obey_the_level() {
        let s = Arc::new(Statistics::new());
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        s.tick(Ticker::BytesWritten, 3);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(s.ticker_count(Ticker::BytesWritten), 12_000);
        s.set_level(StatsLevel::DisableAll);
        s.tick(Ticker::BytesWritten, 1);
        s.record(Histogram::DbGet, 5);
        assert_eq!(s.ticker_count(Ticker::BytesWritten), 12_000);
        assert_eq!(s.histogram_data(Histogram::DbGet).count(), 0);
        s.set_level(StatsLevel::ExceptHistogramOrTimers);
        s.tick(Ticker::BytesWritten, 1);
        s.record(Histogram::DbGet, 5);
        assert_eq!(s.ticker_count(Ticker::BytesWritten), 12_001);
        assert_eq!(s.histogram_data(Histogram::DbGet).count(), 0);
        s.set_level(StatsLevel::ExceptTimers);
        s.record(Histogram::DbGet, 5);
        assert_eq!(s.histogram_data(Histogram::DbGet).count(), 1);
        drop(StopWatch::start(Some(&s), Histogram::DbWrite));
        assert_eq!(s.histogram_data(Histogram::DbWrite).count(), 0);
        s.set_level(StatsLevel::All);
        drop(StopWatch::start(Some(&s), Histogram::DbWrite));
        let d = s.histogram_data(Histogram::DbWrite);
        assert_eq!(d.count(), 1);
        assert!(d.max() >= 1.0, "a timed operation counts at least 1 µs");
    }

    #[test]
    fn dump_has_every_name_in_rocksdb_format() {
        let s = Statistics::new();
        s.tick(Ticker::BlockCacheMiss, 5);
        s.record(Histogram::DbGet, 10);
        let d = s.dump();
        assert_eq!(d.lines().count(), 263 + 62);
        assert!(d.contains("rocksdb.block.cache.miss COUNT : 5\n"));
        let line = d.lines().find(|l| l.starts_with("rocksdb.db.get.micros ")).unwrap();
        assert_eq!(
            line,
            "rocksdb.db.get.micros P50 : 10.000000 P95 : 10.000000 P99 : 10.000000 \
             P100 : 10.000000 COUNT : 1 SUM : 10"
        );
    }
}
