//! `Db::compact_files` and `Db::live_files_metadata` (RocksDB's `CompactFiles` and
//! `GetLiveFilesMetaData`; db_bench's `compact0`/`compact1` use them).

use strata::{Db, Error, Options};

fn open(dir: &std::path::Path) -> Db {
    let opts = Options { disable_auto_compactions: true, ..Options::default() };
    Db::open(&opts, dir).unwrap()
}

fn levels(db: &Db) -> Vec<usize> {
    db.live_files_metadata().iter().map(|f| f.level).collect()
}

#[test]
fn compacts_l0_into_l1_then_l1_into_l2() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    for round in 0..3u32 {
        for i in 0..500u32 {
            db.put(format!("k{i:05}"), format!("v{round}-{i}")).unwrap();
        }
        db.flush().unwrap();
    }
    assert_eq!(levels(&db), vec![0, 0, 0]);
    let l0: Vec<String> = db.live_files_metadata().into_iter().map(|f| f.name).collect();
    // The newest L0 file (listed first) widens to it and every older one.
    db.compact_files(&l0[..1], 1).unwrap();
    assert_eq!(levels(&db), vec![1]);
    let meta = db.live_files_metadata();
    assert_eq!(meta[0].num_entries, 500, "overwritten versions were dropped");
    assert_eq!(meta[0].smallest_key, b"k00000");
    assert_eq!(meta[0].largest_key, b"k00499");
    db.compact_files(&[format!("/some/dir/{}", meta[0].name)], 2).unwrap();
    assert_eq!(levels(&db), vec![2]);
    for i in (0..500u32).step_by(37) {
        assert_eq!(db.get(format!("k{i:05}")).unwrap(), Some(format!("v2-{i}").into_bytes()));
    }
    drop(db);
    let db = open(dir.path());
    assert_eq!(levels(&db), vec![2]);
    assert_eq!(db.get(b"k00007").unwrap().as_deref(), Some(&b"v2-7"[..]));
}

/// Regression: naming old L0 files compacted every L0 file, the newer ones too (RocksDB
/// widens L0 inputs only to the older files: db_bench's fillseqdeterministic puts its runs of
/// L0 files into one level each, oldest first).
#[test]
fn named_l0_files_take_the_older_ones_along_and_leave_the_newer() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    for round in 0..4u32 {
        for i in 0..200u32 {
            db.put(format!("k{i:05}"), format!("v{round}-{i}")).unwrap();
        }
        db.flush().unwrap();
    }
    let l0: Vec<String> = db.live_files_metadata().into_iter().map(|f| f.name).collect();
    assert_eq!(l0.len(), 4);
    // The second oldest (listed third): it and the oldest go down, the two newest stay.
    db.compact_files(&l0[2..3], 6).unwrap();
    assert_eq!(levels(&db), vec![0, 0, 6]);
    let left: Vec<String> = db.live_files_metadata().into_iter().map(|f| f.name).collect();
    assert_eq!(left[..2], l0[..2]);
    // The newer two into the level above, then every read sees the newest round.
    db.compact_files(&left[1..2], 5).unwrap();
    assert_eq!(levels(&db), vec![0, 5, 6]);
    for i in (0..200u32).step_by(13) {
        assert_eq!(db.get(format!("k{i:05}")).unwrap(), Some(format!("v3-{i}").into_bytes()));
    }
    // Into L0: the files between the named ones, not those past them.
    for i in 0..200u32 {
        db.put(format!("k{i:05}"), format!("v4-{i}")).unwrap();
    }
    db.flush().unwrap();
    for i in 0..200u32 {
        db.put(format!("k{i:05}"), format!("v5-{i}")).unwrap();
    }
    db.flush().unwrap();
    assert_eq!(levels(&db), vec![0, 0, 0, 5, 6]);
    let l0: Vec<String> = db.live_files_metadata().into_iter().map(|f| f.name).collect();
    db.compact_files(&[&l0[1], &l0[2]], 0).unwrap();
    assert_eq!(levels(&db), vec![0, 0, 5, 6]);
    assert_eq!(db.get(b"k00007").unwrap().as_deref(), Some(&b"v5-7"[..]));
}

#[test]
fn bad_requests_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.put(b"a", b"1").unwrap();
    db.flush().unwrap();
    let name = db.live_files_metadata()[0].name.clone();
    db.compact_files(&[&name], 3).unwrap();
    db.put(b"a", b"2").unwrap();
    db.flush().unwrap();
    let l0 = db.live_files_metadata().into_iter().find(|f| f.level == 0).unwrap().name;
    let invalid = |r: strata::Result<()>| match r {
        Err(Error::InvalidArgument(m)) => m,
        other => panic!("expected InvalidArgument, got {other:?}"),
    };
    assert!(invalid(db.compact_files(&["999999.sst"], 1)).contains("not a live file"));
    assert!(invalid(db.compact_files(&["MANIFEST-000001"], 1)).contains("not a table"));
    assert!(invalid(db.compact_files(&[&l0, &name], 4)).contains("different levels"));
    assert!(invalid(db.compact_files(&[&name], 1)).contains("above"));
    assert!(invalid(db.compact_files(&[&name], 99)).contains("beyond"));
    // L3 holds "a": moving the newer L0 version to L5 would put it below the older one.
    assert!(invalid(db.compact_files(&[&l0], 5)).contains("level 3"));
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"2"[..]));
    db.compact_files(&[&l0], 3).unwrap();
    assert_eq!(levels(&db), vec![3]);
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"2"[..]));
}
