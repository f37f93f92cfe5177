//! Ingesting external SST files: where files go, global sequence numbers shadowing older
//! data, snapshots, merges, deletions and range deletions inside files, column families,
//! move versus copy, refusals, reopen and compaction afterwards.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::env::{FileSystem, MemFs};
use strata::merge_operator::StringAppendOperator;
use strata::{
    CompactionStyle, Db, Error, IngestExternalFileOptions, IteratorMode, Options, ReadOptions,
    SstFileWriter,
};

fn mem_opts(fs: &MemFs) -> Options {
    let fs = Arc::new(fs.clone());
    Options { fs, ..Options::default() }
}

/// Writes an external file at `path` with `entries` (`None` = delete).
fn write_sst(opts: &Options, path: &Path, entries: &[(&str, Option<&str>)]) -> PathBuf {
    let mut w = SstFileWriter::create(opts);
    w.open(path).unwrap();
    for (k, v) in entries {
        match v {
            Some(v) => w.put(k, v).unwrap(),
            None => w.delete(k).unwrap(),
        }
    }
    let info = w.finish().unwrap();
    assert_eq!(info.file_path, path);
    assert_eq!(info.num_entries, entries.len() as u64);
    assert_eq!(info.sequence_number, 0);
    path.to_path_buf()
}

fn get(db: &Db, k: &str) -> Option<String> {
    db.get(k).unwrap().map(|v| String::from_utf8(v).unwrap())
}

fn scan(db: &Db, ro: &ReadOptions) -> Vec<(String, String)> {
    db.iterator_opt(IteratorMode::Start, ro)
        .map(|r| {
            let (k, v) = r.unwrap();
            (String::from_utf8(k.to_vec()).unwrap(), String::from_utf8(v.to_vec()).unwrap())
        })
        .collect()
}

fn file_of(db: &Db, key: &str) -> strata::LiveFileMetaData {
    db.live_files_metadata()
        .into_iter()
        .find(|f| {
            f.smallest_key.as_slice() <= key.as_bytes() && key.as_bytes() <= &f.largest_key[..]
        })
        .unwrap()
}

#[test]
fn writer_reports_what_it_wrote_and_refuses_unsorted_keys() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    fs.create_dir_all(Path::new("/x")).unwrap();
    let mut w = SstFileWriter::create(&opts);
    assert!(matches!(w.put("a", "1"), Err(Error::InvalidArgument(_))), "put before open");
    w.open("/x/1.sst").unwrap();
    w.put("b", "1").unwrap();
    let e = w.put("a", "2").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("[97]") && msg.contains("[98]"), "names both keys: {msg}");
    assert!(matches!(w.put("b", "again"), Err(Error::InvalidArgument(_))), "equal key");
    w.merge("c", "m").unwrap();
    w.delete("d").unwrap();
    w.delete_range("x", "z").unwrap();
    assert!(matches!(w.delete_range("z", "x"), Err(Error::InvalidArgument(_))));
    assert!(w.file_size() > 0);
    let info = w.finish().unwrap();
    assert_eq!(info.smallest_key, b"b");
    assert_eq!(info.largest_key, b"d");
    assert_eq!(
        (info.smallest_range_del_key.as_slice(), &info.largest_range_del_key[..]),
        (&b"x"[..], &b"z"[..])
    );
    assert_eq!((info.num_entries, info.num_range_del_entries), (3, 1));
    assert_eq!(info.file_size, fs.read_file(Path::new("/x/1.sst")).unwrap().len() as u64);
    w.open("/x/2.sst").unwrap();
    assert!(matches!(w.finish(), Err(Error::InvalidArgument(_))), "an empty file is refused");
}

#[test]
fn non_overlapping_files_go_to_the_bottom_at_seqno_zero() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let db = Db::open(&opts, "/db").unwrap();
    db.put("a", "db").unwrap();
    db.flush().unwrap();
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let f1 = write_sst(&opts, Path::new("/ext/1.sst"), &[("m", Some("1")), ("n", Some("2"))]);
    let f2 = write_sst(&opts, Path::new("/ext/2.sst"), &[("p", Some("3")), ("q", Some("4"))]);
    db.ingest_external_file([&f1, &f2]).unwrap();
    for (k, v) in [("a", "db"), ("m", "1"), ("n", "2"), ("p", "3"), ("q", "4")] {
        assert_eq!(get(&db, k).as_deref(), Some(v), "{k}");
    }
    for k in ["m", "p"] {
        let f = file_of(&db, k);
        assert_eq!(f.level, opts.num_levels - 1, "{k}: {f:?}");
        assert_eq!(f.largest_seqno, 0);
    }
    assert!(fs.read_file(&f1).is_some(), "the source stays when copying");
}

#[test]
fn overlapping_file_gets_a_global_seqno_and_shadows_older_data() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let db = Db::open(&opts, "/db").unwrap();
    for k in ["a", "b", "c", "d"] {
        db.put(k, "old").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    db.put("c", "memtable").unwrap(); // the file overlaps the memtable too: flushed first
    let before = db.latest_sequence_number();
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let f = write_sst(&opts, Path::new("/ext/1.sst"), &[("b", Some("new")), ("c", Some("new"))]);
    db.ingest_external_file([&f]).unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("old"));
    assert_eq!(get(&db, "b").as_deref(), Some("new"));
    assert_eq!(get(&db, "c").as_deref(), Some("new"));
    let m = file_of(&db, "b");
    assert_eq!(m.largest_seqno, before + 1, "{m:?}");
    assert_eq!(db.latest_sequence_number(), before + 1);
    assert_eq!(
        scan(&db, &ReadOptions::default()),
        [("a", "old"), ("b", "new"), ("c", "new"), ("d", "old")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
    );
    // Later writes are newer than the file.
    db.put("b", "later").unwrap();
    assert_eq!(get(&db, "b").as_deref(), Some("later"));
    db.flush().unwrap();
    assert_eq!(get(&db, "b").as_deref(), Some("later"));
}

/// Files of one call that overlap each other are ingested as RocksDB does: cut into batches in
/// the order given, each newer than the one before (its own global seqno, placed above it),
/// so a key in two files reads as the later file has it, before and after a reopen and a
/// compaction; files that overlap neither each other nor the DB still go down at seqno 0 when
/// they are alone in their call.
#[test]
fn overlapping_files_of_one_call_read_as_the_later_one() {
    let fs = MemFs::new();
    // No automatic compaction moves the files before their places are read.
    let opts = Options { disable_auto_compactions: true, ..mem_opts(&fs) };
    let db = Db::open(&opts, "/db").unwrap();
    for k in ["a", "q", "z"] {
        db.put(k, "old").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let before = db.latest_sequence_number();
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let f1 = write_sst(&opts, Path::new("/ext/1.sst"), &[("b", Some("1")), ("c", Some("1"))]);
    let f2 = write_sst(&opts, Path::new("/ext/2.sst"), &[("x", Some("2")), ("y", Some("2"))]);
    let f3 = write_sst(&opts, Path::new("/ext/3.sst"), &[("c", Some("3")), ("d", Some("3"))]);
    let f4 = write_sst(&opts, Path::new("/ext/4.sst"), &[("c", None), ("y", Some("4"))]);
    db.ingest_external_file([&f1, &f2, &f3, &f4]).unwrap();
    // Batches: [1, 2], [3], [4]; their seqnos rise by one each.
    assert_eq!(db.latest_sequence_number(), before + 3);
    let want =
        [("a", "old"), ("b", "1"), ("d", "3"), ("q", "old"), ("x", "2"), ("y", "4"), ("z", "old")]
            .map(|(k, v)| (k.to_string(), v.to_string()));
    assert_eq!(scan(&db, &ReadOptions::default()), want);
    let levels: Vec<(String, usize, u64)> = db
        .live_files_metadata()
        .into_iter()
        .map(|m| (String::from_utf8(m.smallest_key).unwrap(), m.level, m.largest_seqno))
        .collect();
    let at = |key: &str, seq: u64| {
        levels.iter().find(|(k, _, s)| k == key && *s == seq).map(|l| l.1).expect(key)
    };
    // Each batch above the one before it.
    assert!(at("c", before + 2) < at("b", before + 1), "{levels:?}");
    assert!(at("c", before + 3) < at("c", before + 2), "{levels:?}");
    drop(db);
    let db = Db::open(&opts, "/db").unwrap();
    assert_eq!(scan(&db, &ReadOptions::default()), want);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(scan(&db, &ReadOptions::default()), want);
    assert_eq!(get(&db, "c"), None);
}

#[test]
fn a_snapshot_taken_before_does_not_see_the_ingested_data() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let db = Db::open(&opts, "/db").unwrap();
    db.put("a", "1").unwrap();
    let snap = db.snapshot();
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let f = write_sst(&opts, Path::new("/ext/1.sst"), &[("a", Some("2")), ("z", Some("9"))]);
    db.ingest_external_file([&f]).unwrap();
    let mut ro = ReadOptions::default();
    ro.set_snapshot(&snap);
    assert_eq!(db.get_opt("a", &ro).unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get_opt("z", &ro).unwrap(), None);
    assert_eq!(scan(&db, &ro), [("a".to_string(), "1".to_string())]);
    assert_eq!(get(&db, "a").as_deref(), Some("2"));
    assert_eq!(get(&db, "z").as_deref(), Some("9"));
    // Still so after a compaction.
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get_opt("a", &ro).unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get_opt("z", &ro).unwrap(), None);
    assert_eq!(get(&db, "a").as_deref(), Some("2"));

    // A snapshot alone makes a non-overlapping file take a global seqno.
    let f = write_sst(&opts, Path::new("/ext/2.sst"), &[("zq", Some("x"))]);
    db.ingest_external_file([&f]).unwrap();
    assert_eq!(db.get_opt("zq", &ro).unwrap(), None);
    assert!(file_of(&db, "zq").largest_seqno > 0);
    let strict = IngestExternalFileOptions { allow_global_seqno: false, ..Default::default() };
    let f = write_sst(&opts, Path::new("/ext/3.sst"), &[("zr", Some("x"))]);
    let e = db.ingest_external_file_opts(&strict, [&f]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)) && e.to_string().contains("snapshot"), "{e}");
    let loose = IngestExternalFileOptions { snapshot_consistency: false, ..strict };
    db.ingest_external_file_opts(&loose, [&f]).unwrap();
    assert_eq!(get(&db, "zr").as_deref(), Some("x"));
}

#[test]
fn merges_and_deletes_in_files_apply_to_older_data() {
    let fs = MemFs::new();
    let opts = Options {
        merge_operator: Some(Arc::new(StringAppendOperator::new(b","))),
        ..mem_opts(&fs)
    };
    let db = Db::open(&opts, "/db").unwrap();
    db.put("a", "1").unwrap();
    db.put("b", "gone soon").unwrap();
    db.flush().unwrap();
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let mut w = SstFileWriter::create(&opts);
    w.open("/ext/1.sst").unwrap();
    w.merge("a", "2").unwrap();
    w.delete("b").unwrap();
    w.merge("c", "x").unwrap();
    w.finish().unwrap();
    db.ingest_external_file(["/ext/1.sst"]).unwrap();
    let check = |db: &Db| {
        assert_eq!(get(db, "a").as_deref(), Some("1,2"));
        assert_eq!(get(db, "b"), None);
        assert_eq!(get(db, "c").as_deref(), Some("x"));
    };
    check(&db);
    db.merge("a", "3").unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("1,2,3"));
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("1,2,3"));
    assert_eq!(get(&db, "b"), None);
}

#[test]
fn a_range_deletion_in_a_file_deletes_older_data_but_not_the_files_own_entries() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let db = Db::open(&opts, "/db").unwrap();
    for k in ["k1", "k2", "k3", "k4", "k5", "k6", "k7"] {
        db.put(k, "old").unwrap();
    }
    db.flush().unwrap();
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let mut w = SstFileWriter::create(&opts);
    w.open("/ext/1.sst").unwrap();
    w.delete_range("k3", "k6").unwrap();
    w.put("k4", "new").unwrap();
    w.finish().unwrap();
    db.ingest_external_file(["/ext/1.sst"]).unwrap();
    let expect: Vec<(String, String)> =
        [("k1", "old"), ("k2", "old"), ("k4", "new"), ("k6", "old"), ("k7", "old")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .to_vec();
    assert_eq!(scan(&db, &ReadOptions::default()), expect);
    assert_eq!(get(&db, "k3"), None);
    assert_eq!(get(&db, "k5"), None);
    db.put("k5", "later").unwrap();
    assert_eq!(get(&db, "k5").as_deref(), Some("later"));
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(get(&db, "k3"), None);
    assert_eq!(get(&db, "k4").as_deref(), Some("new"));
    assert_eq!(get(&db, "k5").as_deref(), Some("later"));
    drop(db);
    let db = Db::open(&opts, "/db").unwrap();
    assert_eq!(get(&db, "k3"), None);
    assert_eq!(get(&db, "k5").as_deref(), Some("later"));
}

#[test]
fn ingestion_into_a_column_family() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let db = Db::open(&opts, "/db").unwrap();
    let cf = db.create_cf_handle("other", &opts).unwrap();
    db.put_cf(&cf, "a", "old").unwrap();
    db.flush_cf(&cf).unwrap();
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let f = write_sst(&opts, Path::new("/ext/1.sst"), &[("a", Some("new")), ("b", Some("2"))]);
    db.ingest_external_file_cf(&cf, [&f]).unwrap();
    assert_eq!(db.get_cf(&cf, "a").unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(db.get_cf(&cf, "b").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(get(&db, "a"), None);
    assert_eq!(get(&db, "b"), None);
    drop(cf);
    drop(db);
    let db = Db::open_cf(&opts, "/db", ["other"]).unwrap();
    let cf = db.cf_handle("other").unwrap();
    assert_eq!(db.get_cf(&cf, "a").unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(get(&db, "a"), None);
}

#[test]
fn move_links_and_removes_the_source_copy_leaves_it() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = Options { create_if_missing: true, ..Options::default() };
    let db = Db::open(&opts, tmp.path().join("db")).unwrap();
    let src1 = write_sst(&opts, &tmp.path().join("1.sst"), &[("a", Some("1"))]);
    let bytes = std::fs::read(&src1).unwrap();
    db.ingest_external_file([&src1]).unwrap();
    assert_eq!(std::fs::read(&src1).unwrap(), bytes, "copying leaves the source untouched");
    let src2 = write_sst(&opts, &tmp.path().join("2.sst"), &[("b", Some("2"))]);
    let mv = IngestExternalFileOptions { move_files: true, ..Default::default() };
    db.ingest_external_file_opts(&mv, [&src2]).unwrap();
    assert!(!src2.exists(), "moved");
    assert_eq!(get(&db, "a").as_deref(), Some("1"));
    assert_eq!(get(&db, "b").as_deref(), Some("2"));
    drop(db);
    let db = Db::open(&opts, tmp.path().join("db")).unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("1"));
    assert_eq!(get(&db, "b").as_deref(), Some("2"));
}

#[test]
fn refusals_leave_the_db_unchanged() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let db = Db::open(&opts, "/db").unwrap();
    db.put("a", "old").unwrap();
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let f1 = write_sst(&opts, Path::new("/ext/1.sst"), &[("a", Some("x")), ("m", Some("x"))]);
    let f2 = write_sst(&opts, Path::new("/ext/2.sst"), &[("k", Some("y")), ("z", Some("y"))]);
    let tables = |fs: &MemFs| {
        fs.paths()
            .iter()
            .filter(|p| p.starts_with("/db") && p.extension().is_some_and(|e| e == "sst"))
            .count()
    };
    let before = tables(&fs);
    // Files that overlap each other need global sequence numbers.
    let no_seq = IngestExternalFileOptions { allow_global_seqno: false, ..Default::default() };
    let e = db.ingest_external_file_opts(&no_seq, [&f1, &f2]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)) && e.to_string().contains("overlap"), "{e}");
    // Overlaps the memtable, no flush allowed.
    let no_flush = IngestExternalFileOptions { allow_blocking_flush: false, ..Default::default() };
    let e = db.ingest_external_file_opts(&no_flush, [&f1]).unwrap_err();
    assert!(e.to_string().contains("memtable"), "{e}");
    db.flush().unwrap();
    let before_flushed = tables(&fs);
    assert_eq!(before_flushed, before + 1);
    // Overlaps data, no global seqno allowed.
    let e = db.ingest_external_file_opts(&no_seq, [&f1]).unwrap_err();
    assert!(e.to_string().contains("overlaps existing data"), "{e}");
    // Not an external file: one of the DB's own tables.
    let own = fs
        .paths()
        .into_iter()
        .find(|p| p.starts_with("/db") && p.extension().is_some_and(|e| e == "sst"))
        .unwrap();
    let e = db.ingest_external_file([&own]).unwrap_err();
    assert!(e.to_string().contains("not an external file"), "{e}");
    // Missing and damaged files.
    assert!(db.ingest_external_file(["/ext/none.sst"]).is_err());
    let mut bytes = fs.read_file(&f2).unwrap();
    bytes[10] ^= 0xff;
    let mut damaged = fs_create(&fs, "/ext/bad.sst");
    strata::env::WritableFile::append(&mut *damaged, &bytes).unwrap();
    strata::env::WritableFile::sync(&mut *damaged).unwrap();
    drop(damaged);
    let e = db.ingest_external_file(["/ext/bad.sst"]).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    assert_eq!(tables(&fs), before_flushed, "no file was left behind");
    assert_eq!(get(&db, "a").as_deref(), Some("old"));
    assert_eq!(get(&db, "m"), None);
    let e = db
        .ingest_external_file_opts(
            &IngestExternalFileOptions { ingest_behind: true, ..Default::default() },
            [&f2],
        )
        .unwrap_err();
    assert!(matches!(e, Error::NotSupported(_)), "{e}");
}

fn fs_create(fs: &MemFs, path: &str) -> Box<dyn strata::env::WritableFile> {
    fs.create(Path::new(path)).unwrap()
}

#[test]
fn reopen_keeps_ingested_files_and_their_global_seqnos() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    {
        let db = Db::open(&opts, "/db").unwrap();
        db.put("a", "old").unwrap();
        db.put("b", "old").unwrap();
        db.flush().unwrap();
        fs.create_dir_all(Path::new("/ext")).unwrap();
        let f = write_sst(&opts, Path::new("/ext/1.sst"), &[("a", Some("new"))]);
        db.ingest_external_file([&f]).unwrap();
        db.put("c", "after").unwrap(); // in the WAL, numbered after the file
    }
    // The tools see the external file and its global seqno.
    let manifest = fs
        .paths()
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("MANIFEST")))
        .unwrap();
    let added: Vec<strata::inspect::TableSummary> = strata::inspect::read_manifest(&fs, &manifest)
        .unwrap()
        .into_iter()
        .flat_map(|(_, items)| items)
        .filter_map(|i| match i {
            strata::inspect::EditItem::AddFile(t) => Some(t),
            _ => None,
        })
        .collect();
    let ingested = added.iter().find(|t| t.global_seqno > 0).expect("a file with a global seqno");
    let table = fs
        .paths()
        .into_iter()
        .find(|p| p.ends_with(format!("{:06}.sst", ingested.number)))
        .unwrap();
    let props = strata::inspect::Table::open(&fs, &table).unwrap().properties();
    assert!(props.contains(&("external_file_version", "1".to_string())), "{props:?}");
    let db = Db::open(&opts, "/db").unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("new"));
    assert_eq!(get(&db, "b").as_deref(), Some("old"));
    assert_eq!(get(&db, "c").as_deref(), Some("after"));
    db.put("a", "newest").unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("newest"));
}

#[test]
fn compaction_after_ingestion_keeps_values_right() {
    let fs = MemFs::new();
    let opts = Options { num_levels: 4, ..mem_opts(&fs) };
    let db = Db::open(&opts, "/db").unwrap();
    fs.create_dir_all(Path::new("/ext")).unwrap();
    for round in 0..4 {
        for i in (0..40).step_by(3) {
            db.put(format!("k{i:02}"), format!("db{round}")).unwrap();
        }
        db.flush().unwrap();
        let entries: Vec<(String, String)> =
            (0..40).step_by(2).map(|i| (format!("k{i:02}"), format!("ext{round}"))).collect();
        let refs: Vec<(&str, Option<&str>)> =
            entries.iter().map(|(k, v)| (k.as_str(), Some(v.as_str()))).collect();
        let f = write_sst(&opts, &PathBuf::from(format!("/ext/{round}.sst")), &refs);
        db.ingest_external_file([&f]).unwrap();
    }
    let expect = |db: &Db| {
        for i in 0..40 {
            let want = if i % 2 == 0 {
                Some("ext3")
            } else if i % 3 == 0 {
                Some("db3")
            } else {
                None
            };
            assert_eq!(get(db, &format!("k{i:02}")).as_deref(), want, "k{i:02}");
        }
    };
    expect(&db);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    expect(&db);
    drop(db);
    let db = Db::open(&opts, "/db").unwrap();
    expect(&db);
}

#[test]
fn universal_style_puts_overlapping_files_in_l0() {
    let fs = MemFs::new();
    let opts = Options { compaction_style: CompactionStyle::Universal, ..mem_opts(&fs) };
    let db = Db::open(&opts, "/db").unwrap();
    db.put("a", "old").unwrap();
    db.flush().unwrap();
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let f = write_sst(&opts, Path::new("/ext/1.sst"), &[("a", Some("new"))]);
    db.ingest_external_file([&f]).unwrap();
    let m = db.live_files_metadata().into_iter().find(|m| m.largest_seqno > 1).unwrap();
    assert_eq!(m.level, 0, "{m:?}");
    assert_eq!(get(&db, "a").as_deref(), Some("new"));
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("new"));
}
