//! `Options::avoid_flush_during_recovery`: the WAL is replayed into memory without
//! writing a table, so a DB whose disk is full can still be opened and read.

use std::path::PathBuf;
use std::sync::Arc;

use strata::env::{FaultFs, FaultKind, FaultOp, FaultRule, MemFs};
use strata::{Db, Options};

fn sst_count(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "sst"))
        .count()
}

#[test]
fn replayed_writes_stay_in_memory_and_survive_more_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        avoid_flush_during_recovery: true,
        write_buffer_size: 32 << 10,
        ..Options::default()
    };
    {
        let db =
            Db::open(&Options { write_buffer_size: 1 << 20, ..opts.clone() }, dir.path()).unwrap();
        for i in 0..2_000u32 {
            db.put(format!("k{i:05}"), [i as u8; 100]).unwrap();
        }
    }
    assert_eq!(sst_count(dir.path()), 0);
    for round in 0..3u32 {
        let db = Db::open(&opts, dir.path()).unwrap();
        for i in 0..2_000u32 {
            assert_eq!(db.get(format!("k{i:05}")).unwrap(), Some(vec![i as u8; 100]), "{i}");
        }
        db.put(format!("round{round}"), b"x").unwrap();
        // The replayed memtable (one: a memtable kept in memory ends only with its WAL)
        // flushes in the background; `flush` waits for it and for the active one.
        db.flush().unwrap();
        assert!(db.get(format!("round{round}")).unwrap().is_some());
    }
    let db = Db::open(&Options::default(), dir.path()).unwrap();
    assert_eq!(db.get(b"k01999").unwrap(), Some(vec![1999u32 as u8; 100]));
    assert!(db.get(b"round2").unwrap().is_some());
}

#[test]
fn a_full_disk_can_still_be_opened_and_read() {
    let mem = MemFs::new();
    let path = PathBuf::from("/db");
    {
        let opts = Options { fs: Arc::new(mem.clone()), ..Options::default() };
        let db = Db::open(&opts, &path).unwrap();
        for i in 0..500u32 {
            db.put(format!("k{i:04}"), [7u8; 64]).unwrap();
        }
    }
    // No table can be created any more.
    let fs = FaultFs::new(Arc::new(mem.clone()), 9);
    fs.add_rule(FaultRule {
        op: FaultOp::Create,
        kind: FaultKind::NoSpace,
        nth: 1,
        persistent: true,
        path_contains: Some(".sst".into()),
    });
    let plain = Options { fs: Arc::new(fs.clone()), ..Options::default() };
    let err = Db::open(&plain, &path).unwrap_err();
    assert!(err.is_no_space(), "{err}");
    let opts = Options { avoid_flush_during_recovery: true, ..plain };
    let db = Db::open(&opts, &path).unwrap();
    for i in 0..500u32 {
        assert_eq!(db.get(format!("k{i:04}")).unwrap(), Some(vec![7u8; 64]));
    }
    let n = db.iterator(strata::IteratorMode::Start).count();
    assert_eq!(n, 500);
}
