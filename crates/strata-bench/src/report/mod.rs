//! Reports of the seeds' suite (`bench/run.sh`): parse each step's log the way RocksDB's
//! `tools/benchmark.sh` does (`docs/db_bench.md` §8.8), then write `report.tsv`, the
//! relative-QPS table (Strata / other engine, per step, as in seed 002) and charts.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

pub mod chart;
pub mod leveldb_page;
pub mod ycsb;

/// What one step's log says: the fields `tools/benchmark.sh` takes from a db_bench log
/// (`summarize_result`), each `None` when the log does not have it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepResult {
    pub ops_sec: Option<f64>,
    pub mb_sec: Option<f64>,
    pub usec_op: Option<f64>,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub p9999: Option<f64>,
    pub pmax: Option<f64>,
    /// W-Amp of the ` Sum` row of the engine's stats.
    pub sum_w_amp: Option<f64>,
    /// `Cumulative stall: ... , P percent`.
    pub stall_pct: Option<f64>,
    /// Size column of the ` Sum` row, e.g. `25MB`.
    pub lsm_size: Option<String>,
    /// `Blob file count: ... <size> <unit>,`.
    pub blob_size: Option<String>,
    /// `Cumulative compaction: <n> <unit> write` in GB (flush output included, as RocksDB counts).
    pub c_wgb: Option<f64>,
    /// `Cumulative compaction: ..., <n> MB/s write`.
    pub c_mbps: Option<f64>,
    /// ` Sum` row: `Comp(sec)`, `CompMergeCPU(sec)`, `Rblob(GB)`, `Wblob(GB)`.
    pub c_wsecs: Option<f64>,
    pub c_csecs: Option<f64>,
    pub b_rgb: Option<f64>,
    pub b_wgb: Option<f64>,
    /// `Flush(GB): cumulative <n>`.
    pub flush_gb: Option<f64>,
    /// `Cumulative writes: ... ingest: <n> <unit>` in GB.
    pub ingest_gb: Option<f64>,
    /// `Uptime(secs): <n> total`.
    pub uptime: Option<f64>,
    /// `Stalls(count):` summed as benchmark.sh sums it.
    pub nstall: Option<f64>,
    /// `Date:` of the environment block, as `2026-11-22T13:32:26`.
    pub date: Option<String>,
    /// `<Engine>: version <v>` of the environment block.
    pub version: Option<String>,
    /// The message after the result line, e.g. `(17318 of 20000 found)`.
    pub message: String,
    /// The step's `I/O:` line (`crate::io`), the last one of the log; its `io_eff` against
    /// the mean of the baselines before and after the step when the log has their line
    /// ([`crate::io::BracketingBaseline`]).
    pub io: Option<crate::io::IoColumns>,
}

fn num(tok: Option<&&str>) -> Option<f64> {
    tok.and_then(|t| t.trim_end_matches(',').parse::<f64>().ok())
}

/// `<n> <unit>` in GB (benchmark.sh's `units_as_gb`: MB, GB or TB).
fn as_gb(n: Option<f64>, unit: Option<&&str>) -> Option<f64> {
    let n = n?;
    match unit.map(|u| u.trim_end_matches(',')) {
        Some("KB") => Some(n / 1024.0 / 1024.0),
        Some("MB") => Some(n / 1024.0),
        Some("GB") => Some(n),
        Some("TB") => Some(n * 1024.0),
        _ => None,
    }
}

/// Column indexes of the ` Sum` row, found from the `Level` header (RocksDB 8.x+ adds
/// `WPreComp(GB)`); the row splits `Size` into a number and a unit, one token more than the
/// header before it. The defaults are RocksDB 7.x's (benchmark.sh's fixed `$12 $15 $16 $21 $22`).
struct SumColumns {
    w_amp: usize,
    comp_sec: usize,
    comp_cpu: usize,
    rblob: usize,
    wblob: usize,
}

impl SumColumns {
    const V7: SumColumns =
        SumColumns { w_amp: 11, comp_sec: 14, comp_cpu: 15, rblob: 20, wblob: 21 };

    fn from_header(f: &[&str]) -> SumColumns {
        let at = |name: &str, default: usize| {
            f.iter().position(|t| *t == name).map_or(default, |i| i + 1)
        };
        let d = SumColumns::V7;
        SumColumns {
            w_amp: at("W-Amp", d.w_amp),
            comp_sec: at("Comp(sec)", d.comp_sec),
            comp_cpu: at("CompMergeCPU(sec)", d.comp_cpu),
            rblob: at("Rblob(GB)", d.rblob),
            wblob: at("Wblob(GB)", d.wblob),
        }
    }
}

/// `Sun Nov 22 13:32:26 2026` -> `2026-11-22T13:32:26` (benchmark.sh: `$6-$3-$4T$5`, month
/// names to numbers).
fn date_of(f: &[&str]) -> Option<String> {
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let (month, day, time, year) = (f.get(2)?, f.get(3)?, f.get(4)?, f.get(5)?);
    let m = MONTHS
        .iter()
        .position(|x| x == month)
        .map_or_else(|| (*month).to_string(), |i| format!("{:02}", i + 1));
    Some(format!("{year}-{m}-{day}T{time}"))
}

/// Parses the log of a run whose result line starts with `bench` (e.g. `seekrandom`); for the
/// stats lines the last one counts (benchmark.sh's `tail -1`).
pub fn parse_log(text: &str, bench: &str) -> StepResult {
    let mut r = StepResult::default();
    let mut cols = SumColumns::V7;
    let mut bracket = None;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.first() == Some(&"Level") {
            cols = SumColumns::from_header(&f);
        } else if f.first() == Some(&bench)
            && f.get(1) == Some(&":")
            && f.get(3) == Some(&"micros/op")
        {
            // V2 layout (benchmark.sh): $3 micros/op, $5 ops/sec, $8 "seconds", $11 MB/s.
            r.usec_op = num(f.get(2));
            r.ops_sec = num(f.get(4));
            r.mb_sec = if f.get(11) == Some(&"MB/s") { num(f.get(10)) } else { None };
            let after = line.split_once("operations;").map_or("", |(_, a)| a);
            let after = after.trim();
            let msg = match after.find("MB/s") {
                Some(i) => after[i + 4..].trim(),
                None => after,
            };
            r.message = msg.to_string();
        } else if let Some(io) = crate::io::IoColumns::parse(line) {
            r.io = Some(io);
        } else if let Some(b) = crate::io::BracketingBaseline::parse(line) {
            bracket = Some(b);
        } else if line.starts_with("Percentiles:") {
            r.p50 = num(f.get(2));
            r.p99 = num(f.get(6));
            r.p999 = num(f.get(8));
            r.p9999 = num(f.get(10));
        } else if line.starts_with("Min: ") && line.contains("Max:") {
            r.pmax = num(f.get(5));
        } else if line.starts_with(" Sum") {
            if let (Some(size), Some(unit)) = (num(f.get(2)), f.get(3)) {
                r.lsm_size = Some(format!("{size:.0}{unit}"));
            }
            r.sum_w_amp = num(f.get(cols.w_amp));
            r.c_wsecs = num(f.get(cols.comp_sec));
            r.c_csecs = num(f.get(cols.comp_cpu));
            r.b_rgb = num(f.get(cols.rblob));
            r.b_wgb = num(f.get(cols.wblob));
        } else if line.starts_with("Blob file count:") {
            if let (Some(size), Some(unit)) = (num(f.get(6)), f.get(7)) {
                r.blob_size = Some(format!("{size:.0}{}", unit.trim_end_matches(',')));
            }
        } else if line.starts_with("Cumulative compaction:") {
            r.c_wgb = as_gb(num(f.get(2)), f.get(3));
            r.c_mbps = num(f.get(5));
        } else if line.starts_with("Flush(GB):") {
            r.flush_gb = num(f.get(2));
        } else if line.starts_with("Cumulative writes:") {
            if let Some(i) = f.iter().position(|t| *t == "ingest:") {
                r.ingest_gb = as_gb(num(f.get(i + 1)), f.get(i + 2));
            }
        } else if line.starts_with("Uptime(secs") {
            r.uptime = num(f.get(1));
        } else if line.starts_with("Stalls(count):") {
            let n: f64 = [1, 5, 9, 13, 17, 19].iter().filter_map(|&i| num(f.get(i))).sum();
            r.nstall = Some(n);
        } else if line.starts_with("Cumulative stall") {
            r.stall_pct = num(f.get(4));
        } else if line.starts_with("Date:") && r.date.is_none() {
            r.date = date_of(&f);
        } else if f.get(1) == Some(&"version") && r.version.is_none() && f[0].ends_with(':') {
            r.version = f.get(2).map(|v| (*v).to_string());
        }
    }
    if let (Some(io), Some(b)) = (r.io, bracket) {
        r.io = Some(io.rebased(b));
    }
    r
}

impl StepResult {
    /// Operations per second for comparisons: the printed integer ops/sec, or, for steps that
    /// take seconds per operation (`compact` prints `0 ops/sec`), the inverse of micros/op.
    pub fn qps(&self) -> Option<f64> {
        match (self.ops_sec, self.usec_op) {
            (Some(q), Some(u)) if q < 10.0 && u > 0.0 => Some(1e6 / u),
            (q, _) => q,
        }
    }

    /// benchmark.sh's write amplification, `(compaction GB + flush GB) / ingest GB`; the
    /// ` Sum` row's W-Amp when the log lacks one of them.
    pub fn w_amp(&self) -> Option<f64> {
        match (self.c_wgb, self.flush_gb, self.ingest_gb) {
            (Some(c), Some(fl), Some(i)) if i > 0.0 => Some((c + fl) / i),
            _ => self.sum_w_amp,
        }
    }
}

/// A QPS figure as the tables print it: whole numbers, two decimals below 100.
pub fn fmt_qps(q: f64) -> String {
    if q < 100.0 {
        format!("{q:.2}")
    } else {
        format!("{q:.0}")
    }
}

/// What `/usr/bin/time -f '%e %U %S %M'` measured of one step's process.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    pub user_s: f64,
    pub sys_s: f64,
    /// Peak resident set size in KiB.
    pub max_rss_kb: u64,
}

impl Usage {
    /// The last line of a `%e %U %S %M` time file (earlier lines may be the tool's complaints).
    pub fn parse(text: &str) -> Option<Usage> {
        let f: Vec<&str> =
            text.lines().rev().find(|l| !l.trim().is_empty())?.split_whitespace().collect();
        Some(Usage {
            user_s: f.get(1)?.parse().ok()?,
            sys_s: f.get(2)?.parse().ok()?,
            max_rss_kb: f.get(3)?.parse().ok()?,
        })
    }
}

/// One row of `steps.tsv` written by `bench/run.sh`.
#[derive(Clone, Debug)]
pub struct Step {
    pub engine: String,
    /// Step name (benchmark.sh's "test" column).
    pub test: String,
    /// Benchmark whose result line is read.
    pub bench: String,
    pub log: String,
    pub du_kb: Option<u64>,
    /// CPU and peak memory of the step's process.
    pub usage: Option<Usage>,
    pub job_id: String,
    /// The commit strata-bench was built from.
    pub githash: String,
    /// The suite's I/O mode: `byrx`, `iodir`, `iobuf` (empty in older `steps.tsv` files).
    pub mode: String,
    pub result: StepResult,
}

/// Reads `<dir>/steps.tsv` (`engine test bench log du_kb [time_file job_id githash mode]`,
/// tab-separated) and the logs.
pub fn load_steps(dir: &Path) -> Result<Vec<Step>> {
    let path = dir.join("steps.tsv");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut steps = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 4 {
            continue;
        }
        let log = std::fs::read_to_string(dir.join(f[3])).unwrap_or_default();
        let usage = f
            .get(5)
            .filter(|t| !t.is_empty())
            .and_then(|t| std::fs::read_to_string(dir.join(t)).ok())
            .and_then(|t| Usage::parse(&t));
        let field = |i: usize| f.get(i).map_or_else(String::new, |v| v.trim().to_string());
        steps.push(Step {
            engine: f[0].to_string(),
            test: f[1].to_string(),
            bench: f[2].to_string(),
            log: f[3].to_string(),
            du_kb: f.get(4).and_then(|v| v.trim().parse().ok()),
            usage,
            job_id: field(6),
            githash: field(7),
            mode: field(8),
            result: parse_log(&log, f[2]),
        });
    }
    Ok(steps)
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or_else(String::new, |x| format!("{x:.prec$}"))
}

/// The columns of `report.tsv`: benchmark.sh's, in its order, then this suite's own.
pub const REPORT_COLUMNS: &[&str] = &[
    "ops_sec", "mb_sec", "lsm_sz", "blob_sz", "c_wgb", "w_amp", "c_mbps", "c_wsecs", "c_csecs",
    "b_rgb", "b_wgb", "usec_op", "p50", "p99", "p99.9", "p99.99", "pmax", "uptime", "stall%",
    "Nstall", "u_cpu", "s_cpu", "rss", "test", "date", "version", "job_id", "githash", "engine",
    "du_mb", "mode", "rps", "rmbps", "rpo", "io_eff", "wps", "wmbps", "us_op", "sy_op", "us_inc",
    "cpu_inc", "message",
];

/// `report.tsv`: one row per engine and step, with benchmark.sh's columns in its order (so a
/// sheet made for its tables reads this one), then `engine`, `du_mb`, the I/O mode, the I/O
/// columns of the step's `I/O:` line (`crate::io`) and the result message.
/// A step without a result line reads `failed`, as in benchmark.sh.
pub fn report_tsv(steps: &[Step]) -> String {
    let mut s = REPORT_COLUMNS.join("\t");
    s.push('\n');
    for st in steps {
        let r = &st.result;
        let u = st.usage;
        let cells = [
            if r.ops_sec.is_some() { opt(r.ops_sec, 0) } else { "failed".into() },
            opt(r.mb_sec, 1),
            r.lsm_size.clone().unwrap_or_default(),
            r.blob_size.clone().unwrap_or_default(),
            opt(r.c_wgb, 3),
            opt(r.w_amp(), 1),
            opt(r.c_mbps, 1),
            opt(r.c_wsecs, 1),
            opt(r.c_csecs, 1),
            opt(r.b_rgb, 1),
            opt(r.b_wgb, 1),
            opt(r.usec_op, 1),
            opt(r.p50, 1),
            opt(r.p99, 0),
            opt(r.p999, 0),
            opt(r.p9999, 0),
            opt(r.pmax, 0),
            opt(r.uptime, 1),
            opt(r.stall_pct, 1),
            opt(r.nstall, 0),
            opt(u.map(|u| u.user_s), 1),
            opt(u.map(|u| u.sys_s), 1),
            opt(u.map(|u| u.max_rss_kb as f64 / 1048576.0), 3),
            st.test.clone(),
            r.date.clone().unwrap_or_default(),
            r.version.clone().unwrap_or_default(),
            st.job_id.clone(),
            st.githash.clone(),
            st.engine.clone(),
            st.du_kb.map_or_else(String::new, |k| format!("{:.1}", k as f64 / 1024.0)),
            st.mode.clone(),
            opt(r.io.and_then(|i| i.rps), 1),
            opt(r.io.and_then(|i| i.rmbps), 2),
            opt(r.io.and_then(|i| i.rpo), 3),
            opt(r.io.and_then(|i| i.io_eff), 3),
            opt(r.io.and_then(|i| i.wps), 1),
            opt(r.io.and_then(|i| i.wmbps), 2),
            opt(r.io.and_then(|i| i.user_op), 2),
            opt(r.io.and_then(|i| i.sys_op), 2),
            opt(r.io.and_then(|i| i.us_inc()), 2),
            opt(r.io.and_then(|i| i.cpu_inc()), 2),
            r.message.replace('\t', " "),
        ];
        debug_assert_eq!(cells.len(), REPORT_COLUMNS.len());
        s.push_str(&cells.join("\t"));
        s.push('\n');
    }
    s
}

/// The relative-QPS table: per step, each engine's ops/sec and Strata / engine.
pub struct Relative {
    pub engines: Vec<String>,
    pub tests: Vec<String>,
    /// (test, engine) -> ops/sec.
    pub qps: BTreeMap<(String, String), f64>,
}

impl Relative {
    pub fn new(steps: &[Step]) -> Relative {
        let (tests, engines) = tests_and_engines(steps);
        let owned = |v: Vec<&str>| v.into_iter().map(str::to_string).collect();
        let qps = steps
            .iter()
            .filter_map(|st| Some(((st.test.clone(), st.engine.clone()), st.result.qps()?)))
            .collect();
        Relative { engines: owned(engines), tests: owned(tests), qps }
    }

    pub fn get(&self, test: &str, engine: &str) -> Option<f64> {
        self.qps.get(&(test.to_string(), engine.to_string())).copied()
    }

    /// The engines Strata is compared with.
    pub fn baselines(&self) -> Vec<&str> {
        self.engines.iter().map(String::as_str).filter(|e| *e != "strata").collect()
    }

    /// Strata's QPS / `baseline`'s QPS on `test`.
    pub fn ratio(&self, test: &str, baseline: &str) -> Option<f64> {
        let s = self.get(test, "strata")?;
        let b = self.get(test, baseline)?;
        (b > 0.0).then(|| s / b)
    }

    /// Markdown table.
    pub fn markdown(&self) -> String {
        let mut s = String::from("| step |");
        for e in &self.engines {
            let _ = write!(s, " {e} ops/sec |");
        }
        for b in self.baselines() {
            let _ = write!(s, " strata / {b} |");
        }
        s.push_str("\n|---|");
        for _ in 0..self.engines.len() + self.baselines().len() {
            s.push_str("---:|");
        }
        s.push('\n');
        for t in &self.tests {
            let _ = write!(s, "| {t} |");
            for e in &self.engines {
                let _ = write!(s, " {} |", self.get(t, e).map_or("-".into(), fmt_qps));
            }
            for b in self.baselines() {
                let _ =
                    write!(s, " {} |", self.ratio(t, b).map_or("-".into(), |r| format!("{r:.2}")));
            }
            s.push('\n');
        }
        if self.baselines().is_empty() {
            s.push_str(
                "\n(no other engine in this run: build and run with `--engines strata,rocksdb` for relative QPS)\n",
            );
        }
        s
    }

    /// Plain-text table with aligned columns.
    pub fn text(&self) -> String {
        let mut header = vec!["step".to_string()];
        header.extend(self.engines.iter().map(|e| format!("{e} ops/s")));
        header.extend(self.baselines().iter().map(|b| format!("strata/{b}")));
        let mut rows = vec![header];
        for t in &self.tests {
            let mut row = vec![t.clone()];
            row.extend(self.engines.iter().map(|e| self.get(t, e).map_or("-".into(), fmt_qps)));
            row.extend(
                self.baselines()
                    .iter()
                    .map(|b| self.ratio(t, b).map_or("-".into(), |r| format!("{r:.2}"))),
            );
            rows.push(row);
        }
        let cols = rows[0].len();
        let widths: Vec<usize> =
            (0..cols).map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0)).collect();
        let mut s = String::new();
        for row in &rows {
            for (c, cell) in row.iter().enumerate() {
                if c == 0 {
                    let _ = write!(s, "{cell:<w$}", w = widths[c]);
                } else {
                    let _ = write!(s, "  {cell:>w$}", w = widths[c]);
                }
            }
            s.push('\n');
        }
        s
    }
}

/// The I/O table (`io.md`): per step and engine, ops/sec, the `I/O:` line's columns, the CPU
/// µs per operation, the CPU per storage read over fio's (`cpu_inc`, where the step's log has
/// a baseline that measured it) and the step's peak RSS; `None` when no step printed an `I/O:`
/// line.
pub fn io_markdown(steps: &[Step]) -> Option<String> {
    if steps.iter().all(|s| s.result.io.is_none()) {
        return None;
    }
    let mut s = String::from(
        "| step | mode | engine | ops/sec | rps | rmbps | rpo | io_eff | cpu µs/op | cpu_inc | wps | wmbps | w_amp | rss GB |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let cell =
        |v: Option<f64>, prec: usize| v.map_or_else(|| "-".to_string(), |x| format!("{x:.prec$}"));
    for st in steps {
        let r = &st.result;
        let io = r.io.unwrap_or_default();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            st.test,
            if st.mode.is_empty() { "-" } else { &st.mode },
            st.engine,
            r.qps().map_or("-".into(), fmt_qps),
            cell(io.rps, 0),
            cell(io.rmbps, 1),
            cell(io.rpo, 2),
            cell(io.io_eff, 3),
            cell(io.user_op.zip(io.sys_op).map(|(u, y)| u + y), 1),
            cell(io.cpu_inc(), 1),
            cell(io.wps, 0),
            cell(io.wmbps, 1),
            cell(r.w_amp(), 1),
            cell(st.usage.map(|u| u.max_rss_kb as f64 / 1048576.0), 3),
        );
    }
    Some(s)
}

/// The steps' test names and engines, each once, in the order they first appear.
pub(crate) fn tests_and_engines<'a>(
    steps: impl IntoIterator<Item = &'a Step>,
) -> (Vec<&'a str>, Vec<&'a str>) {
    let (mut tests, mut engines): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    for st in steps {
        if !tests.contains(&st.test.as_str()) {
            tests.push(&st.test);
        }
        if !engines.contains(&st.engine.as_str()) {
            engines.push(&st.engine);
        }
    }
    (tests, engines)
}

pub(crate) fn median_of(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { f64::midpoint(v[n / 2 - 1], v[n / 2]) })
}

/// `median [min, max]` of `v` (`-` when empty).
fn spread(v: &[f64], prec: usize) -> String {
    match median_of(v) {
        None => "-".into(),
        Some(m) if v.len() == 1 => format!("{m:.prec$}"),
        Some(m) => {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!("{m:.prec$} [{lo:.prec$}, {hi:.prec$}]")
        }
    }
}

/// The repetitions table (`reps.md`): per step and engine, over the repetitions (rows of one
/// `job_id` each), the median and `[min, max]` of ops/sec, `io_eff`, `cpu_inc`, `rpo`, `wmbps`
/// and W-Amp,
/// the largest peak RSS, and, for each engine other than Strata, Strata's ops/sec over that
/// engine's in the same repetition (median and range of the per-repetition ratios). `None`
/// when no step ran more than once.
pub fn reps_markdown(steps: &[Step]) -> Option<String> {
    let (tests, engines) = tests_and_engines(steps);
    let rows = |t: &str, e: &str| -> Vec<&Step> {
        steps.iter().filter(|s| s.test == t && s.engine == e).collect()
    };
    if !tests.iter().any(|t| engines.iter().any(|e| rows(t, e).len() > 1)) {
        return None;
    }
    let mut s = String::from(
        "| step | engine | reps | ops/sec median [min, max] | strata / engine | io_eff | cpu_inc | rpo | wmbps | w_amp | peak rss GB |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for t in &tests {
        for e in &engines {
            let r = rows(t, e);
            if r.is_empty() {
                continue;
            }
            let col = |f: &dyn Fn(&Step) -> Option<f64>| -> Vec<f64> {
                r.iter().filter_map(|st| f(st)).collect()
            };
            let ratio = if *e == "strata" {
                "-".to_string()
            } else {
                let per_rep: Vec<f64> = r
                    .iter()
                    .filter_map(|b| {
                        let a = steps.iter().find(|a| {
                            a.test == *t && a.engine == "strata" && a.job_id == b.job_id
                        })?;
                        let (qa, qb) = (a.result.qps()?, b.result.qps()?);
                        (qb > 0.0).then(|| qa / qb)
                    })
                    .collect();
                spread(&per_rep, 2)
            };
            let rss = col(&|st| st.usage.map(|u| u.max_rss_kb as f64 / 1048576.0));
            let _ = writeln!(
                s,
                "| {t} | {e} | {} | {} | {ratio} | {} | {} | {} | {} | {} | {} |",
                r.len(),
                spread(&col(&|st| st.result.qps()), 0),
                spread(&col(&|st| st.result.io.and_then(|i| i.io_eff)), 3),
                spread(&col(&|st| st.result.io.and_then(|i| i.cpu_inc())), 1),
                spread(&col(&|st| st.result.io.and_then(|i| i.rpo)), 2),
                spread(&col(&|st| st.result.io.and_then(|i| i.wmbps)), 1),
                spread(&col(&|st| st.result.w_amp()), 1),
                rss.iter().copied().reduce(f64::max).map_or("-".into(), |m| format!("{m:.3}")),
            );
        }
    }
    Some(s)
}

/// Writes every report file into `dir`; returns the names written.
pub fn write_reports(dir: &Path) -> Result<Vec<String>> {
    let steps = load_steps(dir)?;
    let mut written = Vec::new();
    let mut put = |name: &str, data: &[u8]| -> Result<()> {
        std::fs::write(dir.join(name), data).with_context(|| format!("cannot write {name}"))?;
        written.push(name.to_string());
        Ok(())
    };
    put("report.tsv", report_tsv(&steps).as_bytes())?;
    let rel = Relative::new(&steps);
    put("relative_qps.md", rel.markdown().as_bytes())?;
    put("relative_qps.txt", rel.text().as_bytes())?;
    if let Some(io) = io_markdown(&steps) {
        put("io.md", io.as_bytes())?;
    }
    if let Some(reps) = reps_markdown(&steps) {
        put("reps.md", reps.as_bytes())?;
    }
    let qps_chart = chart::qps_chart(&rel);
    put("qps.png", &qps_chart.to_png()?)?;
    if !rel.baselines().is_empty() {
        put("relative_qps.png", &chart::relative_chart(&rel).to_png()?)?;
    }
    for spec in &chart::IO_CHARTS {
        if let Some(c) = chart::io_chart(&steps, spec) {
            put(spec.file, &c.to_png()?)?;
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
DB path: [/tmp/x]
readrandom   :       1.634 micros/op 611620 ops/sec 0.082 seconds 50000 operations;   42.6 MB/s (31508 of 50000 found)

Microseconds per read:
Count: 50000 Average: 1.6 StdDev: 1.0
Min: 0  Median: 1.2000  Max: 2944
Percentiles: P50: 1.62 P75: 2.17 P99: 5.97 P99.9: 16.56 P99.99: 71.45
------------------------------------------------------
 Sum     13/0   22.40 MB   0.0      0.1     0.0      0.1       0.1      0.1       0.0   3.2     23.5     28.8      4.25              1.67        56    0.076   1559K   231K       0.0       0.0
Cumulative stall: 00:00:0.363 H:M:S, 41.6 percent
";

    #[test]
    fn parses_like_benchmark_sh() {
        let r = parse_log(LOG, "readrandom");
        assert_eq!(r.ops_sec, Some(611620.0));
        assert_eq!(r.mb_sec, Some(42.6));
        assert_eq!(r.usec_op, Some(1.634));
        assert_eq!(r.p50, Some(1.62));
        assert_eq!(r.p99, Some(5.97));
        assert_eq!(r.p999, Some(16.56));
        assert_eq!(r.p9999, Some(71.45));
        assert_eq!(r.pmax, Some(2944.0));
        assert_eq!(r.sum_w_amp, Some(3.2));
        assert_eq!(r.w_amp(), Some(3.2));
        assert_eq!(
            (r.c_wsecs, r.c_csecs, r.b_rgb, r.b_wgb),
            (Some(4.25), Some(1.67), Some(0.0), Some(0.0))
        );
        assert_eq!(r.stall_pct, Some(41.6));
        assert_eq!(r.lsm_size.as_deref(), Some("22MB"));
        assert_eq!(r.message, "(31508 of 50000 found)");
        // RocksDB 10.x: one more column before W-Amp.
        let v10 = "Level    Files   Size     Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB) WPreComp(GB) Wnew(GB) Moved(GB) W-Amp Rd(MB/s)\n Sum      3/0     89.31 MB   0.0      0.5     0.3      0.2       0.5       0.9      0.3       0.0   2.1    102.3\n";
        assert_eq!(parse_log(v10, "x").sum_w_amp, Some(2.1));
        let none = parse_log("seekrandom   :       2.221 micros/op 449919 ops/sec 0.111 seconds 50000 operations; (31711 of 50000 found)", "seekrandom");
        assert_eq!(none.mb_sec, None);
        assert_eq!(none.ops_sec, Some(449919.0));
        assert_eq!(none.message, "(31711 of 50000 found)");
    }

    /// A Strata `stats` dump: every field benchmark.sh reads.
    const STATS: &str = "\
Strata:     version 0.1.0
Date:       Sun Nov 22 13:32:26 2026
Level    Files   Size     Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB) Wnew(GB) Moved(GB) W-Amp Rd(MB/s) Wr(MB/s) Comp(sec) CompMergeCPU(sec) Comp(cnt) Avg(sec) KeyIn KeyDrop Rblob(GB) Wblob(GB)
 Sum      3/0     11.12 MB   0.0      0.0     0.0      0.0       0.0      0.0       0.0   1.0      0.0     31.0      0.24              0.10         2    0.120    595K   555K       0.5       0.7
Uptime(secs): 3.1 total, 3.1 interval
Flush(GB): cumulative 0.007, interval 0.007
Cumulative compaction: 51.20 MB write, 2.44 MB/s write, 0.00 GB read, 0.00 MB/s read, 0.2 seconds
Stalls(count): 1 level0_slowdown, 9 level0_slowdown_with_compaction, 2 level0_numfiles, 9 level0_numfiles_with_compaction, 3 stop for pending_compaction_bytes, 4 slowdown for pending_compaction_bytes, 5 memtable_compaction, 6 memtable_slowdown, interval 0 total count
Uptime(secs): 3.2 total, 3.2 interval
Cumulative writes: 648K writes, 648K keys, 648K commit groups, 1.0 writes per commit group, ingest: 0.20 GB, 88.44 MB/s
Cumulative stall: 00:00:0.000 H:M:S, 0.0 percent
";

    #[test]
    fn stats_fields_like_benchmark_sh() {
        let r = parse_log(STATS, "x");
        assert_eq!(r.version.as_deref(), Some("0.1.0"));
        assert_eq!(r.date.as_deref(), Some("2026-11-22T13:32:26"));
        assert_eq!(r.lsm_size.as_deref(), Some("11MB"));
        assert_eq!(
            (r.c_wsecs, r.c_csecs, r.b_rgb, r.b_wgb),
            (Some(0.24), Some(0.1), Some(0.5), Some(0.7))
        );
        assert_eq!(r.c_wgb, Some(0.05));
        assert_eq!(r.c_mbps, Some(2.44));
        assert_eq!(r.uptime, Some(3.2));
        assert_eq!(r.nstall, Some(21.0));
        // (0.05 + 0.007) / 0.2
        assert!(r.w_amp().is_some_and(|w| (w - 0.285).abs() < 1e-9), "{:?}", r.w_amp());
        assert_eq!(
            Usage::parse("Command exited with non-zero status 1\n3.07 2.99 0.01 51200\n"),
            Some(Usage { user_s: 2.99, sys_s: 0.01, max_rss_kb: 51200 })
        );
    }

    #[test]
    fn relative_table() {
        let mk = |engine: &str, test: &str, q: f64| Step {
            engine: engine.into(),
            test: test.into(),
            bench: test.into(),
            log: String::new(),
            du_kb: Some(2048),
            usage: Some(Usage { user_s: 1.5, sys_s: 0.25, max_rss_kb: 1 << 20 }),
            job_id: "j1".into(),
            githash: "abc".into(),
            mode: "iodir".into(),
            result: StepResult { ops_sec: Some(q), sum_w_amp: Some(2.0), ..Default::default() },
        };
        let steps = vec![
            mk("strata", "fillseq", 200.0),
            mk("rocksdb", "fillseq", 100.0),
            mk("strata", "readrandom", 500.0),
        ];
        let rel = Relative::new(&steps);
        assert_eq!(rel.ratio("fillseq", "rocksdb"), Some(2.0));
        assert_eq!(rel.ratio("readrandom", "rocksdb"), None);
        let md = rel.markdown();
        assert!(md.contains("| fillseq | 200 | 100 | 2.00 |"), "{md}");
        assert!(md.contains("| readrandom | 500 | - | - |"), "{md}");
        let tsv = report_tsv(&steps);
        let header: Vec<&str> = tsv.lines().next().unwrap_or_default().split('\t').collect();
        let row: Vec<&str> = tsv.lines().nth(1).unwrap_or_default().split('\t').collect();
        assert_eq!(header.len(), row.len(), "{tsv}");
        let col = |name: &str| row[header.iter().position(|h| *h == name).expect(name)];
        // benchmark.sh's order: ops_sec first, githash 28th; then ours.
        assert_eq!(
            (header[0], header[23], header[27], header[28]),
            ("ops_sec", "test", "githash", "engine")
        );
        assert_eq!(
            (col("ops_sec"), col("w_amp"), col("test"), col("engine")),
            ("200", "2.0", "fillseq", "strata")
        );
        assert_eq!((col("u_cpu"), col("s_cpu"), col("rss")), ("1.5", "0.2", "1.000"));
        assert_eq!((col("job_id"), col("githash"), col("du_mb")), ("j1", "abc", "2.0"));
        assert_eq!((col("mode"), col("rps"), col("io_eff")), ("iodir", "", ""));
        assert_eq!(io_markdown(&steps), None);
    }

    /// Strata's readrandom step of the iodir mode, with `result` and `usage`.
    fn readrandom_iodir(result: StepResult, usage: Option<Usage>) -> Step {
        Step {
            engine: "strata".into(),
            test: "readrandom.iodir".into(),
            bench: "readrandom".into(),
            log: String::new(),
            du_kb: None,
            usage,
            job_id: String::new(),
            githash: String::new(),
            mode: "iodir".into(),
            result,
        }
    }

    /// The first row of a `report.tsv`, by column name.
    fn first_row(tsv: &str) -> std::collections::HashMap<String, String> {
        let mut lines = tsv.lines();
        let header = lines.next().unwrap_or_default().split('\t');
        let row = lines.next().unwrap_or_default().split('\t');
        header.zip(row).map(|(h, v)| (h.to_string(), v.to_string())).collect()
    }

    #[test]
    fn io_columns_reach_the_report() {
        let log = format!(
            "{LOG}I/O: rps=950.0 rmbps=3.71 rpo=1.020 io_eff=0.950 wps=2.0 wmbps=0.50 secs=10.000 \
             process: read_bytes=1 write_bytes=2 syscr=3 syscw=4 device: reads=9500 read_mb=37.1 \
             writes=20 write_mb=5.0\n"
        );
        let r = parse_log(&log, "readrandom");
        assert_eq!(r.ops_sec, Some(611620.0));
        let io = r.io.expect("the I/O line");
        assert_eq!(
            (io.rps, io.rpo, io.io_eff, io.wmbps),
            (Some(950.0), Some(1.02), Some(0.95), Some(0.5))
        );
        let st = readrandom_iodir(r, Some(Usage { user_s: 1.0, sys_s: 1.0, max_rss_kb: 524288 }));
        let tsv = report_tsv(std::slice::from_ref(&st));
        let row = first_row(&tsv);
        let col = |name: &str| row[name].as_str();
        assert_eq!(
            (
                col("mode"),
                col("rps"),
                col("rmbps"),
                col("rpo"),
                col("io_eff"),
                col("wps"),
                col("wmbps")
            ),
            ("iodir", "950.0", "3.71", "1.020", "0.950", "2.0", "0.50")
        );
        assert_eq!(tsv.lines().next().and_then(|h| h.split('\t').next_back()), Some("message"));
        let md = io_markdown(std::slice::from_ref(&st)).expect("a table");
        assert!(
            md.contains("| readrandom.iodir | iodir | strata | 611620 | 950 | 3.7 | 1.02 | 0.950 | - | - | 2 | 0.5 | 3.2 | 0.500 |"),
            "{md}"
        );
        assert_eq!(reps_markdown(&[st]), None);
    }

    /// With the baselines around the step in its log, `io_eff` is the device's read IOPS over
    /// their mean, not over the one before; a malformed line leaves the printed figure.
    #[test]
    fn a_bracketing_baseline_rebases_io_eff() {
        let io_line = "I/O: rps=950.0 rmbps=3.71 rpo=1.020 io_eff=0.950 wps=2.0 wmbps=0.50 \
                       secs=10.000 process: read_bytes=1 write_bytes=2 syscr=3 syscw=4\n";
        let with = |tail: &str| {
            let r = parse_log(&format!("{LOG}{io_line}{tail}"), "readrandom");
            r.io.and_then(|io| io.io_eff)
        };
        assert_eq!(with("fio baseline: before=1000 after=900\n"), Some(1.0));
        assert_eq!(with("fio baseline: before=1000 after=-\n"), Some(0.95));
        assert_eq!(with("fio baseline: before=1000\n"), Some(0.95));
        assert_eq!(with(""), Some(0.95));
        let r = parse_log(&format!("{LOG}fio baseline: before=1000 after=900\n"), "readrandom");
        assert_eq!(r.io, None, "no I/O line: nothing to rebase");
    }

    /// The CPU per storage read (per operation over `rpo`), less fio's per read from the
    /// baseline line, reaches report.tsv (`us_op`, `sy_op`, `us_inc`, `cpu_inc`) and io.md.
    #[test]
    fn cpu_added_over_fio_reaches_the_tables() {
        let log = format!(
            "{LOG}I/O: rps=950.0 rmbps=3.71 rpo=1.020 io_eff=0.950 wps=2.0 wmbps=0.50 \
             secs=10.000 process: read_bytes=1 write_bytes=2 syscr=3 syscw=4 device: reads=9500 \
             read_mb=37.1 writes=20 write_mb=5.0 cpu: user_us=90000 sys_us=290000 \
             us_per_op=38.000 user_us_per_op=9.000 sys_us_per_op=29.000\n\
             fio baseline: before=1000 after=900 user_us_per_io=3.250 sys_us_per_io=28.750\n"
        );
        let r = parse_log(&log, "readrandom");
        let io = r.io.expect("the I/O line");
        assert_eq!((io.user_op, io.sys_op), (Some(9.0), Some(29.0)));
        // Per read: 9 + 29 µs per operation at 1.02 reads per operation, each less fio's.
        let (us, sy) = (9.0 / 1.02 - 3.25, 29.0 / 1.02 - 28.75);
        assert_eq!(io.io_eff, Some(1.0));
        assert_eq!((io.us_inc(), io.cpu_inc()), (Some(us), Some(us + sy)));
        let st = readrandom_iodir(r, None);
        let tsv = report_tsv(std::slice::from_ref(&st));
        let row = first_row(&tsv);
        let col = |name: &str| row[name].as_str();
        assert_eq!(
            (col("us_op"), col("sy_op"), col("us_inc"), col("cpu_inc")),
            ("9.00", "29.00", "5.57", "5.25")
        );
        let md = io_markdown(std::slice::from_ref(&st)).expect("a table");
        assert!(md.contains("| 1.000 | 38.0 | 5.3 | 2 |"), "{md}");
        // A baseline line without fio's CPU (fio gave none): no increment, and io.md says `-`.
        let r = parse_log(&log.replace(" user_us_per_io=3.250 sys_us_per_io=28.750", ""), "x");
        assert_eq!(r.io.and_then(|io| io.cpu_inc()), None);
    }

    #[test]
    fn repetitions_give_median_spread_and_paired_ratios() {
        let mk = |engine: &str, rep: &str, q: f64, eff: f64, rss_kb: u64| Step {
            engine: engine.into(),
            test: "readrandom.iodir".into(),
            bench: "readrandom".into(),
            log: String::new(),
            du_kb: None,
            usage: Some(Usage { user_s: 0.0, sys_s: 0.0, max_rss_kb: rss_kb }),
            job_id: rep.into(),
            githash: String::new(),
            mode: "iodir".into(),
            result: StepResult {
                ops_sec: Some(q),
                io: Some(crate::io::IoColumns { io_eff: Some(eff), ..Default::default() }),
                ..Default::default()
            },
        };
        let steps = [
            mk("strata", "r1", 1100.0, 0.9, 1 << 20),
            mk("rocksdb", "r1", 1000.0, 0.8, 1 << 19),
            mk("strata", "r2", 900.0, 0.7, 1 << 19),
            mk("rocksdb", "r2", 1000.0, 0.85, 1 << 19),
            mk("strata", "r3", 1300.0, 0.95, 1 << 19),
            mk("rocksdb", "r3", 1000.0, 0.9, 1 << 20),
        ];
        let md = reps_markdown(&steps).expect("a table");
        assert!(
            md.contains(
                "| readrandom.iodir | strata | 3 | 1100 [900, 1300] | - | 0.900 [0.700, 0.950] | - |"
            ),
            "{md}"
        );
        // Ratios per repetition: 1.1, 0.9, 1.3.
        assert!(
            md.contains("| readrandom.iodir | rocksdb | 3 | 1000 [1000, 1000] | 1.10 [0.90, 1.30] | 0.850 [0.800, 0.900] |"),
            "{md}"
        );
        assert!(md.contains("| 1.000 |"), "peak RSS is the largest: {md}");
        assert_eq!(median_of(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn slow_steps_compare_by_micros_per_op() {
        // `compact` takes seconds per operation: db_bench prints 0 ops/sec.
        let strata = parse_log(
            "compact      : 1600000.000 micros/op 0 ops/sec 1.600 seconds 1 operations;",
            "compact",
        );
        let rocks = parse_log(
            "compact      : 3200000.000 micros/op 0 ops/sec 3.200 seconds 1 operations;",
            "compact",
        );
        assert_eq!(strata.qps(), Some(0.625));
        let mk = |engine: &str, result: StepResult| Step {
            engine: engine.into(),
            test: "compact".into(),
            bench: "compact".into(),
            log: String::new(),
            du_kb: None,
            usage: None,
            job_id: String::new(),
            githash: String::new(),
            mode: String::new(),
            result,
        };
        let rel = Relative::new(&[mk("strata", strata), mk("rocksdb", rocks)]);
        assert_eq!(rel.ratio("compact", "rocksdb"), Some(2.0));
        assert!(rel.markdown().contains("| compact | 0.62 | 0.31 | 2.00 |"), "{}", rel.markdown());
    }
}
