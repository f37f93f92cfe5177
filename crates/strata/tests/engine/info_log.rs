//! The info LOG (`<db>/LOG`, `docs/design.md`): the build, the options in effect, the recovery,
//! every flush and compaction, write stops with their cause and duration, periodic stats dumps, and
//! rotation of the previous LOG.

use std::path::Path;

use strata::{Db, Options};

fn read_log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("LOG")).unwrap()
}

#[test]
fn the_log_tells_what_the_db_did() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 8 << 10,
        // Writes stop whenever L0 holds a file, until compaction moves it: stops are certain.
        level0_file_num_compaction_trigger: 1,
        level0_slowdown_writes_trigger: 1,
        level0_stop_writes_trigger: 1,
        stats_dump_period_sec: 1,
        ..Options::default()
    };
    {
        let db = Db::open(&opts, dir.path()).unwrap();
        for i in 0..3_000u32 {
            db.put(format!("key{:06}", i * 7 % 3_000), [7u8; 100]).unwrap();
        }
        db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
        // A manual compaction is logged as the automatic ones are.
        db.put("key000001", [8u8; 100]).unwrap();
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1_300));
    }
    let log = read_log(dir.path());
    for needle in [
        "Strata version: ",
        "Git sha ",
        "Options.write_buffer_size: 8192",
        "Options.level0_stop_writes_trigger: 1",
        "Recovered from MANIFEST-",
        "[default] Flush: memtable of ",
        "\"event\": \"flush_finished\"",
        "[default] Compaction L0 -> L",
        "\"event\": \"compaction_finished\"",
        "[default] Stopping writes: ",
        "[default] Writes resume after a stop of ",
        "------- DUMPING STATS -------",
        "** Compaction Stats",
        "Shutdown: closing the DB",
        "Shutdown complete",
    ] {
        assert!(log.contains(needle), "LOG lacks {needle:?}:\n{log}");
    }
    // Every compaction that rewrote data, automatic or manual, has its start line before its
    // finish line (none was cut short: the DB closed idle).
    let rewrites = |l: &&str| !l.contains("(trivial move)") && !l.contains("(deletion)");
    let finished: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("] Compaction L") && l.contains("): inputs "))
        .filter(rewrites)
        .collect();
    let started: Vec<&str> = log.lines().filter(|l| l.contains(") started: ")).collect();
    assert!(!finished.is_empty(), "no compaction rewrote data:\n{log}");
    assert_eq!(started.len(), finished.len(), "start and finish lines:\n{log}");
    assert!(started[0].contains("[default] Compaction L0 -> L") && started[0].contains("@L0"));
    let first_finish = log.find(finished[0]).unwrap();
    assert!(log.find(started[0]).unwrap() < first_finish, "a finish before its start:\n{log}");
    assert!(!log.contains(" abandoned: "), "{log}");
    // Every line starts with a timestamp like 2026/11/22-11:45:00.123456.
    for line in log.lines() {
        let b = line.as_bytes();
        assert!(b.len() > 27 && b[4] == b'/' && b[10] == b'-' && b[19] == b'.', "{line}");
    }
    // "Git sha" is the fifth field, where RocksDB's benchmark.sh reads it.
    let git = log.lines().find(|l| l.contains(" Git sha ")).unwrap();
    assert_eq!(git.split_whitespace().nth(2), Some("Git"));

    // Reopening rotates the LOG and starts a new one that reports the recovery.
    drop(Db::open(&opts, dir.path()).unwrap());
    let old: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok())
        .filter(|n| n.starts_with("LOG.old."))
        .collect();
    assert_eq!(old.len(), 1, "{old:?}");
    let log = read_log(dir.path());
    assert!(log.contains("Recovered from MANIFEST-") && !log.contains("DUMPING STATS"));
}

#[test]
fn the_log_tells_each_slowdown_with_its_cause_and_duration() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 8 << 10,
        // Writes slow down whenever L0 holds a file, and never stop.
        level0_file_num_compaction_trigger: 1,
        level0_slowdown_writes_trigger: 1,
        level0_stop_writes_trigger: 1000,
        ..Options::default()
    };
    {
        let db = Db::open(&opts, dir.path()).unwrap();
        for i in 0..1_000u32 {
            db.put(format!("key{:06}", i * 7 % 1_000), [7u8; 100]).unwrap();
        }
        db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
        // L0 is empty now: this write sees the slowdown end.
        db.put("last", "x").unwrap();
    }
    let log = read_log(dir.path());
    let slowed = log.lines().find(|l| l.contains("[default] Slowing writes to ")).unwrap();
    assert!(slowed.contains("L0 files (slowdown trigger 1)"), "{slowed}");
    let ended = log.lines().find(|l| l.contains("[default] Writes no longer slowed down")).unwrap();
    assert!(ended.contains(", after ") && ended.ends_with(" ms"), "{ended}");
}
