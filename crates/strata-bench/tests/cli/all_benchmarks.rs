//! Runs every benchmark against the Strata engine on a small DB and checks the output parses
//! the way RocksDB's tools/benchmark.sh parses db_bench's (`docs/db_bench.md` §8.8).

use std::process::{Command, Output};

use strata_bench::catalog::{find, Admin, Benchmark, Family, Fill, Workload, BENCHMARKS};

fn run(dir: &std::path::Path, args: &[&str]) -> Output {
    let db = dir.join("db");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata-bench"));
    cmd.arg(format!("--db={}", db.display())).args(args);
    cmd.output().expect("run strata-bench")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The result line of `name`, checked field by field as benchmark.sh's awk reads it.
fn check_result_line(out: &str, name: &str) {
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.split_whitespace().next() == Some(name) && l.contains("micros/op"))
        // timeseries' writer reports apart as `timeseries write`.
        .filter(|l| l.split_whitespace().nth(1) == Some(":"))
        .collect();
    assert!(!lines.is_empty(), "no result line for {name} in:\n{out}");
    for l in lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert!(f.len() >= 10, "{l}");
        assert_eq!(f[1], ":", "{l}");
        assert!(f[2].parse::<f64>().is_ok(), "micros/op in {l}");
        assert_eq!(f[3], "micros/op", "{l}");
        assert!(f[4].parse::<u64>().is_ok(), "ops/sec in {l}");
        assert_eq!(f[5], "ops/sec", "{l}");
        assert!(f[6].parse::<f64>().is_ok(), "seconds in {l}");
        assert_eq!(f[7], "seconds", "{l}"); // benchmark.sh: $8 == "seconds" => V2 format
        assert!(f[8].parse::<u64>().is_ok(), "operations in {l}");
        assert_eq!(f[9], "operations;", "{l}");
        if f.get(11) == Some(&"MB/s") {
            assert!(f[10].parse::<f64>().is_ok(), "MB/s in {l}");
        }
        // %-12s, then " : "
        let pad = name.len().max(12);
        assert_eq!(&l[pad..pad + 3], " : ", "{l}");
        let parsed = strata_bench::report::parse_log(l, name);
        assert!(parsed.ops_sec.is_some(), "{l}");
    }
}

fn check_histograms(out: &str) {
    let mut percentiles = 0;
    for l in out.lines() {
        if l.starts_with("Percentiles:") {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 11, "{l}");
            for i in [2, 4, 6, 8, 10] {
                assert!(f[i].parse::<f64>().is_ok(), "{l}");
            }
            percentiles += 1;
        }
        if l.starts_with("Min: ") {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!((f[2], f[4]), ("Median:", "Max:"), "{l}");
            assert!(f[5].parse::<u64>().is_ok(), "{l}");
        }
    }
    assert!(percentiles > 0, "no histogram in:\n{out}");
}

/// The benchmarks with a result line that use the DB, from the catalog, in an order that keeps
/// data in the DB for the readers: the fresh-DB fills, a `fillrandom` that refills after the
/// small fillsync/fill100K ranges, then every other one, with deletes and `compact` last.
fn db_benchmarks() -> Vec<&'static str> {
    let rank = |b: &Benchmark| match b.workload {
        _ if b.fresh_db => 0,
        Workload::Fill(Fill::Delete { .. }) => 3,
        Workload::Admin(Admin::Compact) => 4,
        Workload::Admin(Admin::Open) => 2,
        _ => 1,
    };
    // readtorowcache needs flags of its own (existing keys, a row cache): run in
    // `existing_keys_are_the_key_space`; so do the deterministic fills (automatic
    // compactions off): `fill_variants.rs`.
    let mut rows: Vec<&Benchmark> = BENCHMARKS
        .iter()
        .filter(|b| b.family() != Family::Micro && !b.workload.is_inline())
        .filter(|b| b.name != "readtorowcache")
        .filter(|b| !matches!(b.workload, Workload::Fill(Fill::Deterministic(_))))
        .collect();
    rows.sort_by_key(|b| rank(b));
    let mut names: Vec<&str> = rows.iter().map(|b| b.name).collect();
    let refill = names.iter().position(|n| !find(n).is_some_and(|b| b.fresh_db));
    names.insert(refill.unwrap_or(names.len()), "fillrandom");
    names
}

/// The inline benchmarks, but `resetstats` (see `meta_benchmarks_succeed_or_say_why`).
fn inline_benchmarks() -> Vec<&'static str> {
    BENCHMARKS
        .iter()
        .filter(|b| b.workload.is_inline() && b.workload != Workload::Admin(Admin::ResetStats))
        .map(|b| b.name)
        .collect()
}

fn micro_benchmarks() -> Vec<&'static str> {
    BENCHMARKS.iter().filter(|b| b.family() == Family::Micro).map(|b| b.name).collect()
}

#[test]
fn every_benchmark_runs_and_parses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db_benchmarks = db_benchmarks();
    let mut list = db_benchmarks.clone();
    list.extend(inline_benchmarks());
    list.push("readrandom[X2-W1]");
    let benchmarks = format!("--benchmarks={}", list.join(","));
    let backup_dir = format!("--backup_dir={}", dir.path().join("backup").display());
    let restore_dir = format!("--restore_dir={}", dir.path().join("restored").display());
    // verify compares the DB with itself, opened a second time read-only.
    let truth_db = format!("--truth_db={}", dir.path().join("db").display());
    let o = run(
        dir.path(),
        &[
            &benchmarks,
            &backup_dir,
            &restore_dir,
            &truth_db,
            "--num=3000",
            "--writes=300",
            "--seek_nexts=3",
            "--batch_size=4",
            "--merge_operator=put",
            "--histogram=1",
            "--seed=42",
            "--write_buffer_size=65536",
        ],
    );
    let (out, errs) = text(&o);
    assert!(o.status.success(), "stderr:\n{errs}\nstdout:\n{out}");
    for name in &db_benchmarks {
        check_result_line(&out, name);
    }
    check_histograms(&out);
    // `docs/db_bench.md` §5 and §8.3 details.
    assert!(out.contains("(3 ops)"), "fillsync's key range message:\n{out}");
    assert!(out.contains("(0 of 300 found)\n\n") || out.contains("(0 of 3000 found)\n\n"));
    assert!(out.contains("( updates:300 found:"), "{out}");
    assert!(out.contains("( updates:300)"), "{out}");
    assert!(out.contains("( reads:"), "{out}");
    assert!(out.contains("maxlength:"), "{out}");
    assert!(out.contains("flush memtable\n"), "{out}");
    assert!(out.contains("): finished with status (OK)\n"), "waitforcompaction:\n{out}");
    assert!(out.contains("--- level 0 ---"), "sstables:\n{out}");
    // The engine's stats parse as benchmark.sh reads them.
    let stats = strata_bench::report::parse_log(&out, "fillseq");
    assert!(stats.lsm_size.is_some() && stats.stall_pct.is_some(), "stats:\n{out}");
    assert!(out.contains("Warming up benchmark by running 1 times\n"), "{out}");
    assert!(out.contains("Running benchmark for 2 times\n"), "{out}");
    assert!(out.contains("readrandom [AVG    2 runs] : "), "{out}");
    assert!(out.contains("readrandom [MEDIAN 2 runs] : "), "{out}");
    assert!(out.contains("DB path: ["), "{out}");
    assert!(out.contains(&"-".repeat(48)), "header:\n{out}");
    assert!(errs.contains("Date:       "), "environment on stderr:\n{errs}");
    // fillseq wrote 300 keys 0..299 per thread: readseq after the last fill sees the DB.
    let readseq = out.lines().find(|l| l.starts_with("readseq ")).expect("readseq line");
    assert!(readseq.contains(" operations;"), "{readseq}");
}

#[test]
fn cpu_benchmarks_run_and_parse() {
    let dir = tempfile::tempdir().expect("tempdir");
    let micro = micro_benchmarks();
    let benchmarks = format!("--benchmarks={}", micro.join(","));
    let o = run(dir.path(), &[&benchmarks, "--duration=1", "--histogram=1", "--seed=1"]);
    let (out, errs) = text(&o);
    assert!(o.status.success(), "stderr:\n{errs}\nstdout:\n{out}");
    for name in &micro {
        check_result_line(&out, name);
    }
    assert!(out.contains("(4096 per op)"), "{out}");
    assert!(out.contains("(output: "), "{out}");
    assert!(out.contains("(rejected; output buffer 40.0% of input)"), "compressreject:\n{out}");
    assert!(out.contains("(each op is 1000 loads)"), "{out}");
    assert!(out.contains("Microseconds per crc:"), "{out}");
    assert!(out.contains("Microseconds per :"), "uncompress's unnamed histogram:\n{out}");
}

/// compressreject needs a compressor (db_bench's message without one) and fails the run when
/// the block fits its budget.
#[test]
fn compressreject_without_compression_or_with_room_to_fit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = run(dir.path(), &["--benchmarks=compressreject", "--compression_type=none"]);
    let (out, errs) = text(&o);
    assert!(o.status.success(), "{errs}");
    assert!(out.contains("(compression type not supported)"), "{out}");
    // A ratio of 1 leaves a budget of 90%, and the generated values (printable bytes) still
    // compress below it: not rejected, so the run fails saying what to change.
    let o = run(
        dir.path(),
        &["--benchmarks=compressreject", "--compression_type=zstd", "--compression_ratio=1"],
    );
    let (_, errs) = text(&o);
    assert!(!o.status.success());
    assert!(errs.contains("so it was not rejected; try a smaller --compression_ratio"), "{errs}");
}

/// readrandomfast: keys masked below the next power of two of --num, so every key below --num
/// is found and every one above is not, counted in steps of 100.
#[test]
fn readrandomfast_finds_the_keys_below_num() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = run(
        dir.path(),
        &["--benchmarks=fillseq,readrandomfast", "--num=1000", "--reads=1000", "--seed=9"],
    );
    let (out, errs) = text(&o);
    assert!(o.status.success(), "{errs}");
    let line = out.lines().find(|l| l.starts_with("readrandomfast ")).expect("result line");
    assert!(line.contains(" 1000 operations;"), "{line}");
    let msg = line.split('(').nth(1).expect("message");
    let n: Vec<u64> =
        msg.split(|c: char| !c.is_ascii_digit()).filter_map(|w| w.parse().ok()).collect();
    let (found, read, beyond) = (n[0], n[1], n[2]);
    assert_eq!(read, 1000, "{line}");
    assert_eq!(found + beyond, read, "keys below 1000 are all there: {line}");
    assert!(beyond > 0 && beyond < 100, "24 of 1024 keys are beyond: {line}");
}

/// getmergeoperands (RocksDB's `sortlist` operator): 1 is found in the key's merged value and
/// in its first operand, and the samples are db_bench's.
#[test]
fn getmergeoperands_finds_the_integer_in_the_value_and_the_operands() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = run(dir.path(), &["--benchmarks=getmergeoperands", "--merge_operator=sortlist"]);
    let (out, errs) = text(&o);
    assert!(o.status.success(), "{errs}");
    for line in [
        "--- Get API call --- ",
        "Sample data from Get API call: 1,2,3,4,5,",
        "--- GetMergeOperands API --- ",
        "Sample data from GetMergeOperands API call: List: 0 : 1,2,3,",
        "List: 1 : 101,102,",
        "List: 3 : 301,302,",
    ] {
        assert!(out.contains(line), "{line:?} in:\n{out}");
    }
    assert_eq!(out.matches("Found key? 1\n").count(), 2, "{out}");
    assert!(!out.contains("List: 4 :"), "four lists shown: {out}");
    check_result_line(&out, "getmergeoperands");
}

/// readrandomoperands finds every stored key, whether it holds a value alone or a value and
/// operands, and counts their bytes.
#[test]
fn readrandomoperands_finds_every_stored_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = [
        "--benchmarks=fillseq,mergerandom,readrandomoperands",
        "--merge_operator=stringappend",
        "--num=1000",
        "--merge_keys=1000",
        "--reads=1000",
        "--seed=3",
    ];
    let o = run(dir.path(), &args);
    let (out, errs) = text(&o);
    assert!(o.status.success(), "{errs}");
    found_every_key_with_bytes(&out, "readrandomoperands");
}

/// `name`'s result line found all of 1,000 keys and counted bytes.
fn found_every_key_with_bytes(out: &str, name: &str) {
    let line = out.lines().find(|l| l.starts_with(&format!("{name} "))).expect("result line");
    assert!(line.contains("(1000 of 1000 found)"), "{line}");
    let mb: f64 = line
        .split("MB/s")
        .next()
        .and_then(|h| h.split_whitespace().last())
        .map_or(0.0, |v| v.parse().expect("MB/s"));
    assert!(mb > 0.0, "{line}");
    check_result_line(out, name);
}

/// readrandomentity and multireadentity read every stored key as one default column
/// (GetEntity, MultiGetEntity) and count its bytes.
#[test]
fn entity_reads_find_every_stored_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = [
        "--benchmarks=fillseq,readrandomentity,multireadentity",
        "--num=1000",
        "--reads=1000",
        "--batch_size=10",
        "--seed=3",
    ];
    let o = run(dir.path(), &args);
    let (out, errs) = text(&o);
    assert!(o.status.success(), "{errs}");
    for name in ["readrandomentity", "multireadentity"] {
        found_every_key_with_bytes(&out, name);
    }
}

/// approximatememtablestats: ranges of 10 keys of a sequential fill, all in the memtable,
/// are counted exactly (a small range is counted on the skiplist's bottom level).
#[test]
fn approximatememtablestats_reports_the_counts_histogram() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = [
        "--benchmarks=fillseq,approximatememtablestats",
        "--num=1000",
        "--batch_size=10",
        "--reads=200",
        "--seed=5",
    ];
    let o = run(dir.path(), &args);
    let (out, errs) = text(&o);
    assert!(o.status.success(), "{errs}");
    check_result_line(&out, "approximatememtablestats");
    assert!(out.contains("Reported entry count stats (expected 10):\nCount: 200 "), "{out}");
    assert!(out.contains("Min: 10  Median: "), "{out}");
    let max = out.lines().find(|l| l.starts_with("Min: 10 ")).expect("min line");
    assert!(max.ends_with("Max: 10"), "{max}");
    let o =
        run(dir.path(), &["--benchmarks=approximatememtablestats", "--num=5", "--batch_size=10"]);
    let (_, errs) = text(&o);
    assert!(!o.status.success());
    assert!(errs.contains("--num=5 is below --batch_size=10"), "{errs}");
}

/// `benchmark` (a whole-DB check) passes on a DB written with `args` and fails the run with
/// `failed` and the damaged table's name once a byte of that table is flipped.
fn check_finds_a_damaged_table(benchmark: &str, args: &[&str], failed: &[&str]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = format!("--benchmarks=fillrandom,flush,{benchmark}");
    let o = run(dir.path(), &[&[write.as_str()], args].concat());
    let (out, errs) = text(&o);
    assert!(o.status.success(), "{errs}");
    check_result_line(&out, benchmark);
    let table = std::fs::read_dir(dir.path().join("db"))
        .expect("db dir")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .expect("a table");
    let mut bytes = std::fs::read(&table).expect("table");
    bytes[100] ^= 0x40;
    std::fs::write(&table, bytes).expect("write");
    let check = format!("--benchmarks={benchmark}");
    let o = run(dir.path(), &[&[check.as_str(), "--use_existing_db=1"], args].concat());
    let (_, errs) = text(&o);
    assert!(!o.status.success());
    for m in failed {
        assert!(errs.contains(m), "{m:?} in {errs}");
    }
    assert!(errs.contains(table.file_name().unwrap().to_str().unwrap()), "{errs}");
}

/// verifychecksum passes on an intact DB and fails the run, naming the file, on a flipped
/// byte in a table.
#[test]
fn verifychecksum_finds_a_damaged_table() {
    let args = ["--num=5000", "--seed=4", "--write_buffer_size=65536"];
    check_finds_a_damaged_table("verifychecksum", &args, &["VerifyChecksum() failed"]);
}

/// verifyfilechecksums passes on a DB written with --file_checksum and fails the run, naming
/// the file, on a flipped byte in a table.
#[test]
fn verifyfilechecksums_finds_a_changed_table() {
    let args = ["--num=5000", "--seed=4", "--write_buffer_size=65536", "--file_checksum=1"];
    let failed = ["VerifyFileChecksums() failed", "file checksum mismatch"];
    check_finds_a_damaged_table("verifyfilechecksums", &args, &failed);
}

/// verify: a DB written as the truth DB was verifies; one that differs fails the run naming
/// the first key that differs; a truth DB that is not there is an open error naming it.
#[test]
fn verify_against_a_truth_db() {
    let dir = tempfile::tempdir().expect("tempdir");
    let truth = dir.path().join("truth");
    let o = run(&truth, &["--benchmarks=fillseq", "--num=2000", "--seed=1"]);
    assert!(o.status.success(), "{}", text(&o).1);
    let truth_db = format!("--truth_db={}", truth.join("db").display());
    let o = run(dir.path(), &["--benchmarks=fillseq,verify", "--num=2000", &truth_db]);
    let (_, errs) = text(&o);
    assert!(o.status.success(), "{errs}");
    assert!(errs.contains("Verifying db == truth_db...\n...Verified\n"), "{errs}");
    let o =
        run(dir.path(), &["--benchmarks=deleteseq,verify", "--num=2000", "--deletes=1", &truth_db]);
    let (_, errs) = text(&o);
    assert!(!o.status.success());
    assert!(
        errs.contains("verify: key \"\\x00") && errs.contains("and nothing in the DB"),
        "{errs}"
    );
    let o = run(dir.path(), &["--benchmarks=verify", "--truth_db=/nonexistent/truth"]);
    let (_, errs) = text(&o);
    assert!(errs.contains("open error: --truth_db=/nonexistent/truth"), "{errs}");
}

#[test]
fn meta_benchmarks_succeed_or_say_why() {
    // resetstats needs an engine call Strata does not have: the run must fail with a clear
    // "not supported" message (never a silent no-op), or succeed once the engine has it.
    let dir = tempfile::tempdir().expect("tempdir");
    let o = run(dir.path(), &["--num=500", "--benchmarks=fillseq,resetstats", "--seed=3"]);
    let (out, errs) = text(&o);
    assert!(out.contains("fillseq "), "{out}");
    if !o.status.success() {
        assert!(errs.contains("not supported"), "resetstats: {errs}");
    }
}

#[test]
fn stats_history_prints_each_record_of_the_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = [
        "--benchmarks=fillrandom,stats_history",
        "--num=100000000",
        "--duration=3",
        "--statistics",
        "--stats_persist_period_sec=1",
        "--seed=3",
    ];
    let o = run(dir.path(), &args);
    let (out, errs) = text(&o);
    assert!(o.status.success(), "{errs}\n{out}");
    let history = out.split("fillrandom ").nth(1).expect("after fillrandom");
    let records = history.lines().filter(|l| l.starts_with("------ ")).count();
    assert!(records >= 1, "a record a second after the first: {history}");
    let written: Vec<u64> = history
        .lines()
        .filter(|l| l.contains("   rocksdb.number.keys.written  "))
        .map(|l| l.rsplit(' ').next().and_then(|n| n.parse().ok()).expect("a count"))
        .collect();
    assert_eq!(written.len(), records, "one line per ticker per record: {history}");
    assert!(written.iter().any(|&n| n > 0), "the writes' changes: {written:?}");
    // Without --statistics no history is kept: nothing to print.
    let o = run(dir.path(), &["--benchmarks=fillseq,stats_history", "--num=100"]);
    let (out, _) = text(&o);
    assert!(o.status.success());
    assert!(!out.contains("------ "), "{out}");
}

#[test]
fn fresh_and_skipped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = run(dir.path(), &["--benchmarks=fillseq", "--num=100", "--seed=1"]);
    assert!(o.status.success());
    let o = run(
        dir.path(),
        &["--benchmarks=fillseq,readseq", "--num=100", "--seed=1", "--use_existing_db=1"],
    );
    let (out, _) = text(&o);
    assert!(o.status.success());
    assert!(out.contains("fillseq      : skipped (--use_existing_db is true)\n"), "{out}");
    let readseq = out.lines().find(|l| l.starts_with("readseq ")).expect("readseq");
    assert!(readseq.contains(" 100 operations;"), "existing DB kept: {readseq}");
    let o = run(dir.path(), &["--benchmarks=mergerandom", "--num=10"]);
    let (out, _) = text(&o);
    assert!(!o.status.success());
    assert!(out.contains("mergerandom  : skipped (--merge_operator is unknown)\n"), "{out}");
    assert!(out.contains("Set seed to "), "{out}");
    let o = run(dir.path(), &["--benchmarks=fillseq,nosuch"]);
    let (_, errs) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(errs.contains("unknown benchmark 'nosuch'"), "{errs}");
}

#[test]
fn threads_and_background_writer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = run(
        dir.path(),
        &[
            "--benchmarks=fillseq,readrandom,readwhilewriting",
            "--num=1000",
            "--threads=2",
            "--seed=5",
            "--benchmark_write_rate_limit=1000000",
        ],
    );
    let (out, errs) = text(&o);
    assert!(o.status.success(), "{errs}");
    // Each thread does the full count; the found message is one thread's.
    let fill = out.lines().find(|l| l.starts_with("fillseq ")).expect("fillseq");
    assert!(fill.contains(" 2000 operations;"), "{fill}");
    let rr = out.lines().find(|l| l.starts_with("readrandom ")).expect("readrandom");
    assert!(rr.contains(" 2000 operations;") && rr.contains("(1000 of 1000 found)"), "{rr}");
    // The writer is excluded: 2 readers x 1000 reads.
    let rww = out.lines().find(|l| l.starts_with("readwhilewriting ")).expect("rww");
    assert!(rww.contains(" 2000 operations;"), "{rww}");
}

#[test]
fn key_and_value_bytes_reach_the_db() {
    // fillseq writes key 0..n with db_bench's encoding; readseq reads them back in order, so
    // readseq's MB/s counts exactly (16 + 100) bytes per entry.
    let dir = tempfile::tempdir().expect("tempdir");
    let o = run(dir.path(), &["--benchmarks=fillseq,readseq", "--num=1000", "--seed=1"]);
    let (out, errs) = text(&o);
    assert!(o.status.success(), "{errs}");
    let l = out.lines().find(|l| l.starts_with("readseq ")).expect("readseq");
    assert!(l.contains(" 1000 operations;"), "{l}");
}

#[test]
fn background_threads_and_seek_walks_count_as_db_bench_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = run(
        dir.path(),
        &[
            "--benchmarks=fillseq,readwhilescanning,multireadwhilewriting,\
             newiteratorwhilewriting,fillseekseq",
            "--num=500",
            "--reads=300",
            "--threads=2",
            "--batch_size=4",
            "--seek_nexts=3",
            "--seed=7",
        ],
    );
    let (out, errs) = text(&o);
    assert!(o.status.success(), "{errs}");
    let line = |name: &str| {
        let prefix = format!("{name} ");
        out.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("{name}:\n{out}"))
    };
    // The scanner's 300 steps count beside the readers' 2 x 300 gets (db_bench's BGScan).
    assert!(line("readwhilescanning").contains(" 900 operations;"), "{out}");
    assert!(errs.contains("num reads to do 300"), "{errs}");
    // The background writer is left out: 2 readers x 300 keys, 4 a MultiGet (the found
    // message is one thread's).
    let mrww = line("multireadwhilewriting");
    assert!(mrww.contains(" 600 operations;") && mrww.contains("(300 of 300 found)"), "{mrww}");
    assert!(line("newiteratorwhilewriting").contains(" 600 operations;"), "{out}");
    // Per thread: 500 keys put (not counted), then 125 walks of a seek, 3 steps and a seek.
    assert!(line("fillseekseq").contains(" 1250 operations;"), "{out}");
}

#[test]
fn mixgraph_draws_gets_puts_and_seeks_in_their_shares() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = run(
        dir.path(),
        &[
            "--benchmarks=fillseq,mixgraph",
            "--num=2000",
            "--reads=3000",
            "--seed=11",
            "--mix_get_ratio=0.6",
            "--mix_put_ratio=0.3",
            "--mix_seek_ratio=0.1",
            "--mix_max_scan_len=20",
            "--keyrange_dist_a=14.18",
            "--keyrange_dist_b=-2.917",
            "--keyrange_dist_c=0.0164",
            "--keyrange_dist_d=-0.08082",
            "--keyrange_num=30",
            "--key_dist_a=0.002312",
            "--key_dist_b=0.3467",
        ],
    );
    let (out, errs) = text(&o);
    assert!(o.status.success(), "{errs}");
    let line = out.lines().find(|l| l.starts_with("mixgraph ")).expect("mixgraph line");
    assert!(line.contains(" 3000 operations;"), "{line}");
    let field = |name: &str| -> u64 {
        let at = line.find(name).unwrap_or_else(|| panic!("{name} in {line}")) + name.len();
        line[at..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
    };
    let (gets, puts, seeks) = (field("Gets:"), field("Puts:"), field("Seek:"));
    assert_eq!(gets + puts + seeks, 3000, "{line}");
    // Shares of 600, 300 and 100 in 1000: each within a few percent over 3000 draws.
    assert!((1650..1950).contains(&gets) && (750..1050).contains(&puts), "{line}");
    assert!((200..400).contains(&seeks), "{line}");
    assert!(line.contains(&format!(" in {} found, avg size: ", gets + seeks)), "{line}");
    assert!(line.contains(" value, ") && line.ends_with(" scan)"), "{line}");
}

#[test]
fn backup_then_restore_gives_the_db_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let backup_dir = format!("--backup_dir={}", dir.path().join("backup").display());
    let restored = dir.path().join("restored");
    let restore_dir = format!("--restore_dir={}", restored.display());
    let o = run(
        dir.path(),
        &["--benchmarks=fillseq,backup,backup,restore", &backup_dir, &restore_dir, "--num=700"],
    );
    let (out, errs) = text(&o);
    assert!(o.status.success(), "{errs}");
    assert!(out.contains("Backup path: [") && out.contains("Restore path: ["), "{out}");
    let o = Command::new(env!("CARGO_BIN_EXE_strata-bench"))
        .arg(format!("--db={}", restored.display()))
        .args(["--benchmarks=readseq", "--use_existing_db=1", "--num=700"])
        .output()
        .expect("run strata-bench");
    let (out, errs) = text(&o);
    assert!(o.status.success(), "{errs}");
    assert!(out.lines().any(|l| l.starts_with("readseq ") && l.contains(" 700 operations;")));
    // A backup directory with no backup leaves the DB in --restore_dir as it was.
    let none = format!("--backup_dir={}", dir.path().join("no-backups").display());
    let o = run(dir.path(), &["--benchmarks=restore", "--use_existing_db=1", &none, &restore_dir]);
    let (_, errs) = text(&o);
    assert!(!o.status.success() && errs.contains("holds no backup"), "{errs}");
    assert!(restored.join("CURRENT").is_file(), "the restored DB is still there");
    // A directory with other files in it is not emptied.
    let junk = dir.path().join("junk");
    std::fs::create_dir_all(&junk).expect("mkdir");
    std::fs::write(junk.join("keep"), b"x").expect("write");
    let o = run(
        dir.path(),
        &[
            "--benchmarks=restore",
            "--use_existing_db=1",
            &backup_dir,
            &format!("--restore_dir={}", junk.display()),
        ],
    );
    let (_, errs) = text(&o);
    assert!(!o.status.success() && errs.contains("not a strata DB"), "{errs}");
    assert!(junk.join("keep").is_file());
    for (args, want) in [
        (vec!["--benchmarks=backup"], "backup needs --backup_dir"),
        (vec!["--benchmarks=restore", &backup_dir], "restore needs --restore_dir"),
        (vec!["--benchmarks=backup", &backup_dir, "--backup_rate_limit=5"], "take no rate"),
    ] {
        let (_, errs) = text(&run(dir.path(), &args));
        assert!(errs.contains(want), "{args:?}: {errs}");
    }
}
