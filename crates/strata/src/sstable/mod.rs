//! Sorted string tables: immutable files of internal keys in order, written once by flush or
//! compaction and read by point lookups and iterators.
//!
//! One concept per file; the on-disk format is described where it is written and in
//! `docs/format/sstable.md`:
//! - [`format`]: file layout, block handles, block trailers, the footer, reading a block.
//! - [`compression`]: block compression codecs; [`compress_pool`]: the helper threads that
//!   compress a table's data blocks when `parallel_threads` asks for them.
//! - [`block_builder`] / [`block`]: data and index blocks (prefix-compressed, restart points).
//! - [`filter`]: the cache-line-blocked Bloom filter over user keys.
//! - [`properties`]: the properties block.
//! - [`metaindex`]: names of meta blocks mapped to their handles.
//! - [`partitioned`]: the partitioned index and filters (format version 2): layout and
//!   top-level entries; the reader iterates them in `reader/index_iter.rs`.
//! - [`builder`] / [`reader`]: whole tables.
//! - [`cache_access`]: `strata::Cache`, the block cache handle over this format's blocks, and
//!   a table cache's access to it.

pub mod block;
pub mod block_builder;
pub mod builder;
pub mod cache_access;
pub(crate) mod compress_pool;
pub mod compression;
pub mod filter;
pub mod format;
pub mod metaindex;
pub mod partitioned;
pub mod properties;
mod readahead;
pub mod reader;
pub(crate) mod table_cache;

#[cfg(test)]
mod scan_plan_tests;
#[cfg(test)]
mod tests;

// Re-exported for the crate's other layers and tools; some are used only by tests and
// `inspect` (the crate's `dead_code` allowance does not cover re-exports).
#[allow(unused_imports)]
pub use block::{Block, BlockIter};
#[allow(unused_imports)]
pub use builder::{TableBuilder, TableOptions, TableSummary};
pub use cache_access::Cache;
pub(crate) use cache_access::CacheAccess;
#[allow(unused_imports)]
pub use compression::CompressionType;
#[allow(unused_imports)]
pub use format::BlockHandle;
pub use partitioned::IndexType;
#[allow(unused_imports)]
pub use properties::TableProperties;
pub(crate) use readahead::ScanPlan;
#[allow(unused_imports)]
pub use reader::{MetaBlockOptions, ReadBlockOptions, TableIterator, TableReader};
