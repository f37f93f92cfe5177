//! Wide-column reads and writes (RocksDB's `PutEntity`, `GetEntity` and `MultiGetEntity`).
//!
//! An entity is written as one record of type `Entity` whose value is its encoding
//! (`wide_columns.rs`); the WAL, memtables, tables, flushes and compactions carry it as they
//! carry a value, and it is never moved into a blob file. `GetEntity` is the point read's
//! lookup (`db/read.rs`: the same sources, snapshots, range deletions and row cache) told
//! to keep an entity whole (`GetContext::entity`): an entity comes back with its columns, a
//! plain value as one default column, merge operands onto an entity as the entity with the
//! merged default column.
//!
//! Not supported (`NotSupported`), as in RocksDB: entities in a family with user-defined
//! timestamps and in a TTL DB. A family's TTL suffix is taken off a plain value read here.

use super::read::{search, GetContext};
use super::{Cfd, DbInner};
use crate::column_family::AsColumnFamilyRef;
use crate::error::{Error, Result};
use crate::options::{ReadOptions, WriteOptions};
use crate::statistics::{Histogram, StopWatch};
use crate::wide_columns::WideColumns;
use crate::write_batch::WriteBatch;

/// Refuses a family whose reads go through a cursor of their own (user-defined timestamps).
fn check_family(cfd: &Cfd, what: &str) -> Result<()> {
    if cfd.opts.timestamps.is_some() {
        return Err(Error::NotSupported(format!(
            "{what}: column family {:?} has user-defined timestamps",
            cfd.name
        )));
    }
    Ok(())
}

/// The columns of `key` in `cfd` (module doc); `None` for a deleted or never-written key.
pub(crate) fn get_entity(
    inner: &DbInner,
    cfd: &Cfd,
    key: &[u8],
    opts: &ReadOptions,
) -> Result<Option<WideColumns>> {
    check_family(cfd, "get_entity")?;
    opts.read_timestamp(None)?;
    let _timer = StopWatch::start(inner.stats.user_statistics(), Histogram::DbGet);
    let sv = cfd.current_super_version();
    let seq = super::snapshot_reads::read_sequence(inner, cfd, opts)?;
    entity_at(inner, cfd, &sv, key, seq, opts)
}

/// The columns of each of `keys` in `cfd`, read at one sequence number through one super
/// version, in the order given.
pub(crate) fn multi_get_entity<K: AsRef<[u8]>>(
    inner: &DbInner,
    cfd: &Cfd,
    keys: &[K],
    opts: &ReadOptions,
) -> Vec<Result<Option<WideColumns>>> {
    let start = check_family(cfd, "multi_get_entity").and_then(|()| {
        opts.read_timestamp(None)?;
        super::snapshot_reads::read_sequence(inner, cfd, opts)
    });
    let seq = match start {
        Ok(seq) => seq,
        Err(e) => return keys.iter().map(|_| Err(e.duplicate())).collect(),
    };
    let _timer = StopWatch::start(inner.stats.user_statistics(), Histogram::DbMultiget);
    let sv = cfd.current_super_version();
    keys.iter().map(|k| entity_at(inner, cfd, &sv, k.as_ref(), seq, opts)).collect()
}

fn entity_at(
    inner: &DbInner,
    cfd: &Cfd,
    sv: &super::SuperVersion,
    key: &[u8],
    seq: crate::types::SeqNo,
    opts: &ReadOptions,
) -> Result<Option<WideColumns>> {
    let mut ctx = GetContext::new(key, cfd.opts.merge_operator.as_deref());
    let blobs = crate::blob::BlobReads { source: &*inner.blobs, fill: opts.fill_cache };
    ctx.blobs = Some(&blobs);
    ctx.entity = true;
    search(inner, sv, key, seq, opts, &mut ctx)?;
    let is_entity = ctx.found_entity;
    let Some(mut v) = ctx.finish_copied()? else { return Ok(None) };
    if is_entity {
        return WideColumns::decode(&v).map(Some).map_err(|e| {
            let k = String::from_utf8_lossy(key);
            Error::corruption("", 0, format!("get_entity of key {k:?}: {e}"))
        });
    }
    if cfd.value_suffix > 0 {
        let n = super::ttl::user_len(key, v.len())?;
        v.truncate(n);
    }
    Ok(Some(WideColumns::from_plain_value(v)))
}

impl super::Db {
    /// Puts the wide-column entity `columns` (`(name, value)` pairs in any order; the column
    /// named "" is the default column) to `key` (RocksDB's `PutEntity`). A plain `get` of the
    /// key reads the default column (empty when there is none); [`Self::get_entity`] reads
    /// every column. A name given twice is `InvalidArgument`.
    pub fn put_entity<K: AsRef<[u8]>, N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        key: K,
        columns: &[(N, V)],
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put_entity(key, columns);
        self.write_opt(b, &WriteOptions::default())
    }

    /// [`Self::put_entity`] in column family `cf`, with write options.
    pub fn put_entity_cf_opt<K: AsRef<[u8]>, N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        columns: &[(N, V)],
        opts: &WriteOptions,
    ) -> Result<()> {
        self.cfd(cf)?;
        let mut b = WriteBatch::new();
        b.put_entity_cf(cf, key, columns);
        self.write_opt(b, opts)
    }

    /// The columns of `key` (RocksDB's `GetEntity`), in ascending order of their names: an
    /// entity's, or a plain value as one default column; `None` when the key is deleted or
    /// was never written.
    pub fn get_entity(&self, key: impl AsRef<[u8]>) -> Result<Option<WideColumns>> {
        self.get_entity_opt(key, &ReadOptions::default())
    }

    /// [`Self::get_entity`] with read options.
    pub fn get_entity_opt(
        &self,
        key: impl AsRef<[u8]>,
        opts: &ReadOptions,
    ) -> Result<Option<WideColumns>> {
        get_entity(&self.inner, &self.inner.default_cf, key.as_ref(), opts)
    }

    /// [`Self::get_entity`] in column family `cf`, with read options.
    pub fn get_entity_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        opts: &ReadOptions,
    ) -> Result<Option<WideColumns>> {
        get_entity(&self.inner, self.cfd(cf)?, key.as_ref(), opts)
    }

    /// [`Self::get_entity`] of each of `keys` at one consistent point (RocksDB's
    /// `MultiGetEntity`), in the order given.
    pub fn multi_get_entity<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Vec<Result<Option<WideColumns>>> {
        self.multi_get_entity_opt(keys, &ReadOptions::default())
    }

    /// [`Self::multi_get_entity`] with read options.
    pub fn multi_get_entity_opt<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
        opts: &ReadOptions,
    ) -> Vec<Result<Option<WideColumns>>> {
        let keys: Vec<K> = keys.into_iter().collect();
        multi_get_entity(&self.inner, &self.inner.default_cf, &keys, opts)
    }

    /// [`Self::multi_get_entity`] in column family `cf`, with read options.
    pub fn multi_get_entity_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        keys: impl IntoIterator<Item = K>,
        opts: &ReadOptions,
    ) -> Vec<Result<Option<WideColumns>>> {
        let keys: Vec<K> = keys.into_iter().collect();
        match self.cfd(cf) {
            Ok(cfd) => multi_get_entity(&self.inner, cfd, &keys, opts),
            Err(e) => keys.iter().map(|_| Err(e.duplicate())).collect(),
        }
    }
}
