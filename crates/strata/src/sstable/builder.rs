//! Writes a table file (layout in [`super::format`]).
//!
//! Entries arrive in strictly increasing internal-key order and are packed into data blocks,
//! each cut once its size reaches `block_size`. When a block is cut, its index entry waits for
//! the next key so the index can hold a short separator between the two blocks
//! ([`key::shorten_separator`]); the last block gets a short successor of its last key. The
//! Bloom filter sees each distinct user key once. `finish` writes the filter, index, properties
//! and metaindex blocks and the footer, then syncs the file.
//!
//! A table with no entries is valid: it has no data blocks, an empty index and no filter, and
//! reads as empty. Its summary has empty smallest/largest keys and zero sequence numbers.

use std::cmp::Ordering;
use std::path::PathBuf;

use crate::env::WritableFile;
use crate::error::{Error, Result};
use crate::key::{self, compare_internal, parse_internal_key};
use crate::types::{SeqNo, ValueType};
use crate::util::checksum::ChecksumType;

use super::block_builder::BlockBuilder;
use super::compression::Compressor;
use super::filter::FilterBuilder;
use super::format::{
    block_trailer, BlockHandle, CompressionType, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN,
};
use super::metaindex::{MetaIndex, FILTER_BLOCK, PROPERTIES_BLOCK, RANGE_DELETION_BLOCK};
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
    /// Entries between restart points in data blocks. Default 16. Larger saves space (more
    /// prefix sharing), smaller makes seeks scan less.
    pub block_restart_interval: usize,
    /// Entries between restart points in the index block. Default 1 (binary search only).
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
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size: 4096,
            block_restart_interval: 16,
            index_block_restart_interval: 1,
            bloom_bits_per_key: 10,
            compression: CompressionType::Snappy,
            checksum: ChecksumType::Crc32c,
            zstd_level: 3,
        }
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
}

/// Appends blocks with their trailers and tracks the file offset.
struct BlockWriter {
    file: Box<dyn WritableFile>,
    offset: u64,
    checksum: ChecksumType,
}

impl BlockWriter {
    fn write(&mut self, stored: &[u8], ty: CompressionType) -> Result<BlockHandle> {
        let handle = BlockHandle::new(self.offset, stored.len() as u64);
        let trailer = block_trailer(stored, ty, self.checksum);
        self.file.append(stored)?;
        self.file.append(&trailer)?;
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
    index_block: BlockBuilder,
    /// The handle of the last data block written, waiting for the next key to pick a separator.
    pending_index: Option<BlockHandle>,
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
}

impl TableBuilder {
    /// Starts a table written to `file` (named `path` in errors and summaries).
    pub fn new(opts: &TableOptions, file: Box<dyn WritableFile>, path: PathBuf) -> Self {
        let props = TableProperties { compression: opts.compression, ..TableProperties::default() };
        TableBuilder {
            path,
            writer: BlockWriter { file, offset: 0, checksum: opts.checksum },
            block_size: opts.block_size.clamp(1, MAX_BLOCK_SIZE),
            data_block: BlockBuilder::new(opts.block_restart_interval),
            index_block: BlockBuilder::new(opts.index_block_restart_interval),
            pending_index: None,
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
        }
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
            first || compare_internal(&self.last_key, ikey) == Ordering::Less,
            "table keys out of order"
        );
        #[cfg(feature = "invariants")]
        if !first && compare_internal(&self.last_key, ikey) != Ordering::Less {
            return Err(Error::InvalidArgument(format!(
                "table {}: key {ikey:?} does not sort after {:?}",
                self.path.display(),
                self.last_key
            )));
        }

        if let Some(handle) = self.pending_index.take() {
            self.scratch_key.clear();
            self.scratch_key.extend_from_slice(&self.last_key);
            key::shorten_separator(&mut self.scratch_key, ikey);
            self.add_index_entry(handle);
        }
        if let Some(f) = &mut self.filter {
            if first || key::user_key(&self.last_key) != parsed.user_key {
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
            ValueType::Value => {}
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
        if t.start < t.end {
            self.range_dels.push(t.clone());
        }
    }

    #[cfg(test)]
    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Bytes written plus bytes buffered in the open blocks; used to cut output files.
    pub fn estimated_file_size(&self) -> u64 {
        self.writer.offset
            + self.data_block.size_estimate() as u64
            + self.index_block.size_estimate() as u64
    }

    /// Adds `scratch_key -> handle` to the index.
    fn add_index_entry(&mut self, handle: BlockHandle) {
        self.scratch_handle.clear();
        handle.encode_to(&mut self.scratch_handle);
        self.index_block.add(&self.scratch_key, &self.scratch_handle);
    }

    fn flush_data_block(&mut self) -> Result<()> {
        debug_assert!(!self.data_block.is_empty());
        let raw = self.data_block.finish();
        let (ty, stored) = self.compressor.compress(raw);
        let r = self.writer.write(stored, ty);
        self.data_block.reset();
        let handle = self.note_failure(r)?;
        self.props.data_size += handle.size + BLOCK_TRAILER_LEN as u64;
        self.props.num_data_blocks += 1;
        self.pending_index = Some(handle);
        Ok(())
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
        if let Some(handle) = self.pending_index.take() {
            self.scratch_key.clear();
            self.scratch_key.extend_from_slice(&self.last_key);
            key::shorten_successor(&mut self.scratch_key);
            self.add_index_entry(handle);
        }
        let mut meta = MetaIndex::new();

        let mut smallest = self.smallest;
        let mut largest = if self.props.num_entries > 0 { self.last_key } else { Vec::new() };
        if !self.range_dels.is_empty() {
            sort_tombstones(&mut self.range_dels);
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
                if smallest.is_empty() || compare_internal(&lo, &smallest) == Ordering::Less {
                    smallest = lo;
                }
                let hi = key::range_end_bound(&t.end);
                if largest.is_empty() || compare_internal(&hi, &largest) == Ordering::Greater {
                    largest = hi;
                }
            }
            p.num_range_deletions += self.range_dels.len() as u64;
            let h = self.writer.write(&encode_block(&self.range_dels), CompressionType::None)?;
            meta.insert(RANGE_DELETION_BLOCK, h);
        }

        if let Some(f) = self.filter.take().filter(|f| f.num_keys() > 0) {
            let h = self.writer.write(&f.finish(), CompressionType::None)?;
            self.props.filter_size = h.size + BLOCK_TRAILER_LEN as u64;
            meta.insert(FILTER_BLOCK, h);
        }

        let raw = self.index_block.finish();
        let (ty, stored) = self.compressor.compress(raw);
        let index = self.writer.write(stored, ty)?;
        self.props.index_size = index.size + BLOCK_TRAILER_LEN as u64;

        let h = self.writer.write(&self.props.encode(), CompressionType::None)?;
        meta.insert(PROPERTIES_BLOCK, h);
        let metaindex = self.writer.write(&meta.encode(), CompressionType::None)?;

        let footer = Footer { metaindex, index, checksum: self.writer.checksum };
        self.writer.file.append(&footer.encode())?;
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
        })
    }
}
