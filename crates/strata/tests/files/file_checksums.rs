//! Whole-file checksums (`Options::file_checksums`, `db/file_checksums.rs`): flushes,
//! compactions and ingestion record each table's CRC32C in the MANIFEST; they survive a
//! reopen and a checkpoint; `verify_file_checksums` passes on intact files and names the file
//! whose bytes changed; tables written with the option off have none and are not checked;
//! blob files carry theirs the same way.

use std::path::Path;

use strata::{BlobOptions, Checkpoint, Db, ErrorKind, Options, SstFileWriter};

fn options(checksums: bool) -> Options {
    Options {
        create_if_missing: true,
        file_checksums: checksums,
        disable_auto_compactions: true,
        ..Options::default()
    }
}

fn fill(db: &Db, from: u32, n: u32) {
    for i in from..from + n {
        db.put(format!("key{i:05}"), format!("value {i} ").repeat(8)).unwrap();
    }
    db.flush().unwrap();
}

/// The CRC32C of a file's bytes.
fn crc_of(path: &Path) -> u32 {
    crc32c::crc32c(&std::fs::read(path).unwrap())
}

#[test]
fn tables_carry_checksums_that_survive_a_reopen_and_catch_a_changed_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::open(&options(true), &path).unwrap();
    fill(&db, 0, 500);
    fill(&db, 250, 500);
    let info = db.get_live_files_checksum_info();
    assert_eq!(info.len(), 2, "{info:?}");
    for f in &info {
        assert_eq!(f.checksum_func_name, "FileChecksumCrc32c");
        assert_eq!(f.checksum, Some(crc_of(&path.join(&f.name))), "{f:?}");
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let info = db.get_live_files_checksum_info();
    assert_eq!(info.len(), 1, "the compaction's output: {info:?}");
    assert_eq!(info[0].checksum, Some(crc_of(&path.join(&info[0].name))));
    db.verify_file_checksums().unwrap();
    drop(db);
    // The MANIFEST keeps them: a reopen (even with the option off) still verifies.
    let db = Db::open(&options(false), &path).unwrap();
    assert_eq!(db.get_live_files_checksum_info(), info);
    db.verify_file_checksums().unwrap();
    // A checkpoint's MANIFEST has them too.
    let cp = dir.path().join("cp");
    Checkpoint::create(&db, &cp).unwrap();
    let copy = Db::open(&options(false), &cp).unwrap();
    assert_eq!(copy.get_live_files_checksum_info()[0].checksum, info[0].checksum);
    copy.verify_file_checksums().unwrap();
    drop(copy);
    drop(db);
    // One byte of a data block changed: the whole-file check names the file.
    let sst = path.join(&info[0].name);
    let mut bytes = std::fs::read(&sst).unwrap();
    bytes[10] ^= 0x40;
    std::fs::write(&sst, &bytes).unwrap();
    let db = Db::open(&Options { paranoid_checks: false, ..options(true) }, &path).unwrap();
    let e = db.verify_file_checksums().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    let msg = e.to_string();
    assert!(msg.contains(&info[0].name) && msg.contains("file checksum mismatch"), "{msg}");
}

#[test]
fn tables_written_without_the_option_have_none_and_are_not_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::open(&options(false), &path).unwrap();
    fill(&db, 0, 100);
    drop(db);
    let db = Db::open(&options(true), &path).unwrap();
    fill(&db, 100, 100);
    let mut info = db.get_live_files_checksum_info();
    info.sort_by_key(|f| f.file_number);
    let sums: Vec<_> = info.iter().map(|f| (f.checksum.is_some(), f.checksum_func_name)).collect();
    assert_eq!(sums, [(false, "Unknown"), (true, "FileChecksumCrc32c")], "{info:?}");
    db.verify_file_checksums().unwrap();
    // A family made later follows the DB-wide option, whatever its own options say.
    let cf = db.create_cf_handle("other", &Options::default()).unwrap();
    db.put_cf(&cf, "k", "v").unwrap();
    db.flush_cf(&cf).unwrap();
    let other: Vec<_> = db
        .get_live_files_checksum_info()
        .into_iter()
        .filter(|f| f.column_family_name == "other")
        .collect();
    assert!(other.len() == 1 && other[0].checksum.is_some(), "{other:?}");
}

#[test]
fn an_ingested_file_gets_its_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let sst = dir.path().join("in.sst");
    let mut w = SstFileWriter::create(&options(false));
    w.open(&sst).unwrap();
    for i in 0..100u32 {
        w.put(format!("k{i:04}"), format!("v{i}")).unwrap();
    }
    w.finish().unwrap();
    let want = crc_of(&sst);
    let db = Db::open(&options(true), dir.path().join("db")).unwrap();
    db.ingest_external_file(vec![&sst]).unwrap();
    let info = db.get_live_files_checksum_info();
    assert_eq!(info.len(), 1);
    assert_eq!(info[0].checksum, Some(want));
    db.verify_file_checksums().unwrap();
}

#[test]
fn blob_files_carry_checksums_through_compactions_reopens_and_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let blob = BlobOptions { enable_blob_files: true, min_blob_size: 32, ..BlobOptions::default() };
    let o = Options { blob: blob.clone(), ..options(true) };
    let db = Db::open(&o, &path).unwrap();
    fill(&db, 0, 300);
    fill(&db, 100, 300);
    let blobs = |db: &Db| {
        db.get_live_files_checksum_info()
            .into_iter()
            .filter(|f| Path::new(&f.name).extension().is_some_and(|e| e == "blob"))
            .collect::<Vec<_>>()
    };
    let info = blobs(&db);
    assert_eq!(info.len(), 2, "one blob file per flush: {info:?}");
    for f in &info {
        assert_eq!(f.checksum_func_name, "FileChecksumCrc32c");
        assert_eq!(f.checksum, Some(crc_of(&path.join(&f.name))), "{f:?}");
    }
    db.verify_file_checksums().unwrap();
    // Garbage collection rewrites the values into new blob files, with checksums of their own.
    db.set_options(&[("enable_blob_garbage_collection", "true")]).unwrap();
    db.set_options(&[("blob_garbage_collection_age_cutoff", "1.0")]).unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let after = blobs(&db);
    assert!(!after.is_empty() && after.iter().all(|f| !info.contains(f)), "{after:?}");
    for f in &after {
        assert_eq!(f.checksum, Some(crc_of(&path.join(&f.name))), "{f:?}");
    }
    drop(db);
    let db = Db::open(&Options { blob: blob.clone(), ..options(false) }, &path).unwrap();
    assert_eq!(blobs(&db), after, "the MANIFEST keeps them");
    let cp = dir.path().join("cp");
    Checkpoint::create(&db, &cp).unwrap();
    let copy = Db::open(&Options { blob: blob.clone(), ..options(false) }, &cp).unwrap();
    assert_eq!(blobs(&copy), after);
    copy.verify_file_checksums().unwrap();
    drop((copy, db));
    // A changed byte of a blob value: named by the whole-file check.
    let file = path.join(&after[0].name);
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(&file, &bytes).unwrap();
    let db = Db::open(&Options { paranoid_checks: false, blob, ..options(true) }, &path).unwrap();
    let e = db.verify_file_checksums().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    let msg = e.to_string();
    assert!(msg.contains(&after[0].name) && msg.contains("file checksum mismatch"), "{msg}");
}
