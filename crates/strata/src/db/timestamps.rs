//! The `rocksdb` crate's user-defined-timestamp calls on a `Db`. No Strata family has
//! timestamps (`options/comparator.rs` refuses a timestamped comparator at open), so each
//! answers as RocksDB does on a family without them: `InvalidArgument`, nothing written.

use super::Db;
use crate::column_family::AsColumnFamilyRef;
use crate::error::Result;
use crate::options::{no_timestamps, WriteOptions};

impl Db {
    /// Writes `key` at timestamp `ts`: refused (module docs).
    pub fn put_with_ts<K, V, S>(&self, key: K, ts: S, value: V) -> Result<()>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        S: AsRef<[u8]>,
    {
        let _ = (key, ts, value);
        Err(no_timestamps("put_with_ts"))
    }

    /// [`Db::put_with_ts`] with write options.
    pub fn put_with_ts_opt<K, V, S>(&self, key: K, ts: S, value: V, _: &WriteOptions) -> Result<()>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        S: AsRef<[u8]>,
    {
        self.put_with_ts(key, ts, value)
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
        let _ = (cf, key, ts, value);
        Err(no_timestamps("put_cf_with_ts"))
    }

    /// [`Db::put_cf_with_ts`] with write options.
    pub fn put_cf_with_ts_opt<K, V, S>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
        value: V,
        _: &WriteOptions,
    ) -> Result<()>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        S: AsRef<[u8]>,
    {
        self.put_cf_with_ts(cf, key, ts, value)
    }

    /// Deletes `key` at timestamp `ts`: refused (module docs).
    pub fn delete_with_ts<K: AsRef<[u8]>, S: AsRef<[u8]>>(&self, key: K, ts: S) -> Result<()> {
        let _ = (key, ts);
        Err(no_timestamps("delete_with_ts"))
    }

    /// [`Db::delete_with_ts`] with write options.
    pub fn delete_with_ts_opt<K: AsRef<[u8]>, S: AsRef<[u8]>>(
        &self,
        key: K,
        ts: S,
        _: &WriteOptions,
    ) -> Result<()> {
        self.delete_with_ts(key, ts)
    }

    /// [`Db::delete_with_ts`] in family `cf`.
    pub fn delete_cf_with_ts<K: AsRef<[u8]>, S: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
    ) -> Result<()> {
        let _ = (cf, key, ts);
        Err(no_timestamps("delete_cf_with_ts"))
    }

    /// [`Db::delete_cf_with_ts`] with write options.
    pub fn delete_cf_with_ts_opt<K: AsRef<[u8]>, S: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
        _: &WriteOptions,
    ) -> Result<()> {
        self.delete_cf_with_ts(cf, key, ts)
    }

    /// Raises family `cf`'s lowest timestamp kept in history: refused (module docs).
    pub fn increase_full_history_ts_low<S: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        ts: S,
    ) -> Result<()> {
        let _ = (cf, ts);
        Err(no_timestamps("increase_full_history_ts_low"))
    }

    /// Family `cf`'s lowest timestamp kept in history: refused (module docs).
    pub fn get_full_history_ts_low(&self, cf: &impl AsColumnFamilyRef) -> Result<Vec<u8>> {
        let _ = cf;
        Err(no_timestamps("get_full_history_ts_low"))
    }
}
