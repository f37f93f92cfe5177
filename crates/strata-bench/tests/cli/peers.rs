//! The same small conformance run of strata-bench steps on every engine this binary has:
//! fill, read every key back (forward and backward scans, point reads), overwrite, seek,
//! batched fill, delete; and the refusals an engine owes for what it cannot do. Strata always
//! runs it (not the memory engine: its DB lives only as long as one process); the peers
//! (LevelDB, Kyoto Cabinet, fjall, redb) when their cargo feature is on
//! (`cargo test -p strata-bench --features leveldb,kyoto,fjall,redb --test cli peers`).

use std::process::{Command, Output};

/// Keys of a run: enough to span several memtables of a 64 KiB write buffer.
const N: u64 = 3000;
/// Keys of a run whose every write is synced: fewer, but at least one batch of `fillbatch`
/// (1000), which writes nothing below that.
#[cfg(any(feature = "kyoto", feature = "redb"))]
const N_SYNCED: u64 = 1000;

fn run(engine: &str, db: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata-bench"))
        .arg(format!("--engine={engine}"))
        .arg(format!("--db={}", db.display()))
        .args(["--seed=11", "--progress_reports=false"])
        .args(args)
        .output()
        .expect("run strata-bench")
}

/// The result line of `name` (the last one, when the benchmark ran more than once).
fn line<'a>(out: &'a str, name: &str, nth: usize) -> &'a str {
    out.lines()
        .filter(|l| l.split_whitespace().next() == Some(name) && l.contains("micros/op"))
        .nth(nth)
        .unwrap_or_else(|| panic!("no result line {nth} of {name} in:\n{out}"))
}

fn conformance(engine: &str, n: u64, extra: &[&str]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let n = n.to_string();
    let num = format!("--num={n}");
    // Fill in key order, scan both ways, read every key, overwrite, read and seek again.
    let steps = "--benchmarks=fillseq,readseq,readreverse,readrandom,overwrite,readseq,\
                 readrandom,seekrandom";
    let mut args = vec![steps, &num, "--seek_nexts=3", "--reverse_iterator=false"];
    args.extend_from_slice(extra);
    let o = run(engine, &db, &args);
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{engine}: stderr:\n{err}\nstdout:\n{out}");
    let all = format!(" {n} operations;");
    let found = format!("({n} of {n} found)");
    for (name, nth) in [("readseq", 0), ("readreverse", 0), ("readseq", 1)] {
        let l = line(&out, name, nth);
        assert!(l.contains(&all), "{engine}: every key scanned: {l}");
        // 16-byte keys and 100-byte values: the scan returned whole entries.
        let mbs: f64 = l.split_whitespace().nth(10).and_then(|v| v.parse().ok()).expect("MB/s");
        assert!(mbs > 0.0, "{engine}: {l}");
    }
    for nth in [0, 1] {
        let l = line(&out, "readrandom", nth);
        assert!(l.contains(&found), "{engine}: every key read back: {l}");
    }
    let l = line(&out, "seekrandom", 0);
    assert!(l.contains(&found), "{engine}: every seek lands on a key: {l}");

    // On the same DB: a fill in batches of 1000 over the existing keys, then deletes, after
    // which no key is found and no seek lands on one.
    let o = run(
        engine,
        &db,
        &[
            "--benchmarks=fillbatch,readrandom,deleteseq,readrandom,seekrandom",
            &num,
            "--use_existing_db=true",
        ],
    );
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{engine}: stderr:\n{err}\nstdout:\n{out}");
    assert!(out.contains("fillbatch    : skipped (--use_existing_db is true)"), "{out}");
    let l = line(&out, "readrandom", 0);
    assert!(l.contains(&found), "{engine}: the DB survived a reopen: {l}");
    let l = line(&out, "deleteseq", 0);
    assert!(l.contains(&all), "{engine}: {l}");
    let none = format!("(0 of {n} found)");
    assert!(line(&out, "readrandom", 1).contains(&none), "{engine}: deleted keys:\n{out}");
    assert!(line(&out, "seekrandom", 0).contains(&none), "{engine}: seeks after deletes:\n{out}");

    // A fresh batched fill, read back.
    let o = run(engine, &db, &["--benchmarks=fillbatch,readrandom", &num]);
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{engine}: stderr:\n{err}\nstdout:\n{out}");
    assert!(line(&out, "readrandom", 0).contains(&found), "{engine}: batched fill:\n{out}");
}

/// What a peer engine cannot do is refused before anything runs, naming the engine and why.
#[cfg(any(feature = "leveldb", feature = "kyoto", feature = "fjall", feature = "redb"))]
fn refusals(engine: &str, unsupported_flag: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let o = run(engine, &db, &["--benchmarks=fillseq,mergerandom", "--merge_operator=put"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{engine}: {err}");
    assert!(
        err.contains(&format!("benchmark 'mergerandom' cannot run on engine {engine}"))
            && err.contains("no merge operator"),
        "{engine}: {err}"
    );
    // `--disable_wal` too: no peer can write without its log, and the flag check is the only
    // place that says so (the adapters do not look at it).
    for flag in [unsupported_flag, "--disable_wal=true"] {
        let o = run(engine, &db, &["--benchmarks=fillseq", flag]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{engine}: {err}");
        assert!(err.contains(&format!("engine {engine} cannot honour {flag}")), "{engine}: {err}");
    }
}

#[test]
fn strata() {
    conformance("strata", N, &["--write_buffer_size=65536"]);
}

#[test]
#[cfg(feature = "leveldb")]
fn leveldb() {
    conformance("leveldb", N, &["--write_buffer_size=65536", "--cache_size=1048576"]);
    refusals("leveldb", "--max_write_buffer_number=4");
}

#[test]
#[cfg(feature = "leveldb")]
fn leveldb_compression_and_filters() {
    conformance("leveldb", N, &["--compression_type=none", "--bloom_bits=10", "--block_size=1024"]);
}

#[test]
#[cfg(feature = "kyoto")]
fn kyoto() {
    conformance("kyoto", N, &["--block_size=1024", "--cache_size=1048576"]);
    refusals("kyoto", "--bloom_bits=10");
}

#[test]
#[cfg(feature = "kyoto")]
fn kyoto_uncompressed_and_autosync() {
    conformance("kyoto", N_SYNCED, &["--compression_type=none", "--sync=true"]);
}

#[test]
#[cfg(feature = "fjall")]
fn fjall() {
    conformance("fjall", N, &["--write_buffer_size=65536", "--cache_size=1048576"]);
    refusals("fjall", "--max_write_buffer_number=4");
}

#[test]
#[cfg(feature = "fjall")]
fn fjall_uncompressed_with_filters() {
    conformance("fjall", N, &["--compression_type=none", "--bloom_bits=10"]);
}

#[test]
#[cfg(feature = "redb")]
fn redb() {
    conformance("redb", N, &["--cache_size=1048576"]);
    refusals("redb", "--bloom_bits=10");
}

#[test]
#[cfg(feature = "redb")]
fn redb_synced() {
    conformance("redb", N_SYNCED, &["--sync=true"]);
}
