//! `bench/cache.sh` in a tiny configuration (Strata only, so it needs no RocksDB build): every
//! configuration leaves a row with ops/sec and CPU per op parsed from its log, repetition 2
//! runs the configurations in reverse, and the summary has its clock/LRU ratios. Uses this
//! build's `strata-bench` and `cache_bench` binaries (`--bin-dir`).

use std::path::Path;
use std::process::Command;

#[test]
fn cache_script_fills_its_table_and_summary() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_cache_bench")).parent().expect("bin dir");
    let sb = Path::new(env!("CARGO_BIN_EXE_strata-bench"));
    assert_eq!(sb.parent(), Some(bin_dir), "both binaries in one directory");
    let out = tempfile::tempdir().expect("tempdir");
    let run = Command::new("bash")
        .arg(repo.join("bench/cache.sh"))
        .arg("--bin-dir")
        .arg(bin_dir)
        .args(["--engines", "strata", "--reps", "2", "--threads", "1"])
        .args(["--parts", "cache_bench,readrandom,readwhilewriting"])
        .args(["--cb-caches", "lru_cache,auto_hyper_clock_cache", "--cb-ops", "3000"])
        .args(["--cb-cache-mb", "2", "--db-caches", "lru_cache,fixed_hyper_clock_cache"])
        .args(["--num", "3000", "--duration", "1", "--out"])
        .arg(out.path())
        .output()
        .expect("run bash");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "bench/cache.sh failed:\n{stderr}");

    let tsv = std::fs::read_to_string(out.path().join("results.tsv")).expect("results.tsv");
    let mut lines = tsv.lines();
    let header: Vec<&str> = lines.next().expect("header").split('\t').collect();
    assert_eq!(
        header,
        [
            "rep",
            "part",
            "engine",
            "cache",
            "threads",
            "ops_sec",
            "cpu_us_per_op",
            "hit_ratio",
            "log"
        ]
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split('\t').collect()).collect();
    // 2 repetitions x (2 cache_bench caches + 2 steps x 2 DB caches).
    assert_eq!(rows.len(), 2 * (2 + 2 * 2), "{tsv}");
    for r in &rows {
        let ops: f64 = r[5].parse().unwrap_or_else(|_| panic!("ops_sec of {r:?}"));
        let cpu: f64 = r[6].parse().unwrap_or_else(|_| panic!("cpu_us_per_op of {r:?}"));
        assert!(ops > 0.0 && cpu > 0.0, "{r:?}");
        assert_eq!((r[2], r[4]), ("strata", "1"), "{r:?}");
        if r[1] == "cache_bench" {
            let hit: f64 = r[7].parse().unwrap_or_else(|_| panic!("hit_ratio of {r:?}"));
            assert!(hit > 0.0 && hit <= 1.0, "{r:?}");
        }
        assert!(Path::new(r[8]).is_file() || out.path().join(r[8]).is_file(), "log of {r:?}");
    }
    // Repetition 2 runs each part's configurations in reverse.
    let order = |rep: &str, part: &str| -> Vec<&str> {
        rows.iter().filter(|r| r[0] == rep && r[1] == part).map(|r| r[3]).collect()
    };
    for part in ["cache_bench", "readrandom", "readwhilewriting"] {
        let mut second = order("2", part);
        second.reverse();
        assert_eq!(order("1", part), second, "{part}");
    }
    assert_eq!(order("1", "cache_bench"), ["lru_cache", "auto_hyper_clock_cache"]);

    let summary = std::fs::read_to_string(out.path().join("summary.txt")).expect("summary.txt");
    assert!(
        summary.lines().any(|l| l.starts_with("strata  auto_hyper_clock_cache/lru threads 1")),
        "{summary}"
    );
    assert!(summary.contains("readwhilewriting  strata  fixed_hyper_clock_cache"), "{summary}");

    // A bad argument stops the script before it runs anything.
    let bad = Command::new("bash")
        .arg(repo.join("bench/cache.sh"))
        .args(["--threads", "0"])
        .output()
        .expect("run bash");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--threads"));
}
