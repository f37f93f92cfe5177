//! `DbWithTtl`: a DB whose values expire a fixed time after they were written (the role of
//! RocksDB's `DBWithTTL`), built on compaction filters. Values are stored in the TTL value
//! format of `db/ttl.rs` (`docs/format/ttl_value.md`).
//!
//! The time is taken when the value is written (`put`, a batch's puts) or combined (`merge`:
//! the merged value gets the merge's time, so a merge renews the key's life).
//!
//! Contract, per column family with a TTL of `ttl` seconds (0 = never expires):
//! - A value is *expired* at time `now` when `write_time + ttl < now`.
//! - Reads (`get`, iterators) never return an expired value: they skip it as if deleted. This
//!   goes beyond RocksDB, whose reads may return expired values until a compaction drops them
//!   (and beyond `Db::open_with_ttl`, which keeps RocksDB's behaviour).
//! - Flushes and compactions remove expired values (the built-in filter); a user's compaction
//!   filter set in the family's options sees the values without their time suffix, and a value
//!   it changes keeps its write time.
//! - A family's merge operator sees operands and base values without the suffix.
//! - A value shorter than the suffix (written to the same DB without this wrapper, or damaged)
//!   is reported as `Corruption` by reads and kept as it is by compactions.
//!
//! `DbWithTtl::db` gives the underlying [`Db`] for everything else (properties, checkpoints);
//! values read through it carry the suffix.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;

use crate::column_family::{AsColumnFamilyRef, ColumnFamilyId, DEFAULT_COLUMN_FAMILY_NAME};
use crate::db::ttl::{is_expired, malformed, split, stamp, system_clock, ttl_options, with_time};
pub use crate::db::ttl::{TtlClock, TTL_SUFFIX_LEN};
use crate::db::Snapshot;
use crate::db::{ColumnFamily, ColumnFamilyDescriptor, Db, DbRawIterator, Direction, IteratorMode};
use crate::error::{Error, Result};
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::write_batch::WriteBatch;

/// A DB whose values expire; see the module documentation.
pub struct DbWithTtl {
    db: Db,
    default_cf: Arc<ColumnFamily>,
    clock: TtlClock,
    /// TTL in seconds of each open family.
    ttls: RwLock<HashMap<ColumnFamilyId, u64>>,
}

impl DbWithTtl {
    /// Opens (or creates) the DB at `path`, its `default` family's values living `ttl`
    /// (`Duration::ZERO`: forever).
    pub fn open(opts: &Options, path: impl AsRef<Path>, ttl: Duration) -> Result<DbWithTtl> {
        Self::open_cf_descriptors_with_clock(opts, path, Vec::new(), ttl, system_clock())
    }

    /// Opens the DB with the families `descriptors` name, each with its own TTL; `default`
    /// (unless named) gets `default_ttl`.
    pub fn open_cf_descriptors<I>(
        opts: &Options,
        path: impl AsRef<Path>,
        descriptors: I,
        default_ttl: Duration,
    ) -> Result<DbWithTtl>
    where
        I: IntoIterator<Item = (ColumnFamilyDescriptor, Duration)>,
    {
        let d: Vec<_> = descriptors.into_iter().collect();
        Self::open_cf_descriptors_with_clock(opts, path, d, default_ttl, system_clock())
    }

    /// [`DbWithTtl::open_cf_descriptors`] with a clock of the caller's (tests and simulations
    /// of time).
    pub fn open_cf_descriptors_with_clock(
        opts: &Options,
        path: impl AsRef<Path>,
        descriptors: Vec<(ColumnFamilyDescriptor, Duration)>,
        default_ttl: Duration,
        clock: TtlClock,
    ) -> Result<DbWithTtl> {
        let mut named_ttls = Vec::new();
        let mut descs = Vec::new();
        if !descriptors.iter().any(|(d, _)| d.name == DEFAULT_COLUMN_FAMILY_NAME) {
            named_ttls.push((DEFAULT_COLUMN_FAMILY_NAME.to_string(), default_ttl.as_secs()));
            descs.push(ColumnFamilyDescriptor::new(
                DEFAULT_COLUMN_FAMILY_NAME,
                ttl_options(opts, default_ttl.as_secs(), &clock),
            ));
        }
        for (d, ttl) in descriptors {
            named_ttls.push((d.name.clone(), ttl.as_secs()));
            descs.push(ColumnFamilyDescriptor::new(
                d.name,
                ttl_options(&d.options, ttl.as_secs(), &clock),
            ));
        }
        let db = Db::open_cf_descriptors(opts, path, descs)?;
        let mut ttls = HashMap::new();
        for (name, ttl) in named_ttls {
            let id = if name == DEFAULT_COLUMN_FAMILY_NAME {
                crate::column_family::DEFAULT_COLUMN_FAMILY_ID
            } else {
                db.cf_handle(&name)
                    .ok_or_else(|| {
                        Error::InvalidArgument(format!("column family {name} not open"))
                    })?
                    .id()
            };
            ttls.insert(id, ttl);
        }
        let default_cf = db.cf_handle(DEFAULT_COLUMN_FAMILY_NAME).ok_or_else(|| {
            Error::InvalidArgument("the default column family is not open".into())
        })?;
        Ok(DbWithTtl { db, default_cf, clock, ttls: RwLock::new(ttls) })
    }

    /// The underlying DB (values read through it carry their write-time suffix).
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// The TTL of family `cf`.
    pub fn ttl_cf(&self, cf: &impl AsColumnFamilyRef) -> Option<Duration> {
        self.ttls.read().get(&cf.cf_id()).map(|&s| Duration::from_secs(s))
    }

    /// Creates family `name` whose values live `ttl`.
    pub fn create_cf(
        &self,
        name: impl AsRef<str>,
        opts: &Options,
        ttl: Duration,
    ) -> Result<Arc<ColumnFamily>> {
        let cf = self.db.create_cf_handle(name, &ttl_options(opts, ttl.as_secs(), &self.clock))?;
        self.ttls.write().insert(cf.id(), ttl.as_secs());
        Ok(cf)
    }

    /// Drops family `name`.
    pub fn drop_cf(&self, name: impl AsRef<str>) -> Result<()> {
        let id = self.db.cf_handle(name.as_ref()).map(|c| c.id());
        self.db.drop_cf(name)?;
        if let Some(id) = id {
            self.ttls.write().remove(&id);
        }
        Ok(())
    }

    /// The handle of family `name`.
    pub fn cf_handle(&self, name: impl AsRef<str>) -> Option<Arc<ColumnFamily>> {
        self.db.cf_handle(name)
    }

    fn ttl_of(&self, cf: ColumnFamilyId) -> u64 {
        self.ttls.read().get(&cf).copied().unwrap_or(0)
    }

    /// Sets `key` to `value`, stamped with the current time.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_cf_opt(&self.default_cf, key, value, &WriteOptions::default())
    }

    /// [`DbWithTtl::put`] in family `cf` with write options.
    pub fn put_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        opts: &WriteOptions,
    ) -> Result<()> {
        let v = with_time(value.as_ref(), (self.clock)());
        self.db.put_cf_opt(cf, key, v, opts)
    }

    /// [`DbWithTtl::put`] in family `cf`.
    pub fn put_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.put_cf_opt(cf, key, value, &WriteOptions::default())
    }

    /// Adds a merge operand for `key` (the family needs a merge operator).
    pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.merge_cf(&self.default_cf, key, operand)
    }

    /// [`DbWithTtl::merge`] in family `cf`.
    pub fn merge_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) -> Result<()> {
        let v = with_time(operand.as_ref(), (self.clock)());
        self.db.merge_cf(cf, key, v)
    }

    /// Deletes `key`.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.db.delete(key)
    }

    /// Deletes `key` in family `cf`.
    pub fn delete_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) -> Result<()> {
        self.db.delete_cf(cf, key)
    }

    /// Applies `batch` atomically, its puts and merge operands stamped with the current time.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, &WriteOptions::default())
    }

    /// [`DbWithTtl::write`] with write options.
    pub fn write_opt(&self, batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
        let stamped = stamp(&batch, (self.clock)())?;
        self.db.write_opt(stamped, opts)
    }

    /// The value of `key` unless absent or expired.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_cf_opt(&self.default_cf, key, &ReadOptions::default())
    }

    /// [`DbWithTtl::get`] in family `cf`.
    pub fn get_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        self.get_cf_opt(cf, key, &ReadOptions::default())
    }

    /// [`DbWithTtl::get`] in family `cf` with read options (a snapshot, say).
    pub fn get_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        opts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        let key = key.as_ref();
        let Some(mut stored) = self.db.get_cf_opt(cf, key, opts)? else {
            return Ok(None);
        };
        let (value, time) = split(&stored).ok_or_else(|| malformed(key, stored.len()))?;
        if is_expired(time, self.ttl_of(cf.cf_id()), (self.clock)()) {
            return Ok(None);
        }
        let n = value.len();
        stored.truncate(n);
        Ok(Some(stored))
    }

    /// A point-in-time view for [`ReadOptions::set_snapshot`].
    pub fn snapshot(&self) -> Snapshot<'static> {
        self.db.snapshot()
    }

    /// Iterates the live (unexpired) pairs of `default`.
    pub fn iterator(&self, mode: IteratorMode<'_>) -> TtlIterator {
        self.iterator_cf_opt(&self.default_cf, mode, &ReadOptions::default())
    }

    /// Iterates the live pairs of family `cf` with read options.
    pub fn iterator_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        mode: IteratorMode<'_>,
        opts: &ReadOptions,
    ) -> TtlIterator {
        let mut raw = self.db.raw_iterator_cf_opt(cf, opts);
        let direction = crate::db::iter::position(&mut raw, mode);
        TtlIterator {
            raw,
            direction,
            ttl: self.ttl_of(cf.cf_id()),
            now: (self.clock)(),
            done: false,
        }
    }

    /// Flushes `default`'s memtable (expired values are dropped on the way).
    pub fn flush(&self) -> Result<()> {
        self.db.flush()
    }

    /// Compacts all of family `cf`, dropping expired values.
    pub fn compact_cf(&self, cf: &impl AsColumnFamilyRef) -> Result<()> {
        self.db.compact_range_cf(cf, None::<&[u8]>, None::<&[u8]>)
    }

    /// Compacts all of `default`, dropping expired values.
    pub fn compact(&self) -> Result<()> {
        self.db.compact_range(None::<&[u8]>, None::<&[u8]>)
    }
}

/// An iterator over unexpired `(key, value)` pairs, values without their suffix. An error is
/// yielded once, then the iteration ends.
pub struct TtlIterator {
    raw: DbRawIterator,
    direction: Direction,
    ttl: u64,
    /// Expiry is judged at the time the iterator was made, so one pass is consistent.
    now: u64,
    done: bool,
}

impl Iterator for TtlIterator {
    type Item = Result<(Box<[u8]>, Box<[u8]>)>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let Some((k, v)) = self.raw.item() else {
                self.done = true;
                return self.raw.status().err().map(Err);
            };
            let item = match split(v) {
                None => {
                    self.done = true;
                    return Some(Err(malformed(k, v.len())));
                }
                Some((_, time)) if is_expired(time, self.ttl, self.now) => None,
                Some((value, _)) => Some((Box::from(k), Box::from(value))),
            };
            match self.direction {
                Direction::Forward => self.raw.next(),
                Direction::Reverse => self.raw.prev(),
            }
            if let Some(item) = item {
                return Some(Ok(item));
            }
        }
        None
    }
}
