//! `bench/ycsb.sh`, `bench/redis-benchmark.sh` and `bench/server-kill.sh` end to end in a tiny
//! configuration: against redis-server, and against strata-server when `STRATA_SERVER_BIN`
//! names its binary or this workspace has the `strata-server` crate (the scripts build it).
//!
//! Opt-in: runs only with `STRATA_YCSB_TEST=1`, since it runs `bench/setup-ycsb.sh` (Maven
//! Central downloads on the first run), builds release binaries and takes a few minutes.
//! Without Java, Maven or redis-server (Debian: `apt-get install -y redis-server redis-tools
//! openjdk-17-jdk-headless maven`) it says so and passes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn bash(args: &[&str]) -> Output {
    let out = Command::new("bash").args(args).current_dir(repo()).output().unwrap();
    eprintln!(
        "$ bash {}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The engines to run and the scripts' `--server-bin` arguments.
fn ready() -> Option<(Vec<&'static str>, Vec<String>)> {
    if std::env::var_os("STRATA_YCSB_TEST").is_none_or(|v| v != "1") {
        eprintln!("ycsb_scripts: skipped (set STRATA_YCSB_TEST=1 to run the YCSB/redis scripts)");
        return None;
    }
    let missing: Vec<&str> = ["java", "mvn", "redis-server", "redis-cli", "redis-benchmark"]
        .into_iter()
        .filter(|t| !have(t))
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "ycsb_scripts: skipped: {} not installed (bash bench/setup-ycsb.sh installs redis; Java 17 and Maven are needed)",
            missing.join(", ")
        );
        return None;
    }
    let setup = bash(&["bench/setup-ycsb.sh", "--no-apt"]);
    assert!(setup.status.success(), "bench/setup-ycsb.sh failed");
    let mut engines = vec!["redis"];
    let mut server_bin = Vec::new();
    if let Some(bin) = std::env::var_os("STRATA_SERVER_BIN") {
        engines.insert(0, "strata");
        server_bin = vec!["--server-bin".into(), bin.to_string_lossy().into_owned()];
    } else if repo().join("crates/strata-server/Cargo.toml").exists() {
        engines.insert(0, "strata");
    }
    Some((engines, server_bin))
}

#[test]
fn ycsb_redis_benchmark_and_server_kill_scripts() {
    let Some((engines, server_bin)) = ready() else { return };
    let with_bin = |args: &[&str]| -> Output {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(server_bin.iter().map(String::as_str));
        bash(&all)
    };
    let tmp = tempfile::tempdir().unwrap();
    let engine_list = engines.join(",");

    // YCSB: the table has the Pegasus columns, a row per case and engine, a ratio row when
    // both engines ran, and no errors.
    let out = tmp.path().join("ycsb");
    let run = with_bin(&[
        "bench/ycsb.sh",
        "--records",
        "300",
        "--ops",
        "300",
        "--threads",
        "2",
        "--reps",
        "1",
        "--workloads",
        "load,a,e,rw-1-3",
        "--engines",
        &engine_list,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "bench/ycsb.sh failed");
    let table = std::fs::read_to_string(out.join("table.tsv")).unwrap();
    let mut lines = table.lines();
    assert_eq!(
        lines.next().unwrap(),
        "case\tworkload\tdurability\tthreads\tR/W ratio\tengine\tR-QPS\tR-AVG-Lat\tR-P99-Lat\t\
         R-P999-Lat\tW-QPS\tW-AVG-Lat\tW-P99-Lat\tW-P999-Lat\terrors"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split('\t').collect()).collect();
    let per_case = engines.len() + usize::from(engines.len() == 2);
    assert_eq!(rows.len(), 2 * 4 * per_case, "{table}");
    for row in &rows {
        assert_eq!(row.len(), 15, "{row:?}");
        if row[5].contains('/') {
            continue;
        }
        assert_eq!(row[14], "0", "errors in {row:?}");
        let (r_qps, w_qps) = (row[6], row[10]);
        match row[1] {
            "load" => assert!(r_qps == "-" && w_qps != "-", "{row:?}"),
            _ => assert!(r_qps != "-" && w_qps != "-", "{row:?}"),
        }
        for cell in &row[6..14] {
            assert!(*cell == "-" || cell.starts_with(|c: char| c.is_ascii_digit()), "{row:?}");
        }
    }
    assert!(out.join("table.md").exists() && out.join("ycsb_qps.png").exists());

    // redis-benchmark: a row per test with a number for each engine, no error lines.
    let out = tmp.path().join("redis-benchmark");
    let run = with_bin(&[
        "bench/redis-benchmark.sh",
        "--requests",
        "500",
        "--clients",
        "4",
        "--reps",
        "1",
        "--tests",
        "ping,set,get,incr,lpush,rpop,sadd,hset,zadd,mset",
        "--engines",
        &engine_list,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "bench/redis-benchmark.sh failed");
    let errors = std::fs::read_to_string(out.join("errors.txt")).unwrap();
    assert!(errors.is_empty(), "error lines:\n{errors}");
    let table = std::fs::read_to_string(out.join("table.tsv")).unwrap();
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert!(rows.len() >= 10, "{table}");
    for row in rows {
        let cells: Vec<&str> = row.split('\t').collect();
        assert!(cells[2..].iter().all(|c| *c != "-"), "{row}");
    }

    // Kill -9 mid-load: every acknowledged insert is there after each restart.
    for engine in &engines {
        let out = tmp.path().join(format!("kill-{engine}"));
        let mut args = vec![
            "bench/server-kill.sh",
            "--engine",
            engine,
            "--cycles",
            "2",
            "--kill-after",
            "300",
            "--out",
            out.to_str().unwrap(),
        ];
        if *engine == "strata" {
            args.extend(server_bin.iter().map(String::as_str));
        }
        let run = bash(&args);
        assert!(run.status.success(), "bench/server-kill.sh --engine {engine} failed");
        let acked = std::fs::read_to_string(out.join("acknowledged.tsv")).unwrap();
        assert!(acked.lines().count() >= 600, "{} acknowledged", acked.lines().count());
    }

    // The check can fail: the same oracle against an empty server reports every key lost.
    let ack = tmp.path().join("kill-redis/acknowledged.tsv");
    let script = format!(
        ". bench/servers.sh; server_start redis always {dir}; rc=0; \
         java -cp 'bench/ycsb/target/classes:bench/ycsb/target/lib/*' org.strata.ycsb.AckCheck \
         127.0.0.1 $SERVER_PORT {ack} || rc=$?; server_stop; exit $rc",
        dir = tmp.path().join("empty").display(),
        ack = ack.display()
    );
    let check = bash(&["-c", &script]);
    assert_eq!(check.status.code(), Some(1), "AckCheck must report lost keys on an empty server");
    assert!(String::from_utf8_lossy(&check.stdout).contains(": missing"));
}
