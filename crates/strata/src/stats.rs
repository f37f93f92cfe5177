//! Counters of the DB's work and the `strata.stats` report, laid out as RocksDB's
//! `rocksdb.stats` (compaction-stats table, cumulative/interval lines, stall counts) so tools
//! that parse RocksDB's output (db_bench, benchmark.sh) read Strata's.
//!
//! Write-path counters are bumped once per write group by its leader; compaction counters once
//! per job: nothing here is touched per key on a hot path.
//!
//! The same increments feed the user's `Statistics` when the DB has one (`Stats::statistics`):
//! each counter here that RocksDB also has as a ticker is added to that ticker at the same
//! place, so the two never disagree on what was counted.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::statistics::{Statistics, Ticker as StatTicker};

use parking_lot::Mutex;

/// What one level's compactions (and, for L0, flushes) did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct LevelStats {
    pub micros: u64,
    pub cpu_micros: u64,
    pub count: u64,
    pub bytes_read_non_output: u64,
    pub bytes_read_output: u64,
    pub bytes_written: u64,
    pub bytes_moved: u64,
    pub input_records: u64,
    pub dropped_records: u64,
    /// Bytes written to blob files (RocksDB's `Wblob`).
    pub bytes_written_blob: u64,
    /// Bytes read from blob files by garbage collection (RocksDB's `Rblob`).
    pub bytes_read_blob: u64,
}

impl LevelStats {
    fn add(&mut self, o: &LevelStats) {
        self.micros += o.micros;
        self.cpu_micros += o.cpu_micros;
        self.count += o.count;
        self.bytes_read_non_output += o.bytes_read_non_output;
        self.bytes_read_output += o.bytes_read_output;
        self.bytes_written += o.bytes_written;
        self.bytes_moved += o.bytes_moved;
        self.input_records += o.input_records;
        self.dropped_records += o.dropped_records;
        self.bytes_written_blob += o.bytes_written_blob;
        self.bytes_read_blob += o.bytes_read_blob;
    }

    fn minus(&self, o: &LevelStats) -> LevelStats {
        LevelStats {
            micros: self.micros - o.micros,
            cpu_micros: self.cpu_micros - o.cpu_micros,
            count: self.count - o.count,
            bytes_read_non_output: self.bytes_read_non_output - o.bytes_read_non_output,
            bytes_read_output: self.bytes_read_output - o.bytes_read_output,
            bytes_written: self.bytes_written - o.bytes_written,
            bytes_moved: self.bytes_moved - o.bytes_moved,
            input_records: self.input_records - o.input_records,
            dropped_records: self.dropped_records - o.dropped_records,
            bytes_written_blob: self.bytes_written_blob - o.bytes_written_blob,
            bytes_read_blob: self.bytes_read_blob - o.bytes_read_blob,
        }
    }
}

/// Why a write was stalled. The order is the 7.8 `Stalls(count):` line's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stall {
    Level0Slowdown = 0,
    Level0SlowdownWithCompaction = 1,
    Level0NumFiles = 2,
    Level0NumFilesWithCompaction = 3,
    StopPendingCompactionBytes = 4,
    SlowdownPendingCompactionBytes = 5,
    MemtableStop = 6,
    MemtableSlowdown = 7,
    /// Writes waited for the memtables of the DBs sharing a write buffer manager to free
    /// memory below its budget.
    WriteBufferManager = 8,
}

const STALL_KINDS: usize = 9;

/// Event counters in the spirit of RocksDB's tickers. Each thread adds to one of a few
/// cache-line-aligned shards, so counting on the read path does not bounce a shared line
/// between cores; reading sums the shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ticker {
    KeysRead = 0,
    BytesRead,
    KeysWritten,
    BytesWritten,
    MemtableHit,
    MemtableMiss,
    GetHitL0,
    GetHitL1,
    GetHitL2AndUp,
    BloomUseful,
    BloomChecked,
}

const NUM_TICKERS: usize = 11;

impl Ticker {
    /// The `Statistics` ticker this counter feeds.
    const fn public(self) -> StatTicker {
        match self {
            Ticker::KeysRead => StatTicker::NumberKeysRead,
            Ticker::BytesRead => StatTicker::BytesRead,
            Ticker::KeysWritten => StatTicker::NumberKeysWritten,
            Ticker::BytesWritten => StatTicker::BytesWritten,
            Ticker::MemtableHit => StatTicker::MemtableHit,
            Ticker::MemtableMiss => StatTicker::MemtableMiss,
            Ticker::GetHitL0 => StatTicker::GetHitL0,
            Ticker::GetHitL1 => StatTicker::GetHitL1,
            Ticker::GetHitL2AndUp => StatTicker::GetHitL2AndUp,
            Ticker::BloomUseful => StatTicker::BloomFilterUseful,
            Ticker::BloomChecked => StatTicker::BloomFilterFullPositive,
        }
    }
}
const TICKER_SHARDS: usize = 16;

/// RocksDB's names for the tickers, in `Ticker` order.
const TICKER_NAMES: [&str; NUM_TICKERS] = [
    "rocksdb.number.keys.read",
    "rocksdb.bytes.read",
    "rocksdb.number.keys.written",
    "rocksdb.bytes.written",
    "rocksdb.memtable.hit",
    "rocksdb.memtable.miss",
    "rocksdb.l0.hit",
    "rocksdb.l1.hit",
    "rocksdb.l2andup.hit",
    "rocksdb.bloom.filter.useful",
    "rocksdb.bloom.filter.full.positive",
];

#[repr(align(64))]
#[derive(Default)]
struct TickerShard([AtomicU64; NUM_TICKERS]);

pub(crate) struct Tickers {
    shards: Box<[TickerShard]>,
    /// The user's statistics, fed the same counts.
    statistics: Option<Arc<Statistics>>,
}

thread_local! {
    static TICKER_SHARD: usize = {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        (NEXT.fetch_add(1, Ordering::Relaxed) as usize) % TICKER_SHARDS
    };
}

impl Tickers {
    fn new(statistics: Option<Arc<Statistics>>) -> Self {
        Tickers { shards: (0..TICKER_SHARDS).map(|_| TickerShard::default()).collect(), statistics }
    }

    #[inline]
    pub fn add(&self, t: Ticker, n: u64) {
        let shard = TICKER_SHARD.with(|s| *s);
        self.shards[shard].0[t as usize].fetch_add(n, Ordering::Relaxed);
        if let Some(s) = &self.statistics {
            s.tick(t.public(), n);
        }
    }

    /// The count of `t`, over the shards.
    pub fn get(&self, t: Ticker) -> u64 {
        self.shards.iter().map(|s| s.0[t as usize].load(Ordering::Relaxed)).sum()
    }
}

/// What every write group adds to ([`WriteCounters::add_group`]), in one shard: most writes
/// are a group of their own (`db/write/mod.rs`), and writers on several cores adding to one
/// set of counters would take turns with its cache line at every write. A group's keys and
/// bytes are the `KeysWritten` and `BytesWritten` tickers, not counted again here.
#[repr(align(64))]
#[derive(Default)]
struct GroupShard {
    writes: AtomicU64,
    groups: AtomicU64,
    wal_writes: AtomicU64,
    wal_bytes: AtomicU64,
}

/// Write-path counters.
pub(crate) struct WriteCounters {
    /// Per-group counts, sharded as the tickers are (by thread), summed when read.
    shards: Box<[GroupShard]>,
    pub wal_syncs: AtomicU64,
    pub stall_micros: AtomicU64,
    /// Batches their own writer inserted into the memtable as a group member
    /// (`allow_concurrent_memtable_write`, `unordered_write`).
    pub member_inserts: AtomicU64,
    /// Groups published by another group's writer: they finished before an earlier group
    /// (`db/write/mod.rs`, `publish_in_order`).
    pub published_by_other: AtomicU64,
}

impl Default for WriteCounters {
    fn default() -> Self {
        WriteCounters {
            shards: (0..TICKER_SHARDS).map(|_| GroupShard::default()).collect(),
            wal_syncs: AtomicU64::default(),
            stall_micros: AtomicU64::default(),
            member_inserts: AtomicU64::default(),
            published_by_other: AtomicU64::default(),
        }
    }
}

#[derive(Clone, Copy, Default)]
struct WriteSnapshot {
    writes: u64,
    keys: u64,
    groups: u64,
    ingest_bytes: u64,
    wal_writes: u64,
    wal_syncs: u64,
    wal_bytes: u64,
    stall_micros: u64,
}

impl WriteCounters {
    /// One published group: `writers` writes of `bytes` bytes in all, `logged` when it went
    /// to the WAL (its keys and bytes go to the tickers: `db/write/mod.rs`, `count_group`).
    pub(crate) fn add_group(&self, writers: u64, bytes: u64, logged: bool) {
        let s = &self.shards[TICKER_SHARD.with(|s| *s)];
        s.writes.fetch_add(writers, Ordering::Relaxed);
        s.groups.fetch_add(1, Ordering::Relaxed);
        if logged {
            s.wal_writes.fetch_add(writers, Ordering::Relaxed);
            s.wal_bytes.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// The counts now, with the keys and bytes written from `tickers`.
    fn snapshot(&self, tickers: &Tickers) -> WriteSnapshot {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let sum = |f: fn(&GroupShard) -> &AtomicU64| self.shards.iter().map(|s| g(f(s))).sum();
        WriteSnapshot {
            writes: sum(|s| &s.writes),
            keys: tickers.get(Ticker::KeysWritten),
            groups: sum(|s| &s.groups),
            ingest_bytes: tickers.get(Ticker::BytesWritten),
            wal_writes: sum(|s| &s.wal_writes),
            wal_syncs: g(&self.wal_syncs),
            wal_bytes: sum(|s| &s.wal_bytes),
            stall_micros: g(&self.stall_micros),
        }
    }
}

/// The last dump's values, for the "interval" figures.
#[derive(Clone, Default)]
struct Interval {
    at_secs: f64,
    levels: Vec<LevelStats>,
    flush_bytes: u64,
    writes: WriteSnapshot,
    stalls: u64,
}

pub(crate) struct Stats {
    start: Instant,
    levels: Mutex<Vec<LevelStats>>,
    pub flush_bytes: AtomicU64,
    pub write: WriteCounters,
    stalls: [AtomicU64; STALL_KINDS],
    last_dump: Mutex<Interval>,
    pub tickers: Tickers,
}

/// The blob files of the current version, for the report's `Blob file count` line: how
/// many, their bytes, and the garbage among them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BlobShape {
    pub files: usize,
    pub bytes: u64,
    pub garbage: u64,
}

/// Per-level facts the report needs from the current version.
pub(crate) struct LevelShape {
    pub files: usize,
    pub being_compacted: usize,
    pub bytes: u64,
    pub score: f64,
}

impl Stats {
    /// Counters for a DB (or family) of `num_levels` levels, feeding `statistics`.
    pub fn new(num_levels: usize, statistics: Option<Arc<Statistics>>) -> Stats {
        Stats {
            start: Instant::now(),
            levels: Mutex::new(vec![LevelStats::default(); num_levels]),
            flush_bytes: AtomicU64::new(0),
            write: WriteCounters::default(),
            stalls: Default::default(),
            last_dump: Mutex::new(Interval {
                levels: vec![LevelStats::default(); num_levels],
                ..Interval::default()
            }),
            tickers: Tickers::new(statistics),
        }
    }

    /// The user's statistics this DB records into, if any.
    #[inline]
    pub fn user_statistics(&self) -> Option<&Arc<Statistics>> {
        self.tickers.statistics.as_ref()
    }

    /// Adds `n` to `ticker` of the user's statistics, if any.
    #[inline]
    pub fn tick(&self, ticker: StatTicker, n: u64) {
        if let Some(s) = &self.tickers.statistics {
            s.tick(ticker, n);
        }
    }

    /// Adds one compaction's (or flush's, at level 0) figures to `level`.
    pub fn add_compaction(&self, level: usize, s: &LevelStats) {
        if let Some(l) = self.levels.lock().get_mut(level) {
            l.add(s);
        }
    }

    pub fn record_stall(&self, kind: Stall, micros: u64) {
        self.stalls[kind as usize].fetch_add(1, Ordering::Relaxed);
        self.add_stall_micros(micros);
    }

    /// Stalls of `kind` so far.
    pub fn stall_count(&self, kind: Stall) -> u64 {
        self.stalls[kind as usize].load(Ordering::Relaxed)
    }

    pub fn add_stall_micros(&self, micros: u64) {
        self.write.stall_micros.fetch_add(micros, Ordering::Relaxed);
        self.tick(StatTicker::StallMicros, micros);
    }

    pub fn level_stats(&self) -> Vec<LevelStats> {
        self.levels.lock().clone()
    }

    /// RocksDB's `--statistics` ticker dump (`name COUNT : n` lines). `extra` adds tickers kept
    /// elsewhere (block cache, stall time).
    pub fn statistics(&self, extra: &[(&str, u64)]) -> String {
        let mut rows: Vec<(&str, u64)> = TICKER_NAMES
            .iter()
            .enumerate()
            .map(|(i, n)| {
                (*n, self.tickers.shards.iter().map(|s| s.0[i].load(Ordering::Relaxed)).sum())
            })
            .collect();
        rows.extend_from_slice(extra);
        rows.push(("rocksdb.stall.micros", self.write.stall_micros.load(Ordering::Relaxed)));
        let flushed = self.flush_bytes.load(Ordering::Relaxed);
        rows.push(("rocksdb.flush.write.bytes", flushed));
        // Every level's writes but the flushes: compactions may output into L0 (universal,
        // tiered and FIFO merge L0 files into one).
        // Blob files included on both sides (`flush_bytes` counts a flush's blob files).
        let all_written: u64 =
            self.levels.lock().iter().map(|l| l.bytes_written + l.bytes_written_blob).sum();
        let compact_written = all_written.saturating_sub(flushed);
        rows.push(("rocksdb.compact.write.bytes", compact_written));
        rows.push(("rocksdb.wal.synced", self.write.wal_syncs.load(Ordering::Relaxed)));
        let w = self.write.snapshot(&self.tickers);
        rows.push(("rocksdb.wal.bytes", w.wal_bytes));
        let groups = w.groups;
        rows.push(("rocksdb.write.self", groups));
        rows.push(("rocksdb.write.other", w.writes.saturating_sub(groups)));
        rows.push((
            "strata.write.member.inserts",
            self.write.member_inserts.load(Ordering::Relaxed),
        ));
        rows.push((
            "strata.write.published.by.other",
            self.write.published_by_other.load(Ordering::Relaxed),
        ));
        rows.sort_by_key(|r| r.0);
        let mut s = String::new();
        for (name, v) in rows {
            let _ = writeln!(s, "{name} COUNT : {v}");
        }
        s
    }

    /// The `strata.stats` report of column family `family` (these are its stats): its
    /// compaction stats table and summary lines, then, with `db_wide` (the `default`
    /// family's report, as RocksDB prints it), the DB-wide write and stall section.
    /// `shape` has one entry per level. Advances the interval.
    pub fn report(
        &self,
        family: &str,
        shape: &[LevelShape],
        pending_compaction_bytes: u64,
        blobs: BlobShape,
        db_wide: bool,
    ) -> String {
        let now = self.start.elapsed().as_secs_f64();
        let levels = self.level_stats();
        let flush = self.flush_bytes.load(Ordering::Relaxed);
        let writes = self.write.snapshot(&self.tickers);
        let stall_counts: Vec<u64> =
            self.stalls.iter().map(|a| a.load(Ordering::Relaxed)).collect();
        let total_stalls: u64 = stall_counts.iter().sum();
        let mut last = self.last_dump.lock();
        let interval_secs = (now - last.at_secs).max(0.0);
        let mut s = String::new();

        // ---- Compaction stats table.
        let header = format!(
            "{}    {}   {}     {} {}  {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
            "Level",
            "Files",
            "Size",
            "Score",
            "Read(GB)",
            "Rn(GB)",
            "Rnp1(GB)",
            "Write(GB)",
            "Wnew(GB)",
            "Moved(GB)",
            "W-Amp",
            "Rd(MB/s)",
            "Wr(MB/s)",
            "Comp(sec)",
            "CompMergeCPU(sec)",
            "Comp(cnt)",
            "Avg(sec)",
            "KeyIn",
            "KeyDrop",
            "Rblob(GB)",
            "Wblob(GB)"
        );
        let _ = write!(
            s,
            "\n** Compaction Stats [{family}] **\n{header}\n{}\n",
            "-".repeat(header.len() + 1)
        );
        let mut sum = LevelStats::default();
        let (mut files, mut busy, mut bytes) = (0usize, 0usize, 0u64);
        for (l, st) in levels.iter().enumerate() {
            let sh = shape.get(l);
            let f = sh.map_or(0, |x| x.files);
            if f == 0 && st.micros == 0 && st.count == 0 {
                continue;
            }
            let (fb, b, score) = sh.map_or((0, 0, 0.0), |x| (x.being_compacted, x.bytes, x.score));
            files += f;
            busy += fb;
            bytes += b;
            sum.add(st);
            // As RocksDB: bytes written to tables and blob files, over the bytes that came in.
            let written = st.bytes_written + st.bytes_written_blob;
            let wamp = if l == 0 {
                ratio(written, flush)
            } else {
                ratio(written, st.bytes_read_non_output)
            };
            level_row(&mut s, &format!("L{l}"), f, fb, b, score, st, wamp);
        }
        let sum_written = sum.bytes_written + sum.bytes_written_blob;
        level_row(&mut s, "Sum", files, busy, bytes, 0.0, &sum, ratio(sum_written, flush));
        let mut int_sum = LevelStats::default();
        for (l, st) in levels.iter().enumerate() {
            let prev = last.levels.get(l).copied().unwrap_or_default();
            int_sum.add(&st.minus(&prev));
        }
        let int_flush = flush - last.flush_bytes;
        let int_written = int_sum.bytes_written + int_sum.bytes_written_blob;
        level_row(&mut s, "Int", 0, 0, 0, 0.0, &int_sum, ratio(int_written, int_flush));
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let live = blobs.bytes.saturating_sub(blobs.garbage);
        let _ = writeln!(
            s,
            "\nBlob file count: {}, total size: {:.1} GB, garbage size: {:.1} GB, space amp: {:.1}",
            blobs.files,
            gib(blobs.bytes),
            gib(blobs.garbage),
            if live == 0 { 0.0 } else { blobs.bytes as f64 / live as f64 }
        );

        // ---- Summary lines.
        let gb = |b: u64| b as f64 / (1u64 << 30) as f64;
        let mbps = |b: u64, secs: f64| if secs > 0.0 { b as f64 / 1048576.0 / secs } else { 0.0 };
        let _ = writeln!(s, "\nUptime(secs): {now:.1} total, {interval_secs:.1} interval");
        let _ =
            writeln!(s, "Flush(GB): cumulative {:.3}, interval {:.3}", gb(flush), gb(int_flush));
        let _ = writeln!(s, "AddFile(GB): cumulative 0.000, interval 0.000");
        let _ = writeln!(s, "AddFile(Total Files): cumulative 0, interval 0");
        let _ = writeln!(s, "AddFile(L0 Files): cumulative 0, interval 0");
        let _ = writeln!(s, "AddFile(Keys): cumulative 0, interval 0");
        let read_all = sum.bytes_read_non_output + sum.bytes_read_output;
        let _ = writeln!(
            s,
            "Cumulative compaction: {:.2} GB write, {:.2} MB/s write, {:.2} GB read, {:.2} MB/s read, {:.1} seconds",
            gb(sum.bytes_written),
            mbps(sum.bytes_written, now),
            gb(read_all),
            mbps(read_all, now),
            sum.micros as f64 / 1e6
        );
        let int_read = int_sum.bytes_read_non_output + int_sum.bytes_read_output;
        let _ = writeln!(
            s,
            "Interval compaction: {:.2} GB write, {:.2} MB/s write, {:.2} GB read, {:.2} MB/s read, {:.1} seconds",
            gb(int_sum.bytes_written),
            mbps(int_sum.bytes_written, interval_secs),
            gb(int_read),
            mbps(int_read, interval_secs),
            int_sum.micros as f64 / 1e6
        );
        let _ = writeln!(s, "Estimated pending compaction bytes: {pending_compaction_bytes}");
        let c = |k: Stall| stall_counts[k as usize];
        let _ = writeln!(
            s,
            "Stalls(count): {} level0_slowdown, {} level0_slowdown_with_compaction, {} level0_numfiles, {} level0_numfiles_with_compaction, {} stop for pending_compaction_bytes, {} slowdown for pending_compaction_bytes, {} memtable_compaction, {} memtable_slowdown, interval {} total count",
            c(Stall::Level0Slowdown),
            c(Stall::Level0SlowdownWithCompaction),
            c(Stall::Level0NumFiles),
            c(Stall::Level0NumFilesWithCompaction),
            c(Stall::StopPendingCompactionBytes),
            c(Stall::SlowdownPendingCompactionBytes),
            c(Stall::MemtableStop),
            c(Stall::MemtableSlowdown),
            total_stalls - last.stalls
        );
        let _ = writeln!(
            s,
            "Write Stall (count): write-buffer-manager-limit-stops: {}",
            c(Stall::WriteBufferManager)
        );

        // ---- DB stats.
        let w = writes;
        let iw = WriteSnapshot {
            writes: w.writes - last.writes.writes,
            keys: w.keys - last.writes.keys,
            groups: w.groups - last.writes.groups,
            ingest_bytes: w.ingest_bytes - last.writes.ingest_bytes,
            wal_writes: w.wal_writes - last.writes.wal_writes,
            wal_syncs: w.wal_syncs - last.writes.wal_syncs,
            wal_bytes: w.wal_bytes - last.writes.wal_bytes,
            stall_micros: w.stall_micros - last.writes.stall_micros,
        };
        if db_wide {
            let _ = write!(
                s,
                "\n** DB Stats **\nUptime(secs): {now:.1} total, {interval_secs:.1} interval\n"
            );
            write_db_lines(&mut s, "Cumulative", &w, now, true);
            write_db_lines(&mut s, "Interval", &iw, interval_secs, false);
        }

        *last =
            Interval { at_secs: now, levels, flush_bytes: flush, writes: w, stalls: total_stalls };
        s
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// RocksDB's `BytesToHumanString`: two decimals in KB, MB, GB or TB (at least KB).
pub(crate) fn human_bytes(b: u64) -> String {
    let b = b as f64;
    let (v, unit) = if b >= (1u64 << 40) as f64 {
        (b / (1u64 << 40) as f64, "TB")
    } else if b >= (1u64 << 30) as f64 {
        (b / (1u64 << 30) as f64, "GB")
    } else if b >= (1u64 << 20) as f64 {
        (b / (1u64 << 20) as f64, "MB")
    } else {
        (b / 1024.0, "KB")
    };
    format!("{v:.2} {unit}")
}

/// RocksDB's `NumberToHumanString`: plain below 10000, then K, M, G by integer division.
pub(crate) fn human_number(n: u64) -> String {
    if n < 10_000 {
        n.to_string()
    } else if n < 10_000_000 {
        format!("{}K", n / 1000)
    } else if n < 10_000_000_000 {
        format!("{}M", n / 1_000_000)
    } else {
        format!("{}G", n / 1_000_000_000)
    }
}

/// `HH:MM:SS.sss H:M:S` as RocksDB prints stall time.
fn human_micros(micros: u64) -> String {
    let secs = micros / 1_000_000;
    let h = secs / 3600;
    let m = (secs / 60) % 60;
    let s = (micros % 60_000_000) as f64 / 1e6;
    format!("{h:02}:{m:02}:{s:05.3} H:M:S")
}

#[allow(clippy::too_many_arguments)] // one printf row of the RocksDB table
fn level_row(
    s: &mut String,
    name: &str,
    files: usize,
    being_compacted: usize,
    bytes: u64,
    score: f64,
    st: &LevelStats,
    wamp: f64,
) {
    let gb = |b: u64| b as f64 / (1u64 << 30) as f64;
    let read = st.bytes_read_non_output + st.bytes_read_output;
    let secs = (st.micros + 1) as f64 / 1e6;
    let _ = writeln!(
        s,
        "{:>4} {:>6}/{:<3} {:>10} {:5.1} {:8.1} {:7.1} {:8.1} {:9.1} {:8.1} {:9.1} {:5.1} {:8.1} {:8.1} {:9.2} {:17.2} {:9} {:8.3} {:>7} {:>6} {:9.1} {:9.1}",
        name,
        files,
        being_compacted,
        human_bytes(bytes),
        score,
        gb(read),
        gb(st.bytes_read_non_output),
        gb(st.bytes_read_output),
        gb(st.bytes_written),
        gb(st.bytes_written.saturating_sub(st.bytes_read_output)),
        gb(st.bytes_moved),
        wamp,
        read as f64 / 1048576.0 / secs,
        st.bytes_written as f64 / 1048576.0 / secs,
        st.micros as f64 / 1e6,
        st.cpu_micros as f64 / 1e6,
        st.count,
        if st.count == 0 { 0.0 } else { st.micros as f64 / 1e6 / st.count as f64 },
        human_number(st.input_records),
        human_number(st.dropped_records),
        gb(st.bytes_read_blob),
        gb(st.bytes_written_blob)
    );
}

fn write_db_lines(s: &mut String, what: &str, w: &WriteSnapshot, secs: f64, cumulative: bool) {
    let per_group = if w.groups == 0 { 0.0 } else { w.writes as f64 / w.groups as f64 };
    let rate = |b: u64| if secs > 0.0 { b as f64 / 1048576.0 / secs } else { 0.0 };
    let ingest = if cumulative {
        format!("{:.2} GB", w.ingest_bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.2} MB", w.ingest_bytes as f64 / 1048576.0)
    };
    let _ = writeln!(
        s,
        "{what} writes: {} writes, {} keys, {} commit groups, {per_group:.1} writes per commit group, ingest: {ingest}, {:.2} MB/s",
        human_number(w.writes),
        human_number(w.keys),
        human_number(w.groups),
        rate(w.ingest_bytes)
    );
    let per_sync = w.wal_writes as f64 / w.wal_syncs.max(1) as f64;
    let _ = writeln!(
        s,
        "{what} WAL: {} writes, {} syncs, {per_sync:.2} writes per sync, written: {:.2} GB, {:.2} MB/s",
        human_number(w.wal_writes),
        human_number(w.wal_syncs),
        w.wal_bytes as f64 / (1u64 << 30) as f64,
        rate(w.wal_bytes)
    );
    let pct = if secs > 0.0 { w.stall_micros as f64 / 10_000.0 / secs } else { 0.0 };
    let _ = writeln!(s, "{what} stall: {}, {pct:.1} percent", human_micros(w.stall_micros));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_formats_match_rocksdb() {
        assert_eq!(human_bytes(0), "0.00 KB");
        assert_eq!(human_bytes(2_642_412), "2.52 MB");
        assert_eq!(human_number(9999), "9999");
        assert_eq!(human_number(600_000), "600K");
        assert_eq!(human_number(12_345_678), "12M");
        assert_eq!(human_micros(363_000), "00:00:0.363 H:M:S");
        assert_eq!(human_micros(3_723_500_000), "01:02:3.500 H:M:S");
    }

    #[test]
    fn tickers_sum_across_threads() {
        let st = Stats::new(2, None);
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    for _ in 0..1000 {
                        st.tickers.add(Ticker::KeysRead, 1);
                    }
                });
            }
        });
        st.tickers.add(Ticker::BloomUseful, 7);
        assert_eq!(st.tickers.get(Ticker::KeysRead), 4000);
        let dump = st.statistics(&[("rocksdb.block.cache.hit", 3)]);
        assert!(dump.contains("rocksdb.number.keys.read COUNT : 4000\n"), "{dump}");
        assert!(dump.contains("rocksdb.bloom.filter.useful COUNT : 7\n"));
        assert!(dump.contains("rocksdb.block.cache.hit COUNT : 3\n"));
    }

    #[test]
    fn report_has_the_lines_benchmark_sh_parses() {
        let st = Stats::new(3, None);
        st.flush_bytes.fetch_add(1 << 20, Ordering::Relaxed);
        st.add_compaction(
            0,
            &LevelStats { bytes_written: 1 << 20, count: 1, micros: 1000, ..LevelStats::default() },
        );
        st.add_compaction(
            2,
            &LevelStats {
                bytes_read_non_output: 1 << 20,
                bytes_written: 3 << 20,
                count: 1,
                micros: 5000,
                input_records: 20_000,
                dropped_records: 500,
                bytes_read_blob: 1 << 29,
                bytes_written_blob: 1 << 29,
                ..LevelStats::default()
            },
        );
        st.record_stall(Stall::Level0Slowdown, 363_000);
        st.write.shards[0].writes.fetch_add(600_000, Ordering::Relaxed);
        st.write.shards[0].groups.fetch_add(600_000, Ordering::Relaxed);
        // A group's keys and bytes are the tickers' (counted once, on the write path).
        st.tickers.add(Ticker::KeysWritten, 1_200_000);
        st.tickers.add(Ticker::BytesWritten, 3 << 30);
        let shape = [
            LevelShape { files: 3, being_compacted: 0, bytes: 2_642_412, score: 0.75 },
            LevelShape { files: 0, being_compacted: 0, bytes: 0, score: 0.0 },
            LevelShape { files: 10, being_compacted: 1, bytes: 20 << 20, score: 0.0 },
        ];
        let blobs = BlobShape { files: 14, bytes: 3 << 29, garbage: 1 << 29 };
        let r = st.report("default", &shape, 0, blobs, true);
        assert!(r.contains("** Compaction Stats [default] **"));
        let lines: Vec<&str> = r.lines().collect();
        let sum = lines.iter().find(|l| l.trim_start().starts_with("Sum")).unwrap();
        let fields: Vec<&str> = sum.split_whitespace().collect();
        // W-Amp is the 12th field of the Sum row: (1 + 3 + 512) MB written to tables and
        // blob files / 1 MB flushed; Rblob and Wblob the last two (GB).
        assert_eq!(fields[11], "516.0", "{sum}");
        assert_eq!(fields[fields.len() - 2..], ["0.5", "0.5"], "{sum}");
        assert!(
            r.contains(
                "Blob file count: 14, total size: 1.5 GB, garbage size: 0.5 GB, space amp: 1.5"
            ),
            "{r}"
        );
        assert!(lines.iter().any(|l| l.starts_with("  L0      3/0      2.52 MB   0.8")), "{r}");
        assert!(r.contains("Cumulative stall: 00:00:0.363 H:M:S"));
        assert!(r.contains("Stalls(count): 1 level0_slowdown, 0 level0_slowdown_with_compaction"));
        assert!(
            r.contains("Cumulative writes: 600K writes, 1200K keys, 600K commit groups"),
            "{r}"
        );
        assert!(r.contains("ingest: 3.00 GB"), "{r}");
        assert!(r.contains("  L2     10/1 "));
        assert!(r.contains("   20K    500"), "{r}");
    }

    /// A compaction whose output stays in L0 (universal, tiered, FIFO intra-L0) counts as
    /// compaction writes, not as flush writes.
    #[test]
    fn compaction_writes_into_l0_count_as_compaction_bytes() {
        let st = Stats::new(3, None);
        st.flush_bytes.fetch_add(1 << 20, Ordering::Relaxed);
        st.add_compaction(0, &LevelStats { bytes_written: 1 << 20, ..LevelStats::default() });
        st.add_compaction(0, &LevelStats { bytes_written: 5 << 20, ..LevelStats::default() });
        st.add_compaction(2, &LevelStats { bytes_written: 3 << 20, ..LevelStats::default() });
        let dump = st.statistics(&[]);
        assert!(dump.contains(&format!("rocksdb.flush.write.bytes COUNT : {}\n", 1 << 20)));
        assert!(dump.contains(&format!("rocksdb.compact.write.bytes COUNT : {}\n", 8 << 20)));
    }

    /// Regression: blob file bytes counted in the flushed bytes but not in the levels' writes
    /// made `rocksdb.compact.write.bytes` zero (saturated) under blob files.
    #[test]
    fn blob_file_bytes_count_on_both_sides() {
        let st = Stats::new(3, None);
        st.flush_bytes.fetch_add((1 << 20) + (9 << 20), Ordering::Relaxed);
        let flush = LevelStats {
            bytes_written: 1 << 20,
            bytes_written_blob: 9 << 20,
            ..LevelStats::default()
        };
        st.add_compaction(0, &flush);
        let gc = LevelStats {
            bytes_written: 2 << 20,
            bytes_written_blob: 4 << 20,
            ..LevelStats::default()
        };
        st.add_compaction(2, &gc);
        let dump = st.statistics(&[]);
        assert!(dump.contains(&format!("rocksdb.flush.write.bytes COUNT : {}\n", 10 << 20)));
        assert!(dump.contains(&format!("rocksdb.compact.write.bytes COUNT : {}\n", 6 << 20)));
    }
}
