//! FIFO compaction: the oldest files go once the size budget is exceeded or their data
//! outlives the TTL; intra-L0 compaction merges small files without losing data.

use std::sync::Arc;

use strata::env::MemFs;
use strata::{CompactionStyle, CompressionType, Db, FifoCompactionOptions, Options};

fn opts(fs: &MemFs, fifo: FifoCompactionOptions) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 32 << 10,
        compression: CompressionType::None,
        compaction_style: CompactionStyle::Fifo,
        compaction_options_fifo: fifo,
        ..Options::default()
    }
}

fn key(i: u32) -> String {
    format!("key{i:08}")
}

#[test]
fn size_budget_drops_the_oldest_files() {
    let fs = MemFs::new();
    let budget = 256 << 10;
    let fifo = FifoCompactionOptions { max_table_files_size: budget, ..Default::default() };
    let db = Db::open(&opts(&fs, fifo), "/db").unwrap();
    let n = 20_000u32; // about 2.4 MB, ten times the budget
    for i in 0..n {
        db.put(key(i), [b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    let size = db.property_int_value("strata.total-sst-files-size").unwrap().unwrap();
    assert!(size <= budget, "{size} bytes of tables over the {budget} budget");
    assert!(size > budget / 2, "{size}: too much was dropped");
    assert_eq!(db.get(key(0)).unwrap(), None, "the oldest data is gone");
    assert!(db.get(key(n - 1)).unwrap().is_some(), "the newest data stays");
    // What survives is a suffix of the writes: no hole.
    let first = (0..n).find(|&i| db.get(key(i)).unwrap().is_some()).unwrap();
    assert!((first..n).all(|i| db.get(key(i)).unwrap().is_some()));
    // Everything stays in L0 (writes never stall on its file count in FIFO style).
    let l1: u64 = (1..7)
        .map(|l| db.property_int_value(format!("strata.num-files-at-level{l}")).unwrap().unwrap())
        .sum();
    assert_eq!(l1, 0);
}

#[test]
fn ttl_drops_expired_files() {
    let fs = MemFs::new();
    // Two seconds: data times are whole seconds, so a file flushed just before a second
    // ends is 1 s old a moment later; with a 1 s TTL the new file below could expire
    // before the check (the flake of an earlier CI run), with 2 s it cannot.
    let fifo = FifoCompactionOptions { ttl_secs: 2, ..Default::default() };
    let db = Db::open(&opts(&fs, fifo), "/db").unwrap();
    for i in 0..100 {
        db.put(key(i), b"old").unwrap();
    }
    db.flush().unwrap();
    assert!(db.get(key(5)).unwrap().is_some(), "fresh data is kept");
    // Data times are whole seconds: after 3.5 s the file is at least 2 s old.
    std::thread::sleep(std::time::Duration::from_millis(3500));
    db.put(key(1000), b"new").unwrap();
    db.flush().unwrap();
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    assert_eq!(db.get(key(5)).unwrap(), None, "expired data is gone");
    assert_eq!(db.get(key(1000)).unwrap().as_deref(), Some(&b"new"[..]));
    // The data time survives a reopen (it is in the MANIFEST): nothing new expires early,
    // and the expired file does not come back.
    drop(db);
    let db =
        Db::open(&opts(&fs, FifoCompactionOptions { ttl_secs: 3600, ..Default::default() }), "/db")
            .unwrap();
    assert_eq!(db.get(key(5)).unwrap(), None);
    assert_eq!(db.get(key(1000)).unwrap().as_deref(), Some(&b"new"[..]));
}

#[test]
fn intra_l0_compaction_merges_small_files_and_keeps_every_key() {
    let fs = MemFs::new();
    let fifo = FifoCompactionOptions {
        max_table_files_size: 1 << 30,
        allow_compaction: true,
        ..Default::default()
    };
    let o = Options { level0_file_num_compaction_trigger: 4, ..opts(&fs, fifo) };
    let db = Db::open(&o, "/db").unwrap();
    for round in 0..12u32 {
        for i in 0..50u32 {
            db.put(key(round * 50 + i), format!("v{round}")).unwrap();
        }
        db.flush().unwrap();
    }
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    let l0 = db.property_int_value("strata.num-files-at-level0").unwrap().unwrap();
    assert!(l0 < 12, "{l0} L0 files: small files were merged");
    for i in 0..600u32 {
        assert_eq!(db.get(key(i)).unwrap().unwrap(), format!("v{}", i / 50).into_bytes());
    }
}

#[test]
fn one_level_holds_every_file_within_the_budget() {
    let fs = MemFs::new();
    let budget = 256 << 10;
    let fifo = FifoCompactionOptions { max_table_files_size: budget, ..Default::default() };
    let o = Options { num_levels: 1, ..opts(&fs, fifo) };
    let db = Db::open(&o, "/db").unwrap();
    for i in 0..20_000u32 {
        db.put(key(i), [b'v'; 100]).unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    let size = db.property_int_value("strata.total-sst-files-size").unwrap().unwrap();
    assert!(size <= budget && size > budget / 2, "{size} bytes of tables, budget {budget}");
    assert!(db.get(key(19_999)).unwrap().is_some());
    assert!(db.live_files_metadata().iter().all(|f| f.level == 0));
}

fn files_at(db: &Db, level: usize) -> u64 {
    db.property_int_value(format!("strata.num-files-at-level{level}")).unwrap().unwrap()
}

/// `compact_range` in FIFO style keeps the data in L0 (moving files down would break the
/// oldest-first order the size budget and TTL rely on): it merges small L0 files into L0 when
/// intra-L0 compaction is allowed, and leaves the files as they are when it is not.
#[test]
fn compact_range_keeps_data_in_l0() {
    for allow_compaction in [true, false] {
        let fs = MemFs::new();
        let fifo = FifoCompactionOptions { allow_compaction, ..Default::default() };
        let o = Options {
            level0_file_num_compaction_trigger: 4,
            disable_auto_compactions: true,
            ..opts(&fs, fifo)
        };
        let db = Db::open(&o, "/db").unwrap();
        for round in 0..6u32 {
            for i in 0..50u32 {
                db.put(key(i * 7 + round), format!("v{round}")).unwrap();
            }
            db.flush().unwrap();
        }
        assert_eq!(files_at(&db, 0), 6);
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        db.compact_range(Some(key(0)), Some(key(100))).unwrap();
        let l0 = files_at(&db, 0);
        if allow_compaction {
            assert!(l0 < 6, "{l0} L0 files: compact_range merged none");
        } else {
            assert_eq!(l0, 6, "without allow_compaction nothing is rewritten");
        }
        assert_eq!((1..7).map(|l| files_at(&db, l)).sum::<u64>(), 0, "data left L0");
        for round in 0..6u32 {
            for i in 0..50u32 {
                let got = db.get(key(i * 7 + round)).unwrap();
                assert_eq!(got, Some(format!("v{round}").into_bytes()), "{allow_compaction}");
            }
        }
    }
}
