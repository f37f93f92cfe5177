//! `Db::flush_wal(true)` makes every write before it durable, across a power loss, while its
//! fdatasyncs run outside the WAL lock, also those of retired WALs (memtables waiting to be
//! flushed together); writes after it may be lost, and what survives is a prefix.

use std::path::Path;
use std::sync::Arc;

use strata::env::{CrashMode, FileSystem, MemFs};
use strata::{Db, Options};

fn value(i: u32, pad: usize) -> String {
    format!("v{i}{}", "-".repeat(pad))
}

#[test]
fn writes_before_a_wal_sync_survive_power_loss() {
    prefix_survives(|fs| Options { fs, ..Options::default() }, 0);
}

/// Small memtables that are not flushed (a flush waits for 16 of them): the sync finds
/// retired WALs to sync first.
#[test]
fn writes_in_retired_wals_before_a_wal_sync_survive_power_loss() {
    let opts = |fs: Arc<dyn FileSystem>| Options {
        fs,
        write_buffer_size: 16 << 10,
        min_write_buffer_number_to_merge: 16,
        max_write_buffer_number: 32,
        ..Options::default()
    };
    prefix_survives(opts, 400);
}

fn prefix_survives(options: impl Fn(Arc<dyn FileSystem>) -> Options, pad: usize) {
    for round in 0..8u32 {
        let fs = MemFs::new();
        let opts = options(Arc::new(fs.clone()));
        let dir = Path::new("/db");
        let synced = 50 + round * 37;
        {
            let db = Db::open(&opts, dir).unwrap();
            for i in 0..synced {
                db.put(format!("k{i:05}"), value(i, pad)).unwrap();
            }
            db.flush_wal(true).unwrap();
            for i in synced..synced + 100 {
                db.put(format!("k{i:05}"), value(i, pad)).unwrap();
            }
            fs.crash(CrashMode::PowerLoss);
        }
        let db = Db::open(&opts, dir).unwrap();
        let mut present = 0;
        for i in 0..synced + 100 {
            match db.get(format!("k{i:05}")).unwrap() {
                Some(v) => {
                    assert_eq!(v, value(i, pad).into_bytes());
                    assert_eq!(present, i, "round {round}: a hole before key {i}");
                    present += 1;
                }
                None => assert!(i >= synced, "round {round}: synced write {i} lost"),
            }
        }
    }
}
