//! The ranges of a multi-range scan and how it reads them (RocksDB's `MultiScanArgs`):
//! [`Db::multi_scan`](crate::Db::multi_scan) takes them and walks the ranges in order, its
//! tables reading, when every range has a limit, the blocks the ranges need in coalesced
//! reads planned before the first one (`sstable/readahead/planned.rs`).

/// One range of a multi-range scan: the keys from `start`, below `limit` when it has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanRange {
    /// The first key of the range (inclusive).
    pub start: Vec<u8>,
    /// The key the range stops before; `None`: to the end.
    pub limit: Option<Vec<u8>>,
}

/// The ranges of a multi-range scan, in increasing key order and disjoint (each starting at
/// or after the limit of the one before), and how the scan reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiScanArgs {
    ranges: Vec<ScanRange>,
    /// Blocks of one table this many bytes apart or closer are read from the file together.
    /// Default 16 KiB, as RocksDB's.
    pub io_coalesce_threshold: u64,
    /// The most bytes of blocks per table the scan reads ahead in coalesced reads (0, the
    /// default: no limit), counted in the scan's direction. Blocks past it are read as any
    /// iterator reads them, where RocksDB's scan fails with `PrefetchLimitReached`.
    pub max_prefetch_size: u64,
    /// Each table asks the OS to read all its planned blocks into the page cache as soon as
    /// the scan opens it, so the reads of every table the scan touches proceed at once (under
    /// direct I/O, which has no page cache, the planned reads stay synchronous). Default
    /// false.
    pub use_async_io: bool,
    /// Each range is read from its last key down (the ranges still come in the order given,
    /// as RocksDB's). Every range needs a limit then.
    pub reverse: bool,
}

impl Default for MultiScanArgs {
    fn default() -> Self {
        MultiScanArgs {
            ranges: Vec::new(),
            io_coalesce_threshold: 16 << 10,
            max_prefetch_size: 0,
            use_async_io: false,
            reverse: false,
        }
    }
}

impl MultiScanArgs {
    /// No ranges, default settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the range `[start, limit)`.
    pub fn insert(&mut self, start: impl AsRef<[u8]>, limit: impl AsRef<[u8]>) {
        self.ranges.push(ScanRange {
            start: start.as_ref().to_vec(),
            limit: Some(limit.as_ref().to_vec()),
        });
    }

    /// Adds the range of every key from `start` on (only the last range may be so).
    pub fn insert_from(&mut self, start: impl AsRef<[u8]>) {
        self.ranges.push(ScanRange { start: start.as_ref().to_vec(), limit: None });
    }

    /// Room for `n` more ranges.
    pub fn reserve(&mut self, n: usize) {
        self.ranges.reserve(n);
    }

    /// The ranges, as inserted.
    pub fn ranges(&self) -> &[ScanRange] {
        &self.ranges
    }

    /// How many ranges.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether there are no ranges.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether there are ranges and every one has a limit (then the scan plans its reads).
    pub fn has_bounded_scan_ranges(&self) -> bool {
        !self.ranges.is_empty() && self.ranges.iter().all(|r| r.limit.is_some())
    }

    /// Takes `other`'s settings (not its ranges).
    pub fn copy_config_from(&mut self, other: &MultiScanArgs) {
        self.io_coalesce_threshold = other.io_coalesce_threshold;
        self.max_prefetch_size = other.max_prefetch_size;
        self.use_async_io = other.use_async_io;
        self.reverse = other.reverse;
    }
}
