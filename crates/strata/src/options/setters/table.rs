//! The `rocksdb` crate's table-format setters beyond those of `setters.rs`: block-based
//! settings without a Strata counterpart (kept, `TableHints`), ribbon filters (built as Bloom
//! filters of the same accuracy), and the other table formats (kept).

use super::{BlockBasedOptions, MergeOperands};
use crate::options::accepted::TableHints;
use crate::options::table_factories::{
    BlockBasedTablePinningTier, CuckooTableOptions, DataBlockIndexType, PlainTableFactoryOptions,
};
use crate::options::Options;

/// Bloom bits per key for `bits` (rounded; 0 or less, or not finite: none).
fn bloom_bits(bits: f64) -> u32 {
    if bits.is_finite() && bits > 0.0 {
        bits.round().min(f64::from(u32::MAX)) as u32
    } else {
        0
    }
}

impl BlockBasedOptions {
    fn hints(&mut self) -> &mut TableHints {
        self.hints.get_or_insert_with(TableHints::default)
    }

    /// A ribbon filter as accurate as a Bloom filter of `bloom_equivalent_bits_per_key`:
    /// Strata builds that Bloom filter (the same false-positive rate, about 30% more memory
    /// than RocksDB's ribbon filter).
    pub fn set_ribbon_filter(&mut self, bloom_equivalent_bits_per_key: f64) {
        self.bloom_bits_per_key = Some(bloom_bits(bloom_equivalent_bits_per_key));
        self.hints().ribbon_filter = Some((bloom_equivalent_bits_per_key, -1));
    }

    /// Bloom filters below `bloom_before_level`, ribbon filters from it: Strata builds Bloom
    /// filters of `bloom_equivalent_bits_per_key` at every level.
    pub fn set_hybrid_ribbon_filter(
        &mut self,
        bloom_equivalent_bits_per_key: f64,
        bloom_before_level: i32,
    ) {
        self.bloom_bits_per_key = Some(bloom_bits(bloom_equivalent_bits_per_key));
        self.hints().ribbon_filter = Some((bloom_equivalent_bits_per_key, bloom_before_level));
    }

    /// RocksDB's table `format_version`: kept (Strata's table versions follow the features
    /// in use).
    pub fn set_format_version(&mut self, version: i32) {
        self.hints().format_version = version;
    }

    /// `data_block_index_type`: kept (blocks are binary-searched).
    pub fn set_data_block_index_type(&mut self, index_type: DataBlockIndexType) {
        self.hints().data_block_index_type = index_type;
    }

    /// `data_block_hash_table_util_ratio`: kept.
    pub fn set_data_block_hash_ratio(&mut self, ratio: f64) {
        self.hints().data_block_hash_ratio = ratio;
    }

    /// `whole_key_filtering`: kept (table filters are on whole keys).
    pub fn set_whole_key_filtering(&mut self, v: bool) {
        self.hints().whole_key_filtering = v;
    }

    /// `optimize_filters_for_memory`: kept.
    pub fn set_optimize_filters_for_memory(&mut self, v: bool) {
        self.hints().optimize_filters_for_memory = v;
    }

    /// `top_level_index_pinning`: kept.
    pub fn set_top_level_index_pinning_tier(&mut self, tier: BlockBasedTablePinningTier) {
        self.hints().top_level_index_pinning = tier;
    }

    /// `partition_pinning`: kept.
    pub fn set_partition_pinning_tier(&mut self, tier: BlockBasedTablePinningTier) {
        self.hints().partition_pinning = tier;
    }

    /// `unpartitioned_pinning`: kept.
    pub fn set_unpartitioned_pinning_tier(&mut self, tier: BlockBasedTablePinningTier) {
        self.hints().unpartitioned_pinning = tier;
    }
}

impl Options {
    /// RocksDB's cuckoo table format: kept, tables stay block-based ([`CuckooTableOptions`]).
    pub fn set_cuckoo_table_factory(&mut self, factory: &CuckooTableOptions) {
        self.accepted.cuckoo_table = Some(factory.clone());
    }

    /// RocksDB's plain table format: kept, tables stay block-based.
    pub fn set_plain_table_factory(&mut self, options: &PlainTableFactoryOptions) {
        self.accepted.plain_table = Some(options.clone());
    }

    /// The `rocksdb` crate's deprecated name of [`Options::set_merge_operator_associative`].
    #[deprecated(note = "renamed to set_merge_operator_associative, as in the rocksdb crate")]
    pub fn add_merge_operator<F>(&mut self, name: &str, merge_fn: F)
    where
        F: Fn(&[u8], Option<&[u8]>, &MergeOperands<'_>) -> Option<Vec<u8>>
            + Send
            + Sync
            + Clone
            + 'static,
    {
        self.set_merge_operator_associative(name, merge_fn);
    }
}
