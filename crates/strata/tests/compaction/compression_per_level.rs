//! `Options::compression_per_level` (RocksDB's option; db_bench's `--min_level_to_compress`):
//! each level's tables use that level's compression.

use strata::{CompressionType, Db, Options};

/// Total table bytes after writing compressible values and flushing (`compact`: then
/// compacting everything to the bottom level).
fn table_bytes(per_level: Vec<CompressionType>, compact: bool) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { compression_per_level: per_level, ..Options::default() };
    let db = Db::open(&opts, dir.path()).unwrap();
    for i in 0..5_000u32 {
        db.put(format!("key{i:06}"), format!("value {} ", i % 7).repeat(30)).unwrap();
    }
    db.flush().unwrap();
    if compact {
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    }
    db.property_int_value("rocksdb.total-sst-files-size").unwrap().unwrap()
}

#[test]
fn each_level_uses_its_own_compression() {
    use CompressionType::{None as Raw, Snappy};
    let raw_bottom = table_bytes(vec![Raw], true);
    let snappy_bottom = table_bytes(vec![Snappy], true);
    assert!(snappy_bottom * 3 < raw_bottom, "{snappy_bottom} vs {raw_bottom}");
    // Uncompressed upper levels, compressed bottom: L0 after a flush is raw ...
    let mixed = vec![Raw, Raw, Raw, Raw, Raw, Raw, Snappy];
    assert!(table_bytes(mixed.clone(), false) * 10 > raw_bottom * 9);
    // ... and the bottom level after a full compaction is compressed.
    assert!(table_bytes(mixed, true) * 3 < raw_bottom);
    // An empty list means `compression` everywhere (Snappy by default).
    assert!(table_bytes(Vec::new(), false) * 3 < raw_bottom);
}
