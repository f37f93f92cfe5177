//! `Options::db_write_buffer_size` alone: a private budget over all of a DB's column
//! families, which flushes them (largest first) although each family's `write_buffer_size`
//! is far larger; and the option errors `open` reports.

use std::collections::BTreeMap;
use std::sync::Arc;

use strata::env::MemFs;
use strata::{ColumnFamilyDescriptor, Db, Error, Options, WriteBufferManager};

const BUDGET: usize = 2 << 20;

/// A fresh in-memory DB's options: the budget, and buffers far larger than it.
fn budget_options() -> Options {
    Options {
        fs: Arc::new(MemFs::new()),
        write_buffer_size: 128 << 20,
        db_write_buffer_size: BUDGET,
        ..Options::default()
    }
}

#[test]
fn one_budget_over_all_families_of_one_db() {
    let o = Options { create_missing_column_families: true, ..budget_options() };
    let names = ["one", "two"];
    let cfs = names.map(|n| ColumnFamilyDescriptor::new(n, o.clone()));
    let db = Db::open_cf_descriptors(&o, "/db", cfs).unwrap();
    let handles = names.map(|n| db.cf_handle(n).unwrap());
    let mut models = [BTreeMap::new(), BTreeMap::new(), BTreeMap::new()];
    let mut peak = 0;
    // Family `two` gets half the writes of `one`; `default` a tenth.
    for i in 0..12_000u32 {
        let k = format!("k{:05}", i.wrapping_mul(7919) % 5000);
        let v = vec![(i % 251) as u8; 400];
        let f = match i % 10 {
            0 => 0,
            1..=6 => 1,
            _ => 2,
        };
        if f == 0 {
            db.put(&k, &v).unwrap();
        } else {
            db.put_cf(&handles[f - 1], &k, &v).unwrap();
        }
        models[f].insert(k.into_bytes(), v);
        let mem: u64 = std::iter::once(db.property_int_value("rocksdb.cur-size-all-mem-tables"))
            .chain(
                handles
                    .iter()
                    .map(|h| db.property_int_value_cf(h, "rocksdb.cur-size-all-mem-tables")),
            )
            .map(|r| r.unwrap().unwrap())
            .sum();
        peak = peak.max(mem);
    }
    // About 4.8 MB written with 128 MiB buffers: only the budget flushed. Without stalls
    // the bound is loose (immutable memtables wait for their flush): at most one immutable
    // memtable per family (max_write_buffer_number 2) beside the mutable ones.
    assert!(peak <= 3 * BUDGET as u64, "memtables peaked at {peak} bytes");
    for h in &handles {
        let files = db.property_int_value_cf(h, "rocksdb.num-files-at-level0").unwrap().unwrap();
        let size = db.property_int_value_cf(h, "rocksdb.total-sst-files-size").unwrap().unwrap();
        assert!(files > 0 || size > 0, "the budget flushed {:?}", h.name());
    }
    for (f, model) in models.iter().enumerate() {
        for (k, v) in model.iter().step_by(13) {
            let got = if f == 0 { db.get(k) } else { db.get_cf(&handles[f - 1], k) };
            assert_eq!(got.unwrap().as_deref(), Some(&v[..]), "family {f}");
        }
    }
}

/// Range deletions count in the budget: a DB writing only range deletions (about 5 MB of
/// tombstones against a 2 MiB budget and 128 MiB buffers) flushes them, and what they deleted
/// stays deleted. Regression: their bytes were not reported to the write buffer manager, so
/// the memtable grew without bound.
#[test]
fn range_deletions_count_in_the_budget() {
    let db = Db::open(&budget_options(), "/db").unwrap();
    let key = |i: u32| format!("{i:0>100}");
    for i in 0..100 {
        db.put(key(i), "v").unwrap();
    }
    let mut peak = 0;
    for i in 0..20_000 {
        db.delete_range(key(i), format!("{}~", key(i))).unwrap();
        peak = peak.max(db.property_int_value("rocksdb.cur-size-all-mem-tables").unwrap().unwrap());
    }
    assert!(peak <= 3 * BUDGET as u64, "memtables peaked at {peak} bytes");
    let size = db.property_int_value("rocksdb.total-sst-files-size").unwrap().unwrap();
    assert!(size > 0, "the budget never flushed the range deletions");
    db.put(key(7), "again").unwrap();
    for i in 0..100 {
        let want = (i == 7).then_some(&b"again"[..]);
        assert_eq!(db.get(key(i)).unwrap().as_deref(), want, "key {i}");
    }
}

#[test]
fn option_errors_name_the_option() {
    let fs = MemFs::new();
    let base = Options { fs: Arc::new(fs.clone()), ..Options::default() };
    let both = Options {
        db_write_buffer_size: 1 << 20,
        write_buffer_manager: Some(Arc::new(WriteBufferManager::new(1 << 20, None, false))),
        ..base.clone()
    };
    match Db::open(&both, "/both") {
        Err(Error::InvalidArgument(m)) => {
            assert!(
                m.contains("db_write_buffer_size") && m.contains("write_buffer_manager"),
                "{m}"
            );
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    let tiny = Options { db_write_buffer_size: 1000, ..base.clone() };
    match Db::open(&tiny, "/tiny") {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("db_write_buffer_size = 1000"), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    // A manager without a budget (cache charging or accounting only) is fine.
    let free = Options {
        write_buffer_manager: Some(Arc::new(WriteBufferManager::new(0, None, true))),
        ..base
    };
    let db = Db::open(&free, "/free").unwrap();
    db.put("k", "v").unwrap();
}
