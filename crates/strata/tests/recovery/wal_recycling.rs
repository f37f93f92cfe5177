//! WAL files reused with `recycle_log_file_num`: memtable switches take obsolete
//! WAL files instead of creating new ones, and what they held before never reads as writes.
//! After a killed process every write is back; after power loss exactly a prefix of the writes
//! comes back, every synced one included.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::env::{CrashMode, FaultFs, FaultOp, MemFs};
use strata::{Db, Options, WriteOptions};

fn key(i: u32) -> String {
    format!("key{i:06}")
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("{round}:{i}:{}", "v".repeat((i % 97) as usize)).into_bytes()
}

fn options(fs: Arc<dyn strata::env::FileSystem>) -> Options {
    Options {
        fs,
        write_buffer_size: 16 << 10,
        max_write_buffer_number: 3,
        recycle_log_file_num: 2,
        wal_bytes_per_sync: 8 << 10,
        ..Options::default()
    }
}

fn wal_count(mem: &MemFs, dir: &Path) -> usize {
    mem.paths()
        .iter()
        .filter(|p| p.parent() == Some(dir) && p.extension().is_some_and(|e| e == "log"))
        .count()
}

#[test]
fn switches_reuse_wal_files_and_a_killed_process_loses_nothing() {
    let mem = MemFs::new();
    let fs = FaultFs::new(Arc::new(mem.clone()), 3);
    let dir = PathBuf::from("/db");
    let db = Db::open(&options(Arc::new(fs.clone())), &dir).unwrap();
    fs.start_recording();
    for i in 0..4_000 {
        db.put(key(i), value(i, 0)).unwrap();
        if i % 500 == 499 {
            db.flush().unwrap();
        }
    }
    let reused = fs
        .recorded()
        .iter()
        .filter(|r| r.op == FaultOp::Rename && r.path.extension().is_some_and(|e| e == "log"))
        .count();
    assert!(reused >= 5, "memtable switches should reuse WAL files: {reused} reuses");
    assert!(wal_count(&mem, &dir) <= 2 + 3 + 1, "reuse bounds the WAL files");
    // Overwrites, so that a reused file's old records (of the same keys) would be wrong.
    for i in 0..4_000 {
        db.put(key(i), value(i, 1)).unwrap();
    }
    fs.kill();
    drop(db);
    mem.crash(CrashMode::ProcessKill);
    let db = Db::open(&options(Arc::new(mem.clone())), &dir).unwrap();
    for i in 0..4_000 {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, 1)), "{}", key(i));
    }
}

#[test]
fn power_loss_with_reused_wals_keeps_a_prefix_and_every_synced_write() {
    for seed in 0..12u64 {
        let mem = MemFs::new();
        let dir = PathBuf::from("/db");
        let fs = FaultFs::new(Arc::new(mem.clone()), seed);
        let db = Db::open(&options(Arc::new(fs.clone())), &dir).unwrap();
        // Round 0 fills and cycles the WAL files; round 1 overwrites every key, with a synced
        // write every so often.
        for i in 0..3_000 {
            db.put(key(i), value(i, 0)).unwrap();
        }
        db.flush().unwrap();
        let mut last_synced = None;
        let stop = 1_000 + (seed as u32 * 337) % 2_000;
        for i in 0..stop {
            let sync = (i + seed as u32).is_multiple_of(211);
            db.put_opt(
                key(i),
                value(i, 1),
                &WriteOptions { sync, disable_wal: false, ..WriteOptions::default() },
            )
            .unwrap();
            if sync {
                last_synced = Some(i);
            }
        }
        fs.kill();
        drop(db);
        mem.crash(CrashMode::TornPowerLoss { seed });
        let db = Db::open(&options(Arc::new(mem.clone())), &dir).unwrap();
        // Round 1's writes that survived are a prefix: keys 0..n hold round 1, the rest round 0.
        let mut n = 0;
        while n < stop && db.get(key(n)).unwrap() == Some(value(n, 1)) {
            n += 1;
        }
        for i in n..3_000 {
            assert_eq!(
                db.get(key(i)).unwrap(),
                Some(value(i, 0)),
                "seed {seed}: {} of {n}",
                key(i)
            );
        }
        if let Some(s) = last_synced {
            assert!(n > s, "seed {seed}: synced write {s} lost (prefix {n})");
        }
    }
}
