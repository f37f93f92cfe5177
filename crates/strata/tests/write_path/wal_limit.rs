//! `Options::max_total_wal_size`: a family written once and then left alone does not keep
//! every WAL the other families' traffic makes; once the WALs kept outgrow the limit, it is
//! flushed and the old WALs go.

use std::sync::Arc;

use strata::env::{FileSystem, MemFs};
use strata::{ColumnFamilyDescriptor, Db, Options};

fn wal_files(fs: &MemFs) -> usize {
    fs.list(std::path::Path::new("/db"))
        .unwrap()
        .iter()
        .filter(|n| std::path::Path::new(n).extension().is_some_and(|e| e == "log"))
        .count()
}

/// Writes `mb` MiB of 1 KiB values to the default family after one write to `rare`, and
/// returns the most WAL files seen at once.
fn run(max_total_wal_size: u64, mb: usize) -> (usize, MemFs) {
    let fs = MemFs::new();
    let o = Options {
        fs: Arc::new(fs.clone()),
        create_if_missing: true,
        create_missing_column_families: true,
        write_buffer_size: 64 << 10,
        max_total_wal_size,
        ..Options::default()
    };
    let db = Db::open_cf_descriptors(&o, "/db", [ColumnFamilyDescriptor::new("rare", o.clone())])
        .unwrap();
    let rare = db.cf_handle("rare").unwrap();
    db.put_cf(&rare, "only", "once").unwrap();
    let mut most = 0;
    for i in 0..mb * 1024 {
        db.put(format!("k{:06}", i % 5000), vec![(i % 251) as u8; 1024]).unwrap();
        if i % 64 == 0 {
            most = most.max(wal_files(&fs));
        }
    }
    assert_eq!(db.get_cf(&rare, "only").unwrap().as_deref(), Some(&b"once"[..]));
    drop(db);
    let db = Db::open_cf_descriptors(&o, "/db", [ColumnFamilyDescriptor::new("rare", o.clone())])
        .unwrap();
    let rare = db.cf_handle("rare").unwrap();
    assert_eq!(db.get_cf(&rare, "only").unwrap().as_deref(), Some(&b"once"[..]));
    (most, fs)
}

#[test]
fn a_family_written_once_does_not_keep_every_wal() {
    // The default limit: four times 2 families x 2 memtables x 64 KiB = 1 MiB of WALs, about
    // sixteen 64 KiB WALs; 8 MiB written makes about 128 of them.
    let (most, _) = run(0, 8);
    assert!(most <= 24, "{most} WAL files at once");
    // An explicit limit of 256 KiB keeps fewer.
    let (most, _) = run(256 << 10, 8);
    assert!(most <= 8, "{most} WAL files at once");
}

#[test]
fn the_option_is_read_from_strings_and_setters() {
    let mut o = Options::default();
    o.set_max_total_wal_size(123 << 20);
    assert_eq!(o.max_total_wal_size, 123 << 20);
    let o = Options::default().get_options_from_string("max_total_wal_size=4096").unwrap();
    assert_eq!(o.max_total_wal_size, 4096);
}
