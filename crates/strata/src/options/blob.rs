//! Key-value separation settings (RocksDB's integrated BlobDB options, `crate::blob`).

use crate::sstable::{Cache, CompressionType};

/// Blob file settings of a family: which values flushes and compactions write to blob
/// files, and how garbage collection empties old ones. Changed with `set_options`, they take
/// effect at the next flush or compaction (at the next write for values written at commit);
/// `write_blobs_at_commit` is set when the family is opened.
#[derive(Clone, Debug)]
pub struct BlobOptions {
    /// `enable_blob_files`: values of at least `min_blob_size` bytes go to blob files.
    /// Default: false.
    pub enable_blob_files: bool,
    /// `min_blob_size`. Default: 0 (every value).
    pub min_blob_size: u64,
    /// `blob_file_size`: a blob file is finished once it holds this many bytes. Default:
    /// 256 MiB.
    pub blob_file_size: u64,
    /// `write_blobs_at_commit`: with `enable_blob_files`, a put's value of at least
    /// `min_blob_size` bytes goes to a blob file as the write commits, and the WAL and the
    /// memtable hold its blob index, so the value is written once (RocksDB's stacked BlobDB
    /// did so; its integrated BlobDB moves values at the flush, after the WAL and the
    /// memtable held them). Each memtable has its blob file, finished when the memtable is
    /// flushed; a memtable whose blob file reaches `blob_file_size` is full. A synced write
    /// syncs the blob files before the WAL. Set at open (not with `set_options`);
    /// incompatible with `unordered_write`. Default: false.
    pub write_blobs_at_commit: bool,
    /// `blob_compression_type`: compression of each value in a blob file (`None`: none).
    pub blob_compression_type: Option<CompressionType>,
    /// `enable_blob_garbage_collection`: compactions rewrite the values still live in the
    /// oldest blob files. Default: false.
    pub enable_blob_gc: bool,
    /// `blob_garbage_collection_age_cutoff`: the share of blob files (oldest first) whose
    /// values compactions rewrite. Default: 0.25.
    pub blob_gc_age_cutoff: f64,
    /// `blob_garbage_collection_force_threshold`: when the blob files under the age cutoff
    /// are at least this share garbage, the tables referring to the oldest of them are
    /// compacted (to empty it) even when no compaction is due. Default: 1.0 (never).
    pub blob_gc_force_threshold: f64,
    /// `blob_compaction_readahead_size`: accepted; a compaction reads each blob file it
    /// collects ahead by itself (`blob::readahead`).
    pub blob_compaction_readahead_size: u64,
    /// `blob_cache`: the cache blob values read are kept in, charged like blocks. Give it
    /// the block cache (`Options::block_cache`) to share that one, or a cache of their own.
    /// Default: none, as RocksDB's: values are read from their files (through the OS page
    /// cache) each time. Values rarely read twice would otherwise evict the tables' blocks
    /// and cost every read an insertion and an eviction.
    pub blob_cache: Option<Cache>,
}

impl Default for BlobOptions {
    fn default() -> Self {
        BlobOptions {
            enable_blob_files: false,
            min_blob_size: 0,
            blob_file_size: 256 << 20,
            write_blobs_at_commit: false,
            blob_compression_type: None,
            enable_blob_gc: false,
            blob_gc_age_cutoff: 0.25,
            blob_gc_force_threshold: 1.0,
            blob_compaction_readahead_size: 0,
            blob_cache: None,
        }
    }
}

impl BlobOptions {
    /// The settings as `(name, value)` for the info LOG, with RocksDB's names.
    pub(crate) fn describe(&self) -> Vec<(&'static str, String)> {
        vec![
            ("enable_blob_files", self.enable_blob_files.to_string()),
            ("min_blob_size", self.min_blob_size.to_string()),
            ("blob_file_size", self.blob_file_size.to_string()),
            ("write_blobs_at_commit", self.write_blobs_at_commit.to_string()),
            ("blob_compression_type", format!("{:?}", self.blob_compression_type)),
            ("enable_blob_garbage_collection", self.enable_blob_gc.to_string()),
            ("blob_garbage_collection_age_cutoff", format!("{:.6}", self.blob_gc_age_cutoff)),
            (
                "blob_garbage_collection_force_threshold",
                format!("{:.6}", self.blob_gc_force_threshold),
            ),
            ("blob_compaction_readahead_size", self.blob_compaction_readahead_size.to_string()),
        ]
    }
}
