//! Opening with bad paths and mismatched options gives clear errors and touches nothing
//! (issue #10): an empty path, a regular file, `num_levels` below the deepest populated level,
//! and a MANIFEST without CURRENT that is not an interrupted creation's.

use std::path::Path;

use strata::{Db, Error, Options};

fn invalid_argument(r: strata::Result<Db>) -> String {
    match r {
        Err(Error::InvalidArgument(m)) => m,
        Err(e) => panic!("expected InvalidArgument, got {e}"),
        Ok(_) => panic!("expected InvalidArgument, the open succeeded"),
    }
}

#[test]
fn an_empty_path_is_refused_and_leaves_no_lock_file() {
    let cwd_lock = Path::new("LOCK");
    let existed = cwd_lock.exists();
    let msg = invalid_argument(Db::open(&Options::default(), ""));
    assert!(msg.contains("empty"), "{msg}");
    assert_eq!(cwd_lock.exists(), existed, "a stray LOCK was left in the current directory");
}

#[test]
fn a_regular_file_is_not_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, b"data").unwrap();
    let msg = invalid_argument(Db::open(&Options::default(), &file));
    assert!(msg.contains("is not a directory"), "{msg}");
    assert_eq!(std::fs::read(&file).unwrap(), b"data");
}

#[test]
fn too_few_levels_is_an_invalid_argument_naming_the_option() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(&Options::default(), dir.path()).unwrap();
        for i in 0..100u32 {
            db.put(format!("k{i}"), b"v").unwrap();
        }
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        assert_eq!(db.property_int_value("rocksdb.num-files-at-level6").unwrap(), Some(1));
    }
    let opts = Options { num_levels: 3, ..Options::default() };
    let msg = invalid_argument(Db::open(&opts, dir.path()));
    assert!(msg.contains("num_levels") && msg.contains("at least 7"), "{msg}");
    // Nothing was damaged: the right option opens it.
    let db = Db::open(&Options::default(), dir.path()).unwrap();
    assert_eq!(db.get(b"k7").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn a_lone_garbage_manifest_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("MANIFEST-000001");
    let garbage = b"this is not a MANIFEST the engine wrote".to_vec();
    std::fs::write(&manifest, &garbage).unwrap();
    match Db::open(&Options::default(), dir.path()) {
        Err(e) if e.is_corruption() => {
            assert!(e.to_string().contains("MANIFEST-000001"), "{e}");
        }
        Err(e) => panic!("expected Corruption, got {e}"),
        Ok(_) => panic!("opened over a foreign MANIFEST"),
    }
    assert_eq!(std::fs::read(&manifest).unwrap(), garbage, "the file was changed or deleted");
}

#[test]
fn a_manifest_of_an_interrupted_creation_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    // Make a real creation's MANIFEST, then take CURRENT away as a crash before it would.
    drop(Db::open(&Options::default(), dir.path()).unwrap());
    let first = std::fs::read(dir.path().join("MANIFEST-000001")).unwrap();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    // Creation writes one record: a 7-byte header (checksum, little-endian u16 length, type)
    // and the snapshot edit. What follows it came from the open after CURRENT was installed.
    let record = 7 + usize::from(u16::from_le_bytes([first[4], first[5]]));
    for cut in [record, record / 2, 3, 0] {
        std::fs::write(dir.path().join("MANIFEST-000001"), &first[..cut]).unwrap();
        let db = Db::open(&Options::default(), dir.path())
            .unwrap_or_else(|e| panic!("creation cut at {cut} bytes: {e}"));
        db.put(b"k", b"v").unwrap();
        drop(db);
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            std::fs::remove_file(entry.unwrap().path()).unwrap();
        }
    }
}
