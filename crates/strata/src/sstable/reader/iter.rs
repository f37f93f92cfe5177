//! The table iterator: an index iterator choosing data blocks, and a block iterator over the
//! current one. Blocks come through the block cache, and misses are read through the
//! iterator's readahead (`sstable/readahead.rs`).
//!
//! Contract: the iterator owns its table, so it is `'static`. An error (a block that cannot be
//! read, a bad handle) makes it invalid and is its status until the next seek. Empty data
//! blocks are stepped over in both directions. With a global sequence number every key reads
//! as carrying it, and seek targets are translated into the stored order ([`TableIterator`]'s
//! `stored_target`).

use std::sync::Arc;

use super::index_iter::IndexIter;
use super::{remap_key, ReadBlockOptions, TableReader};
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::TRAILER_LEN;
use crate::sstable::block::BlockIter;
use crate::sstable::format::BLOCK_TRAILER_LEN;
use crate::sstable::readahead::{PlannedSpans, Readahead, ScanPlan};
use crate::types::SeqNo;

impl TableReader {
    /// [`TableReader::iter`], reading for the multi-range scan `plan` when given
    /// ([`TableIterator::plan_scan`]).
    pub(crate) fn iter_planned(
        self: &Arc<Self>,
        read: ReadBlockOptions,
        plan: Option<&ScanPlan>,
    ) -> TableIterator {
        let mut it = self.iter(read);
        if let Some(p) = plan {
            it.plan_scan(p);
        }
        it
    }

    /// A two-level iterator over the whole table.
    pub fn iter(self: &Arc<Self>, read: ReadBlockOptions) -> TableIterator {
        TableIterator {
            index: self.index_iter().unwrap_or_else(IndexIter::Failed),
            table: self.clone(),
            read,
            data: None,
            status: None,
            readahead: Readahead::with_file(read.readahead_size, &self.file),
            global: self.global_seqno,
            mapped: Vec::new(),
            target: Vec::new(),
        }
    }
}

/// Iterates a whole table: an index iterator choosing data blocks, and an iterator over the
/// current data block. Owns its table, so it is `'static`.
pub struct TableIterator {
    table: Arc<TableReader>,
    read: ReadBlockOptions,
    index: IndexIter,
    /// The current data block's iterator; kept across blocks to reuse its buffers.
    data: Option<BlockIter>,
    status: Option<Error>,
    readahead: Readahead,
    /// The table's global seqno (0: keys as stored) and the current key mapped to it.
    global: SeqNo,
    mapped: Vec<u8>,
    /// Scratch for seek targets translated into the stored order.
    target: Vec<u8>,
}

impl TableIterator {
    /// Plans the reads of a multi-range scan over this table (`readahead/planned.rs`): for
    /// each range, the data blocks from the one a seek to its start lands on through the
    /// first whose index key reaches its limit (where a forward walk meets the key that ends
    /// it), and for a reverse scan the block before them (where a backward walk does). The
    /// iterator is then unpositioned. An index that fails to read plans nothing more; the
    /// scan's own seeks report the error.
    pub(crate) fn plan_scan(&mut self, plan: &ScanPlan) {
        let mut blocks = Vec::new();
        // The current index entry's block, with its trailer.
        let block = |it: &Self| {
            let h = it.table.decode_handle(it.index.value(), it.index.block_offset()).ok()?;
            Some((h.offset, h.size + BLOCK_TRAILER_LEN as u64))
        };
        for (start, limit) in &plan.ranges {
            let seek = crate::key::lookup_key(start, SeqNo::MAX);
            self.index.seek(&seek);
            if plan.reverse && self.index.valid() {
                // Walking a range down ends on the entry before its start, which may lie in
                // the block before the range's first.
                self.index.prev();
                if self.index.valid() {
                    blocks.extend(block(self));
                    self.index.next();
                } else {
                    self.index.seek(&seek);
                }
            }
            while self.index.valid() {
                let Some(b) = block(self) else { break };
                blocks.push(b);
                let k = self.index.key();
                let separator = if self.table.user_key_index { k } else { crate::key::user_key(k) };
                if !self.table.order.lt(separator, limit) {
                    break;
                }
                self.index.next();
            }
        }
        self.invalidate_data();
        let spans = PlannedSpans::new(&blocks, plan);
        if plan.async_io {
            for &(start, end) in spans.spans() {
                if !self.table.file.prefetch(start, (end - start) as usize) {
                    break;
                }
            }
        }
        self.readahead.plan_scan(spans);
    }

    fn invalidate_data(&mut self) {
        if let Some(d) = &mut self.data {
            d.invalidate();
        }
    }

    fn fail(&mut self, e: Error) {
        if self.status.is_none() {
            self.status = Some(e);
        }
        self.invalidate_data();
    }

    /// Points `data` at the block named by the (valid) index entry; false on error.
    fn load_data_block(&mut self) -> bool {
        let handle = match self.table.decode_handle(self.index.value(), self.index.block_offset()) {
            Ok(h) => h,
            Err(e) => {
                self.fail(e);
                return false;
            }
        };
        if let Some(d) = &self.data {
            if d.block().file_offset() == handle.offset {
                return true;
            }
        }
        match self.table.read_data_block(handle, self.read, Some(&mut self.readahead)) {
            Ok(block) => {
                match &mut self.data {
                    Some(d) => d.set_block(block),
                    None => self.data = Some(block.iter()),
                }
                true
            }
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    /// After the data iterator ran off its block's end, moves to the first entry of the next
    /// non-empty block.
    fn skip_forward(&mut self) {
        self.skip_empty(true);
    }

    /// After the data iterator ran off its block's start, moves to the last entry of the
    /// previous non-empty block.
    fn skip_backward(&mut self) {
        self.skip_empty(false);
    }

    /// While the data iterator is exhausted (and has no error), steps the index one block
    /// `forward` (or back) and enters that block at its first (or last) entry.
    fn skip_empty(&mut self, forward: bool) {
        loop {
            match &self.data {
                Some(d) if d.valid() || d.has_error() => return,
                None => return,
                Some(_) => {}
            }
            if !self.index.valid() {
                return;
            }
            if forward {
                self.index.next();
            } else {
                self.index.prev();
            }
            if !self.index.valid() {
                self.invalidate_data();
                return;
            }
            if !self.load_data_block() {
                return;
            }
            if let Some(d) = &mut self.data {
                if forward {
                    d.seek_to_first();
                } else {
                    d.seek_to_last();
                }
            }
        }
    }

    /// Common start of every seek: clears errors; false when the index is exhausted or broken.
    fn position_index(&mut self) -> bool {
        if !self.index.valid() {
            self.invalidate_data();
            return false;
        }
        self.load_data_block()
    }

    /// Refreshes the mapped key after a move (global seqno tables only).
    fn remap(&mut self) {
        if self.global != SeqNo::ZERO && self.valid() {
            if let Some(d) = &self.data {
                remap_key(&mut self.mapped, d.key(), self.global);
            }
        }
    }

    /// The stored-order key to seek for mapped `target` `(u, s)`, and whether the stored
    /// entry of `u` must be skipped (forward) / passed over (backward): the entry of `u`
    /// reads as `(u, G)`, which sorts at or after `(u, s)` exactly when `G <= s`.
    /// Forward: with `G <= s` seek `(u, s)` (the stored `(u, 0)` is at or after it); else
    /// seek `(u, 0, lowest type)` and step past `u`. Backward: with `G >= s` seek-for-prev
    /// the last key of `u`; else the first key of `u`, which lands before it.
    fn stored_target(&mut self, target: &[u8], forward: bool) -> bool {
        let user = crate::key::user_key(target);
        let s = crate::key::trailer(target) >> 8;
        let g = self.global.0;
        self.target.clear();
        self.target.extend_from_slice(user);
        let (trailer, skip_user) = if forward {
            if g <= s {
                (crate::key::trailer(target), false)
            } else {
                (0, true)
            }
        } else if g >= s {
            (0, false)
        } else {
            (u64::MAX, false)
        };
        self.target.extend_from_slice(&trailer.to_le_bytes());
        skip_user
    }

    fn check_target(&mut self, target: &[u8]) -> bool {
        self.status = None;
        if target.len() < TRAILER_LEN {
            self.fail(Error::InvalidArgument(format!(
                "seek target {target:?} is not an internal key"
            )));
            return false;
        }
        true
    }
}

impl InternalIterator for TableIterator {
    #[inline]
    fn valid(&self) -> bool {
        self.data.as_ref().is_some_and(BlockIter::valid)
    }

    fn seek_to_first(&mut self) {
        self.status = None;
        self.index.seek_to_first();
        if self.position_index() {
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
            self.skip_forward();
        }
        self.remap();
    }

    fn seek_to_last(&mut self) {
        self.status = None;
        self.index.seek_to_last();
        if self.position_index() {
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
            self.skip_backward();
        }
        self.remap();
    }

    fn seek(&mut self, target: &[u8]) {
        if !self.check_target(target) {
            return;
        }
        if self.global != SeqNo::ZERO {
            let skip_user = self.stored_target(target, true);
            let stored = std::mem::take(&mut self.target);
            self.seek_stored(&stored);
            if skip_user
                && self.valid()
                && crate::key::user_key(self.key()) == crate::key::user_key(target)
            {
                self.next();
            }
            self.target = stored;
            return;
        }
        self.seek_stored(target);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        if !self.check_target(target) {
            return;
        }
        if self.global != SeqNo::ZERO {
            self.stored_target(target, false);
            let stored = std::mem::take(&mut self.target);
            self.seek_for_prev_stored(&stored);
            self.target = stored;
            return;
        }
        self.seek_for_prev_stored(target);
    }

    #[inline]
    fn next(&mut self) {
        debug_assert!(self.valid());
        if let Some(d) = &mut self.data {
            d.next();
            if !d.valid() {
                self.skip_forward();
            }
        }
        self.remap();
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        if let Some(d) = &mut self.data {
            d.prev();
            if !d.valid() {
                self.skip_backward();
            }
        }
        self.remap();
    }

    #[inline]
    fn key(&self) -> &[u8] {
        if self.global != SeqNo::ZERO {
            return &self.mapped;
        }
        match &self.data {
            Some(d) => d.key(),
            None => &[],
        }
    }

    #[inline]
    fn value(&self) -> &[u8] {
        match &self.data {
            Some(d) => d.value(),
            None => &[],
        }
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.status {
            return Err(e.duplicate());
        }
        let path = &self.table.path;
        self.index.status_in(path)?;
        match &self.data {
            Some(d) => d.status().map_err(|e| e.with_file(path)),
            None => Ok(()),
        }
    }
}

impl TableIterator {
    /// `seek` in the stored order (target checked).
    fn seek_stored(&mut self, target: &[u8]) {
        self.index.seek(target);
        if self.position_index() {
            if let Some(d) = &mut self.data {
                d.seek(target);
            }
            self.skip_forward();
        }
        self.remap();
    }

    /// `seek_for_prev` in the stored order (target checked).
    fn seek_for_prev_stored(&mut self, target: &[u8]) {
        // The first block whose separator is >= target is the last one that can hold a key
        // <= target; past every separator, only the last block can.
        self.index.seek(target);
        if !self.index.valid() {
            if self.index.has_error() {
                self.invalidate_data();
            } else {
                self.seek_to_last();
            }
            return;
        }
        if self.position_index() {
            if let Some(d) = &mut self.data {
                d.seek_for_prev(target);
            }
            self.skip_backward();
        }
        self.remap();
    }
}
