//! `Db::repair` (`docs/repair.md`): after CURRENT and every MANIFEST are deleted, repair rebuilds a
//! MANIFEST from the tables and WALs and the DB reads exactly as before, newest versions
//! winning even when tables came from different levels; a damaged table is moved to `lost/`
//! and reported, the rest kept.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata::env::{FileSystem, MemFs};
use strata::{Db, IteratorMode, Options};

fn opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        create_if_missing: true,
        disable_auto_compactions: true,
        ..Options::default()
    }
}

fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.iterator(IteratorMode::Start)
        .map(|r| r.unwrap())
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect()
}

fn names(fs: &MemFs, dir: &Path, suffix: &str) -> Vec<String> {
    let mut n: Vec<String> =
        fs.list(dir).unwrap().into_iter().filter(|n| n.ends_with(suffix)).collect();
    n.sort();
    n
}

/// Tables on L1 (compacted) and L0 holding newer versions of the same keys, deletions, and
/// writes only in the WAL.
fn build(fs: &MemFs, dir: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = Db::open(&opts(fs), dir).unwrap();
    for i in 0..300 {
        db.put(format!("k{i:04}"), format!("old{i}")).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    for i in (0..300).step_by(3) {
        db.put(format!("k{i:04}"), format!("new{i}")).unwrap();
    }
    for i in (1..300).step_by(7) {
        db.delete(format!("k{i:04}")).unwrap();
    }
    db.flush().unwrap();
    db.put(b"k0000", b"wal-only").unwrap();
    db.put(b"zzz", b"wal-only").unwrap();
    let expected = contents(&db);
    drop(db);
    expected
}

fn remove_manifests(fs: &MemFs, dir: &Path) {
    fs.remove(&dir.join("CURRENT")).unwrap();
    for m in names(fs, dir, "").into_iter().filter(|n| n.starts_with("MANIFEST-")) {
        fs.remove(&dir.join(m)).unwrap();
    }
}

#[test]
fn repair_after_manifest_and_current_loss_recovers_everything() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let expected = build(&fs, dir);
    let tables_before = names(&fs, dir, ".sst");
    assert!(tables_before.len() >= 2);
    remove_manifests(&fs, dir);
    assert!(Db::open(&opts(&fs), dir).is_err(), "the DB does not open without them");

    let report = Db::repair(&opts(&fs), dir).unwrap();
    for t in &tables_before {
        assert!(report.tables_kept.contains(t), "{t} kept: {report}");
    }
    assert!(report.tables_dropped.is_empty(), "{report}");
    assert!(report.wals.iter().map(|(_, n)| n).sum::<u64>() >= 2, "{report}");
    assert!(!report.compacted, "flushes and compactions leave disjoint sequence ranges");
    let db = Db::open(&opts(&fs), dir).unwrap();
    assert_eq!(contents(&db), expected);
    assert_eq!(db.get(b"k0003").unwrap().as_deref(), Some(&b"new3"[..]), "newest wins");
    assert_eq!(db.get(b"k0001").unwrap(), None, "deletions kept");
    // New writes continue above every recovered sequence number.
    db.put(b"k0000", b"after").unwrap();
    drop(db);
    let db = Db::open(&opts(&fs), dir).unwrap();
    assert_eq!(db.get(b"k0000").unwrap().as_deref(), Some(&b"after"[..]));
}

#[test]
fn a_damaged_table_is_dropped_and_reported() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let db = Db::open(&opts(&fs), dir).unwrap();
    for round in 0..3 {
        for i in 0..50 {
            db.put(format!("r{round}-{i:03}"), format!("v{i}")).unwrap();
        }
        db.flush().unwrap();
    }
    drop(db);
    let tables = names(&fs, dir, ".sst");
    assert_eq!(tables.len(), 3);
    let victim = dir.join(&tables[1]);
    let mut bytes = fs.read_file(&victim).unwrap();
    bytes[20] ^= 0x40;
    fs.write_file(&victim, &bytes);
    remove_manifests(&fs, dir);

    let report = Db::repair(&opts(&fs), dir).unwrap();
    assert_eq!(report.tables_dropped.len(), 1, "{report}");
    assert_eq!(report.tables_dropped[0].0, tables[1]);
    assert!(fs.exists(&dir.join("lost").join(&tables[1])), "moved aside, not deleted");
    assert!(report.to_string().contains(&format!("dropped {}", tables[1])), "{report}");
    let db = Db::open(&opts(&fs), dir).unwrap();
    assert_eq!(db.get(b"r0-000").unwrap().as_deref(), Some(&b"v0"[..]));
    assert_eq!(db.get(b"r2-049").unwrap().as_deref(), Some(&b"v49"[..]));
    assert_eq!(db.get(b"r1-000").unwrap(), None, "the damaged table's keys are gone");
    assert!(!report.compacted, "disjoint flushes need no compaction");
}

#[test]
fn repair_refuses_an_open_db() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    assert!(matches!(Db::repair(&opts(&fs), "/db"), Err(strata::Error::Locked(_))));
    drop(db);
}

#[test]
fn tables_from_different_levels_with_interleaved_sequences_are_compacted() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let db = Db::open(&opts(&fs), dir).unwrap();
    let l0_tables = |db: &Db| -> Vec<String> {
        db.live_files_metadata().into_iter().filter(|m| m.level == 0).map(|m| m.name).collect()
    };
    // L2: a, c (old), z.
    for k in ["a", "c", "z"] {
        db.put(k, "old").unwrap();
    }
    db.flush().unwrap();
    db.compact_files(&l0_tables(&db), 2).unwrap();
    // L1: c (new).
    db.put("c", "new").unwrap();
    db.flush().unwrap();
    db.compact_files(&l0_tables(&db), 1).unwrap();
    // b, written after the new c, goes down into L2 around the old c; a snapshot keeps its
    // sequence number from being zeroed, so L2's table ends above L1's in sequence.
    let snapshot = db.snapshot();
    db.put("b", "x").unwrap();
    db.flush().unwrap();
    db.compact_files(&l0_tables(&db), 1).unwrap();
    let b_file: Vec<String> = db
        .live_files_metadata()
        .into_iter()
        .filter(|m| m.level == 1 && m.smallest_key == b"b")
        .map(|m| m.name)
        .collect();
    db.compact_files(&b_file, 2).unwrap();
    drop(snapshot);
    let levels: Vec<(usize, Vec<u8>, Vec<u8>, u64)> = db
        .live_files_metadata()
        .into_iter()
        .map(|m| (m.level, m.smallest_key, m.largest_key, m.largest_seqno))
        .collect();
    assert_eq!(db.get("c").unwrap().as_deref(), Some(&b"new"[..]), "{levels:?}");
    let expected = contents(&db);
    drop(db);
    remove_manifests(&fs, dir);

    let report = Db::repair(&opts(&fs), dir).unwrap();
    assert!(report.compacted, "L2 [a..z] is newer than L1 [c]: {levels:?} {report}");
    let db = Db::open(&opts(&fs), dir).unwrap();
    assert_eq!(db.get("c").unwrap().as_deref(), Some(&b"new"[..]), "newest wins after repair");
    assert_eq!(contents(&db), expected);
}

/// An ingested table read at its global sequence number shadows older data; after CURRENT is
/// lost (the MANIFEST left), repair finds that number in the old MANIFEST, so the ingested
/// values still win.
#[test]
fn an_ingested_table_keeps_its_global_sequence_number() {
    let fs = MemFs::new();
    let dir = Path::new("/db");
    let db = Db::open(&opts(&fs), dir).unwrap();
    for i in 0..50 {
        db.put(format!("k{i:04}"), "old").unwrap();
    }
    db.flush().unwrap();
    let ext = Path::new("/ext.sst");
    let mut w = strata::SstFileWriter::create(&opts(&fs));
    w.open(ext).unwrap();
    for i in 0..50 {
        w.put(format!("k{i:04}"), "ingested").unwrap();
    }
    w.finish().unwrap();
    db.ingest_external_file([ext]).unwrap();
    let expected = contents(&db);
    assert_eq!(db.get(b"k0007").unwrap().as_deref(), Some(&b"ingested"[..]));
    drop(db);
    fs.remove(&dir.join("CURRENT")).unwrap();
    Db::repair(&opts(&fs), dir).unwrap();
    let db = Db::open(&opts(&fs), dir).unwrap();
    assert_eq!(contents(&db), expected);
}
