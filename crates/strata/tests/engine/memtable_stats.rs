//! `Db::get_approximate_memtable_stats` (RocksDB's `GetApproximateMemTableStats`): the
//! entries of the active and immutable memtables in a key range, estimated from the
//! skiplist's levels: exact for small ranges, near the true count for large ones, none for
//! an empty or inverted range or a flushed memtable, in the family asked about, in any key
//! order.

use std::sync::Arc;

use strata::env::MemFs;
use strata::{ColumnFamilyDescriptor, Db, Options, Range};

fn key(i: u64) -> String {
    format!("key{i:08}")
}

fn open(fs: &MemFs) -> Db {
    let o = Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 64 << 20,
        disable_auto_compactions: true,
        ..Options::default()
    };
    Db::open(&o, "/db").unwrap()
}

fn stats(db: &Db, a: u64, b: u64) -> (u64, u64) {
    let (s, e) = (key(a), key(b));
    db.get_approximate_memtable_stats(&Range::new(s.as_bytes(), e.as_bytes()))
}

#[test]
fn counts_are_near_the_entries_in_the_range() {
    let fs = MemFs::new();
    let db = open(&fs);
    // Odd keys only, in a scattered order, 100 bytes of value each.
    let n = 50_000u64;
    for i in 0..n {
        let k = (i * 7_919) % n;
        db.put(key(2 * k + 1), [b'v'; 100]).unwrap();
    }
    for (a, b) in
        [(0, 2 * n), (0, n), (n / 2, n / 2 + 2_000), (1_000, 1_200), (40_000, 40_020), (7, 9)]
    {
        let truth = (b - a) / 2;
        let (count, bytes) = stats(&db, a, b);
        // A range of up to 64 entries is counted on the bottom level: exactly.
        let (lo, hi) = if truth <= 64 { (truth, truth) } else { (truth / 2, truth * 2) };
        assert!(count >= lo && count <= hi, "[{a}, {b}): {count} against {truth}");
        assert!(count <= n, "never more than the memtable holds");
        if let Some(per) = bytes.checked_div(count) {
            assert!((100..400).contains(&per), "[{a}, {b}): {per} bytes an entry");
        }
    }
    // An empty, inverted or outside range has nothing.
    assert_eq!(stats(&db, 10, 10), (0, 0));
    assert_eq!(stats(&db, 20, 10), (0, 0));
    assert_eq!(stats(&db, 3 * n, 4 * n), (0, 0));

    // Immutable memtables count until their flush, which leaves nothing to count.
    let before = stats(&db, 0, 2 * n).0;
    let cf = db.cf_handle("default").unwrap();
    let r = Range::new(b"a", b"z");
    assert_eq!(db.get_approximate_memtable_stats_cf(&cf, &r).0, before);
    db.flush().unwrap();
    assert_eq!(stats(&db, 0, 2 * n), (0, 0));
    db.put(key(3), "x").unwrap();
    let (count, _) = stats(&db, 0, 10);
    assert!(count <= 1, "{count}");
}

#[test]
fn another_family_and_another_order_count_their_own() {
    let fs = MemFs::new();
    let mut o = Options { fs: Arc::new(fs.clone()), ..Options::default() };
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    let reverse: Box<strata::options::CompareFn> = Box::new(|a, b| b.cmp(a));
    o.set_comparator("test.reverse", reverse);
    let other = ColumnFamilyDescriptor::new("other", o.clone());
    let db = Db::open_cf_descriptors(&o, "/db", vec![other]).unwrap();
    let other = db.cf_handle("other").unwrap();
    for i in 0..20_000u64 {
        db.put_cf(&other, key(i), "v").unwrap();
    }
    let r = |a: u64, b: u64| (key(a), key(b));
    // The family's order is reversed: a range runs from the larger key to the smaller.
    let (s, e) = r(15_000, 5_000);
    let range = Range::new(s.as_bytes(), e.as_bytes());
    let (count, _) = db.get_approximate_memtable_stats_cf(&other, &range);
    assert!((5_000..=20_000).contains(&count), "{count} against 10,000");
    let (s, e) = r(5_000, 15_000);
    let range = Range::new(s.as_bytes(), e.as_bytes());
    assert_eq!(db.get_approximate_memtable_stats_cf(&other, &range), (0, 0), "inverted there");
    assert_eq!(db.get_approximate_memtable_stats(&range), (0, 0), "the default family is empty");
}
