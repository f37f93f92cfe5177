//! The memtable's whole-key filter (`memtable_bloom_size_ratio`): a point lookup that the
//! filter lets skip a memtable must still see every deletion, merge operand and range
//! tombstone that memtable holds over older data, with the filter off, at its default size,
//! and as one word (every probe a false positive once a few keys are in); a bad ratio is
//! refused at open.

use std::sync::Arc;

use strata::env::MemFs;
use strata::merge_operator::builtin_merge_operator;
use strata::{Db, Error, Options};

const RATIOS: [f64; 3] = [0.0, 0.01, 1e-9];

fn opts(fs: &MemFs, ratio: f64) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 1 << 20,
        memtable_bloom_size_ratio: ratio,
        merge_operator: builtin_merge_operator("uint64add"),
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

#[test]
fn memtable_entries_over_table_data_are_seen() {
    for ratio in RATIOS {
        let fs = MemFs::new();
        let db = Db::open(&opts(&fs, ratio), "/db").unwrap();
        for i in 0..1000 {
            db.put(key(i), b"old").unwrap();
        }
        db.put(b"counter", 5u64.to_le_bytes()).unwrap();
        db.flush().unwrap();
        // In the memtable: deletions, a range tombstone, a merge operand and new values.
        for i in (0..1000).step_by(3) {
            db.delete(key(i)).unwrap();
        }
        db.delete_range(key(500), key(600)).unwrap();
        db.merge(b"counter", 2u64.to_le_bytes()).unwrap();
        for i in 1000..1200 {
            db.put(key(i), b"new").unwrap();
        }
        for i in 0..1300 {
            let want: Option<&[u8]> = match i {
                500..600 => None,
                0..1000 if i % 3 == 0 => None,
                0..1000 => Some(b"old"),
                1000..1200 => Some(b"new"),
                _ => None,
            };
            assert_eq!(db.get(key(i)).unwrap().as_deref(), want, "key {i}, ratio {ratio}");
        }
        assert_eq!(
            db.get(b"counter").unwrap(),
            Some(7u64.to_le_bytes().to_vec()),
            "merge operand in the memtable, ratio {ratio}"
        );
    }
}

#[test]
fn a_bad_ratio_is_refused_at_open() {
    for bad in [-0.1, 0.3, f64::NAN] {
        let fs = MemFs::new();
        match Db::open(&opts(&fs, bad), "/db") {
            Err(Error::InvalidArgument(m)) => {
                assert!(m.contains("memtable_bloom_size_ratio"), "{m}");
            }
            Err(e) => panic!("ratio {bad}: expected InvalidArgument, got {e}"),
            Ok(_) => panic!("ratio {bad}: the open succeeded"),
        }
    }
}

/// The filter's bytes count in the memtable's size, so a memtable with a filter holds
/// correspondingly fewer entries before it is switched.
#[test]
fn the_filter_counts_in_the_memtable_size() {
    let fs = MemFs::new();
    let with = Db::open(&opts(&fs, 0.25), "/a").unwrap();
    let without = Db::open(&opts(&fs, 0.0), "/b").unwrap();
    let size = |db: &Db| {
        db.property_int_value("strata.cur-size-active-mem-table").unwrap().expect("property exists")
    };
    assert!(
        size(&with) >= size(&without) + (1 << 18),
        "{} vs {}: a quarter of the 1 MiB write buffer",
        size(&with),
        size(&without)
    );
}
