//! A writer that did not ask for a sync never waits on one: memtable switches on
//! the writing thread neither sync the old WAL nor the directory entry of the new one; the
//! background flush and the next synced write do that. A synced write syncs what it needs.

use std::path::PathBuf;
use std::sync::Arc;

use strata::env::{FaultFs, FaultOp, MemFs};
use strata::{Db, Options, WriteOptions};

#[test]
fn memtable_switches_make_no_sync_on_the_writing_thread() {
    let mem = MemFs::new();
    let fs = FaultFs::new(Arc::new(mem.clone()), 1);
    let path = PathBuf::from("/db");
    let opts = Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 64 << 10,
        max_write_buffer_number: 64,
        ..Options::default()
    };
    let db = Db::open(&opts, &path).unwrap();
    fs.start_recording();
    let me = std::thread::current().id();
    for i in 0..3_000u32 {
        db.put(format!("k{i:05}"), [i as u8; 512]).unwrap();
    }
    let mine: Vec<_> = fs.recorded().into_iter().filter(|r| r.thread == me).collect();
    let new_wals = mine
        .iter()
        .filter(|r| r.op == FaultOp::Create && r.path.extension().is_some_and(|x| x == "log"))
        .count();
    assert!(new_wals >= 10, "1.5 MB through 64 KB memtables switches often: {new_wals}");
    let syncs: Vec<_> =
        mine.iter().filter(|r| matches!(r.op, FaultOp::Sync | FaultOp::SyncDir)).collect();
    assert!(syncs.is_empty(), "the writing thread synced: {syncs:?}");

    // A synced write does sync (its WAL at least) and is durable across power loss.
    fs.start_recording();
    db.put_opt(
        "synced",
        "yes",
        &WriteOptions { sync: true, disable_wal: false, ..WriteOptions::default() },
    )
    .unwrap();
    assert!(fs.recorded().iter().any(|r| r.thread == me && r.op == FaultOp::Sync));
    fs.kill();
    drop(db);
    mem.crash(strata::env::CrashMode::PowerLoss);
    let db = Db::open(&Options { fs: Arc::new(mem.clone()), ..opts }, &path).unwrap();
    assert_eq!(db.get("synced").unwrap(), Some(b"yes".to_vec()));
    // Everything before the synced write was synced with it: a prefix.
    for i in 0..3_000u32 {
        assert_eq!(db.get(format!("k{i:05}")).unwrap(), Some(vec![i as u8; 512]), "{i}");
    }
}
