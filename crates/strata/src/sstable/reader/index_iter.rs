//! The index iterators: the entries of a table's index (separator -> data block handle) as
//! one sequence, whichever the index's layout: one index block, or a partitioned index's
//! top level over its partitions, loaded through the block cache as the iterator moves
//! (layout in `sstable/partitioned.rs`).
//!
//! Contract: an index that could not be read gives an iterator that is never valid and whose
//! status is the error; errors name the table's path.

use std::path::Path;
use std::sync::Arc;

use super::TableReader;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::sstable::block::BlockIter;

impl TableReader {
    /// An iterator over the index entries (data block handles), partitioned or not.
    pub(super) fn index_iter(self: &Arc<Self>) -> Result<IndexIter> {
        let top = self.index_block()?.iter();
        Ok(if self.partitioned {
            IndexIter::Partitioned(Box::new(PartitionedIndexIter::new(self.clone(), top)))
        } else {
            IndexIter::Single(top)
        })
    }
}

/// The index entries of a table, as one sequence whichever the index's layout.
pub(super) enum IndexIter {
    Single(BlockIter),
    Partitioned(Box<PartitionedIndexIter>),
    /// The index could not be read (a block read through the cache failed): never valid,
    /// the error is its status.
    Failed(Error),
}

impl IndexIter {
    pub(super) fn valid(&self) -> bool {
        match self {
            IndexIter::Single(i) => i.valid(),
            IndexIter::Partitioned(i) => i.valid(),
            IndexIter::Failed(_) => false,
        }
    }

    pub(super) fn key(&self) -> &[u8] {
        match self {
            IndexIter::Single(i) => i.key(),
            IndexIter::Partitioned(i) => i.key(),
            IndexIter::Failed(_) => &[],
        }
    }

    pub(super) fn value(&self) -> &[u8] {
        match self {
            IndexIter::Single(i) => i.value(),
            IndexIter::Partitioned(i) => i.value(),
            IndexIter::Failed(_) => &[],
        }
    }

    /// The file offset of the index block holding the current entry.
    pub(super) fn block_offset(&self) -> u64 {
        match self {
            IndexIter::Single(i) => i.block().file_offset(),
            IndexIter::Partitioned(i) => i.block_offset(),
            IndexIter::Failed(_) => 0,
        }
    }

    pub(super) fn has_error(&self) -> bool {
        match self {
            IndexIter::Single(i) => i.has_error(),
            IndexIter::Partitioned(i) => i.has_error(),
            IndexIter::Failed(_) => true,
        }
    }

    pub(super) fn seek_to_first(&mut self) {
        match self {
            IndexIter::Single(i) => i.seek_to_first(),
            IndexIter::Partitioned(i) => i.seek_to_first(),
            IndexIter::Failed(_) => {}
        }
    }

    pub(super) fn seek_to_last(&mut self) {
        match self {
            IndexIter::Single(i) => i.seek_to_last(),
            IndexIter::Partitioned(i) => i.seek_to_last(),
            IndexIter::Failed(_) => {}
        }
    }

    pub(super) fn seek(&mut self, target: &[u8]) {
        match self {
            IndexIter::Single(i) => i.seek(target),
            IndexIter::Partitioned(i) => i.seek(target),
            IndexIter::Failed(_) => {}
        }
    }

    pub(super) fn next(&mut self) {
        match self {
            IndexIter::Single(i) => i.next(),
            IndexIter::Partitioned(i) => i.next(),
            IndexIter::Failed(_) => {}
        }
    }

    pub(super) fn prev(&mut self) {
        match self {
            IndexIter::Single(i) => i.prev(),
            IndexIter::Partitioned(i) => i.prev(),
            IndexIter::Failed(_) => {}
        }
    }

    /// The status, errors naming the table at `path`.
    pub(super) fn status_in(&self, path: &Path) -> Result<()> {
        match self {
            IndexIter::Single(i) => i.status().map_err(|e| e.with_file(path)),
            IndexIter::Partitioned(i) => i.status(),
            IndexIter::Failed(e) => Err(e.duplicate()),
        }
    }
}

/// An iterator over the entries of every index partition in order: the index of a version 2
/// table, seen as one index. Partitions are loaded (through the block cache) as it moves.
pub(super) struct PartitionedIndexIter {
    table: Arc<TableReader>,
    top: BlockIter,
    /// The current partition's iterator (reused across partitions).
    part: Option<BlockIter>,
    status: Option<Error>,
}

impl PartitionedIndexIter {
    pub(crate) fn new(table: Arc<TableReader>, top: BlockIter) -> Self {
        PartitionedIndexIter { table, top, part: None, status: None }
    }

    fn invalidate_part(&mut self) {
        if let Some(p) = &mut self.part {
            p.invalidate();
        }
    }

    /// Points `part` at the partition named by the (valid) top-level entry; false on error.
    fn load_part(&mut self) -> bool {
        let loaded = self.table.index_partition_at(&self.top);
        match loaded {
            Ok(block) => {
                if let Some(p) = &self.part {
                    if Arc::ptr_eq(p.block(), &block) {
                        return true;
                    }
                }
                match &mut self.part {
                    Some(p) => p.set_block(block),
                    None => self.part = Some(BlockIter::new(block)),
                }
                true
            }
            Err(e) => {
                if self.status.is_none() {
                    self.status = Some(e);
                }
                self.invalidate_part();
                false
            }
        }
    }

    /// While the partition iterator is exhausted (without error), steps the top level and
    /// enters the next (or previous) partition at its first (or last) entry.
    fn skip_empty(&mut self, forward: bool) {
        loop {
            match &self.part {
                Some(p) if p.valid() || p.has_error() => return,
                None => return,
                Some(_) => {}
            }
            if !self.top.valid() {
                return;
            }
            if forward {
                self.top.next();
            } else {
                self.top.prev();
            }
            if !self.top.valid() {
                self.invalidate_part();
                return;
            }
            if !self.load_part() {
                return;
            }
            if let Some(p) = &mut self.part {
                if forward {
                    p.seek_to_first();
                } else {
                    p.seek_to_last();
                }
            }
        }
    }

    /// Enters the partition the top level is at, positioned by `pos`; then skips empty ones.
    fn enter(&mut self, forward: bool, pos: impl FnOnce(&mut BlockIter)) {
        if !self.top.valid() {
            self.invalidate_part();
            return;
        }
        if !self.load_part() {
            return;
        }
        if let Some(p) = &mut self.part {
            pos(p);
        }
        self.skip_empty(forward);
    }

    pub(crate) fn valid(&self) -> bool {
        self.part.as_ref().is_some_and(BlockIter::valid)
    }

    pub(crate) fn key(&self) -> &[u8] {
        self.part.as_ref().map_or(&[], BlockIter::key)
    }

    pub(crate) fn value(&self) -> &[u8] {
        self.part.as_ref().map_or(&[], BlockIter::value)
    }

    /// The current partition's file offset (for errors about its entries).
    pub(crate) fn block_offset(&self) -> u64 {
        self.part.as_ref().map_or(0, |p| p.block().file_offset())
    }

    pub(crate) fn has_error(&self) -> bool {
        self.status.is_some()
            || self.top.has_error()
            || self.part.as_ref().is_some_and(BlockIter::has_error)
    }

    pub(crate) fn seek_to_first(&mut self) {
        self.status = None;
        self.top.seek_to_first();
        self.enter(true, BlockIter::seek_to_first);
    }

    pub(crate) fn seek_to_last(&mut self) {
        self.status = None;
        self.top.seek_to_last();
        self.enter(false, BlockIter::seek_to_last);
    }

    pub(crate) fn seek(&mut self, target: &[u8]) {
        self.status = None;
        self.top.seek(target);
        self.enter(true, |p| p.seek(target));
    }

    pub(crate) fn next(&mut self) {
        if let Some(p) = &mut self.part {
            p.next();
        }
        self.skip_empty(true);
    }

    pub(crate) fn prev(&mut self) {
        if let Some(p) = &mut self.part {
            p.prev();
        }
        self.skip_empty(false);
    }

    pub(crate) fn status(&self) -> Result<()> {
        if let Some(e) = &self.status {
            return Err(e.duplicate());
        }
        let path = self.table.path();
        self.top.status().map_err(|e| e.with_file(path))?;
        match &self.part {
            Some(p) => p.status().map_err(|e| e.with_file(path)),
            None => Ok(()),
        }
    }
}
