//! The `rocksdb` crate's names and calls (`docs/rocksdb_port.md`): the `DB` alias and its
//! constructors, rocksdb-style option setters and helper types, `ReadOptions`/`WriteOptions`
//! setters. A program using them ports with renames only (`examples/rocksdb_port.rs` is the whole
//! one).

use strata::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, DBCompactionStyle, DBCompressionType,
    DBRecoveryMode, Direction, IteratorMode, Options, ReadOptions, SliceTransform, WriteBatch,
    WriteOptions, DB,
};

#[test]
fn db_constructors_and_family_listing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let db = DB::open_default(&path).unwrap();
        db.put(b"k", b"v").unwrap();
    }
    let mut opts = Options::default();
    opts.create_if_missing(false);
    opts.create_missing_column_families(true);
    {
        let db = DB::open_cf(&opts, &path, ["a", "b"]).unwrap();
        db.put_cf(&db.cf_handle("a").unwrap(), b"ka", b"va").unwrap();
    }
    assert_eq!(DB::list_cf(&opts, &path).unwrap(), ["default", "a", "b"]);
    {
        let cfs = ["a", "b"].map(|n| ColumnFamilyDescriptor::new(n, Options::default()));
        let db = DB::open_cf_descriptors(&opts, &path, cfs).unwrap();
        let a = db.cf_handle("a").unwrap();
        assert_eq!(db.get_cf(&a, b"ka").unwrap().as_deref(), Some(&b"va"[..]));
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    }
    DB::destroy(&Options::default(), &path).unwrap();
    assert!(DB::open(&opts, &path).is_err(), "create_if_missing(false) on a destroyed DB");
}

#[test]
fn option_setters_reach_the_options_they_name() {
    let mut o = Options::default();
    o.set_write_buffer_size(1 << 20);
    o.set_max_write_buffer_number(4);
    o.set_target_file_size_base(8 << 20);
    o.set_max_bytes_for_level_base(32 << 20);
    o.set_level_compaction_dynamic_level_bytes(false);
    o.set_compression_type(DBCompressionType::Zstd);
    o.set_compaction_style(DBCompactionStyle::Universal);
    o.increase_parallelism(6);
    o.set_use_direct_reads(false);
    o.set_wal_recovery_mode(DBRecoveryMode::AbsoluteConsistency);
    o.set_prefix_extractor(SliceTransform::create_fixed_prefix(3));
    let cache = Cache::new_lru_cache(1 << 20);
    let mut bb = BlockBasedOptions::default();
    bb.set_block_size(8 << 10);
    bb.set_bloom_filter(12.0, true);
    bb.set_block_cache(&cache);
    bb.set_cache_index_and_filter_blocks(true);
    o.set_block_based_table_factory(&bb);
    assert_eq!(o.write_buffer_size, 1 << 20);
    assert_eq!(o.max_write_buffer_number, 4);
    assert_eq!(o.target_file_size_base, 8 << 20);
    assert_eq!(o.max_bytes_for_level_base, 32 << 20);
    assert!(!o.level_compaction_dynamic_level_bytes);
    assert_eq!(o.compression, DBCompressionType::Zstd);
    assert_eq!(o.compaction_style, DBCompactionStyle::Universal);
    assert_eq!(o.max_background_jobs, 6);
    assert_eq!(o.wal_recovery_mode, DBRecoveryMode::AbsoluteConsistency);
    assert_eq!(o.prefix_extractor, Some(strata::PrefixExtractor::Fixed(3)));
    assert_eq!(o.block_size, 8 << 10);
    assert_eq!(o.bloom_bits_per_key, 12);
    assert!(o.cache_index_and_filter_blocks);
    assert!(Cache::ptr_eq(o.block_cache.as_ref().unwrap(), &cache));
    o.set_compaction_style(DBCompactionStyle::Level);
    assert_eq!(o.compaction_style, strata::CompactionStyle::Leveled);

    // The options open a DB that uses them.
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open(&o, dir.path()).unwrap();
    db.put(b"abc1", b"x").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get(b"abc1").unwrap().as_deref(), Some(&b"x"[..]));
    assert!(cache.get_usage() > 0, "the table's blocks went to the given cache");
}

#[test]
fn merge_operator_closures_with_a_partial_merge() {
    let mut o = Options::default();
    o.set_merge_operator(
        "sum",
        |_k, existing, ops| {
            let mut n = existing.map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()));
            for op in ops {
                n += u64::from_le_bytes(op.try_into().unwrap());
            }
            Some(n.to_le_bytes().to_vec())
        },
        |_k, _existing, ops| {
            Some(
                ops.iter()
                    .map(|op| u64::from_le_bytes(op.try_into().unwrap()))
                    .sum::<u64>()
                    .to_le_bytes()
                    .to_vec(),
            )
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open(&o, dir.path()).unwrap();
    for i in 1..=10u64 {
        db.merge(b"n", i.to_le_bytes()).unwrap();
        if i == 5 {
            db.flush().unwrap();
        }
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    db.merge(b"n", 100u64.to_le_bytes()).unwrap();
    assert_eq!(db.get(b"n").unwrap().unwrap(), 155u64.to_le_bytes());
}

#[test]
fn read_and_write_option_setters() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open_default(dir.path()).unwrap();
    let mut wo = WriteOptions::default();
    wo.set_sync(true);
    wo.disable_wal(false);
    let mut b = WriteBatch::default();
    for k in ["a1", "a2", "b1", "b2", "c1"] {
        b.put(k, k);
    }
    db.write_opt(b, &wo).unwrap();
    let mut ro = ReadOptions::default();
    ro.set_iterate_lower_bound(b"a2".to_vec());
    ro.set_iterate_upper_bound(b"c".to_vec());
    ro.fill_cache(false);
    ro.set_readahead_size(0);
    let snap = db.snapshot();
    db.put("b3", "late").unwrap();
    ro.set_snapshot(&snap);
    // By value, as the rocksdb crate passes read options to iterators.
    let keys: Vec<Box<[u8]>> =
        db.iterator_opt(IteratorMode::Start, ro.clone()).map(|r| r.unwrap().0).collect();
    assert_eq!(keys, [&b"a2"[..], b"b1", b"b2"].map(Box::from));
    let keys: Vec<Box<[u8]>> = db
        .iterator_opt(IteratorMode::From(b"b9", Direction::Reverse), &ro)
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(keys, [&b"b2"[..], b"b1", b"a2"].map(Box::from));
}
