//! `WriteBatchWithIndex`: a write batch that can be read before it is written (the `rocksdb`
//! crate's type of that name, and RocksDB's `utilities/write_batch_with_index`).
//!
//! The batch is an ordinary [`WriteBatch`] (written as one by [`Db::write_wbwi`]) plus an
//! index per column family (`index.rs`) of what its updates make of each key. Reads through
//! it see the DB as it would be after the batch is written:
//!
//! - [`WriteBatchWithIndex::get_from_batch`]: the batch alone (a key only merged in the batch
//!   needs the DB's value and fails; read it with `get_from_batch_and_db`);
//! - [`WriteBatchWithIndex::get_from_batch_and_db`]: the batch over a DB read (at the read
//!   options' snapshot);
//! - [`WriteBatchWithIndex::iterator_with_base`]: the batch over a DB cursor, in both
//!   directions, within the cursor's bounds and prefix (`base_delta.rs`);
//! - [`WriteBatchWithIndex::get_entity_from_batch`] and
//!   [`WriteBatchWithIndex::get_entity_from_batch_and_db`]: a key's wide columns, as the two
//!   above (RocksDB's `GetEntityFromBatch`, `GetEntityFromBatchAndDB`). The other reads see
//!   an entity's default column.
//!
//! Puts, deletions, single deletions, merges (through the family's merge operator) and range
//! deletions are all resolved. The `overwrite_key` flag of `new` is accepted for the
//! `rocksdb` crate's signature: reads always see every update, and the written batch holds
//! every update either way.

mod base_delta;
mod index;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;

use self::base_delta::BaseDelta;
use self::index::{CfIndex, Chain, Lookup};
use crate::column_family::{AsColumnFamilyRef, ColumnFamilyId, DEFAULT_COLUMN_FAMILY_ID};
use crate::comparator::KeyOrder;
use crate::db::{Cfd, Db, DbRawIterator};
use crate::error::{Error, Result};
use crate::merge_operator::MergeOperator;
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::types::ValueType;
use crate::wide_columns::WideColumns;
use crate::write_batch::{WriteBatch, WriteBatchIterator};

/// A write batch with an index of its updates, so that they can be read before they are
/// written. Cloning copies the batch; a cursor made by
/// [`WriteBatchWithIndex::iterator_with_base`] keeps the index as it was when it was made.
#[derive(Clone, Debug, Default)]
pub struct WriteBatchWithIndex {
    batch: WriteBatch,
    index: BTreeMap<ColumnFamilyId, Arc<CfIndex>>,
    /// The order of the `default` family's keys (the methods without a handle write there);
    /// a family named by a handle is indexed in its own order.
    default_order: KeyOrder,
}

impl WriteBatchWithIndex {
    /// An empty batch with room for `reserved_bytes`. `overwrite_key` is accepted for the
    /// `rocksdb` crate's signature and changes nothing (module docs).
    pub fn new(reserved_bytes: usize, overwrite_key: bool) -> Self {
        let _ = overwrite_key;
        WriteBatchWithIndex {
            batch: WriteBatch::with_capacity_bytes(reserved_bytes),
            index: BTreeMap::new(),
            default_order: KeyOrder::Bytewise,
        }
    }

    /// An empty batch for `db`: its `default` family's keys are indexed in that family's
    /// order (a batch made by [`WriteBatchWithIndex::new`] indexes them bytewise, as
    /// RocksDB's does with its default comparator).
    pub fn for_db(db: &Db) -> Self {
        WriteBatchWithIndex { default_order: db.default_order(), ..Self::new(0, true) }
    }

    /// The index of family `cf`, made in `order` when the batch has none yet.
    fn cf_index(&mut self, cf: ColumnFamilyId, order: impl FnOnce() -> KeyOrder) -> &mut CfIndex {
        Arc::make_mut(self.index.entry(cf).or_insert_with(|| Arc::new(CfIndex::new(order()))))
    }

    /// The index of the `default` family.
    fn default_index(&mut self) -> &mut CfIndex {
        let order = self.default_order.clone();
        self.cf_index(DEFAULT_COLUMN_FAMILY_ID, || order)
    }

    /// The index of the family `cf` names, in its order.
    fn handle_index(&mut self, cf: &impl AsColumnFamilyRef) -> &mut CfIndex {
        let id = cf.cf_id();
        let order = || match cf.cf_any().downcast_ref::<crate::db::ColumnFamily>() {
            Some(h) => h.cfd.opts.comparator.clone(),
            None if id == DEFAULT_COLUMN_FAMILY_ID => self.default_order.clone(),
            None => KeyOrder::Bytewise,
        };
        let order = order();
        self.cf_index(id, || order)
    }

    /// Records of the batch.
    pub fn len(&self) -> usize {
        self.batch.len()
    }

    /// Whether the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }

    /// Bytes of the batch's encoding.
    pub fn size_in_bytes(&self) -> usize {
        self.batch.size_in_bytes()
    }

    /// The batch's encoding (the WAL record's payload; `docs/format/write-batch.md`).
    pub fn data(&self) -> &[u8] {
        self.batch.data()
    }

    /// The batch as a plain [`WriteBatch`].
    pub fn write_batch(&self) -> &WriteBatch {
        &self.batch
    }

    /// The batch as a plain [`WriteBatch`], the index dropped.
    pub fn into_write_batch(self) -> WriteBatch {
        self.batch
    }

    /// Calls `handler` for each record, in order.
    pub fn iterate(&self, handler: &mut dyn WriteBatchIterator) {
        self.batch.iterate(handler);
    }

    /// Removes every record.
    pub fn clear(&mut self) {
        self.batch.clear();
        self.index.clear();
    }

    /// Appends the records of `batch`, in order, each in the column family its id names (as
    /// [`WriteBatch::append`]), and indexes them.
    pub fn append(&mut self, batch: &WriteBatch) {
        self.batch.append(batch);
        for r in batch.iter() {
            let default = self.default_order.clone();
            let ix = self.cf_index(r.cf, || if r.cf == 0 { default } else { KeyOrder::Bytewise });
            match r.value_type {
                ValueType::Value => ix.put(r.key, r.value),
                ValueType::Deletion | ValueType::SingleDeletion => ix.delete(r.key),
                ValueType::Merge => ix.merge(r.key, r.value),
                ValueType::RangeDeletion => ix.delete_range(r.key, r.value),
                ValueType::Entity => ix.put_entity(r.key, r.value),
                // Never decoded from a batch (`write_batch::next_entry` refuses it).
                ValueType::BlobIndex => {}
            }
        }
    }

    /// Puts the wide-column entity `columns` to `key` ([`WriteBatch::put_entity`]). Plain
    /// reads through the batch see the entity's default column, as a plain read of it in the
    /// DB does, and entity reads its columns; the batch writes the whole entity.
    pub fn put_entity<K: AsRef<[u8]>, N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        key: K,
        columns: &[(N, V)],
    ) {
        self.batch.put_entity(key.as_ref(), columns);
        index_entity(self.default_index(), key.as_ref(), columns);
    }

    /// [`WriteBatchWithIndex::put_entity`] in column family `cf`.
    pub fn put_entity_cf<K: AsRef<[u8]>, N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        columns: &[(N, V)],
    ) {
        self.batch.put_entity_cf(cf, key.as_ref(), columns);
        index_entity(self.handle_index(cf), key.as_ref(), columns);
    }

    /// Sets `key` to `value`.
    pub fn put<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, key: K, value: V) {
        self.batch.put(key.as_ref(), value.as_ref());
        self.default_index().put(key.as_ref(), value.as_ref());
    }

    /// [`WriteBatchWithIndex::put`] in column family `cf`.
    pub fn put_cf<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        value: V,
    ) {
        self.batch.put_cf(cf, key.as_ref(), value.as_ref());
        self.handle_index(cf).put(key.as_ref(), value.as_ref());
    }

    /// Deletes `key`.
    pub fn delete<K: AsRef<[u8]>>(&mut self, key: K) {
        self.batch.delete(key.as_ref());
        self.default_index().delete(key.as_ref());
    }

    /// [`WriteBatchWithIndex::delete`] in column family `cf`.
    pub fn delete_cf<K: AsRef<[u8]>>(&mut self, cf: &impl AsColumnFamilyRef, key: K) {
        self.batch.delete_cf(cf, key.as_ref());
        self.handle_index(cf).delete(key.as_ref());
    }

    /// Deletes `key`, which must have been put at most once since its last deletion
    /// (`WriteBatch::single_delete`). Reads through the batch see it deleted.
    pub fn single_delete<K: AsRef<[u8]>>(&mut self, key: K) {
        self.batch.single_delete(key.as_ref());
        self.default_index().delete(key.as_ref());
    }

    /// [`WriteBatchWithIndex::single_delete`] in column family `cf`.
    pub fn single_delete_cf<K: AsRef<[u8]>>(&mut self, cf: &impl AsColumnFamilyRef, key: K) {
        self.batch.single_delete_cf(cf, key.as_ref());
        self.handle_index(cf).delete(key.as_ref());
    }

    /// Adds a merge operand for `key`.
    pub fn merge<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, key: K, value: V) {
        self.batch.merge(key.as_ref(), value.as_ref());
        self.default_index().merge(key.as_ref(), value.as_ref());
    }

    /// [`WriteBatchWithIndex::merge`] in column family `cf`.
    pub fn merge_cf<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        value: V,
    ) {
        self.batch.merge_cf(cf, key.as_ref(), value.as_ref());
        self.handle_index(cf).merge(key.as_ref(), value.as_ref());
    }

    /// Deletes the keys in `[begin, end)`.
    pub fn delete_range<K: AsRef<[u8]>>(&mut self, begin: K, end: K) {
        self.batch.delete_range(begin.as_ref(), end.as_ref());
        self.default_index().delete_range(begin.as_ref(), end.as_ref());
    }

    /// [`WriteBatchWithIndex::delete_range`] in column family `cf`.
    pub fn delete_range_cf<K: AsRef<[u8]>>(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        begin: K,
        end: K,
    ) {
        self.batch.delete_range_cf(cf, begin.as_ref(), end.as_ref());
        self.handle_index(cf).delete_range(begin.as_ref(), end.as_ref());
    }

    /// `key`'s value from the batch alone, merges resolved with `options`' merge operator;
    /// `None` when the batch does not set it or deletes it. A key the batch only merges (its
    /// value depends on the DB's) fails with `InvalidArgument`.
    pub fn get_from_batch(
        &self,
        key: impl AsRef<[u8]>,
        options: &Options,
    ) -> Result<Option<Vec<u8>>> {
        self.read_batch(DEFAULT_COLUMN_FAMILY_ID, key.as_ref(), options)
    }

    /// [`WriteBatchWithIndex::get_from_batch`] in column family `cf`.
    pub fn get_from_batch_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        options: &Options,
    ) -> Result<Option<Vec<u8>>> {
        self.read_batch(cf.cf_id(), key.as_ref(), options)
    }

    fn read_batch(
        &self,
        cf: ColumnFamilyId,
        key: &[u8],
        options: &Options,
    ) -> Result<Option<Vec<u8>>> {
        let op = options.merge_operator.as_deref();
        self.read_batch_with(cf, key, "value", "get_from_batch_and_db", |c| {
            c.resolve(key, None, op)
        })
    }

    /// What the batch alone makes of `key` through `resolve` (its value or columns, `what`):
    /// `InvalidArgument` when only merges touched it (naming `instead`, the read with the DB).
    fn read_batch_with<T>(
        &self,
        cf: ColumnFamilyId,
        key: &[u8],
        what: &str,
        instead: &str,
        resolve: impl FnOnce(&Chain) -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        let Some(ix) = self.index.get(&cf) else { return Ok(None) };
        match ix.lookup(key) {
            Lookup::Chain(c) if c.needs_db() => Err(Error::InvalidArgument(format!(
                "key {:?} is only merged in the batch: its {what} needs the DB's ({instead})",
                String::from_utf8_lossy(key)
            ))),
            Lookup::Chain(c) => resolve(c),
            Lookup::RangeDeleted | Lookup::Untouched => Ok(None),
        }
    }

    /// `key`'s value in `db` (read with `readopts`, at its snapshot if any) with the batch's
    /// updates applied: what a read would return after the batch is written.
    pub fn get_from_batch_and_db(
        &self,
        db: &Db,
        key: impl AsRef<[u8]>,
        readopts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        let key = key.as_ref();
        self.read_batch_and_db(
            DEFAULT_COLUMN_FAMILY_ID,
            key,
            || db.get_opt(key, readopts),
            || db.family(None),
        )
    }

    /// [`WriteBatchWithIndex::get_from_batch_and_db`] in column family `cf`.
    pub fn get_from_batch_and_db_cf(
        &self,
        db: &Db,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        readopts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        let key = key.as_ref();
        self.read_batch_and_db(
            cf.cf_id(),
            key,
            || db.get_cf_opt(cf, key, readopts),
            || db.family(Some(cf)),
        )
    }

    /// `key`'s value with the batch's updates over `read` (the DB's), merges resolved with
    /// the operator of the family `family` gives.
    fn read_batch_and_db(
        &self,
        cf: ColumnFamilyId,
        key: &[u8],
        read: impl FnOnce() -> Result<Option<Vec<u8>>>,
        family: impl FnOnce() -> Result<Arc<Cfd>>,
    ) -> Result<Option<Vec<u8>>> {
        self.read_batch_and_db_with(cf, key, read, family, |c, base, op| {
            c.resolve(key, base.as_deref(), op)
        })
    }

    /// What the batch makes of `key` over `read` (the DB's value or columns) through
    /// `resolve`, given the chain, the DB's when the chain needs it, and the merge operator
    /// of the family `family` gives.
    fn read_batch_and_db_with<T>(
        &self,
        cf: ColumnFamilyId,
        key: &[u8],
        read: impl FnOnce() -> Result<Option<T>>,
        family: impl FnOnce() -> Result<Arc<Cfd>>,
        resolve: impl FnOnce(&Chain, Option<T>, Option<&dyn MergeOperator>) -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        let Some(ix) = self.index.get(&cf) else { return read() };
        let cfd = family()?;
        same_order(ix, &cfd.opts.comparator, &cfd.name)?;
        match ix.lookup(key) {
            Lookup::Untouched => read(),
            Lookup::RangeDeleted => Ok(None),
            Lookup::Chain(c) => {
                let base = if c.needs_db() { read()? } else { None };
                resolve(c, base, cfd.opts.merge_operator.as_deref())
            }
        }
    }

    /// `key`'s wide columns in the batch alone, as [`WriteBatchWithIndex::get_from_batch`] its
    /// value (RocksDB's `GetEntityFromBatch`): a put is one default column; merges apply to
    /// the default column and keep the others.
    pub fn get_entity_from_batch(
        &self,
        key: impl AsRef<[u8]>,
        options: &Options,
    ) -> Result<Option<WideColumns>> {
        self.read_entity_batch(DEFAULT_COLUMN_FAMILY_ID, key.as_ref(), options)
    }

    /// [`WriteBatchWithIndex::get_entity_from_batch`] in column family `cf`.
    pub fn get_entity_from_batch_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        options: &Options,
    ) -> Result<Option<WideColumns>> {
        self.read_entity_batch(cf.cf_id(), key.as_ref(), options)
    }

    fn read_entity_batch(
        &self,
        cf: ColumnFamilyId,
        key: &[u8],
        options: &Options,
    ) -> Result<Option<WideColumns>> {
        let op = options.merge_operator.as_deref();
        self.read_batch_with(cf, key, "columns", "get_entity_from_batch_and_db", |c| {
            c.resolve_entity(key, None, op)
        })
    }

    /// `key`'s wide columns in `db` (read with `readopts`) with the batch's updates applied
    /// (RocksDB's `GetEntityFromBatchAndDB`), as [`WriteBatchWithIndex::get_from_batch_and_db`]
    /// its value.
    pub fn get_entity_from_batch_and_db(
        &self,
        db: &Db,
        key: impl AsRef<[u8]>,
        readopts: &ReadOptions,
    ) -> Result<Option<WideColumns>> {
        let key = key.as_ref();
        self.read_entity_batch_and_db(
            DEFAULT_COLUMN_FAMILY_ID,
            key,
            || db.get_entity_opt(key, readopts),
            || db.family(None),
        )
    }

    /// [`WriteBatchWithIndex::get_entity_from_batch_and_db`] in column family `cf`.
    pub fn get_entity_from_batch_and_db_cf(
        &self,
        db: &Db,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        readopts: &ReadOptions,
    ) -> Result<Option<WideColumns>> {
        let key = key.as_ref();
        self.read_entity_batch_and_db(
            cf.cf_id(),
            key,
            || db.get_entity_cf_opt(cf, key, readopts),
            || db.family(Some(cf)),
        )
    }

    /// `key`'s columns with the batch's updates over `read` (the DB's), as
    /// `read_batch_and_db` its value.
    fn read_entity_batch_and_db(
        &self,
        cf: ColumnFamilyId,
        key: &[u8],
        read: impl FnOnce() -> Result<Option<WideColumns>>,
        family: impl FnOnce() -> Result<Arc<Cfd>>,
    ) -> Result<Option<WideColumns>> {
        self.read_batch_and_db_with(cf, key, read, family, |c, base, op| {
            c.resolve_entity(key, base, op)
        })
    }

    /// A cursor over `base` (a cursor of the default column family) with the batch's updates
    /// on top, within `base`'s bounds and prefix. Unpositioned: seek first.
    pub fn iterator_with_base(&self, base: DbRawIterator) -> DbRawIterator {
        self.with_base(DEFAULT_COLUMN_FAMILY_ID, base)
    }

    /// [`WriteBatchWithIndex::iterator_with_base`] for column family `cf` (`base` must be a
    /// cursor of `cf`).
    pub fn iterator_with_base_cf(
        &self,
        base: DbRawIterator,
        cf: &impl AsColumnFamilyRef,
    ) -> DbRawIterator {
        self.with_base(cf.cf_id(), base)
    }

    fn with_base(&self, cf: ColumnFamilyId, base: DbRawIterator) -> DbRawIterator {
        let order = base.order().clone();
        let index = match self.index.get(&cf) {
            Some(ix) => match same_order(ix, &order, &format!("{cf}")) {
                Ok(()) => ix.clone(),
                Err(e) => return DbRawIterator::new(crate::db::iter::error_iter(e)),
            },
            None => Arc::new(CfIndex::new(order)),
        };
        DbRawIterator::from_cursor(Box::new(BaseDelta::new(base, index)))
    }
}

/// `InvalidArgument` unless the batch indexed family `name`'s keys in `order`, the family's:
/// a family with a comparator written to without its handle (`put` instead of `put_cf`, on a
/// batch not made by [`WriteBatchWithIndex::for_db`]) was indexed bytewise.
fn same_order(ix: &CfIndex, order: &KeyOrder, name: &str) -> Result<()> {
    if ix.order() == order {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "the batch ordered column family {name:?}'s keys by comparator {:?}, the family keeps \
         {:?}'s order: write to it through its handle (put_cf, ...) or make the batch with \
         WriteBatchWithIndex::for_db",
        ix.order().name(),
        order.name()
    )))
}

impl Db {
    /// Writes the batch of `batch` (as [`Db::write`]).
    pub fn write_wbwi(&self, batch: &WriteBatchWithIndex) -> Result<()> {
        self.write(batch.batch.clone())
    }

    /// Writes the batch of `batch` with `opts` (as [`Db::write_opt`]).
    pub fn write_wbwi_opt(&self, batch: &WriteBatchWithIndex, opts: &WriteOptions) -> Result<()> {
        self.write_opt(batch.batch.clone(), opts)
    }
}

/// The default column's value among `columns` (empty when none is named "").
fn default_of<N: AsRef<[u8]>, V: AsRef<[u8]>>(columns: &[(N, V)]) -> &[u8] {
    columns
        .iter()
        .find(|(n, _)| n.as_ref() == crate::wide_columns::DEFAULT_COLUMN_NAME)
        .map_or(&[][..], |(_, v)| v.as_ref())
}

/// Indexes the entity `columns` of `key`. Columns naming one column twice make a batch that
/// is never written (`WriteBatch::put_entity`): reads through it see their default column.
fn index_entity<N: AsRef<[u8]>, V: AsRef<[u8]>>(ix: &mut CfIndex, key: &[u8], columns: &[(N, V)]) {
    match WideColumns::from_columns(columns) {
        Ok(c) => ix.put_entity(key, &c.encode()),
        Err(_) => ix.put(key, default_of(columns)),
    }
}
