//! The CLI opens a DB with several column families: every command opens all of
//! them, and `--cf NAME` picks the one get, put, delete, scan and properties act on.

use crate::{stdout, strata};

use strata::{Db, Options};

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

/// The CLI run against a DB this process holds: its reads open read-only and work, its writes
/// are refused as locked, and none of that lets a later read-write open from another process
/// (the CLI's `put` again) take the DB while this process holds it.
#[test]
fn the_cli_never_unlocks_a_db_another_process_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::open(&Options::default(), &path).unwrap();
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    let p = path.to_str().unwrap();
    assert_eq!(stdout(&strata(&["--db", p, "get", "k"])), "v\n");
    for _ in 0..2 {
        let put = strata(&["--db", p, "put", "k", "w"]);
        assert!(!put.status.success(), "a second writer process opened the DB");
        let err = String::from_utf8_lossy(&put.stderr);
        assert!(err.contains("locked"), "{err}");
        assert_eq!(stdout(&strata(&["--db", p, "scan"])), "k => v\n");
    }
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    drop(db);
    stdout(&strata(&["--db", p, "put", "k", "w"]));
    assert_eq!(stdout(&strata(&["--db", p, "get", "k"])), "w\n");
}
