//! [`TableFileFs`]: a file system that applies the I/O options of table files (`*.sst`, and
//! blob files, `*.blob`) and
//! passes everything else to its inner file system. The DB wraps `Options::fs` in it when any
//! of these is set, so the engine's code opens files one way and the choice is made here:
//! - `use_direct_reads`: tables opened for reading (point lookups, iterators, compaction
//!   inputs) with direct I/O;
//! - `allow_mmap_reads` (without `use_direct_reads`): tables opened for reading through a
//!   mapping (`FileSystem::open_mapped`); not blob files, which grow while read;
//! - `use_direct_io_for_flush_and_compaction`: tables created with direct I/O;
//! - `bytes_per_sync`: a created table asks the OS to start writing it out every this many
//!   appended bytes, so the page cache never holds much dirty table data and the final sync
//!   has little left to do;
//! - `rate_limiter`: appends to created tables (only flushes and compactions create them)
//!   take their bytes from the shared budget first.
//!
//! A blob file that commits write to (`FileSystem::create_foreground`) gets the writeback
//! alone: the rate limit and direct I/O are for background writes.
//!
//! The WAL, the MANIFEST and the other small files are untouched, as in RocksDB.

use std::path::Path;
use std::sync::Arc;

use super::rate_limiter::RateLimiter;
use super::{FileLock, FileSyncer, FileSystem, RandomAccessFile, WritableFile};
use crate::error::Result;

/// How table files are opened (see the module documentation).
#[derive(Clone, Debug, Default)]
pub(crate) struct TableIo {
    pub direct_reads: bool,
    pub mapped_reads: bool,
    pub direct_writes: bool,
    pub bytes_per_sync: u64,
    pub rate_limiter: Option<Arc<RateLimiter>>,
}

impl TableIo {
    /// Whether anything differs from plain files.
    pub fn is_plain(&self) -> bool {
        !self.direct_reads
            && !self.mapped_reads
            && !self.direct_writes
            && self.bytes_per_sync == 0
            && self.rate_limiter.is_none()
    }
}

/// See the module documentation.
pub(crate) struct TableFileFs {
    inner: Arc<dyn FileSystem>,
    io: TableIo,
}

impl TableFileFs {
    pub fn new(inner: Arc<dyn FileSystem>, io: TableIo) -> TableFileFs {
        TableFileFs { inner, io }
    }
}

/// A created table file: appends pay the rate limiter and trigger writeback.
struct TableWritable {
    inner: Box<dyn WritableFile>,
    bytes_per_sync: u64,
    since_writeback: u64,
    rate_limiter: Option<Arc<RateLimiter>>,
}

impl WritableFile for TableWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if let Some(rl) = &self.rate_limiter {
            rl.request(data.len() as u64);
        }
        self.inner.append(data)?;
        self.since_writeback += data.len() as u64;
        if self.bytes_per_sync > 0 && self.since_writeback >= self.bytes_per_sync {
            self.since_writeback = 0;
            self.inner.start_writeback()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }

    fn sync(&mut self) -> Result<()> {
        self.inner.sync()
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn preallocate(&mut self, bytes: u64) -> Result<()> {
        self.inner.preallocate(bytes)
    }

    fn write_zeros_ahead(&mut self, to: u64) -> Result<bool> {
        self.inner.write_zeros_ahead(to)
    }

    fn truncate_to_len(&mut self) -> Result<()> {
        self.inner.truncate_to_len()
    }

    fn syncer(&mut self) -> Option<Box<dyn FileSyncer>> {
        self.inner.syncer()
    }

    fn start_writeback(&mut self) -> Result<()> {
        self.inner.start_writeback()
    }
}

/// Tables, and blob files (`crate::blob`), which flushes and compactions write beside them
/// and reads read like them.
fn is_table(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "sst" || e == "blob")
}

impl TableFileFs {
    /// `file` with the writeback of `bytes_per_sync` and, written in the `background`, the
    /// rate limit.
    fn writable(&self, file: Box<dyn WritableFile>, background: bool) -> Box<dyn WritableFile> {
        let rate_limiter = self.io.rate_limiter.clone().filter(|_| background);
        if self.io.bytes_per_sync == 0 && rate_limiter.is_none() {
            return file;
        }
        Box::new(TableWritable {
            inner: file,
            bytes_per_sync: self.io.bytes_per_sync,
            since_writeback: 0,
            rate_limiter,
        })
    }
}

impl FileSystem for TableFileFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        if !is_table(path) {
            return self.inner.create(path);
        }
        let file = if self.io.direct_writes {
            self.inner.create_direct(path)?
        } else {
            self.inner.create(path)?
        };
        Ok(self.writable(file, true))
    }

    fn create_foreground(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = self.inner.create_foreground(path)?;
        Ok(if is_table(path) { self.writable(file, false) } else { file })
    }

    fn reuse_for_write(&self, old: &Path, new: &Path) -> Result<Box<dyn WritableFile>> {
        self.inner.reuse_for_write(old, new)
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        if self.io.direct_reads && is_table(path) {
            self.inner.open_direct(path)
        } else if self.io.mapped_reads && path.extension().is_some_and(|e| e == "sst") {
            self.inner.open_mapped(path)
        } else {
            self.inner.open(path)
        }
    }

    fn open_mapped(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner.open_mapped(path)
    }

    fn open_direct(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner.open_direct(path)
    }

    fn create_direct(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.inner.create_direct(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.rename(from, to)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        self.inner.remove(path)
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.inner.sync_dir(dir)
    }

    fn sync_file(&self, path: &Path) -> Result<()> {
        self.inner.sync_file(path)
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.inner.is_dir(path)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }

    fn modified(&self, path: &Path) -> Result<std::time::SystemTime> {
        self.inner.modified(path)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }

    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.link(from, to)
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        self.inner.remove_dir(dir)
    }
}
