//! The commonly used `rocksdb.*` properties are known and agree with the DB's state.

use strata::{Db, Options};

#[test]
fn common_properties_answer() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&Options::default(), dir.path()).unwrap();
    let int = |name: &str| {
        db.property_int_value(name).unwrap().unwrap_or_else(|| panic!("{name} is unknown"))
    };
    assert_eq!(int("rocksdb.num-snapshots"), 0);
    db.put(b"a", b"1").unwrap();
    db.delete(b"b").unwrap();
    let s1 = db.snapshot();
    let _s2 = db.snapshot();
    assert_eq!(int("rocksdb.num-snapshots"), 2);
    assert_eq!(int("rocksdb.oldest-snapshot-sequence"), s1.sequence_number());
    assert_eq!(int("rocksdb.is-write-stopped"), 0);
    assert_eq!(int("rocksdb.actual-delayed-write-rate"), 0);
    assert_eq!(int("rocksdb.num-entries-active-mem-table"), 2);
    assert_eq!(int("rocksdb.num-deletes-active-mem-table"), 1);
    assert_eq!(int("rocksdb.num-entries-imm-mem-tables"), 0);
    assert_eq!(int("rocksdb.mem-table-flush-pending"), 0);
    assert!(int("rocksdb.size-all-mem-tables") > 0);
    db.flush().unwrap();
    assert_eq!(int("rocksdb.num-entries-active-mem-table"), 0);
    let sst = int("rocksdb.total-sst-files-size");
    assert!(sst > 0);
    assert_eq!(int("rocksdb.live-sst-files-size"), sst);
    assert!(int("rocksdb.estimate-live-data-size") > 0);
    assert!(int("rocksdb.base-level") >= 1);
    assert!(int("rocksdb.num-live-versions") >= 1);
    assert!(int("rocksdb.min-log-number-to-keep") > 0);
    drop(s1);
    assert_eq!(int("rocksdb.num-snapshots"), 1);
    assert_eq!(db.property_value("rocksdb.no-such-property").unwrap(), None);
}

/// The `stats` dump's compaction table: `CompMergeCPU(sec)` is measured (it was always 0.00)
/// and the `Int` row's W-Amp is a ratio (it divided by 1 byte when nothing was flushed).
#[test]
fn compaction_stats_measure_cpu_and_interval_w_amp() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { write_buffer_size: 1 << 20, ..Options::default() };
    let db = Db::open(&opts, dir.path()).unwrap();
    for i in 0..150_000u32 {
        db.put(format!("key{:08}", i.wrapping_mul(2_654_435_761) % 150_000), [7u8; 100]).unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let stats = db.property_value("rocksdb.stats").unwrap().unwrap();
    // benchmark.sh reads the Sum row with awk: $15 is Comp(sec), $16 CompMergeCPU(sec).
    let sum = stats.lines().find(|l| l.starts_with(" Sum")).unwrap();
    let fields: Vec<&str> = sum.split_whitespace().collect();
    let cpu: f64 = fields[15].parse().unwrap();
    assert!(cpu > 0.0, "CompMergeCPU is 0 in:\n{sum}");
    // A second dump right away: nothing was flushed in between, so the interval's W-Amp is 0.
    let stats = db.property_value("rocksdb.stats").unwrap().unwrap();
    let int = stats.lines().find(|l| l.trim_start().starts_with("Int")).unwrap();
    let wamp: f64 = int.split_whitespace().nth(11).unwrap().parse().unwrap();
    assert!(wamp < 100.0, "Int W-Amp {wamp}:\n{int}");
}
