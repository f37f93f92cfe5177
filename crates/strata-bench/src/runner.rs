//! The benchmark loop (spec §1, §4, §5): per benchmark, reset the per-benchmark parameters,
//! run the method on N threads that start together, merge their statistics (minus the
//! background writer's), and print the result line.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use crate::config::{BenchSpec, Compression, Config};
use crate::engine::{Batch, Bounds, Engine, ReadOpts, WriteOpts};
use crate::header;
use crate::keys::{random_read_key, KeyFormat, KeyGenerator, WriteMode};
use crate::random::Mt64;
use crate::rate_limiter::RateLimiter;
use crate::stats::{print_flush, CombinedStats, OpType, ReportCtx, Stats, Summary};
use crate::values::{ValueGenerator, ValueSize};

/// Parameters of one benchmark, reset before each (db_bench's `num_`, `reads_`, ...).
#[derive(Clone, Debug)]
pub struct Params {
    /// Key range of writers (`num_`: `--num`, divided by 1000 for fillsync/fill100K).
    pub num: u64,
    /// `--num` (key range of readers and the prefix computation).
    pub flags_num: u64,
    pub reads: u64,
    pub writes: u64,
    pub deletes: u64,
    pub readwrites: u64,
    pub merge_keys: u64,
    pub key: KeyFormat,
    pub value_size: ValueSize,
    pub batch: u64,
    pub wo: WriteOpts,
    pub ro: ReadOpts,
    pub duration: u64,
}

/// What a worker thread does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    Write(WriteMode),
    Delete {
        seq: bool,
    },
    ReadSeq {
        reverse: bool,
    },
    ReadRandom {
        hot: bool,
    },
    MultiRead,
    Seek,
    /// tid 0 writes (or merges) in the background; the others read or seek.
    WhileWriting {
        merge: bool,
        seek: bool,
    },
    ReadRandomWriteRandom,
    UpdateRandom,
    MergeRandom,
    ReadRandomMergeRandom,
    Crc32c,
    Hash(HashKind),
    Compress,
    Uncompress,
    AcquireLoad,
    Compact,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HashKind {
    Xxh32,
    Xxh64,
    Xxh3,
}

/// Benchmarks run inline on the main thread, without a result line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Meta {
    CompactAll,
    Flush,
    WaitForCompaction,
    Stats,
    LevelStats,
    SsTables,
    MemStats,
    ResetStats,
}

enum Kind {
    Threads(Method),
    Inline(Meta),
    Open,
}

struct Plan {
    kind: Kind,
    fresh: bool,
    threads: usize,
    params: Params,
    needs_merge_operator: bool,
}

/// Shared by the threads of one run.
struct Shared {
    total: usize,
    num_done: AtomicUsize,
    write_limiter: Option<RateLimiter>,
    read_limiter: Option<RateLimiter>,
}

/// One worker's state.
struct ThreadState<'a> {
    tid: usize,
    rand: Mt64,
    stats: Stats<'a>,
    key: Vec<u8>,
    scratch: Vec<u8>,
}

/// `--duration` / op-count loop control (spec §1.4).
struct Deadline {
    max_seconds: u64,
    max_ops: u64,
    granularity: u64,
    ops: u64,
    start: Instant,
}

impl Deadline {
    fn new(max_seconds: u64, max_ops: u64, granularity: u64) -> Self {
        Deadline {
            max_seconds,
            max_ops,
            granularity: granularity.max(1),
            ops: 0,
            start: Instant::now(),
        }
    }

    #[inline]
    fn done(&mut self, increment: u64) -> bool {
        let inc = increment.max(1);
        self.ops += inc;
        if self.max_seconds > 0 {
            if self.ops / self.granularity != (self.ops - inc) / self.granularity {
                return self.start.elapsed().as_secs() >= self.max_seconds;
            }
            false
        } else {
            self.ops > self.max_ops
        }
    }
}

/// Writes the `--report_interval_seconds` CSV from a background thread.
struct ReportFile {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl ReportFile {
    fn start(cfg: &Config, counter: Arc<AtomicU64>) -> Result<ReportFile> {
        let secs = cfg.flags.report_interval_seconds as u64;
        let stop = Arc::new(AtomicBool::new(false));
        if secs == 0 {
            return Ok(ReportFile { stop, handle: None });
        }
        let path = cfg.flags.report_file.clone();
        let mut file = std::fs::File::create(&path)
            .with_context(|| format!("--report_file={path}: cannot create"))?;
        writeln!(file, "secs_elapsed,interval_qps")?;
        let stop2 = stop.clone();
        let handle = std::thread::spawn(move || {
            let start = Instant::now();
            let mut next = start + Duration::from_secs(secs);
            let mut last = 0u64;
            while !stop2.load(Ordering::Relaxed) {
                let now = Instant::now();
                if now < next {
                    std::thread::sleep((next - now).min(Duration::from_millis(50)));
                    continue;
                }
                let total = counter.load(Ordering::Relaxed);
                let elapsed = start.elapsed().as_secs_f64().round() as u64;
                let _ = writeln!(file, "{elapsed},{}", total - last);
                let _ = file.flush();
                last = total;
                next += Duration::from_secs(secs);
            }
        });
        Ok(ReportFile { stop, handle: Some(handle) })
    }

    fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Runs the configured benchmarks.
pub struct Runner {
    cfg: Config,
    engine: Option<Box<dyn Engine>>,
    thread_count: AtomicU64,
}

fn black_box_bytes(b: &[u8]) {
    std::hint::black_box(b);
}

impl Runner {
    pub fn new(cfg: Config) -> Self {
        Runner { cfg, engine: None, thread_count: AtomicU64::new(0) }
    }

    fn engine(&self) -> Result<&dyn Engine> {
        self.engine.as_deref().ok_or_else(|| anyhow!("the DB is not open"))
    }

    fn open(&mut self) -> Result<()> {
        let t = Instant::now();
        self.engine = Some(self.cfg.engine.open(&self.cfg).with_context(|| {
            format!("cannot open {} DB at {}", self.cfg.engine.name(), self.cfg.db.display())
        })?);
        if self.cfg.flags.report_open_timing {
            print_flush(&format!(
                "OpenDb:     {:.6} milliseconds\n",
                t.elapsed().as_secs_f64() * 1e3
            ));
        }
        Ok(())
    }

    fn reopen_fresh(&mut self) -> Result<()> {
        self.engine = None;
        self.cfg.engine.destroy(&self.cfg)?;
        self.open()
    }

    /// Runs everything; the process exit status is the caller's business.
    pub fn run(&mut self) -> Result<()> {
        if self.cfg.flags.seed == 0 {
            print_flush(&format!("Set seed to {} because --seed was 0\n", self.cfg.seed_base));
        }
        for n in &self.cfg.notes {
            eprintln!("strata-bench: note: {n}");
        }
        if !self.cfg.use_existing_db {
            self.cfg.engine.destroy(&self.cfg)?;
        }
        if let Some(parent) = self.cfg.db.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        self.open()?;
        eprint!("{}", header::environment(&self.cfg));
        print_flush(&header::header(&self.cfg));
        let specs = self.cfg.benchmarks.clone();
        for spec in &specs {
            self.run_spec(spec)?;
        }
        if self.cfg.flags.statistics {
            let text = match self.engine()?.statistics_text()? {
                Some(t) => t,
                None => format!("(engine {} keeps no statistics)\n", self.cfg.engine.name()),
            };
            print_flush(&format!("STATISTICS:\n{text}\n"));
        }
        self.engine = None;
        Ok(())
    }

    fn base_params(&self) -> Params {
        let f = &self.cfg.flags;
        let num = self.cfg.num;
        let or_num = |v: i64| if v < 0 { num } else { v as u64 };
        let readwrites =
            if f.writes < 0 && f.reads < 0 { num } else { (f.writes.max(f.reads)).max(0) as u64 };
        Params {
            num,
            flags_num: num,
            reads: or_num(f.reads),
            writes: or_num(f.writes),
            deletes: or_num(f.deletes),
            readwrites,
            merge_keys: or_num(f.merge_keys),
            key: self.cfg.key,
            value_size: self.cfg.value_size,
            batch: f.batch_size as u64,
            wo: WriteOpts { sync: f.sync, disable_wal: f.disable_wal },
            ro: ReadOpts { verify_checksums: f.verify_checksum, fill_cache: true },
            duration: f.duration as u64,
        }
    }

    fn plan(&self, name: &str) -> Result<Plan> {
        let mut p = self.base_params();
        let mut threads = self.cfg.flags.threads as usize;
        let mut fresh = false;
        let mut needs_merge_operator = false;
        let t = |m| Kind::Threads(m);
        let kind = match name {
            "fillseq" => {
                fresh = true;
                t(Method::Write(WriteMode::Sequential))
            }
            "fillrandom" => {
                fresh = true;
                t(Method::Write(WriteMode::Random))
            }
            "filluniquerandom" => {
                fresh = true;
                if threads > 1 {
                    eprintln!("filluniquerandom multithreaded not supported, use 1 thread");
                    threads = 1;
                }
                t(Method::Write(WriteMode::UniqueRandom))
            }
            "overwrite" => t(Method::Write(WriteMode::Random)),
            "fillsync" => {
                fresh = true;
                p.num /= 1000;
                p.wo.sync = true;
                t(Method::Write(WriteMode::Random))
            }
            "fill100K" => {
                fresh = true;
                p.num /= 1000;
                p.value_size = ValueSize::Fixed(100_000);
                t(Method::Write(WriteMode::Random))
            }
            "fillbatch" => {
                fresh = true;
                p.batch = 1000;
                t(Method::Write(WriteMode::Sequential))
            }
            "deleteseq" => t(Method::Delete { seq: true }),
            "deleterandom" => t(Method::Delete { seq: false }),
            "readseq" => t(Method::ReadSeq { reverse: false }),
            "readreverse" => t(Method::ReadSeq { reverse: true }),
            "readtocache" => {
                threads = 1;
                p.reads = p.num;
                t(Method::ReadSeq { reverse: false })
            }
            "readrandom" => t(Method::ReadRandom { hot: false }),
            "readrandomsmall" => {
                p.reads /= 1000;
                t(Method::ReadRandom { hot: false })
            }
            "readmissing" => {
                p.key.key_size += 1;
                t(Method::ReadRandom { hot: false })
            }
            "readhot" => t(Method::ReadRandom { hot: true }),
            "multireadrandom" => t(Method::MultiRead),
            "seekrandom" => t(Method::Seek),
            "readwhilewriting"
            | "readwhilemerging"
            | "seekrandomwhilewriting"
            | "seekrandomwhilemerging" => {
                threads += 1;
                let merge = name.ends_with("merging");
                needs_merge_operator = merge;
                t(Method::WhileWriting { merge, seek: name.starts_with("seek") })
            }
            "readrandomwriterandom" => t(Method::ReadRandomWriteRandom),
            "updaterandom" => t(Method::UpdateRandom),
            "mergerandom" => {
                needs_merge_operator = true;
                t(Method::MergeRandom)
            }
            "readrandommergerandom" => {
                needs_merge_operator = true;
                t(Method::ReadRandomMergeRandom)
            }
            "crc32c" => t(Method::Crc32c),
            "xxhash" => t(Method::Hash(HashKind::Xxh32)),
            "xxhash64" => t(Method::Hash(HashKind::Xxh64)),
            "xxh3" => t(Method::Hash(HashKind::Xxh3)),
            "compress" => t(Method::Compress),
            "uncompress" => t(Method::Uncompress),
            "acquireload" => t(Method::AcquireLoad),
            "compact" => t(Method::Compact),
            "compactall" => Kind::Inline(Meta::CompactAll),
            "flush" => Kind::Inline(Meta::Flush),
            "waitforcompaction" => Kind::Inline(Meta::WaitForCompaction),
            "stats" => Kind::Inline(Meta::Stats),
            "levelstats" => Kind::Inline(Meta::LevelStats),
            "sstables" => Kind::Inline(Meta::SsTables),
            "memstats" => Kind::Inline(Meta::MemStats),
            "resetstats" => Kind::Inline(Meta::ResetStats),
            "open" => {
                fresh = false;
                Kind::Open
            }
            _ => bail!("unknown benchmark '{name}'"),
        };
        Ok(Plan { kind, fresh, threads, params: p, needs_merge_operator })
    }

    fn run_spec(&mut self, spec: &BenchSpec) -> Result<()> {
        let name = spec.name.as_str();
        let plan = self.plan(name)?;
        if plan.fresh {
            if self.cfg.use_existing_db {
                print_flush(&format!("{name:<12} : skipped (--use_existing_db is true)\n"));
                return Ok(());
            }
            self.reopen_fresh()?;
        }
        if plan.needs_merge_operator && self.cfg.flags.merge_operator.is_empty() {
            print_flush(&format!("{name:<12} : skipped (--merge_operator is unknown)\n"));
            bail!("{name} needs --merge_operator");
        }
        match plan.kind {
            Kind::Inline(meta) => {
                for _ in 0..spec.warmups + spec.repeats {
                    self.run_meta(meta)?;
                }
                Ok(())
            }
            Kind::Threads(method) => {
                print_flush(&format!("DB path: [{}]\n", self.cfg.db.display()));
                self.repeat(spec, |r| r.run_threads(name, plan.threads, method, &plan.params))
            }
            Kind::Open => {
                print_flush(&format!("DB path: [{}]\n", self.cfg.db.display()));
                self.repeat(spec, |r| r.run_open(name))
            }
        }
    }

    fn repeat(
        &mut self,
        spec: &BenchSpec,
        mut once: impl FnMut(&mut Self) -> Result<Summary>,
    ) -> Result<()> {
        let name = spec.name.as_str();
        if spec.warmups > 0 {
            print_flush(&format!("Warming up benchmark by running {} times\n", spec.warmups));
        }
        for _ in 0..spec.warmups {
            once(self)?;
        }
        if spec.repeats > 1 {
            print_flush(&format!("Running benchmark for {} times\n", spec.repeats));
        }
        let mut combined = CombinedStats::default();
        for _ in 0..spec.repeats {
            let s = once(self)?;
            combined.add(&s);
            if self.cfg.flags.confidence_interval_only {
                print_flush(&combined.report_ci_only(name));
            } else {
                print_flush(&combined.report(name));
            }
        }
        if spec.repeats > 1 {
            print_flush(&combined.report_final(name));
        }
        Ok(())
    }

    fn run_meta(&mut self, meta: Meta) -> Result<()> {
        let db = self.cfg.db.display().to_string();
        let engine = self.engine()?;
        match meta {
            Meta::CompactAll => engine.compact_range().context("compactall")?,
            Meta::Flush => {
                engine.flush().context("flush")?;
                print_flush("flush memtable\n");
            }
            Meta::WaitForCompaction => {
                print_flush(&format!("waitforcompaction({db}): started\n"));
                // Give background work time to be scheduled, as db_bench does.
                std::thread::sleep(Duration::from_secs(5));
                let status = match engine.wait_for_compaction() {
                    Ok(()) => "OK".to_string(),
                    Err(e) => format!("{e:#}"),
                };
                print_flush(&format!("waitforcompaction({db}): finished with status ({status})\n"));
            }
            Meta::Stats => {
                let s = engine.stats_text().context("stats")?;
                print_flush(&format!("\n{s}\n"));
            }
            Meta::LevelStats => {
                let s = engine.level_stats_text().context("levelstats")?;
                print_flush(&format!("\n{s}\n"));
            }
            Meta::SsTables => {
                let s = engine.sstables_text().context("sstables")?;
                print_flush(&s);
            }
            Meta::MemStats => {
                let mut out = String::new();
                for p in [
                    "rocksdb.num-immutable-mem-table",
                    "rocksdb.cur-size-active-mem-table",
                    "rocksdb.cur-size-all-mem-tables",
                    "rocksdb.size-all-mem-tables",
                    "rocksdb.num-entries-active-mem-table",
                    "rocksdb.num-entries-imm-mem-tables",
                ] {
                    let v = engine.property(p)?.unwrap_or_else(|| "(not supported)".into());
                    let _ = writeln!(out, "{p}: {v}");
                }
                print_flush(&out);
            }
            Meta::ResetStats => engine.reset_stats().context("resetstats")?,
        }
        Ok(())
    }

    fn report_ctx<'a>(
        &self,
        counter: Option<&'a AtomicU64>,
        progress: Option<&'a indicatif::ProgressBar>,
        engine: Option<&'a dyn Engine>,
    ) -> ReportCtx<'a> {
        let f = &self.cfg.flags;
        ReportCtx {
            histogram: f.histogram,
            slow_usecs: f.slow_usecs.max(0) as u64,
            stats_interval: self.cfg.stats_interval,
            stats_interval_seconds: f.stats_interval_seconds as u64,
            stats_per_interval: f.stats_per_interval > 0,
            progress_reports: f.progress_reports,
            report_counter: counter,
            progress,
            engine,
        }
    }

    fn progress_bar(&self, name: &str) -> Option<indicatif::ProgressBar> {
        use std::io::IsTerminal as _;
        let f = &self.cfg.flags;
        if !f.progress_reports || self.cfg.stats_interval > 0 || !std::io::stderr().is_terminal() {
            return None;
        }
        let pb = indicatif::ProgressBar::new_spinner();
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} {prefix}: {human_pos} ops, {elapsed}",
        ) {
            pb.set_style(style);
        }
        pb.set_prefix(name.to_string());
        pb.enable_steady_tick(Duration::from_millis(200));
        Some(pb)
    }

    fn run_open(&mut self, name: &str) -> Result<Summary> {
        let n = (self.cfg.num / 10000).max(1);
        let ctx = self.report_ctx(None, None, None);
        let mut stats = Stats::new(0, &ctx);
        stats.start();
        for _ in 0..n {
            self.engine = None;
            self.engine = Some(self.cfg.engine.open(&self.cfg)?);
            stats.finished_ops(1, OpType::Others);
        }
        stats.stop();
        let mut merged = Stats::new(0, &ctx);
        merged.merge(&stats);
        Ok(merged.report(name))
    }

    fn run_threads(&self, name: &str, n: usize, method: Method, p: &Params) -> Result<Summary> {
        let engine = self.engine()?;
        let f = &self.cfg.flags;
        let counter = Arc::new(AtomicU64::new(0));
        let reporter = ReportFile::start(&self.cfg, counter.clone())?;
        let progress = self.progress_bar(name);
        let ctx = self.report_ctx(
            (f.report_interval_seconds > 0).then_some(&*counter),
            progress.as_ref(),
            Some(engine),
        );
        let shared = Shared {
            total: n,
            num_done: AtomicUsize::new(0),
            write_limiter: (f.benchmark_write_rate_limit > 0)
                .then(|| RateLimiter::new(f.benchmark_write_rate_limit)),
            read_limiter: (f.benchmark_read_rate_limit > 0)
                .then(|| RateLimiter::new(f.benchmark_read_rate_limit)),
        };
        let barrier = Barrier::new(n);
        let seeds: Vec<u64> = (0..n)
            .map(|_| {
                self.cfg
                    .seed_base
                    .wrapping_add(self.thread_count.fetch_add(1, Ordering::Relaxed) + 1)
            })
            .collect();
        let results: Vec<Result<Stats<'_>>> = std::thread::scope(|s| {
            let handles: Vec<_> = seeds
                .iter()
                .enumerate()
                .map(|(tid, &seed)| {
                    let (ctx, shared, barrier) = (&ctx, &shared, &barrier);
                    s.spawn(move || {
                        let mut ts = ThreadState {
                            tid,
                            rand: Mt64::new(seed),
                            stats: Stats::new(tid, ctx),
                            key: Vec::with_capacity(p.key.key_size + 1),
                            scratch: Vec::new(),
                        };
                        barrier.wait();
                        ts.stats.start();
                        let r = self.exec(method, p, shared, engine, &mut ts);
                        ts.stats.stop();
                        shared.num_done.fetch_add(1, Ordering::SeqCst);
                        r.map(|()| ts.stats)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(anyhow!("a benchmark thread panicked"))))
                .collect()
        });
        reporter.finish();
        if let Some(pb) = &progress {
            pb.finish_and_clear();
        }
        let mut merged = Stats::new(0, &ctx);
        for r in results {
            let st = r.with_context(|| format!("benchmark {name} failed"))?;
            if !st.excluded() {
                merged.merge(&st);
            }
        }
        Ok(merged.report(name))
    }

    fn value_generator(&self, p: &Params) -> ValueGenerator {
        let f = &self.cfg.flags;
        ValueGenerator::new(f.compression_ratio, p.value_size, f.same_value_percentage as u32)
    }

    fn exec(
        &self,
        method: Method,
        p: &Params,
        shared: &Shared,
        engine: &dyn Engine,
        ts: &mut ThreadState<'_>,
    ) -> Result<()> {
        match method {
            Method::Write(mode) => self.do_write(mode, p, shared, engine, ts),
            Method::Delete { seq } => self.do_delete(seq, p, engine, ts),
            Method::ReadSeq { reverse } => Self::read_seq(reverse, p, shared, engine, ts),
            Method::ReadRandom { hot } => self.read_random(hot, p, shared, engine, ts),
            Method::MultiRead => self.multi_read(p, engine, ts),
            Method::Seek => self.seek_random(p, shared, engine, ts),
            Method::WhileWriting { merge, seek } => {
                if ts.tid == 0 {
                    self.bg_writer(merge, p, shared, engine, ts)
                } else if seek {
                    self.seek_random(p, shared, engine, ts)
                } else {
                    self.read_random(false, p, shared, engine, ts)
                }
            }
            Method::ReadRandomWriteRandom => self.read_random_write_random(p, engine, ts),
            Method::UpdateRandom => self.update_random(p, shared, engine, ts),
            Method::MergeRandom => self.merge_random(p, engine, ts),
            Method::ReadRandomMergeRandom => self.read_random_merge_random(p, engine, ts),
            Method::Crc32c | Method::Hash(_) => self.checksum(method, p, ts),
            Method::Compress => self.compress(p, ts),
            Method::Uncompress => self.uncompress(p, ts),
            Method::AcquireLoad => {
                let target = AtomicU64::new(1);
                ts.stats.add_message("(each op is 1000 loads)");
                for _ in 0..100_000 {
                    for _ in 0..1000 {
                        std::hint::black_box(target.load(Ordering::Acquire));
                    }
                    ts.stats.finished_ops(1, OpType::Others);
                }
                Ok(())
            }
            Method::Compact => engine.compact_range().context("compact"),
        }
    }

    fn do_write(
        &self,
        mode: WriteMode,
        p: &Params,
        shared: &Shared,
        engine: &dyn Engine,
        ts: &mut ThreadState<'_>,
    ) -> Result<()> {
        let seconds = if mode == WriteMode::Random { p.duration } else { 0 };
        let mut keys = KeyGenerator::new(mode, p.num, self.cfg.seed_base as u32);
        let mut gen = self.value_generator(p);
        let mut batch = Batch::default();
        let mut bytes = 0u64;
        if p.num != p.flags_num {
            ts.stats.add_message(&format!("({} ops)", p.num));
        }
        let granularity = self.cfg.flags.ops_between_duration_checks as u64;
        let mut deadline = Deadline::new(seconds, p.writes, granularity);
        while !deadline.done(p.batch) {
            if p.batch == 1 {
                let k = keys.next(&mut ts.rand);
                p.key.encode(k, p.flags_num, &mut ts.key);
                let v = gen.generate();
                let n = (ts.key.len() + v.len()) as u64;
                if let Some(rl) = &shared.write_limiter {
                    rl.request(n);
                    ts.stats.reset_last_op_time();
                }
                engine.put(&ts.key, v, &p.wo).context("put error")?;
                bytes += n;
            } else {
                batch.clear();
                let mut n = 0u64;
                for _ in 0..p.batch {
                    let k = keys.next(&mut ts.rand);
                    p.key.encode(k, p.flags_num, &mut ts.key);
                    let v = gen.generate();
                    n += (ts.key.len() + v.len()) as u64;
                    batch.put(&ts.key, v);
                }
                if let Some(rl) = &shared.write_limiter {
                    rl.request(n);
                    ts.stats.reset_last_op_time();
                }
                engine.write(&batch, &p.wo).context("put error")?;
                bytes += n;
            }
            ts.stats.finished_ops(p.batch, OpType::Write);
        }
        ts.stats.add_bytes(bytes);
        Ok(())
    }

    fn do_delete(
        &self,
        seq: bool,
        p: &Params,
        engine: &dyn Engine,
        ts: &mut ThreadState<'_>,
    ) -> Result<()> {
        let seconds = if seq { 0 } else { p.duration };
        let granularity = self.cfg.flags.ops_between_duration_checks as u64;
        let mut deadline = Deadline::new(seconds, p.deletes, granularity);
        let mut batch = Batch::default();
        let mut i = 0u64;
        while !deadline.done(p.batch) {
            batch.clear();
            for j in 0..p.batch {
                let k = if seq { i + j } else { ts.rand.next_u64() % p.flags_num };
                p.key.encode(k, p.flags_num, &mut ts.key);
                if p.batch == 1 {
                    engine.delete(&ts.key, &p.wo).context("del error")?;
                } else {
                    batch.delete(&ts.key);
                }
            }
            if p.batch > 1 {
                engine.write(&batch, &p.wo).context("del error")?;
            }
            ts.stats.finished_ops(p.batch, OpType::Delete);
            i += p.batch;
        }
        Ok(())
    }

    fn read_seq(
        reverse: bool,
        p: &Params,
        shared: &Shared,
        engine: &dyn Engine,
        ts: &mut ThreadState<'_>,
    ) -> Result<()> {
        let mut it = engine.new_iterator(&p.ro, Bounds::default())?;
        if reverse {
            it.seek_to_last();
        } else {
            it.seek_to_first();
        }
        let mut i = 0u64;
        let mut bytes = 0u64;
        while i < p.reads && it.valid() {
            bytes += (it.key().len() + it.value().len()) as u64;
            ts.stats.finished_ops(1, OpType::Read);
            i += 1;
            if i % 1024 == 1023 {
                if let Some(rl) = &shared.read_limiter {
                    rl.request(1024);
                }
            }
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        it.status().context("iterator error")?;
        ts.stats.add_bytes(bytes);
        Ok(())
    }

    fn read_random(
        &self,
        hot: bool,
        p: &Params,
        shared: &Shared,
        engine: &dyn Engine,
        ts: &mut ThreadState<'_>,
    ) -> Result<()> {
        let exp_range = self.cfg.flags.read_random_exp_range;
        let hot_range = p.flags_num.div_ceil(100).max(1);
        let granularity = self.cfg.flags.ops_between_duration_checks as u64;
        let mut deadline = Deadline::new(p.duration, p.reads, granularity);
        let (mut read, mut found, mut bytes) = (0u64, 0u64, 0u64);
        while !deadline.done(1) {
            let k = if hot {
                ts.rand.next_u64() % hot_range
            } else {
                random_read_key(&mut ts.rand, p.flags_num, exp_range)
            };
            p.key.encode(k, p.flags_num, &mut ts.key);
            read += 1;
            if engine.get(&ts.key, &p.ro, &mut ts.scratch).context("get error")? {
                found += 1;
                bytes += (ts.key.len() + ts.scratch.len()) as u64;
            }
            if read % 256 == 255 {
                if let Some(rl) = &shared.read_limiter {
                    rl.request(256);
                }
            }
            ts.stats.finished_ops(1, OpType::Read);
        }
        ts.stats.add_bytes(bytes);
        ts.stats.add_message(&format!("({found} of {read} found)\n"));
        Ok(())
    }

    fn multi_read(&self, p: &Params, engine: &dyn Engine, ts: &mut ThreadState<'_>) -> Result<()> {
        eprintln!("entries_per_batch = {}", p.batch);
        let stride = self.cfg.flags.multiread_stride as u64;
        let exp_range = self.cfg.flags.read_random_exp_range;
        let ks = p.key.key_size;
        let mut keys = vec![0u8; ks * p.batch as usize];
        let granularity = self.cfg.flags.ops_between_duration_checks as u64;
        let mut deadline = Deadline::new(p.duration, p.reads, granularity);
        let (mut read, mut found, mut bytes) = (0u64, 0u64, 0u64);
        while !deadline.done(p.batch) {
            let mut base = random_read_key(&mut ts.rand, p.flags_num, exp_range);
            if stride > 0 && base + (p.batch - 1) * stride >= p.flags_num {
                base = p.flags_num.saturating_sub(p.batch * stride);
            }
            for (i, slot) in keys.chunks_mut(ks).enumerate() {
                let k = if stride > 0 {
                    base + i as u64 * stride
                } else if i == 0 {
                    base
                } else {
                    random_read_key(&mut ts.rand, p.flags_num, exp_range)
                };
                p.key.encode(k, p.flags_num, &mut ts.key);
                slot.copy_from_slice(&ts.key);
            }
            let mut value_bytes = 0u64;
            let hits = engine
                .multi_get(&keys, ks, &p.ro, &mut ts.scratch, &mut value_bytes)
                .context("multiget error")?;
            found += hits;
            read += p.batch;
            bytes += hits * ks as u64 + value_bytes;
            ts.stats.finished_ops(p.batch, OpType::Read);
        }
        ts.stats.add_bytes(bytes);
        ts.stats.add_message(&format!("({found} of {read} found)"));
        Ok(())
    }

    fn seek_random(
        &self,
        p: &Params,
        shared: &Shared,
        engine: &dyn Engine,
        ts: &mut ThreadState<'_>,
    ) -> Result<()> {
        let f = &self.cfg.flags;
        let nexts = f.seek_nexts as u64;
        let reverse = f.reverse_iterator;
        let distance = f.max_scan_distance as u64;
        let tailing = f.use_tailing_iterator;
        let mut bound = Vec::with_capacity(p.key.key_size);
        let mut value_buf = [0u8; 256];
        let granularity = f.ops_between_duration_checks as u64;
        let mut deadline = Deadline::new(p.duration, p.reads, granularity);
        let (mut read, mut found, mut bytes) = (0u64, 0u64, 0u64);
        let mut tail_iter =
            if tailing { Some(engine.new_iterator(&p.ro, Bounds::default())?) } else { None };
        while !deadline.done(1) {
            let pos = ts.rand.next_u64() % p.flags_num;
            p.key.encode(pos, p.flags_num, &mut ts.key);
            if f.seek_missing_prefix && ts.key.len() > 8 {
                ts.key[8] = b'1';
            }
            let mut bounds = Bounds::default();
            if distance > 0 {
                if reverse {
                    p.key.encode(pos.saturating_sub(distance), p.flags_num, &mut bound);
                    bounds.lower = Some(&bound);
                } else {
                    p.key.encode(p.flags_num.min(pos + distance), p.flags_num, &mut bound);
                    bounds.upper = Some(&bound);
                }
            }
            let mut fresh_iter;
            let it: &mut dyn crate::engine::EngineIter = match &mut tail_iter {
                Some(t) => t.as_mut(),
                None => {
                    fresh_iter = engine.new_iterator(&p.ro, bounds)?;
                    fresh_iter.as_mut()
                }
            };
            it.seek(&ts.key);
            read += 1;
            if it.valid() && it.key() == ts.key.as_slice() {
                found += 1;
            }
            let mut j = 0;
            while j < nexts && it.valid() {
                let v = it.value();
                let n = v.len().min(value_buf.len());
                value_buf[..n].copy_from_slice(&v[..n]);
                bytes += (it.key().len() + v.len()) as u64;
                if reverse {
                    it.prev();
                } else {
                    it.next();
                }
                j += 1;
            }
            it.status().context("iterator error")?;
            black_box_bytes(&value_buf);
            if read % 256 == 255 {
                if let Some(rl) = &shared.read_limiter {
                    rl.request(256);
                }
            }
            ts.stats.finished_ops(1, OpType::Seek);
        }
        ts.stats.add_bytes(bytes);
        ts.stats.add_message(&format!("({found} of {read} found)\n"));
        Ok(())
    }

    fn bg_writer(
        &self,
        merge: bool,
        p: &Params,
        shared: &Shared,
        engine: &dyn Engine,
        ts: &mut ThreadState<'_>,
    ) -> Result<()> {
        let f = &self.cfg.flags;
        ts.stats.set_exclude_from_merge();
        let limiter = (f.benchmark_write_rate_limit > 0)
            .then(|| RateLimiter::new(f.benchmark_write_rate_limit));
        let space = if f.bgwriter_num > 0 { f.bgwriter_num as u64 } else { p.flags_num };
        let mut gen = self.value_generator(p);
        let mut written = 0u64;
        let mut hint_printed = false;
        let mut bytes = 0u64;
        loop {
            if f.finish_after_writes && written == p.writes {
                eprintln!("Exiting the writer after {written} writes...");
                break;
            }
            if shared.num_done.load(Ordering::Acquire) + 1 >= shared.total {
                if !f.finish_after_writes {
                    break;
                }
                if !hint_printed {
                    eprintln!(
                        "Reads are finished. Have {} more writes to do",
                        p.writes.saturating_sub(written)
                    );
                    hint_printed = true;
                }
            }
            p.key.encode(ts.rand.next_u64() % space, p.flags_num, &mut ts.key);
            let v = gen.generate();
            if merge { engine.merge(&ts.key, v, &p.wo) } else { engine.put(&ts.key, v, &p.wo) }
                .context("put or merge error")?;
            written += 1;
            let n = (ts.key.len() + v.len()) as u64;
            bytes += n;
            ts.stats.finished_ops(1, OpType::Write);
            if let Some(rl) = &limiter {
                rl.request(n);
            }
        }
        ts.stats.add_bytes(bytes);
        Ok(())
    }

    fn read_random_write_random(
        &self,
        p: &Params,
        engine: &dyn Engine,
        ts: &mut ThreadState<'_>,
    ) -> Result<()> {
        let pct = self.cfg.flags.readwritepercent as u64;
        let mut gen = self.value_generator(p);
        let granularity = self.cfg.flags.ops_between_duration_checks as u64;
        let mut deadline = Deadline::new(p.duration, p.readwrites, granularity);
        let (mut found, mut gets_left, mut puts_left, mut reads, mut writes) =
            (0u64, 0, 0, 0u64, 0u64);
        while !deadline.done(1) {
            p.key.encode(ts.rand.next_u64() % p.flags_num, p.flags_num, &mut ts.key);
            if gets_left == 0 && puts_left == 0 {
                gets_left = pct;
                puts_left = 100 - pct;
            }
            if gets_left > 0 {
                if engine.get(&ts.key, &p.ro, &mut ts.scratch).context("get error")? {
                    found += 1;
                }
                gets_left -= 1;
                reads += 1;
                ts.stats.finished_ops(1, OpType::Read);
            } else if puts_left > 0 {
                engine.put(&ts.key, gen.generate(), &p.wo).context("put error")?;
                puts_left -= 1;
                writes += 1;
                ts.stats.finished_ops(1, OpType::Write);
            }
        }
        ts.stats.add_message(&format!(
            "( reads:{reads} writes:{writes} total:{} found:{found})",
            p.readwrites
        ));
        Ok(())
    }

    fn update_random(
        &self,
        p: &Params,
        shared: &Shared,
        engine: &dyn Engine,
        ts: &mut ThreadState<'_>,
    ) -> Result<()> {
        let mut gen = self.value_generator(p);
        let granularity = self.cfg.flags.ops_between_duration_checks as u64;
        let mut deadline = Deadline::new(p.duration, p.readwrites, granularity);
        let (mut found, mut bytes) = (0u64, 0u64);
        while !deadline.done(1) {
            p.key.encode(ts.rand.next_u64() % p.flags_num, p.flags_num, &mut ts.key);
            let hit = engine.get(&ts.key, &p.ro, &mut ts.scratch).context("get error")?;
            if hit {
                found += 1;
                bytes += (ts.key.len() + ts.scratch.len()) as u64;
            }
            if let Some(rl) = &shared.write_limiter {
                let read_len = if hit { ts.scratch.len() } else { 0 };
                rl.request((ts.key.len() + read_len) as u64);
            }
            let v = gen.generate();
            engine.put(&ts.key, v, &p.wo).context("put error")?;
            bytes += (ts.key.len() + v.len()) as u64;
            ts.stats.finished_ops(1, OpType::Update);
        }
        ts.stats.add_bytes(bytes);
        ts.stats.add_message(&format!("( updates:{} found:{found})", p.readwrites));
        Ok(())
    }

    fn merge_random(
        &self,
        p: &Params,
        engine: &dyn Engine,
        ts: &mut ThreadState<'_>,
    ) -> Result<()> {
        let mut gen = self.value_generator(p);
        let granularity = self.cfg.flags.ops_between_duration_checks as u64;
        let mut deadline = Deadline::new(p.duration, p.readwrites, granularity);
        let space = p.merge_keys.max(1);
        let mut bytes = 0u64;
        while !deadline.done(1) {
            p.key.encode(ts.rand.next_u64() % space, space, &mut ts.key);
            let v = gen.generate();
            engine.merge(&ts.key, v, &p.wo).context("merge error")?;
            bytes += (ts.key.len() + v.len()) as u64;
            ts.stats.finished_ops(1, OpType::Merge);
        }
        ts.stats.add_bytes(bytes);
        ts.stats.add_message(&format!("( updates:{})", p.readwrites));
        Ok(())
    }

    fn read_random_merge_random(
        &self,
        p: &Params,
        engine: &dyn Engine,
        ts: &mut ThreadState<'_>,
    ) -> Result<()> {
        let pct = self.cfg.flags.mergereadpercent as u64;
        let mut gen = self.value_generator(p);
        let granularity = self.cfg.flags.ops_between_duration_checks as u64;
        let mut deadline = Deadline::new(p.duration, p.readwrites, granularity);
        let space = p.merge_keys.max(1);
        let (mut hits, mut gets, mut merges, mut max_len) = (0u64, 0u64, 0u64, 0usize);
        while !deadline.done(1) {
            p.key.encode(ts.rand.next_u64() % space, space, &mut ts.key);
            if ts.rand.next_u64() % 100 < pct {
                engine.merge(&ts.key, gen.generate(), &p.wo).context("merge error")?;
                merges += 1;
                ts.stats.finished_ops(1, OpType::Merge);
            } else {
                if engine.get(&ts.key, &p.ro, &mut ts.scratch).context("get error")? {
                    hits += 1;
                    max_len = max_len.max(ts.scratch.len());
                }
                gets += 1;
                ts.stats.finished_ops(1, OpType::Read);
            }
        }
        ts.stats.add_message(&format!(
            "(reads:{gets} merges:{merges} total:{} hits:{hits} maxlength:{max_len})",
            p.readwrites
        ));
        Ok(())
    }

    /// Stops CPU-only loops early when `--duration` is set (an extension: db_bench runs them
    /// to their byte count).
    fn cpu_deadline(&self) -> Option<Instant> {
        let d = self.cfg.flags.duration;
        (d > 0).then(|| Instant::now() + Duration::from_secs(d as u64))
    }

    fn checksum(&self, method: Method, _p: &Params, ts: &mut ThreadState<'_>) -> Result<()> {
        let size = self.cfg.flags.block_size.max(1) as usize;
        let data = vec![b'x'; size];
        let limit = 5000u64 * 1048576;
        let deadline = self.cpu_deadline();
        let mut bytes = 0u64;
        let mut acc = 0u64;
        let mut ops = 0u64;
        let op = if method == Method::Crc32c { OpType::Crc } else { OpType::Hash };
        while bytes < limit {
            let h = match method {
                Method::Crc32c => u64::from(crc32c::crc32c(&data)),
                Method::Hash(HashKind::Xxh32) => u64::from(xxhash_rust::xxh32::xxh32(&data, 0)),
                Method::Hash(HashKind::Xxh64) => xxhash_rust::xxh64::xxh64(&data, 0),
                _ => xxhash_rust::xxh3::xxh3_64(&data),
            };
            acc ^= h;
            ts.stats.finished_ops(1, op);
            bytes += size as u64;
            ops += 1;
            if ops.is_multiple_of(1000) && deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
        }
        std::hint::black_box(acc);
        ts.stats.add_bytes(bytes);
        ts.stats.add_message(&format!("({size} per op)"));
        Ok(())
    }

    fn compress_block(&self, input: &[u8], out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        match self.cfg.compression {
            Compression::None => out.extend_from_slice(input),
            Compression::Snappy => {
                out.resize(snap::raw::max_compress_len(input.len()), 0);
                let n = snap::raw::Encoder::new().compress(input, out)?;
                out.truncate(n);
            }
            Compression::Lz4 => out.extend_from_slice(&lz4_flex::block::compress(input)),
            Compression::Zstd => {
                let level = match self.cfg.flags.compression_level {
                    32767 => 3,
                    l => l as i32,
                };
                out.extend_from_slice(&zstd::bulk::compress(input, level)?);
            }
            other => bail!("compression {other:?} is not available in strata-bench"),
        }
        Ok(())
    }

    fn uncompress_block(&self, input: &[u8], raw_len: usize, out: &mut Vec<u8>) -> Result<()> {
        match self.cfg.compression {
            Compression::None => {
                out.clear();
                out.extend_from_slice(input);
            }
            Compression::Snappy => {
                out.resize(raw_len, 0);
                snap::raw::Decoder::new().decompress(input, out)?;
            }
            Compression::Lz4 => {
                out.resize(raw_len, 0);
                lz4_flex::block::decompress_into(input, out)?;
            }
            Compression::Zstd => {
                out.resize(raw_len, 0);
                zstd::bulk::decompress_to_buffer(input, out)?;
            }
            other => bail!("compression {other:?} is not available in strata-bench"),
        }
        Ok(())
    }

    fn compress(&self, p: &Params, ts: &mut ThreadState<'_>) -> Result<()> {
        let size = self.cfg.flags.block_size.max(1) as usize;
        let mut gen = self.value_generator(p);
        let input = gen.generate_len(size).to_vec();
        let mut out = Vec::new();
        let deadline = self.cpu_deadline();
        let (mut bytes, mut produced, mut ops) = (0u64, 0u64, 0u64);
        while bytes < 3 << 30 {
            self.compress_block(&input, &mut out)?;
            produced += out.len() as u64;
            bytes += input.len() as u64;
            ts.stats.finished_ops(1, OpType::Compress);
            ops += 1;
            if ops.is_multiple_of(1000) && deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
        }
        ts.stats.add_bytes(bytes);
        ts.stats.add_message(&format!("(output: {:.1}%)", produced as f64 * 100.0 / bytes as f64));
        Ok(())
    }

    fn uncompress(&self, p: &Params, ts: &mut ThreadState<'_>) -> Result<()> {
        let size = self.cfg.flags.block_size.max(1) as usize;
        let mut gen = self.value_generator(p);
        let input = gen.generate_len(size).to_vec();
        let mut compressed = Vec::new();
        self.compress_block(&input, &mut compressed)?;
        let mut out = Vec::with_capacity(size);
        let deadline = self.cpu_deadline();
        let (mut bytes, mut ops) = (0u64, 0u64);
        while bytes < 20 << 30 {
            self.uncompress_block(&compressed, input.len(), &mut out)?;
            bytes += input.len() as u64;
            ts.stats.finished_ops(1, OpType::Uncompress);
            ops += 1;
            if ops.is_multiple_of(1000) && deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
        }
        black_box_bytes(&out);
        ts.stats.add_bytes(bytes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Deadline;

    #[test]
    fn deadline_counts() {
        let mut d = Deadline::new(0, 10, 1000);
        let mut n = 0;
        while !d.done(1) {
            n += 1;
        }
        assert_eq!(n, 10);
        let mut d = Deadline::new(0, 10, 1000);
        let mut n = 0;
        while !d.done(3) {
            n += 1;
        }
        assert_eq!(n, 3);
    }
}
