//! Option values that `open` accepts never make writes block forever (`docs/contract.md` rule
//! 9): options are sanitized as RocksDB does (slowdown >= trigger, stop >= slowdown; a zero
//! limit is no limit). The cases that, taken as given, stop every write for good:
//! `level0_stop_writes_trigger = 0`, `hard_pending_compaction_bytes_limit = 0` (RocksDB's "no
//! limit") and a stop trigger below the compaction trigger; and a property test over every
//! stall and trigger option.

use std::sync::mpsc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use strata::{Db, Options};

/// Writes `n` keys from two threads; `Err` with the options if they do not finish in time.
fn writes_finish(opts: Options, n: u32) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let described = format!(
        "trigger {} slowdown {} stop {} soft {} hard {} buffers {}x{} dynamic {}",
        opts.level0_file_num_compaction_trigger,
        opts.level0_slowdown_writes_trigger,
        opts.level0_stop_writes_trigger,
        opts.soft_pending_compaction_bytes_limit,
        opts.hard_pending_compaction_bytes_limit,
        opts.max_write_buffer_number,
        opts.write_buffer_size,
        opts.level_compaction_dynamic_level_bytes,
    );
    let db = Db::open(&opts, dir.path()).map_err(|e| format!("open ({described}): {e}"))?;
    let (tx, rx) = mpsc::channel();
    let db = std::sync::Arc::new(db);
    for t in 0..2u32 {
        let (db, tx) = (db.clone(), tx.clone());
        std::thread::spawn(move || {
            let r = (0..n / 2).try_for_each(|i| {
                let k = (i * 2 + t).wrapping_mul(2_654_435_761) % 50_000;
                db.put(format!("key{k:08}"), [t as u8; 120])
            });
            let _ = tx.send(r.map_err(|e| e.to_string()));
        });
    }
    for _ in 0..2 {
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(format!("write failed ({described}): {e}")),
            // The stuck writers are left behind; the test process ends with the failure.
            Err(_) => return Err(format!("writes blocked for 120 s ({described})")),
        }
    }
    db.wait_for_compact(&strata::WaitForCompactOptions::default())
        .map_err(|e| format!("wait_for_compact ({described}): {e}"))?;
    Ok(())
}

#[test]
fn the_reported_configurations_do_not_block() {
    let base = Options { write_buffer_size: 8 << 10, ..Options::default() };
    let cases = [
        Options { level0_stop_writes_trigger: 0, ..base.clone() },
        Options { hard_pending_compaction_bytes_limit: 0, ..base.clone() },
        Options {
            level0_stop_writes_trigger: 2,
            level0_slowdown_writes_trigger: 4,
            level0_file_num_compaction_trigger: 8,
            ..base.clone()
        },
        Options {
            soft_pending_compaction_bytes_limit: 0,
            hard_pending_compaction_bytes_limit: 0,
            ..base.clone()
        },
    ];
    for o in cases {
        writes_finish(o, 4_000).unwrap();
    }
}

fn limit() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0u64), Just(1), 1u64..(256 << 10), Just(64 << 30)]
}

proptest! {
    // Failing cases are saved beside this file, in `stall_options.proptest-regressions`,
    // and replayed first (by default proptest would keep them in
    // `tests/proptest-regressions/`, since the group's directory has a `main.rs`).
    #![proptest_config(ProptestConfig {
        cases: 24,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    })]

    /// Every accepted combination of the stall and trigger options lets writes finish.
    #[test]
    fn no_accepted_stall_configuration_blocks_writes(
        trigger in 1usize..10,
        slowdown in 0usize..12,
        stop in 0usize..14,
        soft in limit(),
        hard in limit(),
        buffers in 2usize..5,
        buffer_kib in 4usize..32,
        dynamic in any::<bool>(),
        base_kib in 16u64..512,
        rate_kib in prop_oneof![Just(256u64), Just(16 << 10)],
    ) {
        let opts = Options {
            level0_file_num_compaction_trigger: trigger,
            level0_slowdown_writes_trigger: slowdown,
            level0_stop_writes_trigger: stop,
            soft_pending_compaction_bytes_limit: soft,
            hard_pending_compaction_bytes_limit: hard,
            max_write_buffer_number: buffers,
            write_buffer_size: buffer_kib << 10,
            level_compaction_dynamic_level_bytes: dynamic,
            max_bytes_for_level_base: base_kib << 10,
            target_file_size_base: 32 << 10,
            delayed_write_rate: rate_kib << 10,
            ..Options::default()
        };
        prop_assert_eq!(writes_finish(opts, 3_000), Ok(()));
    }
}
