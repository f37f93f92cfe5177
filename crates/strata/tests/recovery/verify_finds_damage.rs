//! `strata::inspect::verify_db` (`strata verify`, `docs/cli.md`): a clean DB verifies clean, and a
//! flipped byte in a table, a WAL, the MANIFEST or CURRENT is found and named.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::env::{FileSystem, MemFs};
use strata::inspect::{all_intact, verify_db};
use strata::{Db, Options};

fn opts(fs: &MemFs) -> Options {
    Options { fs: Arc::new(fs.clone()), create_if_missing: true, ..Options::default() }
}

/// A closed DB with two tables and a WAL holding records.
fn build() -> (MemFs, PathBuf) {
    let fs = MemFs::new();
    let dir = PathBuf::from("/db");
    let db = Db::open(&opts(&fs), &dir).unwrap();
    for i in 0..200 {
        db.put(format!("key{i:04}"), format!("value{i}")).unwrap();
        if i == 100 {
            db.flush().unwrap();
        }
    }
    db.flush().unwrap();
    for i in 0..20 {
        db.put(format!("wal{i:02}"), b"x").unwrap();
    }
    drop(db);
    (fs, dir)
}

/// Picks a file by name.
type Pick = fn(&str) -> bool;

fn file_ending(fs: &MemFs, dir: &Path, pred: impl Fn(&str) -> bool) -> PathBuf {
    let mut names: Vec<String> = fs.list(dir).unwrap().into_iter().filter(|n| pred(n)).collect();
    names.sort();
    dir.join(names.last().expect("such a file"))
}

#[test]
fn a_flipped_byte_in_each_file_type_is_found() {
    let (fs, dir) = build();
    let checks = verify_db(&opts(&fs), &dir).unwrap();
    assert!(all_intact(&checks), "{checks:?}");
    assert!(checks.len() >= 4, "MANIFEST, two tables, a WAL: {checks:?}");

    let cases: [(&str, Pick, usize); 4] = [
        ("table", |n| n.ends_with("sst"), 30),
        ("WAL", |n| n.ends_with("log"), 60),
        ("MANIFEST", |n| n.starts_with("MANIFEST-"), 12),
        ("CURRENT", |n| n == "CURRENT", 2),
    ];
    for (what, pred, offset) in cases {
        let (fs, dir) = build();
        let victim = file_ending(&fs, &dir, pred);
        let mut bytes = fs.read_file(&victim).unwrap();
        bytes[offset] ^= 0x10;
        fs.write_file(&victim, &bytes);
        let checks = verify_db(&opts(&fs), &dir).unwrap();
        assert!(!all_intact(&checks), "{what}: {checks:?}");
        let bad: Vec<_> = checks.iter().filter(|c| c.result.is_err()).collect();
        assert_eq!(bad.len(), 1, "{what}: {checks:?}");
        assert_eq!(bad[0].path, victim, "{what}: {checks:?}");
        if what != "CURRENT" {
            assert!(bad[0].result.as_ref().unwrap_err().is_corruption(), "{what}: {checks:?}");
        } else {
            // The tables are still checked when the MANIFEST cannot be found.
            assert!(
                checks.iter().filter(|c| c.path.extension().is_some_and(|e| e == "sst")).count()
                    >= 2
            );
        }
    }
}

/// `Db::verify_checksum` (RocksDB's `VerifyChecksum`) on an open DB: clean when its tables and
/// blob files are, and a flipped byte in a table's data block or in a blob record is
/// `Corruption` naming that file, with the DB still open and reading what is intact.
#[test]
fn the_open_db_verifies_its_tables_and_blob_files() {
    let fs = MemFs::new();
    let dir = PathBuf::from("/db");
    let o = Options {
        blob: strata::BlobOptions {
            enable_blob_files: true,
            min_blob_size: 64,
            ..strata::BlobOptions::default()
        },
        ..opts(&fs)
    };
    let db = Db::open(&o, &dir).unwrap();
    for i in 0..300 {
        let value = if i % 2 == 0 { vec![b'b'; 100] } else { b"small".to_vec() };
        db.put(format!("key{i:04}"), value).unwrap();
        if i == 150 {
            db.flush().unwrap();
        }
    }
    db.flush().unwrap();
    db.verify_checksum().unwrap();

    for (what, ext) in [("table", "sst"), ("blob file", "blob")] {
        let victim = file_ending(&fs, &dir, |n| n.ends_with(ext));
        let clean = fs.read_file(&victim).unwrap();
        let mut bytes = clean.clone();
        // Past a blob file's header; inside a table's first data block.
        bytes[40] ^= 0x10;
        fs.write_file(&victim, &bytes);
        let e = db.verify_checksum().expect_err(what);
        assert!(e.is_corruption(), "{what}: {e}");
        assert!(e.to_string().contains(victim.to_str().unwrap()), "{what}: {e}");
        fs.write_file(&victim, &clean);
        db.verify_checksum().unwrap_or_else(|e| panic!("{what} restored: {e}"));
    }
    assert_eq!(db.get(b"key0299").unwrap().as_deref(), Some(&b"small"[..]));
}
