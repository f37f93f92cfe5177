//! Reading blob files: [`BlobFileReader`] reads one file's records; [`BlobSource`] is the
//! DB's way to them, with the files kept open and values kept in the blob cache when the DB
//! has one (`BlobOptions::blob_cache`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::format::{self, Footer, Header, FOOTER_LEN, HEADER_LEN, RECORD_HEADER};
use super::index::BlobIndex;
use crate::cache::CacheKey;
use crate::env::{FileSystem, RandomAccessFile};
use crate::error::{Error, Result};
use crate::filename::blob_path;
use crate::iterator::BlobFetch;
use crate::sstable::cache_access::CacheAccess;
use crate::sstable::compression::uncompress;
use crate::sstable::{Block, Cache, CompressionType};
use crate::statistics::{Histogram, Statistics, StopWatch, Ticker};
use crate::types::FileNumber;

/// An open blob file whose header and footer checked out, or a blob file still being written
/// at commit (`db/blob_log.rs`), whose header did.
pub(crate) struct BlobFileReader {
    /// Tells this open file from every other (`super::readahead`).
    id: u64,
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    size: u64,
    /// `None` for a file still being written: its records end where its writer is.
    footer: Option<Footer>,
}

impl BlobFileReader {
    /// Opens `path`, checking its header and footer (a blob file is referred to only once
    /// written whole). Direct I/O is the file system's choice (`env::table_files`).
    pub fn open(fs: &dyn FileSystem, path: &Path) -> Result<BlobFileReader> {
        let file = fs.open(path)?;
        let size = file.len();
        if size < (HEADER_LEN + FOOTER_LEN) as u64 {
            return Err(Error::corruption(
                path,
                0,
                format!("blob file of {size} bytes is shorter than a header and footer"),
            ));
        }
        Header::decode(path, &file.read_exact_at(0, HEADER_LEN)?)?;
        let at = size - FOOTER_LEN as u64;
        let footer = Footer::decode(path, at, &file.read_exact_at(at, FOOTER_LEN)?)?;
        let id = super::readahead::new_file_id();
        Ok(BlobFileReader { id, file, path: path.to_path_buf(), size, footer: Some(footer) })
    }

    /// Opens `path`, a blob file still being written (no footer yet), checking its header.
    /// Its records are read where an index points, each checked as any; nothing is read
    /// ahead (the file grows).
    pub fn open_unfinished(fs: &dyn FileSystem, path: &Path) -> Result<BlobFileReader> {
        let file = fs.open(path)?;
        Header::decode(path, &file.read_exact_at(0, HEADER_LEN)?)?;
        let id = super::readahead::new_file_id();
        Ok(BlobFileReader { id, file, path: path.to_path_buf(), size: u64::MAX, footer: None })
    }

    /// The footer; `None` for a file still being written.
    pub fn footer(&self) -> Option<&Footer> {
        self.footer.as_ref()
    }

    /// The value of `key` at `index`: reads its whole record, checks it (lengths, key,
    /// checksum) and uncompresses the value; the file's read and the uncompression are timed
    /// in `statistics` (`rocksdb.blobdb.blob.file.read.micros`, `.decompression.micros`).
    /// Reads in file order read ahead (`super::readahead`).
    pub fn read(
        &self,
        key: &[u8],
        index: &BlobIndex,
        statistics: Option<&Arc<Statistics>>,
    ) -> Result<Vec<u8>> {
        let head = (RECORD_HEADER + key.len()) as u64;
        let end = index.offset.checked_add(index.size);
        let records_end = match self.footer {
            Some(_) => self.size - FOOTER_LEN as u64,
            None => u64::MAX,
        };
        let in_bounds =
            index.offset >= HEADER_LEN as u64 + head && end.is_some_and(|e| e <= records_end);
        if !in_bounds || index.size > u64::from(u32::MAX) {
            return Err(Error::corruption(
                &self.path,
                index.offset,
                format!(
                    "blob index points at {} bytes at offset {} for a {}-byte key, outside the \
                     records of this {}-byte file",
                    index.size,
                    index.offset,
                    key.len(),
                    self.size
                ),
            ));
        }
        let start = index.offset - head;
        let len = (head + index.size) as usize;
        let check = |rec: &[u8]| {
            let size = index.size as usize;
            format::check_record(&self.path, start, rec, key, size, index.compression).and_then(
                |stored| match index.compression {
                    CompressionType::None => Ok(stored.to_vec()),
                    c => {
                        let _timer =
                            StopWatch::start(statistics, Histogram::BlobDbDecompressionMicros);
                        uncompress(c, stored, index.offset).map_err(|e| match e {
                            Error::Corruption { offset, reason, .. } => {
                                Error::corruption(&self.path, offset, reason)
                            }
                            other => other,
                        })
                    }
                },
            )
        };
        if self.footer.is_none() {
            let rec = {
                let _timer = StopWatch::start(statistics, Histogram::BlobDbBlobFileReadMicros);
                self.file.read_exact_at(start, len)?
            };
            return check(&rec);
        }
        super::readahead::read(self.id, &*self.file, start, len, records_end, statistics, check)?
    }
}

/// The DB's blob files as readers see them.
pub(crate) struct BlobSource {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    readers: Mutex<HashMap<FileNumber, Arc<BlobFileReader>>>,
    /// Blob files being written at commit (`db/blob_log.rs`): opened without a footer.
    unfinished: Mutex<std::collections::HashSet<FileNumber>>,
    cache: Option<CacheAccess>,
    statistics: Option<Arc<Statistics>>,
}

impl BlobSource {
    /// Blob files in `dir` (the DB directory), read through `fs`, values kept in `cache`
    /// when given.
    pub fn new(
        fs: Arc<dyn FileSystem>,
        dir: PathBuf,
        cache: Option<CacheAccess>,
        statistics: Option<Arc<Statistics>>,
    ) -> BlobSource {
        let readers = Mutex::new(HashMap::new());
        let unfinished = Mutex::new(std::collections::HashSet::new());
        BlobSource { fs, dir, readers, unfinished, cache, statistics }
    }

    fn reader(&self, n: FileNumber) -> Result<Arc<BlobFileReader>> {
        if let Some(r) = self.readers.lock().get(&n) {
            return Ok(r.clone());
        }
        let path = blob_path(&self.dir, n);
        let r = if self.unfinished.lock().contains(&n) {
            BlobFileReader::open_unfinished(self.fs.as_ref(), &path)?
        } else {
            BlobFileReader::open(self.fs.as_ref(), &path)?
        };
        Ok(self.readers.lock().entry(n).or_insert(Arc::new(r)).clone())
    }

    /// Blob file `n` is being written at commit: readers open it without a footer until
    /// [`Self::evict`].
    pub fn unfinished(&self, n: FileNumber) {
        self.unfinished.lock().insert(n);
    }

    /// Closes blob file `n` and forgets that it was unfinished: it has its footer now (the
    /// next reader opens it as any; one opened before still reads it correctly, each record
    /// checked where an index points), or it is being deleted (its values left in the cache
    /// are never looked up again and age out).
    pub fn evict(&self, n: FileNumber) {
        self.unfinished.lock().remove(&n);
        self.readers.lock().remove(&n);
    }

    /// The value at `index` of `key`, from the blob cache or the file; `fill`: a value read
    /// from the file is offered to the cache, which a full cache takes in under its admission
    /// policy (as a data block: by default only a value missed before within its window).
    fn read_value(&self, key: &[u8], index: &BlobIndex, fill: bool) -> Result<Vec<u8>> {
        let Some(c) = &self.cache else { return self.read_file(key, index) };
        let k = CacheKey { owner: c.owner, file: index.file.0, offset: index.offset };
        if let Some(b) = c.cache.lookup(&k) {
            self.tick(Ticker::BlobDbCacheHit, 1);
            self.tick(Ticker::BlobDbCacheBytesRead, b.bytes().len() as u64);
            return Ok(b.bytes().to_vec());
        }
        self.tick(Ticker::BlobDbCacheMiss, 1);
        // A value the cache turned away just before is still this thread's (its second miss
        // now, which admission takes in).
        let block = match Cache::passed_over(&k) {
            Some(b) => b,
            None if !fill => return self.read_file(key, index),
            None => Arc::new(Block::from_blob_value(self.read_file(key, index)?, index.offset)),
        };
        let charge = block.memory_size();
        if fill && c.cache.offer(k, &block, charge) {
            self.tick(Ticker::BlobDbCacheAdd, 1);
            self.tick(Ticker::BlobDbCacheBytesWrite, charge as u64);
        }
        Ok(block.bytes().to_vec())
    }

    /// The value at `index` of `key`, read from its file.
    fn read_file(&self, key: &[u8], index: &BlobIndex) -> Result<Vec<u8>> {
        let v = self.reader(index.file)?.read(key, index, self.statistics.as_ref())?;
        self.tick(Ticker::BlobDbBlobFileBytesRead, index.size);
        Ok(v)
    }

    fn tick(&self, t: Ticker, n: u64) {
        if let Some(s) = &self.statistics {
            s.tick(t, n);
        }
    }
}

/// A reader's way to blob values through `source` (`&BlobSource` or `Arc<BlobSource>`): from
/// the blob cache when a value is there, else from its file, then offered to the cache when
/// `fill` is set: a user read's `ReadOptions::fill_cache`. Compactions (relocation,
/// compaction filters, merges) read with it off, as RocksDB's: they read each value once, and
/// filling the cache with them would evict what readers use and cost the compaction an
/// insertion and an eviction per value.
pub(crate) struct BlobReads<S> {
    pub source: S,
    pub fill: bool,
}

impl<S: std::ops::Deref<Target = BlobSource> + Send + Sync> BlobFetch for BlobReads<S> {
    fn fetch(&self, user_key: &[u8], index: &[u8]) -> Result<Vec<u8>> {
        let i = BlobIndex::decode(index)?;
        self.source.read_value(user_key, &i, self.fill)
    }
}
