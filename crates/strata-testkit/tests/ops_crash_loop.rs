//! Crashes during checkpoints, backups, ingestions, OPTIONS file writes and a TTL DB's
//! expiring compactions: the source DB is intact (an ingestion all there or absent, a TTL DB
//! showing exactly the live values), a checkpoint or backup is either absent or complete, the
//! options load as before or after their change.
//! Its own test binary: the kill point configuration is process-global. `STRATA_STRESS_SEED`
//! (default 1) changes the run.

use strata_testkit::ops_crash::run;

#[test]
fn checkpoint_and_backup_crash_loop() {
    let seed = std::env::var("STRATA_STRESS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let s = run(seed, 60);
    println!("{s:?}");
    assert!(s.failures.is_empty(), "{:#?}", s.failures);
    assert!(s.interrupted > 10, "the cut must land inside the operation: {s:?}");
    assert!(s.complete_after_crash > 0, "{s:?}");
}

/// `STRATA_REPLAY_CYCLE=N` runs the one cycle a failure named (`cycle seed N`).
#[test]
fn replay_one_cycle() {
    let Some(seed) = std::env::var("STRATA_REPLAY_CYCLE").ok().and_then(|s| s.parse().ok()) else {
        return;
    };
    let s = strata_testkit::ops_crash::replay(seed);
    assert!(s.failures.is_empty(), "{:#?}", s.failures);
}
