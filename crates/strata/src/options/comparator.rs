//! The `rocksdb` crate's key-order and timestamp settings: `Options::set_comparator`,
//! `set_comparator_with_ts`, `ReadOptions::set_timestamp` and `set_iter_start_ts`.
//!
//! Strata orders keys bytewise only: every part of the engine (memtable, table blocks and
//! indexes, level bounds, compaction) compares bytes, and no family has user-defined
//! timestamps. A program asking for another order must not get bytewise order silently, so
//! the name it gives is kept and the open of the DB or family fails with `NotSupported`
//! naming it; a read naming a timestamp fails with `InvalidArgument`, as RocksDB's does on a
//! family without timestamps. The comparator closures are dropped: they are never called.

use std::cmp::Ordering;

use super::{Options, ReadOptions};
use crate::cstr_like::CStrLike;
use crate::error::{Error, Result};

/// The name of RocksDB's default comparator: bytewise order, Strata's.
const BYTEWISE: &str = "leveldb.BytewiseComparator";

/// A key order (the `rocksdb` crate's `CompareFn`).
pub type CompareFn = dyn Fn(&[u8], &[u8]) -> Ordering;
/// An order of timestamps (the `rocksdb` crate's `CompareTsFn`).
pub type CompareTsFn = dyn Fn(&[u8], &[u8]) -> Ordering;
/// An order of keys with or without their timestamps (the `rocksdb` crate's
/// `CompareWithoutTsFn`).
pub type CompareWithoutTsFn = dyn Fn(&[u8], bool, &[u8], bool) -> Ordering;

impl Options {
    /// Asks for keys ordered by `compare_fn`, named `name`: refused at open (module docs).
    pub fn set_comparator(&mut self, name: impl CStrLike, compare_fn: Box<CompareFn>) {
        drop(compare_fn);
        self.comparator = Some(name.to_name().map_or_else(|e| e.to_string(), |n| n.into_owned()));
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

    /// `NotSupported` when a comparator other than bytewise was asked for (called by
    /// `validate`); RocksDB's own bytewise comparator, named, is Strata's order.
    pub(crate) fn check_comparator(&self) -> Result<()> {
        match self.comparator.as_deref() {
            None | Some(BYTEWISE) if self.timestamp_size == 0 => Ok(()),
            name => Err(Error::NotSupported(format!(
                "comparator {:?}{}: Strata orders keys bytewise only and has no user-defined \
                 timestamps yet",
                name.unwrap_or("?"),
                if self.timestamp_size > 0 {
                    format!(" with {}-byte timestamps", self.timestamp_size)
                } else {
                    String::new()
                }
            ))),
        }
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
