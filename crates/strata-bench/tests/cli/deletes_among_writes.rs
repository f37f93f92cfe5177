//! Deletes db_bench places among other operations: range deletions among a fill's writes
//! (`--writes_per_range_tombstone`), keys deleted after seekrandom's scans
//! (`--seek_nexts_to_delete`), and a fill's write limit following a sine
//! (`--sine_write_rate`), checked by what the DB holds and what the run reports.

use std::process::{Command, Output};

fn run(db: &std::path::Path, args: &[&str]) -> (Output, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_strata-bench"))
        .arg(format!("--db={}", db.display()))
        .args(args)
        .output()
        .expect("run strata-bench");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let errs = String::from_utf8_lossy(&o.stderr).into_owned();
    (o, out, errs)
}

/// The operation count of `name`'s result line.
fn operations(out: &str, name: &str) -> u64 {
    let line = out.lines().find(|l| l.starts_with(&format!("{name} "))).expect("result line");
    let words: Vec<&str> = line.split_whitespace().collect();
    let i = words.iter().position(|w| *w == "operations;").expect("operations");
    words[i - 1].parse().expect("a count")
}

#[test]
fn a_fills_range_deletions_leave_their_gaps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    // fillseq's ranges start at the next key number, which no later put takes: each range
    // deletes its first key only (the puts after it take the others back).
    let (o, out, errs) = run(
        &db,
        &[
            "--benchmarks=fillseq,readseq",
            "--num=2000",
            "--writes_per_range_tombstone=100",
            "--max_num_range_tombstones=7",
            "--range_tombstone_width=10",
        ],
    );
    assert!(o.status.success(), "{errs}");
    assert!(out.contains("Number of range deletions: 7\n"), "{out}");
    assert_eq!(operations(&out, "readseq"), 2000, "{out}");
    // Random keys, expanded into point deletes, through the other engines' path too.
    for engine in ["strata", "memory"] {
        let (o, out, errs) = run(
            &db,
            &[
                &format!("--engine={engine}"),
                "--benchmarks=fillrandom,readseq",
                "--num=2000",
                "--batch_size=4",
                "--writes_per_range_tombstone=20",
                "--max_num_range_tombstones=1000",
                "--range_tombstone_width=30",
                "--seed=3",
            ],
        );
        assert!(o.status.success(), "{engine}: {errs}");
        assert!(out.contains("Number of range deletions: 100\n"), "{engine}: {out}");
        assert!(operations(&out, "readseq") < 1000, "{engine}: the ranges cut keys: {out}");
    }
}

#[test]
fn seekrandom_deletes_the_keys_after_its_scans() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let (o, _, errs) = run(
        &db,
        &[
            "--benchmarks=fillseq,seekrandom",
            "--num=1000",
            "--reads=50",
            "--seek_nexts=1",
            "--seek_nexts_to_delete=5",
            "--seed=8",
        ],
    );
    assert!(o.status.success(), "{errs}");
    let (o, out, errs) = run(&db, &["--benchmarks=readseq", "--num=1000", "--use_existing_db=1"]);
    assert!(o.status.success(), "{errs}");
    let left = operations(&out, "readseq");
    assert!((750..1000).contains(&left), "50 scans delete up to 250 keys: {left}\n{out}");
}

#[test]
fn a_sine_write_rate_limits_the_fill() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    // 11,600 bytes a second: about 100 writes of 116 bytes, whatever the sine's phase.
    let (o, out, errs) = run(
        &db,
        &[
            "--benchmarks=fillrandom",
            "--num=100000",
            "--duration=1",
            "--ops_between_duration_checks=10",
            "--sine_write_rate",
            "--sine_a=1",
            "--sine_d=11600",
            "--sine_write_rate_interval_milliseconds=100",
        ],
    );
    assert!(o.status.success(), "{errs}");
    assert!(operations(&out, "fillrandom") < 1000, "{out}");
}

/// timeseries: the writer's entries all land (distinct id and timestamp); with
/// `--expire_style=compaction_filter` a compaction drops those older than `--time_range`
/// writes; the readers run until the writer is done and report their seeks.
#[test]
fn timeseries_writes_and_its_compaction_filter_expires() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let common = ["--writes=5000", "--key_id_range=50", "--time_range=1000", "--key_size=16"];
    let (o, out, errs) = run(
        &db,
        &[&["--benchmarks=timeseries", "--threads=2", "--num=5000"], &common[..]].concat(),
    );
    assert!(o.status.success(), "{errs}");
    assert!(out.contains("timeseries write : "), "{out}");
    assert!(out.lines().any(|l| l.starts_with("timeseries ") && l.contains(" found)")), "{out}");
    let (o, out, errs) = run(&db, &["--benchmarks=readseq", "--num=5000", "--use_existing_db=1"]);
    assert!(o.status.success(), "{errs}");
    assert_eq!(operations(&out, "readseq"), 5000, "{out}");
    let (o, out, errs) = run(
        &db,
        &[
            &["--benchmarks=timeseries,compactall,readseq", "--num=5000"],
            &common[..],
            &["--expire_style=compaction_filter"],
        ]
        .concat(),
    );
    assert!(o.status.success(), "{errs}");
    assert!(out.contains("Compaction filter is used to remove expired data"), "{out}");
    let left = operations(&out, "readseq");
    assert!((1000..=1001).contains(&left), "the last 1001 timestamps stay: {left}\n{out}");
    let (o, _, errs) = run(
        &db,
        &["--engine=memory", "--benchmarks=timeseries", "--expire_style=compaction_filter"],
    );
    assert!(!o.status.success());
    assert!(errs.contains("engine memory has no compaction filter"), "{errs}");
}
