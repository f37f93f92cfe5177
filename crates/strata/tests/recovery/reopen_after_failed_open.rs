//! Regression (found by the power-loss loop of `strata-stress`): an `open` that failed after
//! creating its new WAL left a WAL whose number the MANIFEST never recorded. The next open
//! handed that number out again (the file counter came from the MANIFEST only), rewrote the
//! WAL with a header naming itself as its predecessor, and every later open failed with
//! "WAL 000004 is missing". The same happens after a power loss that keeps a freshly created
//! WAL but not the MANIFEST edit that would have recorded its number.

use std::path::PathBuf;
use std::sync::Arc;

use strata::env::{FaultFs, FaultKind, FaultOp, FaultRule, MemFs};
use strata::{Db, Options, WriteOptions};

fn opts(fs: &FaultFs) -> Options {
    Options { fs: Arc::new(fs.clone()), ..Options::default() }
}

#[test]
fn reopen_after_open_failed_past_its_new_wal() {
    let mem = MemFs::new();
    let path = PathBuf::from("/db");
    let fs = FaultFs::new(Arc::new(mem.clone()), 1);
    let db = Db::open(&opts(&fs), &path).unwrap();
    db.put_opt(
        b"k1",
        b"v1",
        &WriteOptions { sync: true, disable_wal: false, ..WriteOptions::default() },
    )
    .unwrap();
    drop(db);

    // This open replays the WAL, creates its new WAL, then fails writing the new MANIFEST.
    fs.add_rule(FaultRule {
        op: FaultOp::Create,
        kind: FaultKind::Eio,
        nth: 1,
        persistent: false,
        path_contains: Some("MANIFEST".into()),
    });
    assert!(Db::open(&opts(&fs), &path).is_err());
    fs.clear();

    for round in 0..3 {
        let db = Db::open(&opts(&fs), &path)
            .unwrap_or_else(|e| panic!("reopen {round} after a failed open: {e}"));
        assert_eq!(db.get(b"k1").unwrap().as_deref(), Some(&b"v1"[..]), "round {round}");
        db.put(format!("r{round}"), b"x").unwrap();
        drop(db);
    }
}
