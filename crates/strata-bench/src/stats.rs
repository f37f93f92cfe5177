//! Per-thread statistics, their merge, and the result line (`docs/db_bench.md` §8.3-§8.5).
//!
//! Each worker owns its [`Stats`]; nothing is shared per operation except, when enabled, the
//! report-file counter (one relaxed atomic add) and the progress bar (at growing intervals).
//! The clock is read per operation only when histograms are on, as in db_bench.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::engine::Engine;
use crate::histogram::Histogram;

/// Operation kinds, each with its own histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpType {
    Read = 0,
    Write,
    Delete,
    Seek,
    Merge,
    Update,
    Compress,
    Uncompress,
    Crc,
    Hash,
    Others,
    MultiScan,
}

impl OpType {
    pub const COUNT: usize = 12;
    const ALL: [OpType; Self::COUNT] = [
        OpType::Read,
        OpType::Write,
        OpType::Delete,
        OpType::Seek,
        OpType::Merge,
        OpType::Update,
        OpType::Compress,
        OpType::Uncompress,
        OpType::Crc,
        OpType::Hash,
        OpType::Others,
        OpType::MultiScan,
    ];

    /// The name in `Microseconds per <name>:`. Uncompress has an empty name, as db_bench
    /// (whose name table lists compress twice).
    pub fn name(self) -> &'static str {
        match self {
            OpType::Read => "read",
            OpType::Write => "write",
            OpType::Delete => "delete",
            OpType::Seek => "seek",
            OpType::Merge => "merge",
            OpType::Update => "update",
            OpType::Compress => "compress",
            OpType::Uncompress => "",
            OpType::Crc => "crc",
            OpType::Hash => "hash",
            OpType::Others => "op",
            OpType::MultiScan => "multiscan",
        }
    }
}

/// Reporting settings shared (read-only) by the threads of one benchmark run.
pub struct ReportCtx<'a> {
    pub histogram: bool,
    pub slow_usecs: u64,
    pub stats_interval: u64,
    pub stats_interval_seconds: u64,
    pub stats_per_interval: bool,
    pub progress_reports: bool,
    /// Ops of all threads, for the `--report_interval_seconds` CSV.
    pub report_counter: Option<&'a AtomicU64>,
    pub progress: Option<&'a indicatif::ProgressBar>,
    pub engine: Option<&'a dyn Engine>,
}

impl ReportCtx<'_> {
    /// No reporting at all (for tests and inline benchmarks).
    pub fn quiet(histogram: bool) -> ReportCtx<'static> {
        ReportCtx {
            histogram,
            slow_usecs: u64::MAX,
            stats_interval: 0,
            stats_interval_seconds: 0,
            stats_per_interval: false,
            progress_reports: false,
            report_counter: None,
            progress: None,
            engine: None,
        }
    }
}

/// Statistics of one thread (or the merge of several).
pub struct Stats<'a> {
    ctx: &'a ReportCtx<'a>,
    pub tid: usize,
    start: Instant,
    finish: Instant,
    /// Sum of the threads' own elapsed seconds.
    seconds: f64,
    done: u64,
    bytes: u64,
    last_op_finish: Instant,
    hist: [Option<Box<Histogram>>; OpType::COUNT],
    message: String,
    exclude_from_merge: bool,
    next_report: u64,
    last_report_done: u64,
    last_report_finish: Instant,
    progress_reported: u64,
    /// Whether another thread's stats were merged in: the first merge takes its interval
    /// (the merged stats' own creation time is not part of the measured work).
    merged_any: bool,
}

impl<'a> Stats<'a> {
    pub fn new(tid: usize, ctx: &'a ReportCtx<'a>) -> Self {
        let now = Instant::now();
        Stats {
            ctx,
            tid,
            start: now,
            finish: now,
            seconds: 0.0,
            done: 0,
            bytes: 0,
            last_op_finish: now,
            hist: Default::default(),
            message: String::new(),
            exclude_from_merge: false,
            next_report: if ctx.stats_interval > 0 { ctx.stats_interval } else { 100 },
            last_report_done: 0,
            last_report_finish: now,
            progress_reported: 0,
            merged_any: false,
        }
    }

    /// Marks the start of the measured work. The first histogram sample is measured from
    /// when the stats were created (so it includes the wait for the other threads), as
    /// db_bench does.
    pub fn start(&mut self) {
        self.last_op_finish = self.start;
        self.start = Instant::now();
        self.last_report_finish = self.start;
        self.finish = self.start;
    }

    /// Forgets what was counted so far and starts the measured work again: db_bench's
    /// `Stats::Start` inside a benchmark whose set-up is not part of its result.
    pub fn restart(&mut self) {
        *self = Stats::new(self.tid, self.ctx);
        self.start();
    }

    pub fn stop(&mut self) {
        self.finish = Instant::now();
        self.seconds = (self.finish - self.start).as_secs_f64();
        if let Some(pb) = self.ctx.progress {
            pb.inc(self.done - self.progress_reported);
            self.progress_reported = self.done;
        }
    }

    pub fn set_exclude_from_merge(&mut self) {
        self.exclude_from_merge = true;
    }

    pub fn excluded(&self) -> bool {
        self.exclude_from_merge
    }

    /// Starts the next latency sample now (time spent waiting for a rate limiter is not an
    /// operation's latency).
    pub fn reset_last_op_time(&mut self) {
        if self.ctx.histogram {
            self.last_op_finish = Instant::now();
        }
    }

    pub fn add_bytes(&mut self, n: u64) {
        self.bytes += n;
    }

    pub fn add_message(&mut self, msg: &str) {
        append_with_space(&mut self.message, msg);
    }

    pub fn done(&self) -> u64 {
        self.done
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// Counts `n` finished operations of kind `op`.
    #[inline]
    pub fn finished_ops(&mut self, n: u64, op: OpType) {
        if let Some(c) = self.ctx.report_counter {
            c.fetch_add(n, Ordering::Relaxed);
        }
        if self.ctx.histogram {
            self.record_latency(op);
        }
        self.done += n;
        if self.done >= self.next_report {
            self.report_progress();
        }
    }

    fn record_latency(&mut self, op: OpType) {
        let now = Instant::now();
        let micros = (now - self.last_op_finish).as_micros() as u64;
        self.hist[op as usize].get_or_insert_with(Default::default).add(micros);
        if micros >= self.ctx.slow_usecs && self.ctx.stats_interval == 0 {
            eprintln!("long op: {micros} micros");
        }
        self.last_op_finish = now;
    }

    #[cold]
    fn report_progress(&mut self) {
        if self.ctx.stats_interval == 0 {
            let n = self.next_report;
            self.next_report += if n < 1000 {
                100
            } else if n < 5000 {
                500
            } else if n < 10000 {
                1000
            } else if n < 50000 {
                5000
            } else if n < 100000 {
                10000
            } else if n < 500000 {
                50000
            } else {
                100000
            };
            if let Some(pb) = self.ctx.progress {
                pb.inc(self.done - self.progress_reported);
                self.progress_reported = self.done;
            }
            return;
        }
        self.next_report += self.ctx.stats_interval;
        if !self.ctx.progress_reports {
            return;
        }
        let now = Instant::now();
        let since_last = now - self.last_report_finish;
        if self.ctx.stats_interval_seconds > 0
            && since_last.as_secs_f64() < self.ctx.stats_interval_seconds as f64
        {
            return;
        }
        let interval_ops = self.done - self.last_report_done;
        let interval_s = since_last.as_secs_f64();
        let total_s = (now - self.start).as_secs_f64();
        eprintln!(
            "{} ... thread {}: ({},{}) ops and ({:.1},{:.1}) ops/second in ({:.6},{:.6}) seconds",
            crate::header::time_to_string(std::time::SystemTime::now()),
            self.tid,
            interval_ops,
            self.done,
            interval_ops as f64 / interval_s.max(1e-9),
            self.done as f64 / total_s.max(1e-9),
            interval_s,
            total_s
        );
        if self.tid == 0 && self.ctx.stats_per_interval {
            if let Some(engine) = self.ctx.engine {
                match engine.stats_text() {
                    Ok(s) => eprintln!("{s}"),
                    Err(e) => eprintln!("stats: {e:#}"),
                }
            }
        }
        self.last_report_finish = now;
        self.last_report_done = self.done;
    }

    /// Adds `o` into `self`: counts and bytes add up, the interval spans both, the first
    /// non-empty message is kept.
    pub fn merge(&mut self, o: &Stats<'_>) {
        for (a, b) in self.hist.iter_mut().zip(&o.hist) {
            if let Some(b) = b {
                a.get_or_insert_with(Default::default).merge(b);
            }
        }
        self.done += o.done;
        self.bytes += o.bytes;
        self.seconds += o.seconds;
        if self.merged_any {
            self.start = self.start.min(o.start);
            self.finish = self.finish.max(o.finish);
        } else {
            (self.start, self.finish) = (o.start, o.finish);
            self.merged_any = true;
        }
        if self.message.is_empty() {
            self.message.clone_from(&o.message);
        }
    }

    /// Wall-clock seconds from the earliest start to the latest finish.
    pub fn elapsed(&self) -> f64 {
        (self.finish - self.start).as_secs_f64()
    }

    /// The result line and, with `--histogram`, one block per operation kind.
    pub fn report(&mut self, name: &str) -> Summary {
        self.done = self.done.max(1);
        let elapsed = self.elapsed().max(1e-9);
        let summary = Summary {
            ops_per_sec: self.done as f64 / elapsed,
            mb_per_sec: (self.bytes > 0).then(|| self.bytes as f64 / 1048576.0 / elapsed),
            micros_per_op: self.seconds * 1e6 / self.done as f64,
            ops: self.done,
        };
        let mut out =
            result_line(name, summary.micros_per_op, self.done, elapsed, self.bytes, &self.message);
        if self.ctx.histogram {
            for op in OpType::ALL {
                if let Some(h) = &self.hist[op as usize] {
                    let _ = writeln!(out, "Microseconds per {}:\n{}", op.name(), h.to_text());
                }
            }
        }
        print_flush(&out);
        summary
    }

    /// The merged histogram of `op`, if any sample was recorded.
    pub fn histogram(&self, op: OpType) -> Option<&Histogram> {
        self.hist[op as usize].as_deref()
    }
}

/// Throughput numbers of one run, for repeat summaries.
#[derive(Clone, Copy, Debug)]
pub struct Summary {
    pub ops_per_sec: f64,
    pub mb_per_sec: Option<f64>,
    pub micros_per_op: f64,
    /// Operations the result line counts.
    pub ops: u64,
}

fn append_with_space(s: &mut String, msg: &str) {
    if msg.is_empty() {
        return;
    }
    if !s.is_empty() {
        s.push(' ');
    }
    s.push_str(msg);
}

/// Formats db_bench's result line:
/// `"%-12s : %11.3f micros/op %ld ops/sec %.3f seconds %lu operations;%s%s\n"`.
pub fn result_line(
    name: &str,
    micros_per_op: f64,
    done: u64,
    elapsed: f64,
    bytes: u64,
    message: &str,
) -> String {
    let mut extra = String::new();
    if bytes > 0 {
        extra = format!("{:6.1} MB/s", bytes as f64 / 1048576.0 / elapsed);
    }
    append_with_space(&mut extra, message);
    let ops_per_sec = (done as f64 / elapsed) as i64;
    format!(
        "{name:<12} : {micros_per_op:11.3} micros/op {ops_per_sec} ops/sec {elapsed:.3} seconds {done} operations;{}{extra}\n",
        if extra.is_empty() { "" } else { " " },
    )
}

/// Writes `s` to stdout and flushes (result lines must not be held back by buffering).
pub fn print_flush(s: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes());
    let _ = out.flush();
}

/// Throughputs of the repeated runs of one benchmark (`name[X3]`).
#[derive(Debug, Default)]
pub struct CombinedStats {
    ops: Vec<f64>,
    mbs: Vec<f64>,
    micros: Vec<f64>,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// Half-width of the 95 % confidence interval (Bessel-corrected standard deviation).
fn confidence95(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64;
    1.959964 * var.sqrt() / (v.len() as f64).sqrt()
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    match n {
        0 => 0.0,
        _ if n.is_multiple_of(2) => f64::midpoint(s[n / 2 - 1], s[n / 2]),
        _ => s[n / 2],
    }
}

impl CombinedStats {
    pub fn add(&mut self, s: &Summary) {
        self.ops.push(s.ops_per_sec);
        if let Some(m) = s.mb_per_sec {
            self.mbs.push(m);
        }
        self.micros.push(s.micros_per_op);
    }

    fn with_mb(&self) -> bool {
        self.mbs.len() == self.ops.len()
    }

    /// The running average after each run (printed only from the second run on).
    pub fn report(&self, name: &str) -> String {
        if self.ops.len() < 2 {
            return String::new();
        }
        self.avg_line(name, "AVG")
    }

    /// `<name> [<label> <n> runs] : <ops> (± <ci>) ops/sec[; <mb> (± <ci>) MB/sec]`, then a
    /// newline.
    fn avg_line(&self, name: &str, label: &str) -> String {
        let n = self.ops.len();
        let mut s = format!(
            "{name} [{label} {n} runs] : {} (\u{b1} {}) ops/sec",
            mean(&self.ops) as i64,
            confidence95(&self.ops) as i64
        );
        if self.with_mb() {
            let _ = write!(
                s,
                "; {:6.1} (\u{b1} {:.1}) MB/sec",
                mean(&self.mbs),
                confidence95(&self.mbs)
            );
        }
        s.push('\n');
        s
    }

    /// Only the confidence interval (`--confidence_interval_only`).
    pub fn report_ci_only(&self, name: &str) -> String {
        if self.ops.len() < 2 {
            return String::new();
        }
        let m = mean(&self.ops);
        let c = confidence95(&self.ops);
        format!(
            "{name} [CI95 {} runs] : ({}, {}) ops/sec\n",
            self.ops.len(),
            (m - c) as i64,
            (m + c) as i64
        )
    }

    /// The final AVG and MEDIAN lines (db_bench 7.x layout).
    pub fn report_final(&self, name: &str) -> String {
        let n = self.ops.len();
        let mut s = self.avg_line(name, "AVG   ");
        let _ = write!(s, "{name} [MEDIAN {n} runs] : {} ops/sec", median(&self.ops) as i64);
        if self.with_mb() {
            let _ = write!(s, "; {:6.1} MB/sec", median(&self.mbs));
        }
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_line_matches_db_bench() {
        // 1000000 ops of 116 bytes in 5.949 s.
        let l = result_line("fillseq", 5.949, 1_000_000, 5.949, 116_000_000, "");
        assert_eq!(
            l,
            "fillseq      :       5.949 micros/op 168095 ops/sec 5.949 seconds 1000000 operations;   18.6 MB/s\n"
        );
        let l = result_line("deleteseq", 5.082, 50000, 0.254, 0, "");
        assert!(l.ends_with("50000 operations;\n"), "{l}");
        let l = result_line("readmissing", 1.624, 50000, 0.081, 0, "(0 of 50000 found)\n");
        assert!(l.ends_with("operations; (0 of 50000 found)\n\n"), "{l}");
        let l = result_line("readwhilewriting", 5.147, 10, 1.0, 1048576, "(1 of 2 found)\n");
        assert!(l.starts_with("readwhilewriting :       5.147 micros/op 10 ops/sec 1.000 seconds"));
        assert!(l.contains("operations;    1.0 MB/s (1 of 2 found)\n"), "{l}");
    }

    /// The merged interval is the threads' own: time spent after they stopped (joining the
    /// report-file thread) once made short runs look slower.
    #[test]
    fn merged_interval_is_the_threads_own() {
        let ctx = ReportCtx::quiet(false);
        let mut t = Stats::new(0, &ctx);
        t.start();
        t.finished_ops(10, OpType::Write);
        t.stop();
        let own = t.elapsed();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let mut merged = Stats::new(0, &ctx);
        merged.merge(&t);
        assert!((merged.elapsed() - own).abs() < 1e-9, "{} vs {own}", merged.elapsed());
        assert!(merged.elapsed() < 0.03, "{}", merged.elapsed());
    }

    #[test]
    fn combined() {
        let mut c = CombinedStats::default();
        for (o, m) in [(100.0, 10.0), (300.0, 30.0), (200.0, 20.0)] {
            c.add(&Summary { ops_per_sec: o, mb_per_sec: Some(m), micros_per_op: 1.0, ops: 1 });
        }
        let f = c.report_final("readrandom");
        assert!(f.starts_with("readrandom [AVG    3 runs] : 200 (\u{b1} 113) ops/sec;   20.0 (\u{b1} 11.3) MB/sec\n"), "{f}");
        assert!(f.ends_with("readrandom [MEDIAN 3 runs] : 200 ops/sec;   20.0 MB/sec\n"), "{f}");
    }
}
