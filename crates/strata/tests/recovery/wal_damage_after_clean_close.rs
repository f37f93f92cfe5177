//! A bit flip inside the last WAL record of a cleanly closed DB is reported as damage under
//! the default recovery mode, as the MANIFEST reader reports it (`docs/contract.md` rule 8):
//! a clean close appends a marker record, so damage in the last real record has bytes after
//! it. Without the marker, the damaged record would read as a torn tail and the acknowledged
//! write in it would be dropped silently.

use std::path::{Path, PathBuf};

use strata::{Db, Error, Options, WalRecoveryMode};

/// Adds keys and closes cleanly; returns the WAL that holds them.
fn closed_db(dir: &Path) -> PathBuf {
    let db = Db::open(&Options::default(), dir).unwrap();
    db.put(b"a", b"first").unwrap();
    db.put(b"b", vec![b'x'; 300]).unwrap();
    db.put(b"c", b"last acknowledged write").unwrap();
    drop(db);
    let mut wals: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    wals.sort();
    wals.pop().unwrap()
}

fn flip(path: &Path, from_end: usize) {
    let mut data = std::fs::read(path).unwrap();
    let n = data.len();
    data[n - from_end] ^= 0x10;
    std::fs::write(path, data).unwrap();
}

/// The marker: a 7-byte fragment header and a 12-byte empty batch.
const MARKER: usize = 7 + 12;

#[test]
fn damage_in_the_last_record_of_a_cleanly_closed_wal_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let wal = closed_db(dir.path());
    flip(&wal, MARKER + 3);
    match Db::open(&Options::default(), dir.path()) {
        Err(e @ Error::Corruption { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(&wal.display().to_string()), "names the file: {msg}");
        }
        Err(e) => panic!("expected Corruption, got {e}"),
        Ok(db) => panic!("opened, c = {:?}", db.get(b"c").unwrap()),
    }
    // Salvage mode keeps every intact record.
    let opts = Options {
        wal_recovery_mode: WalRecoveryMode::SkipAnyCorruptedRecords,
        ..Options::default()
    };
    let db = Db::open(&opts, dir.path()).unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"first"[..]));
    assert_eq!(db.get(b"c").unwrap(), None);
}

#[test]
fn damage_in_the_marker_itself_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let wal = closed_db(dir.path());
    flip(&wal, 3);
    let db = Db::open(&Options::default(), dir.path()).unwrap();
    assert_eq!(db.get(b"c").unwrap().as_deref(), Some(&b"last acknowledged write"[..]));
}

#[test]
fn a_clean_close_and_reopen_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    closed_db(dir.path());
    for _ in 0..3 {
        let db = Db::open(&Options::default(), dir.path()).unwrap();
        assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"first"[..]));
        assert_eq!(db.get(b"b").unwrap().map(|v| v.len()), Some(300));
    }
}
