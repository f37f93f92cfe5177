//! The public iterators: `DbRawIterator` (cursor moves) and `DbIterator` (a Rust `Iterator`),
//! both over a [`DbIter`] built from the memtables and tables of one super version, which the
//! iterator pins so flushes and compactions never pull data from under it.

use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use super::{Cfd, DbInner, SuperVersion};
use crate::column_family::ColumnFamilyId;
use crate::comparator::KeyOrder;
use crate::error::{Error, Result};
use crate::iterator::db_iter::{DbIter, DbIterOptions, RangeDelView};
use crate::iterator::merging::MergingIterator;
use crate::iterator::InternalIterator;
use crate::options::ReadOptions;
use crate::range_del::FragmentedTombstones;
use crate::sstable::table_cache::TableCache;
use crate::sstable::{ReadBlockOptions, ScanPlan};
use crate::types::SeqNo;
use crate::version::level_iter::{LevelFiles, LevelIterator};

/// Where a [`DbIterator`] starts and which way it goes.
#[derive(Clone, Copy, Debug)]
pub enum IteratorMode<'a> {
    /// From the first key, forward.
    Start,
    /// From the last key, backward.
    End,
    /// From a key: forward from the first key >= it, or backward from the last key <= it.
    From(&'a [u8], Direction),
}

/// Iteration direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Ascending key order.
    Forward,
    /// Descending key order.
    Reverse,
}

/// What a DB iterator reads: one super version at one sequence number, with the family's
/// merge operator and the read options. Building a second iterator from it (the back cursor
/// of a double-ended [`DbIterator`]) sees exactly what the first sees. Holds no reference to
/// the DB itself, so an iterator never keeps a closed DB's lock.
#[derive(Clone)]
pub(crate) struct IterSource {
    table_cache: Arc<TableCache>,
    sv: Arc<SuperVersion>,
    sequence: SeqNo,
    merge_operator: Option<Arc<dyn crate::merge_operator::MergeOperator>>,
    prefix_extractor: Option<crate::prefix::PrefixExtractor>,
    ro: ReadOptions,
    /// The family's `Cfd::value_suffix`.
    value_suffix: usize,
    /// The family's user-defined timestamps, if it has them, and its `full_history_ts_low`.
    timestamps: Option<Arc<crate::comparator::UserTimestamps>>,
    full_history_ts_low: Option<Vec<u8>>,
    /// The DB's blob files.
    blobs: Arc<crate::blob::BlobSource>,
}

impl IterSource {
    /// The family's current state at `ro`'s snapshot, or at the latest published sequence
    /// (`snapshot_reads::read_sequence`, which refuses some snapshots).
    pub(crate) fn capture(inner: &DbInner, cfd: &Cfd, ro: &ReadOptions) -> Result<IterSource> {
        let sv = cfd.current_super_version();
        let sequence = super::snapshot_reads::read_sequence(inner, cfd, ro)?;
        Ok(IterSource {
            table_cache: inner.table_cache.clone(),
            sv,
            sequence,
            merge_operator: cfd.opts.merge_operator.clone(),
            prefix_extractor: cfd.opts.prefix_extractor,
            ro: ro.clone(),
            value_suffix: cfd.value_suffix,
            timestamps: cfd.opts.timestamps.clone(),
            full_history_ts_low: cfd.full_history_ts_low(),
            blobs: inner.blobs.clone(),
        })
    }

    /// Whether the family has user-defined timestamps.
    pub(crate) fn has_timestamps(&self) -> bool {
        self.timestamps.is_some()
    }

    /// Compares two of the family's user keys (without timestamps in a family with them).
    pub(crate) fn compare_user_keys(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        match &self.timestamps {
            Some(t) => t.compare_keys(a, b),
            None => self.sv.version.order().compare(a, b),
        }
    }

    /// The extractor `prefix_same_as_start` applies, if it is on.
    fn active_prefix_extractor(&self) -> Option<crate::prefix::PrefixExtractor> {
        if self.ro.prefix_same_as_start {
            self.prefix_extractor
        } else {
            None
        }
    }

    /// The cursor of a family with user-defined timestamps over the source, at its read
    /// options' timestamp (`db/ts_iter.rs`); `InvalidArgument` for a family without them.
    pub(crate) fn ts_cursor(&self) -> Result<super::ts_iter::TsCursor> {
        let Some(ts) = &self.timestamps else {
            return Err(Error::InvalidArgument(
                "the column family has no user-defined timestamps".into(),
            ));
        };
        ts_cursor(self, ts, &self.ro)
    }

    /// A new iterator over the source, with `ro` in place of the captured read options
    /// (same snapshot sequence).
    fn build_with(&self, ro: &ReadOptions) -> DbRawIterator {
        self.build_planned(ro, None)
    }

    /// [`Self::build_with`], its tables reading for the multi-range scan `plan` when given
    /// (`sstable/readahead/planned.rs`; not in a family with timestamps).
    pub(crate) fn build_planned(
        &self,
        ro: &ReadOptions,
        plan: Option<&Arc<ScanPlan>>,
    ) -> DbRawIterator {
        if let Some(ts) = &self.timestamps {
            return match ts_cursor(self, ts, ro) {
                Ok(c) => DbRawIterator::from_cursor(Box::new(c)),
                Err(e) => DbRawIterator::new(error_iter(e)),
            };
        }
        DbRawIterator::new(build_iter(
            &self.table_cache,
            self.sv.clone(),
            self.sequence,
            self.merge_operator.as_ref(),
            self.prefix_extractor,
            Read { opts: ro, plan },
            &Values { suffix: self.value_suffix, blobs: &self.blobs },
        ))
    }

    /// A new iterator over the source.
    pub(crate) fn build(&self) -> DbRawIterator {
        self.build_with(&self.ro)
    }
}

/// Where a DB iterator was made, for `refresh`: the DB (held weakly, as the iterator holds no
/// reference to it), the family and the read options, without their snapshot (a refreshed
/// iterator reads the latest state, as RocksDB's `Iterator::Refresh`).
#[derive(Clone)]
pub(crate) struct Origin {
    db: Weak<DbInner>,
    cf: ColumnFamilyId,
    ro: ReadOptions,
}

impl Origin {
    pub(crate) fn new(db: &Arc<DbInner>, cf: ColumnFamilyId, ro: &ReadOptions) -> Origin {
        Origin { db: Arc::downgrade(db), cf, ro: ReadOptions { snapshot: None, ..ro.clone() } }
    }

    /// The family's latest state.
    fn recapture(&self) -> Result<IterSource> {
        let inner = self.db.upgrade().ok_or(Error::ShutdownInProgress)?;
        if inner.closing.load(Ordering::Acquire) {
            return Err(Error::ShutdownInProgress);
        }
        let cfd = inner
            .state
            .lock()
            .cfs
            .get(&self.cf)
            .map(|cs| cs.cfd.clone())
            .ok_or_else(|| Error::ColumnFamilyDropped(format!("family id {}", self.cf)))?;
        IterSource::capture(&inner, &cfd, &self.ro)
    }
}

/// The internal iterators over super version `sv`: 0 = the active memtable, 1.. = the
/// immutables newest first, then the tables (each L0 table, then a level iterator per
/// non-empty level), every table reading for `plan` when given; and the error of a table that
/// would not open (its source left out).
fn sources(
    table_cache: &Arc<TableCache>,
    sv: &Arc<SuperVersion>,
    ro: &ReadOptions,
    plan: Option<&Arc<ScanPlan>>,
) -> (Vec<Box<dyn InternalIterator>>, Option<Error>) {
    let rb = ReadBlockOptions {
        verify_checksums: ro.verify_checksums,
        fill_cache: ro.fill_cache,
        readahead_size: ro.readahead_size,
        cache_only: false,
    };
    let order = sv.version.order();
    let levels = &sv.version.levels;
    let tables = levels.first().map_or(0, Vec::len) + levels.len();
    let mut children: Vec<Box<dyn InternalIterator>> =
        Vec::with_capacity(1 + sv.imm.len() + tables);
    children.push(Box::new(sv.mem.iter()));
    for m in &sv.imm {
        children.push(Box::new(m.iter()));
    }
    let mut open_error = None;
    for (level, files) in sv.version.levels.iter().enumerate() {
        if files.is_empty() {
            continue;
        }
        if level == 0 {
            for f in files {
                match table_cache.reader_at(f.number, &f.pinned, 0) {
                    Ok(t) => children.push(Box::new(t.iter_planned(rb, plan.map(|p| &**p)))),
                    Err(e) => open_error = Some(e),
                }
            }
        } else {
            let files = LevelFiles::OfVersion(sv.version.clone(), level);
            let order = order.clone();
            let mut it = LevelIterator::over(files, table_cache.clone(), rb, order);
            if let Some(p) = plan {
                it = it.with_scan_plan(p.clone());
            }
            children.push(Box::new(it));
        }
    }
    (children, open_error)
}

/// The cursor over `source` of its family with user-defined timestamps `ts`, at `ro`'s
/// timestamp (`db/ts_iter.rs`); `Err` for read options it refuses.
fn ts_cursor(
    source: &IterSource,
    ts: &Arc<crate::comparator::UserTimestamps>,
    ro: &ReadOptions,
) -> Result<super::ts_iter::TsCursor> {
    let (table_cache, sv, sequence) = (&source.table_cache, source.sv.clone(), source.sequence);
    let read_ts = ro.read_timestamp(Some(ts))?.unwrap_or_default().to_vec();
    if ro.prefix_same_as_start {
        return Err(Error::NotSupported(
            "prefix_same_as_start in a family with user-defined timestamps".into(),
        ));
    }
    let start_ts = ro.history_start(ts)?.map(<[u8]>::to_vec);
    if ro.tailing && start_ts.is_some() {
        return Err(Error::NotSupported(
            "a tailing iterator over a history (iter_start_ts)".into(),
        ));
    }
    // A history starts where its oldest version is, the read where it reads; neither may be
    // below what the family still keeps.
    if let Some(low) = source.full_history_ts_low.as_deref() {
        let oldest = start_ts.as_deref().unwrap_or(&read_ts);
        if ts.compare_ts(oldest, low) == std::cmp::Ordering::Less {
            return Err(below_history(oldest, low));
        }
    }
    let order = sv.version.order().clone();
    let (children, open_error) = sources(table_cache, &sv, ro, None);
    let inner: Box<dyn InternalIterator> = match open_error {
        Some(e) => Box::new(crate::iterator::ErrorIterator::new(e)),
        None => Box::new(MergingIterator::new(children, order.clone())),
    };
    Ok(super::ts_iter::TsCursor::new(super::ts_iter::TsCursorParts {
        inner,
        sv,
        sequence,
        timestamps: ts.clone(),
        order,
        read_ts,
        start_ts,
        lower: ro.iterate_lower_bound.clone(),
        upper: ro.iterate_upper_bound.clone(),
        merge_operator: source.merge_operator.clone(),
        blobs: Arc::new(crate::blob::BlobReads {
            source: source.blobs.clone(),
            fill: ro.fill_cache,
        }),
    }))
}

/// `InvalidArgument` for a read at timestamp `read_ts`, below the family's
/// `full_history_ts_low`.
pub(crate) fn below_history(read_ts: &[u8], low: &[u8]) -> Error {
    Error::InvalidArgument(format!(
        "read timestamp {read_ts:?} is older than the column family's full_history_ts_low {low:?}"
    ))
}

/// What an iterator reads with: the read options, and a multi-range scan's plan.
struct Read<'a> {
    opts: &'a ReadOptions,
    plan: Option<&'a Arc<ScanPlan>>,
}

/// How a family's stored values become the user's: the bytes a TTL DB's values end with
/// (`Cfd::value_suffix`), and the DB's blob files.
struct Values<'a> {
    suffix: usize,
    blobs: &'a Arc<crate::blob::BlobSource>,
}

/// An iterator over super version `sv` at `sequence`, with the family's merge operator and
/// prefix extractor, as `read` says.
fn build_iter(
    table_cache: &Arc<TableCache>,
    sv: Arc<SuperVersion>,
    sequence: SeqNo,
    merge_operator: Option<&Arc<dyn crate::merge_operator::MergeOperator>>,
    prefix_extractor: Option<crate::prefix::PrefixExtractor>,
    read: Read<'_>,
    values: &Values<'_>,
) -> DbIter {
    let ro = read.opts;
    if let Err(e) = ro.read_timestamp(None) {
        return error_iter(e);
    }
    let order = sv.version.order().clone();
    let (children, mut open_error) = sources(table_cache, &sv, ro, read.plan);
    // Children: 0 = active memtable, 1.. = immutables newest first, then the tables.
    // Only sources with tombstones: most iterators then allocate no list at all.
    let mut lists = Vec::new();
    for (i, m) in std::iter::once(&sv.mem).chain(sv.imm.iter()).enumerate() {
        if let Some(f) = m.fragmented_range_tombstones().filter(|f| !f.is_empty()) {
            lists.push((f, i));
        }
    }
    if open_error.is_none() {
        match version_range_dels(table_cache, &sv) {
            Ok(f) if f.is_empty() => {}
            Ok(f) => lists.push((f, 1 + sv.imm.len())),
            Err(e) => open_error = Some(e),
        }
    }
    let merged: Box<dyn InternalIterator> = match open_error {
        Some(e) => Box::new(crate::iterator::ErrorIterator::new(e)),
        None => Box::new(MergingIterator::new(children, order.clone())),
    };
    let prefix_extractor = if ro.prefix_same_as_start { prefix_extractor } else { None };
    DbIter::new(
        merged,
        DbIterOptions {
            sequence,
            merge_operator: merge_operator.cloned(),
            lower_bound: ro.iterate_lower_bound.clone(),
            upper_bound: ro.iterate_upper_bound.clone(),
            prefix_extractor,
            pin: Some(sv),
            range_dels: Some(RangeDelView::new(lists)),
            statistics: table_cache.statistics().cloned(),
            value_suffix: values.suffix,
            order,
            blobs: Some(Arc::new(crate::blob::BlobReads {
                source: values.blobs.clone(),
                fill: ro.fill_cache,
            })),
        },
    )
}

pub(crate) fn new_raw_iter(inner: &DbInner, cfd: &Cfd, ro: &ReadOptions) -> DbRawIterator {
    if cfd.opts.timestamps.is_some() {
        return match IterSource::capture(inner, cfd, ro) {
            Ok(src) => src.build(),
            Err(e) => DbRawIterator::new(error_iter(e)),
        };
    }
    DbRawIterator::new(new_db_iter(inner, cfd, ro))
}

fn new_db_iter(inner: &DbInner, cfd: &Cfd, ro: &ReadOptions) -> DbIter {
    // As `IterSource::capture(..).build()`, without copying the read options and handles.
    let sv = cfd.current_super_version();
    let sequence = match super::snapshot_reads::read_sequence(inner, cfd, ro) {
        Ok(s) => s,
        Err(e) => return error_iter(e),
    };
    let merge = cfd.opts.merge_operator.as_ref();
    build_iter(
        &inner.table_cache,
        sv,
        sequence,
        merge,
        cfd.opts.prefix_extractor,
        Read { opts: ro, plan: None },
        &Values { suffix: cfd.value_suffix, blobs: &inner.blobs },
    )
}

/// An iterator that yields nothing and reports `e` (a call given a bad family handle).
pub(crate) fn error_iter(e: crate::error::Error) -> DbIter {
    DbIter::new(Box::new(crate::iterator::ErrorIterator::new(e)), DbIterOptions::at(SeqNo::ZERO))
}

/// The range tombstones of every table of the super version's version, sources numbered like
/// the iterator's table children: each L0 file, then each non-empty level. Cached in the
/// super version.
fn version_range_dels(
    table_cache: &TableCache,
    sv: &SuperVersion,
) -> Result<Arc<FragmentedTombstones>> {
    if let Some(f) = sv.version_range_dels.get() {
        return Ok(f.clone());
    }
    let mut all = Vec::new();
    let mut source = 0u32;
    for (level, files) in sv.version.levels.iter().enumerate() {
        if files.is_empty() {
            continue;
        }
        for f in files {
            let t = table_cache.reader(f.number, &f.pinned)?;
            all.extend(t.range_tombstones().iter().map(|r| (r.clone(), source)));
            if level == 0 {
                source += 1;
            }
        }
        if level > 0 {
            source += 1;
        }
    }
    let f = Arc::new(FragmentedTombstones::new(all, sv.version.order()));
    Ok(sv.version_range_dels.get_or_init(|| f).clone())
}

/// A cursor of another kind behind a [`DbRawIterator`]: a write batch's pending updates over
/// a DB cursor (`WriteBatchWithIndex::iterator_with_base`). It has the raw iterator's
/// contract: positioned only by a seek, `key`/`value` only while valid.
pub(crate) trait RawCursor: Send {
    fn valid(&self) -> bool;
    fn seek_to_first(&mut self);
    fn seek_to_last(&mut self);
    fn seek(&mut self, key: &[u8]);
    fn seek_for_prev(&mut self, key: &[u8]);
    /// Called only while valid.
    fn next(&mut self);
    /// Called only while valid.
    fn prev(&mut self);
    /// Called only while valid.
    fn key(&self) -> &[u8];
    /// The current entry's wide columns (a plain value is one default column). Called only
    /// while valid.
    fn columns(&self) -> Vec<(&[u8], &[u8])> {
        vec![(crate::wide_columns::DEFAULT_COLUMN_NAME, self.value())]
    }
    /// Called only while valid.
    fn value(&self) -> &[u8];
    fn status(&self) -> Result<()>;
    fn internal_steps(&self) -> u64;
    fn bounds(&self) -> (Option<&[u8]>, Option<&[u8]>);
    fn excludes(&self, ukey: &[u8]) -> bool;
    /// Replaces the read options' bounds, `[lower, upper)`; the cursor is unpositioned until
    /// its next seek. `NotSupported` for a cursor whose bounds are fixed.
    fn set_bounds(&mut self, _lower: Option<Vec<u8>>, _upper: Option<Vec<u8>>) -> Result<()> {
        Err(Error::NotSupported("changing the bounds of this kind of cursor".into()))
    }
    fn merge_operator(&self) -> Option<&Arc<dyn crate::merge_operator::MergeOperator>>;
    /// The order of the keys it yields.
    fn order(&self) -> &KeyOrder;
    /// Whether its keys are versions' internal keys (a history over a family with timestamps,
    /// `ReadOptions::set_iter_start_ts`), not user keys.
    fn yields_versions(&self) -> bool {
        false
    }
    /// The user-defined timestamp of the current entry (empty in a family without them);
    /// `None` when not valid.
    fn timestamp(&self) -> Option<&[u8]>;
}

/// What a [`DbRawIterator`] reads: the DB (matched directly: the common case pays no
/// indirect call) or another cursor.
// The DB cursor stays inline: boxing it would add a pointer chase to every step of the
// common case to save the rare other kind some bytes.
#[allow(clippy::large_enum_variant)]
enum Cursor {
    Db(DbIter),
    Other(Box<dyn RawCursor>),
}

/// Calls `$m` on the cursor, whichever it is.
macro_rules! on_cursor {
    ($c:expr, $it:ident => $e:expr) => {
        match $c {
            Cursor::Db($it) => $e,
            Cursor::Other($it) => $e,
        }
    };
}

/// A cursor over the DB (the `rocksdb` crate's `DBRawIteratorWithThreadMode`). It starts
/// unpositioned: call a seek first.
///
/// The lifetime and `D` (the type of DB read) are the crate's parameters and carry no data:
/// the cursor holds what it reads (a consistent view of the DB's tables and memtables), so
/// Strata's own methods return it with the `'static` lifetime, as [`DbRawIterator`].
pub struct DbRawIteratorWithThreadMode<'a, D> {
    it: Cursor,
    origin: Option<Origin>,
    // `fn() -> &D`: covariant in `'a`, and `Send` whatever `D` is.
    db: PhantomData<fn() -> &'a D>,
}

/// A cursor over a [`Db`](super::Db), as Strata's methods return it.
pub type DbRawIterator = DbRawIteratorWithThreadMode<'static, super::Db>;

impl<D> DbRawIteratorWithThreadMode<'_, D> {
    pub(crate) fn new(it: DbIter) -> Self {
        DbRawIteratorWithThreadMode { it: Cursor::Db(it), origin: None, db: PhantomData }
    }

    pub(crate) fn from_cursor(c: Box<dyn RawCursor>) -> Self {
        DbRawIteratorWithThreadMode { it: Cursor::Other(c), origin: None, db: PhantomData }
    }

    /// The cursor, able to `refresh` from `origin`.
    pub(crate) fn with_origin(mut self, origin: Origin) -> Self {
        self.origin = Some(origin);
        self
    }

    /// The user-defined timestamp of the current entry (empty in a family without them),
    /// `None` when unpositioned, as RocksDB's.
    pub fn timestamp(&self) -> Option<&[u8]> {
        on_cursor!(&self.it, c => c.timestamp())
    }

    /// Re-reads the DB at its latest state (a snapshot the read options named is dropped);
    /// the cursor is then unpositioned. Only cursors made by a `Db`'s `raw_iterator*` methods
    /// can (`NotSupported` for the others); `ShutdownInProgress` once the DB is closed.
    pub fn refresh(&mut self) -> Result<()> {
        let origin = self.origin.as_ref().ok_or_else(|| {
            Error::NotSupported("refresh of a cursor not made by a Db's raw_iterator".into())
        })?;
        self.it = origin.recapture()?.build().it;
        Ok(())
    }

    /// Whether the cursor is at an entry.
    pub fn valid(&self) -> bool {
        on_cursor!(&self.it, c => c.valid())
    }

    /// Positions at the first key (at or after the lower bound).
    pub fn seek_to_first(&mut self) {
        on_cursor!(&mut self.it, c => c.seek_to_first());
    }

    /// Positions at the last key (before the upper bound).
    pub fn seek_to_last(&mut self) {
        on_cursor!(&mut self.it, c => c.seek_to_last());
    }

    /// Positions at the first key >= `key`.
    pub fn seek(&mut self, key: impl AsRef<[u8]>) {
        on_cursor!(&mut self.it, c => c.seek(key.as_ref()));
    }

    /// Positions at the last key <= `key`.
    pub fn seek_for_prev(&mut self, key: impl AsRef<[u8]>) {
        on_cursor!(&mut self.it, c => c.seek_for_prev(key.as_ref()));
    }

    /// Moves to the next key; does nothing when not valid.
    pub fn next(&mut self) {
        on_cursor!(&mut self.it, c => if c.valid() { c.next() });
    }

    /// Moves to the previous key; does nothing when not valid.
    pub fn prev(&mut self) {
        on_cursor!(&mut self.it, c => if c.valid() { c.prev() });
    }

    /// The current key, or `None` when not valid.
    pub fn key(&self) -> Option<&[u8]> {
        on_cursor!(&self.it, c => c.valid().then(|| c.key()))
    }

    /// The current value, or `None` when not valid.
    pub fn value(&self) -> Option<&[u8]> {
        on_cursor!(&self.it, c => c.valid().then(|| c.value()))
    }

    /// The current entry's wide columns (RocksDB's `Iterator::columns`), or `None` when not
    /// valid: a wide-column entity's columns in ascending order of their names, a plain
    /// value as one default column (named ""). [`Self::value`] of an entity is its default
    /// column's value.
    pub fn columns(&self) -> Option<Vec<(&[u8], &[u8])>> {
        on_cursor!(&self.it, c => c.valid().then(|| c.columns()))
    }

    /// The current key and value, or `None` when not valid.
    pub fn item(&self) -> Option<(&[u8], &[u8])> {
        on_cursor!(&self.it, c => c.valid().then(|| (c.key(), c.value())))
    }

    /// The first error met; an iterator that stopped early because of one is not valid.
    pub fn status(&self) -> Result<()> {
        on_cursor!(&self.it, c => c.status())
    }

    /// Internal entries examined since the iterator was created (RocksDB's perf context
    /// `internal_key_skipped_count` plus the entries returned): how much work hidden entries
    /// cost. Range-deleted spans of older sources are jumped over, not counted per key.
    pub fn internal_steps(&self) -> u64 {
        on_cursor!(&self.it, c => c.internal_steps())
    }

    /// The read options' bounds, `[lower, upper)`.
    pub(crate) fn bounds(&self) -> (Option<&[u8]>, Option<&[u8]>) {
        on_cursor!(&self.it, c => c.bounds())
    }

    /// Replaces the read options' bounds ([`RawCursor::set_bounds`]).
    pub(crate) fn set_bounds(
        &mut self,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
    ) -> Result<()> {
        match &mut self.it {
            Cursor::Db(c) => {
                c.set_bounds(lower, upper);
                Ok(())
            }
            Cursor::Other(c) => c.set_bounds(lower, upper),
        }
    }

    /// Whether the cursor would never yield `ukey` from where it was last sought (bounds,
    /// and the seek's prefix under `prefix_same_as_start`).
    pub(crate) fn excludes(&self, ukey: &[u8]) -> bool {
        on_cursor!(&self.it, c => c.excludes(ukey))
    }

    /// The merge operator of the family it reads.
    pub(crate) fn merge_operator(&self) -> Option<&Arc<dyn crate::merge_operator::MergeOperator>> {
        on_cursor!(&self.it, c => c.merge_operator())
    }

    /// The order of the keys it yields (its family's, but over a family with timestamps).
    pub(crate) fn order(&self) -> &KeyOrder {
        on_cursor!(&self.it, c => c.order())
    }

    /// Whether its keys are versions' internal keys ([`RawCursor::yields_versions`]).
    pub(crate) fn yields_versions(&self) -> bool {
        on_cursor!(&self.it, c => c.yields_versions())
    }
}

impl RawCursor for DbIter {
    fn valid(&self) -> bool {
        DbIter::valid(self)
    }
    fn seek_to_first(&mut self) {
        DbIter::seek_to_first(self);
    }
    fn seek_to_last(&mut self) {
        DbIter::seek_to_last(self);
    }
    fn seek(&mut self, key: &[u8]) {
        DbIter::seek(self, key);
    }
    fn seek_for_prev(&mut self, key: &[u8]) {
        DbIter::seek_for_prev(self, key);
    }
    fn next(&mut self) {
        DbIter::next(self);
    }
    fn prev(&mut self) {
        DbIter::prev(self);
    }
    fn key(&self) -> &[u8] {
        DbIter::key(self)
    }
    fn value(&self) -> &[u8] {
        DbIter::value(self)
    }
    fn columns(&self) -> Vec<(&[u8], &[u8])> {
        DbIter::columns(self)
    }
    fn status(&self) -> Result<()> {
        DbIter::status(self)
    }
    fn internal_steps(&self) -> u64 {
        DbIter::internal_steps(self)
    }
    fn bounds(&self) -> (Option<&[u8]>, Option<&[u8]>) {
        DbIter::bounds(self)
    }
    fn excludes(&self, ukey: &[u8]) -> bool {
        DbIter::excludes(self, ukey)
    }
    fn set_bounds(&mut self, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) -> Result<()> {
        DbIter::set_bounds(self, lower, upper);
        Ok(())
    }
    fn merge_operator(&self) -> Option<&Arc<dyn crate::merge_operator::MergeOperator>> {
        DbIter::merge_operator(self)
    }
    fn order(&self) -> &KeyOrder {
        DbIter::order(self)
    }
    fn timestamp(&self) -> Option<&[u8]> {
        DbIter::valid(self).then_some(&[][..])
    }
}

/// A Rust iterator over `(key, value)` pairs (the `rocksdb` crate's `DBIterator`). An error
/// is yielded once, then the iteration ends.
///
/// It is double-ended: `next` walks from the mode's start in the mode's direction, and
/// `next_back` from the other end of the same range towards it (`.rev()` of an
/// `IteratorMode::Start` iterator walks from the last key down). The range is what `next`
/// alone would yield: for `From(k, Forward)`, the keys from `k` up; for `From(k, Reverse)`,
/// the keys up to `k`; within the read options' bounds and, with `prefix_same_as_start`, the
/// start's prefix. The two ends never yield a key twice: they stop where they meet. The back
/// end is a second cursor over the same view (same memtables, tables and sequence number),
/// made at the first `next_back`.
pub struct DbIterator {
    raw: DbRawIterator,
    /// Where the iterator was made, for `refresh`.
    origin: Option<Origin>,
    /// With `ReadOptions::tailing`: the last key the front end yielded, to go on after it
    /// once the DB has more.
    tail_last: Option<Vec<u8>>,
    direction: Direction,
    done: bool,
    /// What the back cursor is built from; `None` for an iterator that only reports an error.
    source: Option<IterSource>,
    back: Option<DbRawIterator>,
    back_done: bool,
    /// For `From(k, _)`: the back end yields nothing beyond `k` (below it when the front goes
    /// forward, above it when it goes backward).
    limit: Option<Vec<u8>>,
    /// With `prefix_same_as_start`: the prefix every key yielded must have (`Err(())`: the
    /// front found no key, so the range is empty).
    prefix: Option<std::result::Result<Vec<u8>, ()>>,
    /// The last key the back end yielded (the front end stops before it). The front end's
    /// last key needs no copy: the back end stops before the front cursor's current key,
    /// the next one the front would yield.
    last_back: Option<Box<[u8]>>,
}

pub(crate) fn position(raw: &mut DbRawIterator, mode: IteratorMode<'_>) -> Direction {
    match mode {
        IteratorMode::Start => {
            raw.seek_to_first();
            Direction::Forward
        }
        IteratorMode::End => {
            raw.seek_to_last();
            Direction::Reverse
        }
        IteratorMode::From(k, Direction::Forward) => {
            raw.seek(k);
            Direction::Forward
        }
        IteratorMode::From(k, Direction::Reverse) => {
            raw.seek_for_prev(k);
            Direction::Reverse
        }
    }
}

impl DbIterator {
    /// An iterator over `source` from `mode`.
    pub(crate) fn from_source(source: IterSource, mode: IteratorMode<'_>) -> Self {
        let raw = source.build();
        let mut it = DbIterator {
            raw,
            origin: None,
            direction: Direction::Forward,
            done: false,
            source: Some(source),
            back: None,
            back_done: false,
            limit: None,
            prefix: None,
            last_back: None,
            tail_last: None,
        };
        it.set_mode(mode);
        it
    }

    /// The iterator, able to `refresh` from `origin`.
    pub(crate) fn with_origin(mut self, origin: Origin) -> Self {
        self.origin = Some(origin);
        self
    }

    /// Re-reads the DB at its latest state (a snapshot the read options named is dropped)
    /// and starts again from `mode`. `NotSupported` for an iterator not made by a `Db`'s
    /// `iterator*` methods, `ShutdownInProgress` once the DB is closed.
    pub fn refresh(&mut self, mode: IteratorMode<'_>) -> Result<()> {
        let origin = self.origin.take().ok_or_else(|| {
            Error::NotSupported("refresh of an iterator not made by a Db's iterator".into())
        })?;
        let source = match origin.recapture() {
            Ok(s) => s,
            Err(e) => {
                self.origin = Some(origin);
                return Err(e);
            }
        };
        *self = DbIterator::from_source(source, mode).with_origin(origin);
        Ok(())
    }

    /// An iterator whose only item is `e` (a call given a bad family handle).
    pub(crate) fn failed(e: crate::error::Error) -> Self {
        DbIterator {
            raw: DbRawIterator::new(error_iter(e)),
            origin: None,
            direction: Direction::Forward,
            done: false,
            source: None,
            back: None,
            back_done: false,
            limit: None,
            prefix: None,
            last_back: None,
            tail_last: None,
        }
    }

    /// Repositions the iterator (both ends).
    pub fn set_mode(&mut self, mode: IteratorMode<'_>) {
        self.direction = position(&mut self.raw, mode);
        self.done = false;
        self.back = None;
        self.back_done = false;
        self.last_back = None;
        self.tail_last = None;
        // A history's keys are versions: the front's own position bounds the back end there.
        self.limit = match mode {
            IteratorMode::From(k, _) if !self.raw.yields_versions() => Some(k.to_vec()),
            IteratorMode::From(..) | IteratorMode::Start | IteratorMode::End => None,
        };
        self.prefix =
            self.source.as_ref().and_then(IterSource::active_prefix_extractor).map(
                |x| match mode {
                    IteratorMode::From(k, _) => Ok(x.prefix(k).to_vec()),
                    IteratorMode::Start | IteratorMode::End => {
                        self.raw.key().map(|k| x.prefix(k).to_vec()).ok_or(())
                    }
                },
            );
    }

    /// Whether this is a forward tailing iterator (`ReadOptions::tailing`) read from one end.
    fn tailing(&self) -> bool {
        self.direction == Direction::Forward
            && self.back.is_none()
            && self.origin.as_ref().is_some_and(|o| o.ro.tailing)
    }

    /// At the end of a tailing iterator: reads the DB's latest state and goes on after the
    /// last key yielded (or from the start). Whether that found more.
    fn tail(&mut self) -> bool {
        if !self.tailing() || self.raw.status().is_err() {
            return false;
        }
        let Some(Ok(source)) = self.origin.as_ref().map(Origin::recapture) else {
            return false;
        };
        let mut raw = source.build();
        match (&self.tail_last, &self.limit) {
            (Some(last), _) => {
                raw.seek(last);
                if raw.key() == Some(&last[..]) {
                    raw.next();
                }
            }
            (None, Some(from)) => raw.seek(from),
            (None, None) => raw.seek_to_first(),
        }
        if !raw.valid() {
            return false;
        }
        self.raw = raw;
        self.source = Some(source);
        true
    }

    /// The order of the keys it yields: the cursor's (over a family with timestamps, keys
    /// without them or versions, not the family's order of stored keys).
    fn order(&self) -> &KeyOrder {
        self.raw.order()
    }

    /// Whether the front end may yield `key` (it has not reached the back end's last key).
    fn front_allows(&self, key: &[u8]) -> bool {
        let o = self.order();
        match (&self.last_back, self.direction) {
            (None, _) => true,
            (Some(b), Direction::Forward) => o.lt(key, b),
            (Some(b), Direction::Reverse) => o.lt(b, key),
        }
    }

    /// Whether the back end may yield `key`: it has not passed the front cursor (the key the
    /// front end would yield next; none left: the range is used up) nor the start.
    fn back_allows(&self, key: &[u8]) -> bool {
        let forward = self.direction == Direction::Forward;
        let o = self.order();
        let before = |a: &[u8], b: &[u8]| if forward { o.lt(a, b) } else { o.lt(b, a) };
        match self.raw.key() {
            Some(f) if !self.done && !before(key, f) => {}
            _ => return false,
        }
        match &self.limit {
            Some(l) => !before(key, l),
            None => true,
        }
    }

    /// The back cursor, made and positioned on first use: opposite to the front, within the
    /// same bounds; with a prefix, bounded to the keys starting with it (the keys in those
    /// bounds whose extracted prefix differs are skipped by the caller).
    fn back_cursor(&mut self) -> Option<&mut DbRawIterator> {
        if self.back.is_none() {
            let source = self.source.as_ref()?;
            let mut ro = source.ro.clone();
            // The back cursor never takes a prefix of its own: its first key, the last of
            // the range, may have another prefix than the front's. Prefix bounds are byte
            // ranges: in another order the keys of a prefix need not lie between them, so
            // the back end then walks the whole range and the caller skips the keys of other
            // prefixes.
            ro.prefix_same_as_start = false;
            let bytewise = source.sv.version.order().is_bytewise();
            if let (Some(Ok(p)), true) = (&self.prefix, bytewise) {
                let lower = match ro.iterate_lower_bound.take() {
                    Some(l) if l.as_slice() > p.as_slice() => l,
                    _ => p.clone(),
                };
                ro.iterate_lower_bound = Some(lower);
                if let Some(succ) = crate::options::iterate_bounds::prefix_successor(p) {
                    ro.iterate_upper_bound = match ro.iterate_upper_bound.take() {
                        Some(u) if u < succ => Some(u),
                        _ => Some(succ),
                    };
                }
            }
            let mut raw = source.build_with(&ro);
            match self.direction {
                Direction::Forward => raw.seek_to_last(),
                Direction::Reverse => raw.seek_to_first(),
            }
            self.back = Some(raw);
        }
        self.back.as_mut()
    }

    /// Whether `key` has the range's prefix (always, without `prefix_same_as_start`).
    fn has_prefix(&self, key: &[u8]) -> bool {
        match (&self.prefix, self.source.as_ref().and_then(|s| s.prefix_extractor)) {
            (Some(Ok(p)), Some(x)) => x.prefix(key) == p.as_slice(),
            (Some(Err(())), _) => false,
            _ => true,
        }
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Box<[u8]>, Box<[u8]>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        loop {
            if let Some((k, v)) = self.raw.item() {
                if self.front_allows(k) {
                    let item = (Box::<[u8]>::from(k), Box::<[u8]>::from(v));
                    if self.tailing() {
                        self.tail_last = Some(item.0.to_vec());
                    }
                    match self.direction {
                        Direction::Forward => self.raw.next(),
                        Direction::Reverse => self.raw.prev(),
                    }
                    return Some(Ok(item));
                }
                break;
            }
            if !self.tail() {
                break;
            }
        }
        self.done = true;
        match self.raw.status() {
            Ok(()) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

impl DoubleEndedIterator for DbIterator {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.back_done {
            return None;
        }
        if self.source.is_none() || matches!(self.prefix, Some(Err(()))) {
            // Nothing to walk back over: an error-only iterator reports its error once.
            self.back_done = true;
            return if self.done {
                None
            } else {
                self.done = true;
                self.raw.status().err().map(Err)
            };
        }
        let forward = self.direction == Direction::Forward;
        loop {
            let back = self.back_cursor()?;
            let Some((k, v)) = back.item() else { break };
            let item = (Box::<[u8]>::from(k), Box::<[u8]>::from(v));
            if forward {
                back.prev();
            } else {
                back.next();
            }
            if !self.back_allows(&item.0) {
                break;
            }
            if !self.has_prefix(&item.0) {
                continue;
            }
            self.last_back = Some(item.0.clone());
            return Some(Ok(item));
        }
        self.back_done = true;
        match self.back.as_ref().map(DbRawIterator::status) {
            Some(Err(e)) => Some(Err(e)),
            _ => None,
        }
    }
}
