//! The `rocksdb` crate's key-order and timestamp settings: `Options::set_comparator`,
//! `set_comparator_with_ts`, `ReadOptions::set_timestamp` and `set_iter_start_ts`.
//!
//! A comparator given to `set_comparator` becomes the family's key order
//! (`crate::comparator::KeyOrder`). No family has user-defined timestamps yet: opening one
//! with `set_comparator_with_ts` fails with `NotSupported` naming it, and a read or write
//! naming a timestamp fails with `InvalidArgument`, as RocksDB's does on a family without
//! timestamps.

use std::cmp::Ordering;

use super::{Options, ReadOptions};
use crate::comparator::KeyOrder;
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

    /// Asks for keys with `timestamp_size`-byte user-defined timestamps: refused at open.
    pub fn set_comparator_with_ts(
        &mut self,
        name: impl CStrLike,
        timestamp_size: usize,
        compare_fn: Box<CompareFn>,
        compare_ts_fn: Box<CompareTsFn>,
        compare_without_ts_fn: Box<CompareWithoutTsFn>,
    ) {
        drop((compare_ts_fn, compare_without_ts_fn));
        self.set_comparator(name, compare_fn);
        self.timestamp_size = timestamp_size;
    }

    /// `NotSupported` when user-defined timestamps were asked for (called by `validate`).
    pub(crate) fn check_comparator(&self) -> Result<()> {
        if self.timestamp_size == 0 {
            return Ok(());
        }
        Err(Error::NotSupported(format!(
            "comparator {:?} with {}-byte timestamps: Strata has no user-defined timestamps yet",
            self.comparator.name(),
            self.timestamp_size
        )))
    }
}

impl ReadOptions {
    /// Reads at user-defined timestamp `ts`: refused at the read (module docs).
    pub fn set_timestamp<S: Into<Vec<u8>>>(&mut self, ts: S) {
        self.timestamp = Some(ts.into());
    }

    /// Iterates versions from timestamp `ts` on: refused at the read (module docs).
    pub fn set_iter_start_ts<S: Into<Vec<u8>>>(&mut self, ts: S) {
        self.iter_start_ts = Some(ts.into());
    }

    /// `InvalidArgument` when the options name a timestamp: no family has timestamps.
    pub(crate) fn check_no_timestamp(&self) -> Result<()> {
        if self.timestamp.is_some() || self.iter_start_ts.is_some() {
            return Err(Error::InvalidArgument(
                "read with a timestamp: the column family has no user-defined timestamps \
                 (Strata does not support them yet)"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// `InvalidArgument` for a write naming a timestamp: no family has timestamps.
pub(crate) fn no_timestamps(what: &str) -> Error {
    Error::InvalidArgument(format!(
        "{what}: the column family has no user-defined timestamps (Strata does not support \
         them yet)"
    ))
}
