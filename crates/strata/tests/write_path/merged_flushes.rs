//! `Options::min_write_buffer_number_to_merge`: immutable memtables wait until that many are
//! queued and are then flushed together as one L0 table (versions and range deletions across
//! them resolved as in one memtable); a flush asked for writes what is queued; a setting a
//! full set of memtables could never reach takes effect as `max_write_buffer_number - 1`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::env::MemFs;
use strata::{Db, IteratorMode, Options};

fn options(max: usize, to_merge: usize) -> Options {
    Options {
        fs: Arc::new(MemFs::new()),
        create_if_missing: true,
        write_buffer_size: 64 << 10,
        max_write_buffer_number: max,
        min_write_buffer_number_to_merge: to_merge,
        disable_auto_compactions: true,
        ..Options::default()
    }
}

fn prop(db: &Db, name: &str) -> u64 {
    db.property_int_value(name).unwrap().unwrap()
}

fn l0_tables(db: &Db) -> Vec<strata::LiveFileMetaData> {
    db.live_files_metadata().into_iter().filter(|f| f.level == 0).collect()
}

/// Writes keys `k{i % span}` from `*next` on until `done(db)`, recording them in `model`.
fn write_until(
    db: &Db,
    model: &mut BTreeMap<String, Vec<u8>>,
    next: &mut u32,
    span: u32,
    done: impl Fn(&Db) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done(db) {
        assert!(Instant::now() < deadline, "gave up writing at {next}");
        let k = format!("k{:05}", (*next).wrapping_mul(7919) % span);
        let v = vec![(*next % 251) as u8; 100];
        db.put(&k, &v).unwrap();
        model.insert(k, v);
        *next += 1;
    }
}

fn check(db: &Db, model: &BTreeMap<String, Vec<u8>>) {
    let seen: BTreeMap<String, Vec<u8>> = db
        .iterator(IteratorMode::Start)
        .map(|r| r.unwrap())
        .map(|(k, v)| (String::from_utf8(k.to_vec()).unwrap(), v.to_vec()))
        .collect();
    assert_eq!(&seen, model);
}

#[test]
fn memtables_wait_for_the_count_and_flush_as_one_table() {
    let o = options(4, 3);
    let db = Db::open(&o, "/db").unwrap();
    let mut model = BTreeMap::new();
    let mut next = 0;
    // Keys repeat across memtables (a span of 300 keys, about 1,400 writes in three
    // memtables), so the merged flush keeps only the newest version of each.
    write_until(&db, &mut model, &mut next, 300, |db| {
        prop(db, "rocksdb.num-immutable-mem-table") == 2
    });
    // A range deletion in the active memtable (the third) covers keys of the first two.
    db.delete_range("k00100", "k00200").unwrap();
    model.retain(|k, _| !("k00100".."k00200").contains(&k.as_str()));
    std::thread::sleep(Duration::from_millis(100));
    assert!(l0_tables(&db).is_empty(), "two of three memtables were flushed");
    assert_eq!(prop(&db, "rocksdb.mem-table-flush-pending"), 0);
    assert_eq!(prop(&db, "rocksdb.num-running-flushes"), 0);
    check(&db, &model);
    write_until(&db, &mut model, &mut next, 300, |db| !l0_tables(db).is_empty());
    let tables = l0_tables(&db);
    assert_eq!(tables.len(), 1, "one table for the three memtables");
    // At most one version per key; the range tombstone counts as an entry.
    let entries = tables[0].num_entries;
    assert!(entries <= 301 && u64::from(next) > 3 * entries, "{entries} entries, {next} writes");
    check(&db, &model);

    // One memtable queued: a flush asked for writes it without waiting for two more.
    write_until(&db, &mut model, &mut next, 300, |db| {
        prop(db, "rocksdb.num-immutable-mem-table") >= 1
    });
    db.flush().unwrap();
    assert_eq!(prop(&db, "rocksdb.num-immutable-mem-table"), 0);
    assert!(l0_tables(&db).len() >= 2);
    check(&db, &model);
    drop(db);
    let db = Db::open(&o, "/db").unwrap();
    check(&db, &model);
}

#[test]
fn a_count_no_set_of_memtables_reaches_takes_effect_as_one_less_than_the_limit() {
    // With two memtables at most, waiting for five would stop writes for good.
    let o = options(2, 5);
    let (tx, rx) = std::sync::mpsc::channel();
    let fs = o.fs.clone();
    std::thread::spawn(move || {
        let db = Db::open(&o, "/db").unwrap();
        let mut model = BTreeMap::new();
        let mut next = 0;
        write_until(&db, &mut model, &mut next, 5000, |db| l0_tables(db).len() >= 3);
        check(&db, &model);
        tx.send(()).unwrap();
    });
    rx.recv_timeout(Duration::from_secs(60)).expect("writes stopped");
    drop(fs);
}

#[test]
fn the_option_is_read_from_strings_and_setters() {
    let mut o = Options::default();
    o.set_min_write_buffer_number_to_merge(-2);
    assert_eq!(o.min_write_buffer_number_to_merge, 1);
    o.set_min_write_buffer_number(3);
    assert_eq!(o.min_write_buffer_number_to_merge, 3);
    let o = Options::default()
        .get_options_from_string("min_write_buffer_number_to_merge=4;max_write_buffer_number=6")
        .unwrap();
    assert_eq!((o.min_write_buffer_number_to_merge, o.max_write_buffer_number), (4, 6));
}
