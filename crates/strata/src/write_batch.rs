//! `WriteBatch`: a group of updates applied atomically, and its wire format, which is also
//! exactly the payload of one write-ahead log record.
//!
//! ```text
//! batch   := header record*
//! header  := sequence: fixed64 | count: fixed32                    HEADER_SIZE = 12 bytes
//! record  := tag: u8 | body
//!   tag 1 Put           body := varint key_len | key | varint value_len | value
//!   tag 0 Delete        body := varint key_len | key
//!   tag 2 Merge         body := varint key_len | key | varint operand_len | operand
//!   tag 3 SingleDelete  body := varint key_len | key
//!   tag 4 DeleteRange   body := varint begin_len | begin | varint end_len | end (exclusive)
//!   tag 5 BlobIndex     body := varint key_len | key | varint index_len | blob index
//!   tag | 0x80          varint32 column_family | body of the tag's kind
//!   tag 0x20 LogData    body := varint blob_len | blob          (never with 0x80)
//! ```
//!
//! Integers are little-endian; lengths are LEB128 varints of at most 5 bytes (values up to
//! `u32::MAX`). Tag values equal [`ValueType`]'s. on-disk: never change. `sequence` is the
//! sequence number of the first record; record `i` gets `sequence + i`. `count` is the number
//! of records; a `LogData` entry (`put_log_data`) is not one: not counted, no sequence
//! number, never applied. An unknown tag is corruption, so an older reader given a batch with
//! a record kind added later refuses it instead of misapplying it.
//!
//! A `BlobIndex` record is written by the DB only, into its own WAL: the put of a value it
//! wrote to a blob file as the write was committed (`db/blob_log.rs`; the index is
//! `blob::index`'s). A batch given to the DB or decoded from outside bytes never holds one
//! ([`WriteBatch::from_vec`] refuses it): an index reads whatever the blob file holds there.
//!
//! A record of a column family other than `default` (id 0) has bit 7 set in its tag and the
//! family's id after it; a record without the bit belongs to `default`, so batches of a DB
//! with one family are encoded exactly as before families existed, and an older reader
//! refuses a batch naming another family (an unknown tag).
//!
//! Limits: a key, value, operand or range bound is at most `u32::MAX` bytes (4 GiB - 1) and a
//! batch holds at most `u32::MAX` records. The builder methods cannot fail (they mirror the
//! `rocksdb` crate), so an oversized batch is flagged instead and the DB rejects it with
//! `InvalidArgument` before writing (`WriteBatch::validate`).

use std::fmt;
#[cfg(test)]
use std::path::Path;

use crate::column_family::{AsColumnFamilyRef, ColumnFamilyId};
use crate::error::{Error, Result};
use crate::types::{SeqNo, ValueType};
use crate::util::coding::{decode_fixed32, decode_fixed64, put_varint32, put_varint64, Reader};
use crate::wide_columns::{self, WideColumns};

/// Receives the records of a batch from [`WriteBatch::iterate`] (the `rocksdb` crate's
/// `WriteBatchIterator`); merges and range deletions are ignored unless overridden.
pub trait WriteBatchIterator {
    /// A put of `key` to `value`.
    fn put(&mut self, key: &[u8], value: &[u8]);
    /// A deletion of `key` (single deletions included).
    fn delete(&mut self, key: &[u8]);
    /// A merge operand for `key`.
    fn merge(&mut self, _key: &[u8], _operand: &[u8]) {}
    /// A deletion of `[begin, end)`.
    fn delete_range(&mut self, _begin: &[u8], _end: &[u8]) {}
    /// A log data blob (`WriteBatch::put_log_data`).
    fn log_data(&mut self, _blob: &[u8]) {}
    /// A put of the wide-column entity `columns` to `key` (`WriteBatch::put_entity`). Unless
    /// overridden, a put of the entity's default column (empty when it has none): what a
    /// plain read of the key returns.
    fn put_entity(&mut self, key: &[u8], columns: &WideColumns) {
        self.put(key, columns.default_value().unwrap_or_default());
    }
}

/// Receives the records of a batch with their column family id, from
/// [`WriteBatch::iterate_cf`] (the `rocksdb` crate's `WriteBatchIteratorCf`); range deletions
/// are ignored unless overridden.
pub trait WriteBatchIteratorCf {
    /// A put of `key` to `value` in family `cf_id`.
    fn put_cf(&mut self, cf_id: u32, key: &[u8], value: &[u8]);
    /// A deletion of `key` in family `cf_id` (single deletions included).
    fn delete_cf(&mut self, cf_id: u32, key: &[u8]);
    /// A merge operand for `key` in family `cf_id`.
    fn merge_cf(&mut self, cf_id: u32, key: &[u8], value: &[u8]);
    /// A deletion of `[begin, end)` in family `cf_id`.
    fn delete_range_cf(&mut self, _cf_id: u32, _begin: &[u8], _end: &[u8]) {}
    /// A put of the wide-column entity `columns` to `key` in family `cf_id`. Unless
    /// overridden, a put of the entity's default column (empty when it has none).
    fn put_entity_cf(&mut self, cf_id: u32, key: &[u8], columns: &WideColumns) {
        self.put_cf(cf_id, key, columns.default_value().unwrap_or_default());
    }
}

/// The `rocksdb` crate's batch type, whose parameter tells a transaction DB's batch from a
/// plain one: in Strata both are a [`WriteBatch`].
pub type WriteBatchWithTransaction<const TRANSACTION: bool> = WriteBatch;

/// Bytes of the batch header: sequence (8) + count (4).
pub(crate) const HEADER_SIZE: usize = 12;

/// Largest key, value, merge operand or range bound a batch accepts.
pub const MAX_KEY_OR_VALUE_LEN: usize = u32::MAX as usize;

const COUNT_OFFSET: usize = 8;

/// An ordered group of updates, applied atomically by `Db::write`.
///
/// Keys, values and merge operands are limited to 4 GiB - 1 bytes each, and a batch to
/// `u32::MAX` records; writing a batch over either limit fails with `InvalidArgument`.
///
/// Two batches are equal when they hold the same encoding (and the same damage, if any): how
/// the records came in (built, decoded, with timestamps) does not count.
#[derive(Clone)]
pub struct WriteBatch {
    /// A well-formed encoding (built by the methods below or validated by `try_from_data`),
    /// unless `damage` is set.
    rep: Vec<u8>,
    /// For a batch `from_data` was given a malformed buffer: where it is damaged and why.
    /// Such a batch is never written (`validate` fails with `Corruption`) and iterates up
    /// to the damage.
    damage: Option<(usize, String)>,
    /// Set when a key or value was longer than `MAX_KEY_OR_VALUE_LEN` or the record count
    /// overflowed; such a batch must not be written.
    oversized: bool,
    /// Set when the batch holds a range deletion: the DB checks each one's bounds in its
    /// family's key order before writing ([`WriteBatch::range_deletions`]).
    range_deletions: bool,
    /// The families written through a `*_with_ts` method (their keys end with a user-defined
    /// timestamp), ascending, without repeats.
    ts_families: Vec<ColumnFamilyId>,
    /// Set when a record of `default` was added without a timestamp (or decoded from bytes):
    /// a `default` family with timestamps refuses the batch.
    plain_default: bool,
    /// Set when records were decoded from bytes (`from_data`, a replica's batch): whether
    /// their keys carry timestamps is unknown, so a family with timestamps refuses them.
    decoded: bool,
    /// The first misuse of timestamps while building (a timestamp for a family without them,
    /// of the wrong size, or none for a family with them): the batch must not be written.
    ts_error: Option<String>,
    /// Set when the batch holds a merge: a DB without a merge operator refuses it.
    has_merge: bool,
    /// The first entity given with a column name twice (`put_entity`): the batch must not
    /// be written.
    bad_entity: Option<String>,
    /// Set when a record names a column family other than `default`.
    has_cf: bool,
    /// Set when the batch holds `BlobIndex` records (only a batch the DB wrote to its WAL:
    /// [`WriteBatch::from_wal`], or one it converted as it committed).
    has_blob_refs: bool,
}

impl PartialEq for WriteBatch {
    fn eq(&self, other: &WriteBatch) -> bool {
        self.rep == other.rep && self.damage == other.damage
    }
}

impl Eq for WriteBatch {}

/// The tag of a log data blob (`put_log_data`): outside the value types (which are below
/// `CF_TAG_BIT`), and never combined with it.
const LOG_DATA_TAG: u8 = 0x20;

/// The tag bit saying a column family id follows the tag.
const CF_TAG_BIT: u8 = 0x80;

/// One decoded record, borrowing from the batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BatchRecord<'a> {
    /// The record's column family (0: `default`).
    pub cf: ColumnFamilyId,
    pub value_type: ValueType,
    /// The key (for `RangeDeletion`, the inclusive range start).
    pub key: &'a [u8],
    /// The value or merge operand; the exclusive range end for `RangeDeletion`; empty for
    /// deletions.
    pub value: &'a [u8],
}

/// Bytes an empty batch makes room for: a few small records (a server command's metadata,
/// member and index records) fit without the buffer growing record by record.
const DEFAULT_ROOM: usize = 256;

impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch::with_capacity_bytes(DEFAULT_ROOM - HEADER_SIZE)
    }
}

impl fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteBatch")
            .field("sequence", &self.sequence().0)
            .field("count", &self.count())
            .field("size_in_bytes", &self.rep.len())
            .finish_non_exhaustive()
    }
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// The batch `rep` encodes, with no flag set (`rep` starts with a header).
    fn from_rep(rep: Vec<u8>) -> WriteBatch {
        WriteBatch {
            rep,
            damage: None,
            oversized: false,
            range_deletions: false,
            ts_families: Vec::new(),
            plain_default: false,
            decoded: false,
            ts_error: None,
            has_merge: false,
            bad_entity: None,
            has_cf: false,
            has_blob_refs: false,
        }
    }

    /// An empty batch with room for `bytes` bytes of encoded records.
    pub fn with_capacity_bytes(bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(HEADER_SIZE + bytes);
        rep.resize(HEADER_SIZE, 0);
        WriteBatch::from_rep(rep)
    }

    /// An empty batch with room for exactly one record of `key` and `value` (either in any
    /// family): the single-record writes (`Db::put` and the like) allocate once, never grow.
    pub(crate) fn for_record(key: &[u8], value: &[u8]) -> Self {
        Self::with_capacity_bytes(max_record_bytes(key.len(), value.len()))
    }

    /// Sets `key` to `value`.
    pub fn put<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, key: K, value: V) {
        self.plain_default = true;
        self.add(0, ValueType::Value, key.as_ref(), Some(value.as_ref()));
    }

    /// Deletes `key`.
    pub fn delete<K: AsRef<[u8]>>(&mut self, key: K) {
        self.plain_default = true;
        self.add(0, ValueType::Deletion, key.as_ref(), None);
    }

    /// Adds a merge operand for `key`, combined with older values by the merge operator.
    pub fn merge<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, key: K, value: V) {
        self.has_merge = true;
        self.plain_default = true;
        self.add(0, ValueType::Merge, key.as_ref(), Some(value.as_ref()));
    }

    /// Deletes the one earlier `put` of `key`; see RocksDB's SingleDelete for the contract
    /// (the key was put at most once since its last deletion, and never merged).
    pub fn single_delete<K: AsRef<[u8]>>(&mut self, key: K) {
        self.plain_default = true;
        self.add(0, ValueType::SingleDeletion, key.as_ref(), None);
    }

    /// Deletes every key in `[begin, end)`.
    pub fn delete_range<K: AsRef<[u8]>>(&mut self, begin: K, end: K) {
        self.range_deletions = true;
        self.plain_default = true;
        self.add(0, ValueType::RangeDeletion, begin.as_ref(), Some(end.as_ref()));
    }

    /// [`WriteBatch::put`] in column family `cf`.
    pub fn put_cf<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        value: V,
    ) {
        self.plain_in(cf, "put_cf");
        self.add(cf.cf_id(), ValueType::Value, key.as_ref(), Some(value.as_ref()));
    }

    /// Puts the wide-column entity `columns` (`(name, value)` pairs in any order; the column
    /// named "" is the default column) to `key` (RocksDB's `PutEntity`). A name given twice
    /// makes the batch fail to write with `InvalidArgument`.
    pub fn put_entity<K: AsRef<[u8]>, N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        key: K,
        columns: &[(N, V)],
    ) {
        self.plain_default = true;
        self.add_entity(0, key.as_ref(), columns);
    }

    /// Puts the wide-column entity `columns` to `key` in family `cf` ([`Self::put_entity`]).
    /// A family with user-defined timestamps refuses the batch.
    pub fn put_entity_cf<K: AsRef<[u8]>, N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        columns: &[(N, V)],
    ) {
        if cf.timestamp_size() > 0 && self.ts_error.is_none() {
            self.ts_error = Some(
                "put_entity_cf: wide-column entities are not supported in a column family \
                 with user-defined timestamps"
                    .into(),
            );
        }
        if cf.cf_id() == 0 {
            self.plain_default = true;
        }
        self.add_entity(cf.cf_id(), key.as_ref(), columns);
    }

    fn add_entity<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        cf: ColumnFamilyId,
        key: &[u8],
        columns: &[(N, V)],
    ) {
        match WideColumns::from_columns(columns) {
            Ok(c) => self.add(cf, ValueType::Entity, key, Some(&c.encode())),
            Err(e) if self.bad_entity.is_none() => self.bad_entity = Some(e.to_string()),
            Err(_) => {}
        }
    }

    /// [`WriteBatch::delete`] in column family `cf`.
    pub fn delete_cf<K: AsRef<[u8]>>(&mut self, cf: &impl AsColumnFamilyRef, key: K) {
        self.plain_in(cf, "delete_cf");
        self.add(cf.cf_id(), ValueType::Deletion, key.as_ref(), None);
    }

    /// [`WriteBatch::merge`] in column family `cf`.
    pub fn merge_cf<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        value: V,
    ) {
        self.has_merge = true;
        self.plain_in(cf, "merge_cf");
        self.add(cf.cf_id(), ValueType::Merge, key.as_ref(), Some(value.as_ref()));
    }

    /// [`WriteBatch::single_delete`] in column family `cf`.
    pub fn single_delete_cf<K: AsRef<[u8]>>(&mut self, cf: &impl AsColumnFamilyRef, key: K) {
        self.plain_in(cf, "single_delete_cf");
        self.add(cf.cf_id(), ValueType::SingleDeletion, key.as_ref(), None);
    }

    /// [`WriteBatch::delete_range`] in column family `cf`.
    pub fn delete_range_cf<K: AsRef<[u8]>>(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        begin: K,
        end: K,
    ) {
        self.range_deletions = true;
        self.plain_in(cf, "delete_range_cf");
        self.add(cf.cf_id(), ValueType::RangeDeletion, begin.as_ref(), Some(end.as_ref()));
    }

    /// Appends the records of `other`, in order, each in the column family `map` gives for
    /// its family's id in `other`: how a batch built against one DB's families is applied to
    /// another DB that has the same families under other ids (a replica). When `map` knows
    /// a record's family not, nothing is appended and the error names the id.
    pub fn append_remapped(
        &mut self,
        other: &WriteBatch,
        map: impl Fn(ColumnFamilyId) -> Option<ColumnFamilyId>,
    ) -> Result<()> {
        other.validate()?;
        if let Some(r) = other.iter().find(|r| map(r.cf).is_none()) {
            return Err(Error::InvalidArgument(format!(
                "write batch: a record names column family id {}, which has no counterpart here",
                r.cf
            )));
        }
        for r in other.iter() {
            let value = match r.value_type {
                ValueType::Deletion | ValueType::SingleDeletion => None,
                _ => Some(r.value),
            };
            self.push_record(map(r.cf).unwrap_or(r.cf), r.value_type, r.key, value);
        }
        self.oversized |= other.oversized;
        // Copied records: whether their keys carry timestamps is unknown here.
        self.decoded = true;
        Ok(())
    }

    /// Every record's key in order, with a range deletion's end (`(begin, Some(end))`),
    /// borrowed from the batch: nothing is copied, unlike [`WriteBatch::iterate`].
    pub fn keys(&self) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> + '_ {
        self.iter().map(|r| {
            let end = (r.value_type == ValueType::RangeDeletion).then_some(r.value);
            (r.key, end)
        })
    }

    /// Calls `handler` for every record in order (rust-rocksdb's `WriteBatch::iterate`; records
    /// of every family, without their family, as there).
    pub fn iterate(&self, handler: &mut dyn WriteBatchIterator) {
        let mut it = self.iter();
        while let Some(e) = it.next_entry() {
            let r = match e {
                Entry::Record(r) => r,
                Entry::LogData(blob) => {
                    handler.log_data(blob);
                    continue;
                }
            };
            match r.value_type {
                ValueType::Value => handler.put(r.key, r.value),
                ValueType::Deletion | ValueType::SingleDeletion => handler.delete(r.key),
                ValueType::Merge => handler.merge(r.key, r.value),
                ValueType::RangeDeletion => handler.delete_range(r.key, r.value),
                ValueType::Entity => handler.put_entity(r.key, &entity_of(&r)),
                // Only in the DB's own WAL, resolved before a batch is handed out
                // (`Db::get_updates_since`).
                ValueType::BlobIndex => {}
            }
        }
    }

    /// Puts `key` at user-defined timestamp `ts` in family `cf`, which has timestamps of
    /// `ts`'s size (the stored key is `key | ts`). A family without timestamps, or a
    /// timestamp of another size, makes every write refuse the batch with `InvalidArgument`
    /// (the builder cannot fail, as the `rocksdb` crate's).
    pub fn put_cf_with_ts<K, V, S>(&mut self, cf: &impl AsColumnFamilyRef, key: K, ts: S, value: V)
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        S: AsRef<[u8]>,
    {
        if self.check_ts(cf.cf_id(), cf.timestamp_size(), ts.as_ref(), "put_cf_with_ts") {
            let k = [key.as_ref(), ts.as_ref()].concat();
            self.add(cf.cf_id(), ValueType::Value, &k, Some(value.as_ref()));
        }
    }

    /// Deletes `key` at user-defined timestamp `ts` in family `cf`, as
    /// [`WriteBatch::put_cf_with_ts`].
    pub fn delete_cf_with_ts<K: AsRef<[u8]>, S: AsRef<[u8]>>(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
    ) {
        if self.check_ts(cf.cf_id(), cf.timestamp_size(), ts.as_ref(), "delete_cf_with_ts") {
            let k = [key.as_ref(), ts.as_ref()].concat();
            self.add(cf.cf_id(), ValueType::Deletion, &k, None);
        }
    }

    /// Merges operand `value` into `key` at user-defined timestamp `ts` in family `cf`, as
    /// [`WriteBatch::put_cf_with_ts`]: a read at a timestamp at or above `ts` applies it to
    /// the key's older versions (`db/ts_iter.rs`).
    pub fn merge_cf_with_ts<K, V, S>(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
        value: V,
    ) where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        S: AsRef<[u8]>,
    {
        if self.check_ts(cf.cf_id(), cf.timestamp_size(), ts.as_ref(), "merge_cf_with_ts") {
            self.has_merge = true;
            let k = [key.as_ref(), ts.as_ref()].concat();
            self.add(cf.cf_id(), ValueType::Merge, &k, Some(value.as_ref()));
        }
    }

    /// Records `key | ts` (`t`: a put or merge of `value`, or a deletion) in family `cf`,
    /// whose timestamps have `size` bytes (`Db::put_with_ts` and the like).
    pub(crate) fn add_with_ts(
        &mut self,
        cf: ColumnFamilyId,
        size: usize,
        t: ValueType,
        key: &[u8],
        ts: &[u8],
        value: Option<&[u8]>,
    ) {
        let what = match t {
            ValueType::Merge => "merge_with_ts",
            ValueType::Deletion => "delete_with_ts",
            _ => "put_with_ts",
        };
        if self.check_ts(cf, size, ts, what) {
            self.has_merge |= t == ValueType::Merge;
            let k = [key, ts].concat();
            self.add(cf, t, &k, value);
        }
    }

    /// Whether `ts` fits family `cf`'s timestamps of `size` bytes; else the batch is marked
    /// bad (`what` names the call).
    fn check_ts(&mut self, cf: ColumnFamilyId, size: usize, ts: &[u8], what: &str) -> bool {
        let error = if size == 0 {
            Some(format!("{what}: the column family has no user-defined timestamps"))
        } else if ts.len() != size {
            Some(format!(
                "{what}: a {}-byte timestamp, the column family's have {size} bytes",
                ts.len()
            ))
        } else {
            None
        };
        match error {
            Some(e) => {
                self.ts_error.get_or_insert(e);
                false
            }
            None => {
                self.note_ts_family(cf);
                true
            }
        }
    }

    fn note_ts_family(&mut self, cf: ColumnFamilyId) {
        if let Err(i) = self.ts_families.binary_search(&cf) {
            self.ts_families.insert(i, cf);
        }
    }

    /// A write without a timestamp through `cf`'s handle: a family with timestamps marks the
    /// batch bad.
    #[inline]
    fn plain_in(&mut self, cf: &impl AsColumnFamilyRef, what: &str) {
        if cf.cf_id() == 0 {
            self.plain_default = true;
        }
        if cf.timestamp_size() > 0 && self.ts_error.is_none() {
            self.ts_error = Some(format!(
                "{what}: the column family has user-defined timestamps: write with put_cf_with_ts \
                 or delete_cf_with_ts"
            ));
        }
    }

    /// The families written with timestamps, ascending.
    pub(crate) fn ts_families(&self) -> &[ColumnFamilyId] {
        &self.ts_families
    }

    /// Whether a `default` record was added without a timestamp (or decoded).
    pub(crate) fn writes_default_plain(&self) -> bool {
        self.plain_default
    }

    /// Whether records were decoded from bytes (their timestamps unknown).
    pub(crate) fn is_decoded(&self) -> bool {
        self.decoded
    }

    /// Adds `blob` to the batch as log data: written to the WAL with the batch (and seen by
    /// [`WriteBatch::iterate`] and `Db::get_updates_since`), but not applied, not counted in
    /// [`WriteBatch::len`] and given no sequence number (the `rocksdb` crate's
    /// `put_log_data`).
    pub fn put_log_data<V: AsRef<[u8]>>(&mut self, blob: V) {
        let blob = blob.as_ref();
        self.rep.reserve(1 + 10 + blob.len());
        self.rep.push(LOG_DATA_TAG);
        self.put_slice(blob);
    }

    /// Calls `handler` for every record in order, with its column family id (the
    /// `rocksdb` crate's `WriteBatch::iterate_cf`).
    pub fn iterate_cf(&self, handler: &mut dyn WriteBatchIteratorCf) {
        for r in self.iter() {
            let cf = r.cf;
            match r.value_type {
                ValueType::Value => handler.put_cf(cf, r.key, r.value),
                ValueType::Deletion | ValueType::SingleDeletion => handler.delete_cf(cf, r.key),
                ValueType::Merge => handler.merge_cf(cf, r.key, r.value),
                ValueType::RangeDeletion => handler.delete_range_cf(cf, r.key, r.value),
                ValueType::Entity => handler.put_entity_cf(cf, r.key, &entity_of(&r)),
                // Only in the DB's own WAL, resolved before a batch is handed out
                // (`Db::get_updates_since`).
                ValueType::BlobIndex => {}
            }
        }
    }

    /// Removes every record and resets the header.
    pub fn clear(&mut self) {
        self.rep.clear();
        self.rep.resize(HEADER_SIZE, 0);
        self.oversized = false;
        self.range_deletions = false;
        self.ts_families.clear();
        self.plain_default = false;
        self.decoded = false;
        self.ts_error = None;
        self.has_merge = false;
        self.bad_entity = None;
        self.has_cf = false;
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.count() as usize
    }

    /// True when the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Size of the encoded batch, header included.
    pub fn size_in_bytes(&self) -> usize {
        self.rep.len()
    }

    /// The encoded batch (the format at the top of this module).
    pub fn data(&self) -> &[u8] {
        &self.rep
    }

    /// A batch from its encoding (as [`WriteBatch::data`] gives it; the `rocksdb` crate's
    /// `WriteBatch::from_data`), which cannot fail: a malformed buffer gives a batch that
    /// iterates up to its damage and that every write refuses with the `Corruption`
    /// [`WriteBatch::try_from_data`] would have returned (as RocksDB, which checks a batch's
    /// encoding when it is used).
    pub fn from_data(data: &[u8]) -> WriteBatch {
        match WriteBatch::from_vec(data.to_vec()) {
            Ok(b) => b,
            Err(e) => {
                let (offset, reason) = match &e {
                    Error::Corruption { offset, reason, .. } => {
                        (usize::try_from(*offset).unwrap_or(usize::MAX), reason.clone())
                    }
                    other => (0, other.to_string()),
                };
                let mut rep = data.to_vec();
                if rep.len() < HEADER_SIZE {
                    rep = vec![0; HEADER_SIZE];
                }
                WriteBatch { damage: Some((offset, reason)), ..WriteBatch::from_rep(rep) }
            }
        }
    }

    /// A batch from its encoding, validated: a malformed buffer is `Corruption` naming the
    /// byte offset inside it and what was expected there; never a panic. (A `delete_range`
    /// whose begin is after its end is refused when the batch is written: only the family
    /// knows its key order.)
    pub fn try_from_data(data: &[u8]) -> Result<WriteBatch> {
        WriteBatch::from_vec(data.to_vec())
    }

    /// Whether the batch holds a range deletion (a flag: no pass over the records).
    pub(crate) fn has_range_deletions(&self) -> bool {
        self.range_deletions
    }

    /// The range deletions, `(family, begin, end)`.
    pub(crate) fn range_deletions(&self) -> impl Iterator<Item = (ColumnFamilyId, &[u8], &[u8])> {
        self.iter()
            .filter(|r| r.value_type == ValueType::RangeDeletion)
            .map(|r| (r.cf, r.key, r.value))
    }

    /// Decodes and validates an encoded batch: header, every record, and the count. Errors are
    /// `Corruption` with the offset inside the batch and no file; see [`Self::from_record`].
    pub(crate) fn from_vec(data: Vec<u8>) -> Result<WriteBatch> {
        WriteBatch::decode_validated(data, false)
    }

    /// [`Self::from_vec`] for a record of the DB's own WAL, which may hold `BlobIndex`
    /// records (values written to blob files as they were committed).
    pub(crate) fn from_wal(data: Vec<u8>) -> Result<WriteBatch> {
        WriteBatch::decode_validated(data, true)
    }

    fn decode_validated(data: Vec<u8>, blob_refs: bool) -> Result<WriteBatch> {
        if data.len() < HEADER_SIZE {
            return Err(corrupt(
                0,
                format!("{} bytes, shorter than the {HEADER_SIZE}-byte header", data.len()),
            ));
        }
        let mut r = Reader::new(&data[HEADER_SIZE..]);
        let mut found: u64 = 0;
        let (mut has_merge, mut has_cf, mut range_deletions) = (false, false, false);
        let mut has_blob_refs = false;
        while !r.is_empty() {
            let entry = decode_entry(&mut r, blob_refs)
                .map_err(|(at, reason)| corrupt(HEADER_SIZE + at, reason))?;
            let Entry::Record(rec) = entry else { continue };
            has_blob_refs |= rec.value_type == ValueType::BlobIndex;
            has_merge |= rec.value_type == ValueType::Merge;
            range_deletions |= rec.value_type == ValueType::RangeDeletion;
            has_cf |= rec.cf != 0;
            found += 1;
        }
        let count = decode_fixed32(&data, COUNT_OFFSET);
        if u64::from(count) != found {
            return Err(corrupt(
                COUNT_OFFSET,
                format!("header says {count} records, the batch holds {found}"),
            ));
        }
        Ok(WriteBatch {
            range_deletions,
            plain_default: true,
            decoded: true,
            has_merge,
            has_cf,
            has_blob_refs,
            ..WriteBatch::from_rep(data)
        })
    }

    #[cfg(test)]
    /// [`Self::from_data`] for a batch read from log record `record_offset` of `file`: a
    /// `Corruption` names the file and the record, and the byte inside the batch in its reason.
    pub(crate) fn from_record(
        data: Vec<u8>,
        file: &Path,
        record_offset: u64,
    ) -> Result<WriteBatch> {
        WriteBatch::from_vec(data).map_err(|e| match e {
            Error::Corruption { offset, reason, .. } => Error::corruption(
                file,
                record_offset,
                format!("{reason} (byte {offset} of the write batch in the log record here)"),
            ),
            other => other,
        })
    }

    /// Sequence number of the first record.
    pub(crate) fn sequence(&self) -> SeqNo {
        SeqNo(decode_fixed64(&self.rep, 0))
    }

    pub(crate) fn set_sequence(&mut self, seq: SeqNo) {
        self.rep[..8].copy_from_slice(&seq.0.to_le_bytes());
    }

    /// Number of records, as stored in the header.
    pub(crate) fn count(&self) -> u32 {
        decode_fixed32(&self.rep, COUNT_OFFSET)
    }

    fn set_count(&mut self, n: u32) {
        self.rep[COUNT_OFFSET..HEADER_SIZE].copy_from_slice(&n.to_le_bytes());
    }

    /// Appends the records of `other`, in order, after this batch's (its sequence number is
    /// ignored): writing the result is writing both, atomically. Group commit joins batches
    /// this way; a replicated state machine adds its bookkeeping to a command's batch. A
    /// result over the record-count limit is refused when written, like any oversized batch.
    pub fn append(&mut self, other: &WriteBatch) {
        if self.damage.is_none() {
            if let Some((offset, reason)) = &other.damage {
                let at = self.rep.len() + offset.saturating_sub(HEADER_SIZE);
                self.damage = Some((at, reason.clone()));
            }
        }
        self.rep.extend_from_slice(other.rep.get(HEADER_SIZE..).unwrap_or_default());
        self.oversized |= other.oversized;
        self.range_deletions |= other.range_deletions;
        for &cf in &other.ts_families {
            self.note_ts_family(cf);
        }
        self.plain_default |= other.plain_default;
        self.decoded |= other.decoded;
        if self.ts_error.is_none() {
            self.ts_error.clone_from(&other.ts_error);
        }
        if self.bad_entity.is_none() {
            self.bad_entity.clone_from(&other.bad_entity);
        }
        self.has_merge |= other.has_merge;
        self.has_cf |= other.has_cf;
        match self.count().checked_add(other.count()) {
            Some(n) => self.set_count(n),
            None => {
                self.set_count(u32::MAX);
                self.oversized = true;
            }
        }
    }

    /// `InvalidArgument` when a key or value exceeded [`MAX_KEY_OR_VALUE_LEN`] or the batch
    /// holds more than `u32::MAX` records. The DB checks this before writing a batch; the flags
    /// are set while the batch is built, so the check costs no pass over the records. (The
    /// bounds of range deletions are checked by the DB in each family's order.)
    pub(crate) fn validate(&self) -> Result<()> {
        if let Some((offset, reason)) = &self.damage {
            return Err(Error::corruption("", *offset as u64, reason.clone()));
        }
        if let Some(e) = &self.ts_error {
            return Err(Error::InvalidArgument(format!("write batch: {e}")));
        }
        if let Some(e) = &self.bad_entity {
            return Err(Error::InvalidArgument(format!("write batch: put_entity: {e}")));
        }
        if self.oversized {
            return Err(Error::InvalidArgument(format!(
                "write batch holds a key or value longer than {MAX_KEY_OR_VALUE_LEN} bytes \
                 or more than {} records",
                u32::MAX
            )));
        }
        Ok(())
    }

    /// Whether the batch holds a merge.
    pub(crate) fn has_merge(&self) -> bool {
        self.has_merge
    }

    /// Whether the batch holds `BlobIndex` records (see the module's text).
    pub(crate) fn has_blob_refs(&self) -> bool {
        self.has_blob_refs
    }

    /// Whether a record names a column family other than `default`.
    pub(crate) fn has_cf(&self) -> bool {
        self.has_cf
    }

    /// The column families the batch's records name, ascending, without repeats.
    pub(crate) fn column_families(&self) -> Vec<ColumnFamilyId> {
        if !self.has_cf {
            return vec![0];
        }
        let mut ids: Vec<ColumnFamilyId> = self.iter().map(|r| r.cf).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// The records in order, without copying.
    #[allow(clippy::iter_without_into_iter)] // crate-internal: `BatchRecord` is not public.
    pub(crate) fn iter(&self) -> BatchIter<'_> {
        BatchIter {
            r: Reader::new(self.rep.get(HEADER_SIZE..).unwrap_or_default()),
            damaged: self.damage.is_some(),
        }
    }

    /// A copy of this batch (log data, families and sequence number kept) with each record's
    /// type and value as `f` gives them, `None` leaving the record as it is. A deletion keeps
    /// no value.
    pub(crate) fn rewritten(
        &self,
        mut f: impl FnMut(&BatchRecord<'_>) -> Result<Option<(ValueType, Vec<u8>)>>,
    ) -> Result<WriteBatch> {
        let mut out = WriteBatch::with_capacity_bytes(self.size_in_bytes());
        let mut it = self.iter();
        while let Some(e) = it.next_entry() {
            let r = match e {
                Entry::LogData(b) => {
                    out.put_log_data(b);
                    continue;
                }
                Entry::Record(r) => r,
            };
            let new = f(&r)?;
            let (t, value) = match &new {
                Some((t, v)) => (*t, v.as_slice()),
                None => (r.value_type, r.value),
            };
            let value = match t {
                ValueType::Deletion | ValueType::SingleDeletion => None,
                _ => Some(value),
            };
            out.push_record(r.cf, t, r.key, value);
        }
        out.set_sequence(self.sequence());
        Ok(out)
    }

    /// Appends one record (`value`: the value, operand or range end; `None` for deletions).
    pub(crate) fn push_record(
        &mut self,
        cf: ColumnFamilyId,
        t: ValueType,
        key: &[u8],
        value: Option<&[u8]>,
    ) {
        self.add(cf, t, key, value);
        self.has_blob_refs |= t == ValueType::BlobIndex;
        self.has_merge |= t == ValueType::Merge;
        self.range_deletions |= t == ValueType::RangeDeletion;
    }

    fn add(&mut self, cf: ColumnFamilyId, t: ValueType, key: &[u8], value: Option<&[u8]>) {
        // One reallocation at most per record, not one per field.
        self.rep.reserve(max_record_bytes(key.len(), value.map_or(0, <[u8]>::len)));
        if cf == 0 {
            self.rep.push(t as u8);
        } else {
            self.has_cf = true;
            self.rep.push(t as u8 | CF_TAG_BIT);
            put_varint32(&mut self.rep, cf);
        }
        self.put_slice(key);
        if let Some(v) = value {
            self.put_slice(v);
        }
        let n = self.count();
        if n == u32::MAX {
            self.oversized = true;
        } else {
            self.set_count(n + 1);
        }
    }

    fn put_slice(&mut self, s: &[u8]) {
        if s.len() > MAX_KEY_OR_VALUE_LEN {
            self.oversized = true;
        }
        put_varint64(&mut self.rep, s.len() as u64);
        self.rep.extend_from_slice(s);
    }
}

/// The most bytes one record of a `key`-byte key and a `value`-byte value takes: its tag, a
/// family id (varint32), and two length prefixes (varint64) besides the bytes themselves.
fn max_record_bytes(key: usize, value: usize) -> usize {
    1 + 5 + 10 + key + 10 + value
}

/// Iterator over the records of a batch; see [`WriteBatch::iter`].
pub(crate) struct BatchIter<'a> {
    r: Reader<'a>,
    /// The batch is known damaged: iteration ends at the damage.
    damaged: bool,
}

impl<'a> BatchIter<'a> {
    /// The next entry, log data included.
    pub(crate) fn next_entry(&mut self) -> Option<Entry<'a>> {
        if self.r.is_empty() {
            return None;
        }
        // Validated (or built) batches only: `BlobIndex` records were refused where they
        // must be.
        match decode_entry(&mut self.r, true) {
            Ok(e) => Some(e),
            Err(_) => {
                // Only a batch `from_data` marked damaged: every other is well-formed by
                // construction or validation.
                debug_assert!(self.damaged, "malformed write batch");
                self.r = Reader::new(&[]);
                None
            }
        }
    }
}

/// The records, in order; log data is skipped (it has no sequence number).
impl<'a> Iterator for BatchIter<'a> {
    type Item = BatchRecord<'a>;

    fn next(&mut self) -> Option<BatchRecord<'a>> {
        loop {
            if let Entry::Record(r) = self.next_entry()? {
                return Some(r);
            }
        }
    }
}

fn corrupt(offset: usize, reason: impl fmt::Display) -> Error {
    Error::corruption("", offset as u64, format!("write batch: {reason}"))
}

/// Decodes one entry at the reader's position; on failure, the offset (relative to the
/// reader's start) of the record's tag and the reason.
/// `blob_refs`: `BlobIndex` records are accepted (the DB's own WAL).
fn decode_entry<'a>(
    r: &mut Reader<'a>,
    blob_refs: bool,
) -> std::result::Result<Entry<'a>, (usize, String)> {
    let at = r.position();
    let tag = r.u8().ok_or_else(|| (at, "missing record tag".to_string()))?;
    if tag == LOG_DATA_TAG {
        let blob = get_slice(r).ok_or_else(|| (at, "bad blob in log data record".to_string()))?;
        return Ok(Entry::LogData(blob));
    }
    let cf = if tag & CF_TAG_BIT != 0 {
        r.varint32().ok_or_else(|| (at, format!("bad column family id after tag {tag}")))?
    } else {
        0
    };
    let value_type = ValueType::from_u8(tag & !CF_TAG_BIT)
        .ok_or_else(|| (at, format!("unknown record tag {tag} (written by a newer version?)")))?;
    let key = get_slice(r).ok_or_else(|| (at, format!("bad key in record with tag {tag}")))?;
    let value = match value_type {
        ValueType::Value | ValueType::Merge | ValueType::RangeDeletion => {
            get_slice(r).ok_or_else(|| (at, format!("bad value in record with tag {tag}")))?
        }
        ValueType::Entity => {
            let e =
                get_slice(r).ok_or_else(|| (at, format!("bad entity in record with tag {tag}")))?;
            wide_columns::decode(e).map_err(|err| (at, format!("record with tag {tag}: {err}")))?;
            e
        }
        ValueType::BlobIndex if blob_refs => {
            get_slice(r).ok_or_else(|| (at, format!("bad blob index in record with tag {tag}")))?
        }
        ValueType::Deletion | ValueType::SingleDeletion => &[],
        // Only the DB writes blob indexes into batches, in its own WAL.
        ValueType::BlobIndex => {
            return Err((
                at,
                format!("record tag {tag} (a blob index) is only ever in the DB's own WAL"),
            ))
        }
    };
    Ok(Entry::Record(BatchRecord { cf, value_type, key, value }))
}

/// One entry of a batch: a record, or a log data blob (`put_log_data`), which has no sequence
/// number and is not applied.
pub(crate) enum Entry<'a> {
    Record(BatchRecord<'a>),
    LogData(&'a [u8]),
}

/// The columns of a validated batch's entity record.
fn entity_of(r: &BatchRecord<'_>) -> WideColumns {
    // Every entity record was checked as it was built or decoded.
    WideColumns::decode(r.value).unwrap_or_default()
}

/// A `varint len | bytes` slice with `len <= MAX_KEY_OR_VALUE_LEN`.
fn get_slice<'a>(r: &mut Reader<'a>) -> Option<&'a [u8]> {
    let n = r.varint32()?;
    r.bytes(n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn sample() -> WriteBatch {
        let mut b = WriteBatch::new();
        b.put(b"k1", b"v1");
        b.delete(b"k2");
        b.merge("k3", "op");
        b.single_delete(b"k4");
        b.delete_range(b"a", b"z");
        b.put(b"", b"");
        b.put(b"empty-value", b"");
        b.put(b"", b"empty-key");
        b
    }

    fn records(b: &WriteBatch) -> Vec<(ValueType, Vec<u8>, Vec<u8>)> {
        b.iter().map(|r| (r.value_type, r.key.to_vec(), r.value.to_vec())).collect()
    }

    #[test]
    fn roundtrip_every_record_type() {
        let mut b = sample();
        b.set_sequence(SeqNo(77));
        assert_eq!(b.len(), 8);
        assert_eq!(b.count(), 8);
        assert!(!b.is_empty());
        let want = vec![
            (ValueType::Value, b"k1".to_vec(), b"v1".to_vec()),
            (ValueType::Deletion, b"k2".to_vec(), vec![]),
            (ValueType::Merge, b"k3".to_vec(), b"op".to_vec()),
            (ValueType::SingleDeletion, b"k4".to_vec(), vec![]),
            (ValueType::RangeDeletion, b"a".to_vec(), b"z".to_vec()),
            (ValueType::Value, vec![], vec![]),
            (ValueType::Value, b"empty-value".to_vec(), vec![]),
            (ValueType::Value, vec![], b"empty-key".to_vec()),
        ];
        assert_eq!(records(&b), want);
        let d = WriteBatch::from_vec(b.data().to_vec()).unwrap();
        assert_eq!(d, b);
        assert_eq!(d.sequence(), SeqNo(77));
        assert_eq!(records(&d), want);
        assert_eq!(d.size_in_bytes(), b.data().len());
        assert!(d.validate().is_ok());
    }

    #[test]
    fn exact_encoding() {
        let mut b = WriteBatch::new();
        b.set_sequence(SeqNo(0x0102));
        b.put(b"ab", b"c");
        b.delete(b"d");
        b.delete_range(&b"e"[..], &b""[..]);
        let mut want = vec![0x02, 0x01, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0];
        want.extend_from_slice(&[1, 2, b'a', b'b', 1, b'c']);
        want.extend_from_slice(&[0, 1, b'd']);
        want.extend_from_slice(&[4, 1, b'e', 0]);
        assert_eq!(b.data(), &want[..]);
        let empty = WriteBatch::default();
        assert_eq!(empty.data(), &[0u8; HEADER_SIZE]);
        assert_eq!(empty.len(), 0);
        assert!(empty.is_empty());
        assert_eq!(empty.iter().count(), 0);
        assert_eq!(WriteBatch::from_vec(empty.data().to_vec()).unwrap(), empty);
    }

    #[test]
    fn long_lengths_use_multibyte_varints() {
        let mut b = WriteBatch::new();
        let big = vec![7u8; 300];
        b.put(&big, vec![1u8; 20_000]);
        let d = WriteBatch::from_vec(b.data().to_vec()).unwrap();
        let r: Vec<_> = d.iter().collect();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].key, &big[..]);
        assert_eq!(r[0].value.len(), 20_000);
    }

    #[test]
    fn keys_are_every_records_key_in_order_with_range_ends() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"1");
        b.push_record(3, ValueType::Deletion, b"b", None);
        b.push_record(3, ValueType::RangeDeletion, b"c", Some(b"d"));
        b.merge(b"e", b"+1");
        let got: Vec<_> = b.keys().collect();
        assert_eq!(got, [(&b"a"[..], None), (b"b", None), (b"c", Some(&b"d"[..])), (b"e", None)]);
        assert_eq!(WriteBatch::new().keys().count(), 0);
    }

    #[test]
    fn append_remapped_moves_records_between_family_ids() {
        let mut b = WriteBatch::new();
        b.push_record(3, ValueType::Value, b"k", Some(b"v"));
        b.push_record(3, ValueType::Deletion, b"d", None);
        b.push_record(3, ValueType::Merge, b"m", Some(b"+1"));
        b.push_record(3, ValueType::RangeDeletion, b"a", Some(b"c"));
        b.put(b"in-default", b"x");
        let mut out = WriteBatch::new();
        out.push_record(7, ValueType::Value, b"first", Some(b"1"));
        out.append_remapped(&b, |id| match id {
            3 => Some(7),
            0 => Some(0),
            _ => None,
        })
        .unwrap();
        let got: Vec<_> =
            out.iter().map(|r| (r.cf, r.value_type, r.key.to_vec(), r.value.to_vec())).collect();
        assert_eq!(
            got,
            vec![
                (7, ValueType::Value, b"first".to_vec(), b"1".to_vec()),
                (7, ValueType::Value, b"k".to_vec(), b"v".to_vec()),
                (7, ValueType::Deletion, b"d".to_vec(), vec![]),
                (7, ValueType::Merge, b"m".to_vec(), b"+1".to_vec()),
                (7, ValueType::RangeDeletion, b"a".to_vec(), b"c".to_vec()),
                (0, ValueType::Value, b"in-default".to_vec(), b"x".to_vec()),
            ]
        );
        assert_eq!(out.len(), 6);
        assert!(out.has_merge);
        // The encoding round-trips.
        assert_eq!(WriteBatch::try_from_data(out.data()).unwrap(), out);
        // A family with no counterpart: an error, nothing appended.
        let before = out.clone();
        let e = out.append_remapped(&b, |id| (id == 0).then_some(0)).unwrap_err();
        assert!(e.to_string().contains("column family id 3"), "{e}");
        assert_eq!(out, before);
    }

    #[test]
    fn append_concatenates_and_adds_counts() {
        let mut a = WriteBatch::new();
        a.put(b"a", b"1");
        a.set_sequence(SeqNo(10));
        let mut b = sample();
        b.set_sequence(SeqNo(99));
        let mut c = a.clone();
        c.append(&b);
        c.append(&WriteBatch::new());
        assert_eq!(c.sequence(), SeqNo(10));
        assert_eq!(c.len(), 9);
        let mut want = records(&a);
        want.extend(records(&b));
        assert_eq!(records(&c), want);
        assert_eq!(c.size_in_bytes(), a.size_in_bytes() + b.size_in_bytes() - HEADER_SIZE);
        assert_eq!(WriteBatch::from_vec(c.data().to_vec()).unwrap(), c);
    }

    #[test]
    fn a_single_record_batch_is_allocated_once() {
        for (k, v) in [(0, 0), (16, 100), (300, 70_000), (1, 200_000)] {
            let (key, value) = (vec![1u8; k], vec![2u8; v]);
            for (cf, t) in [(0, ValueType::Value), (u32::MAX, ValueType::Merge)] {
                let mut b = WriteBatch::for_record(&key, &value);
                let at = b.rep.as_ptr();
                b.add(cf, t, &key, Some(&value));
                assert_eq!(b.rep.as_ptr(), at, "key {k} B, value {v} B, family {cf}: grew");
                assert_eq!(b.count(), 1);
            }
        }
    }

    #[test]
    fn clear_resets_everything() {
        let mut b = sample();
        b.set_sequence(SeqNo(5));
        b.clear();
        assert_eq!(b, WriteBatch::new());
        assert_eq!(b.sequence(), SeqNo(0));
    }

    #[test]
    fn count_mismatch_is_corruption() {
        let b = sample();
        for count in [0u32, 7, 9, u32::MAX] {
            let mut data = b.data().to_vec();
            data[8..12].copy_from_slice(&count.to_le_bytes());
            let e = WriteBatch::from_vec(data).unwrap_err();
            match e {
                Error::Corruption { offset, reason, .. } => {
                    assert_eq!(offset, 8);
                    assert!(reason.contains("header says"), "{reason}");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn unknown_tag_and_short_header_are_corruption() {
        let mut data = sample().data().to_vec();
        data[HEADER_SIZE] = 9;
        let e = WriteBatch::from_vec(data).unwrap_err();
        assert!(e.to_string().contains("unknown record tag 9"), "{e}");
        assert!(matches!(e, Error::Corruption { offset: 12, .. }));
        let e = WriteBatch::from_vec(vec![0; 11]).unwrap_err();
        assert!(e.is_corruption());
    }

    #[test]
    fn from_record_names_the_log() {
        let e = WriteBatch::from_record(vec![1, 2], Path::new("/db/000009.log"), 4096)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("corruption in /db/000009.log at offset 4096: write batch"), "{e}");
    }

    #[test]
    fn every_truncation_is_corruption_or_a_valid_batch() {
        let b = sample();
        let full = b.data();
        for cut in 0..full.len() {
            // Cutting anywhere loses at least one record while the count stays: corruption.
            let r = WriteBatch::from_vec(full[..cut].to_vec());
            assert!(r.unwrap_err().is_corruption(), "cut {cut}");
        }
        // Cutting at a record boundary and fixing the count gives a valid prefix.
        let mut prefix = WriteBatch::new();
        prefix.put(b"k1", b"v1");
        let mut data = full[..prefix.size_in_bytes()].to_vec();
        data[8..12].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(records(&WriteBatch::from_vec(data).unwrap()), records(&prefix));
    }

    #[test]
    fn random_bit_flips_never_panic() {
        let mut b = sample();
        b.put_entity("e", &[("", "d"), ("col", "v")]);
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        for pos in 0..b.data().len() {
            for bit in 0..8 {
                let mut data = b.data().to_vec();
                data[pos] ^= 1 << bit;
                check_decodes_or_corrupt(data);
            }
        }
        for _ in 0..20_000 {
            let mut data = b.data().to_vec();
            for _ in 0..rng.gen_range(1..6) {
                let p = rng.gen_range(0..data.len());
                data[p] = rng.gen();
            }
            if rng.gen_bool(0.3) {
                data.truncate(rng.gen_range(0..=data.len()));
            }
            check_decodes_or_corrupt(data);
        }
    }

    fn check_decodes_or_corrupt(data: Vec<u8>) {
        match WriteBatch::from_vec(data.clone()) {
            Ok(d) => {
                // Valid: iteration yields exactly `count` records and re-encodes identically.
                assert_eq!(d.iter().count(), d.len());
                let mut again = WriteBatch::new();
                again.set_sequence(d.sequence());
                for r in d.iter() {
                    match r.value_type {
                        ValueType::Value => again.put(r.key, r.value),
                        ValueType::Deletion => again.delete(r.key),
                        ValueType::Merge => again.merge(r.key, r.value),
                        ValueType::SingleDeletion => again.single_delete(r.key),
                        ValueType::RangeDeletion => again.delete_range(r.key, r.value),
                        // As decoded (checked whole), over-long varints and all.
                        ValueType::Entity => {
                            again.push_record(0, ValueType::Entity, r.key, Some(r.value));
                        }
                        ValueType::BlobIndex => unreachable!("refused when decoded"),
                    }
                }
                // Varints may be over-long in the damaged input; the records must agree.
                assert_eq!(records(&again), records(&d));
            }
            Err(e) => assert!(e.is_corruption(), "{e}"),
        }
    }

    #[test]
    fn oversized_batches_are_flagged() {
        let mut b = WriteBatch::new();
        b.put(b"k", b"v");
        b.oversized = false;
        assert!(b.validate().is_ok());
        // Lengths above 4 GiB - 1 cannot be allocated in a test; exercise the flag paths.
        b.set_count(u32::MAX);
        b.put(b"k", b"v");
        assert!(matches!(b.validate(), Err(Error::InvalidArgument(_))));
        let mut c = WriteBatch::new();
        c.put(b"x", b"y");
        c.append(&b);
        assert_eq!(c.count(), u32::MAX);
        assert!(c.validate().is_err());
        // A length prefix above u32::MAX is rejected on decode.
        let mut data = vec![0u8; HEADER_SIZE];
        data[8] = 1;
        data.push(ValueType::Deletion as u8);
        put_varint64(&mut data, 1 << 32);
        assert!(WriteBatch::from_vec(data).unwrap_err().is_corruption());
    }
}
