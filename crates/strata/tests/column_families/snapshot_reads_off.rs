//! A family whose `snapshot_reads` option is off (a log read only at its latest state): its
//! flushes keep only the newest entry of each key whatever snapshots the DB holds, and a read
//! of it through a snapshot is refused; a family beside it keeps what its snapshots see.

use std::path::Path;
use std::sync::Arc;

use strata::env::MemFs;
use strata::{ColumnFamilyDescriptor, Db, Error, Options, ReadOptions};

fn key(i: u32) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

/// Entries in the family's tables.
fn entries(db: &Db, family: &str) -> u64 {
    let files = db.live_files_metadata();
    files.iter().filter(|f| f.column_family_name == family).map(|f| f.num_entries).sum()
}

#[test]
fn a_family_off_snapshot_reads_drops_what_snapshots_saw_and_refuses_reads_through_them() {
    let fs = MemFs::new();
    let opts = Options { fs: Arc::new(fs), ..Options::default() };
    let log_opts = Options { snapshot_reads: false, ..opts.clone() };
    let db = Db::open_cf_descriptors(
        &Options { create_missing_column_families: true, ..opts.clone() },
        Path::new("/db"),
        [ColumnFamilyDescriptor::new("log", log_opts), ColumnFamilyDescriptor::new("data", opts)],
    )
    .unwrap();
    let (log, data) = (db.cf_handle("log").unwrap(), db.cf_handle("data").unwrap());
    for i in 0..100 {
        db.put_cf(&log, key(i), [7u8; 100]).unwrap();
        db.put_cf(&data, key(i), [7u8; 100]).unwrap();
    }
    let snap = db.snapshot();
    // Consumed after the snapshot: the first 90 entries of each, one range deletion each,
    // and one entry overwritten.
    db.delete_range_cf(&log, key(0), key(90)).unwrap();
    db.delete_range_cf(&data, key(0), key(90)).unwrap();
    db.put_cf(&log, key(95), b"new").unwrap();
    db.put_cf(&data, key(95), b"new").unwrap();
    db.flush_cf(&log).unwrap();
    db.flush_cf(&data).unwrap();
    assert_eq!(entries(&db, "log"), 10, "the log's table holds only its 10 live entries");
    assert_eq!(entries(&db, "data"), 101, "the data's table keeps what the snapshot sees");

    // The latest state reads alike in both.
    for cf in [&log, &data] {
        assert_eq!(db.get_cf(cf, key(5)).unwrap(), None);
        assert_eq!(db.get_cf(cf, key(95)).unwrap().as_deref(), Some(&b"new"[..]));
        assert_eq!(db.iterator_cf(cf, strata::IteratorMode::Start).count(), 10);
    }
    // Through the snapshot: the data family as it was, the log refused, never a wrong value.
    assert_eq!(snap.get_cf(&data, key(5)).unwrap().as_deref(), Some(&[7u8; 100][..]));
    let refused = |r: Result<Option<Vec<u8>>, Error>| match r {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("'log'"), "{m}"),
        other => panic!("expected InvalidArgument naming the family, got {other:?}"),
    };
    refused(snap.get_cf(&log, key(5)));
    let ro = ReadOptions { snapshot: Some(snap.handle().clone()), ..ReadOptions::default() };
    refused(db.get_cf_opt(&log, key(95), &ro));
    refused(db.get_pinned_cf_opt(&log, key(95), &ro).map(|v| v.map(|v| v.to_vec())));
    let mut it = db.raw_iterator_cf_opt(&log, ro.clone());
    it.seek_to_first();
    assert!(!it.valid());
    assert!(matches!(it.status(), Err(Error::InvalidArgument(_))), "{:?}", it.status());
    let mut items = db.iterator_cf_opt(&log, ro.clone(), strata::IteratorMode::Start);
    assert!(matches!(items.next(), Some(Err(Error::InvalidArgument(_)))));
    // multi_get_cf reads every key through one snapshot: the log's keys are refused there.
    let got = db.multi_get_cf([(&log, key(95)), (&data, key(95))]);
    assert!(matches!(got[0], Err(Error::InvalidArgument(_))), "{:?}", got[0]);
    assert_eq!(got[1].as_ref().unwrap().as_deref(), Some(&b"new"[..]));
    // Without a snapshot a multi-get of the log alone reads its latest state.
    let k = key(95);
    let got = db.batched_multi_get_cf(&log, [&k], false);
    assert_eq!(got[0].as_ref().unwrap().as_deref(), Some(&b"new"[..]));
    // Compactions alike: the rest consumed and compacted while the snapshot is still held.
    for cf in [&log, &data] {
        db.delete_range_cf(cf, key(90), key(100)).unwrap();
        db.flush_cf(cf).unwrap();
        db.compact_range_cf(cf, None::<&[u8]>, None::<&[u8]>).unwrap();
    }
    assert_eq!(entries(&db, "log"), 0, "nothing of the log is left");
    assert_eq!(entries(&db, "data"), 100, "the data family keeps the 100 values the snapshot sees");
    assert_eq!(snap.get_cf(&data, key(95)).unwrap().as_deref(), Some(&[7u8; 100][..]));
}
