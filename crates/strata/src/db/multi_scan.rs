//! Multi-range scans (RocksDB's `DB::NewMultiScan`): the caller names every range before
//! reading any ([`MultiScanArgs`]), and walks them in order, each a [`Scan`] of its keys.
//!
//! Contract:
//! - The ranges are in increasing key order of the family and disjoint (each starts at or
//!   after the limit of the one before); each `start < limit`; only the last may have no
//!   limit; a reverse scan needs every limit. Otherwise `InvalidArgument` naming the range's
//!   index, before anything is read. `iter_start_ts` (a history) is `NotSupported`.
//! - One consistent view serves every range: the read options' snapshot, else the DB as the
//!   scan is made. A forward range yields its keys from `start` below `limit` (the read
//!   options' lower bound still applies, their upper bound gives way to the range's); a
//!   reverse one yields them from the last below `limit` down to `start`. Ranges come in the
//!   order given, whichever the direction, as RocksDB's.
//! - When every range has a limit (and the family has no timestamps), each table plans its
//!   reads before the first one (`sstable/readahead/planned.rs`): the blocks the ranges need,
//!   closer than `io_coalesce_threshold`, come in one read of the file.
//! - An error reading a range is yielded by its scan once, and ends that scan; the next range
//!   starts over with a seek.

use std::sync::Arc;

use super::iter::{DbRawIterator, IterSource};
use super::{Cfd, Db};
use crate::column_family::AsColumnFamilyRef;
use crate::error::{Error, Result};
use crate::options::{MultiScanArgs, ReadOptions, ScanRange};
use crate::sstable::ScanPlan;

impl Db {
    /// A scan of the default family's ranges `args`, read at `ro` (see the module
    /// documentation of `db/multi_scan.rs` for what it checks and yields).
    pub fn multi_scan(&self, ro: &ReadOptions, args: &MultiScanArgs) -> Result<MultiScan> {
        self.multi_scan_over(&self.inner.default_cf, ro, args)
    }

    /// [`Db::multi_scan`] over family `cf`.
    pub fn multi_scan_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        ro: &ReadOptions,
        args: &MultiScanArgs,
    ) -> Result<MultiScan> {
        self.multi_scan_over(self.cfd(cf)?, ro, args)
    }

    fn multi_scan_over(
        &self,
        cfd: &Cfd,
        ro: &ReadOptions,
        args: &MultiScanArgs,
    ) -> Result<MultiScan> {
        if ro.iter_start_ts.is_some() {
            return Err(Error::NotSupported(
                "a multi-range scan over a history (iter_start_ts)".into(),
            ));
        }
        let source = IterSource::capture(&self.inner, cfd, ro)?;
        check_ranges(args, |a, b| source.compare_user_keys(a, b))?;
        let plan = (args.has_bounded_scan_ranges() && !source.has_timestamps()).then(|| {
            Arc::new(ScanPlan {
                ranges: args
                    .ranges()
                    .iter()
                    .map(|r| (r.start.clone(), r.limit.clone().unwrap_or_default()))
                    .collect(),
                coalesce: args.io_coalesce_threshold,
                max_prefetch: args.max_prefetch_size,
                reverse: args.reverse,
                async_io: args.use_async_io,
            })
        });
        let cursor = source.build_planned(ro, plan.as_ref());
        Ok(MultiScan {
            cursor,
            ranges: args.ranges().to_vec(),
            next: 0,
            reverse: args.reverse,
            lower: ro.iterate_lower_bound.clone(),
        })
    }
}

/// `InvalidArgument` naming the first range that breaks the module documentation's rules,
/// under the family's order `cmp`.
fn check_ranges(
    args: &MultiScanArgs,
    cmp: impl Fn(&[u8], &[u8]) -> std::cmp::Ordering,
) -> Result<()> {
    let bad = |i: usize, what: &str| Err(Error::InvalidArgument(format!("scan range {i}: {what}")));
    if args.is_empty() {
        return Err(Error::InvalidArgument("a multi-range scan needs at least one range".into()));
    }
    let ranges = args.ranges();
    for (i, r) in ranges.iter().enumerate() {
        match &r.limit {
            Some(l) if cmp(&r.start, l).is_ge() => return bad(i, "start is not below limit"),
            Some(_) => {}
            None if args.reverse => return bad(i, "a reverse scan needs a limit"),
            None if i + 1 < ranges.len() => return bad(i, "only the last range may have no limit"),
            None => {}
        }
        if let Some(prev) = i.checked_sub(1).and_then(|p| ranges[p].limit.as_deref()) {
            if cmp(&r.start, prev).is_lt() {
                return bad(i, "starts below the limit of the range before (ranges must be sorted and disjoint)");
            }
        }
    }
    Ok(())
}

/// A multi-range scan ([`Db::multi_scan`]): [`MultiScan::next_scan`] gives each range's
/// [`Scan`] in turn.
pub struct MultiScan {
    cursor: DbRawIterator,
    ranges: Vec<ScanRange>,
    /// The range `next_scan` positions at next.
    next: usize,
    reverse: bool,
    /// The read options' lower bound, which a forward range keeps.
    lower: Option<Vec<u8>>,
}

impl MultiScan {
    /// The next range's scan, positioned at its first key; `None` after the last range.
    pub fn next_scan(&mut self) -> Option<Scan<'_>> {
        let index = self.next;
        let range = self.ranges.get(index)?;
        self.next += 1;
        let c = &mut self.cursor;
        let set = if self.reverse {
            c.set_bounds(Some(range.start.clone()), range.limit.clone())
        } else {
            c.set_bounds(self.lower.clone(), range.limit.clone())
        };
        let error = set.err();
        if error.is_none() {
            match (&range.limit, self.reverse) {
                (Some(limit), true) => c.seek_for_prev(limit),
                _ => c.seek(&range.start),
            }
        }
        Some(Scan {
            cursor: c,
            reverse: self.reverse,
            index,
            range,
            started: false,
            error,
            done: false,
        })
    }

    /// How many ranges the scan has.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether it has no ranges (never: [`Db::multi_scan`] refuses that).
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

/// The keys of one range of a [`MultiScan`], in the scan's direction: through
/// [`Scan::next_entry`] without copies, or as a Rust iterator of owned pairs. An error is
/// yielded once, then the scan ends.
pub struct Scan<'a> {
    cursor: &'a mut DbRawIterator,
    reverse: bool,
    index: usize,
    range: &'a ScanRange,
    /// Whether the cursor has yielded its current entry (the next call moves first).
    started: bool,
    /// An error met before the first key (the cursor refused the range's bounds).
    error: Option<Error>,
    done: bool,
}

impl Scan<'_> {
    /// The range's index among the scan's ranges.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The range.
    pub fn range(&self) -> &ScanRange {
        self.range
    }

    /// The next key and value of the range, borrowed until the next call.
    pub fn next_entry(&mut self) -> Option<Result<(&[u8], &[u8])>> {
        if self.done {
            return None;
        }
        if let Some(e) = self.error.take() {
            self.done = true;
            return Some(Err(e));
        }
        if self.started {
            if self.reverse {
                self.cursor.prev();
            } else {
                self.cursor.next();
            }
        }
        self.started = true;
        if !self.cursor.valid() {
            self.done = true;
            return self.cursor.status().err().map(Err);
        }
        self.cursor.item().map(Ok)
    }
}

impl Iterator for Scan<'_> {
    type Item = Result<(Box<[u8]>, Box<[u8]>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_entry().map(|r| r.map(|(k, v)| (Box::from(k), Box::from(v))))
    }
}
