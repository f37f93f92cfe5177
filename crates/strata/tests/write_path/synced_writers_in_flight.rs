//! Many writers with synced and unsynced writes, while write groups overlap (a
//! group is logged while earlier ones wait for their sync). Each writer reads its own write
//! back as soon as it returns; after power loss every writer's recovered writes are a prefix
//! of its writes that holds every synced one; a failed sync fails that group and every later
//! one, and loses nothing acknowledged. Each in every write mode: ordered, pipelined, without
//! concurrent memtable inserts, and unordered.

use std::path::PathBuf;
use std::sync::Arc;

use strata::env::{CrashMode, FaultFs, FaultKind, FaultOp, FaultRule, MemFs};
use strata::{Db, Options, WriteOptions};

const THREADS: u32 = 8;
const WRITES: u32 = 400;

fn key(t: u32, i: u32) -> String {
    format!("t{t}-{i:05}")
}

/// Options for write mode `mode % 4` (module doc).
fn options(fs: Arc<dyn strata::env::FileSystem>, mode: u64) -> Options {
    Options {
        fs,
        write_buffer_size: 32 << 10,
        max_write_buffer_number: 4,
        enable_pipelined_write: mode % 4 == 1,
        allow_concurrent_memtable_write: mode % 4 != 2,
        unordered_write: mode % 4 == 3,
        ..Options::default()
    }
}

/// Runs the writers; returns, per writer, how many writes were acknowledged and the index of
/// its last acknowledged synced write.
fn run_writers(db: &Arc<Db>, stop_on_error: bool) -> Vec<(u32, Option<u32>)> {
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let (mut acked, mut last_synced) = (0, None);
                for i in 0..WRITES {
                    let sync = (i + t) % 3 == 0;
                    let opts = WriteOptions { sync, disable_wal: false, ..WriteOptions::default() };
                    match db.put_opt(key(t, i), format!("{t}:{i}"), &opts) {
                        Ok(()) => {
                            acked = i + 1;
                            if sync {
                                last_synced = Some(i);
                            }
                            // Visible as soon as acknowledged.
                            assert_eq!(
                                db.get(key(t, i)).unwrap(),
                                Some(format!("{t}:{i}").into_bytes())
                            );
                        }
                        Err(e) if stop_on_error => {
                            let _ = e;
                            break;
                        }
                        Err(e) => panic!("write {t}/{i}: {e}"),
                    }
                }
                (acked, last_synced)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// Per writer, the recovered writes must be a prefix of what it wrote.
fn recovered_prefixes(db: &Db) -> Vec<u32> {
    (0..THREADS)
        .map(|t| {
            let mut n = 0;
            while n < WRITES && db.get(key(t, n)).unwrap().is_some() {
                n += 1;
            }
            for i in n..WRITES {
                assert_eq!(db.get(key(t, i)).unwrap(), None, "writer {t}: hole before {i}");
            }
            n
        })
        .collect()
}

#[test]
fn overlapping_groups_keep_every_synced_write_and_a_prefix() {
    for seed in 0..8u64 {
        let mem = MemFs::new();
        let fs = FaultFs::new(Arc::new(mem.clone()), seed);
        let dir = PathBuf::from("/db");
        let db = Arc::new(Db::open(&options(Arc::new(fs.clone()), seed), &dir).unwrap());
        let acked = run_writers(&db, false);
        fs.kill();
        drop(db);
        mem.crash(CrashMode::TornPowerLoss { seed });
        let db = Db::open(&options(Arc::new(mem.clone()), seed), &dir).unwrap();
        let got = recovered_prefixes(&db);
        for (t, ((n, synced), g)) in acked.iter().zip(&got).enumerate() {
            assert!(g <= n, "writer {t}: {g} recovered of {n} acknowledged");
            if let Some(s) = synced {
                assert!(*g > *s, "seed {seed} writer {t}: synced write {s} lost ({g} recovered)");
            }
        }
    }
}

#[test]
fn a_failed_sync_fails_later_groups_and_loses_nothing_acknowledged() {
    for mode in 0..4 {
        failed_sync_in_mode(mode);
    }
}

fn failed_sync_in_mode(mode: u64) {
    let mem = MemFs::new();
    let fs = FaultFs::new(Arc::new(mem.clone()), 7);
    let dir = PathBuf::from("/db");
    let db = Arc::new(Db::open(&options(Arc::new(fs.clone()), mode), &dir).unwrap());
    fs.add_rule(FaultRule {
        op: FaultOp::Sync,
        kind: FaultKind::Eio,
        nth: 150,
        persistent: false,
        path_contains: Some(".log".into()),
    });
    let acked = run_writers(&db, true);
    assert!(acked.iter().any(|a| a.0 < WRITES), "the injected failure stops the writers");
    assert!(db.put("after", "x").is_err(), "the DB refuses writes after a failed sync");
    fs.kill();
    drop(db);
    mem.crash(CrashMode::PowerLoss);
    let db = Db::open(&options(Arc::new(mem.clone()), mode), &dir).unwrap();
    let got = recovered_prefixes(&db);
    for (t, ((_, synced), g)) in acked.iter().zip(&got).enumerate() {
        if let Some(s) = synced {
            assert!(*g > *s, "mode {mode} writer {t}: synced write {s} lost ({g} recovered)");
        }
    }
}
