//! The report of `bench/leveldb-page.sh`: LevelDB's benchmark page (Google, July 2011; seed
//! 003) redone on this machine for every engine, in the page's layout, with the page's own
//! figures quoted beside ours, and a chart.
//!
//! Input: the run directory, as `bench/run.sh` leaves one (`steps.tsv` and the logs it
//! lists), whose step names are this module's row ids (`baseline.readseq`, ...), each step
//! repeated once per run; plus the script's `skipped.tsv` (engines left out, with why) and
//! `machine.txt`. Output: `leveldb_page.md` and `leveldb_page.png`.
//!
//! Every figure of ours is the median of the runs of that row and engine. The page's
//! figures came from a 2011 Xeon with spinning disks: only ratios between engines carry over,
//! which is what the "× LevelDB" columns give.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use super::chart::BarChart;
use super::{load_steps, median_of, Step};

/// One row of the page: a measurement the page reports per engine.
pub struct Row {
    /// The step name in `steps.tsv`.
    pub id: &'static str,
    /// The page's section and subsection titles.
    pub section: &'static str,
    pub sub: &'static str,
    /// "Sequential Reads", "Random Writes", ...
    pub title: &'static str,
    /// A short label for the chart.
    pub label: &'static str,
    /// The row of the baseline this row is compared with on the page ("1.08x baseline").
    pub baseline: Option<&'static str>,
    /// The page counts batch writes in entries, the rest in operations.
    pub unit: &'static str,
}

const S1: &str = "1. Baseline Performance";
const S2: &str = "2. Write Performance under Different Configurations";
const S3: &str = "3. Read Performance under Different Configurations";

const fn row(
    id: &'static str,
    section: &'static str,
    sub: &'static str,
    title: &'static str,
    label: &'static str,
    baseline: Option<&'static str>,
) -> Row {
    Row { id, section, sub, title, label, baseline, unit: "ops/sec" }
}

/// The page's rows, in its order.
pub const ROWS: &[Row] = &[
    row("baseline.readseq", S1, "A. Sequential Reads", "Sequential Reads", "1A seq read", None),
    row("baseline.readrandom", S1, "B. Random Reads", "Random Reads", "1B rand read", None),
    row("baseline.fillseq", S1, "C. Sequential Writes", "Sequential Writes", "1C seq write", None),
    row("baseline.fillrandom", S1, "D. Random Writes", "Random Writes", "1D rand write", None),
    row("large.fillseq", S2, "A. Large Values", "Sequential Writes", "2A large seq", None),
    row("large.fillrandom", S2, "A. Large Values", "Random Writes", "2A large rand", None),
    Row {
        unit: "entries/sec",
        ..row(
            "batch.fillseq",
            S2,
            "B. Batch Writes",
            "Sequential Writes",
            "2B batch seq",
            Some("baseline.fillseq"),
        )
    },
    Row {
        unit: "entries/sec",
        ..row(
            "batch.fillrandom",
            S2,
            "B. Batch Writes",
            "Random Writes",
            "2B batch rand",
            Some("baseline.fillrandom"),
        )
    },
    row(
        "sync.fillseq",
        S2,
        "C. Synchronous Writes",
        "Sequential Writes",
        "2C sync seq",
        Some("baseline.fillseq"),
    ),
    row(
        "sync.fillrandom",
        S2,
        "C. Synchronous Writes",
        "Random Writes",
        "2C sync rand",
        Some("baseline.fillrandom"),
    ),
    row(
        "nocomp.fillseq",
        S2,
        "D. Turning Compression Off",
        "Sequential Writes",
        "2D nocomp seq",
        Some("baseline.fillseq"),
    ),
    row(
        "nocomp.fillrandom",
        S2,
        "D. Turning Compression Off",
        "Random Writes",
        "2D nocomp rand",
        Some("baseline.fillrandom"),
    ),
    row(
        "bigmem.fillseq",
        S2,
        "E. Using More Memory",
        "Sequential Writes",
        "2E 128MB seq",
        Some("baseline.fillseq"),
    ),
    row(
        "bigmem.fillrandom",
        S2,
        "E. Using More Memory",
        "Random Writes",
        "2E 128MB rand",
        Some("baseline.fillrandom"),
    ),
    row(
        "bigcache.readseq",
        S3,
        "A. Larger Caches",
        "Sequential Reads",
        "3A cache seq",
        Some("baseline.readseq"),
    ),
    row(
        "bigcache.readrandom",
        S3,
        "A. Larger Caches",
        "Random Reads",
        "3A cache rand",
        Some("baseline.readrandom"),
    ),
    row(
        "nocompread.readseq",
        S3,
        "B. No Compression Reads",
        "Sequential Reads",
        "3B nocomp seq",
        Some("baseline.readseq"),
    ),
    row(
        "nocompread.readrandom",
        S3,
        "B. No Compression Reads",
        "Random Reads",
        "3B nocomp rand",
        Some("baseline.readrandom"),
    ),
];

/// The engines, in the order the page's table lists them (the page's three first), with the
/// names it prints.
pub const ENGINES: &[(&str, &str)] = &[
    ("leveldb", "LevelDB"),
    ("kyoto", "Kyoto TreeDB"),
    ("sqlite", "SQLite3"),
    ("strata", "Strata"),
    ("rocksdb", "RocksDB"),
    ("fjall", "fjall"),
    ("redb", "redb"),
];

/// The page's own figures: (row, engine, ops/sec or entries/sec). TreeDB has no batch rows
/// (the page: "TreeDB does not support batch writes").
pub const PAGE_FIGURES: &[(&str, &str, f64)] = &[
    ("baseline.readseq", "leveldb", 4_030_000.0),
    ("baseline.readseq", "kyoto", 1_010_000.0),
    ("baseline.readseq", "sqlite", 383_000.0),
    ("baseline.readrandom", "leveldb", 129_000.0),
    ("baseline.readrandom", "kyoto", 151_000.0),
    ("baseline.readrandom", "sqlite", 134_000.0),
    ("baseline.fillseq", "leveldb", 779_000.0),
    ("baseline.fillseq", "kyoto", 342_000.0),
    ("baseline.fillseq", "sqlite", 48_600.0),
    ("baseline.fillrandom", "leveldb", 164_000.0),
    ("baseline.fillrandom", "kyoto", 88_500.0),
    ("baseline.fillrandom", "sqlite", 9_860.0),
    ("large.fillseq", "leveldb", 1_100.0),
    ("large.fillseq", "kyoto", 1_000.0),
    ("large.fillseq", "sqlite", 1_600.0),
    ("large.fillrandom", "leveldb", 480.0),
    ("large.fillrandom", "kyoto", 1_100.0),
    ("large.fillrandom", "sqlite", 1_600.0),
    ("batch.fillseq", "leveldb", 840_000.0),
    ("batch.fillseq", "sqlite", 124_000.0),
    ("batch.fillrandom", "leveldb", 221_000.0),
    ("batch.fillrandom", "sqlite", 22_000.0),
    ("sync.fillseq", "leveldb", 100.0),
    ("sync.fillseq", "kyoto", 7.0),
    ("sync.fillseq", "sqlite", 88.0),
    ("sync.fillrandom", "leveldb", 100.0),
    ("sync.fillrandom", "kyoto", 8.0),
    ("sync.fillrandom", "sqlite", 88.0),
    ("nocomp.fillseq", "leveldb", 594_000.0),
    ("nocomp.fillseq", "kyoto", 485_000.0),
    ("nocomp.fillseq", "sqlite", 48_600.0),
    ("nocomp.fillrandom", "leveldb", 135_000.0),
    ("nocomp.fillrandom", "kyoto", 159_000.0),
    ("nocomp.fillrandom", "sqlite", 9_860.0),
    ("bigmem.fillseq", "leveldb", 812_000.0),
    ("bigmem.fillseq", "kyoto", 321_000.0),
    ("bigmem.fillseq", "sqlite", 48_500.0),
    ("bigmem.fillrandom", "leveldb", 355_000.0),
    ("bigmem.fillrandom", "kyoto", 284_000.0),
    ("bigmem.fillrandom", "sqlite", 9_670.0),
    ("bigcache.readseq", "leveldb", 5_210_000.0),
    ("bigcache.readseq", "kyoto", 1_070_000.0),
    ("bigcache.readseq", "sqlite", 609_000.0),
    ("bigcache.readrandom", "leveldb", 190_000.0),
    ("bigcache.readrandom", "kyoto", 463_000.0),
    ("bigcache.readrandom", "sqlite", 186_000.0),
    ("nocompread.readseq", "leveldb", 4_880_000.0),
    ("nocompread.readseq", "kyoto", 1_230_000.0),
    ("nocompread.readseq", "sqlite", 383_000.0),
    ("nocompread.readrandom", "leveldb", 149_000.0),
    ("nocompread.readrandom", "kyoto", 175_000.0),
    ("nocompread.readrandom", "sqlite", 134_000.0),
];

/// The page's figure for a row and engine.
pub fn page_figure(row: &str, engine: &str) -> Option<f64> {
    PAGE_FIGURES.iter().find(|(r, e, _)| *r == row && *e == engine).map(|&(_, _, v)| v)
}

/// Our results: per (row, engine), every run's ops/sec, and how many runs failed.
#[derive(Default)]
pub struct Results {
    runs: BTreeMap<(String, String), (Vec<f64>, usize)>,
}

impl Results {
    pub fn new(steps: &[Step]) -> Results {
        let mut runs: BTreeMap<(String, String), (Vec<f64>, usize)> = BTreeMap::new();
        for st in steps {
            let e = runs.entry((st.test.clone(), st.engine.clone())).or_default();
            match st.result.qps() {
                Some(q) => e.0.push(q),
                None => e.1 += 1,
            }
        }
        Results { runs }
    }

    /// The median of the runs that gave a figure.
    pub fn median(&self, row: &str, engine: &str) -> Option<f64> {
        self.runs.get(&(row.to_string(), engine.to_string())).and_then(|(v, _)| median_of(v))
    }

    /// (runs with a figure, failed runs).
    pub fn counts(&self, row: &str, engine: &str) -> (usize, usize) {
        self.runs.get(&(row.to_string(), engine.to_string())).map_or((0, 0), |(v, f)| (v.len(), *f))
    }

    /// The engines that ran, in [`ENGINES`] order (unknown names last, as they came).
    pub fn engines(&self) -> Vec<String> {
        let mut seen: Vec<String> = Vec::new();
        for (_, e) in self.runs.keys() {
            if !seen.contains(e) {
                seen.push(e.clone());
            }
        }
        let rank = |e: &String| ENGINES.iter().position(|(n, _)| n == e).unwrap_or(ENGINES.len());
        seen.sort_by_key(rank);
        seen
    }
}

fn display(engine: &str) -> &str {
    ENGINES.iter().find(|(n, _)| *n == engine).map_or(engine, |(_, d)| d)
}

/// A figure as the page prints it: below 100 with one decimal, else whole with thousands
/// separators (`super::ycsb::group`).
fn thousands(v: f64) -> String {
    if v < 100.0 {
        format!("{v:.1}")
    } else {
        super::ycsb::group(v)
    }
}

/// `leveldb_page.md`.
pub fn markdown(res: &Results, skipped: &[(String, String)], machine: &str) -> String {
    let engines = res.engines();
    let mut s = String::from("# LevelDB's benchmark page, every engine in one run\n\n");
    s.push_str(
        "The page (Google, July 2011; LevelDB r39, Kyoto Cabinet 1.2.67 TreeDB, SQLite 3.7.6.3 \
         on a 6-core Xeon X5650 with 7200 rpm disks) redone by `bench/leveldb-page.sh` with \
         strata-bench: one key and value generator (16-byte keys, 100-byte values that \
         compress to half), each engine configured as the page configures it. Our figures \
         are medians of the runs (engines interleaved within each run); the page's are quoted \
         beside them. Only ratios between engines carry over from 2011's hardware: the \
         \"× LevelDB\" column is each engine's figure over LevelDB's, ours over ours and the \
         page's over the page's.\n\n",
    );
    if !machine.trim().is_empty() {
        s.push_str("This run:\n\n```\n");
        s.push_str(machine.trim_end());
        s.push_str("\n```\n\n");
    }
    for (engine, why) in skipped {
        let _ = writeln!(s, "- **{}** was not run: {why}", display(engine));
    }
    if !skipped.is_empty() {
        s.push('\n');
    }
    let mut section = "";
    let mut sub = "";
    for row in ROWS {
        if row.section != section {
            section = row.section;
            let _ = writeln!(s, "## {section}\n");
        }
        if row.sub != sub {
            sub = row.sub;
            let _ = writeln!(s, "### {sub}\n");
        }
        // Section 1's subsections are one row each, named as the row.
        if !row.sub.ends_with(row.title) {
            let _ = writeln!(s, "#### {}\n", row.title);
        }
        let with_base = row.baseline.is_some();
        let _ = write!(s, "| engine | ours ({}) | runs |", row.unit);
        if with_base {
            s.push_str(" × our baseline |");
        }
        s.push_str(" × LevelDB (ours) | page (2011) |");
        if with_base {
            s.push_str(" × page baseline |");
        }
        s.push_str(" × LevelDB (page) |\n|---|---:|---:|");
        if with_base {
            s.push_str("---:|");
        }
        s.push_str("---:|---:|");
        if with_base {
            s.push_str("---:|");
        }
        s.push_str("---:|\n");
        let ours_ldb = res.median(row.id, "leveldb");
        let page_ldb = page_figure(row.id, "leveldb");
        for e in &engines {
            let ours = res.median(row.id, e);
            let (ok, failed) = res.counts(row.id, e);
            let page = page_figure(row.id, e);
            let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
                _ => String::new(),
            };
            let cell = match ours {
                Some(v) => format!("{} {}", thousands(v), row.unit),
                None if ok + failed == 0 => "not run".to_string(),
                None => "failed".to_string(),
            };
            let runs = if failed > 0 { format!("{ok} ({failed} failed)") } else { ok.to_string() };
            let _ = write!(s, "| {} | {cell} | {runs} |", display(e));
            if let Some(b) = row.baseline {
                let _ = write!(s, " {} |", ratio(ours, res.median(b, e)));
            }
            let _ = write!(
                s,
                " {} | {} |",
                ratio(ours, ours_ldb),
                page.map_or(String::new(), |p| format!("{} {}", thousands(p), row.unit))
            );
            if let Some(b) = row.baseline {
                let _ = write!(s, " {} |", ratio(page, page_figure(b, e)));
            }
            let _ = writeln!(s, " {} |", ratio(page, page_ldb));
        }
        s.push('\n');
    }
    s.push_str(
        "Where the rows differ from the page's setup: RocksDB, fjall and Strata get LevelDB's \
         settings (2 MB write buffer + 2 MB cache; 120 + 8 MB and 8 + 120 MB in 2.E and 3.A); \
         redb, a B-tree like TreeDB and SQLite, gets the whole budget as its page cache and \
         4 KiB pages (it cannot change them), and commits each asynchronous write with \
         `Durability::None`; TreeDB's batch rows (absent from the page) are `kcdbsetbulk` \
         calls, atomic; fjall keeps its own compression policy (none in L0-L1, LZ4 below) \
         where the others use snappy or LZO; in 2.A Strata and RocksDB keep values of 4 KiB \
         and more in blob files (Strata writes them there as they are written, RocksDB at \
         its flushes). `bench/README.md` (the LevelDB page section) lists each engine's \
         flags.\n",
    );
    s
}

/// One chart: every row's median ops/sec per engine (log scale).
pub fn chart(res: &Results) -> BarChart {
    let engines = res.engines();
    BarChart {
        title: "LevelDB's benchmark page, every engine (median ops/sec, log scale)".into(),
        y_label: "ops/sec (entries/sec for batch rows)".into(),
        categories: ROWS.iter().map(|r| r.label.to_string()).collect(),
        series: engines
            .iter()
            .map(|e| (display(e).to_string(), ROWS.iter().map(|r| res.median(r.id, e)).collect()))
            .collect(),
        reference: None,
        log_scale: true,
        label_precision: 0,
    }
}

/// `skipped.tsv`: `engine<TAB>why`, one a line (missing file: none skipped).
fn read_skipped(dir: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(dir.join("skipped.tsv"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(e, w)| (e.trim().to_string(), w.trim().to_string()))
        .collect()
}

/// Writes `leveldb_page.md`, `leveldb_page.png` and `report.tsv` (every step's columns) into
/// `dir`, from one reading of its logs; returns the names written.
pub fn write_leveldb_page(dir: &Path) -> Result<Vec<String>> {
    let steps = load_steps(dir)?;
    std::fs::write(dir.join("report.tsv"), crate::report::report_tsv(&steps))
        .context("cannot write report.tsv")?;
    let res = Results::new(&steps);
    let machine = std::fs::read_to_string(dir.join("machine.txt")).unwrap_or_default();
    let md = markdown(&res, &read_skipped(dir), &machine);
    std::fs::write(dir.join("leveldb_page.md"), md).context("cannot write leveldb_page.md")?;
    std::fs::write(dir.join("leveldb_page.png"), chart(&res).to_png()?)
        .context("cannot write leveldb_page.png")?;
    Ok(vec!["leveldb_page.md".into(), "leveldb_page.png".into(), "report.tsv".into()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::parse_log;

    fn step(test: &str, engine: &str, ops: Option<u64>) -> Step {
        let log = ops.map_or_else(String::new, |o| {
            format!(
                "fillseq      :       1.000 micros/op {o} ops/sec 1.000 seconds {o} operations;"
            )
        });
        Step {
            engine: engine.into(),
            test: test.into(),
            bench: "fillseq".into(),
            log: String::new(),
            du_kb: None,
            usage: None,
            job_id: String::new(),
            githash: String::new(),
            mode: String::new(),
            result: parse_log(&log, "fillseq"),
        }
    }

    #[test]
    fn every_row_has_the_pages_leveldb_figure() {
        for r in ROWS {
            assert!(page_figure(r.id, "leveldb").is_some(), "{}", r.id);
            if let Some(b) = r.baseline {
                assert!(ROWS.iter().any(|x| x.id == b), "{b}");
            }
        }
        assert!(PAGE_FIGURES.iter().all(|(r, _, _)| ROWS.iter().any(|x| x.id == *r)));
    }

    #[test]
    fn medians_ratios_and_failures() {
        let steps = vec![
            step("baseline.fillseq", "strata", Some(300)),
            step("baseline.fillseq", "strata", Some(100)),
            step("baseline.fillseq", "strata", Some(200)),
            step("baseline.fillseq", "leveldb", Some(100)),
            step("sync.fillseq", "leveldb", Some(10)),
            step("sync.fillseq", "strata", None),
        ];
        let res = Results::new(&steps);
        assert_eq!(res.median("baseline.fillseq", "strata"), Some(200.0));
        assert_eq!(res.engines(), vec!["leveldb".to_string(), "strata".to_string()]);
        let md = markdown(&res, &[("kyoto".into(), "libkyotocabinet-dev is missing".into())], "");
        assert!(md.contains("| Strata | 200 ops/sec | 3 | 2.00x |"), "{md}");
        // LevelDB's sync row: 10 ops/sec, 0.10x its baseline; the page's 100 vs 779,000.
        assert!(
            md.contains(
                "| LevelDB | 10.0 ops/sec | 1 | 0.10x | 1.00x | 100 ops/sec | 0.00x | 1.00x |"
            ),
            "{md}"
        );
        assert!(md.contains("| Strata | failed | 0 (1 failed) |"), "{md}");
        assert!(md.contains("**Kyoto TreeDB** was not run: libkyotocabinet-dev is missing"));
        assert!(md.contains("| Strata | not run |"), "rows without a step: {md}");
        assert_eq!(thousands(4_030_000.0), "4,030,000");
        assert_eq!(thousands(480.0), "480");
        let c = chart(&res);
        assert_eq!(c.categories.len(), ROWS.len());
        assert!(c.to_png().is_ok());
    }
}
