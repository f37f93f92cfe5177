//! [`DirectTableFs`]: a file system that opens table files (`*.sst`) with direct I/O and
//! everything else as its inner file system does. The DB wraps `Options::fs` in it when
//! `use_direct_reads` (table reads: point lookups, iterators, compaction inputs) or
//! `use_direct_io_for_flush_and_compaction` (table writes) is set, so the engine's code opens
//! files one way and the choice is made here, in one place. The WAL, the MANIFEST and the
//! other small files stay buffered, as in RocksDB.

use std::path::Path;
use std::sync::Arc;

use super::{FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::error::Result;

/// See the module documentation.
pub(crate) struct DirectTableFs {
    inner: Arc<dyn FileSystem>,
    reads: bool,
    writes: bool,
}

impl DirectTableFs {
    pub fn new(inner: Arc<dyn FileSystem>, reads: bool, writes: bool) -> DirectTableFs {
        DirectTableFs { inner, reads, writes }
    }
}

fn is_table(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "sst")
}

impl FileSystem for DirectTableFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        if self.writes && is_table(path) {
            self.inner.create_direct(path)
        } else {
            self.inner.create(path)
        }
    }

    fn reuse_for_write(&self, old: &Path, new: &Path) -> Result<Box<dyn WritableFile>> {
        self.inner.reuse_for_write(old, new)
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        if self.reads && is_table(path) {
            self.inner.open_direct(path)
        } else {
            self.inner.open(path)
        }
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
