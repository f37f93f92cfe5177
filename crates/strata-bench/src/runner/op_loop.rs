//! The one operation loop every workload runs on, and the threads that run it
//! (`docs/db_bench.md` §2.3, §5.1).
//!
//! A workload is a *step* (one operation, or one batch of `per_step` operations) handed to
//! [`OpLoop::run`], which owns what every benchmark shares: the stop condition (an op count,
//! `--duration` seconds checked every `--ops_between_duration_checks` ops, or a byte budget),
//! the periodic read rate limiter, counting finished operations (latency histogram, progress,
//! report CSV) and the byte total behind MB/s. [`Runner::run_threads`] starts the threads
//! together, merges their statistics (minus an excluded background writer's) and returns the
//! result line.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use super::plan::Params;
use super::Runner;
use crate::config::Config;
use crate::engine::Engine;
use crate::flags::Flags;
use crate::random::Mt64;
use crate::rate_limiter::RateLimiter;
use crate::stats::{OpType, ReportCtx, Stats, Summary};
use crate::values::ValueGenerator;

/// The rate mixgraph's limiters start at under `--sine_mix_rate`, before the first interval.
const SINE_START_RATE: u64 = 1_000_000;

/// Shared by the threads of one run.
pub(super) struct Shared {
    total: usize,
    num_done: AtomicUsize,
    write_limiter: Option<RateLimiter>,
    read_limiter: Option<RateLimiter>,
}

impl Shared {
    /// The read limiter (`--benchmark_read_rate_limit`, or mixgraph's sine).
    pub(super) fn read_limiter(&self) -> Option<&RateLimiter> {
        self.read_limiter.as_ref()
    }

    /// The write limiter (`--benchmark_write_rate_limit`, or mixgraph's sine).
    pub(super) fn write_limiter(&self) -> Option<&RateLimiter> {
        self.write_limiter.as_ref()
    }

    /// Whether a thread of the run has finished (timeseries' readers stop with its writer).
    pub(super) fn any_done(&self) -> bool {
        self.num_done.load(Ordering::Acquire) >= 1
    }

    /// True once every thread but the caller has finished.
    pub(super) fn others_done(&self) -> bool {
        self.num_done.load(Ordering::Acquire) + 1 >= self.total
    }
}

/// One worker thread's state.
pub(super) struct Worker<'a> {
    pub tid: usize,
    pub rand: Mt64,
    pub stats: Stats<'a>,
    /// The current key (capacity for `--key_size` + 1).
    pub key: Vec<u8>,
    /// Value buffer of gets.
    pub scratch: Vec<u8>,
}

/// What a step sees: the configuration, this benchmark's parameters, the shared state and the
/// engine.
pub(super) struct Ctx<'a> {
    pub cfg: &'a Config,
    pub p: &'a Params,
    pub shared: &'a Shared,
    pub engine: &'a dyn Engine,
}

impl<'a> Ctx<'a> {
    pub fn flags(&self) -> &'a Flags {
        &self.cfg.flags
    }

    /// A fresh value generator (`docs/db_bench.md` §4): every thread sees the same values.
    pub fn values(&self) -> ValueGenerator {
        let f = self.flags();
        ValueGenerator::new(f.compression_ratio, self.p.value_size, f.same_value_percentage as u32)
    }

    /// Sets the worker's key to a random one of `0..space` (`space` also sets the prefixes).
    pub fn random_key(&self, ts: &mut Worker<'_>, space: u64) {
        self.p.key.encode(ts.rand.next_u64() % space, space, &mut ts.key);
    }

    /// Gets the worker's key into its scratch buffer; true if found.
    pub fn get(&self, ts: &mut Worker<'_>) -> Result<bool> {
        self.engine.get(&ts.key, &self.p.ro, &mut ts.scratch).context("get error")
    }

    /// `max` operations, `per_step` at a time (a step per batch), or `--duration` seconds
    /// instead when `timed` and `--duration` is set.
    pub fn ops(&self, max: u64, per_step: u64, timed: bool) -> OpLoop<'a> {
        let seconds = if timed { self.p.duration } else { 0 };
        self.op_loop(Stop::Ops { max, seconds }, per_step)
    }

    /// CPU-only loops: until `max_bytes` are processed, or `--duration` seconds (checked every
    /// 1000 ops; an extension: db_bench runs them to their byte count).
    pub fn bytes(&self, max_bytes: u64) -> OpLoop<'a> {
        let seconds = self.flags().duration.max(0) as u64;
        self.op_loop(Stop::Bytes { max: max_bytes, seconds }, 1)
    }

    /// Until the step says [`Step::Stop`].
    pub fn until_stopped(&self) -> OpLoop<'a> {
        self.op_loop(Stop::Never, 1)
    }

    fn op_loop(&self, stop: Stop, per_step: u64) -> OpLoop<'a> {
        OpLoop {
            stop,
            per_step,
            counted: per_step,
            granularity: self.flags().ops_between_duration_checks as u64,
            read_limiter: None,
            shared_read_limiter: self.shared.read_limiter.as_ref(),
        }
    }

    /// Waits for `--benchmark_write_rate_limit` to allow `bytes`, before the write; the wait
    /// is not part of the operation's latency.
    pub fn throttle_write(&self, ts: &mut Worker<'_>, bytes: u64) {
        if let Some(rl) = &self.shared.write_limiter {
            rl.request(bytes);
            ts.stats.reset_last_op_time();
        }
    }

    /// With `--sine_write_rate` and a write limiter, the clock of a fill writer that follows
    /// the sine.
    pub fn sine_write(&self) -> Option<SineWrite> {
        let f = self.flags();
        (f.sine_write_rate && self.shared.write_limiter.is_some()).then(|| {
            let now = Instant::now();
            SineWrite {
                start: now,
                last: now,
                every: Duration::from_millis(f.sine_write_rate_interval_milliseconds),
            }
        })
    }

    /// After a batch: once `--sine_write_rate_interval_milliseconds` have passed since the
    /// last change, the write limiter's rate becomes the sine's value at the seconds since the
    /// writer started (db_bench's `DoWrite`; every writer changes the one shared limiter).
    pub fn follow_sine(&self, s: &mut SineWrite) {
        let now = Instant::now();
        if now.duration_since(s.last) > s.every {
            s.last = now;
            let t = now.duration_since(s.start).as_secs_f64();
            if let Some(rl) = &self.shared.write_limiter {
                rl.set_rate(crate::mixgraph::sine_rate(self.flags(), t));
            }
        }
    }

    /// Waits for `--benchmark_write_rate_limit` to allow `bytes`, counted in the latency.
    pub fn throttle_write_in_op(&self, bytes: u64) {
        if let Some(rl) = &self.shared.write_limiter {
            rl.request(bytes);
        }
    }
}

/// Counts its thread as done when dropped, whether the thread's work returned or panicked:
/// the threads that run until the others are done (the *while* benchmarks' background
/// writer, timeseries' readers) then stop, and the panic reaches the run as an error when the
/// thread is joined, instead of a wait for ever.
struct Done<'a>(&'a AtomicUsize);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A fill writer's sine clock ([`Ctx::sine_write`]).
pub(super) struct SineWrite {
    start: Instant,
    last: Instant,
    every: Duration,
}

/// When a loop ends.
#[derive(Clone, Copy, Debug)]
enum Stop {
    /// `max` operations, or `seconds` when > 0 (the count is then ignored).
    Ops { max: u64, seconds: u64 },
    /// `max` bytes, or `seconds` when > 0.
    Bytes { max: u64, seconds: u64 },
    /// When the step says so.
    Never,
}

/// What one step did.
pub(super) enum Step {
    /// `per_step` operations of this kind, which moved this many bytes (for MB/s).
    Did(OpType, u64),
    /// This many operations of this kind (none: the step's time goes to the next one that
    /// counts, as db_bench's latency between two `FinishedOps`), which moved this many bytes.
    DidN(OpType, u64, u64),
    /// Nothing; the loop ends.
    Stop,
}

/// The loop of one worker (see the module docs).
pub(super) struct OpLoop<'a> {
    stop: Stop,
    per_step: u64,
    /// Operations each step counts in the statistics (`per_step` unless changed).
    counted: u64,
    granularity: u64,
    /// `--benchmark_read_rate_limit`, asked for `every` ops after every `every` steps.
    read_limiter: Option<(&'a RateLimiter, u64)>,
    shared_read_limiter: Option<&'a RateLimiter>,
}

impl OpLoop<'_> {
    /// Each step counts `ops` operations in the statistics while the stop condition still
    /// advances by the loop's own step size (db_bench's `approximatesizerandom`: one step of
    /// the duration per batch, a batch's worth of operations).
    pub fn counted_as(mut self, ops: u64) -> Self {
        self.counted = ops;
        self
    }

    /// Applies `--benchmark_read_rate_limit` in grants of `every` operations.
    pub fn read_limited(mut self, every: u64) -> Self {
        self.read_limiter = self.shared_read_limiter.map(|rl| (rl, every.max(1)));
        self
    }

    /// Runs `step` until the stop condition; the bytes the steps report are added to the
    /// thread's statistics at the end.
    pub fn run<'w>(
        self,
        ts: &mut Worker<'w>,
        mut step: impl FnMut(&mut Worker<'w>) -> Result<Step>,
    ) -> Result<()> {
        let start = Instant::now();
        let mut deadline = match self.stop {
            Stop::Ops { max, seconds } => Some(Deadline::new(seconds, max, self.granularity)),
            _ => None,
        };
        let cpu_deadline = match self.stop {
            Stop::Bytes { seconds, .. } if seconds > 0 => {
                Some(start + Duration::from_secs(seconds))
            }
            _ => None,
        };
        let (mut steps, mut bytes) = (0u64, 0u64);
        loop {
            let stop_now = match self.stop {
                Stop::Ops { .. } => deadline.as_mut().is_some_and(|d| d.done(self.per_step)),
                Stop::Bytes { max, .. } => bytes >= max,
                Stop::Never => false,
            };
            if stop_now {
                break;
            }
            let (op, ops, n) = match step(ts)? {
                Step::Did(op, n) => (op, self.counted, n),
                Step::DidN(op, ops, n) => (op, ops, n),
                Step::Stop => break,
            };
            bytes += n;
            steps += 1;
            if let Some((rl, every)) = self.read_limiter {
                if steps % every == every - 1 {
                    rl.request(every);
                }
            }
            if ops > 0 {
                ts.stats.finished_ops(ops, op);
            }
            if steps.is_multiple_of(1000) && cpu_deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
        }
        ts.stats.add_bytes(bytes);
        Ok(())
    }
}

/// `--duration` / op-count loop control (`docs/db_bench.md` §5.1).
pub(super) struct Deadline {
    max_seconds: u64,
    max_ops: u64,
    granularity: u64,
    ops: u64,
    start: Instant,
}

impl Deadline {
    pub(super) fn new(max_seconds: u64, max_ops: u64, granularity: u64) -> Self {
        Deadline {
            max_seconds,
            max_ops,
            granularity: granularity.max(1),
            ops: 0,
            start: Instant::now(),
        }
    }

    /// Counts `increment` more operations; true when the loop must stop before doing them.
    #[inline]
    pub(super) fn done(&mut self, increment: u64) -> bool {
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

impl Runner {
    pub(super) fn report_ctx<'a>(
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

    /// Runs `work` on `n` threads that start together and returns the merged result.
    pub(super) fn run_threads(
        &self,
        name: &str,
        n: usize,
        p: &Params,
        work: impl Fn(&Ctx<'_>, &mut Worker<'_>) -> Result<()> + Sync,
    ) -> Result<Summary> {
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
            // mixgraph's sine starts both limiters at db_bench's 1,000,000 a second.
            write_limiter: if p.sine_mix {
                Some(RateLimiter::new(SINE_START_RATE))
            } else if f.sine_write_rate {
                // db_bench: the write rate limit becomes the sine's value at 0 (none if that
                // is not positive); the fill writers then follow the sine (`SineWrite`).
                let rate = crate::mixgraph::sine_rate(f, 0.0);
                (rate >= 1.0).then(|| RateLimiter::new(rate as u64))
            } else {
                (f.benchmark_write_rate_limit > 0)
                    .then(|| RateLimiter::new(f.benchmark_write_rate_limit))
            },
            read_limiter: if p.sine_mix {
                Some(RateLimiter::new(SINE_START_RATE))
            } else {
                (f.benchmark_read_rate_limit > 0)
                    .then(|| RateLimiter::new(f.benchmark_read_rate_limit))
            },
        };
        let cx = Ctx { cfg: &self.cfg, p, shared: &shared, engine };
        let barrier = Barrier::new(n);
        let io_before = self.io.as_ref().map(crate::io::Sampler::sample);
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
                    let (ctx, cx, barrier, work) = (&ctx, &cx, &barrier, &work);
                    s.spawn(move || {
                        let mut ts = Worker {
                            tid,
                            rand: Mt64::new(seed),
                            stats: Stats::new(tid, ctx),
                            key: Vec::with_capacity(p.key.key_size + 1),
                            scratch: Vec::new(),
                        };
                        barrier.wait();
                        let done = Done(&cx.shared.num_done);
                        ts.stats.start();
                        let r = work(cx, &mut ts);
                        ts.stats.stop();
                        drop(done);
                        r.map(|()| ts.stats)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(anyhow!("a benchmark thread panicked"))))
                .collect()
        });
        let io_after = self.io.as_ref().map(crate::io::Sampler::sample);
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
        let summary = merged.report(name);
        if let (Some(io), Some(b), Some(a)) = (&self.io, io_before, io_after) {
            crate::stats::print_flush(&io.step(&b, &a, summary.ops).line());
        }
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::{Deadline, Done};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    /// A thread whose work panics still counts as done, so a thread waiting for it (as
    /// timeseries' readers wait for the writer) stops, and the panic comes back at the join.
    #[test]
    fn a_panicking_thread_counts_as_done() {
        let num_done = AtomicUsize::new(0);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let start = Instant::now();
                while num_done.load(Ordering::Acquire) == 0 {
                    assert!(
                        start.elapsed() < Duration::from_secs(10),
                        "the waiter was left waiting"
                    );
                    std::thread::yield_now();
                }
            });
            let worker = s.spawn(|| {
                let _done = Done(&num_done);
                panic!("a benchmark's own bug");
            });
            assert!(worker.join().is_err(), "the panic reaches the join");
            waiter.join().expect("the waiter stops");
        });
        assert_eq!(num_done.load(Ordering::Acquire), 1);
    }

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
