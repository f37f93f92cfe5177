//! The `rocksdb` crate's shapes beside Strata's own API (`docs/rocksdb-compat.md`): thread-mode
//! generics, `DBAccess`, property names, iterator refresh and ranges, and the `Db` methods in
//! the crate's signatures, each checked for what it does, not only that it compiles.

use std::sync::Arc;

use strata::checkpoint::Checkpoint as CrateCheckpoint;
use strata::{
    properties, CompactionDecision, DBAccess, DBWithThreadMode, Direction, Error, IteratorMode,
    MultiThreaded, OptimisticTransactionDB, Options, PrefixRange, ReadOptions, SingleThreaded,
    SliceTransform, SnapshotWithThreadMode, TransactionDB, TransactionDBOptions, WriteBatch,
    WriteBatchIteratorCf, DB,
};

fn opts() -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o
}

fn keys(it: impl Iterator<Item = strata::Result<(Box<[u8]>, Box<[u8]>)>>) -> Vec<Vec<u8>> {
    it.map(|r| r.unwrap().0.to_vec()).collect()
}

#[test]
fn thread_modes_open_every_db_type() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = DBWithThreadMode::<SingleThreaded>::open_default(dir.path().join("s")).unwrap();
        db.put(b"k", b"v").unwrap();
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    }
    let db: DBWithThreadMode<MultiThreaded> =
        DBWithThreadMode::open(&opts(), dir.path().join("s")).unwrap();
    db.create_cf("a", &Options::default()).unwrap();
    assert!(db.cf_handle("a").is_some());
    let inner: DB = db.into_inner();
    assert_eq!(inner.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));

    // Unannotated, the mode is inferred from `create_cf`'s receiver, as in the crate.
    let t = TransactionDB::open(&opts(), &TransactionDBOptions::default(), dir.path().join("t"))
        .unwrap();
    t.create_cf("x", &Options::default()).unwrap();
    t.put(b"a", b"1").unwrap();
    assert!(t.property_value(properties::STATS).unwrap().unwrap().contains("Stats"));

    let o: OptimisticTransactionDB =
        OptimisticTransactionDB::open_default(dir.path().join("o")).unwrap();
    let txn = o.transaction();
    txn.put(b"k", b"v").unwrap();
    txn.commit().unwrap();
    assert_eq!(o.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

/// One generic reader over every `DBAccess` type.
fn read_two<D: DBAccess>(d: &D) -> Vec<Option<Vec<u8>>> {
    d.multi_get_opt([b"k0", b"k1"], &ReadOptions::default())
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn db_access_reads_generically_and_snapshots_follow_the_reader() {
    let dir = tempfile::tempdir().unwrap();
    let db: OptimisticTransactionDB = OptimisticTransactionDB::open_default(dir.path()).unwrap();
    db.put(b"k0", b"a").unwrap();
    assert_eq!(read_two(&db), vec![Some(b"a".to_vec()), None]);
    assert_eq!(read_two(&*db), vec![Some(b"a".to_vec()), None]);

    let mut to = strata::OptimisticTransactionOptions::default();
    to.set_snapshot(true);
    let txn = db.transaction_opt(&strata::WriteOptions::default(), &to);
    txn.put(b"k1", b"mine").unwrap();
    db.put(b"k0", b"b").unwrap();
    // The transaction reads its own write over the latest state.
    assert_eq!(read_two(&txn), vec![Some(b"b".to_vec()), Some(b"mine".to_vec())]);
    // A snapshot made from the transaction is the one it took when it began.
    let snap = SnapshotWithThreadMode::new(&txn);
    assert_eq!(snap.get(b"k0").unwrap().as_deref(), Some(&b"a"[..]));
    // One made from the DB is now.
    let now = SnapshotWithThreadMode::new(&*db);
    assert_eq!(now.get(b"k0").unwrap().as_deref(), Some(&b"b"[..]));
}

#[test]
fn property_names_in_every_string_form() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open_default(dir.path()).unwrap();
    let c: &std::ffi::CStr = properties::STATS;
    assert!(db.property_value(c).unwrap().unwrap().contains("Stats"));
    let owned: properties::PropertyName = properties::STATS.to_owned();
    assert!(db.property_value(&owned).unwrap().is_some());
    assert!(db.property_value(owned.into_string()).unwrap().is_some());
    assert_eq!(db.property_int_value(properties::ESTIMATE_LIVE_DATA_SIZE).unwrap(), Some(0));
    let e = db.property_value("rocksdb.stats\0").unwrap_err();
    assert!(e.to_string().contains("must not contain NUL"), "{e}");
    assert_eq!(
        db.property_int_value(properties::num_files_at_level(0)).unwrap(),
        Some(0),
        "per-level names"
    );
}

#[test]
fn refresh_reads_the_latest_state_and_drops_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open_default(dir.path()).unwrap();
    db.put(b"k1", b"v1").unwrap();
    let snap = db.snapshot();
    let mut ro = ReadOptions::default();
    ro.set_snapshot(&snap);
    let mut raw = db.raw_iterator_opt(ro);
    let mut it = db.iterator(IteratorMode::Start);
    db.put(b"k2", b"v2").unwrap();
    raw.seek(b"k2");
    assert!(!raw.valid());
    raw.refresh().unwrap();
    assert!(!raw.valid(), "unpositioned after a refresh");
    raw.seek(b"k2");
    assert_eq!(raw.key(), Some(&b"k2"[..]));
    assert_eq!(keys(&mut it), vec![b"k1".to_vec()]);
    it.refresh(IteratorMode::From(b"k1", Direction::Forward)).unwrap();
    assert_eq!(keys(&mut it), vec![b"k1".to_vec(), b"k2".to_vec()]);
    // A family dropped under the iterator, or the DB closed, is an error, not a panic.
    let cf_db = DB::open_cf(&opts(), dir.path().join("cf"), ["a"]).unwrap();
    let mut cf_it = cf_db.raw_iterator_cf(&cf_db.cf_handle("a").unwrap());
    cf_db.drop_cf("a").unwrap();
    assert!(matches!(cf_it.refresh(), Err(Error::ColumnFamilyDropped(_))));
    drop(db);
    assert!(matches!(raw.refresh(), Err(Error::ShutdownInProgress)));
}

#[test]
fn prefix_iterator_follows_the_extractor_and_ranges_bound_by_bytes() {
    fn first_three(k: &[u8]) -> &[u8] {
        &k[..3]
    }
    fn long_enough(k: &[u8]) -> bool {
        k.len() >= 3
    }
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.set_prefix_extractor(SliceTransform::create("first_three", first_three, Some(long_enough)));
    let db = DB::open(&o, dir.path()).unwrap();
    for k in ["aa", "aaa1", "aaa2", "aab1", "bbb1"] {
        db.put(k, k).unwrap();
    }
    assert_eq!(keys(db.prefix_iterator(b"aaa")), vec![b"aaa1".to_vec(), b"aaa2".to_vec()]);
    // A key outside the domain is its own prefix.
    assert_eq!(keys(db.prefix_iterator(b"aa")), vec![b"aa".to_vec()]);
    let mut ro = ReadOptions::default();
    ro.set_iterate_range(PrefixRange(&b"aa"[..]));
    let all_aa = keys(db.iterator_opt(IteratorMode::Start, ro));
    assert_eq!(all_aa.len(), 4);
    // Without an extractor, `prefix_iterator` runs to the end, as the crate's.
    let plain = DB::open_default(dir.path().join("plain")).unwrap();
    plain.put(b"a1", b"").unwrap();
    plain.put(b"b1", b"").unwrap();
    assert_eq!(keys(plain.prefix_iterator(b"a")).len(), 2);
}

#[test]
fn key_may_exist_and_batched_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open_cf(&opts(), dir.path(), ["cf"]).unwrap();
    let cf = db.cf_handle("cf").unwrap();
    db.put_cf(&cf, b"k1", b"v1").unwrap();
    db.flush_cf(&cf).unwrap();
    assert!(!db.key_may_exist(b"k1"));
    assert!(db.key_may_exist_cf(&cf, b"k1"));
    let (may, v) = db.key_may_exist_cf_opt_value(&cf, b"k1", &ReadOptions::default());
    assert!(may);
    assert_eq!(v.as_deref(), Some(&b"v1"[..]));
    assert!(!db.key_may_exist_cf_opt(&cf, b"nope", &ReadOptions::default()));
    let got: Vec<_> = db
        .batched_multi_get_cf(&cf, [&b"k0"[..], &b"k1"[..]], true)
        .into_iter()
        .map(|r| r.unwrap().map(|p| p.to_vec()))
        .collect();
    assert_eq!(got, vec![None, Some(b"v1".to_vec())]);
    let m = db.get_column_family_metadata_cf(&cf);
    assert_eq!((m.name.as_str(), m.file_count), ("cf", 1));
    assert!(m.size > 0);
    assert_eq!(db.get_column_family_metadata().file_count, 0);
}

fn sst_count(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "sst"))
        .count()
}

#[test]
fn file_deletions_pause_and_resume() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open_default(dir.path()).unwrap();
    db.disable_file_deletions().unwrap();
    db.disable_file_deletions().unwrap();
    for round in 0..2 {
        db.put(format!("k{round}"), b"v").unwrap();
        db.flush().unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(sst_count(dir.path()), 3, "the compacted-away tables are kept");
    db.enable_file_deletions().unwrap();
    assert_eq!(sst_count(dir.path()), 3, "one disable is still in force");
    db.enable_file_deletions().unwrap();
    assert_eq!(sst_count(dir.path()), 1);
    db.enable_file_deletions().unwrap(); // unmatched: nothing
    assert_eq!(db.get(b"k0").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn delete_file_in_range_drops_whole_tables_below_l0() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open_default(dir.path()).unwrap();
    for i in 0..100u32 {
        db.put(format!("{i:04}"), b"v").unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    db.put(b"0050", b"new").unwrap();
    db.flush().unwrap(); // an L0 table inside the range stays
    db.delete_file_in_range(b"0000", b"0099").unwrap();
    assert_eq!(db.get(b"0010").unwrap(), None);
    assert_eq!(db.get(b"0050").unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(db.live_files().unwrap().len(), 1);
    // A range covering no whole table drops nothing.
    db.delete_file_in_range(b"0050", b"0050").unwrap();
    assert_eq!(db.live_files().unwrap().len(), 1);
}

#[test]
fn read_only_and_per_family_opens() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut big = Options::default();
        big.set_write_buffer_size(1 << 20);
        let db = DB::open_cf_with_opts(&opts(), dir.path(), [("a", big)]).unwrap();
        db.put_cf(&db.cf_handle("a").unwrap(), b"k", b"v").unwrap();
        let mut b = WriteBatch::default();
        b.put(b"nowal", b"x");
        db.write_without_wal(b).unwrap();
        assert_eq!(db.get(b"nowal").unwrap().as_deref(), Some(&b"x"[..]));
    }
    let e = DB::open_cf_for_read_only(&Options::default(), dir.path(), ["a"], true).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let db = DB::open_cf_for_read_only(&Options::default(), dir.path(), ["a"], false).unwrap();
    assert_eq!(db.get_cf(&db.cf_handle("a").unwrap(), b"k").unwrap().as_deref(), Some(&b"v"[..]));
    assert!(db.put(b"x", b"y").is_err());
    // Unwritten to the WAL, the write was flushed by the clean close (as RocksDB's).
    assert_eq!(db.get(b"nowal").unwrap().as_deref(), Some(&b"x"[..]));
}

#[test]
fn crate_shaped_filters_batches_errors_and_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.set_compaction_filter("secret", |_, k: &[u8], _: &[u8]| match k.first() {
        Some(b'_') => CompactionDecision::Remove,
        Some(b'%') => CompactionDecision::Change(b"secret"),
        _ => CompactionDecision::Keep,
    });
    let db = DB::open_cf(&o, dir.path().join("db"), ["cf"]).unwrap();
    db.put(b"_k", b"a").unwrap();
    db.put(b"%k", b"b").unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get(b"_k").unwrap(), None);
    assert_eq!(db.get(b"%k").unwrap().as_deref(), Some(&b"secret"[..]));

    struct Seen(Vec<(u32, Vec<u8>)>);
    impl WriteBatchIteratorCf for Seen {
        fn put_cf(&mut self, cf: u32, key: &[u8], _: &[u8]) {
            self.0.push((cf, key.to_vec()));
        }
        fn delete_cf(&mut self, cf: u32, key: &[u8]) {
            self.0.push((cf, key.to_vec()));
        }
        fn merge_cf(&mut self, cf: u32, key: &[u8], _: &[u8]) {
            self.0.push((cf, key.to_vec()));
        }
    }
    let cf = db.cf_handle("cf").unwrap();
    let mut b = WriteBatch::default();
    b.put(b"d", b"1");
    b.delete_cf(&cf, b"c");
    let mut seen = Seen(Vec::new());
    b.iterate_cf(&mut seen);
    assert_eq!(seen.0, vec![(0, b"d".to_vec()), (cf.id(), b"c".to_vec())]);

    let e = db.create_cf("cf", &Options::default()).unwrap_err();
    assert!(e.to_string().starts_with("Invalid argument"), "{e}");
    assert_eq!(db.create_cf("cf", &Options::default()).unwrap_err(), e, "errors compare by text");

    let cp = CrateCheckpoint::new(&db).unwrap();
    cp.create_checkpoint(dir.path().join("cp")).unwrap();
    cp.create_checkpoint_with_log_size(dir.path().join("cp2"), u64::MAX).unwrap();
    let c = DB::open_cf(&o, dir.path().join("cp2"), ["cf"]).unwrap();
    assert_eq!(c.get(b"%k").unwrap().as_deref(), Some(&b"secret"[..]));
    // A checkpoint keeps the DB's id; another DB has its own.
    let id = db.get_db_identity().unwrap();
    assert_eq!(id.len(), 36);
    assert_eq!(c.get_db_identity().unwrap(), id);
    let other = DB::open_default(dir.path().join("other")).unwrap();
    assert_ne!(other.get_db_identity().unwrap(), id);
    drop(other);
    let again = DB::open_default(dir.path().join("other")).unwrap();
    assert_eq!(again.get_db_identity().unwrap().len(), 36);
    let _shared: Arc<strata::ColumnFamily> = cf;
}

#[test]
fn log_data_rides_in_the_wal_unapplied() {
    struct Seen(Vec<String>);
    impl strata::WriteBatchIterator for Seen {
        fn put(&mut self, k: &[u8], _: &[u8]) {
            self.0.push(format!("put {}", String::from_utf8_lossy(k)));
        }
        fn delete(&mut self, k: &[u8]) {
            self.0.push(format!("delete {}", String::from_utf8_lossy(k)));
        }
        fn log_data(&mut self, blob: &[u8]) {
            self.0.push(format!("log {}", String::from_utf8_lossy(blob)));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let mut b = WriteBatch::default();
    b.put(b"k1", b"v1");
    b.put_log_data(b"note");
    b.delete(b"k2");
    assert_eq!(b.len(), 2, "log data is not a record");
    let mut seen = Seen(Vec::new());
    b.iterate(&mut seen);
    assert_eq!(seen.0, ["put k1", "log note", "delete k2"]);
    let copy = WriteBatch::try_from_data(b.data()).unwrap();
    assert_eq!(copy.len(), 2);
    {
        let db = DB::open_default(dir.path()).unwrap();
        db.write(b).unwrap();
        assert_eq!(db.latest_sequence_number(), 2, "two sequence numbers, none for the log data");
        assert_eq!(db.get(b"k1").unwrap().as_deref(), Some(&b"v1"[..]));
    }
    // Replayed from the WAL at the next open, the log data is skipped again.
    let db = DB::open_default(dir.path()).unwrap();
    assert_eq!(db.get(b"k1").unwrap().as_deref(), Some(&b"v1"[..]));
    assert_eq!(db.latest_sequence_number(), 2);
}

fn table_names(db: &DB) -> Vec<String> {
    let mut v: Vec<String> = db.live_files().unwrap().into_iter().map(|f| f.name).collect();
    v.sort();
    v
}

#[test]
fn set_options_changes_the_running_db_or_refuses_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.set_level_zero_file_num_compaction_trigger(2);
    let db = DB::open_cf(&o, dir.path(), ["cf"]).unwrap();
    db.set_options(&[("disable_auto_compactions", "true")]).unwrap();
    for i in 0..4 {
        // Overlapping tables: a compaction merges them (no trivial move).
        db.put(b"a", format!("{i}")).unwrap();
        db.put(b"z", format!("{i}")).unwrap();
        db.flush().unwrap();
    }
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    assert_eq!(db.live_files().unwrap().len(), 4, "no compaction while disabled");
    db.set_options(&[("disable_auto_compactions", "false")]).unwrap();
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    assert!(db.live_files().unwrap().len() < 4, "compacted once enabled again");

    let before = db.property_value("rocksdb.stats").unwrap();
    for bad in [
        &[("disable_auto_compactions", "INVALID")][..],
        &[("INVALID_NAME", "x")],
        &[("disable_auto_compactions", "true\0")],
        &[("disable_auto_compactions\0", "true")],
        &[],
        &[("max_background_jobs", "4")],
        &[("compression", "kNoCompression")],
        &[("level0_file_num_compaction_trigger", "8"), ("no_such", "1")],
    ] {
        let e = db.set_options(bad).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{bad:?}: {e}");
    }
    assert!(before.is_some());
    // The last refusal changed nothing, not even its valid first pair.
    db.set_options(&[("paranoid_file_checks", "true"), ("report_bg_io_stats", "true")]).unwrap();
    let cf = db.cf_handle("cf").unwrap();
    db.set_options_cf(&cf, &[("write_buffer_size", "1048576")]).unwrap();
    let log = std::fs::read_to_string(dir.path().join("LOG")).unwrap();
    assert!(log.contains("SetOptions() on column family [cf]: write_buffer_size=1048576"), "{log}");
}

#[test]
fn flush_and_compaction_options() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open_cf(&opts(), dir.path(), ["a", "b"]).unwrap();
    let (a, b) = (db.cf_handle("a").unwrap(), db.cf_handle("b").unwrap());
    let mut no_wait = strata::FlushOptions::default();
    no_wait.set_wait(false);
    db.put(b"k", b"v").unwrap();
    db.flush_opt(&no_wait).unwrap();
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    assert_eq!(db.live_files().unwrap().len(), 1, "the scheduled flush ran");
    let mut wo = strata::WriteOptions::default();
    wo.disable_wal(true);
    db.put_cf_opt(&a, b"ka", b"1", &wo).unwrap();
    db.put_cf_opt(&b, b"kb", b"2", &wo).unwrap();
    db.flush_cfs_opt(&[&a, &b], &strata::FlushOptions::default()).unwrap();
    assert_eq!(db.get_column_family_metadata_cf(&a).file_count, 1);
    assert_eq!(db.get_column_family_metadata_cf(&b).file_count, 1);

    // Bottommost `Skip` leaves tables already in the last level as they are; `Force`
    // rewrites them.
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let bottom = table_names(&db);
    let mut skip = strata::CompactOptions::default();
    skip.set_bottommost_level_compaction(strata::BottommostLevelCompaction::Skip);
    db.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &skip).unwrap();
    assert_eq!(table_names(&db), bottom);
    let mut force = strata::CompactOptions::default();
    force.set_bottommost_level_compaction(strata::BottommostLevelCompaction::Force);
    db.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &force).unwrap();
    assert_ne!(table_names(&db), bottom);
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));

    let mut w = strata::WaitForCompactOptions::default();
    w.set_flush(true);
    w.set_timeout(30_000_000);
    db.put_cf(&a, b"more", b"x").unwrap();
    db.wait_for_compact(&w).unwrap();
    assert_eq!(db.get_column_family_metadata_cf(&a).file_count, 2, "flushed first");
}

/// Timestamps used where the family has none are refused clearly (`user_timestamps.rs` tests
/// the families that have them), never done differently in silence.
#[test]
fn timestamps_where_the_family_has_none_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.set_comparator_with_ts(
        "ts",
        0,
        Box::new(|a: &[u8], b: &[u8]| a.cmp(b)),
        Box::new(|a: &[u8], b: &[u8]| a.cmp(b)),
        Box::new(|a: &[u8], _, b: &[u8], _| a.cmp(b)),
    );
    assert!(matches!(DB::open(&o, dir.path().join("t")), Err(Error::InvalidArgument(_))));
    // RocksDB's own bytewise comparator, named, is Strata's order.
    let mut o = opts();
    o.set_comparator("leveldb.BytewiseComparator", Box::new(|a: &[u8], b: &[u8]| a.cmp(b)));
    DB::open(&o, dir.path().join("bytewise")).unwrap();
    let db = DB::open_default(dir.path().join("db")).unwrap();
    db.put(b"k", b"v").unwrap();
    assert!(matches!(db.put_with_ts(b"k", [0u8; 8], b"v"), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.delete_with_ts(b"k", [0u8; 8]), Err(Error::InvalidArgument(_))));
    let mut ro = ReadOptions::default();
    ro.set_timestamp([1u8; 8]);
    assert!(matches!(db.get_opt(b"k", &ro), Err(Error::InvalidArgument(_))));
    let items: Vec<_> = db.iterator_opt(IteratorMode::Start, &ro).collect();
    assert!(matches!(items.as_slice(), [Err(Error::InvalidArgument(_))]), "{items:?}");
    let mut b = WriteBatch::default();
    b.put(b"a", b"1");
    b.put_cf_with_ts(&db.cf_handle("default").unwrap(), b"b", [0u8; 8], b"2");
    assert!(matches!(db.write(b), Err(Error::InvalidArgument(_))));
    assert_eq!(db.get(b"a").unwrap(), None, "nothing of the batch written");
    assert_eq!(db.raw_iterator().timestamp(), None);
}

#[test]
fn secondary_backup_sizes_and_error_texts() {
    let dir = tempfile::tempdir().unwrap();
    let primary = DB::open_default(dir.path().join("p")).unwrap();
    for i in 0..500u32 {
        primary.put(format!("k{i:04}"), [b'v'; 100]).unwrap();
    }
    primary.flush().unwrap();
    let secondary =
        DB::open_as_secondary(&Options::default(), dir.path().join("p"), dir.path().join("s"))
            .unwrap();
    primary.put(b"later", b"x").unwrap();
    assert_eq!(secondary.get(b"k0001").unwrap().as_deref(), Some(&[b'v'; 100][..]));
    assert_eq!(secondary.get(b"later").unwrap(), None, "the state at the open");
    secondary.try_catch_up_with_primary().unwrap();
    assert_eq!(secondary.get(b"later").unwrap().as_deref(), Some(&b"x"[..]));

    let sizes = primary.get_approximate_sizes(&[
        strata::Range::new(b"k0000", b"k0500"),
        strata::Range::new(b"z", b"zz"),
    ]);
    let table: u64 = primary.live_files().unwrap().iter().map(|f| f.size as u64).sum();
    assert!(sizes[0] > table / 2 && sizes[0] <= table && sizes[1] == 0, "{sizes:?} of {table}");

    let env = strata::Env::new().unwrap();
    let bo = strata::backup::BackupEngineOptions::new(dir.path().join("backups")).unwrap();
    let mut engine = strata::backup::BackupEngine::open(&bo, &env).unwrap();
    engine.create_new_backup(&primary).unwrap();
    engine.create_new_backup_flush(&primary, false).unwrap();
    let info = engine.get_backup_info();
    assert_eq!(info.iter().map(|i| i.backup_id).collect::<Vec<_>>(), [1, 2]);
    assert!(info.iter().all(|i| i.size > 0 && i.num_files > 0));
    engine.verify_backup(2).unwrap();
    engine.purge_old_backups(1).unwrap();
    assert_eq!(engine.get_backup_info().len(), 1);
    let ro = strata::backup::RestoreOptions::default();
    let restored = dir.path().join("restored");
    engine.restore_from_latest_backup(&restored, &restored, &ro).unwrap();
    let r = DB::open_default(&restored).unwrap();
    assert_eq!(r.get(b"later").unwrap().as_deref(), Some(&b"x"[..]));

    // Texts programs test, as RocksDB writes them.
    let e = DB::destroy(&Options::default(), dir.path().join("p")).unwrap_err();
    assert_eq!(e.kind(), strata::ErrorKind::IOError);
    assert!(e.to_string().contains("/LOCK:"), "{e}");
    let mut mo = opts();
    mo.set_merge_operator_associative(
        "failing",
        |_: &[u8], _: Option<&[u8]>, _: &strata::MergeOperands| None,
    );
    let m = DB::open(&mo, dir.path().join("m")).unwrap();
    m.merge(b"k", b"x").unwrap();
    let e = m.get(b"k").unwrap_err();
    assert!(e.into_string().contains("Merge operator failed"));
}

#[test]
fn tailing_iterators_and_secondary_catch_up() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open_default(dir.path().join("p")).unwrap();
    db.put(b"k1", b"v1").unwrap();
    let mut ro = ReadOptions::default();
    ro.set_tailing(true);
    let mut tail = db.iterator_opt(IteratorMode::Start, ro);
    let plain = db.iterator(IteratorMode::Start);
    db.put(b"k2", b"v2").unwrap();
    db.put(b"k0", b"before the position: not seen").unwrap();
    assert_eq!(tail.next().unwrap().unwrap().0.as_ref(), b"k1");
    db.put(b"k3", b"v3").unwrap();
    assert_eq!(keys(&mut tail), vec![b"k2".to_vec(), b"k3".to_vec()]);
    assert_eq!(keys(plain), vec![b"k1".to_vec()], "a plain iterator reads one state");
    db.put(b"k4", b"v4").unwrap();
    assert_eq!(keys(&mut tail), Vec::<Vec<u8>>::new(), "an ended iterator stays ended");

    // A secondary catches up with the primary's writes, tables and WAL alike.
    let mut o = opts();
    o.create_missing_column_families(true);
    let primary = DB::open_cf(&o, dir.path().join("q"), ["a"]).unwrap();
    let a = primary.cf_handle("a").unwrap();
    primary.put_cf(&a, b"x", b"1").unwrap();
    let sec = DB::open_cf_as_secondary(
        &Options::default(),
        dir.path().join("q"),
        dir.path().join("s"),
        ["a"],
    )
    .unwrap();
    let sa = sec.cf_handle("a").unwrap();
    let before = sec.iterator_cf(&sa, IteratorMode::Start);
    primary.put_cf(&a, b"x", b"2").unwrap();
    primary.flush_cf(&a).unwrap();
    primary.put_cf(&a, b"y", b"3").unwrap();
    primary.create_cf("new", &Options::default()).unwrap();
    assert_eq!(sec.get_cf(&sa, b"x").unwrap().as_deref(), Some(&b"1"[..]));
    sec.try_catch_up_with_primary().unwrap();
    assert_eq!(sec.get_cf(&sa, b"x").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(sec.get_cf(&sa, b"y").unwrap().as_deref(), Some(&b"3"[..]));
    assert!(sec.cf_handle("new").is_none(), "families created meanwhile stay unseen");
    let old: Vec<_> = before.map(|r| r.unwrap().1.to_vec()).collect();
    assert_eq!(old, vec![b"1".to_vec()], "an iterator made before reads its state");
    assert!(matches!(primary.try_catch_up_with_primary(), Err(Error::NotSupported(_))));
}

#[test]
fn sst_file_writer_reports_the_finished_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = strata::SstFileWriter::create(&Options::default());
    assert_eq!(w.file_size(), 0);
    w.open(dir.path().join("a.sst")).unwrap();
    w.put(b"k1", b"v1").unwrap();
    let info = w.finish().unwrap();
    assert!(w.file_size() > 0);
    assert_eq!(w.file_size(), info.file_size);
    assert_eq!(w.file_size(), std::fs::metadata(dir.path().join("a.sst")).unwrap().len());
    assert!(matches!(w.put_with_ts(b"k", [0u8; 8], b"v"), Err(Error::InvalidArgument(_))));
}

#[test]
fn change_level_moves_the_compacted_tables() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.set_level_compaction_dynamic_level_bytes(false);
    let db = DB::open(&o, dir.path()).unwrap();
    for i in 0..200u32 {
        db.put(format!("k{i:04}"), [b'v'; 64]).unwrap();
    }
    let levels =
        |db: &DB| -> Vec<i32> { db.live_files().unwrap().iter().map(|f| f.level).collect() };
    let mut c = strata::CompactOptions::default();
    c.set_change_level(true);
    c.set_target_level(2);
    db.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &c).unwrap();
    assert!(levels(&db).iter().all(|&l| l == 2), "{:?}", levels(&db));
    assert_eq!(db.get(b"k0100").unwrap().as_deref(), Some(&[b'v'; 64][..]));
    // -1: the highest level whose target holds the tables, with every level between empty.
    c.set_target_level(-1);
    db.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &c).unwrap();
    assert!(levels(&db).iter().all(|&l| l == 1), "{:?}", levels(&db));
    // A level in the way, or L0, is refused; nothing moves.
    db.put(b"a", b"1").unwrap();
    db.flush().unwrap();
    c.set_target_level(0);
    let e = db.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &c).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert_eq!(db.get(b"k0001").unwrap().as_deref(), Some(&[b'v'; 64][..]));
}

/// `Cache::set_capacity` evicts to fit; `get_pinned_usage` counts the blocks readers hold.
#[test]
fn cache_capacity_changes_and_pinned_usage() {
    for cache in
        [strata::Cache::new_lru_cache(8 << 20), strata::Cache::new_hyper_clock_cache(8 << 20, 4096)]
    {
        let dir = tempfile::tempdir().unwrap();
        let mut o = opts();
        let mut bo = strata::BlockBasedOptions::default();
        bo.set_block_cache(&cache);
        o.set_block_based_table_factory(&bo);
        let db = DB::open(&o, dir.path()).unwrap();
        for i in 0..20_000u32 {
            db.put(format!("k{i:06}"), [b'v'; 100]).unwrap();
        }
        db.flush().unwrap();
        for i in (0..20_000u32).step_by(7) {
            db.get(format!("k{i:06}")).unwrap().unwrap();
        }
        let held = cache.get_usage();
        assert!(held > 1 << 20, "{held}");
        assert_eq!(cache.get_pinned_usage(), 0, "no reader holds a block");
        let mut it = db.raw_iterator();
        it.seek_to_first();
        assert!(it.valid());
        assert!(cache.get_pinned_usage() > 0, "the iterator holds its block");
        cache.set_capacity(64 << 10);
        assert_eq!(cache.capacity(), 64 << 10);
        assert!(cache.get_usage() <= 64 << 10, "{}", cache.get_usage());
        it.next();
        assert_eq!(it.key(), Some(&b"k000001"[..]), "the iterator reads on");
        drop(it);
        assert_eq!(cache.get_pinned_usage(), 0);
        cache.set_capacity(8 << 20);
        assert_eq!(db.get("k019999").unwrap().as_deref(), Some(&[b'v'; 100][..]));
    }
}
