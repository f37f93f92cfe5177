//! A write skips the look for stalls while nothing that decides one changed since the last
//! look found none (`db/write/stall.rs`, `still_unstalled`). New live options
//! (`Db::set_options`) and a new super version (a flush) are such changes: the next write
//! after them is stopped when they stop writes.

use std::sync::Arc;

use strata::env::MemFs;
use strata::{Db, Options, WriteOptions};

fn stopped(db: &Db, key: &str) -> bool {
    let wo = WriteOptions { no_slowdown: true, ..WriteOptions::default() };
    match db.put_opt(key, b"v", &wo) {
        Ok(()) => false,
        Err(e) => {
            assert!(e.to_string().contains("writes are stopped"), "{e}");
            true
        }
    }
}

#[test]
fn the_write_after_new_options_or_a_flush_that_stop_writes_is_stopped() {
    let opts = Options {
        fs: Arc::new(MemFs::new()),
        level0_file_num_compaction_trigger: 100,
        level0_slowdown_writes_trigger: 100,
        level0_stop_writes_trigger: 100,
        ..Options::default()
    };
    let db = Db::open(&opts, "/db").unwrap();
    for i in 0..3 {
        db.put(format!("k{i}"), b"v").unwrap();
        db.flush().unwrap();
    }
    assert!(!stopped(&db, "a"), "3 L0 files, stop trigger 100");
    assert!(!stopped(&db, "b"), "nothing changed");
    db.set_options(&[("level0_slowdown_writes_trigger", "2"), ("level0_stop_writes_trigger", "3")])
        .unwrap();
    assert!(stopped(&db, "c"), "new options: 3 L0 files at a stop trigger of 3");
    db.set_options(&[("level0_slowdown_writes_trigger", "5"), ("level0_stop_writes_trigger", "5")])
        .unwrap();
    assert!(!stopped(&db, "d"), "5 L0 files would stop");
    db.flush().unwrap();
    assert!(!stopped(&db, "e"), "4 L0 files");
    db.flush().unwrap();
    assert!(stopped(&db, "f"), "the flush made 5 L0 files");
}
