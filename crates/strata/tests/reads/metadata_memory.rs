//! Bounded metadata memory: with `cache_index_and_filter_blocks`, the index and
//! filter blocks of a DB with many tables live in the block cache, so the memory they take
//! stays under the cache's capacity; kept by the tables (the default), it grows with the
//! number of tables. Both layouts of the index (one block, partitioned) are checked, and
//! reads return every value either way.

use std::path::PathBuf;
use std::sync::Arc;

use strata::env::MemFs;
use strata::{Db, IndexType, Options};

const CAPACITY: usize = 96 << 10;
const TABLES: u32 = 24;
const KEYS_PER_TABLE: u32 = 3000;

fn key(i: u32) -> String {
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 100_000_000)
}

fn prop(db: &Db, name: &str) -> usize {
    db.property_value(name).unwrap().unwrap().parse().unwrap()
}

/// Fills a DB of `TABLES` tables (no compaction), reads every key, and returns
/// (estimate-table-readers-mem, block-cache-usage, block-cache-pinned-usage).
fn run(cached: bool, index_type: IndexType, pin_l0: bool) -> (usize, usize, usize) {
    let opts = Options {
        fs: Arc::new(MemFs::new()),
        block_cache_size: CAPACITY,
        cache_index_and_filter_blocks: cached,
        pin_l0_filter_and_index_blocks_in_cache: pin_l0,
        index_type,
        partition_filters: index_type == IndexType::TwoLevel,
        metadata_block_size: 1024,
        disable_auto_compactions: true,
        block_size: 256,
        // Whole separators (RocksDB's layout): the largest index, so that held by the tables
        // the metadata is more than twice the cache (the premise checked below).
        index_block_restart_interval: 1,
        compression: strata::CompressionType::None,
        ..Options::default()
    };
    let db = Db::open(&opts, PathBuf::from("/db")).unwrap();
    for t in 0..TABLES {
        for i in t * KEYS_PER_TABLE..(t + 1) * KEYS_PER_TABLE {
            db.put(key(i), format!("value{i}")).unwrap();
        }
        db.flush().unwrap();
    }
    assert_eq!(prop(&db, "strata.num-files-at-level0"), TABLES as usize);
    for i in (0..TABLES * KEYS_PER_TABLE).step_by(7) {
        assert_eq!(db.get(key(i)).unwrap().as_deref(), Some(format!("value{i}").as_bytes()));
    }
    assert_eq!(db.get("absent").unwrap(), None);
    (
        prop(&db, "strata.estimate-table-readers-mem"),
        prop(&db, "strata.block-cache-usage"),
        prop(&db, "strata.block-cache-pinned-usage"),
    )
}

#[test]
fn cached_index_and_filter_blocks_keep_metadata_under_the_cache_capacity() {
    let (held_mem, _, held_pinned) = run(false, IndexType::BinarySearch, false);
    // The premise: kept by the tables, the metadata would not fit in the cache.
    assert!(held_mem > 2 * CAPACITY, "only {held_mem} bytes held");
    assert_eq!(held_pinned, 0);
    let (mem, usage, pinned) = run(true, IndexType::BinarySearch, false);
    assert!(usage <= CAPACITY, "cache usage {usage}");
    assert!(mem + usage <= CAPACITY + CAPACITY / 4, "readers {mem}");
    assert!(mem * 4 < held_mem, "readers {mem} vs {held_mem} held");
    assert_eq!(pinned, 0);
}

#[test]
fn a_partitioned_index_keeps_only_its_top_level_outside_the_cache() {
    let (plain_mem, _, _) = run(false, IndexType::BinarySearch, false);
    for cached in [false, true] {
        let (mem, usage, _) = run(cached, IndexType::TwoLevel, false);
        assert!(usage <= CAPACITY, "cache usage {usage}");
        assert!(mem * 4 < plain_mem, "cached {cached}: readers {mem} vs {plain_mem}");
    }
}

#[test]
fn pinned_l0_metadata_is_reported_as_pinned() {
    let (held_mem, _, _) = run(false, IndexType::BinarySearch, false);
    let (mem, _, pinned) = run(true, IndexType::BinarySearch, true);
    // Every table is an L0 table: its index and filter are pinned, not held uncharged.
    assert!(pinned * 2 >= held_mem, "pinned {pinned} of {held_mem}");
    assert!(mem * 4 < held_mem, "readers {mem}");
}
