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

/// Jobs whose report.tsv row this test expects, by the `test` column benchmark.sh writes.
const ROWS: &[&str] = &[
    "bulkload",
    "fillseq.wal_disabled.v400",
    "fillseq.wal_enabled.v400",
    "filluniquerandom",
    "readrandom.t1",
    "multireadrandom.t1",
    "fwdrange.t1",
    "revrange.t1",
    "overwrite.t1.s0",
    "overwritesome.t1.s0",
    "overwriteandwait.t1.s0",
    "updaterandom.t1.s0",
    "readwhilewriting.t1",
    "fwdrangewhilewriting.t1",
    "revrangewhilewriting.t1",
    "mergerandom.t1.s0",
    "readwhilemerging.t1",
    "fwdrangewhilemerging.t1",
    "revrangewhilemerging.t1",
];

#[test]
fn every_benchmark_sh_job_runs() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = tempfile::tempdir().expect("tempdir");
    let run = Command::new("bash")
        .arg(repo.join("bench/rocksdb-tools.sh"))
        .args(["jobs", "--bin", env!("CARGO_BIN_EXE_strata-bench")])
        .args(["--num-keys", "5000", "--duration", "1", "--out"])
        .arg(out.path())
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
    for want in ROWS {
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
