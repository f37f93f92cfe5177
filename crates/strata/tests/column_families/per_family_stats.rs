//! Per-family stats: each column family's `stats` property holds its own
//! compaction stats table, named after it; the DB-wide write and stall section appears in
//! `default`'s only; the periodic dump in the LOG prints every family, as RocksDB does.

use strata::{ColumnFamilyDescriptor, Db, Options};

fn rows_with_files(stats: &str) -> Vec<String> {
    stats
        .lines()
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.first().is_some_and(|x| x.starts_with('L') && x.len() == 2)
                && f.get(1).is_some_and(|n| !n.starts_with("0/"))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn each_family_reports_its_own_compaction_stats() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        create_missing_column_families: true,
        stats_dump_period_sec: 1,
        ..Options::default()
    };
    let db = Db::open_cf_descriptors(
        &opts,
        dir.path(),
        ["busy", "idle"].map(|n| ColumnFamilyDescriptor::new(n, opts.clone())),
    )
    .unwrap();
    let busy = db.cf_handle("busy").unwrap();
    let idle = db.cf_handle("idle").unwrap();
    for round in 0..3 {
        for i in 0..200u32 {
            db.put_cf(&busy, format!("k{i:05}-{round}"), [1u8; 64]).unwrap();
        }
        db.flush_cf(&busy).unwrap();
    }
    db.put(b"d", b"v").unwrap();

    let s_busy = db.property_value_cf(&busy, "rocksdb.stats").unwrap().unwrap();
    let s_idle = db.property_value_cf(&idle, "strata.stats").unwrap().unwrap();
    let s_default = db.property_value("rocksdb.stats").unwrap().unwrap();
    assert!(s_busy.contains("** Compaction Stats [busy] **"), "{s_busy}");
    assert!(s_idle.contains("** Compaction Stats [idle] **"), "{s_idle}");
    assert!(s_default.contains("** Compaction Stats [default] **"), "{s_default}");
    // busy's three flushes are in its table; the other families have no files.
    let busy_rows = rows_with_files(&s_busy);
    assert!(busy_rows.len() == 1 && busy_rows[0].starts_with("  L0      3/0"), "{s_busy}");
    assert!(rows_with_files(&s_idle).is_empty(), "{s_idle}");
    assert!(rows_with_files(&s_default).is_empty(), "{s_default}");
    // The DB-wide section: default's report only.
    assert!(s_default.contains("** DB Stats **"));
    assert!(!s_busy.contains("** DB Stats **") && !s_idle.contains("** DB Stats **"));

    // The periodic dump prints every family.
    std::thread::sleep(std::time::Duration::from_millis(1_500));
    drop(db);
    let log = std::fs::read_to_string(dir.path().join("LOG")).unwrap();
    let dumps = log.matches("------- DUMPING STATS -------").count();
    assert!(dumps >= 1, "{log}");
    for name in ["default", "busy", "idle"] {
        let header = format!("** Compaction Stats [{name}] **");
        assert_eq!(log.matches(&header).count(), dumps, "{header} in each dump:\n{log}");
    }
    assert_eq!(log.matches("** DB Stats **").count(), dumps, "{log}");
}
