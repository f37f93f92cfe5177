//! The commonly used `rocksdb.*` properties (issue #10) are known and agree with the DB's state.

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
