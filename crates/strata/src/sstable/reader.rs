//! Reads a table file (layout in [`super::format`], partitioned index in
//! [`super::partitioned`]).
//!
//! `open` reads and verifies (always, whatever the read options say) the footer, the metaindex,
//! the index, the filter, the range tombstones and the properties. Where the index and filter
//! live afterwards is [`MetaBlockOptions`]'s choice: kept by the reader for its life (not
//! charged to the block cache, the default), or read through the block cache on each use
//! (charged, at high priority), optionally pinned (held by the reader and charged). The
//! partitions of a partitioned index or filter always go through the block cache (or the
//! file, without one). Data blocks go through the block cache. Every error names the table's
//! path and the offset of the damaged structure.
//!
//! A table ingested as an external file stores every entry (and range tombstone) at sequence
//! number 0; the DB gives it a *global sequence number* G (recorded in the MANIFEST, not in
//! the file). With [`TableReader::set_global_seqno`], the reader presents each entry as
//! `(user key, G, type)`: `get`, the iterator (keys, seeks against the mapped order) and the
//! range tombstones all see G. This is sound because such a table holds each user key at
//! most once, so the mapping keeps its entries in order. The block cache holds blocks as
//! stored; the mapping is applied as entries are read.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cache::{CacheKey, Priority};
use crate::env::RandomAccessFile;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{lookup_key, make_internal_key, TRAILER_LEN};
use crate::sstable::{Cache, CacheAccess};
use crate::types::{SeqNo, ValueType};
use crate::util::checksum::ChecksumType;

use super::block::{Block, BlockIter};
use super::filter::BloomFilter;
use super::format::{
    read_block, BlockHandle, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN, FORMAT_VERSION_PARTITIONED,
    FORMAT_VERSION_USER_KEY_INDEX,
};
use super::metaindex::{MetaIndex, FILTER_BLOCK, PROPERTIES_BLOCK, RANGE_DELETION_BLOCK};
use super::partitioned::{decode_top_entry, PartitionedIndexIter};
use super::properties::TableProperties;
use super::readahead::{Readahead, ScanStats};
use crate::range_del::{decode_block, FragmentedTombstones, RangeTombstone};

/// Key buffers larger than this are freed after a `get` rather than kept for the next one.
const MAX_REUSED_KEY_BUFFER: usize = 4096;

/// Set in the block-cache key of a filter block: filters are cached as [`Block::from_filter`],
/// which has no entries, so no block handle (offsets are below 2^63, checked before a lookup)
/// can ever find one where it expects entries.
const FILTER_KEY_BIT: u64 = 1 << 63;

thread_local! {
    /// Key buffers for the index and data block iterators of `get`, so a point lookup does
    /// not allocate. A nested `get` (from inside the callback) finds them taken and allocates.
    static GET_KEY_BUFFERS: Cell<(Vec<u8>, Vec<u8>)> =
        const { Cell::new((Vec::new(), Vec::new())) };
}

/// How a read treats data blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadBlockOptions {
    /// Verify block checksums on reads from the file. Default true.
    pub verify_checksums: bool,
    /// Insert blocks read from the file into the block cache. Default true; scans that should
    /// not evict the working set turn it off.
    pub fill_cache: bool,
    /// An iterator's readahead (`readahead.rs`): 0 (the default) reads ahead automatically
    /// once it scans forward; otherwise every read from the file takes at least this many
    /// bytes. Point lookups never read ahead.
    pub readahead_size: usize,
}

impl Default for ReadBlockOptions {
    fn default() -> Self {
        ReadBlockOptions { verify_checksums: true, fill_cache: true, readahead_size: 0 }
    }
}

/// Where a table's index and filter blocks live (RocksDB's `BlockBasedTableOptions` of the same
/// names; `Options` documents each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaBlockOptions {
    /// Read the index and filter through the block cache (charged) instead of keeping them.
    pub cache_index_and_filter_blocks: bool,
    /// ... at high priority.
    pub high_priority: bool,
    /// Keep them anyway, charged to the cache (the caller decides: L0 tables with
    /// `pin_l0_filter_and_index_blocks_in_cache`).
    pub pin: bool,
    /// Keep the top level of a partitioned index.
    pub pin_top_level: bool,
}

impl Default for MetaBlockOptions {
    fn default() -> Self {
        MetaBlockOptions {
            cache_index_and_filter_blocks: false,
            high_priority: true,
            pin: false,
            pin_top_level: true,
        }
    }
}

/// A metadata block (index, top-level index or filter) of a table.
enum Meta {
    /// Kept for the reader's life.
    Held(Arc<Block>),
    /// Read through the block cache on each use.
    Cached(BlockHandle),
}

/// Which kind of metadata block: how to parse it and how to key it in the cache.
#[derive(Clone, Copy, PartialEq, Eq)]
enum MetaKind {
    Index,
    Filter,
}

/// What becomes of a metadata block [`TableReader::meta_block`] reads from the file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum MetaUse {
    /// Inserted into the block cache, for the reads to come.
    Cache,
    /// Held by the reader (not inserted), for the reads to come.
    Hold,
    /// Walked once in order and dropped (`uncache`): an index block gets no seek hints.
    Scan,
}

/// An open table.
pub struct TableReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    cache_id: u64,
    block_cache: Option<CacheAccess>,
    checksum: ChecksumType,
    /// Blocks must end (trailer included) at or before this offset: the footer's start.
    blocks_end: u64,
    /// The index, or (format version 2) the top-level index.
    index: Meta,
    /// Whether `index` is a top-level index over partitions.
    partitioned: bool,
    /// Whether the index block's keys are user keys (format version 3).
    user_key_index: bool,
    /// The table's full filter; `None` without one or with partitioned filters.
    filter: Option<Meta>,
    /// The filter is partitioned: each top-level entry names its partition's filter.
    partitioned_filter: bool,
    /// The held full filter's bits (shared with `filter`'s block): a probe reads them without
    /// going through the block.
    held_filter: Option<BloomFilter>,
    meta_priority: Priority,
    /// Bytes of metadata blocks this reader keeps outside the block cache.
    held_bytes: usize,
    /// Bytes of metadata blocks this reader keeps pinned (also charged to the block cache).
    pinned_bytes: usize,
    properties: TableProperties,
    /// The `strata.rangedel` block, as stored and fragmented (source 0).
    range_dels: Vec<RangeTombstone>,
    fragmented_range_dels: Option<Arc<FragmentedTombstones>>,
    /// Sequence number entries read as (an ingested file's global seqno); 0 = as stored.
    global_seqno: SeqNo,
    /// How far this table's iterators read past a seek's block (`readahead.rs`).
    scan_stats: ScanStats,
}

impl std::fmt::Debug for TableReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableReader")
            .field("path", &self.path)
            .field("cache_id", &self.cache_id)
            .field("properties", &self.properties)
            .finish_non_exhaustive()
    }
}

/// A point lookup's consumer of (block, internal key, value), as `get_in_blocks` hands them
/// out; returns whether to keep reading.
type EntryInBlock<'a> = dyn FnMut(&Arc<Block>, &[u8], &[u8]) -> bool + 'a;

impl TableReader {
    /// Reads and verifies the footer, metaindex, index, filter and properties. Data blocks
    /// (and index and filter blocks, as `meta` says) are cached under `cache_id`, which must be
    /// unique among the tables of the owner in `block_cache`.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        cache_id: u64,
        block_cache: Option<CacheAccess>,
    ) -> Result<TableReader> {
        Self::open_with(file, cache_id, block_cache, MetaBlockOptions::default())
    }

    /// [`Self::open`] with the index and filter placed as `meta` says.
    pub fn open_with(
        file: Arc<dyn RandomAccessFile>,
        cache_id: u64,
        block_cache: Option<CacheAccess>,
        meta: MetaBlockOptions,
    ) -> Result<TableReader> {
        let path = file.path().to_path_buf();
        let len = file.len();
        if len < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                &path,
                0,
                format!("file of {len} bytes is too short to be a table"),
            ));
        }
        let footer_offset = len - FOOTER_LEN as u64;
        let buf = file.read_exact_at(footer_offset, FOOTER_LEN)?;
        let footer = Footer::decode(&buf, footer_offset).map_err(|e| e.with_file(&path))?;
        let checksum = footer.checksum;
        let read_meta = |h: BlockHandle, what: &str| -> Result<Vec<u8>> {
            if h.end_with_trailer().is_none_or(|end| end > footer_offset) {
                return Err(Error::corruption(
                    &path,
                    h.offset,
                    format!("{what} block (size {}) overlaps the footer", h.size),
                ));
            }
            read_block(&*file, h, checksum, true)
        };

        let metaindex =
            MetaIndex::decode(&read_meta(footer.metaindex, "metaindex")?, footer.metaindex.offset)
                .map_err(|e| e.with_file(&path))?;
        let Some(ph) = metaindex.get(PROPERTIES_BLOCK) else {
            return Err(Error::corruption(
                &path,
                footer.metaindex.offset,
                "metaindex has no properties block",
            ));
        };
        let properties = TableProperties::decode(&read_meta(ph, "properties")?, ph.offset)
            .map_err(|e| e.with_file(&path))?;
        let range_dels = match metaindex.get(RANGE_DELETION_BLOCK) {
            Some(h) => decode_block(&read_meta(h, "range deletion")?, h.offset)
                .map_err(|e| e.with_file(&path))?,
            None => Vec::new(),
        };
        let fragmented_range_dels = (!range_dels.is_empty())
            .then(|| Arc::new(FragmentedTombstones::from_tombstones(&range_dels, 0)));
        let partitioned = footer.version == FORMAT_VERSION_PARTITIONED;
        let filter_handle = metaindex.get(FILTER_BLOCK);
        let mut r = TableReader {
            file,
            path,
            cache_id,
            block_cache,
            checksum,
            blocks_end: footer_offset,
            index: Meta::Cached(footer.index),
            partitioned,
            user_key_index: footer.version == FORMAT_VERSION_USER_KEY_INDEX,
            filter: filter_handle.map(Meta::Cached),
            partitioned_filter: partitioned
                && filter_handle.is_none()
                && properties.filter_size > 0,
            held_filter: None,
            meta_priority: if meta.high_priority { Priority::High } else { Priority::Low },
            held_bytes: 0,
            pinned_bytes: 0,
            properties,
            range_dels,
            fragmented_range_dels,
            global_seqno: SeqNo::ZERO,
            scan_stats: ScanStats::default(),
        };
        // Read (and verify) the index and filter now; then keep them unless they are to be
        // read through the cache. Without a block cache there is nowhere else to keep them.
        // A block larger than the cache holds per entry (its shard's capacity) would never
        // stay cached and be read again on every use: such a block is kept, uncharged (a
        // partitioned index is the way to bound it).
        let cached = meta.cache_index_and_filter_blocks && r.block_cache.is_some();
        let max_charge = r.block_cache.as_ref().map_or(0, |c| c.cache.max_entry_charge());
        let to = if cached { MetaUse::Cache } else { MetaUse::Hold };
        let index = r.meta_block(footer.index, MetaKind::Index, to)?;
        let index_fits = index.memory_size() <= max_charge;
        if !cached || !index_fits || meta.pin || (partitioned && meta.pin_top_level) {
            r.hold(&index, cached && index_fits);
            r.index = Meta::Held(index);
        }
        if let Some(fh) = filter_handle {
            let filter = r.meta_block(fh, MetaKind::Filter, to)?;
            let filter_fits = filter.memory_size() <= max_charge;
            if !cached || !filter_fits || meta.pin {
                r.hold(&filter, cached && filter_fits);
                r.held_filter = filter.filter().cloned();
                r.filter = Some(Meta::Held(filter));
            }
        }
        Ok(r)
    }

    /// Makes every entry and range tombstone read as sequence number `seq` (an ingested
    /// file's global seqno; see the module doc). Refused when the table holds entries at
    /// other sequence numbers than 0: only external files (written at 0) may be mapped.
    pub fn set_global_seqno(&mut self, seq: SeqNo) -> Result<()> {
        if seq == SeqNo::ZERO {
            return Ok(());
        }
        let p = &self.properties;
        if p.largest_seqno != SeqNo::ZERO || self.range_dels.iter().any(|t| t.seq != SeqNo::ZERO) {
            return Err(Error::corruption(
                &self.path,
                0,
                format!(
                    "global seqno {} given to a table with entries at sequence numbers up to {} \
                     (an external file stores every entry at 0)",
                    seq.0, p.largest_seqno.0
                ),
            ));
        }
        for t in &mut self.range_dels {
            t.seq = seq;
        }
        self.fragmented_range_dels = (!self.range_dels.is_empty())
            .then(|| Arc::new(FragmentedTombstones::from_tombstones(&self.range_dels, 0)));
        self.global_seqno = seq;
        Ok(())
    }

    /// Accounts for a metadata block the reader keeps: pinned (charged to the cache too) or
    /// held outside it.
    fn hold(&mut self, b: &Block, pinned: bool) {
        if pinned {
            self.pinned_bytes += b.memory_size();
        } else {
            self.held_bytes += b.memory_size();
        }
    }

    /// The metadata block at `h`: from the block cache, or read, verified and parsed (an
    /// index block with seek hints unless it is only to be scanned), and inserted into the
    /// cache for [`MetaUse::Cache`].
    fn meta_block(&self, h: BlockHandle, kind: MetaKind, to: MetaUse) -> Result<Arc<Block>> {
        self.check_handle(h)?;
        let key = self.meta_block_key(h.offset, kind);
        if let (Some(c), Some(key)) = (&self.block_cache, &key) {
            if let Some(b) = c.cache.lookup(key) {
                return Ok(b);
            }
        }
        let data = read_block(&*self.file, h, self.checksum, true)?;
        let index = |b: Block| {
            let b = if self.user_key_index { b.with_user_keys() } else { b };
            if to == MetaUse::Scan {
                b
            } else {
                b.with_seek_hints()
            }
        };
        let block = match kind {
            MetaKind::Index => Block::new(data, h.offset).map(index),
            MetaKind::Filter => {
                BloomFilter::decode(&data, h.offset).map(|f| Block::from_filter(f, h.offset))
            }
        }
        .map_err(|e| e.with_file(&self.path))?;
        let b = Arc::new(block);
        if let (Some(c), Some(key), MetaUse::Cache) = (&self.block_cache, key, to) {
            c.cache.insert(key, b.clone(), b.memory_size(), self.meta_priority);
        }
        Ok(b)
    }

    fn meta(&self, m: &Meta, kind: MetaKind) -> Result<Arc<Block>> {
        match m {
            Meta::Held(b) => Ok(b.clone()),
            Meta::Cached(h) => self.meta_block(*h, kind, MetaUse::Cache),
        }
    }

    /// The block cache's key of the metadata block at `offset` (None without a cache).
    fn meta_block_key(&self, offset: u64, kind: MetaKind) -> Option<CacheKey> {
        let c = self.block_cache.as_ref()?;
        let offset = if kind == MetaKind::Filter { offset | FILTER_KEY_BIT } else { offset };
        Some(CacheKey { owner: c.owner, file: self.cache_id, offset })
    }

    /// Removes this table's blocks from the block cache: every data block its index names,
    /// every index and filter partition, and its index and filter blocks. For a table that
    /// no version references any more (RocksDB's `uncache_aggressiveness`): its blocks would
    /// otherwise hold cache memory until they aged out. Readers still holding a block keep
    /// their copy. Costs one pass over the index; index blocks it has to read from the file
    /// are not put in the cache.
    pub fn uncache(&self) -> Result<()> {
        let Some(c) = &self.block_cache else {
            return Ok(());
        };
        let erase = |offset: u64, kind: MetaKind| {
            if let Some(k) = self.meta_block_key(offset, kind) {
                c.cache.erase(&k);
            }
        };
        let top = match &self.index {
            Meta::Held(b) => b.clone(),
            Meta::Cached(h) => self.meta_block(*h, MetaKind::Index, MetaUse::Scan)?,
        };
        if self.partitioned {
            let mut it = top.iter();
            it.seek_to_first();
            while it.valid() {
                let (index, filter) = self.decode_top(&it)?;
                self.uncache_data_blocks(&self.meta_block(
                    index,
                    MetaKind::Index,
                    MetaUse::Scan,
                )?)?;
                erase(index.offset, MetaKind::Index);
                if let Some(f) = filter {
                    erase(f.offset, MetaKind::Filter);
                }
                it.next();
            }
            it.status().map_err(|e| e.with_file(&self.path))?;
        } else {
            self.uncache_data_blocks(&top)?;
        }
        // A held block may be in the cache too (pinned): its block knows its offset.
        erase(top.file_offset(), MetaKind::Index);
        match &self.filter {
            Some(Meta::Cached(h)) => erase(h.offset, MetaKind::Filter),
            Some(Meta::Held(b)) => erase(b.file_offset(), MetaKind::Filter),
            None => {}
        }
        Ok(())
    }

    /// Erases from the block cache the data blocks `index` (an index block or partition)
    /// names.
    fn uncache_data_blocks(&self, index: &Arc<Block>) -> Result<()> {
        let mut it = index.iter();
        it.seek_to_first();
        while it.valid() {
            let h = self.decode_handle(it.value(), index.file_offset())?;
            if let (Some(c), Some(key)) = (&self.block_cache, self.data_block_key(h)) {
                c.cache.erase(&key);
            }
            it.next();
        }
        it.status().map_err(|e| e.with_file(&self.path))
    }

    /// The index block (the top-level index of a partitioned table).
    pub(super) fn index_block(&self) -> Result<Arc<Block>> {
        self.meta(&self.index, MetaKind::Index)
    }

    /// The index partition named by the top-level entry `top` is at.
    pub(crate) fn index_partition_at(&self, top: &BlockIter) -> Result<Arc<Block>> {
        let (h, _) = self.decode_top(top)?;
        self.meta_block(h, MetaKind::Index, MetaUse::Cache)
    }

    fn decode_top(&self, top: &BlockIter) -> Result<(BlockHandle, Option<BlockHandle>)> {
        decode_top_entry(top.value()).ok_or_else(|| {
            Error::corruption(
                &self.path,
                top.block().file_offset(),
                "bad partition handles in the top-level index",
            )
        })
    }

    /// Bytes this reader keeps in memory outside the block cache: its own structures, the
    /// properties and range tombstones, and any index and filter blocks it holds uncharged
    /// (RocksDB's `estimate-table-readers-mem`).
    pub fn memory_usage(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.path.capacity()
            + self.held_bytes
            + self
                .range_dels
                .iter()
                .map(|t| t.start.capacity() + t.end.capacity() + 32)
                .sum::<usize>()
    }

    /// Bytes of index and filter blocks this reader pins (charged to the block cache).
    pub fn pinned_usage(&self) -> usize {
        self.pinned_bytes
    }

    /// The table's range tombstones, sorted by start then seq descending.
    pub fn range_tombstones(&self) -> &[RangeTombstone] {
        &self.range_dels
    }

    /// The table's range tombstones fragmented (source 0); `None` when it has none.
    #[inline]
    pub fn fragmented_range_tombstones(&self) -> Option<&Arc<FragmentedTombstones>> {
        self.fragmented_range_dels.as_ref()
    }

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

    /// An iterator over the index entries (data block handles), partitioned or not.
    fn index_iter(self: &Arc<Self>) -> Result<IndexIter> {
        let top = self.index_block()?.iter();
        Ok(if self.partitioned {
            IndexIter::Partitioned(Box::new(PartitionedIndexIter::new(self.clone(), top)))
        } else {
            IndexIter::Single(top)
        })
    }

    /// Whether the index is keyed by user keys (format version 3).
    pub fn has_user_key_index(&self) -> bool {
        self.user_key_index
    }

    /// The data blocks as the index lists them: each block's separator key (an internal key
    /// at or after its last key) and handle, in order. For tools. A user-key index's
    /// separator `s` is given as the last internal key of `s` (sequence 0, `Deletion`: trailer
    /// 0), which every entry of `s` sorts at or before.
    pub fn data_blocks(self: &Arc<Self>) -> Result<Vec<(Vec<u8>, BlockHandle)>> {
        let mut out = Vec::new();
        let mut it = self.index_iter()?;
        it.seek_to_first();
        while it.valid() {
            let separator = if self.user_key_index {
                make_internal_key(it.key(), SeqNo::ZERO, ValueType::Deletion)
            } else {
                it.key().to_vec()
            };
            out.push((separator, self.decode_handle(it.value(), it.block_offset())?));
            it.next();
        }
        it.status_in(&self.path)?;
        Ok(out)
    }

    /// Every (internal key, value) of the data block at `handle`, its checksum verified and
    /// the block cache bypassed. For tools.
    pub fn data_block_entries(&self, handle: BlockHandle) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let block = Arc::new(self.load_block(handle, true, None)?);
        let mut it = BlockIter::new(block);
        it.seek_to_first();
        let mut out = Vec::new();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        it.status().map_err(|e| e.with_file(&self.path))?;
        Ok(out)
    }

    /// The table's properties block, decoded.
    pub fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// The file offset where the data for `ikey` is (or would be): the start of the data block
    /// that would hold it, or the end of the data blocks when it sorts after every key.
    pub fn approximate_offset_of(self: &Arc<Self>, ikey: &[u8]) -> u64 {
        let data_end = self.properties.data_size.min(self.blocks_end);
        if ikey.len() < TRAILER_LEN {
            return 0;
        }
        let Ok(mut it) = self.index_iter() else { return 0 };
        it.seek(ikey);
        if it.valid() {
            if let Some(h) = BlockHandle::decode_exact(it.value()) {
                return h.offset.min(data_end);
            }
        }
        data_end
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The table file's size.
    pub fn file_size(&self) -> u64 {
        self.file.len()
    }

    #[inline]
    fn check_handle(&self, h: BlockHandle) -> Result<()> {
        if h.end_with_trailer().is_some_and(|end| end <= self.blocks_end) {
            Ok(())
        } else {
            Err(self.handle_outside(h))
        }
    }

    #[cold]
    #[inline(never)]
    fn handle_outside(&self, h: BlockHandle) -> Error {
        Error::corruption(
            &self.path,
            h.offset,
            format!("block (size {}) lies outside the table's blocks", h.size),
        )
    }

    /// Decodes a data block handle from an entry of the index block at `index_offset`.
    fn decode_handle(&self, v: &[u8], index_offset: u64) -> Result<BlockHandle> {
        BlockHandle::decode_exact(v)
            .ok_or_else(|| Error::corruption(&self.path, index_offset, "bad block handle in index"))
    }

    /// The data block at `handle`, from the block cache when possible; read from the file
    /// through `ahead` (an iterator's readahead) when given.
    fn read_data_block(
        &self,
        handle: BlockHandle,
        read: ReadBlockOptions,
        ahead: Option<&mut Readahead>,
    ) -> Result<Arc<Block>> {
        // Before the cache lookup: a handle past the blocks could name a cached filter.
        self.check_handle(handle)?;
        if let (Some(c), Some(key)) = (&self.block_cache, self.data_block_key(handle)) {
            if let Some(b) = c.cache.lookup(&key) {
                return Ok(b);
            }
        }
        self.read_data_block_miss(handle, read, ahead)
    }

    /// The block cache's key of the data block at `handle` (None without a cache).
    #[inline]
    fn data_block_key(&self, handle: BlockHandle) -> Option<CacheKey> {
        let c = self.block_cache.as_ref()?;
        Some(CacheKey { owner: c.owner, file: self.cache_id, offset: handle.offset })
    }

    /// [`Self::read_data_block`] past a block cache miss: the block this thread just read and
    /// the cache passed over, else read; offered to the cache when `read.fill_cache`
    /// (`block_cache.rs`). Out of line: the cache hit is the path that must be short.
    #[inline(never)]
    fn read_data_block_miss(
        &self,
        handle: BlockHandle,
        read: ReadBlockOptions,
        ahead: Option<&mut Readahead>,
    ) -> Result<Arc<Block>> {
        let key = self.data_block_key(handle);
        let kept = key.as_ref().and_then(Cache::passed_over);
        let b = match kept {
            Some(b) => b,
            None => Arc::new(self.load_block(handle, read.verify_checksums, ahead)?),
        };
        if let (Some(c), Some(key), true) = (&self.block_cache, key, read.fill_cache) {
            c.cache.offer(key, &b, b.memory_size());
        }
        Ok(b)
    }

    /// Reads, checks and parses the block at `handle`, through `ahead` when given.
    fn load_block(
        &self,
        handle: BlockHandle,
        verify: bool,
        ahead: Option<&mut Readahead>,
    ) -> Result<Block> {
        self.check_handle(handle)?;
        let data = match ahead {
            None => read_block(&*self.file, handle, self.checksum, verify)?,
            Some(ra) => {
                let len = handle.size as usize + BLOCK_TRAILER_LEN;
                let bytes =
                    ra.read(&*self.file, handle.offset, len, self.blocks_end, &self.scan_stats)?;
                super::format::decode_block(
                    &self.path,
                    handle,
                    bytes.into(),
                    self.checksum,
                    verify,
                )?
            }
        };
        Block::new(data, handle.offset).map_err(|e| e.with_file(&self.path))
    }
}

/// The index entries of a table, as one sequence whichever the index's layout.
enum IndexIter {
    Single(BlockIter),
    Partitioned(Box<PartitionedIndexIter>),
    /// The index could not be read (a block read through the cache failed): never valid,
    /// the error is its status.
    Failed(Error),
}

impl IndexIter {
    fn valid(&self) -> bool {
        match self {
            IndexIter::Single(i) => i.valid(),
            IndexIter::Partitioned(i) => i.valid(),
            IndexIter::Failed(_) => false,
        }
    }

    fn key(&self) -> &[u8] {
        match self {
            IndexIter::Single(i) => i.key(),
            IndexIter::Partitioned(i) => i.key(),
            IndexIter::Failed(_) => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match self {
            IndexIter::Single(i) => i.value(),
            IndexIter::Partitioned(i) => i.value(),
            IndexIter::Failed(_) => &[],
        }
    }

    /// The file offset of the index block holding the current entry.
    fn block_offset(&self) -> u64 {
        match self {
            IndexIter::Single(i) => i.block().file_offset(),
            IndexIter::Partitioned(i) => i.block_offset(),
            IndexIter::Failed(_) => 0,
        }
    }

    fn has_error(&self) -> bool {
        match self {
            IndexIter::Single(i) => i.has_error(),
            IndexIter::Partitioned(i) => i.has_error(),
            IndexIter::Failed(_) => true,
        }
    }

    fn seek_to_first(&mut self) {
        match self {
            IndexIter::Single(i) => i.seek_to_first(),
            IndexIter::Partitioned(i) => i.seek_to_first(),
            IndexIter::Failed(_) => {}
        }
    }

    fn seek_to_last(&mut self) {
        match self {
            IndexIter::Single(i) => i.seek_to_last(),
            IndexIter::Partitioned(i) => i.seek_to_last(),
            IndexIter::Failed(_) => {}
        }
    }

    fn seek(&mut self, target: &[u8]) {
        match self {
            IndexIter::Single(i) => i.seek(target),
            IndexIter::Partitioned(i) => i.seek(target),
            IndexIter::Failed(_) => {}
        }
    }

    fn next(&mut self) {
        match self {
            IndexIter::Single(i) => i.next(),
            IndexIter::Partitioned(i) => i.next(),
            IndexIter::Failed(_) => {}
        }
    }

    fn prev(&mut self) {
        match self {
            IndexIter::Single(i) => i.prev(),
            IndexIter::Partitioned(i) => i.prev(),
            IndexIter::Failed(_) => {}
        }
    }

    /// The status, errors naming the table at `path`.
    fn status_in(&self, path: &Path) -> Result<()> {
        match self {
            IndexIter::Single(i) => i.status().map_err(|e| e.with_file(path)),
            IndexIter::Partitioned(i) => i.status(),
            IndexIter::Failed(e) => Err(e.duplicate()),
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

/// `key` (an internal key) with its sequence number replaced by `seq` into `out`.
fn remap_key(out: &mut Vec<u8>, key: &[u8], seq: SeqNo) {
    out.clear();
    if key.len() < TRAILER_LEN {
        out.extend_from_slice(key);
        return;
    }
    let (user, trailer) = key.split_at(key.len() - TRAILER_LEN);
    let mut t = [0u8; TRAILER_LEN];
    t.copy_from_slice(trailer);
    let packed = (seq.0 << 8) | (u64::from_le_bytes(t) & 0xff);
    out.extend_from_slice(user);
    out.extend_from_slice(&packed.to_le_bytes());
}

impl TableIterator {
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
