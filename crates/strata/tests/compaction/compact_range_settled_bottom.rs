//! `compact_range` rewrites the bottom level in place only where a rewrite could drop
//! something: tables whose entries all carry sequence number 0 (a compaction wrote them at
//! the bottom as values every snapshot sees) stay as they are, and the tables around them
//! are rewritten in runs that never span one left out. Regression: a `compact_range` right
//! after an automatic compaction had written the whole bottom level rewrote all of it again
//! (db_bench's `compact` step after `overwrite` took two full compactions instead of one).

use std::collections::BTreeMap;

use strata::{CompressionType, Db, LiveFileMetaData, Options};

fn opts() -> Options {
    let mut o = Options {
        create_if_missing: true,
        compression: CompressionType::None,
        ..Options::default()
    };
    o.set_level_compaction_dynamic_level_bytes(true);
    // Small tables: the bottom level holds many, so a run can sit between settled ones.
    o.set_target_file_size_base(16 << 10);
    o
}

fn fill(db: &Db, round: u32, keys: std::ops::Range<u32>) {
    for i in keys {
        db.put(format!("k{i:05}"), format!("v{round}-{i}-{}", "x".repeat(60))).unwrap();
    }
}

fn compact(db: &Db) {
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
}

/// The bottom level's tables by number, checked to be in key order without overlaps.
fn bottom(db: &Db) -> BTreeMap<u64, LiveFileMetaData> {
    let mut files: Vec<LiveFileMetaData> = db.live_files_metadata();
    assert!(files.iter().all(|f| f.level == 6), "all data at the bottom");
    files.sort_by(|a, b| a.smallest_key.cmp(&b.smallest_key));
    for w in files.windows(2) {
        assert!(w[0].largest_key < w[1].smallest_key, "{} overlaps {}", w[0].name, w[1].name);
    }
    files.into_iter().map(|f| (f.number, f)).collect()
}

fn check(db: &Db, expect: &BTreeMap<u32, u32>) {
    for (i, round) in expect {
        let want = format!("v{round}-{i}-{}", "x".repeat(60));
        assert_eq!(db.get(format!("k{i:05}")).unwrap().as_deref(), Some(want.as_bytes()), "k{i}");
    }
}

#[test]
fn a_bottom_a_compaction_wrote_settled_is_not_rewritten_again() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&opts(), dir.path()).unwrap();
    fill(&db, 0, 0..2000);
    compact(&db);
    let first = bottom(&db);
    assert!(first.len() > 3, "{} tables", first.len());
    assert!(first.values().all(|f| f.largest_seqno == 0), "written settled");
    compact(&db);
    assert_eq!(bottom(&db).keys().collect::<Vec<_>>(), first.keys().collect::<Vec<_>>());
}

#[test]
fn only_the_tables_holding_what_a_rewrite_drops_are_rewritten_in_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&opts(), dir.path()).unwrap();
    let mut expect: BTreeMap<u32, u32> = (0..2000).map(|i| (i, 0)).collect();
    fill(&db, 0, 0..2000);
    compact(&db);
    // A snapshot keeps the old versions of the keys overwritten in the middle: the tables
    // that hold them keep their sequence numbers, and one key's deletion keeps a tombstone.
    let snap = db.snapshot();
    fill(&db, 1, 800..1200);
    expect.extend((800..1200).map(|i| (i, 1)));
    db.delete("k01000").unwrap();
    expect.remove(&1000);
    compact(&db);
    let held = bottom(&db);
    let unsettled: Vec<u64> =
        held.values().filter(|f| f.largest_seqno > 0).map(|f| f.number).collect();
    let settled: Vec<u64> =
        held.values().filter(|f| f.largest_seqno == 0).map(|f| f.number).collect();
    assert!(!unsettled.is_empty(), "{held:?}");
    // Settled tables on both sides of the run: its rewrite must not reach them.
    let run_lo = held.values().filter(|f| f.largest_seqno > 0).map(|f| &f.smallest_key).min();
    let run_hi = held.values().filter(|f| f.largest_seqno > 0).map(|f| &f.largest_key).max();
    let settled_sides = (
        held.values().any(|f| f.largest_seqno == 0 && Some(&f.largest_key) < run_lo),
        held.values().any(|f| f.largest_seqno == 0 && Some(&f.smallest_key) > run_hi),
    );
    assert_eq!(settled_sides, (true, true), "{held:?}");
    let entries_before: u64 = held.values().map(|f| f.num_entries).sum();
    drop(snap);

    compact(&db);
    let after = bottom(&db);
    for n in &settled {
        assert!(after.contains_key(n), "settled table {n} left as it was");
    }
    for n in &unsettled {
        assert!(!after.contains_key(n), "table {n} rewritten");
    }
    assert!(after.values().all(|f| f.largest_seqno == 0 && f.num_deletions == 0));
    let entries_after: u64 = after.values().map(|f| f.num_entries).sum();
    assert_eq!(entries_after, 1999, "the old versions and the tombstone dropped");
    assert!(entries_before > entries_after);
    check(&db, &expect);
    assert_eq!(db.get("k01000").unwrap(), None);
}

#[test]
fn a_settled_bottom_is_rewritten_when_a_compaction_filter_could_change_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    let armed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let a = armed.clone();
    o.set_compaction_filter("drop-k00007", move |_level, key, _value| {
        if a.load(std::sync::atomic::Ordering::Relaxed) && key == b"k00007" {
            strata::CompactionDecision::Remove
        } else {
            strata::CompactionDecision::Keep
        }
    });
    let db = Db::open(&o, dir.path()).unwrap();
    fill(&db, 0, 0..2000);
    compact(&db);
    armed.store(true, std::sync::atomic::Ordering::Relaxed);
    compact(&db);
    assert_eq!(db.get("k00007").unwrap(), None, "the filter ran over the settled bottom");
}
