//! Reads and caches: block cache admission and sharing, blocks of obsolete tables, metadata
//! memory, learned readahead, the memtable's whole-key filter, pinned reads, cached super
//! versions, the user-key table index, the row cache, and GetMergeOperands. One module per behaviour (`tests/README.md`).

mod block_cache_admission;
mod cached_super_version;
mod get_pinned;
mod learned_readahead;
mod memtable_bloom;
mod merge_operands;
mod metadata_memory;
mod row_cache;
mod shared_block_cache;
mod uncache_obsolete_blocks;
mod user_key_index;
