//! Writes a table file (layout in [`super::format`]).
//!
//! Entries arrive in strictly increasing internal-key order and are packed into data blocks,
//! each cut once its size reaches `block_size`, or before an entry that would take it past
//! `block_size` once it is within `block_size_deviation` percent of it (with `block_align`,
//! before an entry that would take it past its alignment unit). When a block is cut, its index
//! entry waits for the next key so the index can hold a short separator between the two blocks
//! ([`key::shorten_separator`]); the last block gets a short successor of its last key. The
//! Bloom filter sees each distinct user key once. `finish` writes the filter, index, properties
//! and metaindex blocks and the footer, then syncs the file.
//!
//! A table with no entries is valid: it has no data blocks, an empty index and no filter, and
//! reads as empty. Its summary has empty smallest/largest keys and zero sequence numbers.

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::path::PathBuf;

use crate::comparator::KeyOrder;
use crate::env::WritableFile;
use crate::error::{Error, Result};
use crate::key::{self, parse_internal_key};
use crate::types::{SeqNo, ValueType};
use crate::util::checksum::ChecksumType;
use crate::util::compare::equal_bytes;

use super::block_builder::BlockBuilder;
use super::compress_pool::{CompressPool, Compressed};
use super::compression::Compressor;
use super::filter::FilterBuilder;
use super::format::{
    block_trailer, BlockHandle, CompressionType, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN,
    FORMAT_VERSION, FORMAT_VERSION_PARTITIONED, FORMAT_VERSION_USER_KEY_INDEX,
};
use super::metaindex::{MetaIndex, FILTER_BLOCK, PROPERTIES_BLOCK, RANGE_DELETION_BLOCK};
use super::partitioned::{encode_top_entry, IndexType};
use super::properties::TableProperties;
use crate::range_del::{encode_block, sort_tombstones, RangeTombstone};

/// Largest internal key or value accepted by [`TableBuilder::add`]; keeps every block offset
/// within the 32-bit restart array.
pub const MAX_ENTRY_PART_LEN: usize = 1 << 30;
/// Largest `block_size` honoured; larger settings are clamped (`Options::validate` refuses
/// them at open).
pub(crate) const MAX_BLOCK_SIZE: usize = 1 << 30;

/// How tables are built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableOptions {
    /// Target uncompressed size of a data block. Default 4096. Larger blocks compress better and
    /// shrink the index; smaller ones make point reads touch fewer bytes.
    pub block_size: usize,
    /// Percentage of `block_size` a data block may fall short of: a block at least
    /// `100 - block_size_deviation` percent full is cut before an entry that would take it
    /// past `block_size`, so blocks stay near `block_size` instead of overshooting it by up to
    /// an entry (RocksDB's rule and default, 10). 0 cuts only once a block reaches
    /// `block_size`; ignored with `block_align`, which cuts to fit its unit.
    pub block_size_deviation: usize,
    /// Entries between restart points in data blocks. Default 16. Larger saves space (more
    /// prefix sharing), smaller makes seeks scan less.
    pub block_restart_interval: usize,
    /// Entries between restart points in the index block. Default 8: the separators between
    /// restarts share their prefix with the one before, and the restart array holds an eighth of
    /// the entries, which makes the index that a reader keeps in memory about a third smaller
    /// than at 1 (RocksDB's default, a binary search only). A seek finds the restart (through
    /// the block's seek hints) and scans at most 8 entries, laid out contiguously.
    pub index_block_restart_interval: usize,
    /// Bloom filter budget in bits per distinct user key; 0 disables the filter. Default 10
    /// (about 1% false positives).
    pub bloom_bits_per_key: u32,
    /// Compression of data and index blocks. Default Snappy, as RocksDB: cheap to decode and a
    /// block is kept raw whenever compression saves less than 1/8.
    pub compression: CompressionType,
    /// Block checksum function. Default CRC32C.
    pub checksum: ChecksumType,
    /// Zstandard level when `compression` is `Zstd`. Default 3.
    pub zstd_level: i32,
    /// One index block, or a top-level index over index partitions (`partitioned.rs`), which
    /// lets a reader load a large table's index a partition at a time through the block cache.
    /// Default binary search (one block).
    pub index_type: IndexType,
    /// With [`IndexType::TwoLevel`]: one filter partition per index partition, found through
    /// the same top-level entry, instead of one filter for the table. Ignored with a one-block
    /// index (as RocksDB). Default false.
    pub partition_filters: bool,
    /// Target size of an index partition (and so of a filter partition's span). Default 4096.
    pub metadata_block_size: usize,
    /// Data blocks never straddle a multiple of `block_size` (padding before a block that
    /// would, and cutting blocks so that each fits, trailer included): one aligned read per
    /// block under direct I/O. Needs `compression = None` (a block's stored size is then known
    /// before it is cut); a single entry larger than `block_size` still makes a larger block,
    /// which starts aligned. Default false.
    pub block_align: bool,
    /// Key the index block by user keys (format version 3, `format.rs`) when no user key
    /// spans two data blocks: a smaller index in memory. Builds before this version cannot
    /// read such tables (they refuse them, naming the version); turn it off to write
    /// version-1 tables they can. Ignored with a partitioned index. Default true.
    pub user_key_index: bool,
    /// The order of the keys (the family's). Default bytewise. A table in another order
    /// records its name (property `comparator`) and keeps whole keys as index separators.
    pub order: KeyOrder,
    /// Threads compressing the table's data blocks while its builder goes on (RocksDB's
    /// `compression_opts.parallel_threads`, `compress_pool.rs`): above 1, that many helper
    /// threads compress and checksum the blocks and the builder writes them in order, the
    /// file's bytes unchanged. Worth it where compression is the build's cost and cores are
    /// free. 1 (the default) compresses on the building thread; so do tables without
    /// compression, with `block_align`, or with partitioned filters (whose partitions follow
    /// the index's as entries are added).
    pub parallel_threads: usize,
    /// Computes the CRC32C of the whole file as it is written (RocksDB's file checksum with
    /// its crc32c generator, `Options::file_checksums`), returned in the summary for the
    /// MANIFEST. Default false.
    pub file_checksum: bool,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size: 4096,
            block_size_deviation: 10,
            block_restart_interval: 16,
            index_block_restart_interval: 8,
            bloom_bits_per_key: 10,
            compression: CompressionType::Snappy,
            checksum: ChecksumType::Crc32c,
            zstd_level: 3,
            index_type: IndexType::BinarySearch,
            partition_filters: false,
            metadata_block_size: 4096,
            block_align: false,
            user_key_index: true,
            order: KeyOrder::Bytewise,
            parallel_threads: 1,
            file_checksum: false,
        }
    }
}

/// The size above which a data block is cut before an entry that would take it past
/// `block_size` (`TableOptions::block_size_deviation`; `usize::MAX`: never).
fn almost_full(opts: &TableOptions) -> usize {
    let block_size = opts.block_size.clamp(1, MAX_BLOCK_SIZE);
    match opts.block_size_deviation {
        0 => usize::MAX,
        d => (block_size * (100 - d.min(100))).div_ceil(100),
    }
}

/// What a finished table holds; the caller records it in the version edit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSummary {
    pub file_size: u64,
    pub num_entries: u64,
    /// Smallest internal key, range tombstone starts included (empty for an empty table).
    pub smallest: Vec<u8>,
    /// Largest internal key, or the exclusive bound of a range tombstone end when that is
    /// larger (empty for an empty table).
    pub largest: Vec<u8>,
    pub smallest_seqno: SeqNo,
    pub largest_seqno: SeqNo,
    pub properties: TableProperties,
    /// The CRC32C of the whole file, when `TableOptions::file_checksum` asked for it.
    pub file_checksum: Option<u32>,
}

/// Appends blocks with their trailers and tracks the file offset.
struct BlockWriter {
    file: Box<dyn WritableFile>,
    offset: u64,
    checksum: ChecksumType,
    /// The running CRC32C of the bytes written (`TableOptions::file_checksum`).
    file_crc: Option<u32>,
}

impl BlockWriter {
    /// Writes zeros up to the next multiple of `align` when a block of `stored_len` bytes
    /// (plus trailer) written here would cross one and would fit in one unit from there.
    fn pad_for(&mut self, stored_len: usize, align: u64) -> Result<()> {
        let len = (stored_len + BLOCK_TRAILER_LEN) as u64;
        let used = self.offset % align;
        if used == 0 || used + len <= align {
            return Ok(());
        }
        let pad = (align - used) as usize;
        self.append(&vec![0u8; pad])?;
        self.offset += pad as u64;
        Ok(())
    }

    /// Appends `data` to the file, adding it to the file's checksum when one is kept.
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if let Some(crc) = &mut self.file_crc {
            *crc = crc32c::crc32c_append(*crc, data);
        }
        self.file.append(data)
    }

    fn write(&mut self, stored: &[u8], ty: CompressionType) -> Result<BlockHandle> {
        let trailer = block_trailer(stored, ty, self.checksum);
        self.write_with(stored, trailer)
    }

    /// Writes a block whose trailer is made already.
    fn write_with(
        &mut self,
        stored: &[u8],
        trailer: [u8; BLOCK_TRAILER_LEN],
    ) -> Result<BlockHandle> {
        let handle = BlockHandle::new(self.offset, stored.len() as u64);
        self.append(stored)?;
        self.append(&trailer)?;
        self.offset += (stored.len() + BLOCK_TRAILER_LEN) as u64;
        Ok(handle)
    }
}

/// Builds one table file.
pub struct TableBuilder {
    path: PathBuf,
    writer: BlockWriter,
    block_size: usize,
    data_block: BlockBuilder,
    /// The index block, or with a partitioned index the open index partition.
    index_block: BlockBuilder,
    /// The same index keyed by user keys (format version 3), while every block boundary so
    /// far falls between two user keys; `None` once one does not, with a partitioned index,
    /// or with `user_key_index` off.
    user_index: Option<BlockBuilder>,
    /// With a partitioned index: the top-level index, the partition size, and whether filters
    /// are partitioned too.
    partitions: Option<Partitions>,
    /// With `block_align`: the alignment unit (`block_size`).
    align: Option<u64>,
    /// A data block larger than this is cut before an entry that would take it past
    /// `block_size` (`TableOptions::block_size_deviation`); `usize::MAX` never.
    almost_full: usize,
    /// Whether the last data block cut waits for the next key to pick its index separator.
    awaits_separator: bool,
    /// Index entries half known: separators of blocks not written yet (their compression in
    /// flight), or the handle of the last block written, waiting for its separator. At most
    /// one of the two holds anything: blocks are written in the order they are cut.
    separators: VecDeque<Vec<u8>>,
    handles: VecDeque<BlockHandle>,
    /// The helper threads compressing data blocks (`TableOptions::parallel_threads`).
    pool: Option<CompressPool>,
    /// Raw bytes of the data blocks written: against their stored bytes (`data_size`), the
    /// ratio that sizes the blocks still in the pool in [`TableBuilder::estimated_file_size`].
    written_raw: u64,
    last_key: Vec<u8>,
    smallest: Vec<u8>,
    filter: Option<FilterBuilder>,
    props: TableProperties,
    compressor: Compressor,
    scratch_key: Vec<u8>,
    scratch_handle: Vec<u8>,
    /// The first write failure; every later call reports it.
    failed: Option<Error>,
    /// Range tombstones, written at `finish` as the `strata.rangedel` meta block.
    range_dels: Vec<RangeTombstone>,
    /// The order of the keys.
    order: KeyOrder,
}

/// A closed partition: its last separator, raw index partition and filter partition.
type ClosedPartition = (Vec<u8>, Vec<u8>, Option<Vec<u8>>);

/// The state of a partitioned index (and filter) being built.
struct Partitions {
    top: BlockBuilder,
    metadata_block_size: usize,
    partition_filters: bool,
    /// The separator of the last index entry of the open partition.
    last_separator: Vec<u8>,
    /// The next user key starts a new filter partition and is added even when it repeats the
    /// previous key, so each partition's filter holds every user key of its data blocks.
    fresh_filter: bool,
    /// Closed partitions, written after the data blocks at `finish` (so data blocks stay
    /// contiguous): last separator, raw index partition, filter partition.
    closed: Vec<ClosedPartition>,
    /// Bytes held in `closed`.
    closed_bytes: u64,
}

impl TableBuilder {
    /// Starts a table written to `file` (named `path` in errors and summaries).
    pub fn new(opts: &TableOptions, file: Box<dyn WritableFile>, path: PathBuf) -> Self {
        let props = TableProperties {
            compression: opts.compression.stored_as(),
            comparator: (!opts.order.is_bytewise()).then(|| opts.order.name().to_string()),
            ..TableProperties::default()
        };
        TableBuilder {
            path,
            writer: BlockWriter {
                file,
                offset: 0,
                checksum: opts.checksum,
                file_crc: opts.file_checksum.then_some(0),
            },
            block_size: opts.block_size.clamp(1, MAX_BLOCK_SIZE),
            data_block: BlockBuilder::new(opts.block_restart_interval),
            index_block: BlockBuilder::new(opts.index_block_restart_interval),
            user_index: (opts.user_key_index && opts.index_type != IndexType::TwoLevel)
                .then(|| BlockBuilder::new(opts.index_block_restart_interval)),
            partitions: (opts.index_type == IndexType::TwoLevel).then(|| Partitions {
                top: BlockBuilder::new(opts.index_block_restart_interval),
                metadata_block_size: opts.metadata_block_size.clamp(1, MAX_BLOCK_SIZE),
                partition_filters: opts.partition_filters,
                last_separator: Vec::new(),
                fresh_filter: false,
                closed: Vec::new(),
                closed_bytes: 0,
            }),
            align: opts.block_align.then(|| opts.block_size.clamp(1, MAX_BLOCK_SIZE) as u64),
            almost_full: almost_full(opts),
            awaits_separator: false,
            separators: VecDeque::new(),
            handles: VecDeque::new(),
            pool: (opts.parallel_threads > 1
                && opts.compression.stored_as() != CompressionType::None
                && !opts.block_align
                && !(opts.index_type == IndexType::TwoLevel && opts.partition_filters))
                .then(|| {
                    CompressPool::start(
                        opts.parallel_threads,
                        opts.compression,
                        opts.zstd_level,
                        opts.checksum,
                    )
                })
                .flatten(),
            written_raw: 0,
            last_key: Vec::new(),
            smallest: Vec::new(),
            filter: (opts.bloom_bits_per_key > 0)
                .then(|| FilterBuilder::new(opts.bloom_bits_per_key)),
            props,
            compressor: Compressor::new(opts.compression, opts.zstd_level),
            scratch_key: Vec::new(),
            scratch_handle: Vec::new(),
            failed: None,
            range_dels: Vec::new(),
            order: opts.order.clone(),
        }
    }

    /// Marks the table as an external file (`external_file_version`, see
    /// [`super::properties`]); its entries must all be at sequence number 0.
    pub fn set_external(&mut self) {
        self.props.external_file_version = super::properties::EXTERNAL_FILE_VERSION;
    }

    #[cfg(test)]
    /// Records the creation time (seconds since the epoch) in the properties; default 0.
    pub fn set_creation_time(&mut self, secs: u64) {
        self.props.creation_time = secs;
    }

    /// Appends an entry. Keys must be strictly increasing internal keys (debug_assert, and
    /// checked always under the `invariants` feature).
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.duplicate());
        }
        let Some(parsed) = parse_internal_key(ikey) else {
            return Err(Error::InvalidArgument(format!(
                "table {}: not an internal key: {ikey:?}",
                self.path.display()
            )));
        };
        if ikey.len() > MAX_ENTRY_PART_LEN || value.len() > MAX_ENTRY_PART_LEN {
            return Err(Error::InvalidArgument(format!(
                "table {}: entry of {} key bytes and {} value bytes exceeds {MAX_ENTRY_PART_LEN}",
                self.path.display(),
                ikey.len(),
                value.len()
            )));
        }
        let first = self.props.num_entries == 0;
        debug_assert!(
            first || self.order.compare_internal(&self.last_key, ikey) == Ordering::Less,
            "table keys out of order"
        );
        #[cfg(feature = "invariants")]
        if !first && self.order.compare_internal(&self.last_key, ikey) != Ordering::Less {
            return Err(Error::InvalidArgument(format!(
                "table {}: key {ikey:?} does not sort after {:?}",
                self.path.display(),
                self.last_key
            )));
        }

        // Cut before this entry when the block, grown by it, would no longer fit one alignment
        // unit, or would pass `block_size` while already almost full. `grown` never
        // underestimates: the entry without prefix sharing, its header and a new restart point.
        // An empty block is never cut, whatever the sizes (a `block_size` smaller than an empty
        // block's own restart array would otherwise cut one before every table's first entry).
        let size = self.data_block.size_estimate();
        let grown = size + ikey.len() + value.len() + 20;
        let cut = !self.data_block.is_empty()
            && match self.align {
                Some(align) => (grown + BLOCK_TRAILER_LEN) as u64 > align,
                None => size > self.almost_full && grown > self.block_size,
            };
        if cut {
            self.flush_data_block()?;
        }
        if std::mem::take(&mut self.awaits_separator) {
            self.scratch_key.clear();
            self.scratch_key.extend_from_slice(&self.last_key);
            if self.order.is_bytewise() {
                key::shorten_separator(&mut self.scratch_key, ikey);
            }
            if self.user_index.is_some()
                && equal_bytes(key::user_key(&self.last_key), parsed.user_key)
            {
                // A user key spans this boundary: no user key separates the blocks.
                self.user_index = None;
            }
            self.separator_known()?;
        }
        if let Some(f) = &mut self.filter {
            let fresh =
                self.partitions.as_mut().is_some_and(|p| std::mem::take(&mut p.fresh_filter));
            if first || fresh || !equal_bytes(key::user_key(&self.last_key), parsed.user_key) {
                f.add_key(parsed.user_key);
            }
        }

        let p = &mut self.props;
        if first {
            self.smallest.extend_from_slice(ikey);
            p.smallest_seqno = parsed.seq;
            p.largest_seqno = parsed.seq;
        } else {
            p.smallest_seqno = p.smallest_seqno.min(parsed.seq);
            p.largest_seqno = p.largest_seqno.max(parsed.seq);
        }
        p.num_entries += 1;
        p.raw_key_size += ikey.len() as u64;
        p.raw_value_size += value.len() as u64;
        match parsed.value_type {
            ValueType::Deletion | ValueType::SingleDeletion => p.num_deletions += 1,
            ValueType::Merge => p.num_merge_operands += 1,
            ValueType::RangeDeletion => p.num_range_deletions += 1,
            ValueType::Value | ValueType::BlobIndex | ValueType::Entity => {}
        }

        self.data_block.add(ikey, value);
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        if self.data_block.size_estimate() >= self.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Adds a range tombstone (any time before `finish`, in any order). The table's smallest
    /// and largest keys cover it; its end becomes an exclusive largest bound
    /// ([`key::range_end_bound`]). Empty ranges are ignored.
    pub fn add_range_tombstone(&mut self, t: &RangeTombstone) {
        if self.order.lt(&t.start, &t.end) {
            self.range_dels.push(t.clone());
        }
    }

    #[cfg(test)]
    /// Whether helper threads compress the data blocks.
    pub fn compresses_in_parallel(&self) -> bool {
        self.pool.is_some()
    }

    #[cfg(test)]
    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Bytes written plus bytes buffered in the open blocks (blocks being compressed counted
    /// at the ratio of those written); used to cut output files.
    pub fn estimated_file_size(&self) -> u64 {
        let compressing = self.pool.as_ref().map_or(0, |p| {
            let raw = p.pending_raw();
            match self.written_raw {
                0 => raw,
                w => (u128::from(raw) * u128::from(self.props.data_size) / u128::from(w)) as u64,
            }
        });
        self.writer.offset
            + compressing
            + self.data_block.size_estimate() as u64
            + self.index_block.size_estimate() as u64
            + self.partitions.as_ref().map_or(0, |p| p.closed_bytes)
    }

    /// The separator of the oldest block without an index entry is in `scratch_key`: its
    /// entry is added when the block is written, else kept until it is.
    fn separator_known(&mut self) -> Result<()> {
        match self.handles.pop_front() {
            Some(handle) => self.add_index_entry(handle),
            None => {
                self.separators.push_back(self.scratch_key.clone());
                Ok(())
            }
        }
    }

    /// The oldest block without an index entry was written at `handle`: its entry is added
    /// when its separator is known, else kept until it is.
    fn handle_known(&mut self, handle: BlockHandle) -> Result<()> {
        match self.separators.pop_front() {
            Some(sep) => {
                self.scratch_key = sep;
                self.add_index_entry(handle)
            }
            None => {
                self.handles.push_back(handle);
                Ok(())
            }
        }
    }

    /// Adds `scratch_key -> handle` to the index; with a partitioned index, closes the
    /// partition once it reaches `metadata_block_size`.
    fn add_index_entry(&mut self, handle: BlockHandle) -> Result<()> {
        self.scratch_handle.clear();
        handle.encode_to(&mut self.scratch_handle);
        self.index_block.add(&self.scratch_key, &self.scratch_handle);
        if let Some(u) = &mut self.user_index {
            // `scratch_key` lies between the blocks' last and next keys, and the user keys
            // differ there, so its user key does too.
            u.add(key::user_key(&self.scratch_key), &self.scratch_handle);
        }
        if let Some(p) = &mut self.partitions {
            p.last_separator.clear();
            p.last_separator.extend_from_slice(&self.scratch_key);
            if self.index_block.size_estimate() >= p.metadata_block_size {
                self.close_partition();
            }
        }
        Ok(())
    }

    /// Closes the open index partition (and its filter partition); they are written at
    /// `finish`.
    fn close_partition(&mut self) {
        let Some(p) = &mut self.partitions else { return };
        if self.index_block.is_empty() {
            return;
        }
        let index = self.index_block.finish().to_vec();
        self.index_block.reset();
        let mut filter = None;
        if p.partition_filters {
            if let Some(f) = &mut self.filter {
                filter = Some(f.finish().into_vec());
                f.reset();
            }
            p.fresh_filter = true;
        }
        p.closed_bytes += (index.len() + filter.as_ref().map_or(0, Vec::len)) as u64;
        p.closed.push((p.last_separator.clone(), index, filter));
    }

    /// Writes the closed partitions and returns the raw top-level index over them.
    fn write_partitions(&mut self) -> Result<Vec<u8>> {
        let Some(mut p) = self.partitions.take() else { return Ok(Vec::new()) };
        for (separator, index, filter) in std::mem::take(&mut p.closed) {
            let (ty, stored) = self.compressor.compress(&index);
            let ih = self.writer.write(stored, ty)?;
            self.props.index_size += ih.size + BLOCK_TRAILER_LEN as u64;
            let fh = match filter {
                Some(f) => {
                    let h = self.writer.write(&f, CompressionType::None)?;
                    self.props.filter_size += h.size + BLOCK_TRAILER_LEN as u64;
                    Some(h)
                }
                None => None,
            };
            self.scratch_handle.clear();
            encode_top_entry(&mut self.scratch_handle, ih, fh);
            p.top.add(&separator, &self.scratch_handle);
        }
        Ok(p.top.finish().to_vec())
    }

    fn flush_data_block(&mut self) -> Result<()> {
        debug_assert!(!self.data_block.is_empty());
        self.awaits_separator = true;
        if let Some(pool) = &mut self.pool {
            pool.submit(self.data_block.finish().to_vec());
            self.data_block.reset();
            return self.write_compressed(false);
        }
        let raw = self.data_block.finish();
        let (ty, stored) = self.compressor.compress(raw);
        let start = self.writer.offset;
        let r = match self.align {
            Some(align) => {
                let len = stored.len();
                self.writer.pad_for(len, align).and_then(|()| self.writer.write(stored, ty))
            }
            None => self.writer.write(stored, ty),
        };
        let raw_len = raw.len() as u64;
        self.data_block.reset();
        let handle = self.note_failure(r)?;
        self.data_block_written(start, raw_len);
        self.handle_known(handle)
    }

    /// Counts a data block written from `start` (padding counts as data: data blocks and
    /// their padding end at `data_size`).
    fn data_block_written(&mut self, start: u64, raw_len: u64) {
        self.props.data_size += self.writer.offset - start;
        self.props.num_data_blocks += 1;
        self.written_raw += raw_len;
    }

    /// Writes the blocks the pool has compressed, in order: those done now, or with `all`
    /// every block given to it (waiting for them).
    fn write_compressed(&mut self, all: bool) -> Result<()> {
        if all {
            if let Some(pool) = &mut self.pool {
                pool.send();
            }
        }
        loop {
            let Some(pool) = &mut self.pool else { return Ok(()) };
            let next = pool.next(all);
            let Some(Compressed { stored, trailer, raw_len, .. }) = self.note_failure(next)? else {
                return Ok(());
            };
            let start = self.writer.offset;
            let r = self.writer.write_with(&stored, trailer);
            let handle = self.note_failure(r)?;
            self.data_block_written(start, raw_len as u64);
            self.handle_known(handle)?;
        }
    }

    fn note_failure<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            self.failed = Some(e.duplicate());
        }
        r
    }

    /// Writes the filter, index, properties and metaindex blocks and the footer, syncs the
    /// file, and returns the table's summary.
    pub fn finish(mut self) -> Result<TableSummary> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if !self.data_block.is_empty() {
            self.flush_data_block()?;
        }
        self.write_compressed(true)?;
        if std::mem::take(&mut self.awaits_separator) {
            self.scratch_key.clear();
            self.scratch_key.extend_from_slice(&self.last_key);
            if self.order.is_bytewise() {
                key::shorten_successor(&mut self.scratch_key);
            }
            self.separator_known()?;
        }
        debug_assert!(self.separators.is_empty() && self.handles.is_empty());
        self.pool = None;
        let version = if self.partitions.is_some() {
            self.close_partition();
            FORMAT_VERSION_PARTITIONED
        } else if self.user_index.is_some() {
            FORMAT_VERSION_USER_KEY_INDEX
        } else {
            FORMAT_VERSION
        };
        let mut meta = MetaIndex::new();

        let mut smallest = std::mem::take(&mut self.smallest);
        let mut largest = if self.props.num_entries > 0 {
            std::mem::take(&mut self.last_key)
        } else {
            Vec::new()
        };
        if !self.range_dels.is_empty() {
            sort_tombstones(&mut self.range_dels, &self.order);
            let p = &mut self.props;
            let no_points = p.num_entries == 0;
            for (i, t) in self.range_dels.iter().enumerate() {
                if no_points && i == 0 {
                    p.smallest_seqno = t.seq;
                    p.largest_seqno = t.seq;
                } else {
                    p.smallest_seqno = p.smallest_seqno.min(t.seq);
                    p.largest_seqno = p.largest_seqno.max(t.seq);
                }
                let lo = key::make_internal_key(&t.start, t.seq, ValueType::RangeDeletion);
                let o = &self.order;
                if smallest.is_empty() || o.compare_internal(&lo, &smallest) == Ordering::Less {
                    smallest = lo;
                }
                let hi = key::range_end_bound(&t.end);
                if largest.is_empty() || o.compare_internal(&hi, &largest) == Ordering::Greater {
                    largest = hi;
                }
            }
            p.num_range_deletions += self.range_dels.len() as u64;
            let h = self.writer.write(&encode_block(&self.range_dels), CompressionType::None)?;
            meta.insert(RANGE_DELETION_BLOCK, h);
        }

        let filter_partitioned = self.partitions.as_ref().is_some_and(|p| p.partition_filters);
        if let Some(f) = self.filter.take().filter(|f| f.num_keys() > 0 && !filter_partitioned) {
            let h = self.writer.write(&f.finish(), CompressionType::None)?;
            self.props.filter_size = h.size + BLOCK_TRAILER_LEN as u64;
            meta.insert(FILTER_BLOCK, h);
        }

        let top = if version == FORMAT_VERSION_PARTITIONED {
            Some(self.write_partitions()?)
        } else {
            None
        };
        let raw = match (&top, &mut self.user_index) {
            (Some(t), _) => t.as_slice(),
            (None, Some(u)) => u.finish(),
            (None, None) => self.index_block.finish(),
        };
        let (ty, stored) = self.compressor.compress(raw);
        let index = self.writer.write(stored, ty)?;
        self.props.index_size += index.size + BLOCK_TRAILER_LEN as u64;

        let h = self.writer.write(&self.props.encode(), CompressionType::None)?;
        meta.insert(PROPERTIES_BLOCK, h);
        let metaindex = self.writer.write(&meta.encode(), CompressionType::None)?;

        let footer = Footer { metaindex, index, checksum: self.writer.checksum, version };
        self.writer.append(&footer.encode())?;
        self.writer.file.sync()?;
        let file_size = self.writer.offset + FOOTER_LEN as u64;
        debug_assert_eq!(file_size, self.writer.file.len());

        Ok(TableSummary {
            file_size,
            num_entries: self.props.num_entries,
            smallest,
            largest,
            smallest_seqno: self.props.smallest_seqno,
            largest_seqno: self.props.largest_seqno,
            properties: self.props,
            file_checksum: self.writer.file_crc,
        })
    }
}
