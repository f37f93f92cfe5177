//! The `rocksdb` crate's table and memtable factory settings that Strata has no counterpart
//! for: the cuckoo and plain table formats, the alternative memtable representations, and the
//! block-based table's knobs of formats Strata does not write (the data block hash index,
//! pinning tiers). Each is accepted and kept, so that ported code compiles and the LOG shows
//! what was asked, and has no effect: Strata writes one table format (`docs/format/sstable.md`)
//! and has one memtable (a concurrent skiplist). None of them changes what a read returns,
//! only how fast it is. `docs/rocksdb-compat.md` lists them.

/// The search structure inside data blocks (RocksDB's `data_block_index_type`). Strata's data
/// blocks are searched by binary search over restart points; the hash index is accepted and
/// not built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub enum DataBlockIndexType {
    /// Binary search over the block's restart points. Default.
    #[default]
    BinarySearch = 0,
    /// Binary search plus a hash of the block's keys for point lookups (RocksDB only).
    BinaryAndHash = 1,
}

/// Which index and filter blocks stay pinned in the block cache (RocksDB's `PinningTier`). The
/// discriminants are RocksDB's C constants. Strata's pinning is decided by
/// `pin_l0_filter_and_index_blocks_in_cache` and `pin_top_level_index_and_filter`; the tiers
/// are kept for the LOG.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub enum BlockBasedTablePinningTier {
    /// Follow the older boolean options. Default.
    #[default]
    Fallback = 0,
    /// Pin nothing.
    None = 1,
    /// Pin the blocks of tables written by flushes (and ingestions of similar size).
    FlushAndSimilar = 2,
    /// Pin every table's blocks.
    All = 3,
}

/// Settings of RocksDB's cuckoo-hash table format (`Options::set_cuckoo_table_factory`).
/// Accepted without effect: Strata keeps writing its block-based tables.
#[derive(Clone, Debug, PartialEq)]
pub struct CuckooTableOptions {
    /// Occupancy of the hash table. Default 0.9.
    pub hash_ratio: f64,
    /// Most displacements when inserting. Default 100.
    pub max_search_depth: u32,
    /// Buckets probed together. Default 5.
    pub cuckoo_block_size: u32,
    /// Whether the first hash is the key itself. Default false.
    pub identity_as_first_hash: bool,
    /// Whether hashes are taken modulo the table size. Default true.
    pub use_module_hash: bool,
}

impl Default for CuckooTableOptions {
    fn default() -> Self {
        CuckooTableOptions {
            hash_ratio: 0.9,
            max_search_depth: 100,
            cuckoo_block_size: 5,
            identity_as_first_hash: false,
            use_module_hash: true,
        }
    }
}

impl CuckooTableOptions {
    /// `hash_ratio`.
    pub fn set_hash_ratio(&mut self, ratio: f64) {
        self.hash_ratio = ratio;
    }

    /// `max_search_depth`.
    pub fn set_max_search_depth(&mut self, depth: u32) {
        self.max_search_depth = depth;
    }

    /// `cuckoo_block_size`.
    pub fn set_cuckoo_block_size(&mut self, size: u32) {
        self.cuckoo_block_size = size;
    }

    /// `identity_as_first_hash`.
    pub fn set_identity_as_first_hash(&mut self, flag: bool) {
        self.identity_as_first_hash = flag;
    }

    /// `use_module_hash`.
    pub fn set_use_module_hash(&mut self, flag: bool) {
        self.use_module_hash = flag;
    }
}

/// How the plain table format encodes keys (RocksDB's `EncodingType`).
#[derive(Debug, Copy, Clone, PartialEq, Eq, Default)]
pub enum KeyEncodingType {
    /// Every key whole. Default.
    #[default]
    Plain = 0,
    /// Keys sharing a prefix with the previous one store the rest only.
    Prefix = 1,
}

/// Settings of RocksDB's plain table format (`Options::set_plain_table_factory`). Accepted
/// without effect, as [`CuckooTableOptions`].
#[derive(Debug, Clone, PartialEq)]
pub struct PlainTableFactoryOptions {
    /// Fixed key length, 0 for variable.
    pub user_key_length: u32,
    /// Bloom filter bits per key.
    pub bloom_bits_per_key: i32,
    /// Hash table occupancy.
    pub hash_table_ratio: f64,
    /// Keys per index entry.
    pub index_sparseness: usize,
    /// Huge page size for the index, 0 for none.
    pub huge_page_tlb_size: usize,
    /// Key encoding.
    pub encoding_type: KeyEncodingType,
    /// Read by full scans only.
    pub full_scan_mode: bool,
    /// Store the index in the file.
    pub store_index_in_file: bool,
}

/// The memtable representation (RocksDB's memtable factories). `Vector` gives the vector
/// memtable (entries appended, sorted when first read or flushed: bulk loads); the hash
/// representations are accepted and kept for the LOG, and a skiplist serves them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemtableFactory {
    /// A vector sorted when read or flushed (`Options::vector_memtable`).
    Vector,
    /// A hash of prefixes to skiplists (RocksDB only).
    HashSkipList {
        /// Hash buckets.
        bucket_count: usize,
        /// Skiplist height.
        height: i32,
        /// Skiplist branching factor.
        branching_factor: i32,
    },
    /// A hash of prefixes to linked lists (RocksDB only).
    HashLinkList {
        /// Hash buckets.
        bucket_count: usize,
    },
}
