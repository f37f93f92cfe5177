//! `Options::enable_statistics` and `strata::perf`: the tickers and histograms count a known
//! workload exactly, DBs opened with clones of one `Options` add up in one `Statistics`, the
//! perf context counts per thread, and the memory figures follow the memtables.

use strata::perf::{
    get_memory_usage_stats, set_perf_stats, MemoryUsageBuilder, PerfContext, PerfMetric,
    PerfStatsLevel,
};
use strata::statistics::{Histogram, StatsLevel, Ticker};
use strata::{Cache, Db, IteratorMode, OptimisticTransactionDb, Options};

const N: usize = 100;

fn key(i: usize) -> String {
    format!("k{i:03}")
}

/// Bytes of a one-put write batch: header (12), type (1), key length (1), key, value length
/// (1), value.
fn put_batch_bytes(k: usize, v: usize) -> u64 {
    (12 + 1 + 1 + k + 1 + v) as u64
}

#[test]
fn tickers_and_histograms_count_a_known_workload() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.enable_statistics();
    opts.set_statistics_level(StatsLevel::All);
    let db = Db::open(&opts, dir.path()).unwrap();
    let t = |x: Ticker| opts.get_ticker_count(x);

    for i in 0..N {
        db.put(key(i), b"0123456789").unwrap();
    }
    assert_eq!(t(Ticker::NumberKeysWritten), N as u64);
    assert_eq!(t(Ticker::BytesWritten), N as u64 * put_batch_bytes(4, 10));
    assert_eq!(t(Ticker::WalFileBytes), t(Ticker::BytesWritten));
    assert_eq!(t(Ticker::WriteDoneBySelf), N as u64);
    assert_eq!(t(Ticker::WriteWithWal), N as u64);
    assert_eq!(t(Ticker::WalFileSynced), 0);
    let writes = opts.get_histogram_data(Histogram::DbWrite);
    assert_eq!(writes.count(), N as u64);
    assert!(writes.max() >= 1.0 && writes.median() <= writes.max());
    assert_eq!(opts.get_histogram_data(Histogram::BytesPerWrite).sum(), t(Ticker::BytesWritten));

    // Gets from the memtable: 50 hit, 10 find nothing.
    for i in 0..50 {
        assert!(db.get(key(i)).unwrap().is_some());
    }
    for i in 0..10 {
        assert!(db.get(format!("k{i:03}x")).unwrap().is_none());
    }
    assert_eq!(t(Ticker::NumberKeysRead), 60);
    assert_eq!(t(Ticker::MemtableHit), 50);
    assert_eq!(t(Ticker::MemtableMiss), 10);
    assert_eq!(t(Ticker::BytesRead), 500);
    assert_eq!(opts.get_histogram_data(Histogram::DbGet).count(), 60);

    db.flush().unwrap();
    let sst = db.property_int_value("rocksdb.total-sst-files-size").unwrap().unwrap();
    assert_eq!(t(Ticker::FlushWriteBytes), sst);
    assert_eq!(opts.get_histogram_data(Histogram::FlushTime).count(), 1);

    // Gets from the one L0 table: its one data block is missed once, then hit.
    let mut perf = PerfContext::default();
    perf.reset();
    for i in 0..20 {
        assert!(db.get(key(i)).unwrap().is_some());
    }
    for i in 0..10 {
        assert!(db.get(format!("k{i:03}x")).unwrap().is_none());
    }
    assert_eq!(t(Ticker::MemtableMiss), 40);
    assert_eq!(t(Ticker::GetHitL0), 20);
    assert_eq!(t(Ticker::BloomFilterUseful) + t(Ticker::BloomFilterFullPositive), 30);
    assert!(t(Ticker::BloomFilterFullPositive) >= 20);
    let probes = t(Ticker::BloomFilterFullPositive);
    assert_eq!(t(Ticker::BlockCacheDataMiss), 1);
    assert_eq!(t(Ticker::BlockCacheDataHit), probes - 1);
    assert_eq!(t(Ticker::BlockCacheDataAdd), 1);
    assert_eq!(t(Ticker::BlockCacheMiss), t(Ticker::BlockCacheDataMiss));
    assert_eq!(t(Ticker::BlockCacheHit), t(Ticker::BlockCacheDataHit));
    assert_eq!(t(Ticker::BlockCacheAdd), 1);
    assert!(t(Ticker::BlockCacheDataBytesInsert) > 0);
    // Three blocks were read from the file: the index and filter when the first get opened
    // the table (the reader keeps them), and the data block.
    assert_eq!(opts.get_histogram_data(Histogram::SstReadMicros).count(), 3);
    // The same reads in this thread's perf context.
    assert_eq!(perf.metric(PerfMetric::BlockCacheHitCount), probes - 1);
    assert_eq!(perf.metric(PerfMetric::BlockReadCount), 3);
    assert!(perf.metric(PerfMetric::BlockReadByte) > 0);
    assert_eq!(perf.metric(PerfMetric::GetFromMemtableCount), 30);
    assert_eq!(perf.metric(PerfMetric::GetReadBytes), 200);
    assert_eq!(
        perf.metric(PerfMetric::BloomSstHitCount) + perf.metric(PerfMetric::BloomSstMissCount),
        30
    );
    let expect = format!("block_cache_hit_count = {}", probes - 1);
    assert!(perf.report(true).contains(&expect), "{}", perf.report(true));

    // A full scan: one seek, then a step per entry (the last finds nothing).
    let scanned = db.iterator(IteratorMode::Start).count();
    assert_eq!(scanned, N);
    assert_eq!(t(Ticker::NumberDbSeek), 1);
    assert_eq!(t(Ticker::NumberDbSeekFound), 1);
    assert_eq!(t(Ticker::NumberDbNext), N as u64);
    assert_eq!(t(Ticker::NumberDbNextFound), N as u64 - 1);
    assert_eq!(t(Ticker::IterBytesRead), N as u64 * 14);
    assert_eq!(opts.get_histogram_data(Histogram::DbSeek).count(), 1);

    let dump = opts.get_statistics().unwrap();
    let line = format!("rocksdb.bytes.written COUNT : {}\n", t(Ticker::BytesWritten));
    assert!(dump.contains(&line), "{dump}");
    assert!(dump.contains("rocksdb.db.get.micros P50 : "));
    assert_eq!(db.property_value("rocksdb.options-statistics").unwrap().as_deref(), Some(&*dump));

    // Nothing more is counted at `DisableAll`.
    opts.set_statistics_level(StatsLevel::DisableAll);
    db.put(b"x", b"y").unwrap();
    assert!(db.get(b"x").unwrap().is_some());
    assert_eq!(t(Ticker::NumberKeysWritten), N as u64);
    assert_eq!(opts.get_histogram_data(Histogram::DbWrite).count(), N as u64);
}

#[test]
fn dbs_opened_with_clones_share_one_statistics() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut opts = Options::default();
    opts.enable_statistics();
    let clone = opts.clone();
    {
        let db_a = Db::open(&opts, a.path()).unwrap();
        let db_b = Db::open(&clone, b.path()).unwrap();
        db_a.put(b"k", b"v").unwrap();
        db_b.put(b"k", b"v").unwrap();
        db_b.put(b"l", b"w").unwrap();
    }
    // The counts outlive the DBs.
    assert_eq!(opts.get_ticker_count(Ticker::NumberKeysWritten), 3);
    assert_eq!(clone.get_ticker_count(Ticker::NumberKeysWritten), 3);
    // The default level does not time mutexes but does time operations.
    assert_eq!(opts.get_histogram_data(Histogram::DbWrite).count(), 3);

    let plain = Options::default();
    let c = tempfile::tempdir().unwrap();
    let db = Db::open(&plain, c.path()).unwrap();
    db.put(b"k", b"v").unwrap();
    assert_eq!(plain.get_statistics(), None);
    assert_eq!(plain.get_ticker_count(Ticker::NumberKeysWritten), 0);
    assert_eq!(db.property_value("rocksdb.options-statistics").unwrap(), None);
}

/// rust-rocksdb's `get_statistics_test`, in Strata's names.
#[test]
fn column_family_writes_and_flush_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options {
        create_if_missing: true,
        create_missing_column_families: true,
        ..Options::default()
    };
    opts.enable_statistics();
    opts.set_statistics_level(StatsLevel::All);
    let db = Db::open_cf(&opts, dir.path(), ["cf1"]).unwrap();
    let cf = db.cf_handle("cf1").unwrap();
    let initial = opts.get_ticker_count(Ticker::BytesWritten);
    for k in [b"key1", b"key2", b"key3"] {
        db.put_cf(&cf, k, b"value").unwrap();
    }
    db.flush_cf(&cf).unwrap();
    // A family's put also logs its family id (type, id, key, value).
    let per_put = 12 + 1 + 1 + 1 + 4 + 1 + 5;
    assert_eq!(opts.get_ticker_count(Ticker::BytesWritten) - initial, 3 * per_put);
    let h = opts.get_histogram_data(Histogram::DbWrite);
    assert_eq!(h.count(), 3);
    assert!(h.max().is_normal());
    assert_eq!(opts.get_histogram_data(Histogram::FlushTime).count(), 1);
}

#[test]
fn perf_context_is_per_thread() {
    let dir = tempfile::tempdir().unwrap();
    let db = std::sync::Arc::new(Db::open(&Options::default(), dir.path()).unwrap());
    for i in 0..N {
        db.put(key(i), b"v").unwrap();
    }
    let mut ctx = PerfContext::default();
    ctx.reset();
    for i in 0..10 {
        db.get(key(i)).unwrap();
    }
    assert_eq!(ctx.metric(PerfMetric::GetFromMemtableCount), 10);
    assert_eq!(ctx.metric(PerfMetric::GetReadBytes), 10);
    let other = db.clone();
    std::thread::spawn(move || {
        let mut ctx = PerfContext::default();
        ctx.reset();
        for i in 0..3 {
            other.get(key(i)).unwrap();
        }
        assert_eq!(ctx.metric(PerfMetric::GetFromMemtableCount), 3);
        set_perf_stats(PerfStatsLevel::Disable);
        other.get(key(0)).unwrap();
        assert_eq!(ctx.metric(PerfMetric::GetFromMemtableCount), 3);
    })
    .join()
    .unwrap();
    assert_eq!(ctx.metric(PerfMetric::GetFromMemtableCount), 10);
    // Iterator steps over hidden entries: two older versions of each key.
    for i in 0..N {
        db.put(key(i), b"w").unwrap();
        db.put(key(i), b"x").unwrap();
    }
    ctx.reset();
    assert_eq!(db.iterator(IteratorMode::Start).count(), N);
    assert_eq!(ctx.metric(PerfMetric::InternalKeySkippedCount), 2 * N as u64);
    assert_eq!(ctx.metric(PerfMetric::IterReadBytes), N as u64 * 5);
}

#[test]
fn memory_usage_follows_the_memtables_and_caches() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::new_lru(1 << 20);
    let opts = Options { block_cache: Some(cache.clone()), ..Options::default() };
    let db = Db::open(&opts, dir.path()).unwrap();

    // An empty DB has its empty memtable; an empty cache has its tables.
    let empty = get_memory_usage_stats(Some(&[&db]), Some(&[&cache])).unwrap();
    assert!(empty.mem_table_total > 0);
    assert_eq!(empty.mem_table_unflushed, empty.mem_table_total);
    assert_eq!(empty.mem_table_readers_total, 0);
    assert!(empty.cache_total > 0);

    for i in 0..2000 {
        db.put(key(i), [b'v'; 100]).unwrap();
    }
    let full = get_memory_usage_stats(Some(&[&db]), None).unwrap();
    assert!(full.mem_table_total > empty.mem_table_total + 2000 * 100);
    assert_eq!(full.cache_total, 0);

    db.flush().unwrap();
    let flushed = get_memory_usage_stats(Some(&[&db]), None).unwrap();
    // What the flushed memtable held is gone (an empty memtable keeps its Bloom filter).
    assert!(full.mem_table_total - flushed.mem_table_total >= 2000 * 100);

    let before_reads = get_memory_usage_stats(None, Some(&[&cache, &cache])).unwrap();
    for i in 0..2000 {
        db.get(key(i)).unwrap();
    }
    let after_reads = get_memory_usage_stats(None, Some(&[&cache])).unwrap();
    assert!(after_reads.cache_total > before_reads.cache_total);
    assert!(after_reads.cache_total as usize >= cache.usage());
    // The reads opened the table: its reader's index and filter are held outside the cache.
    let readers = get_memory_usage_stats(Some(&[&db]), None).unwrap().mem_table_readers_total;
    assert!(readers > 0);

    // The builder borrows the DB; a transaction DB is given as the DB it wraps.
    let t = tempfile::tempdir().unwrap();
    let txn_db = OptimisticTransactionDb::open(&Options::default(), t.path()).unwrap();
    let mut builder = MemoryUsageBuilder::new().unwrap();
    builder.add_db(&db);
    builder.add_db(&txn_db);
    builder.add_cache(&cache);
    let usage = builder.build().unwrap();
    assert!(usage.approximate_mem_table_total() > flushed.mem_table_total);
    assert_eq!(usage.approximate_mem_table_unflushed(), usage.approximate_mem_table_total());
    assert_eq!(usage.approximate_mem_table_readers_total(), readers);
    assert_eq!(usage.approximate_cache_total(), after_reads.cache_total);
}

/// The statistics history (`Db::get_stats_history`, `db/stats_history.rs`): every
/// `stats_persist_period_sec` a record of each ticker's change since the last; records read
/// by time range; none without statistics or past `stats_history_buffer_size`.
#[test]
fn the_stats_history_records_changes_per_period() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options { create_if_missing: true, ..Options::default() };
    opts.enable_statistics();
    opts.set_stats_persist_period_sec(1);
    let db = Db::open(&opts, dir.path().join("a")).unwrap();
    let written = Ticker::NumberKeysWritten.name();
    // Writes until a record shows some of them (the first round only takes the counts).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut total = 0u64;
    let records = loop {
        for i in 0..10 {
            db.put(key(i), "v").unwrap();
        }
        total += 10;
        let mut it = db.get_stats_history(0, u64::MAX).unwrap();
        let mut records = Vec::new();
        while it.valid() {
            records.push((it.stats_time(), it.stats_map()));
            it.next();
        }
        it.status().unwrap();
        if records.iter().any(|(_, m)| m[written] > 0) {
            break records;
        }
        assert!(std::time::Instant::now() < deadline, "no record after 20 s: {records:?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let sum: u64 = records.iter().map(|(_, m)| m[written]).sum();
    assert!(sum <= total, "changes, not totals: {sum} of {total} writes");
    assert!(records.windows(2).all(|w| w[0].0 < w[1].0), "oldest first");
    assert_eq!(records[0].1.len(), Ticker::iter().count(), "every ticker by name");
    // One record by its time range; none in an empty range; a reversed range refused.
    let (t, _) = records[0];
    let mut one = db.get_stats_history(t, t + 1).unwrap();
    assert!(one.valid() && one.stats_time() == t);
    one.next();
    assert!(!one.valid());
    assert!(!db.get_stats_history(t, t).unwrap().valid());
    assert!(matches!(db.get_stats_history(t + 1, t), Err(strata::Error::InvalidArgument(_))));
    drop(db);
    // Without room for one record, or without statistics, none is kept.
    let mut small = opts.clone();
    small.set_stats_history_buffer_size(1);
    let mut plain = Options { create_if_missing: true, ..Options::default() };
    plain.set_stats_persist_period_sec(1);
    let dbs = [
        Db::open(&small, dir.path().join("b")).unwrap(),
        Db::open(&plain, dir.path().join("c")).unwrap(),
    ];
    for _ in 0..3 {
        for db in &dbs {
            db.put("k", "v").unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(1100));
    }
    for db in &dbs {
        assert!(!db.get_stats_history(0, u64::MAX).unwrap().valid());
    }
}
