//! The `rocksdb` crate's key-order and timestamp settings: `Options::set_comparator`,
//! `set_comparator_with_ts`, `ReadOptions::set_timestamp` and `set_iter_start_ts`.
//!
//! A comparator given to `set_comparator` becomes the family's key order
//! (`crate::comparator::KeyOrder`); `set_comparator_with_ts` also gives the family
//! user-defined timestamps (`crate::comparator::UserTimestamps`, `db/timestamps.rs`). A
//! read or write naming a timestamp to a family without them fails with `InvalidArgument`, as
//! RocksDB's does, and so does one without a timestamp to a family with them.

use std::cmp::Ordering;

use super::{Options, ReadOptions};
use std::sync::Arc;

use crate::comparator::{KeyOrder, UserTimestamps};
use crate::cstr_like::CStrLike;
use crate::error::{Error, Result};

/// A key order (the `rocksdb` crate's `CompareFn`).
pub type CompareFn = dyn Fn(&[u8], &[u8]) -> Ordering;
/// An order of timestamps (the `rocksdb` crate's `CompareTsFn`).
pub type CompareTsFn = dyn Fn(&[u8], &[u8]) -> Ordering;
/// An order of keys with or without their timestamps (the `rocksdb` crate's
/// `CompareWithoutTsFn`).
pub type CompareWithoutTsFn = dyn Fn(&[u8], bool, &[u8], bool) -> Ordering;

/// A comparison function of the `rocksdb` crate's type, which does not promise to be callable
/// from other threads.
struct CrateCompareFn(Box<CompareFn>);

impl CrateCompareFn {
    fn call(&self, a: &[u8], b: &[u8]) -> Ordering {
        (self.0)(a, b)
    }
}

/// A `rocksdb` crate's key order with or without timestamps, as [`CrateCompareFn`].
struct CrateCompareWithoutTsFn(Box<CompareWithoutTsFn>);

impl CrateCompareWithoutTsFn {
    fn call(&self, a: &[u8], x: bool, b: &[u8], y: bool) -> Ordering {
        (self.0)(a, x, b, y)
    }
}

// SAFETY: as for `CrateCompareFn` below.
unsafe impl Send for CrateCompareWithoutTsFn {}
// SAFETY: as above.
unsafe impl Sync for CrateCompareWithoutTsFn {}

// SAFETY: `Options::set_comparator`'s contract (the `rocksdb` crate's and RocksDB's): the
// function is called from any thread, several at once (readers, writers, flushes and
// compactions), and the program gives only functions for which that is sound (no `Rc`,
// `RefCell` or other thread-bound state). The crate's own type cannot say so, and programs
// written for it must compile unchanged; `Options::set_key_order` takes `Send + Sync`
// functions only.
unsafe impl Send for CrateCompareFn {}
// SAFETY: as above.
unsafe impl Sync for CrateCompareFn {}

impl Options {
    /// Orders the family's keys by `compare_fn`, named `name` (the `rocksdb` crate's). The
    /// name is recorded with the family and its tables; reopening with another name is
    /// `InvalidArgument`. RocksDB's bytewise name (`leveldb.BytewiseComparator`) is bytewise
    /// order (the function is not called).
    ///
    /// The function must be a strict total order consistent with byte equality
    /// (`crate::comparator`), and safe to call from any thread, several at once: it is, as in
    /// RocksDB, called by readers, writers and background jobs. Give no function holding
    /// thread-bound state (`Rc`, `RefCell`); [`Options::set_key_order`] checks that at
    /// compile time.
    pub fn set_comparator(&mut self, name: impl CStrLike, compare_fn: Box<CompareFn>) {
        let name = name.to_name().map_or_else(|e| e.to_string(), |n| n.into_owned());
        let f = CrateCompareFn(compare_fn);
        self.comparator = KeyOrder::custom(name, Box::new(move |a: &[u8], b: &[u8]| f.call(a, b)));
    }

    /// Orders the family's keys by `order` ([`KeyOrder::custom`] makes one from a name and a
    /// `Send + Sync` function).
    pub fn set_key_order(&mut self, order: KeyOrder) {
        self.comparator = order;
    }

    /// Gives the family's keys `timestamp_size`-byte user-defined timestamps (the `rocksdb`
    /// crate's): `compare_fn` orders keys with their timestamps (the key, then the timestamp
    /// newest first), `compare_ts_fn` orders timestamps (older first), and
    /// `compare_without_ts_fn` orders keys with or without them. The order is recorded as
    /// `name` and the timestamp size (`name#ts<size>`). The functions are called as
    /// [`Options::set_comparator`]'s are (the same contract).
    pub fn set_comparator_with_ts(
        &mut self,
        name: impl CStrLike,
        timestamp_size: usize,
        compare_fn: Box<CompareFn>,
        compare_ts_fn: Box<CompareTsFn>,
        compare_without_ts_fn: Box<CompareWithoutTsFn>,
    ) {
        let name = name.to_name().map_or_else(|e| e.to_string(), |n| n.into_owned());
        let f = CrateCompareFn(compare_fn);
        self.comparator = KeyOrder::custom(
            format!("{name}#ts{timestamp_size}"),
            Box::new(move |a: &[u8], b: &[u8]| f.call(a, b)),
        );
        let ts = CrateCompareFn(compare_ts_fn);
        let without = CrateCompareWithoutTsFn(compare_without_ts_fn);
        self.timestamps = Some(Arc::new(UserTimestamps::new(
            timestamp_size,
            Box::new(move |a: &[u8], b: &[u8]| ts.call(a, b)),
            Box::new(move |a: &[u8], x: bool, b: &[u8], y: bool| without.call(a, x, b, y)),
        )));
    }

    /// `InvalidArgument` for timestamps of no bytes (called by `validate`).
    pub(crate) fn check_comparator(&self) -> Result<()> {
        match &self.timestamps {
            Some(t) if t.size() == 0 => Err(Error::InvalidArgument(format!(
                "comparator {:?}: a user-defined timestamp needs at least one byte",
                self.comparator.name()
            ))),
            _ => Ok(()),
        }
    }
}

impl ReadOptions {
    /// Reads at user-defined timestamp `ts` (a family with timestamps; module docs).
    pub fn set_timestamp<S: Into<Vec<u8>>>(&mut self, ts: S) {
        self.timestamp = Some(ts.into());
    }

    /// Makes an iterator over a family with timestamps return every version whose timestamp
    /// lies from `ts` to the read timestamp, deletions included, its `key()` being the
    /// version's internal key (RocksDB's `iter_start_ts`; `db/ts_iter.rs`). Point reads
    /// ignore it.
    pub fn set_iter_start_ts<S: Into<Vec<u8>>>(&mut self, ts: S) {
        self.iter_start_ts = Some(ts.into());
    }

    /// The timestamp a read of a family with `timestamps` (`None`: without) is at:
    /// `InvalidArgument` for a timestamp named to a family without them, a family with them
    /// read without one, or one of the wrong size.
    pub(crate) fn read_timestamp(
        &self,
        timestamps: Option<&UserTimestamps>,
    ) -> Result<Option<&[u8]>> {
        let Some(t) = timestamps else {
            if self.timestamp.is_some() || self.iter_start_ts.is_some() {
                return Err(Error::InvalidArgument(
                    "read with a timestamp: the column family has no user-defined timestamps"
                        .into(),
                ));
            }
            return Ok(None);
        };
        let Some(ts) = self.timestamp.as_deref() else {
            return Err(Error::InvalidArgument(
                "the column family has user-defined timestamps: a read needs \
                 ReadOptions::set_timestamp"
                    .into(),
            ));
        };
        if ts.len() != t.size() {
            return Err(Error::InvalidArgument(format!(
                "read timestamp of {} bytes: the column family's timestamps have {}",
                ts.len(),
                t.size()
            )));
        }
        Ok(Some(ts))
    }

    /// The oldest timestamp a history iterator over a family with `timestamps` returns
    /// (`set_iter_start_ts`; `None`: not one): `InvalidArgument` for one of the wrong size.
    pub(crate) fn history_start(&self, timestamps: &UserTimestamps) -> Result<Option<&[u8]>> {
        match self.iter_start_ts.as_deref() {
            Some(ts) if ts.len() != timestamps.size() => Err(Error::InvalidArgument(format!(
                "iter_start_ts of {} bytes: the column family's timestamps have {}",
                ts.len(),
                timestamps.size()
            ))),
            t => Ok(t),
        }
    }
}

/// `InvalidArgument` for a write naming a timestamp to a family without them.
pub(crate) fn no_timestamps(what: &str) -> Error {
    Error::InvalidArgument(format!("{what}: the column family has no user-defined timestamps"))
}

/// `InvalidArgument` for a write without a timestamp to a family with them.
pub(crate) fn needs_timestamp(what: &str, family: &str) -> Error {
    Error::InvalidArgument(format!(
        "{what}: column family {family:?} has user-defined timestamps: write with put_with_ts, \
         delete_with_ts (or their _cf forms)"
    ))
}
