//! Options for opening a DB, writing and reading. Every field documents its default and its
//! trade-off. Names follow RocksDB's so users of the `rocksdb` crate find them where they expect.

use std::sync::Arc;

pub use crate::compaction::style::{
    CompactionStopStyle, CompactionStyle, FifoCompactionOptions, TieredCompactionOptions,
    UniversalCompactionOptions,
};
#[cfg(doc)]
use crate::compaction_filter::CompactionDecision;
use crate::compaction_filter::{CompactionFilterFactory, Decision, FnFilterFactory};
use crate::env::{FileSystem, OsFs};
use crate::memtable::WriteBufferManager;
pub use crate::merge_operator::MergeOperands;
use crate::merge_operator::MergeOperator;
pub use crate::prefix::PrefixExtractor;
use crate::snapshot::SnapshotHandle;
use crate::sstable::{Cache, CompressionType, IndexType, TableOptions};
use crate::util::checksum::ChecksumType;
use crate::wal::WalRecoveryMode;
pub use accepted::{AcceptedOptions, CompactOnDeletionCollector, CompressionOptions, TableHints};
pub use blob::BlobOptions;
pub use compact_opts::{
    BottommostLevelCompaction, CompactOptions, CompactionPri, FifoCompactOptions,
    UniversalCompactOptions, UniversalCompactionStopStyle, WaitForCompactOptions,
};
pub use db_path::DBPath;
pub use env_handle::Env;
pub(crate) use log_dump::support_log_lines;
pub use logger::{InfoLogger, LogLevel};
pub use multi_scan::{MultiScanArgs, ScanRange};
// For `Db::set_options` (the db layer).
pub(crate) use comparator::{needs_timestamp, no_timestamps};
pub use comparator::{CompareFn, CompareTsFn, CompareWithoutTsFn};
pub use iterate_bounds::{IterateBounds, PrefixRange};
pub(crate) use parse::apply_option;
pub use per_call::{FlushOptions, ReadTier};
pub use setters::{BlockBasedOptions, SliceTransform};
pub use table_factories::{
    BlockBasedTablePinningTier, CuckooTableOptions, DataBlockIndexType, KeyEncodingType,
    MemtableFactory, PlainTableFactoryOptions,
};

use crate::version::levels::MAX_NUM_LEVELS;

mod accepted;
mod blob;
mod compact_opts;
mod comparator;
mod db_path;
mod env_handle;
pub(crate) mod iterate_bounds;
mod log_dump;
mod logger;
mod multi_scan;
pub(crate) mod parse;
mod per_call;
mod setters;
mod statistics;
mod table_factories;

/// The smallest nonzero `db_write_buffer_size`: below it the memtables' first chunks alone
/// would fill the budget.
pub const MIN_DB_WRITE_BUFFER_SIZE: usize = 64 << 10;

/// Options fixed when the DB is opened.
#[derive(Clone)]
pub struct Options {
    /// Create the directory and an empty DB when missing. Default: true.
    pub create_if_missing: bool,
    /// Fail `open` when the DB already exists. Default: false.
    pub error_if_exists: bool,
    /// `Db::open_cf`/`open_cf_descriptors`: create the named families the DB lacks (else
    /// such an open fails). Default: false.
    pub create_missing_column_families: bool,
    /// The filesystem all I/O goes through. Default: the OS filesystem.
    pub fs: Arc<dyn FileSystem>,
    /// Bytes a memtable may hold before it is switched for a new one and flushed. Larger
    /// buffers mean fewer, larger L0 files (less write amplification) but longer recovery and
    /// more memory. Default: 64 MiB.
    pub write_buffer_size: usize,
    /// One memory budget for the memtables of every DB (and column family) given a clone of
    /// this `Arc`, optionally charged to a block cache: when the memtables approach it, the
    /// writing DB flushes its largest memtable, and with `allow_stall` writes wait while it is
    /// full (`WriteBufferManager`'s doc has the rules). A DB-wide option: the `default`
    /// family's options (those given to `open`) decide. Default: none.
    pub write_buffer_manager: Option<Arc<WriteBufferManager>>,
    /// A budget for this DB's memtables alone, over all its column families: nonzero makes a
    /// private `WriteBufferManager` of this size at open (no stalls, no cache charge), as
    /// RocksDB does. 0 (default): no DB-wide bound beyond `write_buffer_size` ×
    /// `max_write_buffer_number` per family. Must be 0 when `write_buffer_manager` is set.
    pub db_write_buffer_size: usize,
    /// Memtables (active + immutable) that may exist at once; when all are full, writes stall
    /// until a flush finishes. Default: 2.
    pub max_write_buffer_number: usize,
    /// Immutable memtables a flush waits for and writes together as one L0 table (RocksDB's
    /// `min_write_buffer_number_to_merge`): fewer, larger L0 tables from small memtables, for
    /// more memtables to search. At most `max_write_buffer_number - 1` takes effect (else a
    /// full set of memtables would wait for one more); a flush asked for (`flush`, a
    /// checkpoint, the write buffer manager) writes what is there. Default: 1 (each memtable
    /// on its own).
    pub min_write_buffer_number_to_merge: usize,
    /// Size of each memtable's whole-key Bloom filter as a fraction of `write_buffer_size`
    /// (RocksDB's `memtable_prefix_bloom_size_ratio` with `memtable_whole_key_filtering`): a
    /// point lookup skips a memtable whose filter rules its key out instead of searching its
    /// skiplist, a few dozen cache misses once the memtable outgrows the CPU caches. Costs one
    /// cache line per write and the filter's memory, which counts in the memtable's size (of
    /// `write_buffer_size`, or of the DB's memtable budget when that is smaller).
    /// 0 = no filter; at most 0.25. Default: 0.01 (a 64 MiB memtable of 400-byte entries gets
    /// about 40 bits per key, 0.05% false positives). A memtable gets no more than 40 bits
    /// for each key it is expected to hold, judged by the entries of the memtable it replaces
    /// (with 100 KB values the ratio alone would take six values' room for 640 keys).
    pub memtable_bloom_size_ratio: f64,
    /// The vector memtable instead of the skiplist (`set_memtable_factory(Vector)`, db_bench's
    /// `--memtablerep=vector`): writes append their entries without a search, and the
    /// memtable sorts what was appended when something first reads it (a get, an iterator,
    /// the flush). For bulk loads that read nothing back; reads under writes pay a sort each
    /// time, as with RocksDB's. Unlike RocksDB, concurrent inserts are allowed (the append
    /// takes a short lock). Default: false.
    pub vector_memtable: bool,
    /// Table readers kept open (each holds its index and filter in memory); -1 keeps every
    /// table open. Default: -1.
    pub max_open_files: i32,
    /// Byte capacity of the block cache of uncompressed data blocks, when `block_cache` is not
    /// set (a private LRU cache of this size is made at open); 0 disables it.
    /// Default: 32 MiB.
    pub block_cache_size: usize,
    /// A block cache to use instead of a private one: clones of one [`Cache`] given to several
    /// DBs share its capacity, so one number bounds their blocks. `Cache::new_lru` (mutex per
    /// shard) or `Cache::new_hyper_clock` (lock-free; better with many reading threads).
    /// Overrides `block_cache_size`. Default: none.
    pub block_cache: Option<Cache>,
    /// A row cache (RocksDB's `row_cache`, DB-wide): what a point read found for a key in a
    /// table file, kept so the next read of that key there, once the table's filter lets it
    /// through, skips the table's index and data block. Worth it for small hot values read
    /// far more than written. A `Cache` made for it (`Cache::new_lru`); one given to several
    /// DBs is one budget. Default: none.
    pub row_cache: Option<Cache>,
    /// Target uncompressed size of a data block. Smaller blocks make point reads cheaper and
    /// the index larger. Default: 4096.
    pub block_size: usize,
    /// A data block at least `100 - block_size_deviation` percent of `block_size` is cut
    /// before an entry that would take it past `block_size` (0: blocks are cut only once they
    /// reach it, overshooting by up to an entry). Default: 10, as RocksDB.
    pub block_size_deviation: usize,
    /// Keys between restart points in a data block: smaller is faster to seek, larger
    /// compresses keys better. Default: 16.
    pub block_restart_interval: usize,
    /// Keys between restart points in an index block. 1 stores every separator whole, so a
    /// seek is a pure binary search (RocksDB's default); larger prefix-compresses the
    /// separators between restarts and drops their restart offsets (a smaller index held in
    /// memory), and a seek then scans up to this many entries after its restart. Default: 8,
    /// which makes the index about a third smaller than 1 does.
    pub index_block_restart_interval: usize,
    /// Bloom filter bits per key (0 = no filter). 10 gives about 1% false positives.
    /// Default: 10.
    pub bloom_bits_per_key: u32,
    /// Index and filter blocks are read through the block cache, charged to it, instead of
    /// being kept by each open table for its life: their memory is then bounded by the cache's
    /// capacity (a DB with many tables no longer holds every index and filter), at the price
    /// of a cache lookup per table consulted and of re-reading the ones evicted. Without a
    /// block cache they are kept as when false. Default: false (as RocksDB).
    pub cache_index_and_filter_blocks: bool,
    /// With `cache_index_and_filter_blocks`: index and filter blocks enter the cache at high
    /// priority, so data blocks are evicted before them (the LRU cache's high-priority pool;
    /// the clock cache's priority). Default: true.
    pub cache_index_and_filter_blocks_with_high_priority: bool,
    /// With `cache_index_and_filter_blocks`: the index and filter of level 0 tables (those
    /// first opened for a level 0 read) stay held by their table, charged to the cache
    /// (`strata.block-cache-pinned-usage`): L0 tables are consulted by every read.
    /// Default: false.
    pub pin_l0_filter_and_index_blocks_in_cache: bool,
    /// With a partitioned index and `cache_index_and_filter_blocks`: the top-level index stays
    /// held by its table (it is small; the partitions still go through the cache).
    /// Default: true.
    pub pin_top_level_index_and_filter: bool,
    /// The index of new tables: one block (binary search), or partitioned (a top-level index
    /// over partitions of about `metadata_block_size` bytes, read through the block cache a
    /// partition at a time: bounded memory for large tables, one more block read per lookup
    /// on a cache miss). Tables with a partitioned index are format version 2, which builds
    /// older than it refuse to open. Default: binary search.
    pub index_type: IndexType,
    /// With `index_type = TwoLevel`: filters are partitioned like the index (one partition
    /// read per lookup instead of the whole filter). Ignored otherwise. Default: false.
    pub partition_filters: bool,
    /// Target size of index (and filter) partitions. Default: 4096.
    pub metadata_block_size: usize,
    /// Data blocks never straddle a multiple of `block_size` (a page, for the default 4096):
    /// blocks are cut to fit one unit, trailer included, and padded to the next one; one
    /// aligned read per block under direct I/O, at the price of the padding. Works with any
    /// compression (a stored block is never larger than its raw form), but the padding then
    /// wastes more of each unit. Default: false.
    pub block_align: bool,
    /// Key each table's index by user keys where no user key spans two data blocks (table
    /// format version 3, `docs/format/sstable.md`): the index takes about a quarter less
    /// memory with short keys. Builds before format version 3 cannot open such tables (they
    /// refuse them with an error naming the version), so turn it off to keep a DB that an
    /// older build may open (RocksDB's `format_version` plays this part). Default: true.
    pub user_key_index: bool,
    /// Compression of data blocks. Default: Snappy (as RocksDB).
    pub compression: CompressionType,
    /// Compression per level (RocksDB's `compression_per_level`): level `i` uses entry `i`, or
    /// the last entry for deeper levels; empty means `compression` everywhere. Typical use:
    /// no compression for L0 and L1 (they are rewritten soon), a strong one at the bottom.
    /// Default: empty.
    pub compression_per_level: Vec<CompressionType>,
    /// Zstd level when `compression` is Zstd. Default: 3.
    pub zstd_level: i32,
    /// Threads compressing each table's data blocks while flush or compaction goes on
    /// building it (RocksDB's `compression_opts.parallel_threads`,
    /// `set_compression_options_parallel_threads`): above 1, that many helper threads per
    /// table being written, which pays where compression is the cost of writing tables
    /// (Zstandard, large values) and cores are free. The tables are the same either way.
    /// Default: 1 (compression on the flush or compaction thread).
    pub compression_parallel_threads: usize,
    /// Checksum protecting every block. Default: CRC32C.
    pub checksum: ChecksumType,
    /// What WAL damage `open` tolerates. Default: point-in-time.
    pub wal_recovery_mode: WalRecoveryMode,
    /// Number of LSM levels. Default: 7.
    pub num_levels: usize,
    /// Background threads for flushes and compactions (one flush thread, the rest compact;
    /// at least one compaction thread). Default: 2.
    pub max_background_jobs: usize,
    /// Threads one large compaction may be split into by key range. Default: 1.
    pub max_subcompactions: usize,
    /// After each compaction, hand the C allocator's free pages back to the OS (glibc's
    /// `malloc_trim`; nothing elsewhere): the small buffers a compaction frees leave holes in
    /// the heap that stay resident otherwise (`util/heap.rs`). Off, a process keeps them for
    /// its next allocations. Default: true.
    pub trim_heap_after_compaction: bool,
    /// L0 files that trigger an L0 compaction. Lower means fewer files per read, more
    /// compaction work. Default: 4.
    pub level0_file_num_compaction_trigger: usize,
    /// L0 files at which writes are slowed to `delayed_write_rate`. A value below
    /// `level0_file_num_compaction_trigger` is raised to it at open (as RocksDB does), so writes
    /// never slow down before compaction has been asked to run (in universal style: to the
    /// sorted-run count at which a merge is always picked). Default: 20.
    pub level0_slowdown_writes_trigger: usize,
    /// Leveled style: while flushes add L0 files faster than an L0 -> base compaction could
    /// rewrite the base level, that compaction waits for as many files as would arrive while
    /// it ran (at most half `level0_slowdown_writes_trigger`) rather than starting at
    /// `level0_file_num_compaction_trigger`, and goes ahead once files stop coming for two
    /// of their mean intervals. Each L0 -> base compaction rewrites the base level it
    /// overlaps, so fewer and larger batches write less; L0 holds no more files than
    /// sustained writes put there anyway (`compaction/l0_batch.rs`). When files stop coming
    /// after such a batch was gathered, its files are merged into one L0 file that goes down
    /// with the next batch, if the base level holds at least twice their bytes (L0
    /// carry-over). Off, L0 compacts at the trigger into the base level as in RocksDB.
    /// Default: true.
    pub level0_compaction_batching: bool,
    /// Whether the family may be read through a snapshot (`ReadOptions::snapshot`). False
    /// for a family whose readers only ever want its latest state, such as a log whose
    /// entries are deleted once consumed: its flushes and compactions then keep only the
    /// newest entry of each key whatever snapshots the DB holds (the other families' readers
    /// may hold snapshots for long), so entries deleted before their memtable is flushed
    /// never reach a table. A read of such a family through a snapshot fails with
    /// `InvalidArgument`, as would a `multi_get_cf` naming it (it reads through one).
    /// Default: true.
    pub snapshot_reads: bool,
    /// L0 files at which writes stop until compaction catches up. A value below the slowdown
    /// trigger (0 included) is raised to it at open, so writes never stop before compaction
    /// can run. Default: 36.
    pub level0_stop_writes_trigger: usize,
    /// Target size of the base level (where L0 compacts to). Default: 256 MiB.
    pub max_bytes_for_level_base: u64,
    /// Size ratio between adjacent levels. Larger means fewer levels and more write
    /// amplification per level. Default: 10.
    pub max_bytes_for_level_multiplier: f64,
    /// Size the levels from the last level up (RocksDB's dynamic level bytes), which bounds
    /// space amplification. Default: true.
    pub level_compaction_dynamic_level_bytes: bool,
    /// Target size of compaction output files. Default: 64 MiB.
    pub target_file_size_base: u64,
    /// Output file size ratio between adjacent levels below the base level. Default: 1.
    pub target_file_size_multiplier: u64,
    /// Upper bound on one compaction's input bytes as the picker foresees them: a compaction
    /// output is cut at a grandparent boundary before it and the grandparent files it overlaps
    /// exceed this, and a file overlapping more of the level below is not moved down
    /// trivially. 0 means 25 x `target_file_size_base`. Default: 0.
    pub max_compaction_bytes: u64,
    /// How the tree is shaped and compacted: leveled, universal or FIFO (see
    /// [`CompactionStyle`] for each one's trade-off). In universal style the L0 compaction
    /// trigger and the L0 stall triggers count sorted runs (each L0 file and each non-empty
    /// level) instead of L0 files (in tiered style too); in FIFO style the L0 stall triggers are off (writes never
    /// wait for a compaction that only deletes). Default: leveled.
    pub compaction_style: CompactionStyle,
    /// Options of universal compaction. Default: RocksDB's defaults.
    pub compaction_options_universal: UniversalCompactionOptions,
    /// Options of FIFO compaction. Default: 1 GiB, no TTL, no intra-L0 compaction.
    pub compaction_options_fifo: FifoCompactionOptions,
    /// Options of tiered (write-optimised) compaction. In tiered style the L0 stall triggers
    /// count sorted runs, and the slowdown trigger is at least `max_sorted_runs + 1` (the
    /// count the run budget always brings back down); `level0_file_num_compaction_trigger` is
    /// not read. Default: fan-in 8, 16 runs, 200%.
    pub compaction_options_tiered: TieredCompactionOptions,
    /// Do not compact automatically (manual `compact_range` still works); L0-based write
    /// stalls are off too. Default: false.
    pub disable_auto_compactions: bool,
    /// Estimated bytes awaiting compaction at which writes slow down; 0 means "the hard
    /// limit". Default: 64 GiB.
    pub soft_pending_compaction_bytes_limit: u64,
    /// Estimated bytes awaiting compaction at which writes stop; 0 means no limit. A nonzero
    /// value below the soft limit is raised to it at open. Default: 256 GiB.
    pub hard_pending_compaction_bytes_limit: u64,
    /// Bytes per second writes are paced at when a slowdown starts, and the most they are
    /// paced at during one: the pace then follows the compaction debt, slower as flushes add
    /// to it (x0.8) or a stop comes near (x0.6), faster as compactions pay it off (x1.25),
    /// down to 16 KiB/s (`db/write/rate.rs`). Default: 16 MiB/s.
    pub delayed_write_rate: u64,
    /// Combines merge operands (`Db::merge`); with `None`, a write holding a merge is refused
    /// with `NotSupported`. Default: none.
    pub merge_operator: Option<Arc<dyn MergeOperator>>,
    /// Drops or rewrites values as flushes and compactions write them, never a value a live
    /// snapshot can see (`crate::compaction_filter`). Per column family. Default: none.
    pub compaction_filter_factory: Option<Arc<dyn CompactionFilterFactory>>,
    /// Splits keys into a prefix used by `ReadOptions::prefix_same_as_start` (and, later,
    /// prefix Bloom filters). Default: none.
    pub prefix_extractor: Option<PrefixExtractor>,
    /// Read every table's footer, index and filter at `open` to find damage early.
    /// Default: true.
    pub paranoid_checks: bool,
    /// Records the CRC32C of every table file the DB writes (flushes, compactions, ingested
    /// files) in the MANIFEST: RocksDB's `file_checksum_gen_factory` set to its crc32c
    /// generator. [`crate::Db::verify_file_checksums`] reads each file whole against it, and
    /// [`crate::Db::get_live_files_checksum_info`] lists them. Tables written while it was
    /// off have none. Default: false (RocksDB's: no generator).
    pub file_checksums: bool,
    /// Directory of the write-ahead log files; `None` keeps them in the DB directory. Put it on
    /// another device to separate the WAL's sequential, synced writes from table I/O. At open,
    /// WAL files are looked for in the DB directory and in this one (so setting it on an
    /// existing DB loses nothing); a WAL number present in both is refused as ambiguous, and a
    /// WAL the MANIFEST still needs that is in neither (the DB was last opened with another
    /// `wal_dir`) fails the open with `Corruption` naming it. Default: none.
    pub wal_dir: Option<std::path::PathBuf>,
    /// Directories for table files, each with the bytes it should hold (RocksDB's
    /// `db_paths`): newer data goes to the earlier ones, older data moves to the later ones as
    /// compaction takes it down (`compaction::output_path` has the rule; flushes and ingested
    /// files go to the first), and the last takes whatever does not fit. Empty: tables go to
    /// the DB directory. When set, tables go only to these (the MANIFEST, WALs and LOG stay
    /// in the DB directory); a family with `cf_paths` of its own uses those instead. Each
    /// table's path index is in the MANIFEST, so a DB must be reopened with at least as many
    /// paths, in the same order. The directories are created at open, and tables in them that
    /// the DB does not know are deleted then: a path must not be shared with another DB. At
    /// most four; several paths turn `level_compaction_dynamic_level_bytes` off (the levels'
    /// static sizes place the data, as in RocksDB). Default: empty.
    pub db_paths: Vec<DBPath>,
    /// The family's own table directories (RocksDB's `cf_paths`), with the rules of
    /// `db_paths`, which a family without them uses. Several families may share a directory:
    /// each places its tables as if the target size were its own, so provision the directory
    /// for all of them. Default: empty.
    pub cf_paths: Vec<DBPath>,
    /// Old info LOGs (`LOG.old.<micros>`) kept beside the active `LOG`. Default: 1000.
    pub keep_log_file_num: usize,
    /// Seconds between dumps of the `stats` property into the info LOG; 0 never dumps.
    /// Default: 600.
    pub stats_dump_period_sec: u32,
    /// Seconds between records of the statistics history (`Db::get_stats_history`,
    /// `db/stats_history.rs`): each holds every ticker's change since the last; 0 keeps none,
    /// and so does a DB without `statistics`. Default: 600.
    pub stats_persist_period_sec: u32,
    /// Bytes the statistics history may take in memory; the oldest records go beyond it.
    /// Default: 1 MiB.
    pub stats_history_buffer_size: usize,
    /// Replay the WAL into memtables at `open` without writing tables: the replayed writes
    /// stay in their WAL files and are flushed in the background like any memtable. Open is
    /// faster and needs no free space for tables (a DB on a full disk can still be opened
    /// and read); the WALs live longer. When a WAL ended in damage (a torn tail), the open
    /// writes tables as usual. Default: false.
    pub avoid_flush_during_recovery: bool,
    /// WAL files kept for reuse instead of being deleted once their writes are in tables. A
    /// reused file is overwritten in place, so a synced write into it changes no file size and
    /// allocates no block: the sync writes the data alone. WALs are then written in recyclable
    /// fragments (`docs/format/wal.md`). A damaged last record of such a WAL cannot be told from
    /// the file's old bytes and reads as the WAL's end (point-in-time semantics); with
    /// `wal_recovery_mode = AbsoluteConsistency` this is set to 0 at open. Default: 0.
    pub recycle_log_file_num: usize,
    /// Bytes of WAL files kept at most before the families whose unflushed writes keep the
    /// oldest of them are flushed (RocksDB's `max_total_wal_size`): a WAL is deleted only once
    /// every family's writes in it are in tables, so a family written rarely would otherwise
    /// keep every WAL since its last write. 0 (default): four times the memtable memory the
    /// families may hold (`write_buffer_size` x `max_write_buffer_number`, summed), as
    /// RocksDB's. WALs recovered at open are not counted.
    pub max_total_wal_size: u64,
    /// Archive WAL files instead of deleting them once their writes are in tables, and delete
    /// an archived WAL once its last write is older than this many seconds (the file's
    /// modification time; on a file system that cannot tell it, archived WALs are kept for
    /// the size limit alone). Archived WALs (`<wal_dir>/archive/`) are what
    /// `Db::get_updates_since` reads besides the live WALs; recovery ignores them. With this or
    /// `wal_size_limit_mb` non-zero, `recycle_log_file_num` is set to 0 at open (a reused file
    /// could not be archived). Default: 0 (no archive).
    pub wal_ttl_seconds: u64,
    /// Archive WAL files (as `wal_ttl_seconds`) and, after each archiving, delete the oldest
    /// archived WALs while the archive holds more than this many MiB. Default: 0 (no archive).
    pub wal_size_limit_mb: u64,
    /// Table reads (point lookups, iterators, compaction inputs) bypass the OS page cache
    /// (`O_DIRECT`): the block cache is then the only cache, and memory use is what it is
    /// configured to be. `open` fails with `NotSupported` where the file system has no direct
    /// I/O (tmpfs). Default: false.
    pub use_direct_reads: bool,
    /// Table files are read through a read-only mapping of each (`env/mapped_read.rs`) where
    /// that serves a read better than `pread`: a data block whose pages are in the OS's page
    /// cache is checked and decompressed where it lies, without a system call or a copy. A
    /// file whose pages are not cached (a database larger than memory), and every large read,
    /// still go through `pread`; a page the system fails to read through the mapping is an
    /// I/O error naming the file, as with `pread`, not a stopped process. Ignored with
    /// `use_direct_reads`. A mapped table's pages that reads touched count in the process's
    /// resident memory (as shared file pages, which the OS reclaims like the rest of its page
    /// cache). RocksDB's `allow_mmap_reads` (false there). Default: true.
    pub allow_mmap_reads: bool,
    /// Tell the OS that table files are read at random (`POSIX_FADV_RANDOM` when a table is
    /// opened), so a point read does not pull the kernel's readahead into the page cache:
    /// with a database larger than memory, that readahead evicts data that will be read.
    /// Iterators and compactions read ahead themselves. Default: true (RocksDB's
    /// `advise_random_on_open`).
    pub advise_random_on_open: bool,
    /// When a table file is deleted (compacted away and no longer read), erase its blocks
    /// from the block cache: every data block its index names and its index and filter
    /// blocks, at the cost of one pass over its index. Otherwise they hold cache memory until
    /// they age out, which a cache sized for the whole working set (a server's) may never
    /// make them do. RocksDB's `uncache_aggressiveness`: 0 leaves them, any other value
    /// erases them all. Default: 0.
    pub uncache_aggressiveness: u32,
    /// Table files written by flushes and compactions bypass the OS page cache (`O_DIRECT`),
    /// so background writes do not evict the foreground's cached pages. The WAL stays
    /// buffered. Default: false.
    pub use_direct_io_for_flush_and_compaction: bool,
    /// Compactions read each input table this many bytes at a time at least (one large read
    /// serving many blocks; what keeps compaction reads efficient under direct I/O); 0 for
    /// the automatic readahead of iterators. Default: 2 MiB, as RocksDB. A compaction reading
    /// more than four tables at once (L0 inputs, each read side by side) shares four windows'
    /// worth among them, at least 256 KiB each: under direct I/O every window is a buffer of
    /// the job's, and twenty L0 inputs held 40 MiB.
    pub compaction_readahead_size: usize,
    /// Table files being written by flushes and compactions ask the OS to start writing them
    /// out every this many bytes (0: never), so the page cache never holds gigabytes of dirty
    /// table data and the final sync has little left. Default: 0.
    pub bytes_per_sync: u64,
    /// Bounds the bytes per second flushes and compactions write to table files; one limiter
    /// may be shared by several DBs. Default: none.
    pub rate_limiter: Option<Arc<crate::env::RateLimiter>>,
    /// New WAL files are zero-filled ahead of their records, a megabyte at a time, so a synced
    /// write overwrites blocks that exist and its fdatasync writes the data alone, with no
    /// file size to journal (one sync per megabyte of WAL still does). The WAL header records
    /// it, and readers take the zeros after the last record as the log's end (format version
    /// 4, `docs/format/wal.md`). Where the file system cannot, space is reserved with
    /// `fallocate` instead. Costs a write of the zeros per megabyte of WAL. Default: true.
    pub wal_zeros_ahead: bool,
    /// A WAL written with zeros ahead (`wal_zeros_ahead`) on the operating system's file
    /// system gets its records copied into a shared mapping of those zeros when the write
    /// group hands them to the OS, instead of a `write` system call per group: the same page
    /// cache, read back and synced alike, minus the call (`env/mapped.rs`). The mapping is a
    /// window over the zeros ahead, locked in memory, so a copy never waits for a page to be
    /// read back and a failing disk cannot stop the process with `SIGBUS`; where the lock is
    /// refused (`RLIMIT_MEMLOCK`), the WAL is written with `write`. A WAL synced every few
    /// write groups lets go of its mapping after a few such syncs in a row (`env/os.rs`,
    /// `note_sync`): each sync write-protects the pages it writes back, and refaulting them
    /// costs more than the call. Measured in `docs/measurements.md`, "Write path". Default:
    /// true.
    pub wal_mmap_writes: bool,
    /// Bytes written to the WAL after which the OS is asked to start writing it out (in the
    /// background), so a later sync has less to wait for; 0: never. Default: 0.
    pub wal_bytes_per_sync: u64,
    /// Writes leave their WAL bytes in the process's buffer (64 KiB, written out when full)
    /// instead of handing each group's to the OS: fewer system calls, but a killed process
    /// loses what is buffered. `Db::flush_wal` hands them over (and syncs, if asked); synced
    /// writes are unaffected. Default: false.
    pub manual_wal_flush: bool,
    /// The most bytes of batches one write group takes (its leader's included): larger groups
    /// share one WAL write and one sync among more writers, but their members wait longer. A
    /// leader whose own batch is at most an eighth of this takes only an eighth more, so a
    /// small write is not held up by a large group. Default: 1 MiB.
    pub max_write_batch_group_size_bytes: u64,
    /// A writer waiting for its group's leader (or a writer whose group finished before an
    /// earlier one, for its publication) yields its CPU for up to
    /// `write_thread_max_yield_usec` before it sleeps, while yielding keeps ending such waits
    /// (the writers sample whether it does): a sleeping writer costs its leader a system call
    /// to wake. Waits that outlast the yields (synced
    /// writes), or yields that take `write_thread_slow_yield_usec` or more because other
    /// threads want the CPU, turn it back to sleeping. Off, a writer spins briefly and then
    /// sleeps. Default: false (RocksDB's is true): with more writers than cores, the yields
    /// took CPU from flushes and compactions (`docs/measurements.md`, "Write path").
    pub enable_write_thread_adaptive_yield: bool,
    /// The longest a waiting writer yields before it sleeps, in microseconds (0: it sleeps
    /// after a short spin). Default: 100.
    pub write_thread_max_yield_usec: u64,
    /// A yield that takes this many microseconds or more is slow (the CPU went to another
    /// thread); after three, a waiting writer sleeps. Default: 3.
    pub write_thread_slow_yield_usec: u64,
    /// The next write group starts its WAL write while this one inserts into the memtable
    /// (after this one's sync, when it syncs), instead of once this one is published: more
    /// throughput when memtable inserts are a large part of a write, a little more latency per
    /// group otherwise. Publication stays in sequence order. Groups formed in the writers'
    /// queue only: unsynced writes with `allow_concurrent_memtable_write` overlap so already.
    /// Incompatible with `unordered_write`. Default: false.
    pub enable_pipelined_write: bool,
    /// Writers insert into the memtable in parallel: an unsynced write is a group of its own
    /// and inserts its batch itself, and members of a synced group whose batch is large (16
    /// records or more) insert it themselves, in parallel with the leader. Off, every write
    /// queues for a leader, who inserts every batch of its group (one writer inserts at a
    /// time). Default: true.
    pub allow_concurrent_memtable_write: bool,
    /// A write group is published as soon as its WAL record is written (and synced, when
    /// asked), and each writer then inserts its own batch into the memtable without waiting for
    /// earlier groups: higher write throughput with many writers, at the price of weaker
    /// reads. A read (or a snapshot, or an iterator) at a sequence number may miss a write
    /// numbered below it that is still being inserted, and may see part of a batch; a writer
    /// still reads its own write once acknowledged, and durability is unchanged. Needs
    /// `allow_concurrent_memtable_write`; incompatible with `enable_pipelined_write`.
    /// Default: false.
    pub unordered_write: bool,
    /// Compression of the tables written to the last level (`num_levels - 1`, where leveled
    /// compaction with dynamic level bytes keeps most data), overriding `compression` and
    /// `compression_per_level` there (RocksDB's `bottommost_compression`). Default: none.
    pub bottommost_compression: Option<CompressionType>,
    /// RocksDB's `ttl`, in seconds (0: none). In FIFO style, a FIFO `ttl_secs` of 0 takes this
    /// value, so files whose newest data is older are deleted. In the other styles Strata does
    /// not recompact files for age; the value is kept. Default: 0.
    pub ttl: u64,
    /// Where the info LOG's lines go instead of the `LOG` file (RocksDB's `info_log`); the
    /// `LOG` file is then not written. Default: none (the `LOG` file).
    pub info_logger: Option<InfoLogger>,
    /// RocksDB options accepted without effect, each documented with why that is safe
    /// ([`AcceptedOptions`]). Default: RocksDB's defaults.
    pub accepted: AcceptedOptions,
    /// Key-value separation: values written to blob files (`BlobOptions`).
    pub blob: BlobOptions,
    /// Where the DBs opened with these options (or clones of them) count their work: made by
    /// [`Options::enable_statistics`], read by `get_ticker_count`, `get_histogram_data` and
    /// `get_statistics` (`strata::statistics` has the contract). A DB-wide option: the
    /// `default` family's options (those given to `open`) decide. Default: none (nothing is
    /// recorded).
    pub statistics: Option<Arc<crate::statistics::Statistics>>,
    /// The order of the family's keys (`set_comparator`; `crate::comparator` has the
    /// contract). Fixed when the family is created: opening it with an order of another name
    /// fails with `InvalidArgument`. Default: bytewise.
    pub comparator: crate::comparator::KeyOrder,
    /// The family's user-defined timestamps (`set_comparator_with_ts`;
    /// `crate::comparator::UserTimestamps`), with `comparator` ordering keys with their
    /// timestamps. Default: none.
    pub timestamps: Option<Arc<crate::comparator::UserTimestamps>>,
}

/// Table paths as the info LOG shows them: `dir:target_size`, comma-separated.
fn describe_paths(paths: &[DBPath]) -> String {
    paths
        .iter()
        .map(|p| format!("{}:{}", p.path().display(), p.target_size()))
        .collect::<Vec<_>>()
        .join(",")
}

impl Default for Options {
    fn default() -> Self {
        // The table settings' defaults are the table format's own (`TableOptions::default`).
        let table = TableOptions::default();
        Options {
            create_if_missing: true,
            create_missing_column_families: false,
            error_if_exists: false,
            fs: Arc::new(OsFs),
            write_buffer_size: 64 << 20,
            write_buffer_manager: None,
            db_write_buffer_size: 0,
            max_write_buffer_number: 2,
            min_write_buffer_number_to_merge: 1,
            memtable_bloom_size_ratio: 0.01,
            vector_memtable: false,
            max_open_files: -1,
            block_cache_size: 32 << 20,
            block_cache: None,
            row_cache: None,
            block_size: table.block_size,
            block_size_deviation: table.block_size_deviation,
            block_restart_interval: table.block_restart_interval,
            index_block_restart_interval: table.index_block_restart_interval,
            bloom_bits_per_key: table.bloom_bits_per_key,
            cache_index_and_filter_blocks: false,
            cache_index_and_filter_blocks_with_high_priority: true,
            pin_l0_filter_and_index_blocks_in_cache: false,
            pin_top_level_index_and_filter: true,
            index_type: table.index_type,
            partition_filters: table.partition_filters,
            metadata_block_size: table.metadata_block_size,
            block_align: table.block_align,
            user_key_index: table.user_key_index,
            compression: table.compression,
            compression_per_level: Vec::new(),
            zstd_level: table.zstd_level,
            compression_parallel_threads: table.parallel_threads,
            checksum: table.checksum,
            wal_recovery_mode: WalRecoveryMode::PointInTime,
            num_levels: 7,
            max_background_jobs: 2,
            max_subcompactions: 1,
            trim_heap_after_compaction: true,
            level0_file_num_compaction_trigger: 4,
            level0_slowdown_writes_trigger: 20,
            level0_compaction_batching: true,
            snapshot_reads: true,
            level0_stop_writes_trigger: 36,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10.0,
            level_compaction_dynamic_level_bytes: true,
            target_file_size_base: 64 << 20,
            target_file_size_multiplier: 1,
            max_compaction_bytes: 0,
            compaction_style: CompactionStyle::Leveled,
            compaction_options_universal: UniversalCompactionOptions::default(),
            compaction_options_fifo: FifoCompactionOptions::default(),
            compaction_options_tiered: TieredCompactionOptions::default(),
            disable_auto_compactions: false,
            soft_pending_compaction_bytes_limit: 64 << 30,
            hard_pending_compaction_bytes_limit: 256 << 30,
            delayed_write_rate: 16 << 20,
            paranoid_checks: true,
            file_checksums: false,
            avoid_flush_during_recovery: false,
            recycle_log_file_num: 0,
            max_total_wal_size: 0,
            wal_ttl_seconds: 0,
            wal_size_limit_mb: 0,
            wal_zeros_ahead: true,
            wal_mmap_writes: true,
            use_direct_reads: false,
            allow_mmap_reads: true,
            advise_random_on_open: true,
            uncache_aggressiveness: 0,
            use_direct_io_for_flush_and_compaction: false,
            bytes_per_sync: 0,
            rate_limiter: None,
            compaction_readahead_size: 2 << 20,
            wal_bytes_per_sync: 0,
            manual_wal_flush: false,
            max_write_batch_group_size_bytes: 1 << 20,
            enable_write_thread_adaptive_yield: false,
            write_thread_max_yield_usec: 100,
            write_thread_slow_yield_usec: 3,
            enable_pipelined_write: false,
            allow_concurrent_memtable_write: true,
            unordered_write: false,
            statistics: None,
            comparator: crate::comparator::KeyOrder::Bytewise,
            timestamps: None,
            wal_dir: None,
            db_paths: Vec::new(),
            cf_paths: Vec::new(),
            keep_log_file_num: 1000,
            stats_dump_period_sec: 600,
            stats_persist_period_sec: 600,
            stats_history_buffer_size: 1 << 20,
            merge_operator: None,
            compaction_filter_factory: None,
            prefix_extractor: None,
            bottommost_compression: None,
            ttl: 0,
            info_logger: None,
            accepted: AcceptedOptions::default(),
            blob: BlobOptions::default(),
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("write_buffer_size", &self.write_buffer_size)
            .field("max_write_buffer_number", &self.max_write_buffer_number)
            .field("min_write_buffer_number_to_merge", &self.min_write_buffer_number_to_merge)
            .field("memtable_bloom_size_ratio", &self.memtable_bloom_size_ratio)
            .field("vector_memtable", &self.vector_memtable)
            .field("write_buffer_manager", &self.write_buffer_manager)
            .field("db_write_buffer_size", &self.db_write_buffer_size)
            .field("block_cache_size", &self.block_cache_size)
            .field("block_cache", &self.block_cache)
            .field("row_cache", &self.row_cache)
            .field("block_size", &self.block_size)
            .field("compression", &self.compression)
            .field("wal_recovery_mode", &self.wal_recovery_mode)
            .field("statistics", &self.statistics)
            .finish_non_exhaustive()
    }
}

impl Options {
    /// Filters values with `f(level, key, value)` in every flush and compaction of the family
    /// (rust-rocksdb's `set_compaction_filter`; the closure is shared by concurrent runs). `f`
    /// returns a [`Decision`] or the `rocksdb` crate's [`CompactionDecision`].
    pub fn set_compaction_filter<F, D>(&mut self, name: &str, f: F)
    where
        F: Fn(u32, &[u8], &[u8]) -> D + Send + Sync + 'static,
        D: Into<Decision>,
    {
        let f = move |level: u32, key: &[u8], value: &[u8]| f(level, key, value).into();
        self.compaction_filter_factory = Some(Arc::new(FnFilterFactory::new(name, f)));
    }

    /// Makes a filter per flush or compaction with `factory` (rust-rocksdb's
    /// `set_compaction_filter_factory`).
    pub fn set_compaction_filter_factory(
        &mut self,
        factory: impl CompactionFilterFactory + 'static,
    ) {
        self.compaction_filter_factory = Some(Arc::new(factory));
    }

    /// Checks option values that would make the engine misbehave.
    pub(crate) fn validate(&self) -> crate::Result<()> {
        self.check_comparator()?;
        let bad = |s: &str| Err(crate::Error::InvalidArgument(s.to_string()));
        if self.write_buffer_size < 4096 {
            return bad("write_buffer_size must be at least 4096");
        }
        if self.max_write_buffer_number < 2 {
            return bad("max_write_buffer_number must be at least 2");
        }
        if !(0.0..=0.25).contains(&self.memtable_bloom_size_ratio) {
            return Err(crate::Error::InvalidArgument(format!(
                "memtable_bloom_size_ratio = {} is not between 0 and 0.25",
                self.memtable_bloom_size_ratio
            )));
        }
        if self.db_write_buffer_size > 0 && self.write_buffer_manager.is_some() {
            return Err(crate::Error::InvalidArgument(format!(
                "db_write_buffer_size = {} and write_buffer_manager are both set: the \
                 manager's buffer_size is the budget; set db_write_buffer_size to 0",
                self.db_write_buffer_size
            )));
        }
        if self.db_write_buffer_size > 0 && self.db_write_buffer_size < MIN_DB_WRITE_BUFFER_SIZE {
            return Err(crate::Error::InvalidArgument(format!(
                "db_write_buffer_size = {}: must be 0 (no DB-wide budget) or at least \
                 {MIN_DB_WRITE_BUFFER_SIZE}",
                self.db_write_buffer_size
            )));
        }
        if self.block_size == 0 || self.block_size > crate::sstable::builder::MAX_BLOCK_SIZE {
            return bad("block_size must be between 1 and 1 GiB");
        }
        if self.block_restart_interval == 0 {
            return bad("block_restart_interval must be at least 1");
        }
        if self.block_size_deviation > 100 {
            return bad("block_size_deviation must be between 0 and 100 (percent)");
        }
        if self.index_block_restart_interval == 0 {
            return bad("index_block_restart_interval must be at least 1");
        }
        if self.metadata_block_size == 0
            || self.metadata_block_size > crate::sstable::builder::MAX_BLOCK_SIZE
        {
            return bad("metadata_block_size must be between 1 and 1 GiB");
        }
        // One level holds every table in L0: a universal or FIFO family's sorted runs all
        // live there (RocksDB's too); leveled and tiered compaction need levels below L0.
        let min_levels = match self.compaction_style {
            CompactionStyle::Universal | CompactionStyle::Fifo => 1,
            CompactionStyle::Leveled | CompactionStyle::Tiered => 2,
        };
        if !(min_levels..=MAX_NUM_LEVELS).contains(&self.num_levels) {
            return Err(crate::Error::InvalidArgument(format!(
                "num_levels = {}: must be between {min_levels} and {MAX_NUM_LEVELS} with {:?} \
                 compaction (1 is allowed with universal and FIFO)",
                self.num_levels, self.compaction_style
            )));
        }
        if self.max_background_jobs == 0 {
            return bad("max_background_jobs must be at least 1");
        }
        if self.max_subcompactions == 0 {
            return bad("max_subcompactions must be at least 1");
        }
        if self.level0_file_num_compaction_trigger == 0 {
            return bad("level0_file_num_compaction_trigger must be at least 1");
        }
        if self.max_bytes_for_level_multiplier <= 1.0
            || !self.max_bytes_for_level_multiplier.is_finite()
        {
            return bad("max_bytes_for_level_multiplier must be greater than 1");
        }
        if self.max_bytes_for_level_base == 0 || self.target_file_size_base == 0 {
            return bad("max_bytes_for_level_base and target_file_size_base must be positive");
        }
        if self.delayed_write_rate == 0 {
            return bad("delayed_write_rate must be positive");
        }
        if self.unordered_write && self.enable_pipelined_write {
            return bad("unordered_write is incompatible with enable_pipelined_write");
        }
        if self.unordered_write && !self.allow_concurrent_memtable_write {
            return bad("unordered_write needs allow_concurrent_memtable_write");
        }
        if self.unordered_write && self.blob.write_blobs_at_commit {
            // Each member of an unordered group inserts its own batch, as given; values
            // written at commit replace the group's records.
            return bad("unordered_write is incompatible with write_blobs_at_commit");
        }
        match self.compaction_style {
            CompactionStyle::Universal => self.compaction_options_universal.validate(),
            CompactionStyle::Fifo => self.compaction_options_fifo.validate(),
            CompactionStyle::Tiered => self.compaction_options_tiered.validate(),
            CompactionStyle::Leveled => Ok(()),
        }
    }

    /// These options with the write-stall settings made consistent, as RocksDB's
    /// `SanitizeOptions` does: slowdown >= compaction trigger (in universal style, >= the
    /// sorted-run count at which a merge is sure to be picked: trigger + min_merge_width - 1;
    /// in tiered style, >= max_sorted_runs + 1), stop >= slowdown, FIFO's L0 stall triggers off, a soft
    /// pending-bytes limit of 0 takes the hard one, a hard limit below the soft one is raised.
    /// The DB runs with the sanitized values, so no accepted configuration can stop writes
    /// at a point that compaction is never asked to get below.
    pub(crate) fn sanitized(&self) -> Options {
        let mut o = self.clone();
        if o.compaction_style == CompactionStyle::Fifo {
            // FIFO only deletes (or merges a few small files): stalling writes on the L0
            // file count would wait for compactions that are not meant to reduce it.
            o.level0_slowdown_writes_trigger = usize::MAX;
            o.level0_stop_writes_trigger = usize::MAX;
        }
        // The stall count universal compaction always brings back down: with `trigger` runs
        // at rest, its run-count rule fires once `trigger + min_merge_width - 1` runs exist.
        // Tiered: the run budget always merges once more than `max_sorted_runs` runs exist.
        let floor = match o.compaction_style {
            CompactionStyle::Universal => {
                let width = o.compaction_options_universal.min_merge_width.max(2) as usize;
                o.level0_file_num_compaction_trigger.saturating_add(width - 1)
            }
            CompactionStyle::Tiered => {
                (o.compaction_options_tiered.max_sorted_runs as usize).saturating_add(1)
            }
            CompactionStyle::Leveled | CompactionStyle::Fifo => {
                o.level0_file_num_compaction_trigger
            }
        };
        o.level0_slowdown_writes_trigger = o.level0_slowdown_writes_trigger.max(floor);
        o.level0_stop_writes_trigger =
            o.level0_stop_writes_trigger.max(o.level0_slowdown_writes_trigger);
        let table_io = crate::env::TableIo {
            direct_reads: o.use_direct_reads,
            mapped_reads: o.allow_mmap_reads && !o.use_direct_reads,
            direct_writes: o.use_direct_io_for_flush_and_compaction,
            bytes_per_sync: o.bytes_per_sync,
            rate_limiter: o.rate_limiter.clone(),
        };
        if !table_io.is_plain() {
            o.fs = Arc::new(crate::env::TableFileFs::new(o.fs.clone(), table_io));
        }
        if o.wal_recovery_mode == WalRecoveryMode::AbsoluteConsistency {
            // A reused WAL's old bytes would read as damage after its last record.
            o.recycle_log_file_num = 0;
        }
        if o.archives_wals() {
            // RocksDB's rule: a WAL kept for reuse would be overwritten, not archived.
            o.recycle_log_file_num = 0;
        }
        if o.soft_pending_compaction_bytes_limit == 0 {
            o.soft_pending_compaction_bytes_limit = o.hard_pending_compaction_bytes_limit;
        } else if o.hard_pending_compaction_bytes_limit > 0
            && o.hard_pending_compaction_bytes_limit < o.soft_pending_compaction_bytes_limit
        {
            o.hard_pending_compaction_bytes_limit = o.soft_pending_compaction_bytes_limit;
        }
        o
    }

    /// Whether `pending` estimated compaction bytes reach the hard limit (0 = no limit).
    pub(crate) fn pending_bytes_stop(&self, pending: u64) -> bool {
        self.hard_pending_compaction_bytes_limit > 0
            && pending >= self.hard_pending_compaction_bytes_limit
    }

    /// Whether `pending` estimated compaction bytes reach the soft limit (0 = no limit).
    pub(crate) fn pending_bytes_slowdown(&self, pending: u64) -> bool {
        self.soft_pending_compaction_bytes_limit > 0
            && pending >= self.soft_pending_compaction_bytes_limit
    }

    /// Every option as `(name, value)`, in declaration order, for the info LOG.
    pub(crate) fn describe(&self) -> Vec<(&'static str, String)> {
        let name_of = |m: &Option<Arc<dyn MergeOperator>>| {
            m.as_ref().map_or_else(|| "none".to_string(), |m| m.name().to_string())
        };
        let mut v = vec![
            ("create_if_missing", self.create_if_missing.to_string()),
            ("create_missing_column_families", self.create_missing_column_families.to_string()),
            ("error_if_exists", self.error_if_exists.to_string()),
            ("write_buffer_size", self.write_buffer_size.to_string()),
            ("max_write_buffer_number", self.max_write_buffer_number.to_string()),
            ("min_write_buffer_number_to_merge", self.min_write_buffer_number_to_merge.to_string()),
            ("memtable_bloom_size_ratio", self.memtable_bloom_size_ratio.to_string()),
            ("db_write_buffer_size", self.db_write_buffer_size.to_string()),
            (
                "write_buffer_manager",
                self.write_buffer_manager.as_ref().map_or_else(
                    || "none".to_string(),
                    |m| {
                        format!(
                            "buffer_size {}, cost_to_cache {}, allow_stall {}",
                            m.buffer_size(),
                            m.cost_to_cache(),
                            m.allow_stall()
                        )
                    },
                ),
            ),
            ("max_open_files", self.max_open_files.to_string()),
            ("block_cache_size", self.block_cache_size.to_string()),
            (
                "block_cache",
                self.block_cache.as_ref().map_or_else(
                    || "none".to_string(),
                    |c| format!("{:?} of {} bytes (shared)", c.cache_type(), c.capacity()),
                ),
            ),
            (
                "row_cache",
                self.row_cache
                    .as_ref()
                    .map_or_else(|| "none".to_string(), |c| format!("{} bytes", c.capacity())),
            ),
            ("block_size", self.block_size.to_string()),
            ("block_size_deviation", self.block_size_deviation.to_string()),
            ("block_restart_interval", self.block_restart_interval.to_string()),
            ("index_block_restart_interval", self.index_block_restart_interval.to_string()),
            ("bloom_bits_per_key", self.bloom_bits_per_key.to_string()),
            ("cache_index_and_filter_blocks", self.cache_index_and_filter_blocks.to_string()),
            (
                "cache_index_and_filter_blocks_with_high_priority",
                self.cache_index_and_filter_blocks_with_high_priority.to_string(),
            ),
            (
                "pin_l0_filter_and_index_blocks_in_cache",
                self.pin_l0_filter_and_index_blocks_in_cache.to_string(),
            ),
            ("pin_top_level_index_and_filter", self.pin_top_level_index_and_filter.to_string()),
            ("index_type", format!("{:?}", self.index_type)),
            ("partition_filters", self.partition_filters.to_string()),
            ("metadata_block_size", self.metadata_block_size.to_string()),
            ("block_align", self.block_align.to_string()),
            ("compression", format!("{:?}", self.compression)),
            ("compression_per_level", format!("{:?}", self.compression_per_level)),
            ("zstd_level", self.zstd_level.to_string()),
            ("compression_parallel_threads", self.compression_parallel_threads.to_string()),
            ("checksum", format!("{:?}", self.checksum)),
            ("wal_recovery_mode", format!("{:?}", self.wal_recovery_mode)),
            ("num_levels", self.num_levels.to_string()),
            ("max_background_jobs", self.max_background_jobs.to_string()),
            ("max_subcompactions", self.max_subcompactions.to_string()),
            ("trim_heap_after_compaction", self.trim_heap_after_compaction.to_string()),
            (
                "level0_file_num_compaction_trigger",
                self.level0_file_num_compaction_trigger.to_string(),
            ),
            ("level0_slowdown_writes_trigger", self.level0_slowdown_writes_trigger.to_string()),
            ("level0_compaction_batching", self.level0_compaction_batching.to_string()),
            ("snapshot_reads", self.snapshot_reads.to_string()),
            ("level0_stop_writes_trigger", self.level0_stop_writes_trigger.to_string()),
            ("max_bytes_for_level_base", self.max_bytes_for_level_base.to_string()),
            ("max_bytes_for_level_multiplier", self.max_bytes_for_level_multiplier.to_string()),
            (
                "level_compaction_dynamic_level_bytes",
                self.level_compaction_dynamic_level_bytes.to_string(),
            ),
            ("target_file_size_base", self.target_file_size_base.to_string()),
            ("target_file_size_multiplier", self.target_file_size_multiplier.to_string()),
            ("max_compaction_bytes", self.max_compaction_bytes.to_string()),
            ("compaction_style", format!("{:?}", self.compaction_style)),
            ("compaction_options_universal", format!("{:?}", self.compaction_options_universal)),
            ("compaction_options_fifo", format!("{:?}", self.compaction_options_fifo)),
            ("compaction_options_tiered", format!("{:?}", self.compaction_options_tiered)),
            ("disable_auto_compactions", self.disable_auto_compactions.to_string()),
            (
                "soft_pending_compaction_bytes_limit",
                self.soft_pending_compaction_bytes_limit.to_string(),
            ),
            (
                "hard_pending_compaction_bytes_limit",
                self.hard_pending_compaction_bytes_limit.to_string(),
            ),
            ("delayed_write_rate", self.delayed_write_rate.to_string()),
            ("merge_operator", name_of(&self.merge_operator)),
            (
                "compaction_filter_factory",
                self.compaction_filter_factory
                    .as_ref()
                    .map_or_else(String::new, |f| f.name().to_string()),
            ),
            ("prefix_extractor", format!("{:?}", self.prefix_extractor)),
            ("advise_random_on_open", self.advise_random_on_open.to_string()),
            ("uncache_aggressiveness", self.uncache_aggressiveness.to_string()),
            ("paranoid_checks", self.paranoid_checks.to_string()),
            (
                "wal_dir",
                self.wal_dir.as_ref().map_or_else(String::new, |p| p.display().to_string()),
            ),
            ("db_paths", describe_paths(&self.db_paths)),
            ("cf_paths", describe_paths(&self.cf_paths)),
            ("keep_log_file_num", self.keep_log_file_num.to_string()),
            ("stats_dump_period_sec", self.stats_dump_period_sec.to_string()),
            ("stats_persist_period_sec", self.stats_persist_period_sec.to_string()),
            ("stats_history_buffer_size", self.stats_history_buffer_size.to_string()),
            ("avoid_flush_during_recovery", self.avoid_flush_during_recovery.to_string()),
            ("recycle_log_file_num", self.recycle_log_file_num.to_string()),
            ("max_total_wal_size", self.max_total_wal_size.to_string()),
            ("WAL_ttl_seconds", self.wal_ttl_seconds.to_string()),
            ("WAL_size_limit_MB", self.wal_size_limit_mb.to_string()),
            ("wal_zeros_ahead", self.wal_zeros_ahead.to_string()),
            ("wal_mmap_writes", self.wal_mmap_writes.to_string()),
            ("compaction_readahead_size", self.compaction_readahead_size.to_string()),
            ("bytes_per_sync", self.bytes_per_sync.to_string()),
            (
                "rate_limiter_bytes_per_sec",
                self.rate_limiter.as_ref().map_or(0, |r| r.bytes_per_sec()).to_string(),
            ),
            (
                "rate_limiter_auto_tuned",
                self.rate_limiter.as_ref().is_some_and(|r| r.is_auto_tuned()).to_string(),
            ),
            ("use_direct_reads", self.use_direct_reads.to_string()),
            ("allow_mmap_reads", self.allow_mmap_reads.to_string()),
            (
                "use_direct_io_for_flush_and_compaction",
                self.use_direct_io_for_flush_and_compaction.to_string(),
            ),
            ("wal_bytes_per_sync", self.wal_bytes_per_sync.to_string()),
            ("manual_wal_flush", self.manual_wal_flush.to_string()),
            (
                "enable_write_thread_adaptive_yield",
                self.enable_write_thread_adaptive_yield.to_string(),
            ),
            ("write_thread_max_yield_usec", self.write_thread_max_yield_usec.to_string()),
            ("write_thread_slow_yield_usec", self.write_thread_slow_yield_usec.to_string()),
            ("bottommost_compression", format!("{:?}", self.bottommost_compression)),
            ("ttl", self.ttl.to_string()),
        ];
        v.extend(self.accepted.describe());
        v.extend(self.blob.describe());
        v
    }

    /// Whether obsolete WAL files go to the archive (`wal_ttl_seconds` or `wal_size_limit_mb`
    /// set) instead of being deleted.
    pub(crate) fn archives_wals(&self) -> bool {
        self.wal_ttl_seconds > 0 || self.wal_size_limit_mb > 0
    }

    /// The options the compaction picker reads.
    pub(crate) fn picker_options(&self) -> crate::compaction::picker::PickerOptions {
        crate::compaction::picker::PickerOptions {
            order: self.comparator.clone(),
            num_levels: self.num_levels,
            level0_file_num_compaction_trigger: self.level0_file_num_compaction_trigger,
            level0_batch_files: self.level0_file_num_compaction_trigger,
            level0_carry_over: false,
            level0_drain: false,
            level0_slowdown_writes_trigger: self.level0_slowdown_writes_trigger,
            max_bytes_for_level_base: self.max_bytes_for_level_base,
            max_bytes_for_level_multiplier: self.max_bytes_for_level_multiplier,
            dynamic_level_bytes: self.level_compaction_dynamic_level_bytes,
            target_file_size_base: self.target_file_size_base,
            target_file_size_multiplier: self.target_file_size_multiplier,
            max_compaction_bytes: if self.max_compaction_bytes == 0 {
                self.target_file_size_base.saturating_mul(25)
            } else {
                self.max_compaction_bytes
            },
            style: self.compaction_style,
            universal: self.compaction_options_universal.clone(),
            fifo: {
                // RocksDB's `ttl` is FIFO's file age limit when FIFO's own is unset; read here,
                // so a `Db::set_options` change of either applies.
                let mut f = self.compaction_options_fifo.clone();
                if f.ttl_secs == 0 {
                    f.ttl_secs = self.ttl;
                }
                f
            },
            tiered: self.compaction_options_tiered.clone(),
            write_buffer_size: self.write_buffer_size as u64,
            blob_gc: (self.blob.enable_blob_gc
                && self.blob.blob_gc_force_threshold < 1.0
                && self.compaction_style != crate::compaction::style::CompactionStyle::Fifo)
                .then_some((self.blob.blob_gc_age_cutoff, self.blob.blob_gc_force_threshold)),
        }
    }

    /// The immutable memtables a flush waits for (`min_write_buffer_number_to_merge`, as it
    /// takes effect).
    pub(crate) fn flush_merge_min(&self) -> usize {
        self.min_write_buffer_number_to_merge
            .clamp(1, self.max_write_buffer_number.saturating_sub(1).max(1))
    }

    /// The table format options for tables written to `level`.
    pub(crate) fn table_options_for_level(&self, level: usize) -> TableOptions {
        let mut t = self.table_options();
        if let Some(last) = self.compression_per_level.last() {
            t.compression = *self.compression_per_level.get(level).unwrap_or(last);
        }
        if let (Some(c), true) = (self.bottommost_compression, level + 1 >= self.num_levels) {
            t.compression = c;
        }
        t
    }

    /// The table format options these options imply.
    pub(crate) fn table_options(&self) -> TableOptions {
        TableOptions {
            block_size: self.block_size,
            block_size_deviation: self.block_size_deviation,
            block_restart_interval: self.block_restart_interval,
            index_block_restart_interval: self.index_block_restart_interval,
            bloom_bits_per_key: self.bloom_bits_per_key,
            compression: self.compression,
            checksum: self.checksum,
            zstd_level: self.zstd_level,
            parallel_threads: self.compression_parallel_threads,
            index_type: self.index_type,
            partition_filters: self.partition_filters,
            metadata_block_size: self.metadata_block_size,
            block_align: self.block_align,
            user_key_index: self.user_key_index,
            order: self.comparator.clone(),
            file_checksum: self.file_checksums,
        }
    }
}

/// Options of one write.
#[derive(Clone, Copy, Debug)]
pub struct WriteOptions {
    /// fdatasync the WAL before acknowledging: the write then survives power loss. Without it
    /// the write survives a killed process only. Default: false.
    pub sync: bool,
    /// Skip the WAL: the write lives only in the memtable until flushed and is lost on a crash.
    /// Default: false.
    pub disable_wal: bool,
    /// RocksDB's `ignore_missing_column_families`: kept without effect, so a write naming a
    /// family that no longer exists gets the result it gets with `false` (code counting on
    /// such writes being skipped silently sees that result instead). Default: false.
    pub ignore_missing_column_families: bool,
    /// A write that would wait (a write stall's slowdown or stop, or the write buffer
    /// manager's stall) fails with `Incomplete` instead, writing nothing, as RocksDB's.
    /// Default: false.
    pub no_slowdown: bool,
    /// RocksDB's `low_pri` (slow this write down while compaction is behind): kept, no effect.
    /// Default: false.
    pub low_pri: bool,
    /// RocksDB's `memtable_insert_hint_per_batch`: kept, no effect (the skiplist takes no
    /// hints). Default: false.
    pub memtable_insert_hint_per_batch: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions::new()
    }
}

impl WriteOptions {
    /// Default write options (no sync, WAL on, may wait in stalls); `const`, so that
    /// constants can be built with `..WriteOptions::new()`.
    pub const fn new() -> Self {
        WriteOptions {
            sync: false,
            disable_wal: false,
            ignore_missing_column_families: false,
            no_slowdown: false,
            low_pri: false,
            memtable_insert_hint_per_batch: false,
        }
    }

    /// Sets `sync` (rocksdb-crate style setter).
    pub fn set_sync(&mut self, sync: bool) {
        self.sync = sync;
    }

    /// Sets `disable_wal` (rocksdb-crate style setter).
    pub fn disable_wal(&mut self, disable: bool) {
        self.disable_wal = disable;
    }
}

/// Options of one read.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// Verify block checksums on every read from disk. Default: true.
    pub verify_checksums: bool,
    /// Put blocks read from disk into the block cache. Turn off for large scans that would
    /// evict the working set. Default: true.
    pub fill_cache: bool,
    /// Read at this snapshot instead of the latest state. Default: none.
    pub snapshot: Option<SnapshotHandle>,
    /// Iterators see no key below this (inclusive bound). Default: none.
    pub iterate_lower_bound: Option<Vec<u8>>,
    /// Iterators see no key at or above this (exclusive bound). Default: none.
    pub iterate_upper_bound: Option<Vec<u8>>,
    /// Iterators stop at the first key whose prefix (by `Options::prefix_extractor`) differs
    /// from the start's, as RocksDB defines it: after a seek, the start is the seek target's
    /// prefix; after `seek_to_first`/`seek_to_last` (`IteratorMode::Start`/`End`), the prefix
    /// of the first key found. Prefixes are compared as the extractor takes them: with
    /// `Fixed(4)`, a seek to `"ab"` (its own prefix, being short) yields only the key `"ab"`,
    /// not `"abcd1"` (prefix `"abcd"`). Without an extractor the option does nothing.
    /// Default: false.
    pub prefix_same_as_start: bool,
    /// Iterators read each table this many bytes at a time at least (one large read serving
    /// several blocks). 0: automatic, as RocksDB's: after two block reads in a row that
    /// continue each other (a forward scan), 8 KiB, doubling per read up to 256 KiB.
    /// Default: 0.
    pub readahead_size: usize,
    /// Which data the read may touch: with [`ReadTier::BlockCache`] (or `Memtable`) a point
    /// read that would read a data block from its file fails with `Incomplete`. Opening a
    /// table not yet open, and its index and filter blocks when they are not held by the
    /// table reader, still read the file. Iterators read as with `All`. Default: `All`.
    pub read_tier: ReadTier,
    /// RocksDB's `total_order_seek`: Strata's iterators always seek in total order (no
    /// prefix index or prefix filter limits them), which is what `true` asks. Default: false.
    pub total_order_seek: bool,
    /// RocksDB's `max_skippable_internal_keys` (an iterator gives up with `Incomplete` after
    /// skipping this many hidden entries): kept; Strata's iterators skip as many as there
    /// are. Default: 0.
    pub max_skippable_internal_keys: u64,
    /// RocksDB's `background_purge_on_iterator_cleanup`: kept; obsolete files an iterator
    /// held are deleted by the background thread in Strata anyway. Default: false.
    pub background_purge_on_iterator_cleanup: bool,
    /// RocksDB's `ignore_range_deletions`, a promise that the DB holds no range deletion so
    /// reads may skip looking: kept. Strata applies range deletions either way, which gives
    /// the same answers when the promise holds and the right ones when it does not.
    /// Default: false.
    pub ignore_range_deletions: bool,
    /// RocksDB's `auto_readahead_size`: kept; `readahead_size` = 0 already reads ahead
    /// automatically. Default: true.
    pub auto_readahead_size: bool,
    /// RocksDB's `deadline`: kept, not enforced (reads run to completion). Default: none.
    pub deadline: Option<std::time::Duration>,
    /// RocksDB's `io_timeout`: kept, not enforced. Default: none.
    pub io_timeout: Option<std::time::Duration>,
    /// RocksDB's `tailing`: a forward Rust iterator (`Db::iterator_opt` and the like) that
    /// reaches the end reads the DB's latest state and goes on after the last key it yielded,
    /// so it sees writes made after it was created. Raw cursors read one state (their
    /// `refresh` re-reads). Default: false.
    pub tailing: bool,
    /// RocksDB's `pin_data`: kept; Strata's iterator keys stay valid until the next move, as
    /// without it. Default: false.
    pub pin_data: bool,
    /// RocksDB's `async_io`: kept; reads are synchronous. Default: false.
    pub async_io: bool,
    /// The user-defined timestamp to read at (`set_timestamp`): required by a family with
    /// timestamps (each key reads as its newest version at or below it), refused with
    /// `InvalidArgument` by one without, as RocksDB's. Default: none.
    pub timestamp: Option<Vec<u8>>,
    /// The oldest timestamp an iterator returns versions of (`set_iter_start_ts`): with it an
    /// iterator over a family with timestamps returns every version in range, as RocksDB's
    /// (`db/ts_iter.rs`); point reads ignore it. Default: none.
    pub iter_start_ts: Option<Vec<u8>>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            verify_checksums: true,
            fill_cache: true,
            snapshot: None,
            iterate_lower_bound: None,
            iterate_upper_bound: None,
            prefix_same_as_start: false,
            readahead_size: 0,
            read_tier: ReadTier::All,
            total_order_seek: false,
            max_skippable_internal_keys: 0,
            background_purge_on_iterator_cleanup: false,
            ignore_range_deletions: false,
            auto_readahead_size: true,
            deadline: None,
            io_timeout: None,
            tailing: false,
            pin_data: false,
            async_io: false,
            timestamp: None,
            iter_start_ts: None,
        }
    }
}

impl ReadOptions {
    /// Reads at `snapshot` (rocksdb-crate style setter).
    pub fn set_snapshot(&mut self, snapshot: &SnapshotHandle) {
        self.snapshot = Some(snapshot.clone());
    }

    /// Sets the inclusive lower bound of iterators (rocksdb-crate style setter).
    pub fn set_iterate_lower_bound(&mut self, key: impl Into<Vec<u8>>) {
        self.iterate_lower_bound = Some(key.into());
    }

    /// Sets the exclusive upper bound of iterators (rocksdb-crate style setter).
    pub fn set_iterate_upper_bound(&mut self, key: impl Into<Vec<u8>>) {
        self.iterate_upper_bound = Some(key.into());
    }

    /// Sets `prefix_same_as_start` (rocksdb-crate style setter).
    pub fn set_prefix_same_as_start(&mut self, v: bool) {
        self.prefix_same_as_start = v;
    }

    /// Sets `fill_cache` (rocksdb-crate style setter).
    pub fn fill_cache(&mut self, v: bool) {
        self.fill_cache = v;
    }

    /// Sets `verify_checksums` (rocksdb-crate style setter).
    pub fn set_verify_checksums(&mut self, v: bool) {
        self.verify_checksums = v;
    }
}
