//! Reports of `bench/ycsb.sh`: YCSB over the Redis protocol, strata-server against
//! redis-server, in the shape of the Pegasus benchmark page (seed 004).
//!
//! Input: `DIR/runs.tsv` (one row per YCSB process: `rep durability engine workload case
//! ratio threads records ops exit log`) and the YCSB output each row names. YCSB prints one
//! `[OPERATION], metric, value` line per metric; with `measurementtype=hdrhistogram` and
//! `hdrhistogram.percentiles=50,99,99.9` they include `AverageLatency(us)`,
//! `99thPercentileLatency(us)` and `99.9PercentileLatency(us)`, and `Return=STATUS` counts.
//!
//! Read side = `READ` + `SCAN` operations, write side = `UPDATE` + `INSERT` (a
//! read-modify-write of workload F shows as one `READ` and one `UPDATE`). When a side has two
//! kinds, its QPS is their sum, its average the operation-weighted mean, and its percentiles
//! the larger of the two (an upper bound: YCSB prints no merged histogram). QPS is operations
//! over the process's `[OVERALL], RunTime(ms)`.
//!
//! Output: `results.tsv` (one row per run, numbers only), `table.tsv` and `table.md` (per
//! durability and workload, each engine's `median [min–max]` over the repetitions, then a
//! `strata/redis` row of the medians' ratios and a `strata/redis per rep` row of the ratios
//! within each repetition), `ycsb_qps.png` and, with both engines,
//! `ycsb_relative.png`. Every operation that returned anything but `OK` is an error, counted
//! in the `errors` column; [`write_ycsb_reports`] reports the runs with errors.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::chart::BarChart;
use super::median_of;

/// Operation kinds on the read side.
pub const READ_KINDS: &[&str] = &["READ", "SCAN"];
/// Operation kinds on the write side.
pub const WRITE_KINDS: &[&str] = &["UPDATE", "INSERT"];

/// One operation kind's measurements from a YCSB log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpStats {
    pub ops: u64,
    pub avg_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p999_us: Option<f64>,
    /// Operations whose `Return=` status was not `OK`.
    pub failed: u64,
}

/// What one YCSB process printed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct YcsbLog {
    pub runtime_ms: f64,
    /// By operation kind (`READ`, `UPDATE`, ...; `OVERALL`, `CLEANUP` and GC lines left out).
    pub ops: BTreeMap<String, OpStats>,
}

/// Throughput and latency of one side (reads or writes) of a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Side {
    pub ops: u64,
    pub qps: f64,
    pub avg_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p999_us: Option<f64>,
}

/// Parses YCSB's end-of-run output. Fails when it has no `[OVERALL], RunTime(ms)` line (the
/// process died before reporting) or a number does not parse.
pub fn parse_log(text: &str) -> Result<YcsbLog> {
    let mut log = YcsbLog::default();
    let mut runtime = None;
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.strip_prefix('[') else { continue };
        let Some((kind, rest)) = rest.split_once("], ") else { continue };
        let Some((metric, value)) = rest.split_once(", ") else { continue };
        let number = || -> Result<f64> {
            let v: f64 = value.trim().parse().with_context(|| {
                format!("line {}: [{kind}] {metric}: expected a number, got '{value}'", i + 1)
            })?;
            Ok(v)
        };
        if kind == "OVERALL" {
            if metric == "RunTime(ms)" {
                runtime = Some(number()?);
            }
            continue;
        }
        if kind == "CLEANUP" || kind.starts_with("TOTAL_G") {
            continue;
        }
        let op = log.ops.entry(kind.to_string()).or_default();
        match metric {
            // Counts are printed as integers; a fraction would be a format change.
            "Operations" => op.ops = number()? as u64,
            "AverageLatency(us)" => op.avg_us = Some(number()?),
            "99thPercentileLatency(us)" => op.p99_us = Some(number()?),
            "99.9PercentileLatency(us)" => op.p999_us = Some(number()?),
            m if m.starts_with("Return=") && m != "Return=OK" => op.failed += number()? as u64,
            _ => {}
        }
    }
    log.ops.retain(|_, s| s.ops > 0 || s.failed > 0);
    match runtime {
        Some(ms) if ms > 0.0 => log.runtime_ms = ms,
        Some(ms) => bail!("[OVERALL], RunTime(ms) is {ms}: expected a positive run time"),
        None => bail!("no '[OVERALL], RunTime(ms)' line: YCSB did not finish"),
    }
    Ok(log)
}

impl YcsbLog {
    /// The side made of `kinds`, `None` when none of them ran.
    pub fn side(&self, kinds: &[&str]) -> Option<Side> {
        let parts: Vec<&OpStats> =
            kinds.iter().filter_map(|k| self.ops.get(*k)).filter(|s| s.ops > 0).collect();
        if parts.is_empty() {
            return None;
        }
        let ops: u64 = parts.iter().map(|s| s.ops).sum();
        let weighted: Option<f64> = parts.iter().map(|s| s.avg_us.map(|a| a * s.ops as f64)).sum();
        let worst = |f: fn(&OpStats) -> Option<f64>| -> Option<f64> {
            parts.iter().map(|s| f(s)).try_fold(f64::NEG_INFINITY, |m, v| v.map(|v| m.max(v)))
        };
        Some(Side {
            ops,
            qps: ops as f64 * 1000.0 / self.runtime_ms,
            avg_us: weighted.map(|w| w / ops as f64),
            p99_us: worst(|s| s.p99_us),
            p999_us: worst(|s| s.p999_us),
        })
    }

    /// Operations of any kind that did not return `OK`.
    pub fn failed(&self) -> u64 {
        self.ops.values().map(|s| s.failed).sum()
    }
}

/// One row of `runs.tsv` with its parsed log.
#[derive(Clone, Debug)]
pub struct Run {
    pub rep: String,
    pub durability: String,
    pub engine: String,
    pub workload: String,
    pub case: String,
    pub ratio: String,
    pub threads: String,
    pub exit: String,
    pub log: Result<YcsbLog, String>,
}

impl Run {
    pub fn read(&self) -> Option<Side> {
        self.log.as_ref().ok().and_then(|l| l.side(READ_KINDS))
    }
    pub fn write(&self) -> Option<Side> {
        self.log.as_ref().ok().and_then(|l| l.side(WRITE_KINDS))
    }
    /// Failed operations, or 1 when the process failed or its log is unreadable.
    pub fn errors(&self) -> u64 {
        match &self.log {
            Ok(l) if self.exit == "0" => l.failed(),
            Ok(l) => l.failed().max(1),
            Err(_) => 1,
        }
    }
    /// Why the run is not clean, `None` when it is.
    pub fn problem(&self) -> Option<String> {
        match &self.log {
            Err(e) => Some(e.clone()),
            Ok(_) if self.exit != "0" => Some(format!("YCSB exited with {}", self.exit)),
            Ok(l) if l.failed() > 0 => {
                let kinds: Vec<String> = l
                    .ops
                    .iter()
                    .filter(|(_, s)| s.failed > 0)
                    .map(|(k, s)| format!("{k} {}", s.failed))
                    .collect();
                Some(format!("operations not OK: {}", kinds.join(", ")))
            }
            Ok(_) => None,
        }
    }
}

/// Reads `DIR/runs.tsv` and every log it names.
pub fn load_runs(dir: &Path) -> Result<Vec<Run>> {
    let path = dir.join("runs.tsv");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
    let col = |name: &str| -> Result<usize> {
        header
            .iter()
            .position(|h| *h == name)
            .with_context(|| format!("{}: the header has no '{name}' column", path.display()))
    };
    let cols = [
        col("rep")?,
        col("durability")?,
        col("engine")?,
        col("workload")?,
        col("case")?,
        col("ratio")?,
        col("threads")?,
        col("exit")?,
        col("log")?,
    ];
    let mut runs = Vec::new();
    for (i, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let get = |c: usize| -> Result<String> {
            fields.get(c).map(|s| (*s).to_string()).with_context(|| {
                format!(
                    "{} line {}: {} fields, expected {}",
                    path.display(),
                    i + 2,
                    fields.len(),
                    header.len()
                )
            })
        };
        let log_path = dir.join(get(cols[8])?);
        let log = std::fs::read_to_string(&log_path)
            .map_err(|e| format!("cannot read {}: {e}", log_path.display()))
            .and_then(|t| parse_log(&t).map_err(|e| format!("{}: {e:#}", log_path.display())));
        runs.push(Run {
            rep: get(cols[0])?,
            durability: get(cols[1])?,
            engine: get(cols[2])?,
            workload: get(cols[3])?,
            case: get(cols[4])?,
            ratio: get(cols[5])?,
            threads: get(cols[6])?,
            exit: get(cols[7])?,
            log,
        });
    }
    if runs.is_empty() {
        bail!("{}: no runs", path.display());
    }
    Ok(runs)
}

fn num(v: Option<f64>, prec: usize) -> String {
    v.map_or_else(String::new, |v| format!("{v:.prec$}"))
}

/// `results.tsv`: one row per run, numbers only (blank where the side did not run).
pub fn results_tsv(runs: &[Run]) -> String {
    let mut s = String::from(
        "rep\tdurability\tengine\tworkload\tcase\tratio\tthreads\texit\truntime_ms\t\
         r_ops\tr_qps\tr_avg_us\tr_p99_us\tr_p999_us\tw_ops\tw_qps\tw_avg_us\tw_p99_us\tw_p999_us\terrors\n",
    );
    for r in runs {
        let runtime = r.log.as_ref().ok().map(|l| l.runtime_ms);
        let _ = write!(
            s,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            r.rep,
            r.durability,
            r.engine,
            r.workload,
            r.case,
            r.ratio,
            r.threads,
            r.exit,
            num(runtime, 0)
        );
        for side in [r.read(), r.write()] {
            let _ = write!(
                s,
                "\t{}\t{}\t{}\t{}\t{}",
                side.map_or_else(String::new, |x| x.ops.to_string()),
                num(side.map(|x| x.qps), 1),
                num(side.and_then(|x| x.avg_us), 1),
                num(side.and_then(|x| x.p99_us), 0),
                num(side.and_then(|x| x.p999_us), 0)
            );
        }
        let _ = writeln!(s, "\t{}", r.errors());
    }
    s
}

/// The table's metric columns, as the Pegasus page names them.
pub const METRICS: [&str; 8] = [
    "R-QPS",
    "R-AVG-Lat",
    "R-P99-Lat",
    "R-P999-Lat",
    "W-QPS",
    "W-AVG-Lat",
    "W-P99-Lat",
    "W-P999-Lat",
];

fn metrics(r: &Run) -> [Option<f64>; 8] {
    let (rd, wr) = (r.read(), r.write());
    [
        rd.map(|s| s.qps),
        rd.and_then(|s| s.avg_us),
        rd.and_then(|s| s.p99_us),
        rd.and_then(|s| s.p999_us),
        wr.map(|s| s.qps),
        wr.and_then(|s| s.avg_us),
        wr.and_then(|s| s.p99_us),
        wr.and_then(|s| s.p999_us),
    ]
}

/// `median [min–max]` of `v` with each number as `show` writes it; the median alone for one
/// value, `-` for none.
fn spread_as(v: &[f64], show: impl Fn(f64) -> String) -> String {
    let Some(m) = median_of(v) else { return "-".into() };
    if v.len() == 1 {
        return show(m);
    }
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{} [{}–{}]", show(m), show(lo), show(hi))
}

/// `median [min–max]`, whole numbers with thousands separators (`-` when empty).
fn spread(v: &[f64]) -> String {
    spread_as(v, group)
}

/// `v` rounded, with a comma every three digits (as the Pegasus tables print them).
pub(super) fn group(v: f64) -> String {
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 {
        format!("-{out}")
    } else {
        out
    }
}

/// One table row: a case (durability + workload) for one engine, or the ratio row.
#[derive(Clone, Debug)]
pub struct TableRow {
    pub case: String,
    pub workload: String,
    pub durability: String,
    pub threads: String,
    pub ratio: String,
    pub engine: String,
    pub cells: [String; 8],
    pub errors: String,
}

/// Per metric, strata's figure over redis's within each repetition that ran both engines on
/// `runs` (one case), as `median [min–max]` over those repetitions. Both engines of a
/// repetition ran back to back, so the machine's drift between repetitions (which moves both
/// alike) stays out of these ratios, where it widens the medians' ranges.
fn paired_ratios(runs: &[&Run]) -> Option<[String; 8]> {
    let mut reps: Vec<&str> = runs.iter().map(|r| r.rep.as_str()).collect();
    reps.sort_unstable();
    reps.dedup();
    let mut ratios: [Vec<f64>; 8] = Default::default();
    let mut paired = 0;
    for rep in reps {
        let of = |engine: &str| runs.iter().find(|r| r.rep == rep && r.engine == engine);
        let (Some(s), Some(r)) = (of("strata"), of("redis")) else { continue };
        paired += 1;
        for (m, (a, b)) in metrics(s).into_iter().zip(metrics(r)).enumerate() {
            if let (Some(a), Some(b)) = (a, b) {
                if b > 0.0 {
                    ratios[m].push(a / b);
                }
            }
        }
    }
    (paired > 0).then(|| std::array::from_fn(|m| spread_as(&ratios[m], |x| format!("{x:.2}"))))
}

/// The table rows: cases in the order they first ran, strata first among engines, and after
/// each case that both engines ran a `strata/redis` row (ratio of the medians) and a
/// `strata/redis per rep` row (the ratios within each repetition, [`paired_ratios`]).
pub fn table(runs: &[Run]) -> Vec<TableRow> {
    let mut cases: Vec<(&str, &str)> = Vec::new();
    let mut engines: Vec<&str> = Vec::new();
    for r in runs {
        if !cases.contains(&(r.durability.as_str(), r.workload.as_str())) {
            cases.push((&r.durability, &r.workload));
        }
        if !engines.contains(&r.engine.as_str()) {
            engines.push(&r.engine);
        }
    }
    engines.sort_by_key(|e| (*e != "strata", *e));
    let mut rows = Vec::new();
    for (dur, wl) in cases {
        let mut medians: BTreeMap<&str, [Option<f64>; 8]> = BTreeMap::new();
        let case: Vec<&Run> =
            runs.iter().filter(|r| r.durability == dur && r.workload == wl).collect();
        let mut first: Option<&Run> = None;
        for engine in &engines {
            let mine: Vec<&Run> = case.iter().copied().filter(|r| r.engine == *engine).collect();
            let Some(head) = mine.first() else { continue };
            first.get_or_insert(head);
            let values: Vec<[Option<f64>; 8]> = mine.iter().map(|r| metrics(r)).collect();
            let mut cells: [String; 8] = Default::default();
            let mut med = [None; 8];
            for m in 0..8 {
                let v: Vec<f64> = values.iter().filter_map(|x| x[m]).collect();
                cells[m] = spread(&v);
                med[m] = median_of(&v);
            }
            medians.insert(engine, med);
            rows.push(TableRow {
                case: head.case.clone(),
                workload: wl.to_string(),
                durability: dur.to_string(),
                threads: format!("1 * {}", head.threads),
                ratio: head.ratio.clone(),
                engine: (*engine).to_string(),
                cells,
                errors: mine.iter().map(|r| r.errors()).sum::<u64>().to_string(),
            });
        }
        if let (Some(s), Some(r), Some(head)) = (medians.get("strata"), medians.get("redis"), first)
        {
            let cells = std::array::from_fn(|m| match (s[m], r[m]) {
                (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
                _ => "-".into(),
            });
            let row = |engine: &str, cells| TableRow {
                case: head.case.clone(),
                workload: wl.to_string(),
                durability: dur.to_string(),
                threads: format!("1 * {}", head.threads),
                ratio: head.ratio.clone(),
                engine: engine.into(),
                cells,
                errors: String::new(),
            };
            rows.push(row("strata/redis", cells));
            if let Some(cells) = paired_ratios(&case) {
                rows.push(row("strata/redis per rep", cells));
            }
        }
    }
    rows
}

const HEADER: [&str; 6] = ["case", "workload", "durability", "threads", "R/W ratio", "engine"];

/// `table.tsv`: the table's cells, tab-separated, one header line.
pub fn table_tsv(rows: &[TableRow]) -> String {
    let mut s = HEADER.join("\t");
    for m in METRICS {
        let _ = write!(s, "\t{m}");
    }
    s.push_str("\terrors\n");
    for r in rows {
        let _ = writeln!(
            s,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            r.case,
            r.workload,
            r.durability,
            r.threads,
            r.ratio,
            r.engine,
            r.cells.join("\t"),
            r.errors
        );
    }
    s
}

/// `table.md`: the same table in Markdown, with a legend.
pub fn table_markdown(rows: &[TableRow], reps: usize) -> String {
    let mut s = format!(
        "YCSB over the Redis protocol, 1 KB records (10 fields x 100 bytes), one client \
         process (`threads` = 1 * YCSB threadcount). Each cell: median [min–max] over {reps} \
         repetition(s). QPS in operations/s, latencies in microseconds. Reads = READ + SCAN, \
         writes = UPDATE + INSERT. `strata/redis` rows: ratio of the medians (QPS: > 1 means \
         strata-server is faster; latency: < 1 means strata-server is faster); `strata/redis per \
         rep` rows: the ratio within each repetition (both engines ran back to back in it), \
         median [min–max] over the repetitions, free of the machine's drift between them. \
         Durability `always`: every acknowledged write is fsynced (redis `appendonly yes`, \
         `appendfsync always`; strata-server `--appendfsync always`); `everysec`: fsync once a \
         second on both.\n\n"
    );
    let mut head: Vec<&str> = HEADER.to_vec();
    head.extend(METRICS);
    head.push("errors");
    let _ = writeln!(s, "| {} |", head.join(" | "));
    let _ = writeln!(s, "|{}", " --- |".repeat(head.len()));
    for r in rows {
        let (b0, b1) = if r.engine.contains('/') { ("*", "*") } else { ("", "") };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {b0}{}{b1} | {} | {} |",
            r.case,
            r.workload,
            r.durability,
            r.threads,
            r.ratio,
            r.engine,
            r.cells.join(" | "),
            r.errors
        );
    }
    s
}

/// Median total QPS (reads + writes) per case and engine, as a grouped bar chart (log scale).
pub fn qps_chart(runs: &[Run]) -> BarChart {
    let (cats, engines, get) = totals(runs);
    BarChart {
        title: "YCSB throughput (ops/sec, median, log scale)".into(),
        y_label: "ops/sec".into(),
        series: engines
            .iter()
            .map(|e| (e.clone(), cats.iter().map(|c| get(c, e)).collect()))
            .collect(),
        categories: cats.iter().map(|(d, w)| format!("{w}.{d}")).collect(),
        reference: None,
        log_scale: true,
        label_precision: 0,
    }
}

/// strata / redis of the median total QPS per case, with the 1.0 line; `None` unless both ran.
pub fn relative_chart(runs: &[Run]) -> Option<BarChart> {
    let (cats, engines, get) = totals(runs);
    if !(engines.iter().any(|e| e == "strata") && engines.iter().any(|e| e == "redis")) {
        return None;
    }
    let ratios = cats
        .iter()
        .map(|c| match (get(c, "strata"), get(c, "redis")) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        })
        .collect();
    Some(BarChart {
        title: "YCSB relative QPS: strata-server / redis-server".into(),
        y_label: "relative QPS".into(),
        categories: cats.iter().map(|(d, w)| format!("{w}.{d}")).collect(),
        series: vec![("strata / redis".into(), ratios)],
        reference: Some(1.0),
        log_scale: false,
        label_precision: 2,
    })
}

type Totals<'a> =
    (Vec<(String, String)>, Vec<String>, Box<dyn Fn(&(String, String), &str) -> Option<f64> + 'a>);

fn totals(runs: &[Run]) -> Totals<'_> {
    let mut cats: Vec<(String, String)> = Vec::new();
    let mut engines: Vec<String> = Vec::new();
    for r in runs {
        let c = (r.durability.clone(), r.workload.clone());
        if !cats.contains(&c) {
            cats.push(c);
        }
        if !engines.contains(&r.engine) {
            engines.push(r.engine.clone());
        }
    }
    engines.sort_by_key(|e| (e != "strata", e.clone()));
    let get = move |c: &(String, String), e: &str| -> Option<f64> {
        let v: Vec<f64> = runs
            .iter()
            .filter(|r| r.durability == c.0 && r.workload == c.1 && r.engine == e)
            .filter_map(|r| {
                let t = r.read().map_or(0.0, |s| s.qps) + r.write().map_or(0.0, |s| s.qps);
                (t > 0.0).then_some(t)
            })
            .collect();
        median_of(&v)
    };
    (cats, engines, Box::new(get))
}

/// What [`write_ycsb_reports`] did: the files written, and each run that was not clean as
/// `(which run, what went wrong)`.
pub struct Written {
    pub files: Vec<String>,
    pub problems: Vec<(String, String)>,
}

/// Writes every report of `DIR`.
pub fn write_ycsb_reports(dir: &Path) -> Result<Written> {
    let runs = load_runs(dir)?;
    let mut written = Vec::new();
    let mut put = |name: &str, data: &[u8]| -> Result<()> {
        std::fs::write(dir.join(name), data).with_context(|| format!("cannot write {name}"))?;
        written.push(name.to_string());
        Ok(())
    };
    put("results.tsv", results_tsv(&runs).as_bytes())?;
    let rows = table(&runs);
    let mut reps: Vec<&str> = runs.iter().map(|r| r.rep.as_str()).collect();
    reps.sort_unstable();
    reps.dedup();
    put("table.tsv", table_tsv(&rows).as_bytes())?;
    put("table.md", table_markdown(&rows, reps.len()).as_bytes())?;
    put("ycsb_qps.png", &qps_chart(&runs).to_png()?)?;
    if let Some(c) = relative_chart(&runs) {
        put("ycsb_relative.png", &c.to_png()?)?;
    }
    let problems = runs
        .iter()
        .filter_map(|r| {
            r.problem()
                .map(|p| (format!("rep {} {} {} {}", r.rep, r.durability, r.engine, r.workload), p))
        })
        .collect();
    Ok(Written { files: written, problems })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
[OVERALL], RunTime(ms), 2000
[OVERALL], Throughput(ops/sec), 1000.0
[TOTAL_GCs], Count, 1
[CLEANUP], Operations, 4
[CLEANUP], AverageLatency(us), 428.25
[READ], Operations, 1500
[READ], AverageLatency(us), 100.0
[READ], 99thPercentileLatency(us), 900
[READ], 99.9PercentileLatency(us), 2000
[READ], Return=OK, 1500
[SCAN], Operations, 500
[SCAN], AverageLatency(us), 300.0
[SCAN], 99thPercentileLatency(us), 1200
[SCAN], 99.9PercentileLatency(us), 1500
[SCAN], Return=OK, 499
[SCAN], Return=ERROR, 1
[UPDATE], Operations, 0
";

    #[test]
    fn parses_sides_and_errors() {
        let log = parse_log(LOG).unwrap();
        assert!((log.runtime_ms - 2000.0).abs() < 1e-9);
        assert!(!log.ops.contains_key("CLEANUP"));
        assert!(!log.ops.contains_key("UPDATE"), "a kind with no operations is left out");
        let r = log.side(READ_KINDS).unwrap();
        assert_eq!(r.ops, 2000);
        assert!((r.qps - 1000.0).abs() < 1e-9);
        assert_eq!(r.avg_us, Some(150.0));
        assert_eq!(r.p99_us, Some(1200.0));
        assert_eq!(r.p999_us, Some(2000.0));
        assert_eq!(log.side(WRITE_KINDS), None);
        assert_eq!(log.failed(), 1);
    }

    #[test]
    fn unfinished_or_garbled_logs_are_errors() {
        let e = parse_log("[READ], Operations, 3\n").unwrap_err();
        assert!(format!("{e:#}").contains("RunTime"), "{e:#}");
        let e = parse_log("[OVERALL], RunTime(ms), x\n").unwrap_err();
        assert!(format!("{e:#}").contains("line 1"), "{e:#}");
    }

    fn run(engine: &str, rep: &str, log: &str) -> Run {
        Run {
            rep: rep.into(),
            durability: "always".into(),
            engine: engine.into(),
            workload: "e".into(),
            case: "E: short ranges".into(),
            ratio: "95:5 scan:insert".into(),
            threads: "8".into(),
            exit: "0".into(),
            log: parse_log(log).map_err(|e| e.to_string()),
        }
    }

    #[test]
    fn table_has_medians_ranges_and_ratio_rows() {
        let half = LOG.replace("RunTime(ms), 2000", "RunTime(ms), 4000");
        let runs = vec![
            run("redis", "1", &half),
            run("strata", "1", LOG),
            run("strata", "2", &half),
            run("strata", "3", LOG),
        ];
        let rows = table(&runs);
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0].engine, "strata");
        assert_eq!(rows[0].cells[0], "1,000 [500–1,000]");
        assert_eq!(rows[0].cells[4], "-");
        assert_eq!(rows[0].errors, "3");
        assert_eq!(rows[1].engine, "redis");
        assert_eq!(rows[1].cells[0], "500");
        assert_eq!(rows[2].engine, "strata/redis");
        assert_eq!(rows[2].cells[0], "2.00");
        assert_eq!(rows[2].cells[1], "1.00");
        let md = table_markdown(&rows, 3);
        assert!(
            md.contains("| case | workload | durability | threads | R/W ratio | engine | R-QPS |")
        );
        assert!(md.contains("| *strata/redis* |"));
        assert_eq!(rows[3].engine, "strata/redis per rep");
        assert_eq!(rows[3].cells[0], "2.00", "only repetition 1 ran both engines");
        assert_eq!(rows[3].cells[4], "-");
        let tsv = table_tsv(&rows);
        assert_eq!(tsv.lines().count(), 5);
        assert!(tsv.lines().all(|l| l.split('\t').count() == 15), "{tsv}");
    }

    #[test]
    fn per_rep_ratios_pair_the_engines_of_each_repetition() {
        // Read QPS per repetition, strata / redis: 1000 / 500, 250 / 500, 500 / 125. Each
        // engine's median is 500, so the medians' ratio is 1.00; within the repetitions
        // strata ran at 2, 0.5 and 4 times redis's rate.
        let at = |ms: u32| LOG.replace("RunTime(ms), 2000", &format!("RunTime(ms), {ms}"));
        let runs = vec![
            run("strata", "1", &at(2000)),
            run("redis", "1", &at(4000)),
            run("redis", "2", &at(4000)),
            run("strata", "2", &at(8000)),
            run("strata", "3", &at(4000)),
            run("redis", "3", &at(16000)),
        ];
        let rows = table(&runs);
        let ratio = rows.iter().find(|r| r.engine == "strata/redis").unwrap();
        assert_eq!(ratio.cells[0], "1.00");
        let paired = rows.iter().find(|r| r.engine == "strata/redis per rep").unwrap();
        assert_eq!(paired.cells[0], "2.00 [0.50–4.00]");
        assert_eq!(paired.cells[1], "1.00 [1.00–1.00]", "latencies as the logs give them");
        // Without a repetition that ran both engines there is no such row.
        let alone = table(&runs[..1]);
        assert!(alone.iter().all(|r| r.engine != "strata/redis per rep"));
    }

    #[test]
    fn groups_thousands() {
        assert_eq!(group(0.4), "0");
        assert_eq!(group(999.0), "999");
        assert_eq!(group(1000.0), "1,000");
        assert_eq!(group(1_234_567.0), "1,234,567");
    }

    #[test]
    fn failed_process_counts_as_an_error() {
        let mut r = run("strata", "1", LOG);
        r.exit = "1".into();
        assert!(r.problem().unwrap().contains("exited with 1"));
        let r = run("strata", "1", "killed\n");
        assert_eq!(r.errors(), 1);
        assert!(r.read().is_none());
    }
}
