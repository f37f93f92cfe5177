//! The statistics history (RocksDB's `GetStatsHistory` with `stats_persist_period_sec` and
//! `stats_history_buffer_size`): a DB opened with `Options::statistics` records, every
//! `stats_persist_period_sec` seconds (none when 0), each ticker's change since the record
//! before, keyed by the time of the record in seconds since the Unix epoch. The first round
//! only takes the counts the next one measures from, as RocksDB's. The history is kept in
//! memory: the oldest records go while it takes more than `stats_history_buffer_size` bytes
//! (estimated as RocksDB estimates it: per record, its time and map, and per ticker its name
//! and count), and it is gone when the DB closes (RocksDB's `persist_stats_to_disk`, which
//! writes it into a hidden column family, is not offered).
//!
//! [`Db::get_stats_history`] reads the records whose time lies in `[start, end)`, as they
//! were when it was called.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{Db, DbInner};
use crate::error::{Error, Result};
use crate::statistics::{Statistics, Ticker};

/// The history a DB keeps (module docs).
#[derive(Default)]
pub(crate) struct StatsHistory {
    /// Every ticker's count at the last round (`None` before the first).
    last: Option<Vec<u64>>,
    /// Time (seconds) -> each ticker's change since the record before, in ticker order.
    records: BTreeMap<u64, Vec<u64>>,
}

/// Bytes one record is estimated to take (RocksDB's `EstimateInMemoryStatsHistorySize`: its
/// time and map, and each ticker's name, string and count).
fn record_bytes() -> usize {
    const STRING: usize = std::mem::size_of::<String>();
    const MAP: usize = 48;
    let names: usize = Ticker::iter().map(|t| t.name().len() + STRING + 8).sum();
    8 + MAP + names
}

impl StatsHistory {
    /// One round at `now_secs`: records the change of each count of `counts` since the last
    /// round (the first round only keeps the counts), then drops the oldest records while the
    /// history takes more than `limit` bytes.
    fn record(&mut self, now_secs: u64, counts: Vec<u64>, limit: usize) {
        if let Some(last) = &self.last {
            let delta = counts.iter().zip(last).map(|(c, l)| c.wrapping_sub(*l)).collect();
            self.records.insert(now_secs, delta);
        }
        self.last = Some(counts);
        let per_record = record_bytes();
        while !self.records.is_empty() && self.records.len() * per_record > limit {
            self.records.pop_first();
        }
    }
}

/// The records of a statistics history in a time range, oldest first (RocksDB's
/// `StatsHistoryIterator`): each a time and every ticker's change over the period before it.
pub struct StatsHistoryIterator {
    records: Vec<(u64, Vec<u64>)>,
    at: usize,
}

impl StatsHistoryIterator {
    /// Whether it stands on a record.
    pub fn valid(&self) -> bool {
        self.at < self.records.len()
    }

    /// Moves to the next record.
    pub fn next(&mut self) {
        if self.valid() {
            self.at += 1;
        }
    }

    /// The current record's time, seconds since the Unix epoch (0 when not valid).
    pub fn stats_time(&self) -> u64 {
        self.records.get(self.at).map_or(0, |r| r.0)
    }

    /// The current record: each ticker's name (RocksDB's) and change over the period before
    /// it, by name (empty when not valid).
    pub fn stats_map(&self) -> BTreeMap<String, u64> {
        let Some((_, deltas)) = self.records.get(self.at) else { return BTreeMap::new() };
        Ticker::iter().zip(deltas).map(|(t, d)| (t.name().to_string(), *d)).collect()
    }

    /// Always `Ok`: the records were read whole when the iterator was made.
    pub fn status(&self) -> Result<()> {
        Ok(())
    }
}

impl Db {
    /// The statistics history's records whose time (seconds since the Unix epoch) lies in
    /// `[start_time, end_time)` (RocksDB's `GetStatsHistory`; module docs). Empty for a DB
    /// without `Options::statistics` or with `stats_persist_period_sec` 0; `InvalidArgument`
    /// when `start_time` is past `end_time`.
    pub fn get_stats_history(
        &self,
        start_time: u64,
        end_time: u64,
    ) -> Result<StatsHistoryIterator> {
        if start_time > end_time {
            return Err(Error::InvalidArgument(format!(
                "get_stats_history: start time {start_time} is past end time {end_time}"
            )));
        }
        let h = self.inner.stats_history.lock();
        let records = h.records.range(start_time..end_time).map(|(t, d)| (*t, d.clone())).collect();
        Ok(StatsHistoryIterator { records, at: 0 })
    }
}

fn counts(stats: &Statistics) -> Vec<u64> {
    Ticker::iter().map(|t| stats.ticker_count(*t)).collect()
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Starts the thread that keeps the history (none without statistics or with a period of 0).
pub(crate) fn start(
    inner: &std::sync::Arc<DbInner>,
) -> Result<Option<std::thread::JoinHandle<()>>> {
    let secs = inner.opts.stats_persist_period_sec;
    if secs == 0 || inner.stats.user_statistics().is_none() {
        return Ok(None);
    }
    let period = Duration::from_secs(u64::from(secs));
    super::background::spawn(inner, "strata-stats-history".to_string(), move |db| {
        history_loop(db, period);
    })
    .map(Some)
}

fn history_loop(inner: &DbInner, period: Duration) {
    let mut next = Instant::now() + period;
    let mut st = inner.state.lock();
    while !st.shutting_down {
        let now = Instant::now();
        if now < next {
            // Woken early by any background event or by shutdown; the loop re-checks.
            inner.bg_cv.wait_for(&mut st, next - now);
            continue;
        }
        drop(st);
        if let Some(stats) = inner.stats.user_statistics() {
            let counts = counts(stats);
            let limit = inner.opts.stats_history_buffer_size;
            let mut h = inner.stats_history.lock();
            h.record(now_secs(), counts, limit);
            inner.info_log.log(&format!(
                "------- PERSISTING STATS ------- {} records in memory",
                h.records.len()
            ));
        }
        next = now + period;
        st = inner.state.lock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_changes_and_the_oldest_go_past_the_limit() {
        let n = Ticker::iter().count();
        let mut h = StatsHistory::default();
        h.record(10, vec![5; n], usize::MAX);
        assert!(h.records.is_empty(), "the first round only takes the counts");
        h.record(20, vec![7; n], usize::MAX);
        h.record(30, vec![12; n], usize::MAX);
        assert_eq!(h.records[&20][0], 2);
        assert_eq!(h.records[&30][0], 5);
        // Room for one record: the oldest goes.
        h.record(40, vec![12; n], record_bytes());
        assert_eq!(h.records.keys().copied().collect::<Vec<_>>(), [40]);
        assert_eq!(h.records[&40][0], 0);
        h.record(50, vec![13; n], 0);
        assert!(h.records.is_empty());
    }
}
