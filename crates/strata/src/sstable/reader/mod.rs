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
//!
//! One concern per file:
//! - here: the [`TableReader`] type and opening a table (footer, metaindex, properties, range
//!   tombstones, where the index and filter live), reading blocks through the block cache,
//!   and the table-wide accessors;
//! - `get.rs`: point lookups (`get`, `may_contain` and the filter checks);
//! - `iter.rs`: the table iterator over data blocks ([`TableIterator`]);
//! - `index_iter.rs`: the index iterators, single-level and partitioned.

mod get;
mod index_iter;
mod iter;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cache::{CacheKey, Priority};
use crate::comparator::{KeyOrder, KnownOrders};
use crate::env::RandomAccessFile;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{make_internal_key, TRAILER_LEN};
use crate::perf_context::{self, PerfMetric, PerfTimer};
use crate::range_del::{decode_block, FragmentedTombstones, RangeTombstone};
use crate::sstable::{Cache, CacheAccess};
use crate::statistics::{Histogram, Statistics, StopWatch, Ticker};
use crate::types::{SeqNo, ValueType};
use crate::util::checksum::ChecksumType;

use super::block::{Block, BlockIter};
use super::filter::BloomFilter;
use super::format::{
    read_block, BlockHandle, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN, FORMAT_VERSION_PARTITIONED,
    FORMAT_VERSION_USER_KEY_INDEX,
};
use super::metaindex::{MetaIndex, FILTER_BLOCK, PROPERTIES_BLOCK, RANGE_DELETION_BLOCK};
use super::partitioned::decode_top_entry;
use super::properties::TableProperties;
use super::readahead::{Readahead, ScanStats};

pub use iter::TableIterator;

/// Set in the block-cache key of a filter block: filters are cached as [`Block::from_filter`],
/// which has no entries, so no block handle (offsets are below 2^63, checked before a lookup)
/// can ever find one where it expects entries.
const FILTER_KEY_BIT: u64 = 1 << 63;

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
    /// Never read a data block from the file: a block the cache does not hold fails the read
    /// with `Incomplete` (`ReadOptions::read_tier`). Default false.
    pub cache_only: bool,
}

impl Default for ReadBlockOptions {
    fn default() -> Self {
        ReadBlockOptions {
            verify_checksums: true,
            fill_cache: true,
            readahead_size: 0,
            cache_only: false,
        }
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

/// The block cache tickers of one kind of block: hit, miss, add, bytes inserted.
type CacheTickers = [Ticker; 4];
const DATA_TICKERS: CacheTickers = [
    Ticker::BlockCacheDataHit,
    Ticker::BlockCacheDataMiss,
    Ticker::BlockCacheDataAdd,
    Ticker::BlockCacheDataBytesInsert,
];
const INDEX_TICKERS: CacheTickers = [
    Ticker::BlockCacheIndexHit,
    Ticker::BlockCacheIndexMiss,
    Ticker::BlockCacheIndexAdd,
    Ticker::BlockCacheIndexBytesInsert,
];
const FILTER_TICKERS: CacheTickers = [
    Ticker::BlockCacheFilterHit,
    Ticker::BlockCacheFilterMiss,
    Ticker::BlockCacheFilterAdd,
    Ticker::BlockCacheFilterBytesInsert,
];

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
    /// The user's statistics: block cache hits, misses and inserts, block read times.
    statistics: Option<Arc<Statistics>>,
    /// The order of the table's keys (its `comparator` property).
    order: KeyOrder,
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

impl TableReader {
    /// Reads and verifies the footer, metaindex, index, filter and properties. Data blocks
    /// (and index and filter blocks, as `meta` says) are cached under `cache_id`, which must be
    /// unique among the tables of the owner in `block_cache`.
    ///
    /// Only a table in bytewise order opens here; [`Self::open_in`] knows other orders.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        cache_id: u64,
        block_cache: Option<CacheAccess>,
    ) -> Result<TableReader> {
        Self::open_in(file, cache_id, block_cache, &KnownOrders::default())
    }

    /// [`Self::open`] of a table in one of the `orders`: one written in another is
    /// `InvalidArgument` naming its order.
    pub fn open_in(
        file: Arc<dyn RandomAccessFile>,
        cache_id: u64,
        block_cache: Option<CacheAccess>,
        orders: &KnownOrders,
    ) -> Result<TableReader> {
        Self::open_counted(file, cache_id, block_cache, MetaBlockOptions::default(), None, orders)
    }

    /// [`Self::open`] with the index and filter placed as `meta` says.
    #[cfg(test)]
    pub fn open_with(
        file: Arc<dyn RandomAccessFile>,
        cache_id: u64,
        block_cache: Option<CacheAccess>,
        meta: MetaBlockOptions,
    ) -> Result<TableReader> {
        Self::open_counted(file, cache_id, block_cache, meta, None, &KnownOrders::default())
    }

    /// [`Self::open_with`] of a table in one of `orders`, counting its block cache accesses
    /// and block reads (from the opening reads of the index and filter on) in `statistics`.
    pub(crate) fn open_counted(
        file: Arc<dyn RandomAccessFile>,
        cache_id: u64,
        block_cache: Option<CacheAccess>,
        meta: MetaBlockOptions,
        statistics: Option<Arc<Statistics>>,
        orders: &KnownOrders,
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
        let Some(order) = orders.find(properties.comparator.as_deref()) else {
            return Err(Error::InvalidArgument(format!(
                "{}: the table is in key order {:?}, which no column family here has",
                path.display(),
                properties.comparator.as_deref().unwrap_or_default()
            )));
        };
        let range_dels = match metaindex.get(RANGE_DELETION_BLOCK) {
            Some(h) => decode_block(&read_meta(h, "range deletion")?, h.offset, &order)
                .map_err(|e| e.with_file(&path))?,
            None => Vec::new(),
        };
        let fragmented_range_dels = (!range_dels.is_empty())
            .then(|| Arc::new(FragmentedTombstones::from_tombstones(&range_dels, 0, &order)));
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
            statistics,
            order,
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
        self.fragmented_range_dels = (!self.range_dels.is_empty()).then(|| {
            Arc::new(FragmentedTombstones::from_tombstones(&self.range_dels, 0, &self.order))
        });
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
        let tickers = match kind {
            MetaKind::Index => &INDEX_TICKERS,
            MetaKind::Filter => &FILTER_TICKERS,
        };
        // Only reads meant to go through the cache count as its hits and misses (not the
        // opening reads of blocks the reader keeps, nor the scans of `uncache`).
        let counted = to == MetaUse::Cache;
        if let (Some(c), Some(key)) = (&self.block_cache, &key) {
            if let Some(b) = c.cache.lookup(key) {
                if counted {
                    self.count_cache_hit(tickers, &b);
                }
                return Ok(b);
            }
            if counted {
                self.count_cache_miss(tickers);
            }
        }
        let data = {
            let _timers = self.block_read_timers();
            read_block(&*self.file, h, self.checksum, true)?
        };
        count_block_read(h);
        let index = |b: Block| {
            let b = if self.user_key_index { b.with_user_keys() } else { b };
            if to == MetaUse::Scan {
                b
            } else {
                b.with_seek_hints()
            }
        };
        let block = match kind {
            MetaKind::Index => Block::new(data, h.offset).map(|b| index(b.with_order(&self.order))),
            MetaKind::Filter => {
                BloomFilter::decode(&data, h.offset).map(|f| Block::from_filter(f, h.offset))
            }
        }
        .map_err(|e| e.with_file(&self.path))?;
        let b = Arc::new(block);
        if let (Some(c), Some(key), MetaUse::Cache) = (&self.block_cache, key, to) {
            c.cache.insert(key, b.clone(), b.memory_size(), self.meta_priority);
            self.count_cache_add(tickers, b.memory_size());
        }
        Ok(b)
    }

    /// Counts a block cache hit on `b`, a block of the kind of `tickers`.
    #[inline]
    fn count_cache_hit(&self, tickers: &CacheTickers, b: &Block) {
        perf_context::count(PerfMetric::BlockCacheHitCount, 1);
        if let Some(s) = &self.statistics {
            s.tick(Ticker::BlockCacheHit, 1);
            s.tick(tickers[0], 1);
            s.tick(Ticker::BlockCacheBytesRead, b.memory_size() as u64);
        }
    }

    /// Counts a block cache miss on a block of the kind of `tickers`.
    #[inline]
    fn count_cache_miss(&self, tickers: &CacheTickers) {
        if let Some(s) = &self.statistics {
            s.tick(Ticker::BlockCacheMiss, 1);
            s.tick(tickers[1], 1);
        }
    }

    /// Counts a block of `charge` bytes, of the kind of `tickers`, put in the block cache.
    fn count_cache_add(&self, tickers: &CacheTickers, charge: usize) {
        if let Some(s) = &self.statistics {
            s.tick(Ticker::BlockCacheAdd, 1);
            s.tick(tickers[2], 1);
            s.tick(tickers[3], charge as u64);
            s.tick(Ticker::BlockCacheBytesWrite, charge as u64);
        }
    }

    /// The timers of a block read from the file (each reads the clock only when its level
    /// asks): this thread's `block_read_time` and the statistics' `SstReadMicros`.
    #[inline]
    fn block_read_timers(&self) -> (PerfTimer, StopWatch<'_>) {
        (
            PerfTimer::start(PerfMetric::BlockReadTime),
            StopWatch::start(self.statistics.as_ref(), Histogram::SstReadMicros),
        )
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

    /// Reads every data block from the file and checks its checksum, without uncompressing
    /// or parsing it (the index, filter and properties were checked when the table was
    /// opened): RocksDB's `VerifyChecksum` of one table. Returns the blocks read.
    pub fn verify_checksums(self: &Arc<Self>) -> Result<u64> {
        let blocks = self.data_blocks()?;
        for (_, h) in &blocks {
            super::format::check_block(&*self.file, *h, self.checksum)?;
        }
        Ok(blocks.len() as u64)
    }

    /// Reads every data block, verifying its checksum (the block cache bypassed), and checks
    /// that each block's entries are in order and end at or before the block's separator;
    /// returns the blocks read. Damage is `Corruption` naming the file and the block's offset.
    pub fn verify_blocks(self: &Arc<Self>) -> Result<u64> {
        let mut blocks = 0u64;
        let mut previous: Vec<u8> = Vec::new();
        for (separator, h) in self.data_blocks()? {
            let mut it = BlockIter::new(Arc::new(self.load_block(h, true, None)?));
            it.seek_to_first();
            while it.valid() {
                let k = it.key();
                if !previous.is_empty() && self.order.compare_internal(&previous, k).is_ge() {
                    return Err(Error::corruption(&self.path, h.offset, "keys out of order"));
                }
                if self.order.compare_internal(k, &separator).is_gt() {
                    return Err(Error::corruption(
                        &self.path,
                        h.offset,
                        "a key of the block sorts after its index separator",
                    ));
                }
                previous.clear();
                previous.extend_from_slice(k);
                it.next();
            }
            it.status().map_err(|e| e.with_file(&self.path))?;
            blocks += 1;
        }
        Ok(blocks)
    }

    /// The table's properties block, decoded.
    pub fn order(&self) -> &KeyOrder {
        &self.order
    }

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
                self.count_cache_hit(&DATA_TICKERS, &b);
                if c.cache.blocks_cold() {
                    b.prefetch_whole();
                }
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
    /// (`cache/block_cache.rs`). Out of line: the cache hit is the path that must be short.
    #[inline(never)]
    fn read_data_block_miss(
        &self,
        handle: BlockHandle,
        read: ReadBlockOptions,
        ahead: Option<&mut Readahead>,
    ) -> Result<Arc<Block>> {
        let key = self.data_block_key(handle);
        if key.is_some() {
            self.count_cache_miss(&DATA_TICKERS);
        }
        let kept = key.as_ref().and_then(Cache::passed_over);
        let b = match kept {
            Some(b) => b,
            None if read.cache_only => {
                return Err(Error::Incomplete(format!(
                    "the block at offset {} of {} is not in the block cache and the read may \
                     not read files",
                    handle.offset,
                    self.path.display()
                )))
            }
            None => Arc::new(self.load_block(handle, read.verify_checksums, ahead)?),
        };
        if let (Some(c), Some(key), true) = (&self.block_cache, key, read.fill_cache) {
            if c.cache.offer(key, &b, b.memory_size()) {
                self.count_cache_add(&DATA_TICKERS, b.memory_size());
            }
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
        let timers = self.block_read_timers();
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
        drop(timers);
        count_block_read(handle);
        Block::new(data, handle.offset)
            .map(|b| b.with_order(&self.order))
            .map_err(|e| e.with_file(&self.path))
    }
}

/// Counts a block read from the file in this thread's perf context.
#[inline]
fn count_block_read(h: BlockHandle) {
    perf_context::count(PerfMetric::BlockReadCount, 1);
    perf_context::count(PerfMetric::BlockReadByte, h.size + BLOCK_TRAILER_LEN as u64);
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
