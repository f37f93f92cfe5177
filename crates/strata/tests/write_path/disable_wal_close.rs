//! A clean close keeps writes made with `disable_wal` (`docs/contract.md` rule 7), also when a
//! background flush finished between the write and the close: each memtable remembers its own
//! unlogged writes. One DB-wide flag would not do: any finished flush clears it while the
//! unlogged write sits in the newer, active memtable.

use std::sync::Arc;

use strata::merge_operator::UInt64AddOperator;
use strata::{Db, Options, WriteOptions};

fn no_wal() -> WriteOptions {
    WriteOptions { sync: false, disable_wal: true, ..WriteOptions::default() }
}

#[test]
fn unlogged_put_after_a_memtable_switch_survives_close() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { write_buffer_size: 64 << 10, ..Options::default() };
    {
        let db = Db::open(&opts, dir.path()).unwrap();
        // Fills the memtable: the next write switches it and a flush starts.
        db.put(b"big", vec![7u8; 70 << 10]).unwrap();
        db.put(b"switch", b"x").unwrap();
        db.put_opt(b"nowal", b"kept?", &no_wal()).unwrap();
        // The flush of the older memtable finishes before the close.
        db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    }
    let db = Db::open(&opts, dir.path()).unwrap();
    assert_eq!(db.get(b"nowal").unwrap().as_deref(), Some(&b"kept?"[..]));
    assert_eq!(db.get(b"big").unwrap().map(|v| v.len()), Some(70 << 10));
}

#[test]
fn unlogged_merge_after_a_large_put_survives_close() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 64 << 10,
        merge_operator: Some(Arc::new(UInt64AddOperator::default())),
        ..Options::default()
    };
    {
        let db = Db::open(&opts, dir.path()).unwrap();
        db.put(b"big", vec![1u8; 1 << 20]).unwrap();
        db.merge_opt(b"counter", u64::MAX.to_le_bytes(), &no_wal()).unwrap();
        db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    }
    let db = Db::open(&opts, dir.path()).unwrap();
    assert_eq!(db.get(b"counter").unwrap().as_deref(), Some(&u64::MAX.to_le_bytes()[..]));
}

#[test]
fn unlogged_writes_in_several_memtables_all_survive_close() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { write_buffer_size: 16 << 10, ..Options::default() };
    {
        let db = Db::open(&opts, dir.path()).unwrap();
        for i in 0..200u32 {
            db.put_opt(format!("k{i:04}"), vec![i as u8; 500], &no_wal()).unwrap();
            if i % 50 == 0 {
                db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
            }
        }
    }
    let db = Db::open(&opts, dir.path()).unwrap();
    for i in 0..200u32 {
        assert_eq!(db.get(format!("k{i:04}")).unwrap(), Some(vec![i as u8; 500]), "key {i}");
    }
}
