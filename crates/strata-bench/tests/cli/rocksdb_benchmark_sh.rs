//! RocksDB's own `tools/benchmark.sh`, unchanged, with this strata-bench as `./db_bench`:
//! every job at a tiny NUM_KEYS through `bench/rocksdb-tools.sh jobs`, which checks each job
//! left a report.tsv row with ops_sec > 0 (or, for the jobs benchmark.sh does not summarize,
//! the lines they print; for the features Strata lacks, a refusal naming the feature). This
//! test then reads the report itself.
//!
//! The script comes from the `librocksdb-sys` crate's source (`cargo metadata` downloads it,
//! nothing is built). Without it (offline with an empty cargo cache) or without the tools
//! the script needs (`bc`, `/usr/bin/time`), the test says so and passes.

use std::process::Command;

/// The jobs in groups, each on a DB of its own and starting with a fill that makes the DB its
/// readers need. The jobs mostly wait (each runs for `--duration`, and benchmark.sh samples
/// the system around it), so the test runs the groups side by side. Together the groups are
/// every job of `bench/rocksdb-tools.sh` (`the_groups_are_every_job`). Each group names the
/// report.tsv rows it must write, by the `test` column benchmark.sh writes.
struct Group {
    jobs: &'static [&'static str],
    rows: &'static [&'static str],
}

const FILLS_AND_READS: Group = Group {
    jobs: &[
        "bulkload",
        "fillseq_disable_wal",
        "fillseq_enable_wal",
        "filluniquerandom",
        "readrandom",
        "multireadrandom",
        "fwdrange",
        "revrange",
    ],
    rows: &[
        "bulkload",
        "fillseq.wal_disabled.v400",
        "fillseq.wal_enabled.v400",
        "filluniquerandom",
        "readrandom.t1",
        "multireadrandom.t1",
        "fwdrange.t1",
        "revrange.t1",
    ],
};
const OVERWRITES: Group = Group {
    jobs: &["filluniquerandom", "overwrite", "overwritesome", "overwriteandwait", "updaterandom"],
    rows: &[
        "overwrite.t1.s0",
        "overwritesome.t1.s0",
        "overwriteandwait.t1.s0",
        "updaterandom.t1.s0",
    ],
};
const FLUSHES: Group =
    Group { jobs: &["filluniquerandom", "flush_mt_l0", "waitforcompaction"], rows: &[] };
const WHILE_WRITING: Group = Group {
    jobs: &[
        "filluniquerandom",
        "readwhilewriting",
        "fwdrangewhilewriting",
        "revrangewhilewriting",
        "randomtransaction",
        "universal_compaction",
    ],
    rows: &["readwhilewriting.t1", "fwdrangewhilewriting.t1", "revrangewhilewriting.t1"],
};
const MERGES: Group = Group {
    jobs: &[
        "filluniquerandom",
        "mergerandom",
        "readwhilemerging",
        "fwdrangewhilemerging",
        "revrangewhilemerging",
    ],
    rows: &[
        "mergerandom.t1.s0",
        "readwhilemerging.t1",
        "fwdrangewhilemerging.t1",
        "revrangewhilemerging.t1",
    ],
};

#[test]
fn every_job_runs() {
    run_side_by_side(&[FILLS_AND_READS, OVERWRITES, FLUSHES, WHILE_WRITING, MERGES]);
}

#[test]
fn the_groups_are_every_job() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = std::fs::read_to_string(repo.join("bench/rocksdb-tools.sh")).expect("script");
    let start =
        script.find("all_jobs=(").expect("the script's all_jobs array") + "all_jobs=(".len();
    let len = script[start..].find(')').expect("the end of all_jobs");
    let all: std::collections::BTreeSet<&str> =
        script[start..start + len].split_whitespace().collect();
    let ours: std::collections::BTreeSet<&str> =
        [FILLS_AND_READS, OVERWRITES, FLUSHES, WHILE_WRITING, MERGES]
            .iter()
            .flat_map(|g| g.jobs.iter().copied())
            .collect();
    assert_eq!(ours, all, "the groups must together be bench/rocksdb-tools.sh's all_jobs");
}

/// Runs each group through [`run_jobs`] at the same time.
fn run_side_by_side(groups: &[Group]) {
    std::thread::scope(|s| {
        let runs: Vec<_> =
            groups.iter().map(|g| s.spawn(move || run_jobs(g.jobs, g.rows))).collect();
        for r in runs {
            if let Err(panic) = r.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
}

/// Every flag `tools/db_bench_tool.cc` of the same RocksDB source defines is one strata-bench
/// knows, and every benchmark name it dispatches on is run or refused as not implemented
/// (`bench/rocksdb-tools.sh flags`).
#[test]
fn every_flag_and_benchmark_of_db_bench_is_known() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let run = Command::new("bash")
        .arg(repo.join("bench/rocksdb-tools.sh"))
        .args(["flags", "--bin", env!("CARGO_BIN_EXE_strata-bench")])
        .output()
        .expect("run bash");
    let (stdout, stderr) =
        (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    if run.status.code() == Some(2) && stderr.contains("cargo metadata did not give") {
        eprintln!("SKIPPED: no RocksDB source here:\n{stderr}");
        return;
    }
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("of which strata-bench lacks 0"), "{stdout}");
}

/// Runs `jobs` through `bench/rocksdb-tools.sh jobs` and checks the report has `rows`, each with
/// ops_sec > 0 and the build's git hash, and that every flag passed is documented.
fn run_jobs(jobs: &[&str], rows_wanted: &[&str]) {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = tempfile::tempdir().expect("tempdir");
    let run = Command::new("bash")
        .arg(repo.join("bench/rocksdb-tools.sh"))
        .args(["jobs", "--bin", env!("CARGO_BIN_EXE_strata-bench")])
        .args(["--num-keys", "5000", "--duration", "1", "--out"])
        .arg(out.path())
        .args(jobs)
        .output()
        .expect("run bash");
    let stderr = String::from_utf8_lossy(&run.stderr);
    if run.status.code() == Some(2)
        && (stderr.contains("is missing") || stderr.contains("cargo metadata did not give"))
    {
        eprintln!("SKIPPED: RocksDB's benchmark.sh cannot run here:\n{stderr}");
        return;
    }
    assert!(run.status.success(), "bench/rocksdb-tools.sh jobs failed:\n{stderr}");

    let report = std::fs::read_to_string(out.path().join("report.tsv")).expect("report.tsv");
    let mut lines = report.lines().skip_while(|l| !l.starts_with("ops_sec\t"));
    let header: Vec<&str> = lines.next().expect("a header row").split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let (ops, test, githash) = (col("ops_sec"), col("test"), col("githash"));
    let rows: Vec<Vec<&str>> =
        lines.filter(|l| !l.starts_with("ops_sec\t")).map(|l| l.split('\t').collect()).collect();
    for want in rows_wanted {
        let row = rows
            .iter()
            .find(|r| r.get(test) == Some(want))
            .unwrap_or_else(|| panic!("no report row for {want} in:\n{report}\n{stderr}"));
        let v: f64 = row[ops].parse().unwrap_or(0.0);
        assert!(v > 0.0, "{want}: ops_sec {:?}", row[ops]);
        // benchmark.sh reads the build's git hash from the info LOG's "Git sha" line.
        assert!(!row[githash].is_empty(), "{want}: no githash (LOG's Git sha line)");
    }

    // Every flag the script passed is in bench/README.md's table of flags.
    let readme = std::fs::read_to_string(repo.join("bench/README.md")).expect("bench/README.md");
    let mut missing = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(out.path()).expect("read the output directory") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "out") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for line in text.lines().filter(|l| l.contains("./db_bench ")) {
            for word in line.split_whitespace().filter(|w| w.starts_with("--")) {
                let name = word.split('=').next().unwrap_or(word);
                let family = name.starts_with("--universal_") && readme.contains("`--universal_*`");
                if !family && !readme.contains(&format!("`{name}`")) {
                    missing.insert(name.to_string());
                }
            }
        }
    }
    assert!(missing.is_empty(), "flags benchmark.sh passes, not in bench/README.md: {missing:?}");
}
