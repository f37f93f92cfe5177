//! The info LOG lines that RocksDB prints at open in its own shapes, which tools (and the
//! `rocksdb` crate's tests) grep: the block-based table factory's settings, one per line as
//! `  name: value` with booleans as 0/1, and the build's support lines. The values are
//! Strata's (a kept-without-effect setting shows the value asked for,
//! `Options::accepted`).

use crate::options::Options;
use crate::sstable::IndexType;
use crate::util::checksum::ChecksumType;

impl Options {
    /// The table factory block of the LOG: its header line, then `  name: value` lines.
    pub(crate) fn table_factory_log_lines(&self) -> Vec<String> {
        let b = |v: bool| u8::from(v);
        let t = &self.accepted.table;
        let index_type = match self.index_type {
            IndexType::BinarySearch => 0,
            IndexType::TwoLevel => 2,
        };
        // RocksDB's checksum numbers: kCRC32c = 1, kXXH3 = 4.
        let checksum = match self.checksum {
            ChecksumType::Crc32c => 1,
            ChecksumType::Xxh3 => 4,
        };
        let no_cache = self.block_cache.is_none() && self.block_cache_size == 0;
        let filter = if self.bloom_bits_per_key == 0 {
            "nullptr".to_string()
        } else {
            format!("bloomfilter ({} bits per key)", self.bloom_bits_per_key)
        };
        vec![
            "table_factory options: BlockBasedTable".to_string(),
            format!("  cache_index_and_filter_blocks: {}", b(self.cache_index_and_filter_blocks)),
            format!(
                "  cache_index_and_filter_blocks_with_high_priority: {}",
                b(self.cache_index_and_filter_blocks_with_high_priority)
            ),
            format!(
                "  pin_l0_filter_and_index_blocks_in_cache: {}",
                b(self.pin_l0_filter_and_index_blocks_in_cache)
            ),
            format!("  pin_top_level_index_and_filter: {}", b(self.pin_top_level_index_and_filter)),
            format!("  index_type: {index_type}"),
            format!("  data_block_index_type: {}", t.data_block_index_type as i32),
            format!("  data_block_hash_table_util_ratio: {:.6}", t.data_block_hash_ratio),
            format!("  checksum: {checksum}"),
            format!("  no_block_cache: {}", b(no_cache)),
            format!("  block_size: {}", self.block_size),
            format!("  block_size_deviation: {}", self.block_size_deviation),
            format!("  block_restart_interval: {}", self.block_restart_interval),
            format!("  index_block_restart_interval: {}", self.index_block_restart_interval),
            format!("  metadata_block_size: {}", self.metadata_block_size),
            format!("  partition_filters: {}", b(self.partition_filters)),
            format!("  optimize_filters_for_memory: {}", b(t.optimize_filters_for_memory)),
            format!("  filter_policy: {filter}"),
            format!("  whole_key_filtering: {}", b(t.whole_key_filtering)),
            format!("  format_version: {}", t.format_version),
            format!("  block_align: {}", b(self.block_align)),
            format!("  top_level_index_pinning: {}", t.top_level_index_pinning as i32),
            format!("  partition_pinning: {}", t.partition_pinning as i32),
            format!("  unpartitioned_pinning: {}", t.unpartitioned_pinning as i32),
        ]
    }
}

/// The build's support lines: every compression type (all are built in), whether CRC32C
/// instructions were enabled at compile time (RocksDB's wording and architecture names; the
/// `crc32c` crate also picks them at run time when the CPU has them), and the allocator.
pub(crate) fn support_log_lines() -> Vec<String> {
    let mut v = vec!["Compression algorithms supported:".to_string()];
    // Xpress (Windows only) is the one RocksDB type Strata has not.
    for (name, supported) in [
        ("kZSTD", 1),
        ("kZlibCompression", 1),
        ("kXpressCompression", 0),
        ("kSnappyCompression", 1),
        ("kLZ4HCCompression", 1),
        ("kLZ4Compression", 1),
        ("kBZip2Compression", 1),
    ] {
        v.push(format!("\t{name} supported: {supported}"));
    }
    v.push(format!("Fast CRC32 supported: {}", fast_crc32()));
    v.push("DMutex implementation: parking_lot".to_string());
    v.push("Jemalloc supported: 0".to_string());
    v
}

/// RocksDB's "Fast CRC32 supported" text: compile-time detection, with RocksDB's names (on
/// aarch64 without the `crc` feature RocksDB names "x86", and so does this line).
fn fast_crc32() -> String {
    let (supported, arch) = if cfg!(target_arch = "x86_64") || cfg!(target_arch = "x86") {
        (cfg!(target_feature = "sse4.2"), "x86")
    } else if cfg!(target_arch = "aarch64") {
        if cfg!(target_feature = "crc") {
            (true, "Arm64")
        } else {
            (false, "x86")
        }
    } else if cfg!(target_arch = "powerpc64") {
        (false, "PPC")
    } else {
        (false, std::env::consts::ARCH)
    };
    format!("{} on {arch}", if supported { "Supported" } else { "Not supported" })
}
