//! The `strata` CLI against a fixture DB built here deterministically: each command's output
//! matches its golden file in `testdata/` (`STRATA_UPDATE_GOLDEN=1` rewrites them); read commands
//! leave the DB directory unchanged; bad arguments and damaged files give one line on stderr
//! and a non-zero exit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use strata::{Db, Options};

fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata")).args(args).output().unwrap()
}

/// Two L0 tables (one with a range deletion), one L1 table, and writes only in the WAL.
fn fixture(dir: &Path) {
    let opts =
        Options { create_if_missing: true, disable_auto_compactions: true, ..Options::default() };
    let db = Db::open(&opts, dir).unwrap();
    for i in 0..40 {
        db.put(format!("key{i:03}"), format!("value-{i}")).unwrap();
    }
    db.put(b"bin\x00\xff", b"\x01\x02\\").unwrap();
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    for i in (0..40).step_by(5) {
        db.put(format!("key{i:03}"), format!("new-{i}")).unwrap();
    }
    db.delete(b"key001").unwrap();
    db.delete_range(b"key030", b"key035").unwrap();
    db.flush().unwrap();
    db.put(b"wal-key", b"wal-value").unwrap();
    db.delete(b"key003").unwrap();
    drop(db);
}

fn listing(dir: &Path) -> BTreeMap<String, (u64, std::time::SystemTime)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            (e.file_name().to_string_lossy().into_owned(), (m.len(), m.modified().unwrap()))
        })
        .collect()
}

fn files_ending(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

fn check_golden(name: &str, actual: &str) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata").join(format!("{name}.golden"));
    if std::env::var_os("STRATA_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with STRATA_UPDATE_GOLDEN=1)", path.display()));
    assert_eq!(actual, expected, "output of {name} differs from {}", path.display());
}

fn unix_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// `dump-manifest` with each table's ` time T` (its `FileTime` tag: when it was written) replaced
/// by ` time <T>`, after checking that T falls within `when` (the fixture's build): the golden
/// stays the same from run to run and still shows which tables carry the tag.
fn mask_data_times(dump: &str, when: std::ops::RangeInclusive<u64>) -> String {
    let mut out = String::new();
    for line in dump.lines() {
        match line.split_once(" time ") {
            Some((head, secs)) => {
                let t: u64 = secs.parse().unwrap_or_else(|e| panic!("{line}: {e}"));
                assert!(when.contains(&t), "{line}: data time outside {when:?}");
                out.push_str(head);
                out.push_str(" time <T>");
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[test]
fn read_commands_match_golden_outputs_and_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let built_from = unix_secs();
    fixture(&dir);
    let built_to = unix_secs();
    let db = dir.to_str().unwrap();
    let before = listing(&dir);
    let tables = files_ending(&dir, "sst");
    let wals = files_ending(&dir, "log");
    let sst = tables.last().unwrap().to_str().unwrap().to_string();
    let wal = wals.last().unwrap().to_str().unwrap().to_string();
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("get", vec!["--db", db, "get", "key005"]),
        ("get_escaped", vec!["--db", db, "get", "bin\\x00\\xff"]),
        ("scan", vec!["--db", db, "scan"]),
        (
            "scan_range_json",
            vec!["--db", db, "scan", "--from", "key010", "--to", "key015", "--json"],
        ),
        ("scan_hex_limit", vec!["--db", db, "--hex", "scan", "--limit", "3"]),
        ("lsm", vec!["--db", db, "lsm"]),
        ("lsm_json", vec!["--db", db, "lsm", "--json"]),
        ("dump_sst", vec!["dump-sst", &sst, "--verify"]),
        ("dump_wal", vec!["dump-wal", &wal]),
        ("dump_manifest", vec!["--db", db, "dump-manifest"]),
        ("verify", vec!["--db", db, "verify"]),
        ("properties", vec!["--db", db, "properties", "strata.num-files-at-level0"]),
    ];
    for (name, args) in cases {
        let out = strata(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {:?} {stderr}", out.status);
        assert!(stderr.is_empty(), "{name}: {stderr}");
        let mut stdout = String::from_utf8(out.stdout).unwrap();
        if name == "dump_manifest" {
            stdout = mask_data_times(&stdout, built_from..=built_to);
        }
        check_golden(name, &stdout);
    }
    assert_eq!(listing(&dir), before, "read commands wrote to the DB directory");

    let missing = strata(&["--db", db, "get", "nope"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&missing.stderr), "strata: key 'nope' not found\n");
}

#[test]
fn read_commands_run_while_another_process_has_the_db_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    fixture(&dir);
    let db = Db::open(&Options::default(), &dir).unwrap();
    db.put(b"fresh", b"from the writer").unwrap();
    let get = strata(&["--db", dir.to_str().unwrap(), "get", "fresh"]);
    assert_eq!(String::from_utf8_lossy(&get.stdout), "from the writer\n");
    let verify = strata(&["--db", dir.to_str().unwrap(), "verify"]);
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));
    // Writing needs the lock the writer holds.
    let put = strata(&["--db", dir.to_str().unwrap(), "put", "k", "v"]);
    assert_eq!(put.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&put.stderr).contains("lock"), "{put:?}");
    drop(db);
}

#[test]
fn write_commands_change_the_db() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    fixture(&dir);
    let db = dir.to_str().unwrap();
    assert!(strata(&["--db", db, "put", "new", "v\\x00"]).status.success());
    assert!(strata(&["--db", db, "delete", "key000"]).status.success());
    assert!(strata(&["--db", db, "compact"]).status.success());
    let get = strata(&["--db", db, "--hex", "get", "6e6577"]);
    assert_eq!(String::from_utf8_lossy(&get.stdout), "7600\n");
    assert_eq!(strata(&["--db", db, "get", "key000"]).status.code(), Some(1));
    let lsm = String::from_utf8(strata(&["--db", db, "lsm"]).stdout).unwrap();
    assert!(lsm.contains("L0: 0 files"), "{lsm}");

    let cp = tmp.path().join("cp");
    let out = strata(&["--db", db, "checkpoint", cp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let get = strata(&["--db", cp.to_str().unwrap(), "get", "wal-key"]);
    assert_eq!(String::from_utf8_lossy(&get.stdout), "wal-value\n");

    let backups = tmp.path().join("backups");
    let b = backups.to_str().unwrap();
    assert!(strata(&["--db", db, "backup", b]).status.success());
    let restored = tmp.path().join("restored");
    let out = strata(&["--db", restored.to_str().unwrap(), "restore", b]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let a = strata(&["--db", db, "scan"]).stdout;
    assert_eq!(strata(&["--db", restored.to_str().unwrap(), "scan"]).stdout, a);
    let list = String::from_utf8(strata(&["list-backups", b]).stdout).unwrap();
    assert!(list.starts_with("backup 1: sequence "), "{list}");
}

#[test]
fn errors_are_one_line_and_a_nonzero_exit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    fixture(&dir);
    let db = dir.to_str().unwrap();
    let table = files_ending(&dir, "sst").remove(0);
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[10] ^= 0x08;
    std::fs::write(&table, &bytes).unwrap();
    let garbage = tmp.path().join("garbage.sst");
    std::fs::write(&garbage, b"not a table").unwrap();
    let nothing = tmp.path().join("nothing");
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["--db", db, "frobnicate"], 2, "unrecognized subcommand"),
        (vec!["--db", db, "scan", "--limit", "x"], 2, "invalid value"),
        (vec!["--db", db, "--hex", "get", "zz"], 1, "not hex"),
        (vec!["get", "k"], 1, "needs --db"),
        (vec!["--db", nothing.to_str().unwrap(), "get", "k"], 1, "read-only"),
        (vec!["dump-sst", garbage.to_str().unwrap()], 1, "too short"),
        (vec!["dump-sst", nothing.to_str().unwrap()], 1, "does not exist"),
        (vec!["dump-wal", garbage.to_str().unwrap()], 1, ""),
        (vec!["dump-sst", table.to_str().unwrap(), "--verify", "--no-entries"], 1, ""),
        (vec!["--db", db, "verify"], 1, ""),
        (vec!["--db", db, "properties", "no.such"], 1, "unknown property"),
        (vec!["list-backups", nothing.to_str().unwrap()], 1, "not a backup directory"),
    ];
    for (args, code, message) in cases {
        let out = strata(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.lines().count() <= 1, "{args:?}: one line: {stderr}");
        assert!(!stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"), "{stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    assert!(!nothing.exists(), "reading a missing backup directory does not create it");
    let verify = String::from_utf8(strata(&["--db", db, "verify"]).stdout).unwrap();
    let name = table.file_name().unwrap().to_str().unwrap();
    assert!(verify.contains(&format!("DAMAGED {name}")), "{verify}");
}
