//! The CLI opens a DB with several column families: every command opens all of
//! them, and `--cf NAME` picks the one get, put, delete, scan and properties act on.

use std::process::{Command, Output};

use strata::{Db, Options};

fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata")).args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn commands_open_multi_family_dbs_and_cf_picks_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let opts = Options { create_missing_column_families: true, ..Options::default() };
        let db = Db::open_cf(&opts, &path, ["users"]).unwrap();
        let users = db.cf_handle("users").unwrap();
        db.put(b"k0", b"in-default").unwrap();
        db.put_cf(&users, b"u1", b"alice").unwrap();
        db.put_cf(&users, b"u2", b"bob").unwrap();
    }
    let db = path.to_str().unwrap();
    assert_eq!(stdout(&strata(&["--db", db, "scan"])), "k0 => in-default\n");
    assert_eq!(stdout(&strata(&["--db", db, "scan", "--cf", "users"])), "u1 => alice\nu2 => bob\n");
    assert_eq!(stdout(&strata(&["--db", db, "--cf", "users", "get", "u2"])), "bob\n");
    assert!(!strata(&["--db", db, "get", "u2"]).status.success(), "u2 is not in default");
    stdout(&strata(&["--db", db, "--cf", "users", "put", "u3", "carol"]));
    stdout(&strata(&["--db", db, "--cf", "users", "delete", "u1"]));
    assert_eq!(
        stdout(&strata(&["--db", db, "scan", "--cf", "users", "--json"])),
        "{\"key\":\"u2\",\"value\":\"bob\"}\n{\"key\":\"u3\",\"value\":\"carol\"}\n"
    );
    let stats = stdout(&strata(&["--db", db, "--cf", "users", "properties", "rocksdb.stats"]));
    assert!(stats.contains("** Compaction Stats [users] **"), "{stats}");
    assert!(stdout(&strata(&["--db", db, "lsm"])).starts_with("last sequence"));
    let bad = strata(&["--db", db, "--cf", "nope", "scan"]);
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("no such column family") && err.contains("users"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
