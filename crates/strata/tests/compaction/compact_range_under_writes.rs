//! `compact_range(None, None)` returns while other threads keep writing: it visits each level
//! once (RocksDB's semantics: it compacts what existed when it was called). Compacting L0
//! again whenever a flush adds a file, it would not return while the writes go on.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use strata::{Db, Options};

#[test]
fn compact_range_returns_while_writers_keep_writing() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 4547,
        level_compaction_dynamic_level_bytes: false,
        ..Options::default()
    };
    let db = Db::open(&opts, dir.path()).unwrap();
    let stop = AtomicBool::new(false);
    let written = AtomicU64::new(0);
    // A safety net, far beyond what the call needs, counted from the call: if writers reach
    // it, they stopped on their own and the call only returned because the writes ended. Not
    // from the writers' start: the writes before the call make thousands of flushes, each
    // with its syncs, and on a disk with slow syncs they alone can take a minute.
    let safety = Duration::from_secs(60);
    let called: OnceLock<Instant> = OnceLock::new();
    let writers_timed_out = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4u64)
            .map(|t| {
                let (db, stop, written, called) = (&db, &stop, &written, &called);
                s.spawn(move || {
                    let mut i = 0u64;
                    while !stop.load(Ordering::SeqCst) {
                        if called.get().is_some_and(|t| t.elapsed() > safety) {
                            return true;
                        }
                        let k = (i * 7919 + t * 104_729) % 1_000_000;
                        db.put(format!("key{k:08}"), [t as u8; 1000]).unwrap();
                        written.fetch_add(1, Ordering::Relaxed);
                        i += 1;
                    }
                    false
                })
            })
            .collect();
        // Until 6,000 writes (some 1,500 flushes: the call finds tables in L0 and below
        // it), or until no writer is left (a failed put ends its thread).
        while written.load(Ordering::Relaxed) < 6_000 && !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(5));
        }
        called.set(Instant::now()).unwrap();
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        stop.store(true, Ordering::SeqCst);
        handles.into_iter().any(|h| h.join().unwrap())
    });
    assert!(!writers_timed_out, "compact_range returned only after the writers stopped");
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
}
