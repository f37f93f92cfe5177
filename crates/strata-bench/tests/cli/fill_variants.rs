//! filluniquerandom's overwrites, fillanddeleteuniquerandom's disposable keys
//! (`runner/fill_unique.rs`), ingestexternalfile's files and the deterministic fills' shapes
//! (`runner/deterministic.rs`), checked against what the DB holds afterwards.

use std::process::{Command, Output};

fn run(db: &std::path::Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata-bench"));
    cmd.arg(format!("--db={}", db.display())).args(args);
    cmd.output().expect("run strata-bench")
}

/// The numbers of the message in parentheses on `name`'s result line.
fn message_numbers(out: &str, name: &str) -> Vec<u64> {
    let line = out
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name) && l.contains("micros/op"))
        .unwrap_or_else(|| panic!("no {name} line in:\n{out}"));
    let msg = line.split('(').nth(1).unwrap_or_else(|| panic!("no message: {line}"));
    msg.split(|c: char| !c.is_ascii_digit()).filter_map(|w| w.parse().ok()).collect()
}

/// Runs `fill` then readseq; returns the fill's message numbers and the keys readseq saw.
fn fill_then_count(fill: &str, extra: &[&str]) -> (Vec<u64>, u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let benchmarks = format!("--benchmarks={fill},readseq");
    let mut args = vec![benchmarks.as_str(), "--num=3000", "--seed=11"];
    args.extend_from_slice(extra);
    let o = run(&dir.path().join("db"), &args);
    let (out, errs) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{errs}\n{out}");
    let readseq = out.lines().find(|l| l.starts_with("readseq ")).expect("readseq line");
    let keys = readseq
        .split_whitespace()
        .zip(readseq.split_whitespace().skip(1))
        .find(|(_, w)| *w == "operations;")
        .and_then(|(n, _)| n.parse().ok())
        .expect("readseq's count");
    (message_numbers(&out, fill), keys)
}

#[test]
fn overwrites_leave_the_unique_keys() {
    let (n, keys) = fill_then_count(
        "filluniquerandom",
        &["--overwrite_probability=0.4", "--overwrite_window_size=20"],
    );
    let (overwrites, unique) = (n[0], n[1]);
    assert_eq!(overwrites + unique, 3000);
    assert!((900..1500).contains(&overwrites), "about 40% overwrites: {n:?}");
    assert_eq!(keys, unique, "every new key once, overwrites add none");
    // Always overwriting: the first key is the only one.
    let (n, keys) = fill_then_count("filluniquerandom", &["--overwrite_probability=1"]);
    assert_eq!((n[0], n[1], keys), (2999, 1, 1));
}

#[test]
fn disposable_keys_are_deleted_behind_the_persistent_ones() {
    let sets = [
        "--disposable_entries_batch_size=10",
        "--persistent_entries_batch_size=5",
        "--disposable_entries_value_size=30",
        "--persistent_entries_value_size=7",
    ];
    let (n, keys) = fill_then_count("fillanddeleteuniquerandom", &sets);
    let (put, deleted) = (n[0], n[1]);
    assert_eq!(put + deleted, 3000, "every record is an operation: {n:?}");
    // Each finished set leaves its 5 persistent keys: 25 operations a set.
    assert_eq!(deleted, 3000 / 25 * 10, "{n:?}");
    assert_eq!(keys, put - deleted, "the deleted keys are gone, the others all there");
    // A delay longer than the run: nothing is deleted yet, and the sets' persistent places
    // are kept free (1500 disposable keys take 2250 places of the 3000).
    let mut late = sets.to_vec();
    late.extend(["--disposable_entries_delete_delay=60000000", "--writes=1500"]);
    let (n, keys) = fill_then_count("fillanddeleteuniquerandom", &late);
    assert_eq!((n[0], n[1], keys), (1500, 0, 1500));
}

#[test]
fn disposable_keys_only_in_the_unique_fills() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = run(
        &dir.path().join("db"),
        &["--benchmarks=fillrandom", "--disposable_entries_batch_size=4"],
    );
    let errs = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(errs.contains("fillrandom: --disposable_entries_batch_size=4 works only in"), "{errs}");
    let o = run(
        &dir.path().join("db"),
        &[
            "--benchmarks=filluniquerandom",
            "--overwrite_probability=0.5",
            "--overwrite_window_size=0",
        ],
    );
    let errs = String::from_utf8_lossy(&o.stderr);
    assert!(errs.contains("--overwrite_window_size=0"), "{errs}");
}

/// ingestexternalfile: every call's files cover keys 0..--num, so the DB then holds exactly
/// those keys (a few random ones put before among them); the files' directory is removed;
/// ingestion options neither engine takes are refused.
#[test]
fn ingested_files_give_the_db_their_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let o = run(
        &db,
        &[
            "--benchmarks=fillrandom,ingestexternalfile,readseq",
            "--num=3000",
            "--writes=10",
            "--ingest_external_file_batch_size=3",
            "--ingest_external_file_num_batches=2",
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("(2 batches x 3 files, 3000 keys/file, 1 threads)"), "{out}");
    let readseq = out.lines().find(|l| l.starts_with("readseq ")).expect("readseq");
    assert!(readseq.contains(" 3000 operations;"), "{readseq}");
    assert!(!db.join("ingest_tmp").exists(), "the temporary directory is removed");
    let o =
        run(&db, &["--benchmarks=ingestexternalfile", "--ingest_external_file_use_file_info=true"]);
    let errs = String::from_utf8_lossy(&o.stderr);
    assert!(errs.contains("--ingest_external_file_use_file_info=true not applied"), "{errs}");
}

/// The `(<found> of <reads> found)` of benchmark `name`'s result line in `out`.
fn found(out: &str, name: &str) -> (u64, u64) {
    let line = out.lines().find(|l| l.starts_with(&format!("{name} "))).expect(name);
    let n: Vec<u64> = line
        .split('(')
        .nth(1)
        .expect("message")
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    (n[0], n[1])
}

/// `--use_existing_keys`: the DB's keys become the key space (`--num` their count, whatever
/// was given), so every random read finds its key; readtorowcache needs the flag and a row
/// cache (Strata's and RocksDB's; the other engines refuse the flag).
#[test]
fn existing_keys_are_the_key_space() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let o = run(&db, &["--benchmarks=fillrandom", "--num=2000", "--key_size=24", "--seed=1"]);
    assert!(o.status.success());
    let o = run(
        &db,
        &[
            "--benchmarks=readrandom",
            "--use_existing_db",
            "--use_existing_keys",
            "--num=7",
            "--key_size=24",
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (got, of) = found(&out, "readrandom");
    assert!(got == of && of > 1000 && of < 2000, "every existing key found: {out}");
    let o = run(&db, &["--benchmarks=readtorowcache", "--use_existing_db"]);
    let errs = String::from_utf8_lossy(&o.stderr);
    assert!(
        errs.contains("readtorowcache: set --use_existing_keys and a --row_cache_size"),
        "{errs}"
    );
    let o = run(
        &db,
        &[
            "--benchmarks=readtorowcache,readrandom",
            "--use_existing_db",
            "--use_existing_keys",
            "--row_cache_size=1048576",
            "--reads=3000",
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (got, of) = found(&out, "readtorowcache");
    assert!(got == of && of > 1000, "every existing key read once, through the row cache: {out}");
    let (got, of) = found(&out, "readrandom");
    assert!(got == of && of == 3000, "then found again: {out}");
    let o = run(
        &db,
        &[
            "--benchmarks=readtorowcache",
            "--use_existing_db",
            "--use_existing_keys",
            "--row_cache_size=1048576",
            "--engine=memory",
        ],
    );
    let errs = String::from_utf8_lossy(&o.stderr);
    assert!(errs.contains("engine memory cannot honour --row_cache_size"), "{errs}");
}

/// Files per level from a `levelstats` table.
fn files_per_level(out: &str) -> Vec<u64> {
    let table = out.split("Level Files Size(MB)").nth(1).expect("a levelstats table");
    table
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() == 3 && w[0].parse::<u64>().is_ok()).then(|| w[1].parse().expect("files"))
        })
        .collect()
}

#[test]
fn deterministic_fills_build_one_sorted_run_per_level() {
    let dir = tempfile::tempdir().expect("tempdir");
    let common = [
        "--num=60000",
        "--value_size=100",
        "--write_buffer_size=1048576",
        "--max_bytes_for_level_multiplier=4",
        "--seed=5",
    ];
    // Without --disable_auto_compactions: refused, as db_bench refuses it.
    let mut args = vec!["--benchmarks=fillseqdeterministic"];
    args.extend_from_slice(&common);
    let o = run(&dir.path().join("a"), &args);
    assert!(!o.status.success());
    let errs = String::from_utf8_lossy(&o.stderr);
    assert!(errs.contains("Please disable_auto_compactions"), "{errs}");
    // Rounds of 60000, 15000 and 3750 puts over four levels; the first two fill three.
    for (name, levels, ops) in [
        ("fillseqdeterministic", "4", " 78750 operations;"),
        ("filluniquerandomdeterministic", "3", " 75000 operations;"),
    ] {
        let db = dir.path().join(name);
        let benchmarks = format!("--benchmarks={name},levelstats,readseq");
        let levels_flag = format!("--num_levels={levels}");
        let mut args =
            vec![benchmarks.as_str(), levels_flag.as_str(), "--disable_auto_compactions"];
        args.extend_from_slice(&common);
        let o = run(&db, &args);
        let (out, errs) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success(), "{errs}\n{out}");
        let line = out.lines().find(|l| l.starts_with(name)).expect("the result line");
        assert!(line.contains(ops), "{line}");
        let files = files_per_level(&out);
        if levels == "4" {
            // Three runs: the last one (a single file) in L1, the others below it; L0 empty.
            assert_eq!(files[0], 0, "{out}");
            assert!(files[1..4].iter().all(|&n| n > 0), "{out}");
        } else {
            // Two runs fill the levels above the bottom: the second leaves its newest third
            // in L0.
            assert!(files[0] > 0 && files[1] > 0 && files[2] > 0, "{out}");
        }
        let readseq = out.lines().find(|l| l.starts_with("readseq ")).expect("readseq line");
        assert!(readseq.contains(" 60000 operations;"), "every key once: {readseq}");
    }
    // Too few rounds for the levels asked: a clear error.
    let mut args = vec!["--benchmarks=fillseqdeterministic", "--num_levels=9"];
    args.push("--disable_auto_compactions");
    args.extend_from_slice(&common);
    let o = run(&dir.path().join("b"), &args);
    assert!(!o.status.success());
    let errs = String::from_utf8_lossy(&o.stderr);
    assert!(errs.contains("n is too small to fill 9 levels"), "{errs}");
}
