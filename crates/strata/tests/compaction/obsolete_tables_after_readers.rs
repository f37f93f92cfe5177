//! A table that a compaction made obsolete while an iterator still held its version is
//! deleted soon after that iterator goes, with no later flush or compaction to do it: its
//! file (disk space) and its reader (index and filter memory) do not stay until the next job.
//! (Regression: a reader seeking without pause nearly always held the old version when the
//! compaction finished, and the tables stayed until the next flush, seconds later.)

use std::time::{Duration, Instant};

use strata::{Db, IteratorMode, Options};

fn tables(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn tables_a_held_iterator_kept_go_once_it_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        create_if_missing: true,
        level0_file_num_compaction_trigger: 2,
        ..Options::default()
    };
    let db = Db::open(&opts, dir.path()).unwrap();
    db.put("a", "1").unwrap();
    db.put("z", "1").unwrap();
    db.flush().unwrap();
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    let first = tables(dir.path());
    // An iterator pins the current version, with the first table(s).
    let it = db.iterator(IteratorMode::Start);
    // Two L0 files over the first table's key range: their compaction rewrites it.
    db.put("a", "2").unwrap();
    db.put("z", "2").unwrap();
    db.flush().unwrap();
    db.put("c", "3").unwrap();
    db.put("y", "3").unwrap();
    db.flush().unwrap();
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    // Compacted away, but the iterator still reads them.
    for t in &first {
        assert!(tables(dir.path()).contains(t), "{t} went while an iterator held it");
    }
    let keys: Vec<Vec<u8>> = it.map(|r| r.unwrap().0.to_vec()).collect();
    assert_eq!(keys, vec![b"a".to_vec(), b"z".to_vec()]);
    // The iterator is gone: nothing else happens in the DB, yet the tables go.
    let deadline = Instant::now() + Duration::from_secs(10);
    while first.iter().any(|t| tables(dir.path()).contains(t)) {
        assert!(
            Instant::now() < deadline,
            "obsolete tables {first:?} still on disk 10 s after their last reader went: {:?}\n{}",
            tables(dir.path()),
            std::fs::read_to_string(dir.path().join("LOG")).unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.get("c").unwrap().as_deref(), Some(&b"3"[..]));
}
