//! How flushes and compactions write table files (`docs/design.md`, "File I/O of tables"):
//! `bytes_per_sync` hands a table being written to writeback every that many bytes, and a rate
//! limiter bounds the bytes per second written to tables (checked as a lower bound on the time
//! taken: a slow machine only makes it longer). The WAL is not limited.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use strata::env::{FaultFs, FaultOp, MemFs, RateLimiter};
use strata::{Db, Options};

fn fill(db: &Db, n: u32) {
    for i in 0..n {
        db.put(format!("key{i:06}"), vec![b'v'; 200]).unwrap();
    }
}

/// Writeback requests and flushes (both `FaultOp::Flush`) on table files in a flush of
/// `n` 200-byte values.
fn table_flush_ops(bytes_per_sync: u64, n: u32) -> usize {
    let mem = MemFs::new();
    let fs = FaultFs::new(Arc::new(mem), 1);
    let opts = Options {
        fs: Arc::new(fs.clone()),
        bytes_per_sync,
        compression: strata::CompressionType::None,
        ..Options::default()
    };
    let db = Db::open(&opts, PathBuf::from("/db")).unwrap();
    fill(&db, n);
    fs.start_recording();
    db.flush().unwrap();
    fs.recorded()
        .iter()
        .filter(|r| r.op == FaultOp::Flush && r.path.extension().is_some_and(|e| e == "sst"))
        .count()
}

#[test]
fn bytes_per_sync_starts_writeback_as_the_table_grows() {
    // About 2,000 x 220 bytes = 440 KB of table: one writeback per 16 KiB, about 27.
    let without = table_flush_ops(0, 2_000);
    let with = table_flush_ops(16 << 10, 2_000);
    assert!(
        with >= without + 20,
        "{with} flush/writeback calls with bytes_per_sync, {without} without"
    );
}

#[test]
fn the_rate_limiter_bounds_table_writes_not_wal_writes() {
    let limiter = Arc::new(RateLimiter::new(1 << 20));
    let opts = Options {
        fs: Arc::new(MemFs::new()),
        rate_limiter: Some(limiter.clone()),
        compression: strata::CompressionType::None,
        ..Options::default()
    };
    let db = Db::open(&opts, PathBuf::from("/db")).unwrap();
    // 2,500 x ~220 bytes: 550 KB through the WAL, unlimited.
    fill(&db, 2_500);
    // The same bytes into a table at 1 MiB/s, less the 100 ms burst: at least 0.4 s.
    let start = Instant::now();
    db.flush().unwrap();
    let took = start.elapsed().as_secs_f64();
    assert!(took >= 0.4, "a 550 KB table flushed in {took:.3} s under a 1 MiB/s limit");
    for i in (0..2_500).step_by(97) {
        assert_eq!(db.get(format!("key{i:06}")).unwrap().map(|v| v.len()), Some(200));
    }
    assert_eq!(limiter.bytes_per_sec(), 1 << 20);
}
