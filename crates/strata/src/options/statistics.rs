//! The `rocksdb` crate's statistics methods of `Options`: they make, configure and read the
//! [`Statistics`] these options carry (`strata::statistics` has the contract).

use std::sync::Arc;

use super::Options;
use crate::statistics::{Histogram, HistogramData, Statistics, StatsLevel, Ticker};

impl Options {
    /// Gives these options a [`Statistics`], which every DB opened with them (or with clones
    /// of them, made after this call) records into. Options that have one keep it: the counts
    /// so far stay.
    pub fn enable_statistics(&mut self) {
        if self.statistics.is_none() {
            self.statistics = Some(Arc::new(Statistics::new()));
        }
    }

    /// What the statistics record from now on (for every DB sharing them). Without
    /// [`Self::enable_statistics`] first there is nothing to set, and nothing happens.
    pub fn set_statistics_level(&self, level: StatsLevel) {
        if let Some(s) = &self.statistics {
            s.set_level(level);
        }
    }

    /// RocksDB's text dump of the statistics: a line per ticker (`<name> COUNT : <n>`), then a
    /// line per histogram (`<name> P50 : .. P95 : .. P99 : .. P100 : .. COUNT : .. SUM : ..`).
    /// `None` without [`Self::enable_statistics`].
    pub fn get_statistics(&self) -> Option<String> {
        self.statistics.as_ref().map(|s| s.dump())
    }

    /// The count of `ticker` (0 without [`Self::enable_statistics`]).
    pub fn get_ticker_count(&self, ticker: Ticker) -> u64 {
        self.statistics.as_ref().map_or(0, |s| s.ticker_count(ticker))
    }

    /// The distribution recorded in `histogram` (empty without
    /// [`Self::enable_statistics`]).
    pub fn get_histogram_data(&self, histogram: Histogram) -> HistogramData {
        self.statistics
            .as_ref()
            .map_or_else(HistogramData::default, |s| s.histogram_data(histogram))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_statistics_and_none_reads_zero() {
        let mut o = Options::default();
        assert_eq!(o.get_statistics(), None);
        assert_eq!(o.get_ticker_count(Ticker::BytesWritten), 0);
        assert_eq!(o.get_histogram_data(Histogram::DbGet).count(), 0);
        o.set_statistics_level(StatsLevel::All);
        o.enable_statistics();
        let c = o.clone();
        c.statistics.as_ref().unwrap().tick(Ticker::BytesWritten, 7);
        o.enable_statistics();
        assert_eq!(o.get_ticker_count(Ticker::BytesWritten), 7);
        c.set_statistics_level(StatsLevel::DisableAll);
        assert_eq!(o.statistics.as_ref().unwrap().level(), StatsLevel::DisableAll);
        assert!(o.get_statistics().unwrap().contains("rocksdb.bytes.written COUNT : 7\n"));
    }
}
