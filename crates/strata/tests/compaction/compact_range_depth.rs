//! Where `compact_range` leaves the data (RocksDB's rule): with
//! `level_compaction_dynamic_level_bytes`, the last level; without, L0 goes to L1 and deeper
//! data stays at the deepest level that held data, automatic compaction moving a level on
//! once it outgrows its target.

use strata::{statistics::Ticker, Db, Options, WaitForCompactOptions};

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

/// Data in L0, L5 and L6, every level overlapping the others: the call takes all three into
/// L6 in one compaction, so each key is written once (level by level, L0 and L5 would be
/// rewritten into L5 and then everything again into L6). Later versions win, and a key
/// deleted above is gone.
#[test]
fn with_dynamic_levels_overlapping_levels_are_rewritten_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(true);
    o.disable_auto_compactions = true;
    o.enable_statistics();
    let db = Db::open(&o, dir.path()).unwrap();
    let names = |db: &Db| -> Vec<String> {
        db.live_files_metadata().into_iter().filter(|f| f.level == 0).map(|f| f.name).collect()
    };
    fill(&db, 0, 300);
    db.flush().unwrap();
    db.compact_files(&names(&db), 6).unwrap();
    fill(&db, 1, 200);
    db.flush().unwrap();
    db.compact_files(&names(&db), 5).unwrap();
    fill(&db, 2, 100);
    db.delete("k00150").unwrap();
    db.flush().unwrap();
    assert_eq!(levels(&db), vec![0, 5, 6]);
    let written = || o.get_ticker_count(Ticker::CompactWriteBytes);
    let before = written();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let meta = db.live_files_metadata();
    assert_eq!(levels(&db), vec![6]);
    let live: u64 = meta.iter().map(|f| f.size).sum();
    assert_eq!(written() - before, live, "one rewrite, into L6");
    assert_eq!(meta.iter().map(|f| f.num_entries).sum::<u64>(), 299);
    assert_eq!(db.get("k00007").unwrap().as_deref(), Some(&b"v2-7"[..]));
    assert_eq!(db.get("k00120").unwrap().as_deref(), Some(&b"v1-120"[..]));
    assert_eq!(db.get("k00250").unwrap().as_deref(), Some(&b"v0-250"[..]));
    assert_eq!(db.get("k00150").unwrap(), None);
}
