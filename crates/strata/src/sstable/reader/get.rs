//! Point lookups in one table: the filter check ([`TableReader::may_contain`]) and `get`, which
//! seeks the index to the lookup key and hands out entries from there on, across data blocks,
//! until the caller stops or the table ends.
//!
//! Contract: `get` does not consult the filter (the DB checks `may_contain` first, once per
//! table, counting the lookups the filter saves); it reads data blocks through the block cache
//! and never reads ahead. A lookup allocates no key buffer of its own (thread-local buffers,
//! taken for the lookup and put back), except a lookup nested in another's callback. A table
//! with a global sequence number hands out keys carrying it, and has nothing for a lookup
//! below it.

use std::cell::Cell;
use std::sync::Arc;

use super::{remap_key, MetaKind, MetaUse, ReadBlockOptions, TableReader};
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{lookup_key, TRAILER_LEN};
use crate::sstable::block::{Block, BlockIter};
use crate::types::SeqNo;

/// Key buffers larger than this are freed after a `get` rather than kept for the next one.
const MAX_REUSED_KEY_BUFFER: usize = 4096;

thread_local! {
    /// Key buffers for the index and data block iterators of `get`, so a point lookup does
    /// not allocate. A nested `get` (from inside the callback) finds them taken and allocates.
    static GET_KEY_BUFFERS: Cell<(Vec<u8>, Vec<u8>)> =
        const { Cell::new((Vec::new(), Vec::new())) };
}

/// A point lookup's consumer of (block, internal key, value), as `get_in_blocks` hands them
/// out; returns whether to keep reading.
type EntryInBlock<'a> = dyn FnMut(&Arc<Block>, &[u8], &[u8]) -> bool + 'a;

impl TableReader {
    /// Bloom check on a user key; false means the table holds no entry for it. Errors come
    /// from reading a filter (or top-level index) block that is not kept in memory.
    #[inline]
    pub fn may_contain(&self, user_key: &[u8]) -> Result<bool> {
        if let Some(f) = &self.held_filter {
            return Ok(f.may_contain(user_key));
        }
        self.may_contain_slow(user_key)
    }

    fn may_contain_slow(&self, user_key: &[u8]) -> Result<bool> {
        if let Some(m) = &self.filter {
            let b = self.meta(m, MetaKind::Filter)?;
            return Ok(b.filter().is_none_or(|f| f.may_contain(user_key)));
        }
        if !self.partitioned_filter {
            return Ok(true);
        }
        // The first partition that can hold `user_key` holds it in its filter if the table
        // holds it at all (partitioned.rs); past the last separator the table cannot.
        let mut top = BlockIter::new(self.index_block()?);
        top.seek(&lookup_key(user_key, SeqNo::MAX));
        if !top.valid() {
            top.status().map_err(|e| e.with_file(&self.path))?;
            return Ok(false);
        }
        let Some(fh) = self.decode_top(&top)?.1 else { return Ok(true) };
        let b = self.meta_block(fh, MetaKind::Filter, MetaUse::Cache)?;
        Ok(b.filter().is_none_or(|f| f.may_contain(user_key)))
    }

    /// Point lookup: seeks to the first entry >= `lookup_ikey` and calls `f(ikey, value)` for
    /// it and the following entries (crossing data blocks) until `f` returns false or the table
    /// ends. The Bloom filter is not consulted here: callers check [`Self::may_contain`] first
    /// (the DB does, once per table, counting the lookups the filter saves).
    #[allow(clippy::trivially_copy_pass_by_ref)] // the signature the DB's read path codes against
    #[cfg_attr(not(any(test, feature = "fuzzing")), allow(dead_code))]
    pub fn get(
        &self,
        lookup_ikey: &[u8],
        read: &ReadBlockOptions,
        mut f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        self.get_in_blocks(lookup_ikey, read, |_, k, v| f(k, v))
    }

    /// [`TableReader::get`], also handing `f` the data block each entry lies in (its value is
    /// a sub-slice of [`Block::bytes`]; so is its key, unless the table has a global sequence
    /// number, whose keys are rewritten to carry it).
    #[inline]
    pub fn get_in_blocks(
        &self,
        lookup_ikey: &[u8],
        read: &ReadBlockOptions,
        mut f: impl FnMut(&Arc<Block>, &[u8], &[u8]) -> bool,
    ) -> Result<()> {
        if lookup_ikey.len() < TRAILER_LEN {
            return Err(Error::InvalidArgument(format!(
                "lookup key {lookup_ikey:?} is not an internal key"
            )));
        }
        if self.global_seqno != SeqNo::ZERO {
            return self.get_remapped(lookup_ikey, read, &mut f);
        }
        // By value: a `&mut` here would make every entry a call through `&mut F`.
        self.get_stored(lookup_ikey, read, f)
    }

    /// [`Self::get_in_blocks`] for a table with a global sequence number (an ingested one):
    /// the table's one entry for the key reads as that number, so a lookup below it sees
    /// nothing here; at or above it, the stored entry (at 0) is found and its key remapped.
    /// Out of line and not generic: the common path stays small.
    #[inline(never)]
    fn get_remapped(
        &self,
        lookup_ikey: &[u8],
        read: &ReadBlockOptions,
        f: &mut EntryInBlock<'_>,
    ) -> Result<()> {
        let global = self.global_seqno;
        if crate::key::trailer(lookup_ikey) >> 8 < global.0 {
            return Ok(());
        }
        let mut mapped = Vec::new();
        self.get_stored(lookup_ikey, read, &mut |b: &Arc<Block>, k: &[u8], v: &[u8]| {
            remap_key(&mut mapped, k, global);
            f(b, &mapped, v)
        })
    }

    /// `get` over the entries as stored.
    #[inline]
    fn get_stored(
        &self,
        lookup_ikey: &[u8],
        read: &ReadBlockOptions,
        mut f: impl FnMut(&Arc<Block>, &[u8], &[u8]) -> bool,
    ) -> Result<()> {
        let index_block = self.index_block()?;
        // One thread-local access for the whole lookup: the buffers are taken out of the cell
        // (a nested `get` from `f` finds it empty) and put back at the end.
        GET_KEY_BUFFERS.with(|cell| {
            let (index_buf, data_buf) = cell.take();
            let mut index = BlockIter::with_key_buffer(index_block, index_buf);
            let mut data_buf = Some(data_buf);
            let mut data: Option<BlockIter> = None;
            let r = if self.partitioned {
                self.get_partitioned(
                    &mut index,
                    &mut data,
                    &mut data_buf,
                    lookup_ikey,
                    *read,
                    &mut f,
                )
            } else {
                index.seek(lookup_ikey);
                self.get_with(&mut index, &mut data, &mut data_buf, lookup_ikey, *read, &mut f)
                    .map(|_| ())
            };
            let data_buf = data.map(BlockIter::into_key_buffer).or(data_buf).unwrap_or_default();
            let index_buf = index.into_key_buffer();
            if index_buf.capacity() <= MAX_REUSED_KEY_BUFFER
                && data_buf.capacity() <= MAX_REUSED_KEY_BUFFER
            {
                cell.set((index_buf, data_buf));
            }
            r
        })
    }

    /// `get` over a partitioned index: `top` is the top-level index; each partition from the
    /// one holding `lookup_ikey` on is scanned until `f` stops.
    fn get_partitioned(
        &self,
        top: &mut BlockIter,
        data: &mut Option<BlockIter>,
        data_buf: &mut Option<Vec<u8>>,
        lookup_ikey: &[u8],
        read: ReadBlockOptions,
        f: &mut impl FnMut(&Arc<Block>, &[u8], &[u8]) -> bool,
    ) -> Result<()> {
        top.seek(lookup_ikey);
        let mut first = true;
        while top.valid() {
            let mut part = BlockIter::new(self.index_partition_at(top)?);
            if first {
                part.seek(lookup_ikey);
                first = false;
            } else {
                part.seek_to_first();
            }
            if self.get_with(&mut part, data, data_buf, lookup_ikey, read, f)? {
                return Ok(());
            }
            top.next();
        }
        top.status().map_err(|e| e.with_file(&self.path))
    }

    /// Scans data blocks from the (positioned) `index` entry on; true when `f` stopped.
    #[inline]
    fn get_with(
        &self,
        index: &mut BlockIter,
        data: &mut Option<BlockIter>,
        data_buf: &mut Option<Vec<u8>>,
        lookup_ikey: &[u8],
        read: ReadBlockOptions,
        f: &mut impl FnMut(&Arc<Block>, &[u8], &[u8]) -> bool,
    ) -> Result<bool> {
        while index.valid() {
            let handle = self.decode_handle(index.value(), index.block().file_offset())?;
            let block = self.read_data_block(handle, read, None)?;
            let it = match data.as_mut() {
                Some(it) => {
                    it.set_block(block);
                    it.seek_to_first();
                    it
                }
                None => {
                    let buf = data_buf.take().unwrap_or_default();
                    let it = data.insert(BlockIter::with_key_buffer(block, buf));
                    it.seek(lookup_ikey);
                    it
                }
            };
            while it.valid() {
                if !f(it.block(), it.key(), it.value()) {
                    return Ok(true);
                }
                it.next();
            }
            it.status().map_err(|e| e.with_file(&self.path))?;
            index.next();
        }
        index.status().map_err(|e| e.with_file(&self.path))?;
        Ok(false)
    }
}
