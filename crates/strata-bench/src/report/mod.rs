//! Reports of the seeds' suite (`bench/run.sh`): parse each step's log the way RocksDB's
//! `tools/benchmark.sh` does (`docs/db_bench.md` §8.8), then write `report.tsv`, the
//! relative-QPS table (Strata / other engine, per step, as in seed 002) and charts.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

pub mod chart;

/// What one step's log says.
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
    pub w_amp: Option<f64>,
    /// `Cumulative stall: ... , P percent`.
    pub stall_pct: Option<f64>,
    /// Size column of the ` Sum` row, e.g. `25MB`.
    pub lsm_size: Option<String>,
    /// The message after the result line, e.g. `(17318 of 20000 found)`.
    pub message: String,
}

fn num(tok: Option<&&str>) -> Option<f64> {
    tok.and_then(|t| t.trim_end_matches(',').parse::<f64>().ok())
}

/// Parses the log of a run whose result line starts with `bench` (e.g. `seekrandom`).
pub fn parse_log(text: &str, bench: &str) -> StepResult {
    let mut r = StepResult::default();
    // Index of W-Amp in the ` Sum` row: taken from the table's header, whose columns differ
    // across versions (RocksDB 8.x+ adds `WPreComp(GB)`); the row splits `Size` into a number
    // and a unit, one token more than the header before it.
    let mut w_amp_col = 11;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.first() == Some(&"Level") {
            if let Some(i) = f.iter().position(|t| *t == "W-Amp") {
                w_amp_col = i + 1;
            }
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
            r.w_amp = num(f.get(w_amp_col));
        } else if line.starts_with("Cumulative stall") {
            r.stall_pct = num(f.get(4));
        }
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
}

/// A QPS figure as the tables print it: whole numbers, two decimals below 100.
pub fn fmt_qps(q: f64) -> String {
    if q < 100.0 {
        format!("{q:.2}")
    } else {
        format!("{q:.0}")
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
    pub result: StepResult,
}

/// Reads `<dir>/steps.tsv` (`engine test bench log du_kb`, tab-separated) and the logs.
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
        let log_path = dir.join(f[3]);
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        steps.push(Step {
            engine: f[0].to_string(),
            test: f[1].to_string(),
            bench: f[2].to_string(),
            log: f[3].to_string(),
            du_kb: f.get(4).and_then(|v| v.trim().parse().ok()),
            result: parse_log(&log, f[2]),
        });
    }
    Ok(steps)
}

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or_else(String::new, |x| format!("{x:.prec$}"))
}

/// `report.tsv`: the seeds' columns, one row per engine and step.
pub fn report_tsv(steps: &[Step]) -> String {
    let mut s = String::from(
        "engine\ttest\tops_sec\tmb_sec\tw_amp\tusec_op\tp50\tp99\tp99.9\tp99.99\tpmax\tstall%\tlsm_sz\tdu_mb\tmessage\n",
    );
    for st in steps {
        let r = &st.result;
        let _ = writeln!(
            s,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            st.engine,
            st.test,
            if r.ops_sec.is_some() { opt(r.ops_sec, 0) } else { "failed".into() },
            opt(r.mb_sec, 1),
            opt(r.w_amp, 1),
            opt(r.usec_op, 1),
            opt(r.p50, 1),
            opt(r.p99, 0),
            opt(r.p999, 0),
            opt(r.p9999, 0),
            opt(r.pmax, 0),
            opt(r.stall_pct, 1),
            r.lsm_size.clone().unwrap_or_default(),
            st.du_kb.map_or_else(String::new, |k| format!("{:.1}", k as f64 / 1024.0)),
            r.message.replace('\t', " "),
        );
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
        let mut engines: Vec<String> = Vec::new();
        let mut tests: Vec<String> = Vec::new();
        let mut qps = BTreeMap::new();
        for st in steps {
            if !engines.contains(&st.engine) {
                engines.push(st.engine.clone());
            }
            if !tests.contains(&st.test) {
                tests.push(st.test.clone());
            }
            if let Some(q) = st.result.qps() {
                qps.insert((st.test.clone(), st.engine.clone()), q);
            }
        }
        Relative { engines, tests, qps }
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
    let qps_chart = chart::qps_chart(&rel);
    put("qps.png", &qps_chart.to_png()?)?;
    if !rel.baselines().is_empty() {
        put("relative_qps.png", &chart::relative_chart(&rel).to_png()?)?;
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
        assert_eq!(r.w_amp, Some(3.2));
        assert_eq!(r.stall_pct, Some(41.6));
        assert_eq!(r.lsm_size.as_deref(), Some("22MB"));
        assert_eq!(r.message, "(31508 of 50000 found)");
        // RocksDB 10.x: one more column before W-Amp.
        let v10 = "Level    Files   Size     Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB) WPreComp(GB) Wnew(GB) Moved(GB) W-Amp Rd(MB/s)\n Sum      3/0     89.31 MB   0.0      0.5     0.3      0.2       0.5       0.9      0.3       0.0   2.1    102.3\n";
        assert_eq!(parse_log(v10, "x").w_amp, Some(2.1));
        let none = parse_log("seekrandom   :       2.221 micros/op 449919 ops/sec 0.111 seconds 50000 operations; (31711 of 50000 found)", "seekrandom");
        assert_eq!(none.mb_sec, None);
        assert_eq!(none.ops_sec, Some(449919.0));
        assert_eq!(none.message, "(31711 of 50000 found)");
    }

    #[test]
    fn relative_table() {
        let mk = |engine: &str, test: &str, q: f64| Step {
            engine: engine.into(),
            test: test.into(),
            bench: test.into(),
            log: String::new(),
            du_kb: Some(2048),
            result: StepResult { ops_sec: Some(q), ..Default::default() },
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
        assert!(tsv.lines().nth(1).is_some_and(|l| l.starts_with("strata\tfillseq\t200\t")));
        assert!(tsv.lines().nth(1).is_some_and(|l| l.contains("\t2.0\t")));
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
            result,
        };
        let rel = Relative::new(&[mk("strata", strata), mk("rocksdb", rocks)]);
        assert_eq!(rel.ratio("compact", "rocksdb"), Some(2.0));
        assert!(rel.markdown().contains("| compact | 0.62 | 0.31 | 2.00 |"), "{}", rel.markdown());
    }
}
