//! `uncache_aggressiveness`: when compaction deletes a table, its blocks leave the block
//! cache with it (data blocks, index and filter blocks, partitions); with the default (0)
//! they stay until they age out. Checked with one index block and with partitioned index
//! and filters, both read through the cache, and reads stay right afterwards.

use std::path::PathBuf;
use std::sync::Arc;

use strata::env::MemFs;
use strata::{Db, IndexType, Options};

const KEYS: u32 = 4000;

fn key(i: u32) -> String {
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 100_000_000)
}

fn usage(db: &Db) -> usize {
    db.property_value("strata.block-cache-usage").unwrap().unwrap().parse().unwrap()
}

/// Block cache usage (after reading every key of two overlapping tables, after compacting
/// them into new tables).
fn run(uncache: u32, index_type: IndexType) -> (usize, usize) {
    let opts = Options {
        fs: Arc::new(MemFs::new()),
        block_cache_size: 16 << 20,
        cache_index_and_filter_blocks: true,
        index_type,
        partition_filters: index_type == IndexType::TwoLevel,
        metadata_block_size: 512,
        disable_auto_compactions: true,
        block_size: 256,
        compression: strata::CompressionType::None,
        uncache_aggressiveness: uncache,
        ..Options::default()
    };
    let db = Db::open(&opts, PathBuf::from("/db")).unwrap();
    for round in 0..2 {
        for i in 0..KEYS {
            db.put(key(i), format!("value{i}.{round}")).unwrap();
        }
        db.flush().unwrap();
    }
    let read_all = || {
        for i in 0..KEYS {
            let want = format!("value{i}.1");
            assert_eq!(db.get(key(i)).unwrap().as_deref(), Some(want.as_bytes()));
        }
    };
    read_all();
    let before = usage(&db);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.property_value("strata.num-files-at-level0").unwrap().unwrap(), "0");
    let after = usage(&db);
    read_all();
    (before, after)
}

#[test]
fn deleted_tables_leave_the_block_cache() {
    for index_type in [IndexType::BinarySearch, IndexType::TwoLevel] {
        let (before, kept) = run(0, index_type);
        let (before_on, after) = run(1, index_type);
        assert_eq!(before, before_on, "{index_type:?}");
        // Without it, nothing of the deleted tables leaves.
        assert!(kept >= before, "{index_type:?}: {kept} < {before}");
        // With it, nothing of the deleted tables is left (data, index, filter, partitions),
        // and compaction does not read its new tables through the cache.
        assert_eq!(after, 0, "{index_type:?}: {after} left of {before}");
    }
}
