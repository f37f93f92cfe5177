//! User-defined timestamps (`Options::set_comparator_with_ts`; the `rocksdb` crate's calls on
//! a `Db`): writes that name a timestamp, and a family's `full_history_ts_low`.
//!
//! A family with timestamps stores each key as `key | ts` in its order (the key, then the
//! timestamp newest first); reads name a timestamp and see each key's newest version at or
//! below it (`db/read.rs`, `db/ts_iter.rs`). Every write to it names a timestamp of the
//! family's size; a plain `put`, `delete` or `merge` is refused with `InvalidArgument`, and so
//! is a timestamp named to a family without them (checked at the write, `db/write`). A merge
//! at a timestamp (`merge_with_ts`) applies to the key's older versions, whatever their
//! timestamps, as a read at its timestamp sees them. Range deletions are not supported in
//! such a family.
//!
//! `full_history_ts_low`: reads at an older timestamp are refused (`InvalidArgument`, as
//! RocksDB's). It only rises, and is recorded in the MANIFEST. Strata keeps every version
//! whatever it is (RocksDB may drop the versions below it that no read can see).

use super::Db;
use crate::column_family::AsColumnFamilyRef;
use crate::error::{Error, Result};
use crate::options::{no_timestamps, WriteOptions};
use crate::types::ValueType;
use crate::version::edit::VersionEdit;
use crate::write_batch::WriteBatch;

impl Db {
    /// Writes `key` at timestamp `ts` in the `default` family.
    pub fn put_with_ts<K, V, S>(&self, key: K, ts: S, value: V) -> Result<()>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        S: AsRef<[u8]>,
    {
        self.put_with_ts_opt(key, ts, value, &WriteOptions::default())
    }

    /// [`Db::put_with_ts`] with write options.
    pub fn put_with_ts_opt<K, V, S>(
        &self,
        key: K,
        ts: S,
        value: V,
        opts: &WriteOptions,
    ) -> Result<()>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        S: AsRef<[u8]>,
    {
        let value = Some(value.as_ref());
        self.write_default_with_ts(ValueType::Value, key.as_ref(), ts.as_ref(), value, *opts)
    }

    /// [`Db::put_with_ts`] in family `cf`.
    pub fn put_cf_with_ts<K, V, S>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
        value: V,
    ) -> Result<()>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        S: AsRef<[u8]>,
    {
        self.put_cf_with_ts_opt(cf, key, ts, value, &WriteOptions::default())
    }

    /// [`Db::put_cf_with_ts`] with write options.
    pub fn put_cf_with_ts_opt<K, V, S>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
        value: V,
        opts: &WriteOptions,
    ) -> Result<()>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        S: AsRef<[u8]>,
    {
        self.cfd(cf)?;
        let mut b = WriteBatch::new();
        b.put_cf_with_ts(cf, key, ts, value);
        self.write_opt(b, opts)
    }

    /// Deletes `key` at timestamp `ts` in the `default` family.
    pub fn delete_with_ts<K: AsRef<[u8]>, S: AsRef<[u8]>>(&self, key: K, ts: S) -> Result<()> {
        self.delete_with_ts_opt(key, ts, &WriteOptions::default())
    }

    /// [`Db::delete_with_ts`] with write options.
    pub fn delete_with_ts_opt<K: AsRef<[u8]>, S: AsRef<[u8]>>(
        &self,
        key: K,
        ts: S,
        opts: &WriteOptions,
    ) -> Result<()> {
        self.write_default_with_ts(ValueType::Deletion, key.as_ref(), ts.as_ref(), None, *opts)
    }

    /// [`Db::delete_with_ts`] in family `cf`.
    pub fn delete_cf_with_ts<K: AsRef<[u8]>, S: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
    ) -> Result<()> {
        self.delete_cf_with_ts_opt(cf, key, ts, &WriteOptions::default())
    }

    /// [`Db::delete_cf_with_ts`] with write options.
    pub fn delete_cf_with_ts_opt<K: AsRef<[u8]>, S: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
        opts: &WriteOptions,
    ) -> Result<()> {
        self.cfd(cf)?;
        let mut b = WriteBatch::new();
        b.delete_cf_with_ts(cf, key, ts);
        self.write_opt(b, opts)
    }

    /// Merges operand `value` into `key` at timestamp `ts` in the `default` family (module
    /// docs; the family needs a merge operator).
    pub fn merge_with_ts<K, V, S>(&self, key: K, ts: S, value: V) -> Result<()>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        S: AsRef<[u8]>,
    {
        self.merge_with_ts_opt(key, ts, value, &WriteOptions::default())
    }

    /// [`Db::merge_with_ts`] with write options.
    pub fn merge_with_ts_opt<K, V, S>(
        &self,
        key: K,
        ts: S,
        value: V,
        opts: &WriteOptions,
    ) -> Result<()>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        S: AsRef<[u8]>,
    {
        let value = Some(value.as_ref());
        self.write_default_with_ts(ValueType::Merge, key.as_ref(), ts.as_ref(), value, *opts)
    }

    /// [`Db::merge_with_ts`] in family `cf`.
    pub fn merge_cf_with_ts<K, V, S>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
        value: V,
    ) -> Result<()>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        S: AsRef<[u8]>,
    {
        self.merge_cf_with_ts_opt(cf, key, ts, value, &WriteOptions::default())
    }

    /// [`Db::merge_cf_with_ts`] with write options.
    pub fn merge_cf_with_ts_opt<K, V, S>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
        value: V,
        opts: &WriteOptions,
    ) -> Result<()>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        S: AsRef<[u8]>,
    {
        self.cfd(cf)?;
        let mut b = WriteBatch::new();
        b.merge_cf_with_ts(cf, key, ts, value);
        self.write_opt(b, opts)
    }

    /// Raises family `cf`'s `full_history_ts_low` to `ts` (module docs): reads at an older
    /// timestamp are refused from then on. `InvalidArgument` for a family without
    /// timestamps, a timestamp of another size, or one below the current low.
    pub fn increase_full_history_ts_low<S: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        ts: S,
    ) -> Result<()> {
        let cfd = self.cfd(cf)?;
        self.raise_full_history_ts_low(cfd, ts.as_ref())
    }

    /// [`Db::increase_full_history_ts_low`] of family `cfd`.
    pub(crate) fn raise_full_history_ts_low(
        &self,
        cfd: &std::sync::Arc<super::Cfd>,
        ts: &[u8],
    ) -> Result<()> {
        self.check_writable()?;
        let Some(t) = &cfd.opts.timestamps else {
            return Err(no_timestamps("increase_full_history_ts_low"));
        };
        if ts.len() != t.size() {
            return Err(Error::InvalidArgument(format!(
                "increase_full_history_ts_low: a {}-byte timestamp, the column family's have {}",
                ts.len(),
                t.size()
            )));
        }
        let _wal = self.inner.wal.lock();
        let mut versions = self.inner.versions.lock();
        if let Some(low) = cfd.full_history_ts_low() {
            if t.compare_ts(ts, &low) == std::cmp::Ordering::Less {
                return Err(Error::InvalidArgument(format!(
                    "increase_full_history_ts_low: {ts:?} is below the current {low:?}"
                )));
            }
        }
        let mut edit = VersionEdit {
            column_family: cfd.id,
            full_history_ts_low: Some(ts.to_vec()),
            ..VersionEdit::default()
        };
        let layout = versions
            .current(cfd.id)
            .map(|v| crate::version::set::FamilyLayout {
                num_levels: v.levels.len(),
                paths: v.paths().clone(),
            })
            .ok_or_else(|| Error::ColumnFamilyDropped(cfd.name.clone()))?;
        if let Err(e) = versions.log_and_apply(&mut edit, &layout) {
            let mut st = self.inner.state.lock();
            self.inner.set_bg_error(&mut st, &e);
            return Err(e);
        }
        cfd.set_full_history_ts_low(Some(ts.to_vec()));
        Ok(())
    }

    /// Family `cf`'s `full_history_ts_low`: `InvalidArgument` for a family without
    /// timestamps; empty while none was set.
    pub fn get_full_history_ts_low(&self, cf: &impl AsColumnFamilyRef) -> Result<Vec<u8>> {
        let cfd = self.cfd(cf)?;
        if cfd.opts.timestamps.is_none() {
            return Err(no_timestamps("get_full_history_ts_low"));
        }
        Ok(cfd.full_history_ts_low().unwrap_or_default())
    }

    /// Writes `key | ts` (`t`: a put or merge of `value`, or a deletion) in the `default`
    /// family.
    fn write_default_with_ts(
        &self,
        t: ValueType,
        key: &[u8],
        ts: &[u8],
        value: Option<&[u8]>,
        opts: WriteOptions,
    ) -> Result<()> {
        let size = self.default_timestamp_size();
        let mut b = WriteBatch::new();
        b.add_with_ts(0, size, t, key, ts, value);
        self.write_opt(b, &opts)
    }

    /// Bytes of the `default` family's timestamps (0: none).
    fn default_timestamp_size(&self) -> usize {
        self.inner.default_cf.opts.timestamps.as_ref().map_or(0, |t| t.size())
    }
}
