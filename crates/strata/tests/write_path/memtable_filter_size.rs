//! A memtable's whole-key filter is sized for the keys the memtable will hold, not only by
//! `memtable_bloom_size_ratio` of its bytes: with large values the ratio's filter took room
//! that values would fill (`db/cf`'s `new_memtable`).

use std::sync::Arc;

use strata::env::MemFs;
use strata::{Db, Options};

const BUFFER: usize = 1 << 20;
const VALUE: usize = 8 << 10;

/// The entries each full memtable held, in order, when 400 values of 8 KiB are written one
/// by one with filters of `ratio` of a 1 MiB write buffer. Every key is read back.
fn entries_per_memtable(ratio: f64) -> Vec<u64> {
    let o = Options {
        fs: Arc::new(MemFs::new()),
        write_buffer_size: BUFFER,
        memtable_bloom_size_ratio: ratio,
        disable_auto_compactions: true,
        ..Options::default()
    };
    let db = Db::open(&o, "/db").unwrap();
    let active = || db.property_int_value("rocksdb.num-entries-active-mem-table").unwrap().unwrap();
    let mut held = Vec::new();
    let mut before = 0;
    for i in 0..400u32 {
        db.put(format!("key{i:05}"), vec![(i % 251) as u8; VALUE]).unwrap();
        let now = active();
        if now <= before {
            // This write went to a new memtable: the one before held `before` entries.
            held.push(before);
        }
        before = now;
    }
    for i in 0..400u32 {
        let got = db.get(format!("key{i:05}")).unwrap();
        assert_eq!(got.as_deref(), Some(&vec![(i % 251) as u8; VALUE][..]), "key {i}");
        assert_eq!(db.get(format!("absent{i:05}")).unwrap(), None);
    }
    held
}

#[test]
fn a_memtable_of_large_values_gives_its_filter_no_more_room_than_its_keys_need() {
    let plain = entries_per_memtable(0.0);
    // The largest ratio: a quarter of the buffer, 32 values' room.
    let filtered = entries_per_memtable(0.25);
    assert!(plain.len() >= 2 && filtered.len() >= 3, "{plain:?} {filtered:?}");
    let full = plain[0];
    assert!(full >= 100, "a 1 MiB memtable holds about 120 values of 8 KiB: {plain:?}");
    // The first memtable has no predecessor to tell its entries' size: the ratio sizes it.
    assert!(filtered[0] + 20 < full, "{filtered:?} against {plain:?}");
    // Its successors' filters take 40 bits per key, a few hundred bytes: at most one value
    // fewer than without a filter.
    for &n in &filtered[1..] {
        assert!(n + 1 >= full, "{filtered:?} against {plain:?}");
    }
}

/// Recovery replays a WAL into memtables of the reopened DB's size: each after the first is
/// sized from the one it replaces too (`db/recover.rs`), so the tables the replay writes hold
/// as many values as the writes' own memtables would.
#[test]
fn replayed_memtables_size_their_filters_from_the_ones_before() {
    let fs = Arc::new(MemFs::new());
    let o = Options {
        fs: fs.clone(),
        memtable_bloom_size_ratio: 0.25,
        disable_auto_compactions: true,
        ..Options::default()
    };
    {
        // 400 values of 8 KiB stay in one 8 MiB memtable and its WAL.
        let db = Db::open(&Options { write_buffer_size: 8 << 20, ..o.clone() }, "/db").unwrap();
        for i in 0..400u32 {
            db.put(format!("key{i:05}"), vec![(i % 251) as u8; VALUE]).unwrap();
        }
        assert_eq!(db.property_int_value("rocksdb.num-files-at-level0").unwrap(), Some(0));
    }
    let db = Db::open(&Options { write_buffer_size: BUFFER, ..o }, "/db").unwrap();
    let mut tables = db.live_files_metadata();
    tables.sort_by(|a, b| a.name.cmp(&b.name));
    let held: Vec<u64> = tables.iter().map(|t| t.num_entries).collect();
    assert_eq!(held.iter().sum::<u64>(), 400, "{held:?}");
    assert!(held.len() >= 3, "{held:?}");
    // The first replayed memtable has the ratio's filter; the full ones after it hold about
    // 127 values, as with no filter (`entries_per_memtable`).
    assert!(held[0] + 20 < held[1], "{held:?}");
    for &n in &held[1..held.len() - 1] {
        assert!(n >= 126, "{held:?}");
    }
    for i in (0..400u32).step_by(7) {
        let got = db.get(format!("key{i:05}")).unwrap();
        assert_eq!(got.as_deref(), Some(&vec![(i % 251) as u8; VALUE][..]), "key {i}");
    }
}
