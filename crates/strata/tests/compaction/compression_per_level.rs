//! `Options::compression_per_level` (RocksDB's option; db_bench's `--min_level_to_compress`):
//! each level's tables use that level's compression. `Options::compression_parallel_threads`:
//! helper threads compress the tables' blocks, the tables unchanged.

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

/// Whether some thread of this process is named `prefix...` now.
#[cfg(target_os = "linux")]
fn thread_named(prefix: &str) -> bool {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return false };
    tasks.flatten().any(|t| {
        std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with(prefix))
    })
}

/// `Options::compression_parallel_threads` (RocksDB's `compression_opts.parallel_threads`):
/// flushes and compactions compress on helper threads (seen while they run), and the DB
/// reads back every write, with the tables the size they are without them.
#[cfg(target_os = "linux")]
#[test]
fn parallel_compression_threads_write_the_same_tables() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let run = |threads: usize| {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            compression: CompressionType::Zstd,
            compression_parallel_threads: threads,
            write_buffer_size: 64 << 20,
            ..Options::default()
        };
        let db = Db::open(&opts, dir.path()).unwrap();
        let value = |i: u32| format!("value {} of key {i} ", i % 13).repeat(12);
        for i in 0..60_000u32 {
            db.put(format!("key{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000), value(i))
                .unwrap();
        }
        db.delete_range(b"key0001".as_slice(), b"key0002".as_slice()).unwrap();
        let seen = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let watcher = {
            let (seen, stop) = (seen.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if thread_named("strata-compress") {
                        seen.store(true, Ordering::Relaxed);
                    }
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
            })
        };
        db.flush().unwrap();
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        stop.store(true, Ordering::Relaxed);
        watcher.join().unwrap();
        let mut all = Vec::new();
        let mut it = db.raw_iterator();
        it.seek_to_first();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            all.push((k.to_vec(), v.to_vec()));
            it.next();
        }
        let bytes = db.property_int_value("rocksdb.total-sst-files-size").unwrap().unwrap();
        (all, bytes, seen.load(Ordering::Relaxed))
    };
    let (inline, inline_bytes, inline_seen) = run(1);
    let (parallel, parallel_bytes, parallel_seen) = run(3);
    assert!(!inline_seen && parallel_seen, "helper threads: {inline_seen} / {parallel_seen}");
    assert!(inline.len() > 40_000 && !inline.iter().any(|(k, _)| k.starts_with(b"key0001")));
    assert!(inline == parallel, "the same keys and values");
    // The tables differ at most in their creation times' encodings.
    assert!(inline_bytes.abs_diff(parallel_bytes) < 64, "{inline_bytes} / {parallel_bytes}");
}
