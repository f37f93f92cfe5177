//! Closing the DB does not wait for a running compaction to finish: the job sees
//! the close between output files (or every 1,024 entries), removes what it wrote and leaves
//! its inputs live. Whatever the timing, the close loses nothing and leaves no stray table.

use strata::{Db, Options};

fn tables_on_disk(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "sst"))
        .count()
}

#[test]
fn close_during_a_compaction_keeps_every_key_and_no_stray_table() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 1 << 20,
        level0_file_num_compaction_trigger: 6,
        compression: strata::CompressionType::None,
        target_file_size_base: 256 << 10,
        ..Options::default()
    };
    let n = 40_000u32;
    for round in 0..3 {
        {
            let db = Db::open(&opts, dir.path()).unwrap();
            for i in 0..n {
                db.put(format!("key{:08}", (i * 7 + round) % n), [round as u8; 150]).unwrap();
            }
            // The sixth flush starts a compaction of about 6 MB; close right away.
            db.flush().unwrap();
        }
        // Opened without automatic compactions: one starting at once would have outputs on
        // disk before they are live, and inputs not yet deleted after.
        let verify = Options { disable_auto_compactions: true, ..opts.clone() };
        let db = Db::open(&verify, dir.path()).unwrap();
        let live: u64 = (0..7)
            .map(|l| db.property_int_value(format!("rocksdb.num-files-at-level{l}")).unwrap())
            .map(Option::unwrap_or_default)
            .sum();
        // Counted after the reopen's own flush of the WAL (the open deletes nothing it did
        // not prove obsolete, and strays would still be here).
        assert_eq!(tables_on_disk(dir.path()) as u64, live, "round {round}: stray tables");
        for i in (0..n).step_by(97) {
            assert_eq!(
                db.get(format!("key{i:08}")).unwrap(),
                Some(vec![round as u8; 150]),
                "round {round} key {i}"
            );
        }
    }
}
