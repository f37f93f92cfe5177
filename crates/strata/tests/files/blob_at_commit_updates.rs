//! `get_updates_since` over values written at commit (`BlobOptions::write_blobs_at_commit`):
//! the WAL records hold blob indexes, so a blob file that a kept WAL (archived, or live for
//! another family) still refers to stays on disk after it left the versions, after its
//! memtable's flush abandoned it, and across a reopen; once no kept WAL refers to it, the
//! next purge deletes it (`db/wal_blob_refs.rs`).

use std::path::Path;
use std::sync::Arc;

use strata::env::{FaultFs, FaultKind, FaultOp, FaultRule, FileSystem, MemFs};
use strata::{BlobOptions, ColumnFamilyDescriptor, Db, Options, WriteBatch};

use super::blob_at_commit::files_with;

const MIN_BLOB: usize = 100;

fn opts(fs: &MemFs, archive: bool) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        create_if_missing: true,
        create_missing_column_families: true,
        // A day: nothing ages out during a test.
        wal_ttl_seconds: if archive { 86_400 } else { 0 },
        blob: BlobOptions {
            enable_blob_files: true,
            min_blob_size: MIN_BLOB as u64,
            write_blobs_at_commit: true,
            enable_blob_gc: true,
            blob_gc_age_cutoff: 1.0,
            ..BlobOptions::default()
        },
        ..Options::default()
    }
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("value{i:04}-{round}-").repeat(20).into_bytes()
}

/// Every put `get_updates_since(from)` hands out, as `(key, value)`, in order.
fn puts_since(db: &Db, from: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    struct Puts<'a>(&'a mut Vec<(Vec<u8>, Vec<u8>)>);
    impl strata::WriteBatchIterator for Puts<'_> {
        fn put(&mut self, k: &[u8], v: &[u8]) {
            self.0.push((k.to_vec(), v.to_vec()));
        }
        fn delete(&mut self, _: &[u8]) {}
    }
    let mut seen = Vec::new();
    for item in db.get_updates_since(from).unwrap() {
        let (_, batch) = item.unwrap_or_else(|e| panic!("get_updates_since: {e}"));
        batch.iterate(&mut Puts(&mut seen));
    }
    seen
}

fn archived_wals(fs: &MemFs) -> Vec<String> {
    fs.list(Path::new("/db/archive")).unwrap_or_default()
}

/// Writes `keys` large values (round `round`) and flushes them.
fn write_round(db: &Db, keys: u32, round: u32, expect: &mut Vec<(Vec<u8>, Vec<u8>)>) {
    for i in 0..keys {
        let k = format!("key{i:04}").into_bytes();
        db.put(&k, value(i, round)).unwrap();
        expect.push((k, value(i, round)));
    }
    db.flush().unwrap();
}

#[test]
fn archived_wals_read_values_whose_blob_files_garbage_collection_dropped() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs, true), "/db").unwrap();
    let mut expect = Vec::new();
    write_round(&db, 20, 1, &mut expect);
    write_round(&db, 20, 2, &mut expect);
    // Every value of round 1 is garbage: the collection over every file drops its blob file
    // from the version.
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.property_int_value("rocksdb.num-blob-files").unwrap(), Some(1));
    assert!(!archived_wals(&fs).is_empty());
    // Round 1's file is on disk still: the archived WALs refer to it.
    assert_eq!(files_with(&fs, "blob").len(), 3, "{:?}", files_with(&fs, "blob"));
    assert_eq!(puts_since(&db, 0), expect);

    // Across a reopen, the file no version names is kept for the archive too.
    drop(db);
    let db = Db::open(&opts(&fs, true), "/db").unwrap();
    assert_eq!(puts_since(&db, 0), expect);
    assert_eq!(files_with(&fs, "blob").len(), 3, "{:?}", files_with(&fs, "blob"));

    // The archive purged (as its TTL or size limit would): the next flush's purge deletes
    // the files only those WALs needed. Round 3's file is then held for the WAL that flush
    // archives, once the compaction below has rewritten its value.
    let before = files_with(&fs, "blob");
    for w in archived_wals(&fs) {
        fs.remove(&Path::new("/db/archive").join(w)).unwrap();
    }
    let from = db.latest_sequence_number();
    let mut later = Vec::new();
    write_round(&db, 1, 3, &mut later);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let after = files_with(&fs, "blob");
    assert!(after.iter().all(|f| !before.contains(f)), "{before:?} -> {after:?}");
    assert_eq!(after.len(), 2, "the version's file and round 3's: {after:?}");
    assert_eq!(puts_since(&db, from), later);
}

#[test]
fn a_blob_file_its_flush_abandoned_stays_for_the_archived_wals() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs, true), "/db").unwrap();
    // Every large value deleted in the same memtable: the flush's table refers to none of
    // them, so the memtable's blob file is abandoned.
    let mut expect = Vec::new();
    for i in 0..10u32 {
        let k = format!("key{i:04}").into_bytes();
        db.put(&k, value(i, 1)).unwrap();
        expect.push((k.clone(), value(i, 1)));
        db.delete(&k).unwrap();
    }
    db.flush().unwrap();
    assert_eq!(db.property_int_value("rocksdb.num-blob-files").unwrap(), Some(0));
    assert_eq!(files_with(&fs, "blob").len(), 1);
    assert_eq!(puts_since(&db, 0), expect);
    drop(db);
    let db = Db::open(&opts(&fs, true), "/db").unwrap();
    assert_eq!(puts_since(&db, 0), expect);
}

#[test]
fn a_wal_live_for_another_family_reads_values_whose_blob_files_were_collected() {
    let fs = MemFs::new();
    let o = opts(&fs, false);
    let db = Db::open_cf_descriptors(
        &o,
        "/db",
        vec![
            ColumnFamilyDescriptor::new("default", o.clone()),
            ColumnFamilyDescriptor::new(
                "other",
                Options { blob: BlobOptions::default(), ..o.clone() },
            ),
        ],
    )
    .unwrap();
    let other = db.cf_handle("other").unwrap();
    // The other family's write keeps the first WAL live through everything below.
    db.put_cf(&other, "pinned", "small").unwrap();
    let mut expect = vec![(b"pinned".to_vec(), b"small".to_vec())];
    for round in 1..=2 {
        let mut b = WriteBatch::new();
        for i in 0..20u32 {
            let k = format!("key{i:04}").into_bytes();
            b.put(&k, value(i, round));
            expect.push((k, value(i, round)));
        }
        db.write(b).unwrap();
        db.flush_cf(&db.cf_handle("default").unwrap()).unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.property_int_value("rocksdb.num-blob-files").unwrap(), Some(1));
    assert_eq!(puts_since(&db, 0), expect);
    // Once the other family is flushed, no kept WAL refers to round 1's file.
    db.flush_cf(&other).unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(files_with(&fs, "blob").len(), 1, "{:?}", files_with(&fs, "blob"));
}

#[test]
fn an_archive_left_by_an_earlier_setting_holds_no_file_of_wals_it_never_got() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs, true), "/db").unwrap();
    let mut expect = Vec::new();
    write_round(&db, 20, 1, &mut expect);
    drop(db);
    // Archival off: the archive stays, and is read, but gains no WAL.
    let db = Db::open(&opts(&fs, false), "/db").unwrap();
    assert!(!archived_wals(&fs).is_empty());
    let at_open = files_with(&fs, "blob");
    assert_eq!(at_open.len(), 1);
    for round in 2..8 {
        write_round(&db, 20, round, &mut Vec::new());
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        // Round 1's file, out of the version since round 2, stays for the archive; the files
        // of later rounds go as they leave the version: their WALs were deleted.
        let now = files_with(&fs, "blob");
        assert_eq!(now.len(), 2, "round {round}: {now:?}");
        assert!(now.contains(&at_open[0]), "round {round}: {now:?}");
        // The archive's batches read back; the deleted WALs' then end the iterator with a gap.
        let items: Vec<_> = db.get_updates_since(0).unwrap().collect();
        let read: Vec<_> = items[..expect.len()].iter().map(|i| i.as_ref().unwrap().0).collect();
        assert_eq!(read, (1..=expect.len() as u64).collect::<Vec<_>>(), "round {round}");
        let gap = items[expect.len()].as_ref().unwrap_err().to_string();
        assert!(gap.contains("hold batches through sequence 20"), "round {round}: {gap}");
    }
}

/// Options on `fs` whose WAL deletions pause 100 ms each, as on a loaded machine: what a
/// flush does after its table is installed is then slow enough to be seen.
fn with_slow_wal_removal(fs: &MemFs) -> Options {
    let slow = FaultFs::new(Arc::new(fs.clone()), 1);
    slow.add_rule(FaultRule {
        op: FaultOp::Remove,
        kind: FaultKind::Delay(100),
        nth: 1,
        persistent: true,
        path_contains: Some(".log".into()),
    });
    Options { fs: Arc::new(slow), ..opts(fs, false) }
}

/// Regression: a flush woke its waiters before it deleted the WALs it retired, so after
/// `flush()` or `compact_range` returned those WALs could still be there, and
/// `get_updates_since` read them: batches whose blob files the compaction's purge had
/// already deleted ("can no longer be read"), or a run ending at a batch of those WALs
/// instead of where the kept WALs end. Now a flush returns once its WALs are gone, and the
/// iterator skips live WALs below the oldest kept.
#[test]
fn a_flush_returns_once_the_wals_it_retired_are_gone() {
    let fs = MemFs::new();
    let db = Db::open(&with_slow_wal_removal(&fs), "/db").unwrap();
    let wals = || files_with(&fs, "log");
    for round in 1..4 {
        let from = db.latest_sequence_number();
        write_round(&db, 20, round, &mut Vec::new());
        assert_eq!(wals().len(), 1, "round {round}: {:?}", wals());
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        assert_eq!(wals().len(), 1, "round {round}: {:?}", wals());
        // The round's batches are in tables and their WAL is gone: no WAL holds them.
        let gap = db.get_updates_since(from).unwrap_err().to_string();
        let expected = format!("the updates after sequence {from} are no longer in the WAL files");
        assert!(gap.contains(&expected), "round {round}: {gap}");
    }
}

/// The iterator's half of the regression above: while a flush not waited for deletes the
/// WALs it retired, `get_updates_since` does not read them (their blob files may be gone
/// already), so what it answers does not depend on how far the deletion got.
#[test]
fn wals_being_retired_are_not_read() {
    let fs = MemFs::new();
    let db = Db::open(&with_slow_wal_removal(&fs), "/db").unwrap();
    let l0 = || db.property_int_value("rocksdb.num-files-at-level0").unwrap().unwrap_or(0);
    for round in 1..4 {
        let from = db.latest_sequence_number();
        for i in 0..20u32 {
            db.put(format!("key{i:04}"), value(i, round)).unwrap();
        }
        let before = l0();
        db.flush_opt(&strata::FlushOptions { wait: false }).unwrap();
        // Installed: from here on the round's WAL is obsolete, gone or going.
        while l0() == before {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let answer = db.get_updates_since(from).map(|mut it| it.next().map(|i| i.map(|b| b.0)));
        let expected = format!("the updates after sequence {from} are no longer in the WAL files");
        assert!(
            answer.as_ref().is_err_and(|e| e.to_string().contains(&expected)),
            "round {round}: {answer:?}"
        );
        db.flush().unwrap();
    }
}
