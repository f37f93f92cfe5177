//! A write slowdown's pace follows the compaction debt (`db/write/rate.rs`): with compactions
//! held, every flush that adds an L0 file past the slowdown trigger lowers
//! `rocksdb.actual-delayed-write-rate` (it used to stay at `delayed_write_rate` however far
//! behind compactions fell); once compactions run and L0 drains, writes are not slowed.

use std::sync::Arc;

use crate::compaction_gate::{Gate, Holding, OpenOnDrop};
use strata::env::MemFs;
use strata::{Db, Options};

const MAX_RATE: u64 = 64 << 20;

#[test]
fn the_pace_falls_as_l0_grows_under_held_compactions_and_the_slowdown_ends_after_them() {
    let gate = Arc::new(Gate::default());
    let opts = Options {
        fs: Arc::new(MemFs::new()),
        create_if_missing: true,
        level0_file_num_compaction_trigger: 2,
        level0_slowdown_writes_trigger: 3,
        level0_stop_writes_trigger: 40,
        delayed_write_rate: MAX_RATE,
        compaction_filter_factory: Some(Arc::new(Holding(gate.clone()))),
        ..Options::default()
    };
    let db = Db::open(&opts, "/db").unwrap();
    // Dropped before `db` (declared after it): a failing test opens the gate before the DB's
    // drop waits for the held compaction.
    let _open = OpenOnDrop(gate.clone());
    let int = |name: &str| db.property_int_value(name).unwrap().unwrap();
    let mut seen = Vec::new();
    for f in 0..8u32 {
        for i in 0..200u32 {
            db.put(format!("k{:06}", i * 8 + f), [f as u8; 100]).unwrap();
        }
        db.flush().unwrap();
        if f == 1 {
            // The first two files' compaction has started and holds.
            gate.wait_entered();
        }
        // A write looks at the shape the flush left.
        db.put(b"probe", [f as u8]).unwrap();
        seen.push((int("rocksdb.num-files-at-level0"), int("rocksdb.actual-delayed-write-rate")));
    }
    assert_eq!(seen[..2], [(1, 0), (2, 0)], "below the slowdown trigger: not slowed");
    assert_eq!(seen[2], (3, MAX_RATE), "a slowdown starts at delayed_write_rate: {seen:?}");
    for w in seen[2..].windows(2) {
        assert_eq!(w[1].0, w[0].0 + 1, "{seen:?}");
        assert!(w[1].1 < w[0].1, "each file added under held compactions slows writes: {seen:?}");
    }
    gate.open();
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    db.put(b"probe", b"after").unwrap();
    assert!(int("rocksdb.num-files-at-level0") < 3);
    assert_eq!(int("rocksdb.actual-delayed-write-rate"), 0, "compactions caught up");
    for f in 0..8u32 {
        for i in 0..200u32 {
            assert_eq!(db.get(format!("k{:06}", i * 8 + f)).unwrap(), Some(vec![f as u8; 100]));
        }
    }
}
