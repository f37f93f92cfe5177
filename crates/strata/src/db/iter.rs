//! The public iterators: `DbRawIterator` (cursor moves) and `DbIterator` (a Rust `Iterator`),
//! both over a [`DbIter`] built from the memtables and tables of one super version, which the
//! iterator pins so flushes and compactions never pull data from under it.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{Cfd, DbInner, SuperVersion};
use crate::error::Result;
use crate::iterator::db_iter::{DbIter, DbIterOptions, RangeDelView};
use crate::iterator::merging::MergingIterator;
use crate::iterator::InternalIterator;
use crate::options::ReadOptions;
use crate::range_del::FragmentedTombstones;
use crate::sstable::ReadBlockOptions;
use crate::types::SeqNo;
use crate::version::level_iter::LevelIterator;

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

pub(crate) fn new_db_iter(inner: &Arc<DbInner>, cfd: &Cfd, ro: &ReadOptions) -> DbIter {
    let sv = cfd.current_super_version();
    let sequence = ro
        .snapshot
        .as_ref()
        .map_or_else(|| SeqNo(inner.visible_sequence.load(Ordering::Acquire)), |s| s.seq());
    let rb = ReadBlockOptions {
        verify_checksums: ro.verify_checksums,
        fill_cache: ro.fill_cache,
        readahead_size: ro.readahead_size,
    };
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
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
                match inner.table_cache.reader_at(f.number, &f.pinned, 0) {
                    Ok(t) => children.push(Box::new(t.iter(rb))),
                    Err(e) => open_error = Some(e),
                }
            }
        } else {
            children.push(Box::new(LevelIterator::new(
                files.clone(),
                inner.table_cache.clone(),
                rb,
            )));
        }
    }
    // Children: 0 = active memtable, 1.. = immutables newest first, then the tables.
    let mut lists = Vec::new();
    for (i, m) in std::iter::once(&sv.mem).chain(sv.imm.iter()).enumerate() {
        if let Some(f) = m.fragmented_range_tombstones() {
            lists.push((f, i));
        }
    }
    if open_error.is_none() {
        match version_range_dels(inner, &sv) {
            Ok(f) => lists.push((f, 1 + sv.imm.len())),
            Err(e) => open_error = Some(e),
        }
    }
    let merged: Box<dyn InternalIterator> = match open_error {
        Some(e) => Box::new(crate::iterator::ErrorIterator::new(e)),
        None => Box::new(MergingIterator::new(children)),
    };
    let prefix_extractor = if ro.prefix_same_as_start { cfd.opts.prefix_extractor } else { None };
    DbIter::new(
        merged,
        DbIterOptions {
            sequence,
            merge_operator: cfd.opts.merge_operator.clone(),
            lower_bound: ro.iterate_lower_bound.clone(),
            upper_bound: ro.iterate_upper_bound.clone(),
            prefix_extractor,
            pin: Some(sv),
            range_dels: Some(RangeDelView::new(lists)),
        },
    )
}

/// An iterator that yields nothing and reports `e` (a call given a bad family handle).
pub(crate) fn error_iter(e: crate::error::Error) -> DbIter {
    DbIter::new(
        Box::new(crate::iterator::ErrorIterator::new(e)),
        DbIterOptions {
            sequence: SeqNo::ZERO,
            merge_operator: None,
            lower_bound: None,
            upper_bound: None,
            prefix_extractor: None,
            pin: None,
            range_dels: None,
        },
    )
}

/// The range tombstones of every table of the super version's version, sources numbered like
/// the iterator's table children: each L0 file, then each non-empty level. Cached in the
/// super version.
fn version_range_dels(inner: &DbInner, sv: &SuperVersion) -> Result<Arc<FragmentedTombstones>> {
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
            let t = inner.table_cache.reader(f.number, &f.pinned)?;
            all.extend(t.range_tombstones().iter().map(|r| (r.clone(), source)));
            if level == 0 {
                source += 1;
            }
        }
        if level > 0 {
            source += 1;
        }
    }
    let f = Arc::new(FragmentedTombstones::new(all));
    Ok(sv.version_range_dels.get_or_init(|| f).clone())
}

/// A cursor over the DB (the `rocksdb` crate's `DBRawIterator`). It starts unpositioned:
/// call a seek first.
pub struct DbRawIterator {
    it: DbIter,
}

impl DbRawIterator {
    pub(crate) fn new(it: DbIter) -> Self {
        DbRawIterator { it }
    }

    /// Whether the cursor is at an entry.
    pub fn valid(&self) -> bool {
        self.it.valid()
    }

    /// Positions at the first key (at or after the lower bound).
    pub fn seek_to_first(&mut self) {
        self.it.seek_to_first();
    }

    /// Positions at the last key (before the upper bound).
    pub fn seek_to_last(&mut self) {
        self.it.seek_to_last();
    }

    /// Positions at the first key >= `key`.
    pub fn seek(&mut self, key: impl AsRef<[u8]>) {
        self.it.seek(key.as_ref());
    }

    /// Positions at the last key <= `key`.
    pub fn seek_for_prev(&mut self, key: impl AsRef<[u8]>) {
        self.it.seek_for_prev(key.as_ref());
    }

    /// Moves to the next key; does nothing when not valid.
    pub fn next(&mut self) {
        if self.it.valid() {
            self.it.next();
        }
    }

    /// Moves to the previous key; does nothing when not valid.
    pub fn prev(&mut self) {
        if self.it.valid() {
            self.it.prev();
        }
    }

    /// The current key, or `None` when not valid.
    pub fn key(&self) -> Option<&[u8]> {
        self.it.valid().then(|| self.it.key())
    }

    /// The current value, or `None` when not valid.
    pub fn value(&self) -> Option<&[u8]> {
        self.it.valid().then(|| self.it.value())
    }

    /// The current key and value, or `None` when not valid.
    pub fn item(&self) -> Option<(&[u8], &[u8])> {
        self.it.valid().then(|| (self.it.key(), self.it.value()))
    }

    /// The first error met; an iterator that stopped early because of one is not valid.
    pub fn status(&self) -> Result<()> {
        self.it.status()
    }

    /// Internal entries examined since the iterator was created (RocksDB's perf context
    /// `internal_key_skipped_count` plus the entries returned): how much work hidden entries
    /// cost. Range-deleted spans of older sources are jumped over, not counted per key.
    pub fn internal_steps(&self) -> u64 {
        self.it.internal_steps()
    }
}

/// A Rust iterator over `(key, value)` pairs (the `rocksdb` crate's `DBIterator`). An error
/// is yielded once, then the iteration ends.
pub struct DbIterator {
    raw: DbRawIterator,
    direction: Direction,
    done: bool,
}

fn position(raw: &mut DbRawIterator, mode: IteratorMode<'_>) -> Direction {
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
    pub(crate) fn new(mut raw: DbRawIterator, mode: IteratorMode<'_>) -> Self {
        let direction = position(&mut raw, mode);
        DbIterator { raw, direction, done: false }
    }

    /// Repositions the iterator.
    pub fn set_mode(&mut self, mode: IteratorMode<'_>) {
        self.direction = position(&mut self.raw, mode);
        self.done = false;
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Box<[u8]>, Box<[u8]>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if let Some((k, v)) = self.raw.item() {
            let item = (Box::from(k), Box::from(v));
            match self.direction {
                Direction::Forward => self.raw.next(),
                Direction::Reverse => self.raw.prev(),
            }
            return Some(Ok(item));
        }
        self.done = true;
        match self.raw.status() {
            Ok(()) => None,
            Err(e) => Some(Err(e)),
        }
    }
}
