//! `Db::flush_wal(true)` makes every write before it durable, across a power loss, while its
//! fdatasync runs outside the WAL lock; writes after it may be lost, and what survives is a
//! prefix.

use std::path::Path;
use std::sync::Arc;

use strata::env::{CrashMode, MemFs};
use strata::{Db, Options};

#[test]
fn writes_before_a_wal_sync_survive_power_loss() {
    for round in 0..8u32 {
        let fs = MemFs::new();
        let opts = Options { fs: Arc::new(fs.clone()), ..Options::default() };
        let dir = Path::new("/db");
        let synced = 50 + round * 37;
        {
            let db = Db::open(&opts, dir).unwrap();
            for i in 0..synced {
                db.put(format!("k{i:05}"), format!("v{i}")).unwrap();
            }
            db.flush_wal(true).unwrap();
            for i in synced..synced + 100 {
                db.put(format!("k{i:05}"), format!("v{i}")).unwrap();
            }
            fs.crash(CrashMode::PowerLoss);
        }
        let db = Db::open(&opts, dir).unwrap();
        let mut present = 0;
        for i in 0..synced + 100 {
            match db.get(format!("k{i:05}")).unwrap() {
                Some(v) => {
                    assert_eq!(v, format!("v{i}").into_bytes());
                    assert_eq!(present, i, "round {round}: a hole before key {i}");
                    present += 1;
                }
                None => assert!(i >= synced, "round {round}: synced write {i} lost"),
            }
        }
    }
}
