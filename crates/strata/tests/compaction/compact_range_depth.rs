//! Where `compact_range` leaves the data (RocksDB's rule): with
//! `level_compaction_dynamic_level_bytes`, the last level; without, L0 goes to L1 and deeper
//! data stays at the deepest level that held data, automatic compaction moving a level on
//! once it outgrows its target.

use strata::{Db, Options, WaitForCompactOptions};

fn opts(dynamic: bool) -> Options {
    let mut o = Options { create_if_missing: true, ..Options::default() };
    o.set_level_compaction_dynamic_level_bytes(dynamic);
    o
}

fn levels(db: &Db) -> Vec<usize> {
    let mut l: Vec<usize> = db.live_files_metadata().iter().map(|f| f.level).collect();
    l.sort_unstable();
    l
}

fn fill(db: &Db, round: u32, n: u32) {
    for i in 0..n {
        db.put(format!("k{i:05}"), format!("v{round}-{i}")).unwrap();
    }
}

#[test]
fn without_dynamic_levels_l0_goes_to_l1_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&opts(false), dir.path()).unwrap();
    fill(&db, 0, 300);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(levels(&db), vec![1]);
    // Again: L1 is the deepest level with data, so it is rewritten where it is.
    fill(&db, 1, 300);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(levels(&db), vec![1]);
    assert_eq!(db.get("k00007").unwrap().as_deref(), Some(&b"v1-7"[..]));
}

#[test]
fn without_dynamic_levels_data_stops_at_the_deepest_level_holding_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(false);
    o.disable_auto_compactions = true;
    let db = Db::open(&o, dir.path()).unwrap();
    fill(&db, 0, 300);
    db.flush().unwrap();
    let l0: Vec<String> = db.live_files_metadata().into_iter().map(|f| f.name).collect();
    db.compact_files(&l0, 3).unwrap();
    fill(&db, 1, 300);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(levels(&db), vec![3], "through L1 and L2 into L3, not beyond");
    assert_eq!(db.get("k00299").unwrap().as_deref(), Some(&b"v1-299"[..]));
}

#[test]
fn with_dynamic_levels_data_goes_to_the_last_level() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&opts(true), dir.path()).unwrap();
    fill(&db, 0, 300);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(levels(&db), vec![6]);
}

#[test]
fn without_dynamic_levels_an_oversized_l1_moves_on_by_itself() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(false);
    o.set_max_bytes_for_level_base(16 << 10);
    o.set_target_file_size_base(64 << 20);
    let db = Db::open(&o, dir.path()).unwrap();
    for i in 0..10_000u32 {
        db.put(format!("{i:04}"), b"v").unwrap();
    }
    db.compact_range(Some(b"0000"), None::<&[u8]>).unwrap();
    db.wait_for_compact(&WaitForCompactOptions::default()).unwrap();
    let meta = db.live_files_metadata();
    assert_eq!(meta.len(), 1);
    assert!(meta[0].size > 16 << 10, "{} bytes", meta[0].size);
    assert_eq!(meta[0].level, 2, "L1 over its target: moved to L2");
    assert_eq!(meta[0].num_entries, 10_000);
}
