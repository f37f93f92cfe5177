//! The table cache: open [`TableReader`]s by file number, bounded by `max_open_files`.
//!
//! A reader holds its file handle, index and filter; opening one costs a few reads, so readers
//! are shared through the LRU [`Cache`] with a charge of 1 each.

use std::path::PathBuf;
use std::sync::Arc;

use super::{Cache, CacheKey};
use crate::db::filename::table_path;
use crate::env::FileSystem;
use crate::error::Result;
use crate::sstable::{Block, TableReader};
use crate::types::FileNumber;

pub(crate) struct TableCache {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    readers: Cache<u64, TableReader>,
    block_cache: Option<Arc<Cache<CacheKey, Block>>>,
}

impl TableCache {
    /// `capacity` is the number of readers kept open.
    pub fn new(
        fs: Arc<dyn FileSystem>,
        dir: PathBuf,
        capacity: usize,
        block_cache: Option<Arc<Cache<CacheKey, Block>>>,
    ) -> TableCache {
        TableCache { fs, dir, readers: Cache::new(capacity), block_cache }
    }

    /// The reader of table `number`, opening it if needed.
    pub fn get(&self, number: FileNumber) -> Result<Arc<TableReader>> {
        if let Some(r) = self.readers.lookup(&number.0) {
            return Ok(r);
        }
        let path = table_path(&self.dir, number);
        let file = self.fs.open(&path)?;
        let reader = Arc::new(TableReader::open(file, number.0, self.block_cache.clone())?);
        self.readers.insert(number.0, reader.clone(), 1);
        Ok(reader)
    }

    /// Drops the cached reader of a deleted table.
    pub fn evict(&self, number: FileNumber) {
        self.readers.erase(&number.0);
    }

    pub fn block_cache(&self) -> Option<&Arc<Cache<CacheKey, Block>>> {
        self.block_cache.as_ref()
    }
}
