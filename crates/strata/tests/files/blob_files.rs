//! Values in blob files (`BlobOptions`, `docs/format/blob.md`) with the features that touch
//! values: iterators read a blob only when its value is asked for; a damaged blob record is
//! an error naming the file, never a wrong value; compaction filters see blob values;
//! blob values are cached only in a blob cache, and never by compactions; checkpoints,
//! backups and repair carry blob files; blob files turned on later take values at the next
//! compaction; each family has its own settings; a TTL DB keeps working; the statistics
//! count blob files' work as RocksDB's do.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata::env::{FileSystem, MemFs};
use strata::{
    statistics::{Histogram, Ticker},
    BackupEngine, BlobOptions, Checkpoint, ColumnFamilyDescriptor, Db, Decision, IteratorMode,
    Options, ReadOptions,
};

fn opts(fs: &MemFs) -> Options {
    Options {
        fs: Arc::new(fs.clone()),
        blob: BlobOptions { enable_blob_files: true, min_blob_size: 100, ..BlobOptions::default() },
        ..Options::default()
    }
}

/// [`opts`] with the block cache as the blob cache, and statistics.
fn opts_with_blob_cache(fs: &MemFs) -> Options {
    let cache = strata::Cache::new_lru(8 << 20);
    let mut o = opts(fs);
    o.block_cache = Some(cache.clone());
    o.set_blob_cache(&cache);
    o.enable_statistics();
    o
}

fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.iterator(IteratorMode::Start)
        .map(|r| r.unwrap())
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect()
}

fn value(i: u32) -> Vec<u8> {
    format!("value{i:04}-").repeat(20).into_bytes()
}

/// 200 keys, half of them with a value large enough for a blob file, flushed.
fn fill(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    for i in 0..200u32 {
        let k = format!("key{i:04}").into_bytes();
        let v = if i % 2 == 0 { value(i) } else { format!("small{i}").into_bytes() };
        db.put(&k, &v).unwrap();
        m.insert(k, v);
    }
    db.flush().unwrap();
    m
}

fn blob_files(fs: &MemFs, dir: &str) -> Vec<String> {
    let mut v: Vec<String> = fs
        .list(Path::new(dir))
        .unwrap()
        .into_iter()
        .filter(|n| Path::new(n).extension().is_some_and(|x| x == "blob"))
        .collect();
    v.sort();
    v
}

#[test]
fn key_only_scans_never_read_blob_files() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    fill(&db);
    assert_eq!(db.property_int_value("rocksdb.num-blob-files").unwrap(), Some(1));
    // With the blob file gone (before any value was read), a scan of keys still sees every
    // key...
    let blob = blob_files(&fs, "/db").remove(0);
    fs.remove(&Path::new("/db").join(&blob)).unwrap();
    let mut it = db.raw_iterator();
    it.seek_to_first();
    let mut keys = 0;
    while it.valid() {
        keys += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(keys, 200);
    // ... small values are read, and a value in the blob file is an error naming it.
    assert_eq!(db.get(b"key0001").unwrap().as_deref(), Some(&b"small1"[..]));
    let e = db.get(b"key0002").unwrap_err().to_string();
    assert!(e.contains(&blob), "{e}");
    let mut it = db.raw_iterator();
    it.seek(b"key0002");
    assert!(it.valid());
    assert_eq!(it.value(), Some(&b""[..]), "a failed blob read yields no bytes");
    let e = it.status().unwrap_err().to_string();
    assert!(e.contains(&blob), "{e}");
    it.next();
    assert!(!it.valid(), "the error stops the iterator");
}

#[test]
fn a_damaged_blob_record_is_an_error_never_a_wrong_value() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    let model = fill(&db);
    let blob = Path::new("/db").join(blob_files(&fs, "/db").remove(0));
    let mut data = fs.read_file(&blob).unwrap();
    // Inside key0100's value (records are in key order, every other key is large).
    let at = data.windows(12).position(|w| w == b"value0100-va").unwrap() + 40;
    data[at] ^= 1;
    fs.write_file(&blob, &data);
    drop(db);
    let db = Db::open(&opts(&fs), "/db").unwrap();
    for (k, v) in &model {
        match db.get(k) {
            Ok(got) => assert_eq!(got.as_ref(), Some(v), "{k:?}"),
            Err(e) => {
                assert_eq!(k, b"key0100", "only the damaged record fails: {e}");
                let e = e.to_string();
                assert!(e.contains(".blob") && e.contains("checksum"), "{e}");
            }
        }
    }
    let checks = strata::inspect::verify_db(&opts(&fs), Path::new("/db")).unwrap();
    assert!(!strata::inspect::all_intact(&checks));
    let bad: Vec<_> = checks.iter().filter(|c| c.result.is_err()).collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].path, blob);
}

#[test]
fn compaction_filters_see_blob_values() {
    let fs = MemFs::new();
    let mut o = opts(&fs);
    o.set_compaction_filter("blobs", |_level, key: &[u8], v: &[u8]| {
        if key.ends_with(b"0") {
            assert!(v.starts_with(b"value") || v.starts_with(b"small"), "{v:?}");
            Decision::Remove
        } else if key.ends_with(b"2") && v.starts_with(b"value") {
            let mut nv = b"changed:".to_vec();
            nv.extend_from_slice(v);
            Decision::Change(nv)
        } else {
            Decision::Keep
        }
    });
    // The filter runs at compaction only: the flush writes as it is given.
    let mut plain = opts(&fs);
    plain.compaction_filter_factory = None;
    let db = Db::open(&plain, "/db").unwrap();
    let mut model = fill(&db);
    drop(db);
    let db = Db::open(&o, "/db").unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    model.retain(|k, _| !k.ends_with(b"0"));
    for (k, v) in &mut model {
        if k.ends_with(b"2") && v.starts_with(b"value") {
            let mut nv = b"changed:".to_vec();
            nv.extend_from_slice(v);
            *v = nv;
        }
    }
    assert_eq!(contents(&db), model);
}

/// Blob values are kept in `blob_cache` when one is set (here the block cache, shared), never
/// without one (RocksDB's default), never by a read with `fill_cache` off, and never by a
/// compaction, which reads each value once.
#[test]
fn blob_values_are_cached_in_the_blob_cache_only_and_never_by_compactions() {
    let blob_keys: Vec<Vec<u8>> =
        (0..200u32).step_by(2).map(|i| format!("key{i:04}").into()).collect();
    let cached = |o: &Options| {
        (o.get_ticker_count(Ticker::BlobDbCacheHit), o.get_ticker_count(Ticker::BlobDbCacheMiss))
    };
    let read_all = |db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>| {
        for k in &blob_keys {
            assert_eq!(db.get(k).unwrap().as_deref(), Some(&model[k][..]));
        }
    };
    // No blob cache: every read goes to the file, none is counted as a cache miss either.
    let fs = MemFs::new();
    let mut o = opts(&fs);
    o.enable_statistics();
    let db = Db::open(&o, "/db").unwrap();
    let model = fill(&db);
    read_all(&db, &model);
    read_all(&db, &model);
    assert_eq!(cached(&o), (0, 0));
    drop(db);

    // The block cache as the blob cache: reads with `fill_cache` off (point reads, then an
    // iterator) leave it empty; the second normal reading of each value hits.
    let fs = MemFs::new();
    let o = opts_with_blob_cache(&fs);
    let db = Db::open(&o, "/db").unwrap();
    let model = fill(&db);
    let unfilled = ReadOptions { fill_cache: false, ..ReadOptions::default() };
    for k in &blob_keys {
        assert_eq!(db.get_opt(k, &unfilled).unwrap().as_deref(), Some(&model[k][..]));
    }
    let scanned: BTreeMap<Vec<u8>, Vec<u8>> = db
        .iterator_opt(IteratorMode::Start, &unfilled)
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(scanned, model);
    assert_eq!(cached(&o), (0, 200), "reads without fill_cache add nothing");
    read_all(&db, &model);
    assert_eq!(cached(&o), (0, 300));
    read_all(&db, &model);
    assert_eq!(cached(&o), (100, 300));
    drop(db);

    // A compaction whose filter reads every blob value (keeping it where it is) leaves
    // them out of the cache: the reads after it miss.
    let mut o = opts_with_blob_cache(&fs);
    o.set_compaction_filter("reads values", |_level, _key: &[u8], v: &[u8]| {
        assert!(v.starts_with(b"value") || v.starts_with(b"small"), "{v:?}");
        Decision::Keep
    });
    let db = Db::open(&o, "/db").unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(cached(&o), (0, 100), "the compaction's reads look the cache up, fill nothing");
    read_all(&db, &model);
    assert_eq!(cached(&o), (0, 200));
    assert_eq!(contents(&db), model);
}

#[test]
fn checkpoints_and_backups_carry_blob_files() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    let model = fill(&db);
    let cp = Checkpoint::create(&db, "/cp").unwrap();
    assert!(cp.tables_linked + cp.tables_copied >= 2, "table and blob file");
    assert_eq!(blob_files(&fs, "/cp"), blob_files(&fs, "/db"));
    let copy = Db::open(&opts(&fs), "/cp").unwrap();
    assert_eq!(contents(&copy), model);
    drop(copy);
    let engine = BackupEngine::open(&opts(&fs), "/backups").unwrap();
    engine.create_new_backup(&db).unwrap();
    engine.verify_backup(1).unwrap();
    engine.restore_from_latest_backup("/restored").unwrap();
    assert_eq!(blob_files(&fs, "/restored"), blob_files(&fs, "/db"));
    let restored = Db::open(&opts(&fs), "/restored").unwrap();
    assert_eq!(contents(&restored), model);
}

#[test]
fn repair_keeps_blob_files_and_sets_aside_tables_whose_blob_file_is_lost() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    let model = fill(&db);
    drop(db);
    let dir = Path::new("/db");
    fs.remove(&dir.join("CURRENT")).unwrap();
    for m in fs.list(dir).unwrap().into_iter().filter(|n| n.starts_with("MANIFEST-")) {
        fs.remove(&dir.join(m)).unwrap();
    }
    let report = Db::repair(&opts(&fs), dir).unwrap();
    assert!(report.tables_dropped.is_empty(), "{report}");
    let db = Db::open(&opts(&fs), dir).unwrap();
    assert_eq!(contents(&db), model);
    assert_eq!(db.property_int_value("rocksdb.num-blob-files").unwrap(), Some(1));
    drop(db);
    // Without its blob file, a table is kept aside whole, never served without its values.
    for b in blob_files(&fs, "/db") {
        fs.remove(&dir.join(b)).unwrap();
    }
    fs.remove(&dir.join("CURRENT")).unwrap();
    let report = Db::repair(&opts(&fs), dir).unwrap();
    assert_eq!(report.tables_dropped.len(), 1, "{report}");
    assert!(report.tables_dropped[0].1.contains("blob file"), "{report}");
    let db = Db::open(&opts(&fs), dir).unwrap();
    assert!(contents(&db).is_empty());
}

#[test]
fn blob_files_turned_on_later_take_values_at_compaction() {
    let fs = MemFs::new();
    let off = Options { blob: BlobOptions::default(), ..opts(&fs) };
    let db = Db::open(&off, "/db").unwrap();
    let model = fill(&db);
    assert!(blob_files(&fs, "/db").is_empty());
    db.set_options(&[("enable_blob_files", "true"), ("min_blob_size", "100")]).unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.property_int_value("rocksdb.num-blob-files").unwrap(), Some(1));
    assert_eq!(contents(&db), model);
    // And back off: garbage collection over every file moves them into the tables again.
    db.set_options(&[
        ("enable_blob_files", "false"),
        ("enable_blob_garbage_collection", "true"),
        ("blob_garbage_collection_age_cutoff", "1.0"),
    ])
    .unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.property_int_value("rocksdb.num-blob-files").unwrap(), Some(0));
    assert_eq!(contents(&db), model);
    drop(db);
    let db = Db::open(&off, "/db").unwrap();
    assert_eq!(contents(&db), model);
    assert!(blob_files(&fs, "/db").is_empty(), "the old blob file was deleted");
}

#[test]
fn each_family_has_its_own_blob_settings() {
    let fs = MemFs::new();
    let o =
        Options { create_missing_column_families: true, blob: BlobOptions::default(), ..opts(&fs) };
    let db = Db::open_cf_descriptors(
        &o,
        "/db",
        vec![
            ColumnFamilyDescriptor::new("default", o.clone()),
            ColumnFamilyDescriptor::new("large", opts(&fs)),
        ],
    )
    .unwrap();
    let large = db.cf_handle("large").unwrap();
    for i in 0..50u32 {
        db.put(format!("k{i}"), value(i)).unwrap();
        db.put_cf(&large, format!("k{i}"), value(i)).unwrap();
    }
    db.flush().unwrap();
    db.flush_cf(&large).unwrap();
    assert_eq!(db.property_int_value("rocksdb.num-blob-files").unwrap(), Some(0));
    assert_eq!(db.property_int_value_cf(&large, "rocksdb.num-blob-files").unwrap(), Some(1));
    for i in 0..50u32 {
        assert_eq!(db.get_cf(&large, format!("k{i}")).unwrap(), Some(value(i)));
    }
    // A dropped family's blob files go with it (by the next open at the latest, as its
    // tables: a reader may still hold its last version).
    drop(large);
    db.drop_cf("large").unwrap();
    drop(db);
    let db = Db::open(&o, "/db").unwrap();
    assert!(blob_files(&fs, "/db").is_empty());
    assert_eq!(db.get("k1").unwrap(), Some(value(1)));
}

#[test]
fn a_ttl_db_keeps_blob_values_and_their_times() {
    let fs = MemFs::new();
    let db = Db::open_with_ttl(&opts(&fs), "/db", std::time::Duration::from_secs(3600)).unwrap();
    let model = fill(&db);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.property_int_value("rocksdb.num-blob-files").unwrap(), Some(1));
    assert_eq!(contents(&db), model);
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
}

#[test]
fn values_replayed_from_the_wal_go_to_blob_files() {
    let fs = MemFs::new();
    let db = Db::open(&opts(&fs), "/db").unwrap();
    let mut model = BTreeMap::new();
    for i in 0..100u32 {
        let k = format!("key{i:04}").into_bytes();
        db.put(&k, value(i)).unwrap();
        model.insert(k, value(i));
    }
    drop(db); // no flush: the WAL holds the writes, and the open writes them to a table
    let db = Db::open(&opts(&fs), "/db").unwrap();
    assert_eq!(db.property_int_value("rocksdb.num-blob-files").unwrap(), Some(1));
    assert_eq!(blob_files(&fs, "/db").len(), 1);
    assert_eq!(contents(&db), model);
    drop(db);
    let db = Db::open(&opts(&fs), "/db").unwrap();
    assert_eq!(contents(&db), model);
}

/// The flush and compaction byte tickers count blob files, as RocksDB's do (its I/O
/// counters see every file a flush or compaction writes). Regression: they counted tables
/// only, and the statistics dump's `rocksdb.compact.write.bytes` saturated at zero.
#[test]
fn write_byte_tickers_count_blob_files() {
    let fs = MemFs::new();
    let mut o = opts(&fs);
    o.enable_statistics();
    o.blob.enable_blob_gc = true;
    o.blob.blob_gc_age_cutoff = 1.0;
    let db = Db::open(&o, "/db").unwrap();
    let model = fill(&db);
    // Tables and blob records: a blob file's header (20 bytes) and footer (28) are not
    // counted, as RocksDB's compaction stats count a blob file's records
    // (docs/format/blob.md).
    let size = |p: &str| db.property_int_value(p).unwrap().unwrap();
    let written = || {
        let files = size("rocksdb.num-blob-files");
        size("rocksdb.total-sst-files-size") + size("rocksdb.total-blob-file-size") - 48 * files
    };
    assert!(size("rocksdb.total-blob-file-size") > 0);
    assert_eq!(o.get_ticker_count(Ticker::FlushWriteBytes), written());
    assert_eq!(o.get_ticker_count(Ticker::CompactWriteBytes), 0);
    // Collection over every blob file: the compaction writes a table and a new blob file.
    let before = blob_files(&fs, "/db");
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_ne!(blob_files(&fs, "/db"), before, "the values were relocated");
    assert_eq!(o.get_ticker_count(Ticker::CompactWriteBytes), written());
    assert_eq!(contents(&db), model);
}

/// The blob tickers and histograms count what RocksDB's integrated BlobDB counts: every byte
/// of every blob file written (header, records, footer) and each sync, the values garbage
/// collection relocates (stored sizes), the blob cache's bytes in and out, and the time of
/// each record's write, each sync, each read of a file, each compression and decompression.
/// Regression: only the cache's hits, misses and adds and the file bytes read were counted;
/// the rest read 0.
#[test]
fn blob_statistics_count_files_written_synced_relocated_and_cached() {
    let fs = MemFs::new();
    let mut o = opts_with_blob_cache(&fs);
    o.blob.enable_blob_gc = true;
    o.blob.blob_gc_age_cutoff = 1.0;
    let tick = |t| o.get_ticker_count(t);
    let hist = |h| o.get_histogram_data(h).count();
    let db = Db::open(&o, "/db").unwrap();
    let model = fill(&db);
    let size = |p: &str| db.property_int_value(p).unwrap().unwrap();
    // The flush wrote one blob file of the 100 large values, and synced it once.
    let first = size("rocksdb.total-blob-file-size");
    assert_eq!(size("rocksdb.num-blob-files"), 1);
    assert_eq!(tick(Ticker::BlobDbBlobFileBytesWritten), first);
    assert_eq!(tick(Ticker::BlobDbBlobFileSynced), 1);
    assert_eq!(hist(Histogram::BlobDbBlobFileSyncMicros), 1);
    assert_eq!(hist(Histogram::BlobDbBlobFileWriteMicros), 100);
    assert_eq!(hist(Histogram::BlobDbCompressionMicros), 0, "no blob compression asked for");
    assert_eq!(tick(Ticker::BlobDbGcNumKeysRelocated), 0);
    // Collection over every blob file: each value moves to a new file, counted with its
    // stored size (uncompressed here: the value's length).
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(tick(Ticker::BlobDbGcNumKeysRelocated), 100);
    let value_bytes: u64 = model.values().filter(|v| v.len() >= 100).map(|v| v.len() as u64).sum();
    assert_eq!(tick(Ticker::BlobDbGcBytesRelocated), value_bytes);
    let second = size("rocksdb.total-blob-file-size");
    assert_eq!(tick(Ticker::BlobDbBlobFileBytesWritten), first + second);
    assert_eq!(tick(Ticker::BlobDbBlobFileSynced), 2);
    assert_eq!(hist(Histogram::BlobDbBlobFileWriteMicros), 200);
    // The cache: the first read of each value adds it (its charge counted), the second
    // reads it from there (its bytes counted).
    for pass in 0..2 {
        for (k, v) in model.iter().filter(|(_, v)| v.len() >= 100) {
            assert_eq!(db.get(k).unwrap().as_deref(), Some(&v[..]), "pass {pass}");
        }
    }
    assert_eq!(tick(Ticker::BlobDbCacheAdd), 100);
    assert!(tick(Ticker::BlobDbCacheBytesWrite) >= value_bytes);
    assert_eq!(tick(Ticker::BlobDbCacheHit), 100);
    assert_eq!(tick(Ticker::BlobDbCacheBytesRead), value_bytes);
    assert_eq!(hist(Histogram::BlobDbDecompressionMicros), 0);
    drop(db);

    // Compressed blob files time each value's compression and decompression; values written
    // at commit with `sync` sync their blob file before the WAL, each counted.
    let fs = MemFs::new();
    let mut o = opts(&fs);
    o.enable_statistics();
    o.blob.blob_compression_type = Some(strata::CompressionType::Zstd);
    o.blob.write_blobs_at_commit = true;
    let tick = |t| o.get_ticker_count(t);
    let hist = |h| o.get_histogram_data(h).count();
    let db = Db::open(&o, "/db").unwrap();
    let synced = strata::WriteOptions { sync: true, ..strata::WriteOptions::default() };
    for i in 0..10u32 {
        db.put_opt(format!("key{i:04}"), value(i), &synced).unwrap();
    }
    assert_eq!(tick(Ticker::BlobDbBlobFileSynced), 10);
    assert_eq!(hist(Histogram::BlobDbBlobFileSyncMicros), 10);
    assert_eq!(hist(Histogram::BlobDbCompressionMicros), 10);
    db.flush().unwrap();
    // The flush finished the file: its footer written, synced once more.
    assert_eq!(tick(Ticker::BlobDbBlobFileSynced), 11);
    assert_eq!(
        tick(Ticker::BlobDbBlobFileBytesWritten),
        size_of(&db, "rocksdb.total-blob-file-size")
    );
    // Each read of the file is timed: point reads in reverse order read it once each; a
    // scan in order reads it for two values, then reads one window ahead that serves the
    // rest (`blob/readahead.rs`).
    for i in (0..10u32).rev() {
        assert_eq!(db.get(format!("key{i:04}")).unwrap(), Some(value(i)));
    }
    assert_eq!(hist(Histogram::BlobDbBlobFileReadMicros), 10);
    assert_eq!(contents(&db).len(), 10);
    assert_eq!(hist(Histogram::BlobDbBlobFileReadMicros), 13);
    assert_eq!(hist(Histogram::BlobDbDecompressionMicros), 20);
}

fn size_of(db: &Db, property: &str) -> u64 {
    db.property_int_value(property).unwrap().unwrap()
}

/// A family opened with options of its own (which hold no statistics) counts its blob files
/// in the DB's statistics, as its other counters do. Regression: its flushes' and
/// compactions' blob counts went to its own options' statistics, none.
#[test]
fn a_familys_blob_files_count_in_the_dbs_statistics() {
    let fs = MemFs::new();
    let mut o = Options { create_missing_column_families: true, ..opts(&fs) };
    o.enable_statistics();
    let mut family = opts(&fs);
    family.blob.enable_blob_gc = true;
    family.blob.blob_gc_age_cutoff = 1.0;
    assert!(family.statistics.is_none());
    let db = Db::open_cf_descriptors(
        &o,
        "/db",
        vec![
            ColumnFamilyDescriptor::new("default", o.clone()),
            ColumnFamilyDescriptor::new("large", family),
        ],
    )
    .unwrap();
    let large = db.cf_handle("large").unwrap();
    for i in 0..50u32 {
        db.put_cf(&large, format!("k{i}"), value(i)).unwrap();
    }
    db.flush_cf(&large).unwrap();
    let size = || db.property_int_value_cf(&large, "rocksdb.total-blob-file-size").unwrap();
    let first = size().unwrap();
    assert_eq!(o.get_ticker_count(Ticker::BlobDbBlobFileBytesWritten), first);
    db.compact_range_cf(&large, None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(o.get_ticker_count(Ticker::BlobDbGcNumKeysRelocated), 50);
    assert_eq!(o.get_ticker_count(Ticker::BlobDbBlobFileBytesWritten), first + size().unwrap());
}
