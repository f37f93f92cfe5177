//! Regression (found while reviewing the kill -9 crash loop's first cycle, which creates the
//! DB): a crash while a new DB is being created, after `MANIFEST-000001` is written but before
//! CURRENT points at it, left a directory that no later `open` accepted ("CURRENT is missing
//! but the directory holds DB files"), although nothing had been written to it yet.

use std::path::PathBuf;
use std::sync::Arc;

use strata::env::{CrashMode, FaultFs, FaultKind, FaultOp, FaultRule, MemFs};
use strata::{Db, Options};

#[test]
fn open_after_creation_interrupted_before_current() {
    for crash in [CrashMode::ProcessKill, CrashMode::PowerLoss] {
        let mem = MemFs::new();
        let path = PathBuf::from("/db");
        let fs = FaultFs::new(Arc::new(mem.clone()), 1);
        // The creating process dies at the rename that would have installed CURRENT.
        fs.add_rule(FaultRule {
            op: FaultOp::Rename,
            kind: FaultKind::Eio,
            nth: 1,
            persistent: true,
            path_contains: None,
        });
        assert!(
            Db::open(&Options { fs: Arc::new(fs.clone()), ..Options::default() }, &path).is_err()
        );
        fs.kill();
        mem.crash(crash);

        let fs2 = FaultFs::new(Arc::new(mem.clone()), 2);
        let db = Db::open(&Options { fs: Arc::new(fs2), ..Options::default() }, &path)
            .unwrap_or_else(|e| panic!("{crash:?} during creation left an unopenable DB: {e}"));
        db.put(b"k", b"v").unwrap();
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    }
}
