//! The table cache: open [`TableReader`]s by file number, bounded by `max_open_files`.
//!
//! A reader holds its file handle, index and filter; opening one costs a few reads, so readers
//! are shared through an [`LruCache`] with a charge of 1 each.
//!
//! With no bound on open files (`max_open_files = -1`, the default) a reader is also pinned in
//! its file's metadata ([`PinnedTable`]) the first time it is opened, and later lookups go
//! straight to it: a point read then takes no cache-shard lock per table it consults, which
//! on a multi-threaded read load is one contended mutex fewer per level. The pinned reader
//! lives as long as the metadata, i.e. while some version (or iterator, or compaction) still
//! holds the file.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::cache::LruCache;
use crate::comparator::KnownOrders;
use crate::env::FileSystem;
use crate::error::Result;
use crate::filename::table_path;
use crate::sstable::{CacheAccess, MetaBlockOptions, TableReader};
use crate::statistics::Statistics;
use crate::types::{FileNumber, SeqNo};

/// The open reader of one table file, set once and kept beside the file's record in a live
/// version when the table cache pins readers.
/// It also carries the file's global sequence number (an ingested file's, from its MANIFEST
/// record; 0 otherwise), which every reader of the file is opened with, and the directory
/// the file is in (`None`: the table cache's, the DB directory).
#[derive(Default)]
pub(crate) struct PinnedTable(OnceLock<Arc<TableReader>>, SeqNo, Option<Arc<Path>>);

impl PinnedTable {
    /// The slot of a file in `dir` (`None`: the DB directory) whose entries read as
    /// `global_seqno` (0: as stored).
    pub fn new(global_seqno: SeqNo, dir: Option<Arc<Path>>) -> PinnedTable {
        PinnedTable(OnceLock::new(), global_seqno, dir)
    }

    /// The directory of the file (`None`: the DB directory).
    pub fn dir(&self) -> Option<&Arc<Path>> {
        self.2.as_ref()
    }
}

impl std::fmt::Debug for PinnedTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() { "PinnedTable(open)" } else { "PinnedTable" })
    }
}

/// A table reader borrowed from its file's metadata, or shared from the cache.
pub(crate) enum TableRef<'a> {
    Pinned(&'a Arc<TableReader>),
    Cached(Arc<TableReader>),
}

impl Deref for TableRef<'_> {
    type Target = Arc<TableReader>;

    fn deref(&self) -> &Arc<TableReader> {
        match self {
            TableRef::Pinned(r) => r,
            TableRef::Cached(r) => r,
        }
    }
}

pub(crate) struct TableCache {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    readers: LruCache<u64, TableReader>,
    block_cache: Option<CacheAccess>,
    /// Whether readers are pinned in their metadata (no bound on open files).
    pin: bool,
    /// Where readers keep their index and filter blocks.
    meta: MetaBlockOptions,
    /// Pin the index and filter of tables first opened for a level 0 lookup
    /// (`pin_l0_filter_and_index_blocks_in_cache`).
    pin_l0: bool,
    /// Advise the OS of random reads on each table opened (`advise_random_on_open`).
    advise_random: bool,
    /// The user's statistics, which the readers count their block cache use and reads in.
    statistics: Option<Arc<Statistics>>,
    /// The key orders of the DB's families: a table is read in the order it names.
    orders: KnownOrders,
}

impl TableCache {
    /// `capacity` is the number of readers kept open; `usize::MAX` means no bound, and then
    /// readers are pinned in their files' metadata.
    pub fn new(
        fs: Arc<dyn FileSystem>,
        dir: PathBuf,
        capacity: usize,
        block_cache: Option<CacheAccess>,
    ) -> TableCache {
        let pin = capacity == usize::MAX;
        TableCache {
            fs,
            dir,
            readers: LruCache::new(capacity),
            block_cache,
            pin,
            meta: MetaBlockOptions::default(),
            pin_l0: false,
            advise_random: false,
            statistics: None,
            orders: KnownOrders::default(),
        }
    }

    /// Tables are read in the orders `orders` name (shared: orders added later count).
    pub fn with_orders(mut self, orders: KnownOrders) -> TableCache {
        self.orders = orders;
        self
    }

    /// The key orders tables may be in (the DB adds each family's when it opens it).
    pub fn orders(&self) -> &KnownOrders {
        &self.orders
    }

    /// The user's statistics the DB counts its reads in, if any.
    pub fn statistics(&self) -> Option<&Arc<Statistics>> {
        self.statistics.as_ref()
    }

    /// Readers opened from now on count their block cache use and block reads in
    /// `statistics`.
    pub fn with_statistics(mut self, statistics: Option<Arc<Statistics>>) -> TableCache {
        self.statistics = statistics;
        self
    }

    /// Tables opened from now on are advised to the OS as read at random.
    pub fn with_advise_random(mut self, on: bool) -> TableCache {
        self.advise_random = on;
        self
    }

    /// Readers opened from now on place their index and filter blocks as `meta` says, and
    /// with `pin_l0` pin them for tables opened as level 0 tables ([`Self::reader_at`]).
    pub fn with_meta_options(mut self, meta: MetaBlockOptions, pin_l0: bool) -> TableCache {
        self.meta = meta;
        self.pin_l0 = pin_l0;
        self
    }

    /// The reader of table `number`: the one pinned in `pinned` if it was opened before (and
    /// readers are pinned), else through the cache (pinning it).
    pub fn reader<'a>(&self, number: FileNumber, pinned: &'a PinnedTable) -> Result<TableRef<'a>> {
        self.reader_in(number, pinned, None)
    }

    /// [`Self::reader`] for a table of `level`: a level 0 table opened here has its index and
    /// filter pinned when the options ask for it.
    pub fn reader_at<'a>(
        &self,
        number: FileNumber,
        pinned: &'a PinnedTable,
        level: usize,
    ) -> Result<TableRef<'a>> {
        self.reader_in(number, pinned, Some(level))
    }

    fn reader_in<'a>(
        &self,
        number: FileNumber,
        pinned: &'a PinnedTable,
        level: Option<usize>,
    ) -> Result<TableRef<'a>> {
        if let Some(r) = pinned.0.get() {
            return Ok(TableRef::Pinned(r));
        }
        let r = self.open_cached(number, level, pinned)?;
        if self.pin {
            // A racing thread may have set it first: both readers are of the same file.
            let _ = pinned.0.set(r.clone());
        }
        Ok(TableRef::Cached(r))
    }

    /// The reader of table `number` from the cache, opening it if needed (in the directory
    /// and with the global seqno `slot` gives).
    /// The cache key is the file number: numbers are unique across the DB's directories, and
    /// a file's global seqno and directory never change.
    fn open_cached(
        &self,
        number: FileNumber,
        level: Option<usize>,
        slot: &PinnedTable,
    ) -> Result<Arc<TableReader>> {
        if let Some(r) = self.readers.lookup(&number.0) {
            return Ok(r);
        }
        let path = table_path(slot.dir().map_or(self.dir.as_path(), |d| d), number);
        let file = self.fs.open(&path)?;
        if self.advise_random {
            file.advise_random();
        }
        let meta = MetaBlockOptions {
            pin: self.meta.cache_index_and_filter_blocks && self.pin_l0 && level == Some(0),
            ..self.meta
        };
        let mut reader = TableReader::open_counted(
            file,
            number.0,
            self.block_cache.clone(),
            meta,
            self.statistics.clone(),
            &self.orders,
        )?;
        reader.set_global_seqno(slot.1)?;
        let reader = Arc::new(reader);
        self.readers.insert(number.0, reader.clone(), 1);
        Ok(reader)
    }

    /// The open reader of table `number`, if any, without opening it.
    pub fn open_reader(
        &self,
        number: FileNumber,
        pinned: &PinnedTable,
    ) -> Option<Arc<TableReader>> {
        pinned.0.get().cloned().or_else(|| self.readers.lookup(&number.0))
    }

    /// Readers open now (and their total count bounded by the capacity); for tests.
    #[cfg(test)]
    pub fn open_readers(&self) -> usize {
        self.readers.usage()
    }

    /// Erases a deleted table's blocks from the block cache, if its reader is open (a table
    /// not open now has had its reader evicted; its blocks age out). Best effort: an index
    /// that cannot be read leaves the rest to age out.
    pub fn uncache(&self, number: FileNumber) {
        if let Some(r) = self.readers.lookup(&number.0) {
            let _ = r.uncache();
        }
    }

    /// Drops the cached reader of a deleted table.
    pub fn evict(&self, number: FileNumber) {
        self.readers.erase(&number.0);
    }

    pub fn block_cache(&self) -> Option<&CacheAccess> {
        self.block_cache.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::env::MemFs;
    use crate::key::make_internal_key;
    use crate::sstable::{TableBuilder, TableOptions};
    use crate::types::{SeqNo, ValueType};

    fn table(fs: &MemFs, number: u64) -> FileNumber {
        let path = table_path(Path::new("/db"), FileNumber(number));
        let mut b = TableBuilder::new(&TableOptions::default(), fs.create(&path).unwrap(), path);
        b.add(&make_internal_key(b"k", SeqNo(1), ValueType::Value), b"v").unwrap();
        b.finish().unwrap();
        FileNumber(number)
    }

    fn setup(capacity: usize) -> (MemFs, TableCache) {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let cache = TableCache::new(Arc::new(fs.clone()), PathBuf::from("/db"), capacity, None);
        (fs, cache)
    }

    #[test]
    fn unbounded_cache_pins_readers_in_the_slot() {
        let (fs, cache) = setup(usize::MAX);
        let n = table(&fs, 7);
        let slot = PinnedTable::default();
        let first = cache.reader(n, &slot).unwrap();
        assert!(matches!(first, TableRef::Cached(_)));
        let again = cache.reader(n, &slot).unwrap();
        assert!(matches!(again, TableRef::Pinned(_)));
        assert!(Arc::ptr_eq(&first, &again));
        // Evicting from the cache leaves the pinned reader to the slot's lifetime.
        cache.evict(n);
        assert!(matches!(cache.reader(n, &slot).unwrap(), TableRef::Pinned(_)));
        // Another slot for the same file (a new record) is served by the cache, then pinned.
        let other = PinnedTable::default();
        assert!(matches!(cache.reader(n, &other).unwrap(), TableRef::Cached(_)));
        assert!(matches!(cache.reader(n, &other).unwrap(), TableRef::Pinned(_)));
    }

    #[test]
    fn bounded_cache_never_pins() {
        let (fs, cache) = setup(1);
        let (a, b) = (table(&fs, 1), table(&fs, 2));
        let (sa, sb) = (PinnedTable::default(), PinnedTable::default());
        for _ in 0..3 {
            assert!(matches!(cache.reader(a, &sa).unwrap(), TableRef::Cached(_)));
            assert!(matches!(cache.reader(b, &sb).unwrap(), TableRef::Cached(_)));
        }
        assert_eq!(format!("{sa:?}"), "PinnedTable");
    }

    #[test]
    fn a_bounded_cache_never_holds_more_readers_than_its_bound() {
        let (fs, cache) = setup(3);
        let tables: Vec<_> = (1..=10).map(|n| table(&fs, n)).collect();
        let slots: Vec<_> = tables.iter().map(|_| PinnedTable::default()).collect();
        for round in 0..3 {
            for (i, (n, slot)) in tables.iter().zip(&slots).enumerate() {
                let r = cache.reader(*n, slot).unwrap();
                assert!(r
                    .get(
                        &make_internal_key(b"k", SeqNo(9), ValueType::Value),
                        &crate::sstable::ReadBlockOptions::default(),
                        |_, _| false
                    )
                    .is_ok());
                drop(r);
                assert!(
                    cache.open_readers() <= 3,
                    "round {round} table {i}: {}",
                    cache.open_readers()
                );
            }
        }
        assert_eq!(cache.open_readers(), 3);
    }

    #[test]
    fn a_slot_with_a_directory_opens_its_table_there() {
        let (fs, cache) = setup(usize::MAX);
        let other = Path::new("/fast");
        fs.create_dir_all(other).unwrap();
        let n = table(&fs, 5);
        fs.rename(&table_path(Path::new("/db"), n), &table_path(other, n)).unwrap();
        assert!(cache.reader(n, &PinnedTable::default()).is_err(), "not in the DB directory");
        let slot = PinnedTable::new(SeqNo::ZERO, Some(Arc::from(other)));
        assert_eq!(slot.dir().map(|d| d.to_path_buf()), Some(other.to_path_buf()));
        assert!(cache.reader(n, &slot).is_ok());
    }

    #[test]
    fn a_missing_table_is_an_error_and_pins_nothing() {
        let (_fs, cache) = setup(usize::MAX);
        let slot = PinnedTable::default();
        assert!(cache.reader(FileNumber(9), &slot).is_err());
        assert!(slot.0.get().is_none());
    }
}
