//! The `rocksdb` crate's option surface as behaviour (`docs/rocksdb-compat.md`): the
//! compression types it names round-trip through flushes, reopens and compactions; the read
//! tier, `no_slowdown` and the info logger do what they say; option strings, `load_latest`,
//! the in-memory `Env` and the LOG lines RocksDB's tools grep.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use strata::{
    BlockBasedOptions, Cache, DBCompressionType, DataBlockIndexType, Decision, Env, ErrorKind,
    InfoLogger, LogLevel, Options, ReadOptions, ReadTier, WriteOptions, DB,
};

fn value(i: u32) -> Vec<u8> {
    format!("value {i:08} of a row that compresses well, ").repeat(4).into_bytes()
}

fn sst_bytes(db: &DB) -> u64 {
    db.live_files_metadata().iter().map(|f| f.size).sum()
}

fn round_trip(ty: DBCompressionType) {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_compression_type(ty);
    let n = 2_000u32;
    {
        let db = DB::open(&opts, dir.path()).unwrap();
        for i in 0..n {
            db.put(format!("key{i:06}"), value(i)).unwrap();
        }
        db.flush().unwrap();
        let raw: u64 = (0..n).map(|i| value(i).len() as u64 + 9).sum();
        assert!(sst_bytes(&db) < raw / 2, "{ty:?}: {} of {raw} bytes", sst_bytes(&db));
    }
    let db = DB::open(&opts, dir.path()).unwrap();
    for i in (0..n).step_by(2) {
        db.put(format!("key{i:06}"), value(i + 1)).unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    drop(db);
    let db = DB::open(&opts, dir.path()).unwrap();
    for i in 0..n {
        let want = if i % 2 == 0 { value(i + 1) } else { value(i) };
        assert_eq!(db.get(format!("key{i:06}")).unwrap(), Some(want), "{ty:?} key {i}");
    }
}

#[test]
fn zlib_tables_round_trip() {
    round_trip(DBCompressionType::Zlib);
}

#[test]
fn bzip2_tables_round_trip() {
    round_trip(DBCompressionType::Bz2);
}

#[test]
fn lz4hc_tables_round_trip() {
    round_trip(DBCompressionType::Lz4hc);
}

#[test]
fn a_block_cache_tier_read_that_needs_a_file_is_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = DB::open_default(dir.path()).unwrap();
        db.put(b"on-disk", b"v1").unwrap();
        db.flush().unwrap();
    }
    let db = DB::open_default(dir.path()).unwrap();
    db.put(b"in-memtable", b"v2").unwrap();
    let mut cached_only = ReadOptions::default();
    cached_only.set_read_tier(ReadTier::BlockCache);
    let e = db.get_opt(b"on-disk", &cached_only).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Incomplete, "{e}");
    assert_eq!(db.get_opt(b"in-memtable", &cached_only).unwrap(), Some(b"v2".to_vec()));
    // A normal read brings the block into the cache; then memory alone answers.
    assert_eq!(db.get(b"on-disk").unwrap(), Some(b"v1".to_vec()));
    assert_eq!(db.get_opt(b"on-disk", &cached_only).unwrap(), Some(b"v1".to_vec()));
}

/// Set while compactions (which write to levels below 0) should take their time.
static SLOW_COMPACTIONS: AtomicBool = AtomicBool::new(false);

#[test]
fn a_no_slowdown_write_fails_instead_of_waiting_in_a_stop() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options {
        // Writes stop whenever L0 holds a file, until compaction moves it down.
        level0_file_num_compaction_trigger: 1,
        level0_slowdown_writes_trigger: 1,
        level0_stop_writes_trigger: 1,
        ..Options::default()
    };
    opts.set_compaction_filter("slow", |level, _k, _v| {
        if level >= 1 && SLOW_COMPACTIONS.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(1_500));
        }
        Decision::Keep
    });
    let db = DB::open(&opts, dir.path()).unwrap();
    db.put(b"a", b"1").unwrap();
    db.put(b"z", b"1").unwrap();
    db.flush().unwrap();
    db.wait_for_compact(&strata::WaitForCompactOptions::default()).unwrap();
    // The next L0 file overlaps L1, so its compaction rewrites (and runs the filter).
    SLOW_COMPACTIONS.store(true, Ordering::Relaxed);
    db.put(b"m", b"2").unwrap();
    db.flush().unwrap();
    let mut no_wait = WriteOptions::default();
    no_wait.set_no_slowdown(true);
    let e = db.put_opt(b"n", b"3", &no_wait).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Incomplete, "{e}");
    assert_eq!(db.get(b"n").unwrap(), None, "a refused write wrote nothing");
    SLOW_COMPACTIONS.store(false, Ordering::Relaxed);
    // A write that may wait goes through once compaction has moved the file.
    db.put(b"n", b"4").unwrap();
    assert_eq!(db.get(b"n").unwrap(), Some(b"4".to_vec()));
}

fn log_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("LOG")).unwrap()
}

#[test]
fn the_log_has_the_lines_rocksdb_tools_grep() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.set_ttl(86_400);
    opts.add_compact_on_deletion_collector_factory(5, 10, 0.5);
    opts.set_experimental_mempurge_threshold(1.0);
    let mut b = BlockBasedOptions::default();
    b.set_cache_index_and_filter_blocks(true);
    b.set_format_version(4);
    b.set_data_block_index_type(DataBlockIndexType::BinaryAndHash);
    b.set_data_block_hash_ratio(0.35);
    opts.set_block_based_table_factory(&b);
    drop(DB::open(&opts, dir.path()).unwrap());
    let log = log_of(dir.path());
    for needle in [
        "Options.ttl: 86400\n",
        "CompactOnDeletionCollector (Sliding window size = 5 Deletion trigger = 10 Deletion \
         ratio = 0.5)",
        "experimental_mempurge_threshold: 1.000000\n",
        "cache_index_and_filter_blocks: 1\n",
        "cache_index_and_filter_blocks_with_high_priority: 1\n",
        "pin_l0_filter_and_index_blocks_in_cache: 0\n",
        "format_version: 4\n",
        "data_block_index_type: 1\n",
        "data_block_hash_table_util_ratio: 0.350000\n",
        "Jemalloc supported: 0",
        "Fast CRC32 supported: ",
        "kBZip2Compression supported: 1",
    ] {
        assert!(log.contains(needle), "LOG lacks {needle:?}:\n{log}");
    }
}

#[test]
fn an_info_logger_takes_the_lines_instead_of_the_log_file() {
    let dir = tempfile::tempdir().unwrap();
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = lines.clone();
    let mut opts = Options::default();
    opts.set_info_logger(InfoLogger::new_callback_logger(LogLevel::Info, move |level, l| {
        assert_eq!(level, LogLevel::Info);
        seen.lock().unwrap().push(l.to_string());
    }));
    assert!(!opts.get_info_logger().is_log_file());
    drop(DB::open(&opts, dir.path()).unwrap());
    assert!(lines.lock().unwrap().iter().any(|l| l.contains("Options.write_buffer_size: ")));
    assert!(!dir.path().join("LOG").exists());
    // A logger above Info hears nothing.
    let quiet = Arc::new(Mutex::new(0usize));
    let q = quiet.clone();
    opts.set_info_logger(InfoLogger::new_callback_logger(LogLevel::Error, move |_, _| {
        *q.lock().unwrap() += 1;
    }));
    drop(DB::open(&opts, dir.path()).unwrap());
    assert_eq!(*quiet.lock().unwrap(), 0);
    assert!(Options::default().get_info_logger().is_log_file());
}

#[test]
fn option_strings_and_load_latest() {
    let mut opts = Options::default();
    opts.set_use_fsync(true);
    let o = opts.get_options_from_string("use_fsync=false;write_buffer_size=1m").unwrap();
    assert!(!o.get_use_fsync());
    assert_eq!(o.write_buffer_size, 1 << 20);
    assert!(opts.get_options_from_string("notarealoptionstring").is_err());
    let e = opts.get_options_from_string("use_fsync=false\0").unwrap_err();
    assert!(e.to_string().contains("must not contain NUL"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    {
        let mut o = Options::default();
        o.create_missing_column_families(true);
        drop(DB::open_cf(&o, dir.path(), ["cf0", "cf1"]).unwrap());
    }
    let (loaded, cfs) =
        Options::load_latest(dir.path(), Env::new().unwrap(), true, Cache::new_lru_cache(8192))
            .unwrap();
    let names: Vec<&str> = cfs.iter().map(|c| c.name()).collect();
    assert_eq!(names, ["default", "cf0", "cf1"]);
    assert_eq!(loaded.block_cache.as_ref().map(|c| c.capacity()), Some(8192));
    assert!(Options::load_latest(
        dir.path().join("nothing"),
        Env::new().unwrap(),
        true,
        Cache::new_lru_cache(8192)
    )
    .is_err());
}

#[test]
fn a_mem_env_db_keeps_nothing_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let env = Env::mem_env().unwrap();
    let mut opts = Options::default();
    opts.set_env(&env);
    {
        let db = DB::open(&opts, &path).unwrap();
        db.put(b"k", b"v").unwrap();
        db.flush().unwrap();
    }
    assert!(!path.exists());
    let db = DB::open(&opts, &path).unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
}

#[test]
#[should_panic(expected = "Lz4 is not supported for WAL compression")]
fn wal_compression_takes_none_or_zstd_only() {
    let mut opts = Options::default();
    opts.set_wal_compression_type(DBCompressionType::None);
    opts.set_wal_compression_type(DBCompressionType::Zstd);
    opts.set_wal_compression_type(DBCompressionType::Lz4);
}
